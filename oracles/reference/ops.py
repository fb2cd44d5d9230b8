"""Scalar ALU semantics, vectorised over threads: integer, float, compare, select, convert.

Each handler is ``h(m, f, ins, act)``: it reads operands through the machine
(``m.read``), computes on every thread at once and writes through ``m.write``,
which applies the active mask.  Shadows (``values``): exact inputs give exact
outputs; interval (SET) inputs go through mov/cvt/neg/abs/add/sub/mul/fma with
outward-rounded interval arithmetic; anything else that reads a non-exact input
gives UNDEF for that thread (conservative, never invented).
"""
from __future__ import annotations

import functools

import numpy as np

import fuzzptx.oracles.reference.fp as fp
from .errors import Unsupported
from .values import (undef_where, ALT_FORMAT, ALT_FORMATS, EXACT, MAY_NEG_INF, MAY_POS_INF, SET, TYPES, UNDEF, U64, Shadow,
                     combine_undef, mask, sign_extend)

ROUND = ("rn", "rz", "rm", "rp", "rna")
IROUND = ("rni", "rzi", "rmi", "rpi")
HALF = {"f16x2": "f16", "bf16x2": "bf16", "e4m3x2": "e4m3", "e5m2x2": "e5m2"}


def types_of(ins) -> list[str]:
    return _types(ins.opcode)


@functools.lru_cache(maxsize=4096)
def _types(opcode: str) -> list[str]:
    return [x for x in opcode.split(".")[1:] if x in TYPES]


def the_type(ins) -> str:
    ts = types_of(ins)
    if not ts:
        raise Unsupported.at(ins, "no operand type")
    return ts[-1]


def rounding(ins, default: str = "rn") -> str:
    for x in ins.modifiers:
        if x in ROUND:
            return x
    return default


# ------------------------------------------------------------------ float helpers


def fmt_of(t: str) -> str:
    return HALF.get(t, t)


def fdecode(t: str, bits: np.ndarray) -> np.ndarray:
    return fp.decode(fmt_of(t), bits)


def _lanes(t: str, bits: np.ndarray) -> list[np.ndarray]:
    """Split a packed x2 value into [low, high] 16-bit (or 8-bit) lanes."""
    w = TYPES[t][0] // 2
    return [bits & mask(w), (bits >> U64(w)) & mask(w)]


def _pack(t: str, lanes: list[np.ndarray]) -> np.ndarray:
    w = TYPES[t][0] // 2
    return (lanes[0] & mask(w)) | ((lanes[1] & mask(w)) << U64(w))


def float_op(t: str, fn, bits_in: list[np.ndarray], mode: str, ftz: bool, sat: bool) -> np.ndarray:
    """Apply ``fn(vals..., fmt, mode) -> float64 rounded values`` per lane; returns result bits."""
    if t in HALF:
        lanes_in = [_lanes(t, b) for b in bits_in]
        out = [float_op(HALF[t], fn, [li[i] for li in lanes_in], mode, ftz, sat) for i in range(2)]
        return _pack(t, out)
    fmt = t
    vals = [fp.decode(fmt, b) for b in bits_in]
    if ftz:
        vals = [fp.flush_subnormal(v, fmt) for v in vals]
    with np.errstate(all="ignore"):
        r = fn(*vals, fmt=fmt, mode=mode)
    if sat:
        r = fp.saturate(r)
    if ftz:
        r = fp.flush_subnormal(r, fmt)
    return fp.encode(fmt, r)


def nan_bits(bits: np.ndarray, t: str) -> np.ndarray:
    """Threads whose ``t`` value (bits) is a NaN, any lane of a packed pair."""
    if t in HALF:
        return np.logical_or.reduce([nan_bits(x, HALF[t]) for x in _lanes(t, bits)])
    return np.isnan(fp.decode(t, bits))


def nan_payload_free(sh: Shadow | None, bits: np.ndarray, t: str, n: int) -> Shadow | None:
    """``sh`` with the threads whose result is a NaN made UNDEF: where the PTX ISA gives no NaN
    pattern (f64 arithmetic, abs/neg, conversions into or out of f64) the H100 keeps or quiets the
    input's payload and sign (tests/hw_records/scalar_ops_h100.json), so the bits are left free."""
    if t in HALF and sh is None:  # lane by lane: the other half of a packed pair stays exact
        lanes = np.stack([nan_bits(x, HALF[t]) for x in _lanes(t, bits)], axis=1)
        return Shadow(TYPES[t][0] // 2, np.where(lanes, UNDEF, EXACT).astype(np.uint8)) if lanes.any() else None
    return undef_where(sh, nan_bits(bits, t), n, TYPES[t][0])


def _add(a, b, fmt, mode):
    s, e = fp.two_sum(a, b)
    r = _f64_overflow(fp.fround(s, fmt, mode, e), fmt, mode, a, b)
    if mode == "rm":  # an exact zero sum of operands of opposite sign is -0 under .rm (IEEE 754 6.3)
        r = np.where((s == 0) & (e == 0) & ~((a == 0) & (b == 0) & ~np.signbit(a) & ~np.signbit(b)), -0.0, r)
    return r


def _f64_overflow(r, fmt, mode, *inputs):
    """A float64 result that overflowed from finite inputs is Inf in float64 itself; a directed
    mode keeps the largest finite value on the side it rounds toward (IEEE 754)."""
    if fmt != "f64" or mode == "rn":
        return r
    over = np.isinf(r) & np.logical_and.reduce([np.isfinite(x) for x in inputs])
    if not over.any():
        return r
    big = np.finfo(np.float64).max
    pos = r > 0
    keep = {"rz": np.zeros_like(over), "rm": ~pos, "rp": pos}[mode]
    return np.where(over & ~keep, np.where(pos, big, -big), r)


def _sub(a, b, fmt, mode):
    return _add(a, -b, fmt, mode)


def _mul(a, b, fmt, mode):
    if fmt == "f64":
        if mode != "rn":
            return _f64_overflow(_mul_f64_directed(a, b, mode), fmt, mode, a, b)
        return a * b
    return fp.fround(a * b, fmt, mode)  # exact in float64 for every narrower format


def _mul_f64_directed(a, b, mode):
    p = a * b
    # Dekker's TwoProduct error for the direction of the rounding.
    def split(x):
        c = 134217729.0 * x
        hi = c - (c - x)
        return hi, x - hi
    ah, al = split(a)
    bh, bl = split(b)
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    # near the subnormal range the split's pieces round, near the top the split overflows: there,
    # the exact residual instead
    tiny = np.isfinite(p) & (a != 0) & (b != 0) & ((np.abs(p) < 2.0 ** -960) | ~np.isfinite(err)
                                                   | (np.abs(a) > 2.0 ** 995) | (np.abs(b) > 2.0 ** 995))
    err = np.where(np.isfinite(err), err, 0.0)
    if tiny.any():
        from fractions import Fraction
        for i in np.flatnonzero(tiny):
            r = Fraction(float(a.flat[i])) * Fraction(float(b.flat[i])) - Fraction(float(p.flat[i]))
            err.flat[i] = (5e-324 if r > 0 else -5e-324) if r else 0.0  # only its sign matters
    return fp.fround(p, "f64", mode, err)


def _fma(a, b, c, fmt, mode):
    if fmt == "f64":
        raise ValueError("fma.f64")
    p = a * b  # exact
    s, e = fp.two_sum(p, c)
    return fp.fround(s, fmt, mode, e)


def _div(a, b, fmt, mode):
    q = a / b  # rounded to nearest in float64: exact enough for every narrower format
    if fmt == "f64" and mode != "rn":  # x/0 is an exact Inf (IEEE 754 7.3), never an overflow
        r = _f64_overflow(fp.fround(q, fmt, mode, _div_residual(a, b, q)), fmt, mode, a, b)
        return np.where(b == 0, q, r)
    return fp.fround(q, fmt, mode)


def _div_residual(a, b, q):
    """(a - q*b) / b, exact in sign: which side of the true quotient the nearest q lies on."""
    from fractions import Fraction

    err = np.zeros(np.shape(q))
    ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(q) & (b != 0)
    for i in np.flatnonzero(ok):
        r = Fraction(float(a.flat[i])) - Fraction(float(q.flat[i])) * Fraction(float(b.flat[i]))
        if r:
            err.flat[i] = 5e-324 if (r > 0) == (b.flat[i] > 0) else -5e-324  # only its sign matters
    return err


def _min(a, b, fmt, mode):
    r = np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.minimum(a, b)))
    both0 = (a == 0) & (b == 0)
    return np.where(both0, np.where(np.signbit(a) | np.signbit(b), -0.0, 0.0), r)


def _max(a, b, fmt, mode):
    r = np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.maximum(a, b)))
    both0 = (a == 0) & (b == 0)
    return np.where(both0, np.where(np.signbit(a) & np.signbit(b), -0.0, 0.0), r)


# ------------------------------------------------------------------ shadows for float ops


def _interval(t: str, sh: Shadow | None, bits: np.ndarray, n: int):
    """(lo, hi, ok) of a scalar float operand: exact values become point intervals."""
    v = fdecode(t, bits)
    if sh is None:
        return v, v, np.ones(n, bool)
    if sh.lanes != 1 or sh.lane_bits != TYPES[t][0]:
        return v, v, ~sh.nonexact()
    k = sh.kind[:, 0]
    lo = np.where(k == SET, sh.lo[:, 0], v)
    hi = np.where(k == SET, sh.hi[:, 0], v)
    ok = (k == EXACT) | ((k == SET) & (sh.flags[:, 0] == 0) & np.isfinite(lo) & np.isfinite(hi))
    return lo, hi, ok


def interval_shadow(t: str, op: str, srcs: list[tuple[np.ndarray, Shadow | None]], n: int) -> Shadow | None:
    """Shadow of add/sub/mul/fma/neg/abs on f32/f64/f16/bf16 when some input is a SET."""
    shs = [s for _, s in srcs]
    if all(s is None for s in shs):
        return None
    if t not in ("f32", "f64", "f16", "bf16"):
        return combine_undef(shs, n, TYPES[t][0])
    ivs = [_interval(t, s, b, n) for b, s in srcs]
    ok = np.logical_and.reduce([iv[2] for iv in ivs])
    with np.errstate(all="ignore"):
        if op == "neg":
            lo, hi = -ivs[0][1], -ivs[0][0]
        elif op == "abs":
            l0, h0 = ivs[0][0], ivs[0][1]
            lo = np.where((l0 <= 0) & (h0 >= 0), 0.0, np.minimum(np.abs(l0), np.abs(h0)))
            hi = np.maximum(np.abs(l0), np.abs(h0))
        elif op in ("add", "sub"):
            (l0, h0, _), (l1, h1, _) = ivs
            if op == "sub":
                l1, h1 = -h1, -l1
            lo, hi = l0 + l1, h0 + h1
        elif op in ("mul", "fma"):
            (l0, h0, _), (l1, h1, _) = ivs[:2]
            c = np.stack([l0 * l1, l0 * h1, h0 * l1, h0 * h1])
            lo, hi = c.min(axis=0), c.max(axis=0)
            if op == "fma":
                lo, hi = lo + ivs[2][0], hi + ivs[2][1]
        else:
            return combine_undef(shs, n, TYPES[t][0])
        # round outward into the format, one extra step for float64's own rounding
        lo = fp.step(fp.fround(lo, t, "rm"), t, False)
        hi = fp.step(fp.fround(hi, t, "rp"), t, True)
    finite = np.isfinite(lo) & np.isfinite(hi)
    flags = (np.where(hi == np.inf, MAY_POS_INF, 0) | np.where(lo == -np.inf, MAY_NEG_INF, 0)
             | (ALT_FORMAT if t in ALT_FORMATS else 0)).astype(np.uint8)
    lo = np.where(np.isfinite(lo), lo, np.where(lo == -np.inf, -fp.F.FLOATS[t].max_finite, lo))
    hi = np.where(np.isfinite(hi), hi, np.where(hi == np.inf, fp.F.FLOATS[t].max_finite, hi))
    nonexact = np.zeros(n, bool)
    for s in shs:
        if s is not None:
            nonexact |= s.nonexact()
    kind = np.where(~nonexact, EXACT, np.where(ok & ~np.isnan(lo) & ~np.isnan(hi), SET, UNDEF)).astype(np.uint8)
    del finite
    sh = Shadow(TYPES[t][0], kind[:, None], lo[:, None], hi[:, None], flags[:, None])
    return None if sh.is_trivial() else sh


# ------------------------------------------------------------------ integer helpers


def _mulhi_u64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m32 = U64(0xFFFFFFFF)
    a0, a1 = a & m32, a >> U64(32)
    b0, b1 = b & m32, b >> U64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> U64(32)) + (p01 & m32) + (p10 & m32)
    return p11 + (p01 >> U64(32)) + (p10 >> U64(32)) + (mid >> U64(32))


def int_mul(a: np.ndarray, b: np.ndarray, w: int, signed: bool, part: str) -> np.ndarray:
    """mul.lo / mul.hi / mul.wide on the low ``w`` bits of a and b (result bits)."""
    if part == "lo":
        return (a * b) & mask(w)
    if w <= 32:
        if signed:
            p = (sign_extend(a, w) * sign_extend(b, w)).view(np.uint64)
        else:
            p = (a & mask(w)) * (b & mask(w))
        if part == "wide":
            return p & mask(2 * w)
        return (p >> U64(w)) & mask(w)
    if part == "wide":
        raise ValueError("mul.wide on 64-bit operands")
    hi = _mulhi_u64(a, b)
    if signed:
        sa, sb = a.view(np.int64) < 0, b.view(np.int64) < 0
        hi = hi - np.where(sa, b, U64(0)) - np.where(sb, a, U64(0))
    return hi


def int_divrem(a, b, w, signed, rem):
    """div/rem truncating toward zero; returns (bits, zero_divisor mask)."""
    if signed:
        # magnitudes as unsigned: |INT_MIN| does not fit the signed type
        x, y = sign_extend(a, w), sign_extend(b, w)
        zero = y == 0
        ax = np.where(x < 0, U64(0) - x.view(np.uint64), x.view(np.uint64))
        ay = np.where(zero, U64(1), np.where(y < 0, U64(0) - y.view(np.uint64), y.view(np.uint64)))
        mag = (ax % ay) if rem else (ax // ay)
        neg = (x < 0) if rem else ((x < 0) != (y < 0))  # the remainder takes the dividend's sign
        out = np.where(neg, U64(0) - mag, mag) & mask(w)
    else:
        x, y = a & mask(w), b & mask(w)
        zero = y == 0
        ys = np.where(zero, U64(1), y)
        out = (x % ys) if rem else (x // ys)
    return out, zero
