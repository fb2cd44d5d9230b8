"""Warp-level ``mma`` forms that sm_90a has no tensor-core instruction for: ptxas emulates them.

On sm_90a ptxas 13.0.88 lowers these ``mma.sync`` forms to sequences of other instructions
(seen in the SASS, ``cuobjdump -sass``), so their numerics are those of the sequence, not of a
fused multi-term adder.  Established on an H100 (``benchmarks/numerics_mma_probe.py``,
``docs/numerics.md``; record ``tests/hw_records/mma_emulation.json``):

* **fp8 inputs** (e4m3/e5m2, m16n8k16 and m16n8k32): every byte is widened to f16 exactly
  (``F2FP.F16.E4M3.UNPACK_B``); one ``HMMA`` (m16n8k8 resp. m16n8k16, f16 inputs, D's type)
  takes the products at k % 4 in {0, 1} starting from +0, a second ``HMMA`` adds the products
  at k % 4 in {2, 3} onto that, and C is added last by one ``FADD`` (f32 D) or ``HADD2``
  (f16 D), rounded to nearest.  Each HMMA is the dense fused step of ``hw_numerics`` with f16
  operands (so an e4m3 subnormal is an f16 normal, with f16's exponent clamp).
* **fp8 mma.sp** (m16n8k64, f32 D): the packed A is widened to f16; two ``HMMA.SP.16832.F32``
  from +0 take the 4-groups at even group index (dense k % 8 < 4) and then the odd ones,
  each one fused sparse step (unselected positions form no product); C is added by FADD.
* **m8n8k4 with f16 inputs** (the Volta shape): products are formed in f32 by ``FFMA`` (round
  to nearest each).  f32 D: ``((a0 b0 + a1 b1) + a2 b2) + a3 b3`` from +0 as an FFMA chain,
  then ``C + chain`` by FADD.  f16 D: two chains ``p01 = a0 b0 + a1 b1`` and ``p23``, each
  started by an FMUL (so a -0 product stays -0), then ``(C + p01) + p23`` in f32 and one
  rounding to f16 (``F2FP``).

These are pure functions of the matrices' element bits, vectorised over [M, K] x [K, N].
"""
from __future__ import annotations

import numpy as np

import fuzzptx.oracles.reference.formats as F
import fuzzptx.oracles.reference.hw_numerics as H

FP8 = ("e4m3", "e5m2")


def emulated(form) -> bool:
    """True for the mma forms ptxas lowers to non-mma sequences on sm_90a (see module doc)."""
    if form.family == "mma.sp" and form.atype in FP8 and form.dtype == "f32" and "kind::" not in form.opcode:
        return True
    if form.family != "mma" or form.dtype not in ("f32", "f16"):
        return False
    if "kind::" in form.opcode:  # the sm_120a block-scaled/f8f6f4 forms: not sm_90a
        return False
    if form.atype in FP8 and form.btype in FP8:
        return True
    return (form.shape.m, form.shape.n, form.shape.k) == (8, 8, 4) and form.atype == "f16"


def rn_f32_add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """f32 ``x + y`` rounded to nearest even (``FADD``/``FFMA``), for float64 x, y.

    The float64 sum can itself be inexact (x and y far apart), so the float64 rounding error
    (TwoSum) breaks the ties that the second rounding to f32 would otherwise get wrong.
    """
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        s = x + y
        bb = s - x
        err = (x - (s - bb)) + (y - bb)
        r = s.astype(np.float32)
        d = s - r.astype(np.float64)
        up = np.nextafter(r, np.float32(np.inf)).astype(np.float64) - r
        down = r - np.nextafter(r, np.float32(-np.inf)).astype(np.float64)
        tie = ((d > 0) & (2 * d == up)) | ((d < 0) & (-2 * d == down))
        away = tie & (err != 0) & (np.sign(err) == np.sign(d)) & np.isfinite(s)
        other = np.nextafter(r, np.where(d > 0, np.float32(np.inf), np.float32(-np.inf)))
    return np.where(away, other, r)


def _in_d(dtype: str, r: np.ndarray) -> np.ndarray:
    """Results -> D's bits (f16 D: one rounding to nearest, as F2FP / HADD2 do).

    Unlike the tensor cores' adder (``hw_numerics.to_bits`` makes every zero +0), IEEE
    arithmetic keeps the sign of zero: a tiny negative f32 sum rounds to f16 -0 (seen on
    the H100).  NaN is the canonical NaN of D's format."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.asarray(r).astype(np.float16 if dtype == "f16" else np.float32)
    bits = r.view(np.uint16 if dtype == "f16" else np.uint32).astype(np.uint32)
    return np.where(np.isnan(r), np.uint32(H.CANONICAL_NAN[dtype]), bits).astype(np.uint32)


def fp8_mma(form, a_bits: np.ndarray, b_bits: np.ndarray, c_bits: np.ndarray) -> np.ndarray:
    """D bits [M, N] of an fp8 ``mma.sync`` on sm_90a: two f16 HMMAs from +0, then C + result."""
    av, bv = F.decode(form.atype, a_bits), F.decode(form.btype, b_bits)
    k = av.shape[1]
    dtype = form.dtype
    halves = [np.array([j for j in range(k) if j % 4 in pair]) for pair in ((0, 1), (2, 3))]
    prm = H.Params(k // 2, 25, "rne-f16" if dtype == "f16" else "rz-f32", -21 if dtype == "f16" else -133)
    x = np.zeros((av.shape[0], bv.shape[1]))
    for ks in halves:
        x = F.decode(dtype, H.step("f16", "f16", dtype, av[:, ks], bv[ks], x, prm))
    cv = F.decode(form.ctype or dtype, c_bits)
    if dtype == "f32":
        return _in_d(dtype, rn_f32_add(cv, x))
    with np.errstate(invalid="ignore", over="ignore"):
        return _in_d(dtype, cv + x)  # two f16 values: exact in float64, one rounding to f16


def m8n8k4(form, a_bits: np.ndarray, b_bits: np.ndarray, c_bits: np.ndarray) -> np.ndarray:
    """D bits [8, 8] of an f16-input m8n8k4 ``mma.sync`` on sm_90a (FFMA chains, then C)."""
    av, bv = F.decode(form.atype, a_bits), F.decode(form.btype, b_bits)
    with np.errstate(invalid="ignore", over="ignore"):
        p = [av[:, j, None] * bv[None, j, :] for j in range(av.shape[1])]  # exact in float64
    cv = F.decode(form.ctype or form.dtype, c_bits)
    zero = np.zeros_like(cv)

    def chain(acc, ks):
        for j in ks:
            acc = rn_f32_add(p[j], acc).astype(np.float64)
        return acc

    if form.dtype == "f32":  # FFMA ..., RZ: the chain starts from +0
        r = rn_f32_add(cv, chain(zero, range(len(p))))
    else:  # FMUL starts each chain (exact for f16 products, -0 kept), then FFMA
        r = rn_f32_add(rn_f32_add(cv, chain(p[0], (1,))), chain(p[2], (3,)))
    return _in_d(form.dtype, r)


def fp8_mma_sp(form, a_bits: np.ndarray, b_bits: np.ndarray, c_bits: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """D bits [16, 8] of fp8 ``mma.sp`` m16n8k64 (A: the expanded dense A, ``keep``: selected positions).

    ptxas widens the packed A to f16 and runs two ``HMMA.SP.16832.F32`` from +0, the first on
    the 4-groups at even group index (dense k % 8 < 4, each register's low half of packed
    values), the second on the odd ones, then adds C by FADD.
    """
    av, bv = F.decode(form.atype, a_bits), F.decode(form.btype, b_bits)
    k = av.shape[1]
    halves = [np.array([j for j in range(k) if (j % 8 < 4) == first]) for first in (True, False)]
    prm = H.Params(k // 2, 25, "rz-f32", -133)
    x = np.zeros((av.shape[0], bv.shape[1]))
    for ks in halves:
        x = F.decode("f32", H.step("f16", "f16", "f32", av[:, ks], bv[ks], x, prm, keep[:, ks]))
    return _in_d("f32", rn_f32_add(F.decode(form.ctype or "f32", c_bits), x))


def mma(form, a_bits: np.ndarray, b_bits: np.ndarray, c_bits: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
    """D bits of one emulated ``mma`` product (``emulated(form)`` must hold; ``keep`` for mma.sp)."""
    if not emulated(form):
        raise ValueError(f"{form.key}: not an mma form ptxas emulates on sm_90a")
    if form.family == "mma.sp":
        if keep is None:
            raise ValueError(f"{form.key}: the emulated sparse product needs the metadata's keep mask")
        return fp8_mma_sp(form, a_bits, b_bits, c_bits, keep)
    return (fp8_mma if form.atype in FP8 else m8n8k4)(form, a_bits, b_bits, c_bits)
