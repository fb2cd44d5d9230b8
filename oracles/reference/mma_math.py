"""The arithmetic of warp-level ``mma`` / ``mma.sp`` / ``wmma.mma``: wgmma_math's model on any M.

Seed 002 (wmma) and the PTX ``mma`` text state the same precision rules as wgmma
(products at least single precision; f32 accumulation at least single, f16 at
least half; order, rounding and subnormals unspecified; bf16/tf32 products "with
specified precision"), so ``wgmma_math``'s error model applies unchanged: rows are
independent, so an M-row product is computed as the top rows of a 64-row one.

Additions here:
* ``.f64`` (mma m8n8k4/m16n8k*, wmma m8n8k4): "precision identical to .f64
  fused multiply-add" with ``.rnd`` (default ``.rn``) and unspecified order: the
  same model with p = 53 (u = 2^-52, which also covers the directed modes).
* ``.b1`` with ``.xor.popc`` (wgmma_math has ``.and.popc`` only).
* C of another type than D (Volta ``m8n8k4 .f32.f16.f16.f16``): C is converted
  exactly to D's format first.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from fuzzptx.isa import Shape

import fuzzptx.oracles.reference.formats as F
import fuzzptx.oracles.reference.wgmma_math as W
import fuzzptx.oracles.reference.hw_numerics as H
import fuzzptx.oracles.reference.mma_emulation as E

M_PAD = W.M


def _pad(x: np.ndarray, rows: int) -> np.ndarray:
    out = np.zeros((rows,) + x.shape[1:], dtype=x.dtype)
    out[: x.shape[0]] = x
    return out


def _slice(res: W.Result, m: int) -> W.Result:
    kw = {}
    for name in ("bits", "value", "exact_value", "lo", "hi", "err", "finite_ok", "may_nan", "may_pos_inf",
                 "may_neg_inf"):
        kw[name] = getattr(res, name)[:m]
    return W.Result(res.dtype, integer=res.integer, **kw)


def mma_dense(form, a: np.ndarray, b: np.ndarray, c: np.ndarray, *, scale_d: bool = True,
              op: str = "", mode: str = "spec", keep: np.ndarray | None = None) -> W.Result:
    """D = A*B + C for element bits A [M,K], B [K,N], C [M,N] (C bits of ``form.ctype``).

    ``op``: ``"xor"`` or ``"and"`` for b1 forms.  Result ``bits`` are uint64 for f64.
    ``mode="hardware"``: f16/bf16/tf32 forms give the H100's one result (``hardware``);
    integer, b1 and f64 forms are the same in both modes (f64: the nominal correctly rounded
    value); fp8 ``mma``/``mma.sp`` and f16 m8n8k4 follow ptxas's emulation (``mma_emulation``).
    ``mma.sp``: A is the
    expanded dense A and ``keep`` [M,K] the metadata-selected positions.
    The warp-level hardware models are proved on the H100 (docs/numerics.md).
    """
    if mode not in ("spec", "hardware"):
        raise ValueError(f"mma_math mode must be 'spec' or 'hardware', not {mode!r}")
    m, k = np.shape(a)
    n = np.shape(b)[1]
    a = np.asarray(a).astype(np.uint64)
    b = np.asarray(b).astype(np.uint64)
    c = np.asarray(c).astype(np.uint64)
    dtype, ctype = form.dtype, (form.ctype or form.dtype)
    if mode == "hardware" and dtype in ("f32", "f16") and form.atype != "b1":
        return hardware(form, a, b, c, scale_d, keep)
    if ctype != dtype:  # exact widening (f16 -> f32)
        c = F.encode(dtype, F.decode(ctype, c)).astype(np.uint64)
    if form.atype == "b1":
        return _b1(form, a, b, c, scale_d, op or "and")
    fake = replace(form, shape=Shape(M_PAD, n, k), ctype=dtype)
    ap, cp = _pad(a, M_PAD), _pad(c, M_PAD)
    if dtype == "f64":
        return _slice(_f64(fake, ap, b, cp, scale_d), m)
    if dtype == "s32":
        res = W._int_result(form.atype, form.btype, ap, b, cp, bool(scale_d), form.satfinite)
        return _slice(res, m)
    res = W._float_result(form.atype, form.btype, dtype, ap.astype(np.uint32), b.astype(np.uint32),
                          cp.astype(np.uint32), bool(scale_d), 1, 1, W.ACC_PRECISION[dtype])
    return _slice(res, m)


def hardware_family(form) -> str:
    """Which H100 model a warp-level float form follows (``hw_numerics``).

    "emulated": fp8 ``mma``/``mma.sp`` and f16 ``mma.m8n8k4``, which ptxas lowers to
    F2FP/HMMA/FADD resp. FFMA/FADD sequences (``mma_emulation``, proved on the H100); "wmma":
    ``wmma.mma`` (its HMMA sequence); "mma": ``mma``/``mma.sp`` f16/bf16/tf32 (one HMMA, the
    wgmma parameters).  Other narrow-float forms (sm_120a ``kind::``) raise ``Unmodelled``.
    """
    if E.emulated(form):
        return "emulated"
    if form.atype in ("e4m3", "e5m2"):
        raise H.Unmodelled(f"{form.opcode}: not an sm_90a form; no H100 arithmetic to model")
    if form.family == "wmma.mma":
        return "wmma"
    return "mma"


def hardware(form, a: np.ndarray, b: np.ndarray, c: np.ndarray, scale_d: bool = True,
             keep: np.ndarray | None = None) -> W.Result:
    """``mode="hardware"`` of a float warp-level form: element bits A [M,K], B [K,N], C [M,N] (ctype bits)."""

    fam = hardware_family(form)
    dtype, ctype = form.dtype, (form.ctype or form.dtype)
    a32, b32, c32 = (np.asarray(x).astype(np.uint32) for x in (a, b, c))
    if not scale_d:
        c32 = np.zeros_like(c32)
    if fam == "emulated":

        bits = E.mma(form, a32, b32, c32, keep)
    elif fam == "wmma":
        bits = H.wmma(form.atype, form.btype, ctype, dtype, a32, b32, c32)
    else:
        if ctype != dtype:
            raise ValueError(f"{form.opcode}: C of type {ctype} with D {dtype} is not an mma form")
        sparse = form.family == "mma.sp"
        if sparse and keep is None:
            raise ValueError(f"{form.opcode}: hardware mode needs the metadata's keep mask")
        bits = H.mma(form.atype, form.btype, dtype, a32, b32, c32, family="mma",
                     prm=H.params_for(form.atype, dtype, "mma", sparse), keep=keep if sparse else None)
    return W.exact_result(dtype, bits)


def _f64(fake, a, b, c, scale_d) -> W.Result:
    res = W._float_result("f64", "f64", "f64", a, b, c, bool(scale_d), 1, 1, 53)
    with np.errstate(invalid="ignore", over="ignore"):
        bits = F.encode("f64", res.exact_value).astype(np.uint64)
    return replace(res, bits=bits, value=F.decode("f64", bits))


def _b1(form, a, b, c, scale_d, op) -> W.Result:
    av = (a & np.uint64(1)).astype(bool)
    bv = (b & np.uint64(1)).astype(bool)
    if op == "xor":
        dots = (av[:, :, None] ^ bv[None, :, :]).sum(axis=1, dtype=np.int64)
    else:
        dots = (av[:, :, None] & bv[None, :, :]).sum(axis=1, dtype=np.int64)
    cv = F.decode("s32", c) if scale_d else np.zeros(dots.shape, np.int64)
    exact = dots + cv
    out = ((exact + (1 << 31)) % (1 << 32)) - (1 << 31)
    bits = (out & 0xFFFFFFFF).astype(np.uint32)
    ones = np.ones(out.shape, bool)
    f = out.astype(np.float64)
    return W.Result("s32", bits, out, exact.astype(np.float64), f, f, np.zeros(out.shape), ones, ~ones, ~ones,
                    ~ones, integer=True)


def within(result: W.Result, hw_bits: np.ndarray) -> np.ndarray:
    """Which hardware D elements (raw bits; 64-bit for f64) the spec allows."""
    if result.dtype != "f64":
        return W.within(result, np.asarray(hw_bits).astype(np.uint64) & np.uint64(0xFFFFFFFF))
    x = F.decode("f64", np.asarray(hw_bits).astype(np.uint64))
    with np.errstate(invalid="ignore"):
        fin = np.isfinite(x) & result.finite_ok & (x >= result.lo) & (x <= result.hi)
    return (np.isnan(x) & result.may_nan) | ((x == np.inf) & result.may_pos_inf) | \
        ((x == -np.inf) & result.may_neg_inf) | fin
