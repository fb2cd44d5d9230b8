"""Which steering reaches more SASS forms per N programs: ``fuzzptx run --steer none|corpus|target``
at one seed, the same judges (ptxas and the SASS judge, which records each program's forms), the
same N.  Prints, per mode, the SASS forms reached, how many of the real kernels' forms of
``tests/data`` (``fuzzptx.oracles.sass.real``, cached) they include, and the generation CPU per program.

    python benchmarks/steer_coverage.py --programs 640 --seed 11 --out benchmarks/results/steer_coverage.json
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from records import start  # noqa: E402


def measure(n: int, seed: int, mode: str, real: dict | None) -> dict:
    from fuzzptx.engine import run as engine_run
    from fuzzptx.oracles.sass.real import against_real

    with tempfile.TemporaryDirectory() as d:
        t0 = time.process_time()
        s = engine_run.run(n, seed, ("ptxas", "sass"), Path(d) / "run", progress=False, workers=0, repros=False,
                           steer=mode)
        cpu = time.process_time() - t0
    reached = set(s.get("sass_coverage", {}))
    vs = against_real(reached, real) or {}
    gen = s["stage_seconds"].get("generate", 0.0)
    return {"steer": mode, "programs": s["programs"], "ptxas_accepted": s["ptxas_accepted"],
            "sass_programs": s.get("sass_programs"), "sass_forms": len(reached),
            "real_forms": vs.get("real_forms"), "real_forms_reached": vs.get("reached"),
            "generate_ms_per_program": round(1000 * gen / max(1, s["programs"]), 2),
            "process_cpu_ms_per_program": round(1000 * cpu / max(1, s["programs"]), 2),
            "sass_curve": s.get("sass_timeline", [])[::5]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=640)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--modes", default="none,corpus,target")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    bench = start()
    from fuzzptx.oracles.sass.real import real_vocabulary

    real = real_vocabulary(compute=True)
    rows = []
    for mode in args.modes.split(","):
        rows.append(measure(args.programs, args.seed, mode, real))
        r = rows[-1]
        print(f"{mode}: {r['sass_forms']} SASS forms, {r['real_forms_reached']}/{r['real_forms']} of the real kernels'; "
              f"{r['ptxas_accepted']}/{r['programs']} accepted; generate {r['generate_ms_per_program']} ms/program, "
              f"process CPU {r['process_cpu_ms_per_program']} ms/program", file=sys.stderr, flush=True)
    bench.finish({"what": __doc__.split("\n\n")[0], "command": " ".join(sys.argv),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "seed": args.seed, "rows": rows},
           args.out, echo=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
