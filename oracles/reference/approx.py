"""Approximate float instructions (``ex2/lg2/sin/cos/tanh/rcp/sqrt/rsqrt .approx``): run, never bit-exact.

The PTX ISA gives these no exact result, only an error bound; the hardware's bits are its own.  The
reference computes the true function in float64 and gives the result a ``SET`` shadow: every value
within a bound around it (``BOUNDS``, relative and absolute, looser than the ISA's so that any
conforming implementation lies inside), so everything derived from it is an interval (add, mul,
fma, cvt) or ``UNDEF`` (what an interval cannot follow), and a comparison on those bytes is a
tolerance check or masked, never a bit-exact claim.  A result that is not finite (an overflow, a
NaN) or one that ``.ftz`` may flush is left free near those edges.  A non-exact input gives the
image of its interval where the function is monotone (ex2, lg2, sqrt, rsqrt, tanh, rcp away from
0), else ``UNDEF``.  Packed and 16-bit forms (``ex2.approx.f16x2``, ``tanh.approx.bf16``) give
``UNDEF`` lanes: the value is computed, no bound is claimed.
"""
from __future__ import annotations

import numpy as np

import fuzzptx.oracles.reference.fp as fp
from .errors import Unsupported
from .formats import FLOATS
from .ops import _interval, float_op, the_type
from .values import SET, UNDEF, Shadow

# base -> (relative bound, absolute bound); the ISA's, loosened (ex2: 2 ulp; lg2: 2^-22 absolute on
# [0.5, 2], else 2^-22 relative; rcp: 1 ulp; sqrt: 2^-23 relative; rsqrt: 2^-22.9; sin/cos: 2^-20.5
# absolute on [-pi, pi]; tanh: 2^-10.987 relative)
BOUNDS: dict[str, tuple[float, float]] = {
    "ex2": (2.0 ** -20, 0.0), "lg2": (2.0 ** -20, 2.0 ** -20), "rcp": (2.0 ** -20, 0.0),
    "sqrt": (2.0 ** -20, 0.0), "rsqrt": (2.0 ** -20, 0.0), "sin": (0.0, 2.0 ** -18),
    "cos": (0.0, 2.0 ** -18), "tanh": (2.0 ** -9, 2.0 ** -20),
}
_INCREASING = frozenset(("ex2", "lg2", "sqrt", "tanh"))
_DECREASING = frozenset(("rcp", "rsqrt"))

with np.errstate(all="ignore"):
    _FN = {
        "ex2": np.exp2, "lg2": lambda x: np.where(x < 0, np.nan, np.log2(np.abs(x))),
        "rcp": lambda x: 1.0 / x, "sqrt": lambda x: np.where(x < 0, np.nan, np.sqrt(np.abs(x))),
        "rsqrt": lambda x: np.where(x < 0, np.nan, 1.0 / np.sqrt(np.abs(x))),
        "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
    }


def is_approx(ins) -> bool:
    """An instruction this module runs: ``sqrt``/``rcp`` only with ``.approx`` (their IEEE forms are
    ``alu.h_sqrt_rcp``'s)."""
    return ins.base in _FN and (ins.base not in ("sqrt", "rcp") or "approx" in ins.modifiers)


def h_approx(m, f, ins, act):
    t = the_type(ins)
    base = ins.base
    if t not in ("f32", "f16", "bf16", "f16x2", "bf16x2"):
        raise Unsupported.at(ins, f"{base}.approx.{t} is not modelled")
    n = m.n
    ftz = "ftz" in ins.modifiers or t != "f32"
    a, sa = m.read(f, ins.operands[1], t, ins)
    fn = _FN[base]
    res = float_op(t, lambda x, fmt, mode: fp.fround(fn(x), fmt, "rn"), [a], "rn", ftz, False)
    if t != "f32":  # 16-bit lanes: the value, no bound claimed
        m.write(f, ins.operands[0], res, Shadow.undef(n, 32 if t.endswith("x2") else 16), act, ins)
        return
    m.write(f, ins.operands[0], res, _shadow(base, a, sa, res, ftz, n), act, ins)


def _shadow(base: str, a: np.ndarray, sa: Shadow | None, res: np.ndarray, ftz: bool, n: int) -> Shadow:
    rel, ab = BOUNDS[base]
    fn = _FN[base]
    lo_in, hi_in, ok = _interval("f32", sa, a, n)
    if ftz:
        lo_in, hi_in = fp.flush_subnormal(lo_in, "f32"), fp.flush_subnormal(hi_in, "f32")
    with np.errstate(all="ignore"):
        if sa is None or base in _INCREASING:
            lo_v, hi_v = fn(lo_in), fn(hi_in)
        elif base in _DECREASING:
            lo_v, hi_v = fn(hi_in), fn(lo_in)
            if base == "rcp":
                ok &= (lo_in > 0) | (hi_in < 0)
        else:
            lo_v = hi_v = fn(lo_in)
            ok &= lo_in == hi_in
        lo = lo_v - np.abs(lo_v) * rel - ab
        hi = hi_v + np.abs(hi_v) * rel + ab
        tiny = FLOATS["f32"].min_normal * 2
        lo = np.where(ftz & (lo < tiny) & (lo > -tiny), np.minimum(lo, 0.0), lo)  # .ftz may flush to 0
        hi = np.where(ftz & (hi > -tiny) & (hi < tiny), np.maximum(hi, 0.0), hi)
        big = FLOATS["f32"].max_finite
        defined = ok & np.isfinite(lo) & np.isfinite(hi) & (np.abs(lo) < big) & (np.abs(hi) < big)
        lo = np.where(defined, fp.fround(lo, "f32", "rm"), 0.0)
        hi = np.where(defined, fp.fround(hi, "f32", "rp"), 0.0)
    kind = np.where(defined, SET, UNDEF).astype(np.uint8)
    return Shadow(32, kind[:, None], lo[:, None], hi[:, None])
