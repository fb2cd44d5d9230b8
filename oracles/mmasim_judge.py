"""Optional judge: MMA-Sim (Microsoft, PyPI ``mmasim``, needs torch) on dense Hopper wgmma.

MMA-Sim models dense wgmma floating-point arithmetic on whole matrices (no
layouts, descriptors or sparse forms).  It is never a core dependency: torch and
mmasim are imported lazily, and ``available()`` says why not when they are
missing, so callers (the differ, the proof scripts) skip it cleanly.
"""
from __future__ import annotations

import numpy as np

from fuzzptx.oracles.reference import formats as F
from fuzzptx.oracles import reference
from fuzzptx.oracles.reference import mma_math as MM
from fuzzptx.oracles.reference import wgmma_math as W

_TORCH_VIEW = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32", "f32": "float32",
               "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}


def available() -> str | None:
    """None when MMA-Sim can run here, else the reason it cannot."""
    try:
        import mmasim  # noqa: F401
        import torch  # noqa: F401
    except Exception as exc:  # ImportError, or torch failing to load
        return f"mmasim unavailable: {type(exc).__name__}: {exc}"
    return None


def _tensor(type_: str, bits: np.ndarray):
    import torch

    width = F.bits_per_element(type_)
    raw = np.ascontiguousarray(np.asarray(bits).astype(np.uint64) & np.uint64((1 << width) - 1))
    arr = raw.astype({8: np.uint8, 16: np.uint16, 32: np.uint32}[width]).view(
        {8: np.uint8, 16: np.int16, 32: np.int32}[width])
    return torch.from_numpy(arr.copy()).view(getattr(torch, _TORCH_VIEW[type_]))


def _bits(dtype: str, t) -> np.ndarray:
    import torch

    view = torch.int16 if dtype == "f16" else torch.int32
    out = t.contiguous().view(view).numpy().astype(np.int64)
    return (out & (0xFFFF if dtype == "f16" else 0xFFFFFFFF)).astype(np.uint32)


def wgmma(atype: str, btype: str, dtype: str, a_bits: np.ndarray, b_bits: np.ndarray, c_bits: np.ndarray,
          scale_d: bool = True, scale_a: int = 1, scale_b: int = 1, k_step: int | None = None) -> np.ndarray:
    """D bits [64,N] by MMA-Sim for A [64,K] (K = k_step * steps), B [K,N], C [64,N] element bits.

    Consecutive chunks of ``k_step`` (one wgmma's K) chain through D as chained wgmma
    instructions do; imm-scale negation is applied to the inputs' sign bits.
    """
    from mmasim.nv_ptx.sim import WGMMA

    n = np.shape(b_bits)[1]
    k_total = np.shape(a_bits)[1]
    k_step = k_step or k_total
    sign_a = 1 << (F.bits_per_element(atype) - 1)
    sign_b = 1 << (F.bits_per_element(btype) - 1)
    a = np.asarray(a_bits).astype(np.uint32) ^ np.uint32(sign_a if scale_a == -1 else 0)
    b = np.asarray(b_bits).astype(np.uint32) ^ np.uint32(sign_b if scale_b == -1 else 0)
    op = WGMMA("Hopper", f"m64n{n}k{k_step}.{dtype}.{atype}.{btype}")
    c = np.asarray(c_bits).astype(np.uint32) if scale_d else np.zeros((64, n), np.uint32)
    for s in range(0, k_total, k_step):
        d = op(_tensor(atype, a[:, s:s + k_step]), _tensor(btype, b[s:s + k_step]), _tensor(dtype, c))
        c = _bits(dtype, d)
    return c


def mma_shape_and_type(form) -> str | None:
    """MMA-Sim's name for a dense ``mma.sync`` form on Hopper, or None where it has no model.

    MMA-Sim's Hopper list holds the sm_75/sm_80/sm_90 shapes (f16/bf16/tf32, f64); it has
    neither the sm_89 fp8 shapes nor Volta's m8n8k4 there (on sm_90a ptxas emulates both)."""
    from mmasim.nv_ptx import isa_mma

    sh = form.shape
    name = f"m{sh.m}n{sh.n}k{sh.k}.{form.dtype}.{form.atype}.{form.btype}.{form.ctype or form.dtype}"
    return name if form.family == "mma" and name in isa_mma.mma_shape_and_type["Hopper"] else None


def mma(form, a_bits: np.ndarray, b_bits: np.ndarray, c_bits: np.ndarray) -> np.ndarray:
    """D bits [M,N] by MMA-Sim's Hopper model of one dense ``mma.sync`` (see ``mma_shape_and_type``)."""
    from mmasim.nv_ptx.sim import MMA

    name = mma_shape_and_type(form)
    if name is None:
        raise ValueError(f"MMA-Sim has no Hopper model of {form.opcode}")
    ctype = form.ctype or form.dtype
    d = MMA("Hopper", name)(_tensor(form.atype, a_bits), _tensor(form.btype, b_bits), _tensor(ctype, c_bits))
    return _bits(form.dtype, d)


def _wgmma_modelled(form) -> bool:
    if form.family != "wgmma" or form.dtype not in ("f32", "f16") or form.atype not in _TORCH_VIEW:
        return False
    try:
        from mmasim.nv_ptx.sim import WGMMA

        WGMMA("Hopper", f"m64n{form.shape.n}k{form.shape.k}.{form.dtype}.{form.atype}.{form.btype}")
    except Exception:  # MMA-Sim asserts on shapes and types it does not know
        return False
    return True


def run_program(program):
    """The reference interpreter in hardware mode with MMA-Sim's arithmetic wherever MMA-Sim models
    the form (dense wgmma, dense mma f16/bf16/tf32 on Hopper); ``modelled`` counts those products.

    Everything else (layouts, memory, control flow, the forms MMA-Sim lacks) is the reference's,
    so a difference from the reference's own hardware mode is a difference of arithmetic only, and
    a difference from the GPU where the reference agrees is a finding about MMA-Sim.
    Returns (RefResult, modelled)."""
    orig_w, orig_m = W.wgmma_dense, MM.mma_dense
    modelled = 0

    def wgmma_dense(form, a, b, c, scale_d=True, scale_a=1, scale_b=1, mode="spec", accum_precision=None, keep=None,
                    **kw):  # kw: the reference's own options (sums_cache), passed through
        nonlocal modelled
        if mode != "hardware" or keep is not None or not _wgmma_modelled(form):
            return orig_w(form, a, b, c, scale_d, scale_a, scale_b, mode=mode, accum_precision=accum_precision, keep=keep,
                          **kw)
        modelled += 1
        bits = wgmma(form.atype, form.btype, form.dtype, np.asarray(a), np.asarray(b), np.asarray(c), bool(scale_d),
                     scale_a, scale_b, k_step=form.shape.k)
        return W.exact_result(form.dtype, bits)

    def mma_dense(form, a, b, c, *, scale_d=True, op="", mode="spec", keep=None):
        nonlocal modelled
        if mode != "hardware" or not scale_d or mma_shape_and_type(form) is None:
            return orig_m(form, a, b, c, scale_d=scale_d, op=op, mode=mode, keep=keep)
        modelled += 1
        return W.exact_result(form.dtype, mma(form, np.asarray(a), np.asarray(b), np.asarray(c)))

    W.wgmma_dense, MM.mma_dense = wgmma_dense, mma_dense
    try:
        return reference.run_program(program, mode="hardware"), modelled
    finally:
        W.wgmma_dense, MM.mma_dense = orig_w, orig_m
