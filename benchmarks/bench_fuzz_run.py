"""The CPU fuzz run's cost against the ptxas time of the same programs (target: at most 1.15x).

Runs ``fuzzptx.fuzz.run`` (generation, reference, checker, batched ptxas, differ and
bookkeeping; shrinking off, since it only runs on findings) and reports, per stage, the
seconds spent and the ratio (everything) / (ptxas alone).  Also times ptxas alone on the
very same PTX texts in one ``compile_batch`` per batch, as a second denominator.

    python benchmarks/bench_fuzz_run.py --examples 200 --seed 0
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--out", default="benchmarks/results/fuzz_run.json")
    args = ap.parse_args()
    from fuzzptx.fuzz import draw_programs, run
    from fuzzptx.oracles.ptxas import compile_batch

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        stats = run(args.examples, args.seed, ("reference", "checker", "ptxas"), Path(tmp), batch=args.batch,
                    shrink_budget=0.0, progress=False)
        wall = time.perf_counter() - t0
    programs = draw_programs(args.examples, args.seed)
    texts = [p.to_ptx() for p in programs]
    t0 = time.perf_counter()
    for lo in range(0, len(texts), args.batch):
        compile_batch(texts[lo:lo + args.batch])
    ptxas_alone = time.perf_counter() - t0
    s = stats.as_dict()
    stage = s["stage_seconds"]
    result = {
        "examples": args.examples, "seed": args.seed, "batch": args.batch,
        "load": os.getloadavg()[0], "cpus": os.cpu_count(),
        "run_wall_seconds": round(wall, 2),
        "stage_seconds": stage,
        "ptxas_alone_seconds": round(ptxas_alone, 2),
        "ratio_run_wall_over_ptxas_alone": round(wall / ptxas_alone, 2),
        "ratio_stages_over_ptxas_stage": s["overhead_vs_ptxas"],
        "ms_per_program": {k: round(1000 * v / args.examples, 2) for k, v in stage.items()},
        "findings": sum(s["findings_by_bucket"].values()),
    }
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
