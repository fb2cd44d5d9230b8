"""Instruction handlers for the scalar ALU: mov, arithmetic, logic, shifts, setp, selp, cvt."""
from __future__ import annotations

import numpy as np

from fuzzptx.ptx.ir import Imm, Neg, Reg, Sym, Vec

import fuzzptx.oracles.reference.fp as fp
from .approx import h_approx
from .errors import Unsupported
from .formats import FLOATS
from .ops import (HALF, IROUND, _add, _div, _fma, _max, _min, _mul, _sub, fdecode, float_op,
                  int_divrem, int_mul, interval_shadow, nan_bits, nan_payload_free, rounding, the_type, types_of)
from .values import (ALT_FORMAT, ALT_FORMATS, EXACT, MAY_NAN, MAY_NEG_INF, MAY_POS_INF, SET, TYPES, UNDEF, U64, Shadow, combine_undef,
                     count_nonzero, lanes_of, mask, sign_extend, undef_where)
from .values import merge
from .memory import LOCAL_WINDOW, SHARED_WINDOW


# ------------------------------------------------------------------ shadows of packed values


def sub_shadow(sh: Shadow | None, n: int, width: int, offset: int, piece: int) -> Shadow | None:
    """The shadow of bits [offset, offset+piece) of a ``width``-bit value."""
    if sh is None:
        return None
    lb = min(sh.lane_bits, piece)
    s = lanes_of(sh, n, width, lb)
    a, b = offset // lb, (offset + piece) // lb
    out = Shadow(lb, s.kind[:, a:b].copy(), s.lo[:, a:b].copy(), s.hi[:, a:b].copy(), s.flags[:, a:b].copy())
    return None if out.is_trivial() else out


def cat_shadows(parts: list[tuple[Shadow | None, int]], n: int) -> Shadow | None:
    """Concatenate (shadow, width) pieces, lowest first."""
    if all(s is None for s, _ in parts):
        return None
    lb = min(min(s.lane_bits if s is not None else w for s, w in parts), min(w for _, w in parts))
    ss = [lanes_of(s, n, w, lb) for s, w in parts]
    out = Shadow(lb, np.concatenate([s.kind for s in ss], 1), np.concatenate([s.lo for s in ss], 1),
                 np.concatenate([s.hi for s in ss], 1), np.concatenate([s.flags for s in ss], 1))
    return None if out.is_trivial() else out


# ------------------------------------------------------------------ mov


def h_mov(m, f, ins, act):
    t = the_type(ins)
    w = TYPES[t][0]
    d, a = ins.operands[0], ins.operands[1]
    n = m.n
    if isinstance(d, Vec):
        bits, sh = m.read(f, a, t, ins)
        pw = w // len(d.items)
        for i, item in enumerate(d.items):
            if isinstance(item, Sym) and item.name == "_":
                continue
            m.write(f, item, (bits >> U64(i * pw)) & mask(pw), sub_shadow(sh, n, w, i * pw, pw), act, ins)
        return
    if isinstance(a, Vec):
        pw = w // len(a.items)
        out = np.zeros(n, np.uint64)
        parts = []
        for i, item in enumerate(a.items):
            b, s = m.read(f, item, f"b{pw}", ins)
            out |= (b & mask(pw)) << U64(i * pw)
            parts.append((s, pw))
        m.write(f, d, out, cat_shadows(parts, n), act, ins)
        return
    bits, sh = m.read(f, a, t, ins)
    m.write(f, d, bits & mask(w), sh, act, ins)
    _carry_product(f, a, d, act)


def _carry_product(f, src, dst, act, negate: bool = False) -> None:
    """``dst`` is a copy (or the negation) of an unrounded product ``src``: an add that reads it may
    be fused with the product as well (ptxas sees through moves and folds a negation into the fma)."""
    rec = f.contract.get(src.name) if f.contract and isinstance(src, Reg) else None
    if rec is None or not isinstance(dst, Reg) or dst.name == src.name:
        return
    a, b, who, ftz, t = rec
    if negate:
        a = a ^ U64(1 << (TYPES[t][0] - 1))
    f.contract[dst.name] = (a, b, who & act, ftz, t)


# ------------------------------------------------------------------ arithmetic


def h_arith(m, f, ins, act):
    t = the_type(ins)
    w, kind = TYPES[t]
    base = ins.base
    mods = ins.modifiers
    ops = ins.operands
    n = m.n
    srcs = [m.read(f, op, t, ins) for op in ops[1:]]
    if base in ("mul", "mad") and "wide" in mods:
        srcs = [m.read(f, op, t, ins) for op in ops[1:3]] + ([m.read(f, ops[3], f"b{2 * w}", ins)] if base == "mad" else [])
    bits = [b for b, _ in srcs]
    shs = [s for _, s in srcs]
    if kind in "sub":
        signed = kind == "s"
        out_w = w
        zero = None
        if base == "add" or base == "sub":
            if "sat" in mods:
                x, y = sign_extend(bits[0], w), sign_extend(bits[1], w)
                r = np.clip(x + y if base == "add" else x - y, -(1 << (w - 1)), (1 << (w - 1)) - 1)
                res = r.view(np.uint64) & mask(w)
            else:
                res = ((bits[0] + bits[1]) if base == "add" else (bits[0] - bits[1])) & mask(w)
        elif base in ("mul", "mad"):
            part = "hi" if "hi" in mods else "wide" if "wide" in mods else "lo"
            res = int_mul(bits[0], bits[1], w, signed, part)
            if part == "wide":
                out_w = 2 * w
            if base == "mad":
                if "sat" in mods:
                    s = sign_extend(res, w) + sign_extend(bits[2], w)
                    res = np.clip(s, -(1 << 31), (1 << 31) - 1).view(np.uint64) & mask(w)
                else:
                    res = (res + bits[2]) & mask(out_w)
        elif base in ("div", "rem"):
            res, zero = int_divrem(bits[0], bits[1], w, signed, base == "rem")
        elif base in ("min", "max"):
            x, y = (sign_extend(bits[0], w), sign_extend(bits[1], w)) if signed else (bits[0] & mask(w), bits[1] & mask(w))
            res = (np.minimum(x, y) if base == "min" else np.maximum(x, y))
            res = (res.view(np.uint64) if signed else res) & mask(w)
        elif base == "neg":
            res = (U64(0) - bits[0]) & mask(w)
        elif base == "abs":
            res = np.abs(sign_extend(bits[0], w)).view(np.uint64) & mask(w)
        else:
            raise Unsupported.at(ins, "not an integer operation")
        sh = combine_undef(shs, n, out_w)
        if zero is not None and zero.any():
            sh = undef_where(sh, zero, n, out_w)  # integer division by zero: unspecified value
        m.write(f, ops[0], res, sh, act, ins)
        return
    if kind not in "fx":
        raise Unsupported.at(ins, f"{base} on .{t}")
    mode = rounding(ins)
    ftz = "ftz" in mods
    sat = "sat" in mods
    if base in ("neg", "abs") and not ftz:
        sign = U64(1 << (w - 1)) if kind == "f" else U64((1 << 15) | (1 << 31))
        if t in ("e4m3x2", "e5m2x2"):
            raise Unsupported.at(ins, f"{base}.{t}")
        res = (bits[0] ^ sign) if base == "neg" else (bits[0] & ~sign & mask(w))
        # "NaN inputs yield an unspecified NaN" (PTX ISA, abs and neg): the H100 writes the canonical
        # NaN for f16/bf16/f32 and quiets f64's (tests/hw_records/scalar_ops_h100.json)
        sh = interval_shadow(t, base, srcs, n)
        if count_nonzero(nan_bits(bits[0], t)):
            sh = nan_payload_free(sh, bits[0], t, n)
        m.write(f, ops[0], res, sh, act, ins)
        if base == "neg" and t in CONTRACTED:
            _carry_product(f, ops[1], ops[0], act, negate=True)
        return
    fn = {"add": _add, "sub": _sub, "mul": _mul, "fma": _fma, "mad": _fma, "div": _div, "min": _min,
          "max": _max, "neg": lambda a, fmt, mode: -a, "abs": lambda a, fmt, mode: np.abs(a)}.get(base)
    if fn is None:
        raise Unsupported.at(ins, f"{base}.{t}")
    if t == "f64" and base in ("fma", "mad"):
        raise Unsupported.at(ins, "fma.f64 is not modelled")
    approx = base == "div" and ("approx" in mods or "full" in mods)
    res = float_op(t, fn, bits, "rn" if approx else mode, ftz, sat)
    sh = interval_shadow(t, "fma" if base == "mad" else base, srcs, n) if base in ("add", "sub", "mul", "fma", "mad", "neg", "abs") else combine_undef(shs, n, w)
    explicit = any(x in ("rn", "rz", "rm", "rp") for x in mods)
    if base in ("add", "sub") and not explicit and t in CONTRACTED and f.contract and sh is None:
        sh = _contraction(m, f, ins, base, t, res, bits, ftz, sat)
    if approx and t == "f32":
        # div.approx / div.full: within 2 ulp of the rounded quotient (PTX ISA, div.full.f32)
        v = fp.decode("f32", res)
        fin = np.isfinite(v)
        lo = fp.step(fp.step(v, "f32", False), "f32", False)
        hi = fp.step(fp.step(v, "f32", True), "f32", True)
        approx_sh = Shadow(32, np.where(fin, SET, EXACT).astype(np.uint8)[:, None], lo[:, None], hi[:, None])
        sh = approx_sh if sh is None else Shadow.undef(n, 32, sh.nonexact() | fin)
    if t == "f64":
        sh = nan_payload_free(sh, res, t, n)
    m.write(f, ops[0], res, sh, act, ins)
    if base == "mul" and not explicit and t in CONTRACTED and not sat and isinstance(ops[0], Reg):
        f.contract[ops[0].name] = (bits[0], bits[1], act.copy(), ftz, t)


# the scalar types whose add/sub and mul without a rounding modifier ptxas may fuse into one fma
# (PTX ISA, add and mul: f32; "add/mul.f16 ... may be folded into a multiply-add", bf16 alike).
# CuTe's epilogue (alpha * acc + beta * C in f16) came out of -O3 one f16 ulp off the unfused
# result on 201 elements of an H200 run (tests/hw_records/kernels_h200.json).
CONTRACTED = ("f32", "f16", "bf16")


def _contraction(m, f, ins, base, t, res, bits, ftz, sat):
    """add/sub with no rounding modifier fed by an unrounded mul of the same type (``CONTRACTED``):
    ptxas may fuse them into an fma (PTX ISA, add/mul: "may be optimized aggressively ... to
    fused-multiply-add").  Both results are allowed."""
    ops = ins.operands
    vals = [res]
    for j in (1, 2):
        op = ops[j]
        rec = f.contract.get(op.name) if isinstance(op, Reg) else None
        if rec is None:
            continue
        a, b, who, ftz_m, tm = rec
        if tm != t:
            continue
        other = bits[1] if j == 1 else bits[0]
        sign_p = -1.0 if (base == "sub" and j == 2) else 1.0
        sign_o = -1.0 if (base == "sub" and j == 1) else 1.0
        av, bv, ov = fp.decode(t, a), fp.decode(t, b), fp.decode(t, other)
        if ftz or ftz_m:
            av, bv, ov = (fp.flush_subnormal(v, t) for v in (av, bv, ov))
        with np.errstate(all="ignore"):
            fused = _fma(sign_p * av, bv, sign_o * ov, t, "rn")
        if sat:
            fused = np.where(np.isnan(fused), 0.0, np.clip(fused, 0.0, 1.0))
        if ftz:
            fused = fp.flush_subnormal(fused, t)
        vals.append(np.where(who, fp.encode(t, fused), res))
    if len(vals) == 1:
        return None
    v = np.stack([fp.decode(t, x) for x in vals])
    # by bits: a product below the format's least subnormal added to +0 is -0 fused, +0 unfused
    # (CuTe's f16 epilogue on an H200: -0.0 at -O3 where -O0 stores +0.0)
    differs = (np.stack(vals) != vals[0]).any(axis=0) & ~np.isnan(v).all(axis=0)
    if not differs.any():
        return None
    nan_any = np.isnan(v).any(axis=0)
    with np.errstate(all="ignore"):
        lo, hi = np.nanmin(v, axis=0), np.nanmax(v, axis=0)
    kind = np.where(differs, np.where(nan_any | ~np.isfinite(lo) | ~np.isfinite(hi), UNDEF, SET), EXACT).astype(np.uint8)
    return Shadow(TYPES[t][0], kind[:, None], lo[:, None], hi[:, None])


# ------------------------------------------------------------------ logic and shifts


def h_logic(m, f, ins, act):
    t = the_type(ins)
    w = TYPES[t][0]
    ops = ins.operands
    srcs = [m.read(f, op, t, ins) for op in ops[1:]]
    b = [s[0] for s in srcs]
    base = ins.base
    if base == "and":
        res = b[0] & b[1]
    elif base == "or":
        res = b[0] | b[1]
    elif base == "xor":
        res = b[0] ^ b[1]
    elif base == "not":
        res = ~b[0]
    elif base == "cnot":
        res = np.where((b[0] & mask(w)) == 0, U64(1), U64(0))
    else:
        raise Unsupported.at(ins, "unknown logic op")
    sh = _sign_bit_shadow(base, srcs, ops, w)
    if sh is False:
        sh = combine_undef([s[1] for s in srcs], m.n, w)
    m.write(f, ops[0], res & mask(w), sh, act, ins)


def _sign_bit_shadow(base: str, srcs, ops, w: int):
    """xor / and with the lanes' sign bits on a value set: negation / absolute value of each lane.

    Returns the shadow, or False when the general (UNDEF) rule applies.
    """
    if base not in ("xor", "and") or len(srcs) != 2 or not isinstance(ops[2], Imm) or srcs[1][1] is not None:
        return False
    sh = srcs[0][1]
    if sh is None:
        return None
    lb = sh.lane_bits
    if lb not in (16, 32) or sh.lanes * lb != w:
        return False
    sign = sum(1 << (lb * (i + 1) - 1) for i in range(sh.lanes))
    imm = int(srcs[1][0][0])
    out = sh.copy()
    pos, neg = (sh.flags & MAY_POS_INF) != 0, (sh.flags & MAY_NEG_INF) != 0
    keep = sh.flags & MAY_NAN
    if base == "xor" and imm == sign:
        out.lo, out.hi = -sh.hi, -sh.lo
        out.flags = (keep | np.where(pos, MAY_NEG_INF, 0) | np.where(neg, MAY_POS_INF, 0)).astype(np.uint8)
        return out
    if base == "and" and imm == (~sign) & int(mask(w)):
        lo, hi = sh.lo, sh.hi
        out.lo = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
        out.hi = np.maximum(np.abs(lo), np.abs(hi))
        out.flags = (keep | np.where(pos | neg, MAY_POS_INF, 0)).astype(np.uint8)
        return out
    return False


def h_shift(m, f, ins, act):
    t = the_type(ins)
    w, kind = TYPES[t]
    ops = ins.operands
    a, sa = m.read(f, ops[1], t, ins)
    s, ss = m.read(f, ops[2], "u32", ins)
    s = s & mask(32)
    big = s >= U64(w)
    sc = np.where(big, U64(0), s)
    if ins.base == "shl":
        res = np.where(big, U64(0), (a << sc) & mask(w))
    elif kind == "s":
        x = sign_extend(a, w)
        res = (x >> np.where(big, w - 1, sc).astype(np.int64)).view(np.uint64) & mask(w)
    else:
        res = np.where(big, U64(0), (a & mask(w)) >> sc)
    m.write(f, ops[0], res, combine_undef([sa, ss], m.n, w), act, ins)


def h_bitcount(m, f, ins, act):
    t = the_type(ins)
    w = TYPES[t][0]
    a, sa = m.read(f, ins.operands[1], t, ins)
    a = a & mask(w)
    if ins.base == "popc":
        x = a.copy()
        cnt = np.zeros_like(x)
        for i in range(w):
            cnt += (x >> U64(i)) & U64(1)
        res = cnt
    elif ins.base == "clz":
        res = np.full(a.shape, w, np.uint64)
        for i in range(w):
            res = np.where((a >> U64(i)) & U64(1), U64(w - 1 - i), res)
    else:  # brev
        res = np.zeros_like(a)
        for i in range(w):
            res |= ((a >> U64(i)) & U64(1)) << U64(w - 1 - i)
    m.write(f, ins.operands[0], res, combine_undef([sa], m.n, 32), act, ins)


# ------------------------------------------------------------------ compare and select

_CMP_INT = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
            "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}


def compare(cmp: str, t: str, a: np.ndarray, b: np.ndarray, ftz: bool) -> np.ndarray:
    w, kind = TYPES[t]
    if kind == "f":
        x, y = fdecode(t, a), fdecode(t, b)
        if ftz:
            x, y = fp.flush_subnormal(x, t), fp.flush_subnormal(y, t)
        nan = np.isnan(x) | np.isnan(y)
        if cmp == "num":
            return ~nan
        if cmp == "nan":
            return nan
        unordered = cmp.endswith("u")
        op = _CMP_INT[cmp[:-1] if unordered else cmp]
        with np.errstate(invalid="ignore"):
            r = op(x, y)
        return (r | nan) if unordered else (r & ~nan)
    if kind == "s" and cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
        return _CMP_INT[cmp](sign_extend(a, w), sign_extend(b, w))
    return _CMP_INT[cmp](a & mask(w), b & mask(w))


def _pred(m, f, op, ins):
    if isinstance(op, Neg):
        b, s = m.read(f, op.reg, "pred", ins)
        return (b & U64(1)) ^ U64(1), s
    b, s = m.read(f, op, "pred", ins)
    return b & U64(1), s


def h_setp(m, f, ins, act):
    mods = ins.modifiers
    t = the_type(ins)
    if t in HALF:
        raise Unsupported.at(ins, f"setp on packed .{t}")
    cmp = mods[0]
    bop = next((x for x in mods[1:] if x in ("and", "or", "xor")), None)
    ops = ins.operands
    a, sa = m.read(f, ops[1], t, ins)
    b, sb = m.read(f, ops[2], t, ins)
    r = compare(cmp, t, a, b, "ftz" in mods).astype(np.uint64)
    shs = [sa, sb]
    if bop is not None:
        c, sc = _pred(m, f, ops[3], ins)
        shs.append(sc)
        fn = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[bop]
        p, q = fn(r, c), fn(r ^ U64(1), c)
    else:
        p, q = r, r ^ U64(1)
    sh = _decided_compare(cmp, t, a, sa, b, sb, "ftz" in mods, m.n)
    if len(shs) > 2 and shs[2] is not None:
        sh = undef_where(sh, shs[2].nonexact(), m.n, 1)
    dst = ops[0]
    names = dst.name.split("|")
    m.write(f, Reg(names[0]), p, sh, act, ins)
    if len(names) > 1:
        m.write(f, Reg(names[1]), q, sh, act, ins)


def _decided_compare(cmp, t, a, sa, b, sb, ftz, n):
    """Shadow of a float compare with a value set on one side: defined where every member agrees."""
    if sa is None and sb is None:
        return None
    bad = np.zeros(n, bool)
    for s in (sa, sb):
        if s is not None:
            bad |= s.nonexact()
    if TYPES[t][1] in "usb" and TYPES[t][0] == 32 and (sa is None) != (sb is None):
        return _decided_bits_compare(cmp, t, a, sa, b, sb, bad, n)
    if TYPES[t][1] != "f" or (sa is not None and sb is not None) or cmp in ("num", "nan") or cmp.endswith("u"):
        return Shadow.undef(n, 1, bad) if bad.any() else None
    setside, sh = (0, sa) if sa is not None else (1, sb)
    if sh.lanes != 1 or sh.lane_bits != TYPES[t][0]:
        return Shadow.undef(n, 1, bad)
    k = sh.kind[:, 0]
    lo, hi = sh.lo[:, 0], sh.hi[:, 0]
    other = fdecode(t, b if setside == 0 else a)
    ok = (k == SET) & (sh.flags[:, 0] == 0) & np.isfinite(lo) & np.isfinite(hi) & ~np.isnan(other)
    with np.errstate(invalid="ignore"):
        decided = ok & _range_decides(cmp, lo, hi, other, setside)
    und = bad & ~decided
    return Shadow.undef(n, 1, und) if und.any() else None


def _range_decides(cmp, lo, hi, other, setside):
    """Where a compare of a value in ``[lo, hi]`` (operand ``setside``) with ``other`` has one
    answer for the whole range: eq/ne where ``other`` is outside it, the orders where both ends agree."""
    if cmp in ("eq", "ne"):
        return (other < lo) | (other > hi)
    op = _CMP_INT[cmp]
    r_lo = op(lo, other) if setside == 0 else op(other, lo)
    r_hi = op(hi, other) if setside == 0 else op(other, hi)
    return r_lo == r_hi


def _decided_bits_compare(cmp, t, a, sa, b, sb, bad, n):
    """An integer compare of an f32 value set's bits (libdevice's log2f tests a float's bits against
    0x7f800000): the finite values of one sign in ``[lo, hi]`` have contiguous bit patterns, so the
    compare is defined where both ends of that range agree (eq/ne: where the other side is outside)."""
    setside, sh = (0, sa) if sa is not None else (1, sb)
    if sh.lanes != 1 or sh.lane_bits != 32 or cmp not in _CMP_INT:
        return Shadow.undef(n, 1, bad)
    k, lo, hi = sh.kind[:, 0], sh.lo[:, 0], sh.hi[:, 0]
    with np.errstate(invalid="ignore"):
        one_sign = (np.signbit(lo) == np.signbit(hi)) & np.isfinite(lo) & np.isfinite(hi)
        ok = (k == SET) & (sh.flags[:, 0] == 0) & one_sign
        ends = [fp.encode("f32", np.where(ok, x, 0.0)) for x in (lo, hi)]
        if TYPES[t][1] == "s":
            ends = [sign_extend(e, 32) for e in ends]
            other = sign_extend((b if setside == 0 else a) & mask(32), 32)
        else:
            other = (b if setside == 0 else a) & mask(32)
        e0, e1 = np.minimum(ends[0], ends[1]), np.maximum(ends[0], ends[1])
        decided = ok & _range_decides(cmp, e0, e1, other, setside)
    und = bad & ~decided
    return Shadow.undef(n, 1, und) if und.any() else None


def h_selp(m, f, ins, act):
    t = the_type(ins)
    w = TYPES[t][0]
    ops = ins.operands
    a, sa = m.read(f, ops[1], t, ins)
    b, sb = m.read(f, ops[2], t, ins)
    c, sc = _pred(m, f, ops[3], ins)
    pick = c.astype(bool)
    res = np.where(pick, a, b)
    sh = None
    if sa is not None or sb is not None:
        sh = merge(sb, sa, pick, m.n, w)
    if sc is not None:
        sh = undef_where(sh, sc.nonexact(), m.n, w)
    m.write(f, ops[0], res, sh, act, ins)


# ------------------------------------------------------------------ cvt


def _cvt_float(vals: np.ndarray, dfmt: str, mode: str, sat: bool, satfinite: bool, relu: bool, ftz: bool) -> np.ndarray:
    r = fp.fround(vals, dfmt, mode)
    if satfinite:
        mx = FLOATS[dfmt].max_finite
        r = np.where(np.isnan(vals), np.nan, np.clip(np.where(np.isnan(r), np.copysign(np.inf, vals), r), -mx, mx))
    if relu:  # after .satfinite: a negative overflow is -MAX_NORM first, then 0 (the H100, e4m3x2)
        r = fp.relu(r)
    if sat:
        r = fp.saturate(r)
    if ftz and dfmt == "f32":
        r = fp.flush_subnormal(r, dfmt)
    return r


def _cvt_set(sh: Shadow, dfmt: str, mode: str, sat: bool, satfinite: bool, relu: bool) -> Shadow:
    """Map a one-lane SET shadow through a monotone float conversion."""
    k = sh.kind[:, 0]
    lo, hi, fl = sh.lo[:, 0], sh.hi[:, 0], sh.flags[:, 0].astype(np.int64)
    mx = FLOATS[dfmt].max_finite if dfmt in FLOATS else np.inf
    has_fin = ~np.isnan(lo)
    with np.errstate(all="ignore"):
        # infinities a SET may hold, as values, so the same conversion applies
        lo2 = np.where(fl & MAY_NEG_INF, -np.inf, np.where(has_fin, lo, np.where(fl & MAY_POS_INF, np.inf, np.nan)))
        hi2 = np.where(fl & MAY_POS_INF, np.inf, np.where(has_fin, hi, np.where(fl & MAY_NEG_INF, -np.inf, np.nan)))
        rlo = _cvt_float(lo2, dfmt, mode, sat, satfinite, relu, False)
        rhi = _cvt_float(hi2, dfmt, mode, sat, satfinite, relu, False)
    flags = np.where(fl & MAY_NAN, MAY_NAN if not sat else 0, 0)
    if sat and (fl & MAY_NAN).any():
        rlo = np.where(fl & MAY_NAN, np.minimum(rlo, 0.0), rlo)
    flags = flags | np.where(rhi == np.inf, MAY_POS_INF, 0) | np.where(rlo == -np.inf, MAY_NEG_INF, 0) \
        | (ALT_FORMAT if dfmt in ALT_FORMATS else 0)
    flo = np.where(np.isinf(rlo), np.where(rlo < 0, -mx, np.where(np.isinf(rhi), np.nan, rhi)), rlo)
    fhi = np.where(np.isinf(rhi), np.where(rhi > 0, mx, np.where(np.isinf(rlo), np.nan, rlo)), rhi)
    both_inf_same = np.isinf(rlo) & np.isinf(rhi) & (np.sign(rlo) == np.sign(rhi))
    flo = np.where(both_inf_same, np.nan, flo)
    fhi = np.where(both_inf_same, np.nan, fhi)
    kind = np.where(k == SET, SET, k).astype(np.uint8)
    return Shadow(sh.lane_bits, kind[:, None], flo[:, None], fhi[:, None], flags.astype(np.uint8)[:, None])


def _float_lane(bits, sh, sfmt, dfmt, mode, flags, n, in_w, out_w):
    """Convert one float lane; returns (bits, shadow on out_w bits)."""
    sat, satfinite, relu, ftz = flags
    vals = fp.decode(sfmt, bits & mask(in_w))
    if ftz and sfmt == "f32":
        vals = fp.flush_subnormal(vals, sfmt)
    r = _cvt_float(vals, dfmt, mode, sat, satfinite, relu, ftz)
    out = fp.encode(dfmt, r)
    if "f64" in (sfmt, dfmt) or (sfmt, dfmt) == ("bf16", "f32"):
        # the ISA gives these conversions no NaN pattern; the H100 keeps the payload (f16/f32/bf16 ->
        # f64, bf16 -> f32) or writes another canonical NaN (f64 -> f16 0x7e00, bf16 0x7fc0, f32 0x7fc00000)
        nan = np.isnan(r)
        if count_nonzero(nan):
            return out, Shadow.undef(n, out_w, nan if sh is None else (nan | sh.nonexact()))
    if sh is None:
        return out, None
    s = lanes_of(sh, n, in_w, min(sh.lane_bits, in_w))
    if s.lanes == 1 and s.lane_bits == in_w:
        ns = _cvt_set(s, dfmt, mode, sat, satfinite, relu)
        ns.lane_bits = out_w
        ns.kind[s.kind[:, 0] == UNDEF] = UNDEF
        return out, (None if ns.is_trivial() else ns)
    return out, Shadow.undef(n, out_w, s.nonexact())


def h_cvt(m, f, ins, act):
    mods = ins.modifiers
    ts = types_of(ins)
    if len(ts) != 2:
        raise Unsupported.at(ins, "cvt needs a destination and a source type")
    dt, st = ts
    ops = ins.operands
    n = m.n
    mode = next((x for x in mods if x in ("rn", "rz", "rm", "rp", "rna")), "rn")
    imode = next((x for x in mods if x in IROUND), None)
    fl = ("sat" in mods, "satfinite" in mods, "relu" in mods, "ftz" in mods)
    dw, dk = TYPES[dt]
    sw, sk = TYPES[st]
    if dk == "x" and sk == "f":  # two f32 -> packed pair: a to the upper half, b to the lower
        half = HALF[dt]
        hw = dw // 2
        a, sa = m.read(f, ops[1], st, ins)
        b, sb = m.read(f, ops[2], st, ins)
        lo_bits, lo_sh = _float_lane(b, sb, st, half, mode, fl, n, sw, hw)
        hi_bits, hi_sh = _float_lane(a, sa, st, half, mode, fl, n, sw, hw)
        m.write(f, ops[0], lo_bits | (hi_bits << U64(hw)), cat_shadows([(lo_sh, hw), (hi_sh, hw)], n), act, ins)
        return
    if dk == "x" and sk == "x":  # packed -> packed, lane by lane
        a, sa = m.read(f, ops[1], st, ins)
        shw, dhw = sw // 2, dw // 2
        outs, shs = [], []
        for i in range(2):
            bits = (a >> U64(i * shw)) & mask(shw)
            ob, osh = _float_lane(bits, sub_shadow(sa, n, sw, i * shw, shw), HALF[st], HALF[dt], mode, fl, n, shw, dhw)
            outs.append(ob)
            shs.append((osh, dhw))
        m.write(f, ops[0], outs[0] | (outs[1] << U64(dhw)), cat_shadows(shs, n), act, ins)
        return
    a, sa = m.read(f, ops[1], st, ins)
    if dk == "f" and sk == "f":
        dfmt = dt
        if dt == "tf32":
            vals = fp.decode(st, a)
            r = fp.fround(vals, "tf32", mode) if mode != "rna" else _tf32_rna(vals)
            if fl[1]:
                mx = FLOATS["tf32"].max_finite
                r = np.where(np.isnan(vals), np.nan, np.clip(r, -mx, mx))
            m.write(f, ops[0], fp.encode("tf32", r), combine_undef([sa], n, 32), act, ins)
            return
        if imode is not None:  # cvt.rni.f32.f32 and friends: round to an integral value in the same format
            vals = fp.decode(st, a)
            if "ftz" in mods and st == "f32":
                vals = fp.flush_subnormal(vals, st)
            r = fp.fround(fp.round_int(vals, imode), dfmt, "rn")
            if fl[0]:
                r = fp.saturate(r)
            res = fp.encode(dfmt, r)
            sh = combine_undef([sa], n, dw)
            m.write(f, ops[0], res, nan_payload_free(sh, res, dfmt, n) if dfmt == "f64" else sh, act, ins)
            return
        res, sh = _float_lane(a, sa, st, dfmt, mode, fl, n, sw, dw)
        m.write(f, ops[0], res, sh, act, ins)
        return
    if dk == "f" and sk in "sub":  # int -> float
        # err = x - float64(x), exact: float64(x) may be 2**63 (s64) or 2**64 (u64), past the type
        if sk == "s":
            x = sign_extend(a, sw)
            xf = x.astype(np.float64)
            top = xf >= 2.0 ** 63
            back = np.clip(xf, -2.0 ** 63, 2.0 ** 63 - 1024).astype(np.int64)
            err = np.where(top, -((U64(1 << 63) - x.view(np.uint64)).astype(np.float64)),
                           (x - back).astype(np.float64))
        else:
            x = a & mask(sw)
            xf = x.astype(np.float64)
            top = xf >= 2.0 ** 64
            back = np.clip(xf, 0, 2.0 ** 64 - 2048).astype(np.uint64)
            err = np.where(top, -((~x).astype(np.float64) + 1.0),
                           np.where(x >= back, (x - back).astype(np.float64), -((back - x).astype(np.float64))))
        r = fp.fround(xf, dt, mode, err)
        if fl[0]:
            r = fp.saturate(r)
        m.write(f, ops[0], fp.encode(dt, r), combine_undef([sa], n, dw), act, ins)
        return
    if dk in "sub" and sk == "f":  # float -> int: round, then clamp (PTX saturates by default)
        vals = fp.decode(st, a)
        if "ftz" in mods and st == "f32":
            vals = fp.flush_subnormal(vals, st)
        r = fp.round_int(vals, imode or "rzi")
        if dk == "s":
            lo, hi = -(2.0 ** (dw - 1)), 2.0 ** (dw - 1) - 1
        else:
            lo, hi = 0.0, 2.0 ** dw - 1
        nan = np.isnan(r)
        r = np.where(nan, 0.0, np.clip(r, lo, hi))
        if dw == 64:  # the clamp bound 2**64-1 (2**63-1) is 2**64 (2**63) in float64
            big = r >= 2.0 ** 63
            with np.errstate(invalid="ignore"):
                res = np.where(big, np.clip(r - 2.0 ** 63, 0, 2.0 ** 63 - 1024).astype(np.uint64) + U64(1 << 63),
                               np.clip(r, -2.0 ** 63, 2.0 ** 63 - 1024).astype(np.int64).view(np.uint64))
            res = np.where(r >= 2.0 ** 64, U64((1 << 64) - 1), res)
            if dk == "s":
                res = np.where(r >= 2.0 ** 63 - 1, U64((1 << 63) - 1), res)
        else:
            res = r.astype(np.int64).view(np.uint64) & mask(dw)
        # a register wider than the type: sign-extended for .s types, zero-extended otherwise
        # (PTX ISA, "Operand Size Exceeding Instruction-Type Size", destination operands)
        # NaN: the ISA's cvt clamps out-of-range values but names no integer for a NaN; the H100
        # writes 0 (f16/f32/bf16 to <= 32 bits) or the type's INT_MIN pattern (from f64, and to
        # 64 bits) (tests/hw_records/scalar_ops_h100.json), so the reference leaves it free
        sh = combine_undef([sa], n, dw)
        if count_nonzero(nan):
            sh = undef_where(sh, nan, n, dw)
        m.write(f, ops[0], res & mask(dw), sh, act, ins, ext=dt)
        return
    if dk in "sub" and sk in "sub":  # int -> int
        x = sign_extend(a, sw) if sk == "s" else (a & mask(sw)).astype(np.int64)
        if sk != "s" and sw == 64:
            xu = a
        if fl[0]:
            if dk == "s":
                lo, hi = -(1 << (dw - 1)), (1 << (dw - 1)) - 1
            else:
                lo, hi = 0, (1 << dw) - 1
            if sk != "s" and sw == 64:
                res = np.where(xu > U64(hi), U64(hi), xu)
            else:
                res = np.clip(x, lo, min(hi, (1 << 63) - 1)).view(np.uint64)
                if dk == "u" and dw == 64:
                    res = np.where(x < 0, U64(0), x.view(np.uint64))
        else:
            res = x.view(np.uint64)
        m.write(f, ops[0], res & mask(dw), combine_undef([sa], n, dw), act, ins, ext=dt)
        return
    raise Unsupported.at(ins, f"cvt .{dt}.{st}")


def _tf32_rna(vals: np.ndarray) -> np.ndarray:
    """f32 -> tf32 rounding to nearest, ties away from zero (cvt.rna.tf32.f32)."""
    b = vals.astype(np.float32).view(np.uint32).astype(np.uint64)
    fin = np.isfinite(vals)
    r = np.where(fin, (b + U64(0x1000)) & U64(0xFFFFE000), b & U64(0xFFFFE000))
    out = r.astype(np.uint32).view(np.float32).astype(np.float64)
    return np.where(np.isnan(vals), np.nan, out)


def h_cvta(m, f, ins, act):
    mods = ins.modifiers
    space = next((x for x in mods if x.startswith(("global", "shared", "const", "param", "local"))), None)
    t = the_type(ins)
    a, sa = m.read(f, ins.operands[1], t, ins)
    if space is None:
        raise Unsupported.at(ins, "cvta without a state space")
    if space.startswith("shared"):
        off = U64(SHARED_WINDOW)
        res = (a - off) if "to" in mods else (a + off)
    elif space.startswith("local"):
        off = U64(LOCAL_WINDOW)
        res = (a - off) if "to" in mods else (a + off)
    elif space.startswith("global"):
        res = a
    elif space.startswith("param") and "to" not in mods:
        res = a  # a kernel parameter's address stays its name for the tensor-map operand (tma.py)
    else:
        raise Unsupported.at(ins, f"cvta .{space}")
    m.write(f, ins.operands[0], res & mask(TYPES[t][0]), sa, act, ins)


# ------------------------------------------------------------------ lop3, prmt, sqrt, rcp


def h_lop3(m, f, ins, act):
    """lop3.b32 d, a, b, c, immLut: bit i of the table gives the result for (a, b, c) = bits of i (a: 4)."""
    ops = ins.operands
    if not isinstance(ops[4], Imm):
        raise Unsupported.at(ins, "lop3 needs an immediate table")
    lut = int(ops[4].value) & 0xFF
    (a, sa), (b, sb), (c, sc) = (m.read(f, op, "b32", ins) for op in ops[1:4])
    res = np.zeros(m.n, np.uint64)
    for i in range(8):
        if lut >> i & 1:
            res |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    m.write(f, ops[0], res & mask(32), combine_undef([sa, sb, sc], m.n, 32), act, ins)


def h_sqrt_rcp(m, f, ins, act):
    """IEEE sqrt / rcp with a rounding modifier (.f32 any mode, .f64 .rn); ``.approx`` is ``approx.h_approx``'s."""
    if "approx" in ins.modifiers:
        return h_approx(m, f, ins, act)
    t = the_type(ins)
    if t not in ("f32", "f64"):
        raise Unsupported.at(ins, f"{ins.base}.approx / .{t} is not modelled")
    mode = rounding(ins)
    if t == "f64" and mode != "rn":
        raise Unsupported.at(ins, f"{ins.base}.{mode}.f64 is not modelled")
    a, sa = m.read(f, ins.operands[1], t, ins)
    fn = (lambda x, fmt, mode: fp.fround(np.sqrt(x), fmt, mode)) if ins.base == "sqrt" else \
        (lambda x, fmt, mode: fp.fround(1.0 / x, fmt, mode))
    res = float_op(t, fn, [a], mode, "ftz" in ins.modifiers, False)
    sh = combine_undef([sa], m.n, TYPES[t][0])
    m.write(f, ins.operands[0], res, nan_payload_free(sh, res, t, m.n) if t == "f64" else sh, act, ins)
