"""Parse + checker + reference per program with CPython's default GC and with
``fuzzptx.perf.tune_gc`` (each in a fresh process, alternating, best of 3 passes each).

    python benchmarks/bench_judge_gc.py --n 60 --rounds 2
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = """
import sys, time
tune = sys.argv[1] == "tuned"
from fuzzptx.engine.generate import draw_direct
from fuzzptx.judges import differ
if tune:
    from fuzzptx.perf import tune_gc
    tune_gc()
progs = draw_direct(int(sys.argv[2]), 12345)
texts = [p.to_ptx() for p in progs]
best = 1e9
for _ in range(3):
    t0 = time.perf_counter()
    for p, t in zip(progs, texts):
        q = differ.as_judged(p, t)[0]
        differ.judge(q, ("checker", "reference"), text=t, judged=q)
    best = min(best, (time.perf_counter() - t0) / len(progs) * 1000)
print(best)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    out: dict[str, list[float]] = {"default": [], "tuned": []}
    for _ in range(args.rounds):
        for mode in out:
            r = subprocess.run([sys.executable, "-c", CHILD, mode, str(args.n)], capture_output=True, text=True, check=True)
            out[mode].append(round(float(r.stdout.strip()), 1))
    print(json.dumps({"programs": args.n, "ms_per_program": out}, indent=1))


if __name__ == "__main__":
    main()
