"""Float rounding for the interpreter: any PTX rounding mode into any float format.

Values travel as float64.  An operation computes its exact result as ``x + err``
(``err`` from TwoSum when float64 itself rounded, else 0) and ``fround`` rounds that
to the target format with ``.rn``/``.rz``/``.rm``/``.rp``/``.rna``: round to nearest
even first, then step one representable value where the mode or a tie says so.
float64 is wide enough (53 >= 2*24+2 bits) that f32 add/sub/mul/div rounded through
float64 are correctly rounded (double rounding is innocuous); fma uses ``err``.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

import fuzzptx.oracles.reference.formats as F

_NP = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
       "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
_UINT = {64: np.uint64, 32: np.uint32, 16: np.uint16, 8: np.uint8}


def decode(fmt: str, bits: np.ndarray) -> np.ndarray:
    """Raw bits (uint64 array) of ``fmt`` -> float64 values."""
    if fmt == "f32":
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    if fmt == "f64":
        return bits.view(np.float64).copy() if bits.dtype == np.uint64 else bits.astype(np.uint64).view(np.float64)
    if fmt == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    return F.decode(fmt, bits)


def encode(fmt: str, vals: np.ndarray) -> np.ndarray:
    """float64 values already representable in ``fmt`` -> bits as uint64 (NaN canonical)."""
    v = np.asarray(vals, dtype=np.float64)
    if fmt == "f64":
        out = v.view(np.uint64).copy()
    elif fmt == "tf32":
        out = v.astype(np.float32).view(np.uint32).astype(np.uint64) & np.uint64(0xFFFFE000)
    else:
        w = F.FLOATS[fmt].storage_bits
        with np.errstate(invalid="ignore", over="ignore"):
            out = v.astype(_NP[fmt]).view(_UINT[w]).astype(np.uint64)
    nan = np.isnan(v)
    if nan.any():
        out[nan] = np.uint64(F.CANONICAL_NAN[fmt])
    return out


def rne(x: np.ndarray, fmt: str) -> np.ndarray:
    """Round to nearest even into ``fmt`` (float64 result; overflow to Inf, or NaN without Inf)."""
    if fmt == "f64":
        return x
    if fmt in ("f32", "f16"):  # numpy's casts round to nearest even, overflowing to Inf
        with np.errstate(over="ignore", invalid="ignore"):
            return x.astype(_NP[fmt]).astype(np.float64)
    if fmt == "tf32":
        return F.round_to_format(x, "tf32")
    return F.round_to_format(x, fmt)


def step(v: np.ndarray, fmt: str, up: bool) -> np.ndarray:
    """The next representable value of ``fmt`` above (``up``) or below ``v`` (float64 in/out)."""
    if fmt in ("f32", "f64", "f16"):
        t = _NP[fmt]
        with np.errstate(over="ignore", invalid="ignore"):
            return np.nextafter(v.astype(t), t(np.inf if up else -np.inf)).astype(np.float64)
    f = F.FLOATS[fmt]
    v = np.asarray(v, dtype=np.float64)
    a = np.abs(v)
    away = np.where(v == 0, True, (v > 0) == up)
    with np.errstate(invalid="ignore", divide="ignore"):
        m, e = np.frexp(a)
    expo = np.where(a == 0, f.emin, np.maximum(e.astype(np.int64) - 1, f.emin))
    ulp = np.ldexp(1.0, expo - f.man_bits)
    pow2_down = (m == 0.5) & (e.astype(np.int64) - 1 > f.emin)
    down_ulp = np.where(pow2_down, ulp / 2, ulp)
    with np.errstate(invalid="ignore", over="ignore"):
        na = np.where(away, a + ulp, a - down_ulp)
        na = np.where(np.isinf(a), np.where(away, np.inf, f.max_finite), na)
        na = np.where(na > f.max_finite, np.inf if f.has_inf else np.nan, na)
    sign = np.where(v == 0, 1.0 if up else -1.0, np.sign(v))
    return np.where(np.isnan(v), np.nan, sign * na)


def fround(x: np.ndarray, fmt: str, mode: str = "rn", err: np.ndarray | None = None) -> np.ndarray:
    """Round the exact value ``x + err`` into ``fmt`` with a PTX rounding mode (float64 out)."""
    x = np.asarray(x, dtype=np.float64)
    r = rne(x, fmt)
    if fmt == "f64" and err is None:
        return r
    if mode == "rn" and err is None:
        return r
    fin = np.isfinite(x)
    with np.errstate(invalid="ignore"):
        d = np.where(fin, x - r, 0.0)
    e = np.zeros_like(x) if err is None else np.where(fin, err, 0.0)
    cmp = np.where(d != 0, np.sign(d), np.sign(e))  # sign of (exact - r)
    if mode == "rm":
        return np.where(fin & (cmp < 0), step(r, fmt, False), r)
    if mode == "rp":
        return np.where(fin & (cmp > 0), step(r, fmt, True), r)
    if mode == "rz":
        down = fin & (cmp < 0) & (r > 0)
        upw = fin & (cmp > 0) & (r < 0)
        return np.where(down, step(r, fmt, False), np.where(upw, step(r, fmt, True), r))
    if mode in ("rn", "rna"):
        # Ties: x exactly halfway between r and its neighbour; err or the mode breaks them.
        other = np.where(d > 0, step(r, fmt, True), step(r, fmt, False))
        with np.errstate(invalid="ignore"):
            tie = fin & (d != 0) & (np.abs(other - x) == np.abs(d)) & np.isfinite(other)
        if mode == "rna":
            pick = tie & ((e == 0) & (np.abs(other) > np.abs(r)) | (e != 0) & (np.sign(e) == np.sign(d)))
        else:
            pick = tie & (e != 0) & (np.sign(e) == np.sign(d))
        # exact midpoint from below float64 precision: d == 0 but err != 0 cannot be a tie of fmt
        return np.where(pick, other, r)
    raise ValueError(f"unknown rounding mode {mode!r}")


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s = fl(a+b) and the exact error e (a + b = s + e), Knuth's TwoSum."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = a + b
        bb = s - a
        e = (a - (s - bb)) + (b - bb)
    return s, np.where(np.isfinite(s), e, 0.0)


def flush_subnormal(v: np.ndarray, fmt: str) -> np.ndarray:
    """``.ftz``: subnormal values become zero of the same sign."""
    f = F.FLOATS[fmt]
    return np.where((v != 0) & (np.abs(v) < f.min_normal), np.copysign(0.0, v), v)


def saturate(r: np.ndarray) -> np.ndarray:
    """``.sat``: clamp to [+0.0, 1.0], NaN to +0.0; a -0.0 result becomes +0.0 (the H100,
    tests/hw_records/scalar_ops_h100.json: sub/mul.rz.ftz.sat.f32, add/fma.rn.ftz.sat.f16, cvt .sat)."""
    return np.where(np.isnan(r), 0.0, np.clip(r, 0.0, 1.0)) + 0.0


def relu(r: np.ndarray) -> np.ndarray:
    """``.relu``: "clamps the result to 0 if negative" (PTX ISA); -0.0 gives +0.0 as on the H100."""
    return np.where(np.isnan(r), np.nan, np.maximum(r, 0.0) + 0.0)


def round_int(x: np.ndarray, mode: str) -> np.ndarray:
    """``.rni/.rzi/.rmi/.rpi`` on float64 values (NaN stays NaN)."""
    if mode == "rni":
        return np.round(x)  # half to even
    if mode == "rzi":
        return np.trunc(x)
    if mode == "rmi":
        return np.floor(x)
    if mode == "rpi":
        return np.ceil(x)
    raise ValueError(mode)
