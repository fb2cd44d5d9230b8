"""Reference interpreter throughput on a whole 1-wgmma m64n64k16 program (programs/s).

The program (``tests/support/examples.py``'s ``wgmma_program``): 128 threads copy B into
shared memory, load A fragments from global memory, run one
``wgmma.mma_async.m64n64k16.f32.f16.f16`` (A in registers), wait and store the 32
accumulators per thread: 85 PTX instructions.  Reports the whole run and the part
spent in ``wgmma_math.wgmma_dense`` (the spec-mode error bounds).

    python benchmarks/bench_reference.py --n 200
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from fuzzptx.oracles.reference import run_program
from fuzzptx.oracles.reference import wgmma_math

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test-only tooling: tests/support
from support.examples import wgmma_program  # noqa: E402

KEY = "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16|a=reg"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--key", default=KEY)
    args = ap.parse_args()
    progs = [wgmma_program(args.key, init="random", seed=s) for s in range(8)]
    run_program(progs[0])  # warm caches
    spent = [0.0]
    real = wgmma_math.wgmma_dense

    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            spent[0] += time.perf_counter() - t

    wgmma_math.wgmma_dense = timed  # wgmma_exec looks it up on the module at each call
    t0 = time.perf_counter()
    for i in range(args.n):
        run_program(progs[i % len(progs)])
    dt = time.perf_counter() - t0
    wgmma_math.wgmma_dense = real
    n_instr = sum(1 for _ in progs[0].module.kernels()[0].instructions())
    out = {"key": args.key, "programs": args.n, "instructions": n_instr, "ms_per_program": 1e3 * dt / args.n,
           "programs_per_s": args.n / dt, "ms_in_wgmma_math": 1e3 * spent[0] / args.n,
           "load": os.getloadavg()[0]}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
