"""Cost of numpy's multi-threaded OpenBLAS on the small products the reference computes.

One wgmma bound needs a few 64xK @ KxN float64 products (K 8..32, N up to 256).  OpenBLAS
splits them over every core and spins while waiting; on a shared machine that costs far
more CPU (and wall time) than one thread.  Times ``a @ b`` (64x32 @ 32x256) with the
default thread count and inside ``oracles.reference.blas.single_thread()``.

    python benchmarks/bench_blas_threads.py --n 300
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from fuzzptx.oracles.reference.blas import _openblas, single_thread


def _measure(a, b, n: int) -> dict:
    walls = []
    c0 = time.process_time()
    for _ in range(n):
        t = time.perf_counter()
        a @ b
        walls.append(time.perf_counter() - t)
    cpu = (time.process_time() - c0) / n
    walls.sort()
    return {"cpu_ms": 1e3 * cpu, "wall_mean_ms": 1e3 * sum(walls) / n, "wall_median_ms": 1e3 * walls[n // 2],
            "wall_max_ms": 1e3 * walls[-1]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=300)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 32)), rng.standard_normal((32, 256))
    for _ in range(5):
        a @ b
    api = _openblas()
    out = {"openblas_threads": api[0]() if api else None, "default": _measure(a, b, args.n)}
    with single_thread():
        out["one_thread"] = _measure(a, b, args.n)
    out["load"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
