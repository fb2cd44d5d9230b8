"""The H100's tensor-core arithmetic, bit for bit: the reference's ``mode="hardware"``.

Spec mode (``wgmma_math``) returns the set of results the PTX ISA allows; this
module returns the one result an sm_90a H100 produces.  The model (a fused,
truncating multi-term adder, as in MMA-Sim and Khattak & Mikaitis) and its
parameters were established by probe programs on an H100 (``docs/numerics.md``,
``benchmarks/numerics_probes.py``) and proved on random and adversarial data
(``benchmarks/hw_numerics_proof.py``, record ``tests/hw_records/numerics.json``).

One fused step adds C and up to ``fused`` products (32 bytes of A-row data: 16
f16/bf16, 8 tf32, 32 fp8 products; one whole dense wgmma):

1. every input is decoded exactly; tf32 drops its low 13 bits; subnormal inputs
   are kept (no flush), their exponent clamped to the format's minimum;
2. each product is exact, with exponent ``e_a + e_b`` (clamped input exponents);
   a zero product or zero C counts with exponent ``e_zero`` (-133 for f32 D,
   -21 for f16 D);
3. every term is aligned to the largest exponent ``e_max`` and truncated toward
   zero to ``frac_bits`` fraction bits below it (25; 13 for fp8 inputs);
4. the aligned terms are summed exactly and the sum is rounded once: toward zero
   to f32 (subnormals kept; 2^128 and above overflow to Inf), toward zero to 13
   fraction bits (fp8 inputs, f32 D: an e8m13 accumulator), or to nearest even
   f16 (f16 D);
5. a zero result is +0; NaN in, Inf*0 or Inf-Inf give the canonical NaN
   (0x7FFFFFFF / 0x7FFF); otherwise an Inf term gives Inf of its sign.

Longer K runs step after step, each step's result (in D's format) being the next
step's C.  Everything is vectorised over [M, K, N] in float64, which holds every
product and every aligned sum exactly.

Proved on the H100 (docs/numerics.md): dense wgmma (every float mix, f32/f16 D) and
(``benchmarks/hw_sparse_mma_proof.py``) sparse forms (one
step = 32 bytes of *packed* A; products at positions the metadata did not select are
not formed: ``keep``), warp-level ``mma`` f16/bf16/tf32 (family "mma": the wgmma
parameters; ptxas emits one HMMA per instruction), ``wmma.mma`` (family "wmma": the
HMMA sequence ptxas emits, see ``wmma``).  fp8 ``mma``/``mma.sp`` and f16
``mma.m8n8k4`` have no tensor-core instruction on sm_90a: ptxas emulates them, and
``mma_emulation`` models that sequence (proved on the H100).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import fuzzptx.oracles.reference.formats as F

CANONICAL_NAN = {"f32": 0x7FFFFFFF, "f16": 0x7FFF}
_FP8 = ("e4m3", "e5m2")


class Unmodelled(ValueError):
    """A form whose H100 arithmetic the model does not cover (fp8 warp-level mma)."""


@dataclass(frozen=True)
class Params:
    """One fused step: ``fused`` products + C, aligned with ``frac_bits``, then ``rounding``."""

    fused: int
    frac_bits: int
    rounding: str  # "rz-f32" | "rz-e8m13" | "rne-f16"
    e_zero: int


def params_for(atype: str, dtype: str, family: str = "wgmma", sparse: bool = False) -> Params:
    """The H100's parameters for one type mix; ``family`` "wgmma" or "mma".

    ``sparse``: a step spans 32 bytes of *packed* A, i.e. twice as many dense K positions
    (every selected product of one sparse instruction in one step).
    """
    if dtype not in ("f32", "f16"):
        raise ValueError(f"hardware numerics cover f32/f16 accumulators, not {dtype!r}")
    if family in ("mma", "wmma") and atype in _FP8:
        raise Unmodelled(f"{family} with {atype} inputs is emulated by ptxas: see mma_emulation "
                         "(docs/numerics.md)")
    fused = 32 * 8 // F.bits_per_element(atype) * (2 if sparse else 1)
    if family == "wmma" and atype == "tf32":
        fused = 4  # wmma m16n16k8 tf32 is two chained HMMA.1684 (k 0-3, then 4-7)
    fp8 = atype in _FP8 and family == "wgmma"
    frac = 13 if fp8 else 25
    if dtype == "f16":
        return Params(fused, frac, "rne-f16", -21)
    return Params(fused, frac, "rz-e8m13" if fp8 else "rz-f32", -133)


def exponents(type_: str, v: np.ndarray) -> np.ndarray:
    """floor(log2|v|) clamped below at the format's smallest normal exponent (int32)."""
    with np.errstate(invalid="ignore"):
        _, e = np.frexp(np.where(np.isfinite(v), v, 1.0))
    return np.maximum(e.astype(np.int32) - 1, np.int32(F.FLOATS[type_].emin))


def _truncate(v: np.ndarray, frac_bits: int, sub_step: int) -> np.ndarray:
    """Round toward zero to ``frac_bits`` fraction bits, with steps of 2^sub_step below 2^-126.

    Normal range: clear the low bits of the float64 significand (exact truncation);
    below f32's smallest normal: truncate to multiples of 2^sub_step.
    """
    mask = np.uint64(~((1 << (52 - frac_bits)) - 1) & 0xFFFFFFFFFFFFFFFF)
    r = (np.ascontiguousarray(v, dtype=np.float64).view(np.uint64) & mask).view(np.float64)
    tiny = np.abs(v) < 2.0 ** -126
    if tiny.any():
        r = np.where(tiny, np.ldexp(np.trunc(np.ldexp(v, -sub_step)), sub_step), r)
    return r


def round_rz_f32(v: np.ndarray) -> np.ndarray:
    """Round toward zero to f32 (subnormals kept); |v| >= 2^128 gives Inf."""
    with np.errstate(over="ignore"):
        return _truncate(v, 23, -149).astype(np.float32)


def round_rz_e8m13(v: np.ndarray) -> np.ndarray:
    """Round toward zero to 13 fraction bits with f32's exponent range (subnormal step 2^-139)."""
    with np.errstate(over="ignore"):
        return _truncate(v, 13, -139).astype(np.float32)


def round_rne_f16(v: np.ndarray) -> np.ndarray:
    """Round to nearest even f16 directly from the exact float64 value (no double rounding)."""
    with np.errstate(over="ignore"):
        return v.astype(np.float16)


_ROUND = {"rz-f32": round_rz_f32, "rz-e8m13": round_rz_e8m13, "rne-f16": round_rne_f16}


def to_bits(dtype: str, r: np.ndarray, nan: np.ndarray) -> np.ndarray:
    """Result values (in D's numpy type) -> uint32 bits: +0 for zeros, canonical NaN."""
    r = r + r.dtype.type(0)  # -0 -> +0
    bits = r.view(np.uint16 if dtype == "f16" else np.uint32).astype(np.uint32)
    return np.where(nan | np.isnan(r), np.uint32(CANONICAL_NAN[dtype]), bits).astype(np.uint32)


def step(atype: str, btype: str, dtype: str, av: np.ndarray, bv: np.ndarray, cv: np.ndarray,
         prm: Params, keep: np.ndarray | None = None) -> np.ndarray:
    """One fused step: values A [M,K] (K <= fused), B [K,N], C [M,N] -> D bits [M,N] (uint32).

    ``keep`` [M,K] (sparse forms): False marks A positions the metadata did not select;
    their products are not formed at all (an Inf or NaN in B there has no effect).
    """
    if keep is not None:
        av = np.where(keep, av, 0.0)
    finite = bool(np.isfinite(av).all() and np.isfinite(bv).all() and np.isfinite(cv).all())
    nan = pos = neg = None
    if not finite:
        with np.errstate(invalid="ignore", over="ignore"):
            p = av[:, :, None] * bv[None, :, :]
        if keep is not None:
            p = np.where(keep[:, :, None], p, 0.0)
        nan_p, inf_p = np.isnan(p), np.isinf(p)
        pos = (inf_p & (p > 0)).any(axis=1) | (cv == np.inf)
        neg = (inf_p & (p < 0)).any(axis=1) | (cv == -np.inf)
        nan = nan_p.any(axis=1) | np.isnan(cv) | (pos & neg)
        av = np.where(np.isfinite(av), av, 0.0)
        bv = np.where(np.isfinite(bv), bv, 0.0)
        cv = np.where(np.isfinite(cv), cv, 0.0)
    # alignment exponent: the largest e_a + e_b over non-zero products, C's, and e_zero
    # where any term is zero (a zero product exists iff A's row or B's column holds a zero)
    low = np.int32(-(1 << 20))
    ea = np.where(av == 0, low, exponents(atype, av))
    eb = np.where(bv == 0, low, exponents(btype, bv))
    e_max = np.where(cv == 0, np.int32(prm.e_zero), exponents(dtype, cv))
    for k in range(av.shape[1]):
        np.maximum(e_max, ea[:, k, None] + eb[None, k, :], out=e_max)
    zero_any = (av == 0).any(axis=1)[:, None] | (bv == 0).any(axis=0)[None, :]
    e_max = np.where(zero_any, np.maximum(e_max, np.int32(prm.e_zero)), e_max)
    scale = np.ldexp(1.0, prm.frac_bits - e_max)  # exact powers of two
    with np.errstate(invalid="ignore", over="ignore"):
        t = av[:, :, None] * bv[None, :, :]
        t *= scale[:, None, :]
        np.trunc(t, out=t)
        total = t.sum(axis=1) + np.trunc(cv * scale)
    r = _ROUND[prm.rounding](total / scale)
    if nan is None:
        return to_bits(dtype, r, np.zeros(r.shape, bool))
    inf = (pos | neg) & ~nan
    r = np.where(inf, np.where(pos, np.inf, -np.inf).astype(r.dtype), r)
    return to_bits(dtype, r, nan)


def mma(atype: str, btype: str, dtype: str, a_bits: np.ndarray, b_bits: np.ndarray, c_bits: np.ndarray,
        scale_d: bool = True, scale_a: int = 1, scale_b: int = 1, family: str = "wgmma",
        prm: Params | None = None, keep: np.ndarray | None = None) -> np.ndarray:
    """D bits [M,N] (uint32; f16 in the low half) for A [M,K], B [K,N], C [M,N] element bits.

    K is split into consecutive fused steps; ``scale_d`` False makes C a +0 term.
    ``scale_a``/``scale_b`` (-1: wgmma imm-scale) negate A/B.  ``keep`` [M,K]: see ``step``.
    """
    prm = prm or params_for(atype, dtype, family)
    with np.errstate(invalid="ignore"):
        av = F.decode(atype, a_bits) * float(scale_a)
        bv = F.decode(btype, b_bits) * float(scale_b)
    m, k = av.shape
    n = bv.shape[1]
    cv = F.decode(dtype, c_bits) if scale_d else np.zeros((m, n))
    bits = None
    for s in range(0, max(k, 1), prm.fused):
        kp = None if keep is None else keep[:, s:s + prm.fused]
        bits = step(atype, btype, dtype, av[:, s:s + prm.fused], bv[s:s + prm.fused], cv, prm, kp)
        cv = F.decode(dtype, bits)
    return bits


# ---------------------------------------------------------------- wmma.mma: the HMMA sequence ptxas emits


def wmma_accumulator(ctype: str, dtype: str) -> str:
    """The HMMA type ptxas uses for ``wmma.mma`` .dtype.ctype: F16 only when C and D are both f16.

    SASS (ptxas 13.0, sm_90a): .f32.f16 converts C exactly (HADD2.F32) and runs HMMA.F32;
    .f16.f32 runs HMMA.F32 on the f32 C and rounds D to f16 (F2FP.F16.F32, nearest even).
    """
    return "f16" if ctype == dtype == "f16" else "f32"


def wmma(atype: str, btype: str, ctype: str, dtype: str, a_bits: np.ndarray, b_bits: np.ndarray,
         c_bits: np.ndarray) -> np.ndarray:
    """D bits of one ``wmma.mma`` (every shape is HMMA.16816 per 16x8 tile; tf32: 2 x HMMA.1684 along K)."""
    acc = wmma_accumulator(ctype, dtype)
    c = np.asarray(c_bits)
    if ctype != acc:  # f16 C into an F32 HMMA: exact
        c = F.encode(acc, F.decode(ctype, c)).astype(np.uint32)
    bits = mma(atype, btype, acc, a_bits, b_bits, c, family="wmma", prm=params_for(atype, acc, "wmma"))
    if dtype == acc:
        return bits
    v = F.decode(acc, bits)
    with np.errstate(over="ignore", invalid="ignore"):
        r = v.astype(np.float32).astype(np.float16)
    return to_bits("f16", r, np.isnan(v))
