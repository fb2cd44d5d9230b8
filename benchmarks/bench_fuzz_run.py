"""The CPU fuzz run's cost against the ptxas time of the same programs (target: at most 1.15x).

Runs ``fuzzptx.engine.run.run`` (generation, reference, checker, batched ptxas in a background
thread, differ and bookkeeping; no shrinking and no repro files, which are paid once per
new finding signature, not per program) and reports,
per stage, the seconds spent, and two ratios against ptxas alone on the very same PTX texts
(one ``compile_batch`` per batch, one after the other, nothing else running in this process):

* ``ratio_run_wall_over_ptxas_alone``: the run's wall time over ptxas alone -- what a user waits for, ptxas using one core and the
  other judges the other (the target: at most 1.15x);
* ``ratio_cpu_over_ptxas_alone_cpu``: CPU seconds (this process and its ptxas children,
  from ``getrusage``) of the run over those of ptxas alone -- the cost if nothing
  overlapped, and the figure that holds on a loaded machine, where wall times do not;
* ``ratio_stages_over_ptxas_stage``: the stage timers (wall clock) over the ptxas stage.

The run is the engine inline (``workers=0``: blocks prepared in this process, ptxas as its
children), so ``getrusage`` sees all of its CPU.

    python benchmarks/bench_fuzz_run.py --examples 200 --seed 0
"""
from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from records import start  # benchmarks/records.py, beside this script

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def cpu_seconds() -> tuple[float, float]:
    """(this process, its finished children) user+system CPU seconds."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, ch.ru_utime + ch.ru_stime


def main() -> None:
    bench = start()
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--generator", choices=("direct", "hypothesis"), default="direct")
    ap.add_argument("--judges", default="reference,checker,ptxas",
                    help="the run's judges (the row's: reference, checker, ptxas; the SASS verifier's cost is row 3a's, "
                         "and `fuzzptx run`'s default set adds it: reference,checker,ptxas,sass)")
    ap.add_argument("--out", default="benchmarks/results/fuzz_run.json")
    args = ap.parse_args()
    from fuzzptx.perf import tune_gc

    tune_gc()  # as the CLI does for every subcommand
    judges = tuple(j.strip() for j in args.judges.split(",") if j.strip())
    from fuzzptx.engine.generate import BlockTask, block_programs, draw_programs
    from fuzzptx.engine.run import run
    from fuzzptx.oracles.ptxas import compile_batch

    with tempfile.TemporaryDirectory() as tmp:  # imports and catalogue first, as in a long run
        run(2, args.seed + 1, judges, Path(tmp), progress=False,
            generator=args.generator, repros=False)
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        c0 = cpu_seconds()
        t0 = time.perf_counter()
        s = run(args.examples, args.seed, judges, Path(tmp), batch=args.batch,
                    shrink_budget=0.0, progress=False, generator=args.generator, repros=False)
        wall = time.perf_counter() - t0
        c1 = cpu_seconds()
    if args.generator == "direct":
        programs = [p for b in range(-(-args.examples // args.batch))
                    for _, p, _ in block_programs(BlockTask(b, args.seed, args.batch, (),
                                                            keep=min(args.batch, args.examples - b * args.batch)))]
    else:
        programs = draw_programs(args.examples, args.seed)
    texts = [p.to_ptx() for p in programs]
    c2 = cpu_seconds()
    t0 = time.perf_counter()
    for lo in range(0, len(texts), args.batch):
        compile_batch(texts[lo:lo + args.batch])
    ptxas_alone = time.perf_counter() - t0
    c3 = cpu_seconds()
    run_cpu = (c1[0] - c0[0]) + (c1[1] - c0[1])
    ptxas_cpu = (c3[0] - c2[0]) + (c3[1] - c2[1])
    stage = s["stage_seconds"]
    result = {
        "examples": args.examples, "seed": args.seed, "batch": args.batch, "generator": args.generator, "judges": list(judges),
        "load_before": round(load0, 2), "load_after": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
        "run_wall_seconds": round(wall, 2),
        "stage_seconds": stage,
        "ptxas_alone_seconds": round(ptxas_alone, 2),
        "ratio_run_wall_over_ptxas_alone": round(wall / ptxas_alone, 2),
        "run_cpu_seconds": {"self": round(c1[0] - c0[0], 2), "ptxas_children": round(c1[1] - c0[1], 2)},
        "ptxas_alone_cpu_seconds": round(ptxas_cpu, 2),
        "ratio_cpu_over_ptxas_alone_cpu": round(run_cpu / ptxas_cpu, 2),
        "ratio_stages_over_ptxas_stage": s["overhead_vs_ptxas"],
        "ms_per_program": {k: round(1000 * v / args.examples, 2) for k, v in stage.items()},
        "findings": sum(s["findings_by_bucket"].values()),
    }
    bench.finish(result, args.out)


if __name__ == "__main__":
    main()
