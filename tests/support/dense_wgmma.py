"""The dense-wgmma proof's cases and its direct judge (a layout decode plus the spec's bounds).

benchmarks/hw_dense_wgmma.py plans and runs the cases on an H100; tests/test_hardware.py checks
the direct judge on the reference's outputs and on planted wrong ones.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from fuzzptx import isa
from fuzzptx.builders import tile_plan, wgmma_program


@dataclasses.dataclass(frozen=True)
class Case:
    key: str
    variant: tuple[tuple[str, object], ...]
    init: str
    seed: int
    k_steps: int
    pred_value: bool
    extra: tuple[tuple[str, object], ...] = ()  # exploration kwargs (start lines, base offsets)

    def kwargs(self) -> dict:
        return dict(self.variant)

    def plans(self, base_offset_model: str | None = None):
        """(A plan or None, B plan) exactly as the kernel lays them out.

        ``base_offset_model="absolute"`` re-reads the tiles with base offset 0 (swizzle
        phase from the absolute address bits), whatever the descriptor says.
        """
        from fuzzptx.isa import ELEMENT_BITS

        f, kw, ex = isa.by_key(self.key), self.kwargs(), dict(self.extra)

        def plan(side, mn, bits):
            p = tile_plan(mn, bits, self.k_steps, kw[side + "_major"], kw[side + "_swizzle"],
                          ex.get(side + "_start_line", 0), ex.get(side + "_base_offset"))
            if base_offset_model == "absolute":
                p = dataclasses.replace(p, layouts=tuple(dataclasses.replace(l, base_offset=0) for l in p.layouts))
            return p

        a = plan("a", 64, ELEMENT_BITS[f.atype]) if f.a_source == "desc" else None
        return a, plan("b", f.shape.n, ELEMENT_BITS[f.btype])

    def program(self, name: str = "k"):
        return wgmma_program(self.key, **self.kwargs(), **dict(self.extra), pred_value=self.pred_value,
                             init=self.init, seed=self.seed, k_steps=self.k_steps, name=name)

    def describe(self) -> dict:
        return {"form": self.key, **{k: v for k, v in self.variant}, "init": self.init, "seed": self.seed,
                "k_steps": self.k_steps, "pred_value": self.pred_value, **{k: v for k, v in self.extra}}


def u32_words(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint32)


def direct_check(case: Case, program, outputs: dict[str, bytes], accum_precision: int | None = None,
                 base_offset_model: str | None = None) -> dict | None:
    """None when the hardware D is inside the spec's bounds for the decoded operands, else details."""
    from fuzzptx.data import buffer_bytes
    from fuzzptx.isa import Shape
    from fuzzptx.oracles.reference import layouts as L
    from fuzzptx.oracles.reference import wgmma_math as WM

    f = isa.by_key(case.key)
    kw = case.kwargs()
    n, ks = f.shape.n, case.k_steps
    kstep = f.shape.k
    bufs = {b.name: buffer_bytes(b) for b in program.buffers}
    a_plan, b_plan = case.plans(base_offset_model)
    a_tiles, b_tiles = [], []
    for s in range(ks):
        b_tiles.append(L.read_tile(bufs["b"], b_plan.layouts[s], n, kstep).T)  # [K, N]
    if f.a_source == "desc":
        a_tiles = [L.read_tile(bufs["a"], a_plan.layouts[s], 64, kstep) for s in range(ks)]
    else:
        words = u32_words(bufs["a"].tobytes()).reshape(128, 4 * ks)
        lay = L.a_fragment_layout(f.atype)
        a_tiles = [L.scatter(lay, words[:, 4 * s: 4 * s + 4]) for s in range(ks)]
    acc = L.accumulator_layout(f.dtype, n)
    nd = acc.nregs
    c = L.scatter(acc, u32_words(bufs["c"].tobytes()).reshape(128, nd))
    hw = L.scatter(acc, u32_words(outputs["d"]).reshape(128, nd))
    sd = kw["scale_d"] if kw["scale_d"] != "pred" else case.pred_value
    sa, sb = kw["scale_a"], kw["scale_b"]
    if f.dtype == "s32" and f.satfinite and ks > 1:
        cur = c
        for s in range(ks):
            r = WM.wgmma_dense(f, a_tiles[s], b_tiles[s], cur, scale_d=bool(sd) or s > 0)
            cur = r.bits
        res = r
    else:
        big = dataclasses.replace(f, shape=Shape(64, n, kstep * ks))
        res = WM.wgmma_dense(big, np.concatenate(a_tiles, axis=1), np.concatenate(b_tiles, axis=0), c,
                             scale_d=bool(sd), scale_a=sa, scale_b=sb, accum_precision=accum_precision)
    ok = WM.within(res, hw)
    if ok.all():
        return None
    bad = np.argwhere(~ok)
    details = []
    for m, j in bad[:6]:
        details.append({"m": int(m), "n": int(j), "hw_bits": hex(int(hw[m, j])), "ref_bits": hex(int(res.bits[m, j])),
                        "lo": float(res.lo[m, j]), "hi": float(res.hi[m, j])})
    return {"wrong": int((~ok).sum()), "of": int(ok.size), "first": details}
