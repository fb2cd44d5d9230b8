"""Speed: the reference's hardware numerics vs its spec numerics on the same programs (issue 9).

Target: hardware mode within 3x of spec mode.  Two views, over one wgmma program
per float type mix (the proof's kernels: N 64 and 256, 1-4 chained wgmma, data
from the proof's distributions):

* ``instruction``: ``wgmma_math.wgmma_dense`` per wgmma step, ``mode="spec"`` vs
  ``mode="hardware"`` on the same tiles;
* ``program``: the whole program through the reference interpreter (spec mode)
  vs the same run with every wgmma evaluated in hardware mode (``wgmma_exec``
  does not yet forward ``mode``; the benchmark swaps the arithmetic in).

    python benchmarks/bench_numerics_modes.py [--repeat 3] [--json out.json]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time


sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from support import hw_numerics_proof as P  # noqa: E402

from fuzzptx.oracles.reference import wgmma_math as W  # noqa: E402


def cases() -> list[tuple[P.Kernel, str, int]]:
    out = []
    for i, (_mix, forms) in enumerate(P.mixes().items()):
        for n, ks in ((64, 2), (256, 1)):
            f = next(x for x in forms if x.shape.n == n and x.a_source == "desc")
            out.append((P.Kernel(f.key, ks), P.DISTS[i % len(P.DISTS)], 100 + i))
    return out


def _instruction(k: P.Kernel, a, b, c, mode: str) -> None:
    f, kk = k.form, k.form.shape.k
    cur = c
    for s in range(k.k_steps):
        r = W.wgmma_dense(f, a[:, s * kk:(s + 1) * kk], b[s * kk:(s + 1) * kk], cur, True, mode=mode)
        cur = r.bits


def _program(prog, mode: str) -> None:
    from fuzzptx.oracles import reference
    if mode == "spec":
        reference.run_program(prog)
        return
    orig = W.wgmma_dense  # wgmma_exec imports it at call time

    def hw(form, a, b, c, scale_d=True, scale_a=1, scale_b=1, mode="spec", accum_precision=None):
        return orig(form, a, b, c, scale_d, scale_a, scale_b, mode="hardware")

    W.wgmma_dense = hw
    try:
        reference.run_program(prog)
    finally:
        W.wgmma_dense = orig


def _time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rows, tot = [], {"instruction": [0.0, 0.0], "program": [0.0, 0.0]}
    for k, dist, seed in cases():
        a, b, c = P.gen_data(k, dist, seed)
        prog = k.program()
        bufs = P.encode_buffers(k, prog, a, b, c)
        prog = dataclasses.replace(prog, buffers=tuple(
            dataclasses.replace(x, init="hex:" + bufs[x.name].tobytes().hex()) if x.name in ("a", "b", "c") else x
            for x in prog.buffers))
        row = {"kernel": k.key.split("aligned.")[1], "k_steps": k.k_steps, "dist": dist}
        for view, fn in (("instruction", lambda m: _instruction(k, a, b, c, m)), ("program", lambda m: _program(prog, m))):
            ts = _time(lambda: fn("spec"), args.repeat)
            th = _time(lambda: fn("hardware"), args.repeat)
            tot[view][0] += ts
            tot[view][1] += th
            row[view] = {"spec_ms": round(ts * 1e3, 2), "hardware_ms": round(th * 1e3, 2), "ratio": round(th / ts, 2)}
        rows.append(row)
        print(f"{row['kernel']:<40} ks={k.k_steps} instr {row['instruction']['ratio']:.2f}x "
              f"program {row['program']['ratio']:.2f}x")
    summary = {v: {"spec_s": round(s, 3), "hardware_s": round(h, 3), "ratio": round(h / s, 2)} for v, (s, h) in tot.items()}
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"summary": summary, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
