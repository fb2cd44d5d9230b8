"""Reference interpreter cost on strategy-generated programs (what a fuzz campaign runs).

Draws ``--n`` legal programs with ``fuzzptx.engine.run.draw_programs`` (the campaign's
generator), then runs ``run_program`` once on each, as a campaign does (fresh
Program objects: per-function caches start cold).  Reports CPU time per program
(``time.process_time``: the machines are shared, wall time swings with the load),
median / mean / p90, the share spent in ``wgmma_math.wgmma_dense`` and the
outcome counts.  Writes benchmarks/results/reference_fuzz.json.

    python benchmarks/bench_reference_fuzz.py --n 60 --seed 1
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import statistics
import time

from fuzzptx.engine.generate import draw_programs
from fuzzptx.oracles.reference import run_program, wgmma_math
from fuzzptx.program import Program

OUT = pathlib.Path(__file__).parent / "results" / "reference_fuzz.json"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    t = time.process_time()
    texts = [p.to_ptx() for p in draw_programs(a.n, a.seed, illegal_share=0.0)]
    gen = (time.process_time() - t) / max(len(texts), 1)
    progs = [Program.from_ptx(x, f"prog{i}.ptx") for i, x in enumerate(texts)]
    warm = Program.from_ptx(texts[0], "warm.ptx")
    try:
        run_program(warm)  # imports, the ISA catalogue, numpy warm-up
    except Exception:
        pass
    spent = [0.0]
    reals = {name: getattr(wgmma_math, name) for name in ("wgmma_dense", "wgmma_dense_pair") if hasattr(wgmma_math, name)}

    def timed(real):
        def run(*args, **kw):
            t0 = time.process_time()
            try:
                return real(*args, **kw)
            finally:
                spent[0] += time.process_time() - t0
        return run

    for name, real in reals.items():  # wgmma_exec looks both up on the module at each call
        setattr(wgmma_math, name, timed(real))
    times, outcomes = [], collections.Counter()
    try:
        for p in progs:
            t0 = time.process_time()
            try:
                r = run_program(p)
                outcomes["undefined" if r.undefined else "ran"] += 1
            except Exception as e:  # the reference's own verdicts (Unsupported, BadAddress...)
                outcomes[type(e).__name__] += 1
            times.append(time.process_time() - t0)
    finally:
        for name, real in reals.items():
            setattr(wgmma_math, name, real)
    times.sort()
    out = {"programs": len(progs), "seed": a.seed, "ms_median": 1e3 * statistics.median(times),
           "ms_mean": 1e3 * statistics.mean(times), "ms_p90": 1e3 * times[int(0.9 * (len(times) - 1))],
           "share_in_wgmma_math": spent[0] / sum(times), "generation_ms_per_program": 1e3 * gen,
           "outcomes": dict(outcomes), "load": os.getloadavg()[0]}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
