"""Floating-point forms beyond ``alu``'s: min/max ``.NaN`` and ``.xorsign.abs``, ``.relu`` on
fma/add/sub/mul results, and setp on packed halves (PTX ISA 9.7.3 "Floating-Point", 9.7.4 "Half
Precision Floating-Point", 9.7.7 "Half Precision Comparison").

* min/max: a NaN operand is ignored unless both are NaN (canonical NaN); ``.NaN``: any NaN
  operand gives the canonical NaN; ``.xorsign.abs``: the min/max of |a| and |b| with the sign bit
  sign(a) XOR sign(b).
* ``.relu``: "clamps the result to 0 if negative. NaN result is converted to canonical NaN".
* ``setp.cmp.{f16x2,bf16x2} p|q, a, b``: p from the low halves, q from the high halves.
"""
from __future__ import annotations

import numpy as np

from fuzzptx.ptx.ir import Reg

import fuzzptx.oracles.reference.alu as alu
import fuzzptx.oracles.reference.fp as fp
from .ops import HALF, _add, _fma, _lanes, _max, _min, _mul, _sub, float_op, nan_payload_free, rounding, the_type
from .values import TYPES, combine_undef


def _minmax(base: str, nan: bool, xorsign: bool):
    def fn(a, b, fmt, mode):
        x, y = (np.abs(a), np.abs(b)) if xorsign else (a, b)
        r = (_min if base == "min" else _max)(x, y, fmt, mode)
        if nan:
            r = np.where(np.isnan(a) | np.isnan(b), np.nan, r)
        if xorsign:
            neg = np.signbit(a) ^ np.signbit(b)
            r = np.where(np.isnan(r), r, np.where(neg, -np.abs(r), np.abs(r)))
        return r
    return fn


def h_minmax(m, f, ins, act):
    """min/max with .NaN and/or .xorsign.abs on f32, f16, bf16 and their x2 forms."""
    t = the_type(ins)
    mods = ins.modifiers
    ops = ins.operands
    (a, sa), (b, sb) = m.read(f, ops[1], t, ins), m.read(f, ops[2], t, ins)
    fn = _minmax(ins.base, "NaN" in mods, "xorsign" in mods)
    res = float_op(t, fn, [a, b], "rn", "ftz" in mods, False)
    m.write(f, ops[0], res, combine_undef([sa, sb], m.n, TYPES[t][0]), act, ins)


_FN = {"fma": _fma, "mad": _fma, "add": _add, "sub": _sub, "mul": _mul}


def h_relu(m, f, ins, act):
    """fma/add/sub/mul ``.relu``: the rounded result, negative ones made +0, NaN canonical."""
    t = the_type(ins)
    mods = ins.modifiers
    ops = ins.operands
    srcs = [m.read(f, op, t, ins) for op in ops[1:]]
    fn = _FN[ins.base]

    def relu(*vals, fmt, mode):
        r = fn(*vals, fmt, mode)
        return fp.relu(r)

    res = float_op(t, relu, [b for b, _ in srcs], rounding(ins), "ftz" in mods, "sat" in mods)
    m.write(f, ops[0], res, combine_undef([s for _, s in srcs], m.n, TYPES[t][0]), act, ins)


def h_setp(m, f, ins, act):
    """setp on .f16x2/.bf16x2 (p: low halves, q: high halves), else ``alu.h_setp``."""
    t = the_type(ins)
    if t not in ("f16x2", "bf16x2"):
        return alu.h_setp(m, f, ins, act)
    mods = ins.modifiers
    cmp = mods[0]
    bop = next((x for x in mods[1:] if x in ("and", "or", "xor")), None)
    ops = ins.operands
    (a, sa), (b, sb) = m.read(f, ops[1], t, ins), m.read(f, ops[2], t, ins)
    half = HALF[t]
    la, lb = _lanes(t, a), _lanes(t, b)
    res = [alu.compare(cmp, half, la[i], lb[i], "ftz" in mods) for i in range(2)]
    shs = [sa, sb]
    if bop is not None:
        c, sc = alu._pred(m, f, ops[3], ins)
        shs.append(sc)
        op = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[bop]
        res = [op(r, c.astype(bool)) for r in res]
    sh = combine_undef(shs, m.n, 1)
    names = ops[0].name.split("|")
    for name, r in zip(names, res):
        m.write(f, Reg(name), r.astype(np.uint64), sh, act, ins)


def round_exact(fr, mode: str) -> float:
    """An exact rational rounded to float64 with a PTX rounding mode (IEEE 754: overflow to Inf
    or to the largest finite value on the side the mode rounds toward; subnormals kept)."""
    import math
    from fractions import Fraction

    big = np.finfo(np.float64).max
    pos = fr > 0
    try:
        x = float(fr)  # correctly rounded to nearest even (integer true division)
    except OverflowError:
        x = math.inf if pos else -math.inf
    if math.isinf(x):
        keep = mode == "rn" or (mode == "rp" and pos) or (mode == "rm" and not pos)
        return x if keep else (big if pos else -big)
    if mode == "rn" or Fraction(x) == fr:
        return x
    lo, hi = (x, math.nextafter(x, math.inf)) if Fraction(x) < fr else (math.nextafter(x, -math.inf), x)
    return {"rz": lo if pos else hi, "rm": lo, "rp": hi}[mode]  # past the largest finite value: Inf


def fma_f64(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str) -> np.ndarray:
    """fma.{rn,rz,rm,rp}.f64: a*b+c rounded once (exact rationals where every input is finite)."""
    import math
    from fractions import Fraction

    out = np.empty(a.shape)
    for i in range(a.size):
        x, y, z = float(a.flat[i]), float(b.flat[i]), float(c.flat[i])
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            with np.errstate(all="ignore"):
                out.flat[i] = np.float64(x) * np.float64(y) + np.float64(z)
            continue
        ex = Fraction(x) * Fraction(y) + Fraction(z)
        if ex == 0:  # the sign of an exact zero: IEEE 754 6.3
            p_neg = (math.copysign(1, x) < 0) != (math.copysign(1, y) < 0)
            same = (x * y == 0) and z == 0 and p_neg == (math.copysign(1, z) < 0)
            out.flat[i] = (-0.0 if p_neg else 0.0) if same else (-0.0 if mode == "rm" else 0.0)
        else:
            out.flat[i] = round_exact(ex, mode)
    return out


def h_fma64(m, f, ins, act):
    """fma/mad .f64 with a rounding modifier: one rounding of the exact a*b+c."""
    ops = ins.operands
    srcs = [m.read(f, op, "f64", ins) for op in ops[1:4]]
    vals = [b.view(np.float64) for b, _ in srcs]
    r = fma_f64(*vals, rounding(ins))
    bits = np.where(np.isnan(r), np.uint64(0x7FFFFFFFFFFFFFFF), r.view(np.uint64))
    m.write(f, ops[0], bits, nan_payload_free(combine_undef([s for _, s in srcs], m.n, 64), bits, "f64", m.n), act, ins)


def dispatch(m, f, ins, act):
    """The float forms this module owns, or None."""
    mods = ins.modifiers
    if ins.base in ("fma", "mad") and the_type(ins) == "f64":
        return h_fma64
    if ins.base in ("min", "max") and ("NaN" in mods or "xorsign" in mods):
        return h_minmax
    if "relu" in mods and ins.base in _FN and TYPES.get(the_type(ins), (0, ""))[1] in "fx":
        return h_relu
    return None

