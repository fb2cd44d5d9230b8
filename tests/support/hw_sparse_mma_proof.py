"""Proof run (issue 9): hardware numerics of sparse wgmma, mma.sync, mma.sp and wmma.mma vs an H100.

The dense proof (``hw_numerics_proof.py``) covers ``wgmma.mma_async``; this one covers
what it leaves: ``wgmma.mma_async.sp`` (every float mix; N = 8, 24, 64, 128, 256; A from
registers or shared memory; B K- or MN-major with swizzles; 1-3 chained sparse wgmma
with their own metadata; scale-d off on the first; imm-scale -1; every defined
selector; random metadata per launch, garbage in the threads that supply none),
warp-level ``mma.sync`` / ``mma.sp`` (every runnable float form: f16/bf16/tf32 as one
HMMA; dense fp8 and f16 m8n8k4, which ptxas emulates, through ``mma_emulation``) and
``wmma.mma`` (its HMMA sequence, ``hw_numerics.wmma``); fp8 ``mma.sp`` through
``mma_emulation`` too.

Each kernel is compiled once and launched again and again with fresh matrices
(six distributions: moderate, wide, cancel, fewbits, special, raw) written into its
buffers through the reference's layouts; D comes back through the accumulator
fragment and is compared bit for bit with the model computed directly on the
matrices (``hw_numerics.mma`` with the metadata's true ``keep`` mask,
``mma_math.hardware``, ``hw_numerics.wmma``), on all CPU cores.  Mismatches are
counted per type mix; ``--dump`` keeps the D of mismatching launches (their inputs
regenerate from kernel, distribution and seed: ``gen(kernel_from(...), dist, seed)``).

    python benchmarks/hw_sparse_mma_proof.py --dots 1000000 --out $OUT/sparse_mma_proof.json --dump $OUT/bad.npz
    python benchmarks/hw_sparse_mma_proof.py --dry-run --dots 1 --interp 1000      # no GPU
    python benchmarks/hw_sparse_mma_proof.py --recheck-exploration tests/hw_records/numerics.json  # no GPU

``--dry-run``: no GPU; D is the model's own (encoded and decoded through the layouts),
and with ``--interp N`` one launch of up to N kernels per family (the distribution
rotating over the kernels) runs through the reference interpreter
(``run_program(mode="hardware")``) instead, checking that the buffers, layouts,
metadata and the interpreter's hardware mode agree with the direct model; ``--plant``
flips one D bit in every 7th launch (the judging path must catch each).
``--recheck-exploration``: the third device call's H100 data against these models.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor

import numpy as np


from support import hw_numerics_proof as P  # noqa: E402  (distributions, GPU loader, versions)

from fuzzptx import isa  # noqa: E402
from fuzzptx.builders import KernelBuilder, tile_plan  # noqa: E402
from fuzzptx.isa import ELEMENT_BITS  # noqa: E402
from fuzzptx.ptx.ir import Imm, Vec  # noqa: E402
from fuzzptx.oracles.reference import formats as F  # noqa: E402
from fuzzptx.oracles.reference import hw_numerics as H  # noqa: E402
from fuzzptx.oracles.reference import layouts as L  # noqa: E402
from fuzzptx.oracles.reference import mma_math as MM  # noqa: E402
from fuzzptx.isa import sparse as S  # noqa: E402
from fuzzptx.oracles.reference import warp_layouts as WL  # noqa: E402

DISTS = P.DISTS
FLOAT_IN = ("f16", "bf16", "tf32", "e4m3", "e5m2")
FP8 = ("e4m3", "e5m2")
SP_N = (8, 24, 64, 128, 256)
MMA_WARPS = 16  # 512 threads: the reference interpreter runs up to 4 warpgroups


# ---------------------------------------------------------------- kernels


@dataclasses.dataclass(frozen=True)
class SpKernel(P.Kernel):
    """A chain of ``k_steps`` sparse wgmma (each with its own packed A, B slice and metadata): the
    dense proof's kernel (A stays K-major) plus the metadata selector."""

    sel: int = 0
    family: str = "wgmma.sp"

    def mix(self) -> str:
        f = self.form
        return f"wgmma.sp {f.dtype}.{f.atype}.{f.btype}"

    def threads(self) -> int:
        return 128

    def program(self, name: str = "k"):
        return sp_chain_program(self, name)


@dataclasses.dataclass(frozen=True)
class WarpKernel:
    """One ``mma.sync`` / ``mma.sp`` per warp (``hw_warp_forms.mma_program``), ``warps`` warps."""

    key: str  # opcode
    family: str  # "mma" | "mma.sp"
    sel: int = 0
    warps: int = MMA_WARPS

    @property
    def form(self):
        return isa.by_opcode(self.key)[0]

    def mix(self) -> str:
        f = self.form
        fam = "mma.m8n8k4" if (f.shape.m, f.shape.n, f.shape.k) == (8, 8, 4) else self.family
        c = f".{f.ctype}" if f.ctype != f.dtype else ""
        return f"{fam} {f.dtype}.{f.atype}.{f.btype}{c}"

    def threads(self) -> int:
        return 32 * self.warps

    def program(self, name: str = "k"):
        from support import hw_warp_forms as WF

        return WF.mma_program(self.form, seed=1, sel=self.sel, warps=self.warps, name=name)


@dataclasses.dataclass(frozen=True)
class WmmaKernel:
    """Each warp: wmma.load a/b/c -> ``wmma.mma`` -> wmma.store d (``hw_warp_forms.wmma_program``)."""

    key: str  # opcode
    space: str = ""
    c_layout: str = "row"
    d_layout: str = "row"
    padded: bool = False
    warps: int = MMA_WARPS
    family: str = "wmma"

    @property
    def form(self):
        return isa.by_opcode(self.key)[0]

    def mix(self) -> str:
        f = self.form
        return f"wmma {f.dtype}.{f.atype}.{f.btype}.{f.ctype}"

    def threads(self) -> int:
        return 32 * self.warps

    def program(self, name: str = "k"):
        from support import hw_warp_forms as WF

        return WF.wmma_program(self.form, space=self.space, c_layout=self.c_layout, d_layout=self.d_layout,
                               padded=self.padded, seed=1, warps=self.warps, name=name)

    def geometry(self) -> dict[str, tuple]:
        """Per matrix: (rows, cols, type, layout, stride in elements, bytes per warp), as the program lays it out."""
        from support import hw_warp_forms as WF

        f, s = self.form, self.form.shape
        shared = self.space.startswith("shared")
        row_align = 16 if shared else 0
        out = {}
        mats = {"a": (s.m, s.k, f.atype, f.attr("layout_a")), "b": (s.k, s.n, f.btype, f.attr("layout_b")),
                "c": (s.m, s.n, f.ctype, self.c_layout), "d": (s.m, s.n, f.dtype, self.d_layout)}
        for mat, (r, c, t, lay) in mats.items():
            if mat == "d":
                sf = next(x for x in isa.forms("wmma.store") if x.shape == s and x.dtype == t
                          and x.attr("layout") == lay and x.attr("space") == self.space)
                nregs, rnd = sf.operand("r").count, 512
            else:
                nregs, rnd = WF._wmma_load_form(str(s), mat, lay, self.space, t).operand("r").count, 128
            eb = ELEMENT_BITS[t]
            default = c if lay == "row" else r
            stride = WF._stride(default, nregs * 4, eb, self.padded, row_align)
            lead = r if lay == "row" else c
            out[mat] = (r, c, t, lay, stride, -(-(lead * stride * eb // 8) // rnd) * rnd)
        return out


def _static_shared(program) -> int:
    """Bytes of the program's static shared arrays."""
    import re

    return sum(int(n) for n in re.findall(r"\.shared[^;\n]*\[(\d+)\]", program.to_ptx()))


def _wmma_index(r: int, c: int, lay: str, stride: int) -> np.ndarray:
    i, j = np.meshgrid(np.arange(r), np.arange(c), indexing="ij")
    return i * stride + j if lay == "row" else j * stride + i


def sp_mixes() -> dict[str, list]:
    out = defaultdict(list)
    for f in isa.forms("wgmma.sp"):
        if f.atype in FLOAT_IN and f.dtype in ("f32", "f16"):
            out[f"wgmma.sp {f.dtype}.{f.atype}.{f.btype}"].append(f)
    return dict(sorted(out.items()))


STATIC_SMEM = 47 * 1024  # below the 48 KB of static shared memory a launch gets without an opt-in


def smem_bytes(k: SpKernel) -> int:
    """Shared bytes of a chain program: B's tile (2 dense K-steps per sparse one) and A's (desc)."""
    f = k.form
    b = tile_plan(f.shape.n, ELEMENT_BITS[f.btype], 2 * k.k_steps, k.b_major, k.b_swizzle).nbytes
    a = tile_plan(64, ELEMENT_BITS[f.atype], k.k_steps, "K", k.a_swizzle).nbytes if f.a_source == "desc" else 0
    return a + b


def plan_sp(seed: int) -> dict[str, list[SpKernel]]:
    """Per mix: every N x A source; B layout, steps, scale-d, negation and selector varied."""
    rng = np.random.default_rng([seed, 5])
    plan = {}
    for mix, forms in sp_mixes().items():
        ks = []
        for i, (n, src) in enumerate([(n, s) for n in SP_N for s in ("desc", "reg")]):
            cand = [f for f in forms if f.shape.n == n and f.a_source == src]
            if not cand:
                continue
            f = cand[0]
            trans = f.has_operand("imm_trans_b")
            neg = f.has_operand("imm_scale_a")
            b_major = "MN" if trans and rng.random() < 0.4 else "K"
            sws = ("none", "64B", "128B") if b_major == "K" else ("none", "32B", "64B", "128B")
            sels = tuple(f.attr("sp_sel_defined", (0,)))
            kern = SpKernel(
                f.key, int((1, 2, 3)[i % 3]), b_major=b_major,
                a_swizzle=(("none", "32B", "64B", "128B")[int(rng.integers(4))] if src == "desc" else "none"),
                b_swizzle=sws[int(rng.integers(len(sws)))], scale_d=bool(i % 4 != 3),
                scale_a=int(-1 if neg and rng.random() < 0.3 else 1),
                scale_b=int(-1 if neg and rng.random() < 0.3 else 1), sel=int(sels[(i + i // 2) % len(sels)]))
            while kern.k_steps > 1 and smem_bytes(kern) > STATIC_SMEM:
                kern = dataclasses.replace(kern, k_steps=kern.k_steps - 1)
            ks.append(kern)
        plan[mix] = ks
    return plan


def plan_warp() -> dict[str, list[WarpKernel]]:
    """Every runnable float mma / mma.sp form with a model, every selector."""
    from support import hw_warp_forms as WF

    plan = defaultdict(list)
    for fam in ("mma", "mma.sp"):
        for f in isa.forms(fam):
            if not WF.runnable(f) or f.atype not in FLOAT_IN or f.dtype not in ("f32", "f16"):
                continue
            try:
                MM.hardware_family(f)
            except H.Unmodelled:
                continue
            sels = tuple(f.attr("sp_sel_defined", (0,))) if fam == "mma.sp" else (0,)
            for sel in sels:
                k = WarpKernel(f.opcode, fam, int(sel))
                plan[k.mix()].append(k)
    return dict(sorted(plan.items()))


# ---------------------------------------------------------------- the sparse wgmma chain program

_D_REG = {"f32": ".f32", "f16": ".b32"}


def sp_chain_program(k: SpKernel, name: str = "k"):
    """``k_steps`` chained ``wgmma.mma_async.sp``: buffers a (packed A), b, c, m (metadata), d."""
    from fuzzptx.builders import _desc_of
    from fuzzptx.isa.wgmma import d_register_count

    f = k.form
    n, steps = f.shape.n, k.k_steps
    ba, bb = ELEMENT_BITS[f.atype], ELEMENT_BITS[f.btype]
    nd = d_register_count(f.dtype, n)
    kb = KernelBuilder(name, 128, "%d.%d" % max(f.min_ptx, (8, 0)), f.target)
    kb.tid()
    b_plan = tile_plan(n, bb, 2 * steps, k.b_major, k.b_swizzle)
    a_plan = tile_plan(64, ba, steps, "K", k.a_swizzle) if f.a_source == "desc" else None
    abuf = "b32"
    pa = kb.buffer("a", abuf, (a_plan.nbytes // 4) if a_plan else 128 * 4 * steps, "zeros", 0)
    pb = kb.buffer("b", "b32", b_plan.nbytes // 4, "zeros", 0)
    d_words = 128 * nd
    pc = kb.buffer("c", "b32", d_words, "zeros", 0)
    pm = kb.buffer("m", "b32", 128 * steps, "zeros", 0)
    pd = kb.buffer("d", "b32", d_words, "zeros", 0, output=True)
    sb = kb.shared(b_plan.nbytes)
    kb.copy_to_shared(pb, sb, b_plan.nbytes, sync=a_plan is None)
    if a_plan is not None:
        sa = kb.shared(a_plan.nbytes)
        kb.copy_to_shared(pa, sa, a_plan.nbytes)
        a_ops = [kb.descriptor(sa, lay.start, _desc_of(lay)) for lay in a_plan.layouts]
    else:
        words = kb.load_fragment(pa, ".b32", 4 * steps)
        a_ops = [Vec(words[4 * s:4 * s + 4]) for s in range(steps)]
    b_ops = [kb.descriptor(sb, b_plan.layouts[2 * s].start, _desc_of(b_plan.layouts[2 * s])) for s in range(steps)]
    metas = kb.load_fragment(pm, ".b32", steps)
    d = kb.load_fragment(pc, _D_REG[f.dtype], nd)
    kb.emit("wgmma.fence.sync.aligned")
    for s in range(steps):
        values = {"d": Vec(d), "a": a_ops[s], "a_desc": a_ops[s], "b_desc": b_ops[s], "sp_meta": metas[s],
                  "sp_sel": Imm.of(k.sel), "scale_d": Imm.of(int(k.scale_d or s > 0)),
                  "imm_scale_a": Imm.of(k.scale_a), "imm_scale_b": Imm.of(k.scale_b),
                  "imm_trans_a": Imm.of(0), "imm_trans_b": Imm.of(int(k.b_major == "MN"))}
        kb.emit(f.opcode, *(values[op.role] for op in f.operands))
    kb.emit("wgmma.commit_group.sync.aligned")
    kb.emit("wgmma.wait_group.sync.aligned", 0)
    kb.store_fragment(pd, d, _D_REG[f.dtype])
    return kb.build(notes=(f"sp_chain_program {dataclasses.asdict(k)}",))


# ---------------------------------------------------------------- data


def _mat(type_: str, shape, dist: str, rng) -> np.ndarray:
    """Element bits of one matrix drawn from ``dist`` (the dense proof's distributions)."""
    fmt = F.FLOATS[type_]
    if dist == "raw":
        return P._raw(type_, shape, rng)
    if dist == "wide":
        return P._values(type_, shape, rng, fmt.emin - fmt.man_bits - 1, fmt.emax)
    if dist == "fewbits":
        return P._values(type_, shape, rng, -3, 3, man=min(2, fmt.man_bits))
    span = 3 if type_ in ("e4m3", "e5m2") else 6
    x = P._values(type_, shape, rng, -span, span)
    return P._sprinkle(type_, x, rng, 0.05 if type_ in ("f32",) else 0.02) if dist == "special" else x


def _c_mat(type_: str, shape, dist: str, rng) -> np.ndarray:
    c = _mat(type_, shape, dist, rng)
    if dist == "wide":
        c = np.where(rng.random(shape) < 0.3, 0, c).astype(np.uint32)
    return c


def _cancel_c(dtype: str, exact: np.ndarray, rng) -> np.ndarray:
    pert = np.ldexp(rng.integers(-4, 5, exact.shape).astype(float), -30)
    with np.errstate(over="ignore", invalid="ignore"):
        return F.encode(dtype, -exact * (1 + pert)).astype(np.uint32)


def _garbage(rng, n: int) -> np.ndarray:
    return rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)


def gen_sp(k: SpKernel, dist: str, seed: int) -> dict:
    """Packed A, metadata fields and registers, B, C of one launch of a sparse chain."""
    f = k.form
    spec = S.spec_for(f)
    rng = np.random.default_rng([seed, 17])
    steps, K, n = k.k_steps, f.shape.k, f.shape.n
    at, bt, dt = f.atype, f.btype, f.dtype
    packed = [_mat(at, (64, K // 2), dist, rng) for _ in range(steps)]
    fields = [S.random_fields(spec, rng, ordered=bool(rng.random() < 0.7)) for _ in range(steps)]
    meta = []
    sup = S.supplying_threads(spec, k.sel)
    for fl in fields:
        w = _garbage(rng, 128)
        w[sup] = S.encode_metadata(spec, fl, k.sel)[sup]
        meta.append(w)
    b = _mat(bt, (K * steps, n), dist if dist != "cancel" else "moderate", rng)
    c = _c_mat(dt, (64, n), dist if dist != "cancel" else "moderate", rng)
    if dist == "cancel":
        exact = np.zeros((64, n))
        for s in range(steps):
            dense, _ = S.expand(spec, packed[s], fields[s])
            exact += F.decode(at, dense.astype(np.uint32)) @ F.decode(bt, b[s * K:(s + 1) * K])
        c = _cancel_c(dt, exact * k.scale_a * k.scale_b, rng)
    return {"packed": packed, "fields": fields, "meta": meta, "b": b, "c": c}


def model_sp(k: SpKernel, x: dict) -> np.ndarray:
    """D bits [64, N]: hw_numerics over the chain with the metadata's true keep mask."""
    f = k.form
    spec = S.spec_for(f)
    K = f.shape.k
    prm = H.params_for(f.atype, f.dtype, "wgmma", sparse=True)
    cur = x["c"]
    for s in range(k.k_steps):
        dense, _ = S.expand(spec, x["packed"][s], x["fields"][s])
        keep = S.keep_mask(spec, x["fields"][s])
        cur = H.mma(f.atype, f.btype, f.dtype, dense.astype(np.uint32), x["b"][s * K:(s + 1) * K], cur,
                    scale_d=k.scale_d or s > 0, scale_a=k.scale_a, scale_b=k.scale_b, prm=prm, keep=keep)
    return cur


def _words(arr: np.ndarray) -> bytes:
    return np.ascontiguousarray(np.asarray(arr).astype(np.uint32)).view(np.uint8).tobytes()


def encode_sp(k: SpKernel, program, x: dict) -> dict[str, np.ndarray]:
    f = k.form
    sizes = {bf.name: bf.count * 4 for bf in program.buffers}
    bufs = {name: np.zeros(size, np.uint8) for name, size in sizes.items()}
    K, steps = f.shape.k, k.k_steps
    kd = K // 2  # one dense K-step of B (32 bytes of K)
    b_plan = tile_plan(f.shape.n, ELEMENT_BITS[f.btype], 2 * steps, k.b_major, k.b_swizzle)
    for j in range(2 * steps):
        L.write_tile(bufs["b"], b_plan.layouts[j], x["b"][j * kd:(j + 1) * kd].T)
    if f.a_source == "desc":
        a_plan = tile_plan(64, ELEMENT_BITS[f.atype], steps, "K", k.a_swizzle)
        for s in range(steps):
            L.write_tile(bufs["a"], a_plan.layouts[s], x["packed"][s])
    else:
        lay = L.a_fragment_layout(f.atype)
        words = np.concatenate([L.gather(lay, p) for p in x["packed"]], axis=1)
        bufs["a"][:] = np.frombuffer(_words(words), np.uint8)
    acc = L.accumulator_layout(f.dtype, f.shape.n)
    bufs["c"][:] = np.frombuffer(_words(L.gather(acc, x["c"])), np.uint8)
    bufs["m"][:] = np.frombuffer(_words(np.stack(x["meta"], axis=1)), np.uint8)
    return bufs


def decode_sp(k: SpKernel, d_bytes: bytes) -> np.ndarray:
    acc = L.accumulator_layout(k.form.dtype, k.form.shape.n)
    return L.scatter(acc, np.frombuffer(d_bytes, np.uint32).reshape(128, acc.nregs))


# ---------------------------------------------------------------- mma / mma.sp


def _frags(k: WarpKernel):
    f = k.form
    sh = f.shape
    sparse = k.family == "mma.sp"
    return (WL.mma_a_layout(sh, f.atype, f.attr("layout_a", "row"), sparse),
            WL.mma_b_layout(sh, f.btype, f.attr("layout_b", "col")),
            WL.mma_c_layout(sh, f.ctype, f.atype), WL.mma_c_layout(sh, f.dtype, f.atype))


def gen_warp(k: WarpKernel, dist: str, seed: int) -> dict:
    """Per warp: A (packed for mma.sp), B, C tiles, metadata fields and registers (drawn for all warps at once)."""
    f = k.form
    la, lb, lc, _ = _frags(k)
    rng = np.random.default_rng([seed, 23])
    d0 = dist if dist != "cancel" else "moderate"
    W = k.warps
    ra, rb, rc = la.batches * la.rows, lb.batches * lb.rows, lc.batches * lc.rows
    a = _mat(f.atype, (W * ra, la.cols), d0, rng)
    b = _mat(f.btype, (W * rb, lb.cols), d0, rng)
    c = _c_mat(f.ctype, (W * rc, lc.cols), d0, rng)
    out = {"a": [a[w * ra:(w + 1) * ra] for w in range(W)], "b": [b[w * rb:(w + 1) * rb] for w in range(W)],
           "c": [c[w * rc:(w + 1) * rc] for w in range(W)], "fields": [], "meta": []}
    if k.family == "mma.sp":
        spec = S.spec_for(f)
        sup = S.supplying_threads(spec, k.sel)
        for _ in range(W):
            fl = S.random_fields(spec, rng, ordered=bool(rng.random() < 0.7))
            w = _garbage(rng, 32)
            w[sup] = S.encode_metadata(spec, fl, k.sel)[sup]
            out["fields"].append(fl)
            out["meta"].append(w)
    if dist == "cancel":
        M = lc.rows
        for w in range(W):
            dense = out["a"][w] if k.family == "mma" else S.expand(S.spec_for(f), out["a"][w], out["fields"][w])[0]
            av, bv = F.decode(f.atype, dense.astype(np.uint32)), F.decode(f.btype, out["b"][w])
            kk = bv.shape[0] // lc.batches
            exact = np.zeros(out["c"][w].shape)
            for p in range(lc.batches):
                exact[p * M:(p + 1) * M] = av[p * M:(p + 1) * M] @ bv[p * kk:(p + 1) * kk]
            out["c"][w] = _cancel_c(f.ctype, exact, rng)
    return out


def model_warp(k: WarpKernel, x: dict) -> np.ndarray:
    """D bits [warps * batches * rows, N] by ``mma_math.hardware`` on each warp's tiles."""
    f = k.form
    la, lb, lc, _ = _frags(k)
    spec = S.spec_for(f) if k.family == "mma.sp" else None
    outs = []
    for w in range(k.warps):
        a, b, c = x["a"][w], x["b"][w], x["c"][w]
        keep = None
        if spec is not None:
            a, _ = S.expand(spec, a, x["fields"][w])
            keep = S.keep_mask(spec, x["fields"][w])
        M, Kb = lc.rows, b.shape[0] // lc.batches
        d = np.zeros(c.shape, np.uint32)
        for p in range(lc.batches):
            r, kk = slice(p * M, (p + 1) * M), slice(p * Kb, (p + 1) * Kb)
            d[r] = MM.hardware(f, a[r], b[kk], c[r], True, None if keep is None else keep[r]).bits
        outs.append(d)
    return np.concatenate(outs, axis=0)


def encode_warp(k: WarpKernel, program, x: dict) -> dict[str, np.ndarray]:
    la, lb, lc, _ = _frags(k)
    regs = {"a": (la, x["a"]), "b": (lb, x["b"]), "c": (lc, x["c"])}
    bufs = {}
    for name, (frag, tiles) in regs.items():
        words = np.concatenate([WL.gather(frag, t) for t in tiles], axis=0)  # [32 * warps, nregs]
        bufs[name] = np.frombuffer(_words(words), np.uint8).copy()
    if k.family == "mma.sp":
        bufs["m"] = np.frombuffer(_words(np.concatenate(x["meta"])), np.uint8).copy()
    from fuzzptx.data import element_bytes

    sizes = {bf.name: bf.count * element_bytes(bf.type) for bf in program.buffers}
    for name, arr in bufs.items():
        if arr.size != sizes[name]:
            raise ValueError(f"{k.key}: buffer {name} has {arr.size} bytes, the program {sizes[name]}")
    bufs["d"] = np.zeros(sizes["d"], np.uint8)
    return bufs


def decode_warp(k: WarpKernel, d_bytes: bytes) -> np.ndarray:
    _, _, _, ld = _frags(k)
    words = np.frombuffer(d_bytes, np.uint32).reshape(k.warps, 32, ld.nregs)
    return np.concatenate([WL.scatter(ld, words[w]).astype(np.uint32) for w in range(k.warps)], axis=0)


def plan_wmma(seed: int) -> dict[str, list[WmmaKernel]]:
    """Every float wmma.mma form (f16/bf16/tf32; f64 is correctly rounded in both modes); C/D layouts,
    padding and state space varied."""
    rng = np.random.default_rng([seed, 29])
    plan = defaultdict(list)
    for f in isa.forms("wmma.mma"):
        if f.atype not in FLOAT_IN or f.dtype not in ("f32", "f16"):
            continue
        k = WmmaKernel(f.opcode, space=("", "global", "shared")[int(rng.integers(3))],
                       c_layout=("row", "col")[int(rng.integers(2))], d_layout=("row", "col")[int(rng.integers(2))],
                       padded=bool(rng.random() < 0.3))
        while k.warps > 1 and k.space == "shared" and _static_shared(k.program()) > STATIC_SMEM:
            k = dataclasses.replace(k, warps=k.warps // 2)
        plan[k.mix()].append(k)
    return dict(sorted(plan.items()))


def gen_wmma(k: WmmaKernel, dist: str, seed: int) -> dict:
    f, s = k.form, k.form.shape
    rng = np.random.default_rng([seed, 31])
    d0 = dist if dist != "cancel" else "moderate"
    W = k.warps
    a = _mat(f.atype, (W, s.m, s.k), d0, rng)
    b = _mat(f.btype, (W, s.k, s.n), d0, rng)
    c = _c_mat(f.ctype, (W, s.m, s.n), d0, rng)
    if dist == "cancel":
        exact = np.einsum("wmk,wkn->wmn", F.decode(f.atype, a), F.decode(f.btype, b))
        c = _cancel_c(f.ctype, exact, rng)
    return {"a": a, "b": b, "c": c}


def model_wmma(k: WmmaKernel, x: dict) -> np.ndarray:
    f = k.form
    return np.concatenate([H.wmma(f.atype, f.btype, f.ctype, f.dtype, x["a"][w], x["b"][w], x["c"][w])
                           for w in range(k.warps)], axis=0)


_NP_BITS = {8: np.uint8, 16: np.uint16, 32: np.uint32}


def encode_wmma(k: WmmaKernel, program, x: dict) -> dict[str, np.ndarray]:
    bufs = {}
    for mat, (r, c, t, lay, stride, nbytes) in k.geometry().items():
        eb = ELEMENT_BITS[t]
        img = np.zeros(k.warps * nbytes * 8 // eb, _NP_BITS[eb])
        if mat != "d":
            idx = _wmma_index(r, c, lay, stride)
            for w in range(k.warps):
                img[w * nbytes * 8 // eb + idx] = x[mat][w]
        bufs[mat] = img.view(np.uint8)
    return bufs


def decode_wmma(k: WmmaKernel, d_bytes: bytes) -> np.ndarray:
    r, c, t, lay, stride, nbytes = k.geometry()["d"]
    eb = ELEMENT_BITS[t]
    img = np.frombuffer(d_bytes, _NP_BITS[eb])
    idx = _wmma_index(r, c, lay, stride)
    return np.concatenate([img[w * nbytes * 8 // eb + idx].astype(np.uint32) for w in range(k.warps)], axis=0)


def kernel_from(d: dict):
    """A kernel from its ``dataclasses.asdict`` (the record's ``dumped`` entries)."""
    cls = {"wgmma.sp": SpKernel, "wmma": WmmaKernel}.get(d["family"], WarpKernel)
    return cls(**d)


def _by_kind(k, sp, warp, wmma):
    return sp if isinstance(k, SpKernel) else (wmma if isinstance(k, WmmaKernel) else warp)


def gen(k, dist, seed):
    return _by_kind(k, gen_sp, gen_warp, gen_wmma)(k, dist, seed)


def model(k, x):
    return _by_kind(k, model_sp, model_warp, model_wmma)(k, x)


def encode(k, program, x):
    return _by_kind(k, encode_sp, encode_warp, encode_wmma)(k, program, x)


def decode(k, d_bytes):
    return _by_kind(k, decode_sp, decode_warp, decode_wmma)(k, d_bytes)


def model_bytes(k, x) -> bytes:
    """The model's D as the program stores it (the inverse of ``decode``): dry runs."""
    d = model(k, x)
    if isinstance(k, SpKernel):
        return _words(L.gather(L.accumulator_layout(k.form.dtype, k.form.shape.n), d))
    if isinstance(k, WmmaKernel):
        r, c, t, lay, stride, nbytes = k.geometry()["d"]
        eb = ELEMENT_BITS[t]
        img = np.zeros(k.warps * nbytes * 8 // eb, _NP_BITS[eb])
        idx = _wmma_index(r, c, lay, stride)
        for w in range(k.warps):
            img[w * nbytes * 8 // eb + idx] = d[w * r:(w + 1) * r]
        return img.tobytes()
    _, _, _, ld = _frags(k)
    rows = d.shape[0] // k.warps
    return _words(np.concatenate([WL.gather(ld, d[w * rows:(w + 1) * rows]) for w in range(k.warps)], axis=0))


def dots_per_launch(k) -> int:
    if isinstance(k, SpKernel):
        return 64 * k.form.shape.n
    if isinstance(k, WmmaKernel):
        return k.warps * k.form.shape.m * k.form.shape.n
    _, _, lc, _ = _frags(k)
    return k.warps * lc.batches * lc.rows * lc.cols


# ---------------------------------------------------------------- running


def interp_bytes(k, program, bufs: dict[str, np.ndarray]) -> bytes:
    """The reference interpreter's D (hardware mode) for the program with these buffers."""
    from fuzzptx.oracles import reference

    new = []
    for b in program.buffers:
        if b.name in bufs and b.name != "d":
            b = dataclasses.replace(b, init="hex:" + bufs[b.name].tobytes().hex())
        new.append(b)
    ref = reference.run_program(dataclasses.replace(program, buffers=tuple(new)), mode="hardware")
    if ref.undefined:
        raise RuntimeError(f"{k}: reference undefined: {ref.undefined}")
    return ref.bytes("d")


def _plant(k, d_bytes: bytes) -> bytes:
    """D with the low bit of element [0, 0] flipped (dry-run self-check of the judging path)."""
    d = decode(k, d_bytes).copy()
    d[0, 0] ^= 1
    if isinstance(k, SpKernel):
        return _words(L.gather(L.accumulator_layout(k.form.dtype, k.form.shape.n), d))
    if isinstance(k, WmmaKernel):
        r, c, t, lay, stride, nbytes = k.geometry()["d"]
        img = np.frombuffer(d_bytes, _NP_BITS[ELEMENT_BITS[t]]).copy()
        img[_wmma_index(r, c, lay, stride)[0, 0]] ^= 1
        return img.tobytes()
    _, _, _, ld = _frags(k)
    rows = d.shape[0] // k.warps
    return _words(np.concatenate([WL.gather(ld, d[w * rows:(w + 1) * rows]) for w in range(k.warps)], axis=0))


_PROGRAMS: dict = {}


def prepare(job):
    """(buffers, dry-run D bytes or None) of one launch: run in the worker pool, the GPU consumes them."""
    k, dist, seed, dry = job
    prog = _PROGRAMS.get(k)
    if prog is None:
        prog = _PROGRAMS[k] = k.program()
    x = gen(k, dist, seed)
    return encode(k, prog, x), (model_bytes(k, x) if dry else None)


def judge(job):
    """(mix, dist, dots, mismatches, examples, hw or None) for one launch, data regenerated from its seed."""
    k, dist, seed, d_bytes = job
    x = gen(k, dist, seed)
    hw = decode(k, d_bytes)
    ref = model(k, x)
    bad = np.argwhere(hw != ref)
    ex = [{"kernel": dataclasses.asdict(k), "dist": dist, "seed": seed, "m": int(m), "n": int(n),
           "hw": hex(int(hw[m, n])), "model": hex(int(ref[m, n]))} for m, n in bad[:3]]
    return k.mix(), dist, int(hw.size), len(bad), ex, (hw if len(bad) else None)


def mmasim_judge(job):
    """Three-way on one dense-mma launch: (mix, dots, MMA-Sim != H100, MMA-Sim != ours, examples)."""
    from fuzzptx.oracles import mmasim_judge as MS

    k, dist, seed, d_bytes = job
    f = k.form
    x = gen(k, dist, seed)
    hw, ref = decode(k, d_bytes), model(k, x)
    _, lb, lc, _ = _frags(k)
    sim = np.zeros_like(ref)
    M = lc.rows
    for w in range(k.warps):
        a, b, c = x["a"][w], x["b"][w], x["c"][w]
        Kb = b.shape[0] // lc.batches
        for p in range(lc.batches):
            r = slice(w * lc.batches * M + p * M, w * lc.batches * M + (p + 1) * M)
            sim[r] = MS.mma(f, a[p * M:(p + 1) * M], b[p * Kb:(p + 1) * Kb], c[p * M:(p + 1) * M])
    nan = lambda v: np.isnan(F.decode(f.dtype, v))  # noqa: E731
    with np.errstate(invalid="ignore"):
        vs_hw = (sim != hw) & ~(nan(sim) & nan(hw))
        vs_ref = (sim != ref) & ~(nan(sim) & nan(ref))
    ex = [{"kernel": dataclasses.asdict(k), "dist": dist, "seed": seed, "m": int(m), "n": int(n),
           "hw": hex(int(hw[m, n])), "mmasim": hex(int(sim[m, n])), "model": hex(int(ref[m, n]))}
          for m, n in np.argwhere(vs_hw)[:2]]
    return k.mix(), int(hw.size), int(vs_hw.sum()), int(vs_ref.sum()), ex


def compile_all(kernels: list):
    from fuzzptx.oracles.ptxas import compile_parallel

    progs = [k.program() for k in kernels]
    res = compile_parallel([p.to_ptx() for p in progs], want_cubin=True)
    bad = [(dataclasses.asdict(k), r.diagnostics[:1]) for k, r in zip(kernels, res) if not r.accepted]
    if bad:
        raise SystemExit(f"ptxas rejected {len(bad)} kernels: {bad[:3]}")
    return progs, [(r.cubin, r.kernel_map().get(p.launch.kernel, p.launch.kernel)) for p, r in zip(progs, res)]


def run(args) -> dict:
    t0 = time.time()
    plan = {}
    if "wgmma.sp" in args.families:
        plan.update(plan_sp(args.seed))
    if "mma" in args.families:
        plan.update(plan_warp())
    if "wmma" in args.families:
        plan.update(plan_wmma(args.seed))
    if args.mix:
        plan = {m: ks for m, ks in plan.items() if any(m.startswith(s) for s in args.mix)}
    flat, launches = P.launches_for(plan, args.dots, args.seed, dots_per_launch)
    progs, cubins = compile_all(flat)
    t_build = time.time() - t0
    gpu = None if args.dry_run else P.Gpu()
    t1 = time.time()
    if gpu:
        for i, (cb, name) in enumerate(cubins):
            gpu.load(i, cb, name)
    jobs, interp_done, planted = [], set(), Counter()
    interp_checked = Counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        prepared = pool.map(prepare, [(k, dist, seed, args.dry_run) for _, k, dist, seed in launches], chunksize=4)
        for (idx, k, dist, seed), (bufs, dry) in zip(launches, prepared):
            if gpu:
                d = gpu.run(idx, progs[idx], bufs, k.threads())
            elif (idx not in interp_done and interp_checked[k.family] < args.interp and k.form.atype not in FP8
                  and dist == DISTS[idx % len(DISTS)]):
                interp_done.add(idx)  # one launch per kernel through the interpreter (hardware mode)
                d = interp_bytes(k, progs[idx], bufs)
                interp_checked[k.family] += 1
            else:
                d = dry
            if args.plant and not gpu and len(jobs) % 7 == 3:  # self-check: a wrong bit must be caught
                d = _plant(k, d)
                planted[k.mix()] += 1
            jobs.append((k, dist, seed, d))
    t_gpu = time.time() - t1
    t2 = time.time()
    per = defaultdict(Counter)
    examples, bad_launches = [], []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for (mix, dist, n, bad, ex, hw), job in zip(pool.map(judge, jobs, chunksize=4), jobs):
            c = per[mix]
            c["dots"] += n
            c["mismatches"] += bad
            c["launches"] += 1
            c[f"dots.{dist}"] += n
            c[f"mismatches.{dist}"] += bad
            if bad:
                c["bad_launches"] += 1
            if len(examples) < 300:
                examples.extend(ex[:2])
            if bad and c["dumped"] < args.keep:
                c["dumped"] += 1
                bad_launches.append((job[0], dist, job[2], hw))
    t_judge = time.time() - t2
    mmasim = None
    if args.mmasim:
        from fuzzptx.oracles import mmasim_judge as MS

        why = MS.available()
        sel = [j for j in jobs if why is None and j[0].family == "mma" and MS.mma_shape_and_type(j[0].form)]
        sel = sel[::max(1, len(sel) // args.mmasim)][:args.mmasim]
        mmasim = {"skipped": why} if why else {"per_mix": {}, "examples": []}
        if why is None:
            with ProcessPoolExecutor(max_workers=args.jobs) as pool:
                for mix, n, vs_hw, vs_ref, ex in pool.map(mmasim_judge, sel, chunksize=2):
                    c = mmasim["per_mix"].setdefault(mix, {"dots": 0, "mmasim_vs_h100": 0, "mmasim_vs_ours": 0})
                    c["dots"] += n
                    c["mmasim_vs_h100"] += vs_hw
                    c["mmasim_vs_ours"] += vs_ref
                    mmasim["examples"].extend(ex[: max(0, 50 - len(mmasim["examples"]))])
    rec = {
        "what": "hw_numerics (mode='hardware') vs the GPU, bit for bit: sparse wgmma (true keep mask), mma.sync, "
                "mma.sp and wmma.mma float forms (fp8 mma/mma.sp and m8n8k4: ptxas's emulation, mma_emulation)",
        "command": " ".join(sys.argv), "seed": args.seed, "dry_run": args.dry_run,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "versions": P.versions(),
        "device": P.device_info(gpu) if gpu else None,
        "kernels": len(flat), "launches": len(launches),
        "per_mix": {m: dict(c) for m, c in sorted(per.items())},
        "total_dots": sum(c["dots"] for c in per.values()),
        "total_mismatches": sum(c["mismatches"] for c in per.values()),
        "examples": examples[:300],
        "seconds": {"build": round(t_build, 1), "gpu": round(t_gpu, 1), "judge": round(t_judge, 1)},
    }
    if mmasim is not None:
        rec["mmasim"] = mmasim
    if not gpu:
        rec["interp_checked"] = dict(interp_checked)
        if args.plant:
            rec["planted"] = dict(planted)
    if args.dump and bad_launches:
        np.savez_compressed(args.dump, **{f"l{i}": hw for i, (_, _, _, hw) in enumerate(bad_launches)})
        rec["dumped"] = [{"kernel": dataclasses.asdict(k), "dist": d, "seed": s, "npz_key": f"l{i}",
                          "regenerate": "P.gen(P.kernel_from(kernel), dist, seed); D = npz[npz_key]"}
                         for i, (k, d, s, _) in enumerate(bad_launches)]
    return rec


# ---------------------------------------------------------------- the exploration record, rechecked


def _exploration_d(program, model: str) -> np.ndarray:
    """The interpreter's D bytes of an exploration program under ``model``.

    "ours": hardware mode as wired (dense fp8 mma: ``mma_emulation``); "b32": the
    model the exploration shipped and counted against (steps of 32 bytes of the *expanded* A,
    no keep mask; warp-level fp8 with F = 25 and an f32/f16 result).
    """
    from fuzzptx.oracles import reference
    from fuzzptx.oracles.reference import wgmma_math as W

    orig = (MM.hardware, MM.hardware_family, W.wgmma_dense)

    def family(form):  # the b32 model also runs the forms hardware mode leaves unmodelled
        try:
            return orig[1](form)
        except H.Unmodelled:
            return "mma"

    def ours(form, a, b, c, scale_d=True, keep=None):
        return orig[0](form, a, b, c, scale_d, keep)

    def b32(form, a, b, c, scale_d=True, keep=None):
        dt, ct = form.dtype, form.ctype or form.dtype
        c32 = np.asarray(c).astype(np.uint32)
        if ct != dt:
            c32 = F.encode(dt, F.decode(ct, c32)).astype(np.uint32)
        prm = H.Params(32 * 8 // F.bits_per_element(form.atype), 25, "rne-f16" if dt == "f16" else "rz-f32",
                       -21 if dt == "f16" else -133)
        return W.exact_result(dt, H.mma(form.atype, form.btype, dt, np.asarray(a).astype(np.uint32),
                                        np.asarray(b).astype(np.uint32), c32, family="mma", prm=prm))

    def dense_b32(form, a, b, c, scale_d=True, scale_a=1, scale_b=1, mode="spec", accum_precision=None,
                  keep=None):
        if mode != "hardware" or form.dtype not in ("f32", "f16"):
            return orig[2](form, a, b, c, scale_d, scale_a, scale_b, mode=mode, keep=keep)
        return W.hardware_result(form.atype, form.btype, form.dtype, np.asarray(a), np.asarray(b), np.asarray(c),
                                 bool(scale_d), scale_a, scale_b, params=H.params_for(form.atype, form.dtype))

    MM.hardware_family = family
    MM.hardware = ours if model == "ours" else b32
    if model == "b32":
        W.wgmma_dense = dense_b32
    try:
        ref = reference.run_program(program, mode="hardware")
    finally:
        MM.hardware, MM.hardware_family, W.wgmma_dense = orig
    return np.frombuffer(ref.bytes("d"), np.uint16 if program.buffer("d").type == "f16" else np.uint32)


def _recheck_case(case):
    fam, key, dist, seed = case
    f = isa.by_key(key)
    prog = P.warp_program(fam, f, dist, seed)
    ours, b32 = _exploration_d(prog, "ours"), _exploration_d(prog, "b32")
    return f"{fam} {f.dtype}.{f.atype}.{f.btype}", int(ours.size), int((ours != b32).sum())


def _recheck_example(ex):
    f = isa.by_key(ex["form"])
    ours = _exploration_d(P.warp_program(ex["family"], f, ex["dist"], ex["seed"]), "ours")
    return int(ours[ex["index"]]) == int(ex["hw"], 16)


def recheck_exploration(record: str, jobs: int, mixes=None) -> dict:
    """The exploration's H100 data against the models now wired, without a GPU.

    The record keeps, per mix, how many D elements differed between the H100 and the "b32"
    model, plus 100 sampled H100 outputs.  If "ours" is the H100's arithmetic, it reproduces
    the sampled outputs and the number of elements where "b32" and "ours" differ equals the
    observed count in every mix (a necessary condition, not a proof: the proof run is above).
    """
    rec = json.loads(open(record).read())
    obs = rec["warp_exploration"]["per_mix"]
    cases = [(fam, f.key, d, s) for fam, f, d, s in P.exploration_cases()
             if not (fam == "mma.sp" and f.atype in FP8)]  # no model
    if mixes:
        def mix_of(c):
            f = isa.by_key(c[1])
            return f"{c[0]} {f.dtype}.{f.atype}.{f.btype}"

        cases = [c for c in cases if any(mix_of(c).startswith(m) for m in mixes)]
    pred, elems = Counter(), Counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for mix, n, diff in pool.map(_recheck_case, cases, chunksize=4):
            pred[mix] += diff
            elems[mix] += n
        examples = list(pool.map(_recheck_example, rec["warp_exploration"]["examples"]))
    per = {m: {"elements": elems[m], "observed_b32_vs_h100": obs[m]["mismatches.b32"],
               "predicted_b32_vs_ours": pred[m], "equal": pred[m] == obs[m]["mismatches.b32"]} for m in sorted(pred)}
    return {"what": recheck_exploration.__doc__.split("\n")[0], "cases": len(cases), "per_mix": per,
            "not_rechecked": "mma.sp fp8 (no model)",
            "sampled_outputs_reproduced": f"{sum(examples)} of {len(examples)}"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dots", type=int, default=1_000_000, help="dot products (D elements) per type mix, at least")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--families", nargs="+", default=["wgmma.sp", "mma", "wmma"], choices=["wgmma.sp", "mma", "wmma"])
    ap.add_argument("--mix", nargs="*", default=None, help="only mixes starting with one of these strings")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: the model (and --interp) against itself")
    ap.add_argument("--interp", type=int, default=0,
                    help="dry run: one launch of up to this many kernels per family runs through the interpreter")
    ap.add_argument("--plant", action="store_true", help="dry run: flip one D bit in every 7th launch")
    ap.add_argument("--keep", type=int, default=8, help="mismatching launches to dump, per mix")
    ap.add_argument("--dump", default=None, help=".npz for the D of mismatching launches (key per launch)")
    ap.add_argument("--mmasim", type=int, default=0,
                    help="also run this many dense-mma launches through MMA-Sim (needs the mmasim extra): three-way")
    ap.add_argument("--out", default=None)
    ap.add_argument("--recheck-exploration", default=None, metavar="RECORD",
                    help="no GPU: recheck the models against the exploration data in RECORD (numerics.json)")
    args = ap.parse_args(argv)
    if args.recheck_exploration:
        rec = recheck_exploration(args.recheck_exploration, args.jobs, args.mix)
        text = json.dumps(rec, indent=1)
        if args.out:
            with open(args.out, "w") as fh:
                fh.write(text)
        print(text)
        return 0 if all(c["equal"] for c in rec["per_mix"].values()) else 1
    rec = run(args)
    text = json.dumps(rec, indent=1)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    print(json.dumps({k: rec[k] for k in ("total_dots", "total_mismatches", "launches", "kernels",
                                          "seconds")}))
    for m, c in rec["per_mix"].items():
        print(f"{m:40s} {c['dots']:>10d} {c['mismatches']:>8d}")
    if "mmasim" in rec:
        print("mmasim", json.dumps(rec["mmasim"].get("per_mix", rec["mmasim"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
