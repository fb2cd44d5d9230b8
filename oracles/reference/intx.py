"""Integer instructions beyond ``alu``'s: carry chains, packed 16x2, mul24/mad24, sad, dp4a/dp2a,
min/max .relu, set, slct, testp, copysign, and the SIMD and scalar video instructions.

Formulas are the PTX ISA's pseudocode (9.7.1 "Integer Arithmetic", 9.7.2 "Extended-Precision
Integer Arithmetic", 9.7.6 "Comparison and Selection", 9.7.3 "Floating-Point" for testp/copysign,
9.7.16 "Video Instructions"), over uint64 arrays for every thread at once.

The carry flag ``CC.CF`` lives in the frame (``Frame.cc``, with ``Frame.cc_undef``): the ISA
gives it no initial value and does not preserve it across calls, so reading it before a
``.cc`` instruction wrote it, or after a call, is UNDEF.
"""
from __future__ import annotations

import numpy as np

from fuzzptx.ptx.ir import Reg

import fuzzptx.oracles.reference.alu as alu
import fuzzptx.oracles.reference.fp as fp
import fuzzptx.oracles.reference.fpx as fpx
from .errors import Unsupported
from .ops import fdecode, int_mul, the_type, types_of
from .values import TYPES, U64, combine_undef, mask, sign_extend, undef_where


def _w(t: str) -> tuple[int, bool]:
    w, kind = TYPES[t]
    return w, kind == "s"


def _ext(bits: np.ndarray, w: int, signed: bool) -> np.ndarray:
    """The low w bits as Python-sized int64 (w <= 32) values."""
    return sign_extend(bits, w) if signed else (bits & mask(w)).astype(np.int64)


# ------------------------------------------------------------------ carry chains


def _carry_in(m, f, ins):
    cc = getattr(f, "cc", None)
    if cc is None:
        return np.zeros(m.n, np.uint64), np.ones(m.n, bool)
    return cc, f.cc_undef


def _add_carry(x: np.ndarray, y: np.ndarray, cin: np.ndarray, w: int) -> tuple[np.ndarray, np.ndarray]:
    """(x + y + cin) mod 2^w and its carry out, on unsigned w-bit values (cin 0 or 1)."""
    x, y = x & mask(w), y & mask(w)
    if w < 64:
        s = x + y + cin
        return s & mask(w), (s >> U64(w)) & U64(1)
    s1 = x + y
    c1 = s1 < x
    s2 = s1 + cin
    c2 = s2 < s1
    return s2, (c1 | c2).astype(np.uint64)


def h_carry(m, f, ins, act):
    """add.cc, addc{.cc}, sub.cc, subc{.cc}, mad{c}.{lo,hi}{.cc}: add and mad set CC.CF to the carry
    out of the w-bit unsigned addition (madc: of t + c + CF); sub sets it to the borrow
    (d = a - (b + CF) for subc), as the ISA words it."""
    base = ins.base
    mods = ins.modifiers
    t = the_type(ins)
    w, _signed = _w(t)
    ops = ins.operands
    srcs = [m.read(f, op, t, ins) for op in ops[1:]]
    bits = [b for b, _ in srcs]
    shs = [s for _, s in srcs]
    uses_cf = base in ("addc", "subc", "madc")
    sets_cf = "cc" in mods
    cin, cin_bad = _carry_in(m, f, ins) if uses_cf else (np.zeros(m.n, np.uint64), np.zeros(m.n, bool))
    if base in ("add", "addc"):
        res, cout = _add_carry(bits[0], bits[1], cin, w)
    elif base in ("sub", "subc"):
        # d = a - (b + CF); CF out = the borrow (1 when a < b + CF as unsigned values)
        diff, c = _add_carry(bits[0], ~bits[1] & mask(w), U64(1) - cin, w)
        res, cout = diff, U64(1) - c
    elif base in ("mad", "madc"):
        part = "hi" if "hi" in mods else "lo"
        prod = int_mul(bits[0], bits[1], w, TYPES[t][1] == "s", part)
        res, cout = _add_carry(prod, bits[2], cin, w)
    else:
        raise Unsupported.at(ins, f"{ins.opcode}: not a carry instruction")
    bad = cin_bad & act if uses_cf else np.zeros(m.n, bool)
    sh = combine_undef(shs, m.n, w)
    if bad.any():
        sh = undef_where(sh, bad, m.n, w)
    m.write(f, ops[0], res, sh, act, ins)
    if sets_cf:
        old = getattr(f, "cc", None)
        old_bad = f.cc_undef if old is not None else np.ones(m.n, bool)
        old = old if old is not None else np.zeros(m.n, np.uint64)
        nbad = bad.copy()
        for s in shs:
            if s is not None:
                nbad |= s.nonexact()
        f.cc = np.where(act, cout, old)
        f.cc_undef = np.where(act, nbad, old_bad)


# ------------------------------------------------------------------ packed 16x2


def _halves(bits: np.ndarray, signed: bool) -> list[np.ndarray]:
    return [_ext(bits >> U64(16 * i), 16, signed) for i in range(2)]


def _pack16(vals: list[np.ndarray]) -> np.ndarray:
    return (vals[0].astype(np.uint64) & mask(16)) | ((vals[1].astype(np.uint64) & mask(16)) << U64(16))


def h_packed16(m, f, ins, act):
    """add/sub/min/max on .u16x2 / .s16x2 (min/max .relu on .s16x2): each half on its own."""
    t = the_type(ins)
    signed = t == "s16x2"
    ops = ins.operands
    (a, sa), (b, sb) = m.read(f, ops[1], "b32", ins), m.read(f, ops[2], "b32", ins)
    xa, xb = _halves(a, signed), _halves(b, signed)
    out = []
    for x, y in zip(xa, xb):
        if ins.base == "add":
            r = x + y
        elif ins.base == "sub":
            r = x - y
        elif ins.base == "min":
            r = np.minimum(x, y)
        elif ins.base == "max":
            r = np.maximum(x, y)
        else:
            raise Unsupported.at(ins, f"{ins.base}.{t}")
        if "relu" in ins.modifiers:
            r = np.maximum(r, 0)
        if "sat" in ins.modifiers:
            r = np.clip(r, -(1 << 15), (1 << 15) - 1) if signed else np.clip(r, 0, 0xFFFF)
        out.append(r)
    m.write(f, ops[0], _pack16(out), combine_undef([sa, sb], m.n, 32), act, ins)


# ------------------------------------------------------------------ arithmetic front door


def h_arith(m, f, ins, act):
    """add/sub/mul/mad/fma/min/max: the forms here (carry, 16x2, .relu, 24-bit) and ``fpx``'s (.NaN,
    .xorsign.abs, float .relu), else ``alu.h_arith``."""
    mods = ins.modifiers
    t = the_type(ins) if types_of(ins) else None
    special = fpx.dispatch(m, f, ins, act) if t is not None else None
    if special is not None:
        return special(m, f, ins, act)
    if t in ("u16x2", "s16x2"):
        return h_packed16(m, f, ins, act)
    if "cc" in mods and ins.base in ("add", "sub", "mad"):
        return h_carry(m, f, ins, act)
    if "relu" in mods and ins.base in ("min", "max") and t == "s32":
        (a, sa), (b, sb) = m.read(f, ins.operands[1], t, ins), m.read(f, ins.operands[2], t, ins)
        x, y = sign_extend(a, 32), sign_extend(b, 32)
        r = np.maximum(np.minimum(x, y) if ins.base == "min" else np.maximum(x, y), 0)
        m.write(f, ins.operands[0], r.astype(np.uint64) & mask(32), combine_undef([sa, sb], m.n, 32), act, ins)
        return
    return alu.h_arith(m, f, ins, act)


def h_mul24(m, f, ins, act):
    """mul24.{hi,lo} / mad24.{hi,lo}{.sat}: the 48-bit product of the low 24 bits of a and b;
    .lo keeps bits 31..0, .hi bits 47..16; mad24 adds c (.sat: .hi.s32 only, clamped)."""
    t = the_type(ins)
    signed = t == "s32"
    ops = ins.operands
    srcs = [m.read(f, op, t, ins) for op in ops[1:]]
    x, y = _ext(srcs[0][0], 24, signed), _ext(srcs[1][0], 24, signed)
    p = x * y  # fits int64 (48 bits)
    r = (p >> 16) if "hi" in ins.modifiers else p
    if ins.base == "mad24":
        c = _ext(srcs[2][0], 32, signed)
        r = _ext(r.astype(np.uint64), 32, signed) + c
        if "sat" in ins.modifiers:
            r = np.clip(r, -(1 << 31), (1 << 31) - 1)
    m.write(f, ops[0], r.astype(np.uint64) & mask(32), combine_undef([s for _, s in srcs], m.n, 32), act, ins)


def h_sad(m, f, ins, act):
    """sad.type d, a, b, c: d = c + |a - b| (the difference of the type's values, w-bit wrap)."""
    t = the_type(ins)
    w, signed = _w(t)
    ops = ins.operands
    (a, sa), (b, sb), (c, sc) = (m.read(f, op, t, ins) for op in ops[1:4])
    if w == 64:
        lt = (a.view(np.int64) < b.view(np.int64)) if signed else (a < b)
        diff = np.where(lt, b - a, a - b)
    else:
        x, y = _ext(a, w, signed), _ext(b, w, signed)
        diff = np.abs(x - y).astype(np.uint64)
    m.write(f, ops[0], (c + diff) & mask(w), combine_undef([sa, sb, sc], m.n, w), act, ins)


def h_dp(m, f, ins, act):
    """dp4a.atype.btype d, a, b, c: c + the dot product of the four bytes of a and b; dp2a.{lo,hi}:
    c + the two 16-bit halves of a times bytes 0,1 (.lo) or 2,3 (.hi) of b."""
    ts = types_of(ins)
    if len(ts) != 2:
        raise Unsupported.at(ins, f"{ins.base} needs .atype.btype")
    sa_, sb_ = ts[0] == "s32", ts[1] == "s32"
    ops = ins.operands
    (a, s1), (b, s2), (c, s3) = (m.read(f, op, "b32", ins) for op in ops[1:4])
    acc = _ext(c, 32, sa_ or sb_)
    if ins.base == "dp4a":
        for i in range(4):
            acc = acc + _ext(a >> U64(8 * i), 8, sa_) * _ext(b >> U64(8 * i), 8, sb_)
    else:
        k = 2 if "hi" in ins.modifiers else 0
        for i in range(2):
            acc = acc + _ext(a >> U64(16 * i), 16, sa_) * _ext(b >> U64(8 * (k + i)), 8, sb_)
    m.write(f, ops[0], acc.astype(np.uint64) & mask(32), combine_undef([s1, s2, s3], m.n, 32), act, ins)


# ------------------------------------------------------------------ set, slct, testp, copysign


_ONE = {"f32": 0x3F800000, "f16": 0x3C00, "bf16": 0x3F80}


def h_set(m, f, ins, act):
    """set.cmp{.bool}{.ftz}.dtype.stype d, a, b{, {!}c}: all ones (.u32/.s32) or 1.0 (.f32, .f16,
    .bf16) where the comparison (combined with c) holds, else 0; packed dtypes per half."""
    ts = types_of(ins)
    if len(ts) != 2:
        raise Unsupported.at(ins, "set needs .dtype.stype")
    dt, st = ts
    mods = ins.modifiers
    cmp = mods[0]
    bop = next((x for x in mods[1:] if x in ("and", "or", "xor")), None)
    ftz = "ftz" in mods
    ops = ins.operands
    if st in ("f16x2", "bf16x2"):
        half = st[:-2]
        (a, sa), (b, sb) = m.read(f, ops[1], "b32", ins), m.read(f, ops[2], "b32", ins)
        lanes = [alu.compare(cmp, half, a >> U64(16 * i) & mask(16), b >> U64(16 * i) & mask(16), ftz) for i in range(2)]
        w = 32
    else:
        (a, sa), (b, sb) = m.read(f, ops[1], st, ins), m.read(f, ops[2], st, ins)
        lanes = [alu.compare(cmp, st, a, b, ftz)]
        w = 32 if dt in ("u32", "s32", "f32") else 16
    shs = [sa, sb]
    if bop is not None:
        c, sc = alu._pred(m, f, ops[3], ins)
        shs.append(sc)
        cb = c.astype(bool)
        fn = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[bop]
        lanes = [fn(x, cb) for x in lanes]
    if len(lanes) == 2:
        lw = 16
        true = 0xFFFF if dt in ("u32", "s32") else _ONE[dt[:-2] if dt.endswith("x2") else dt]
    else:
        lw = w
        true = (1 << w) - 1 if dt in ("u32", "s32") else _ONE[dt]
    res = np.zeros(m.n, np.uint64)
    for i, x in enumerate(lanes):
        res |= np.where(x, U64(true), U64(0)) << U64(lw * i)
    m.write(f, ops[0], res, combine_undef(shs, m.n, w), act, ins)


def h_slct(m, f, ins, act):
    """slct{.ftz}.dtype.{s32,f32} d, a, b, c: d = a if c >= 0 else b (f32: -0 counts as 0, NaN as
    negative; .ftz flushes a subnormal c to a signed zero first)."""
    ts = types_of(ins)
    dt, ct = ts[0], ts[-1]
    ops = ins.operands
    (a, sa), (b, sb) = m.read(f, ops[1], dt, ins), m.read(f, ops[2], dt, ins)
    c, sc = m.read(f, ops[3], ct, ins)
    if ct == "f32":
        v = fdecode("f32", c)
        if "ftz" in ins.modifiers:
            v = fp.flush_subnormal(v, "f32")
        with np.errstate(invalid="ignore"):
            pick = v >= 0.0
    else:
        pick = sign_extend(c, 32) >= 0
    w = TYPES[dt][0]
    res = np.where(pick, a, b) & mask(w)
    sh = combine_undef([sa, sb, sc], m.n, w)
    m.write(f, ops[0], res, sh, act, ins)


def h_testp(m, f, ins, act):
    """testp.op.{f32,f64} p, a: finite, infinite, number, notanumber, normal, subnormal."""
    t = the_type(ins)
    op = next((x for x in ins.modifiers if x in ("finite", "infinite", "number", "notanumber", "normal", "subnormal")), None)
    if op is None:
        raise Unsupported.at(ins, "testp needs a test")
    a, sa = m.read(f, ins.operands[1], t, ins)
    v = fdecode(t, a)
    tiny = np.finfo(np.float32 if t == "f32" else np.float64).tiny
    with np.errstate(invalid="ignore"):
        r = {"finite": np.isfinite(v), "infinite": np.isinf(v), "number": ~np.isnan(v), "notanumber": np.isnan(v),
             # "As a special case, positive and negative zero are considered normal numbers." (PTX ISA, testp)
             "normal": np.isfinite(v) & ((np.abs(v) >= tiny) | (v == 0)),
             "subnormal": (v != 0) & (np.abs(v) < tiny)}[op]
    m.write(f, ins.operands[0], r.astype(np.uint64), combine_undef([sa], m.n, 1), act, ins)


def h_copysign(m, f, ins, act):
    """copysign.{f32,f64} d, a, b: b with the sign of a."""
    t = the_type(ins)
    w = TYPES[t][0]
    (a, sa), (b, sb) = m.read(f, ins.operands[1], t, ins), m.read(f, ins.operands[2], t, ins)
    sign = U64(1 << (w - 1))
    m.write(f, ins.operands[0], (b & ~sign & mask(w)) | (a & sign), combine_undef([sa, sb], m.n, w), act, ins)


# ------------------------------------------------------------------ cvt.pack


_PACK = {"u16": (16, False), "s16": (16, True), "u8": (8, False), "s8": (8, True), "u4": (4, False), "s4": (4, True)}


def h_cvt(m, f, ins, act):
    """cvt.pack.sat.{u16,s16}.s32 d, a, b and cvt.pack.sat.{u8,s8,u4,s4}.s32.b32 d, a, b, c: a and b
    clamped to the narrow type, b in the low field, a above it, and (8- and 4-bit forms) the low
    bits of c above both (PTX ISA, cvt.pack); any other cvt: ``alu.h_cvt``."""
    if "pack" not in ins.modifiers:
        return alu.h_cvt(m, f, ins, act)
    ct = next((x for x in ins.modifiers if x in _PACK), None)
    w, signed = _PACK.get(ct, (0, False))
    if ct is None or len(ins.operands) != (3 if w == 16 else 4):
        raise Unsupported.at(ins, "cvt.pack needs .sat, a narrow integer type and its operands")
    ops = ins.operands
    (a, sa), (b, sb) = m.read(f, ops[1], "s32", ins), m.read(f, ops[2], "s32", ins)
    c, sc = m.read(f, ops[3], "b32", ins) if w < 16 else (None, None)
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    ta = np.clip(sign_extend(a, 32), lo, hi).astype(np.uint64) & mask(w)
    tb = np.clip(sign_extend(b, 32), lo, hi).astype(np.uint64) & mask(w)
    d = tb | (ta << U64(w))
    shs = [sa, sb]
    if w < 16:
        d = d | ((c << U64(2 * w)) & mask(32))
        shs.append(sc)
    m.write(f, ops[0], d & mask(32), combine_undef(shs, m.n, 32), act, ins)


# ------------------------------------------------------------------ video instructions


def _strip(op):
    """(register, selector suffix or None) of a video operand like ``%r2.b3210``."""
    if isinstance(op, Reg) and "." in op.name[1:]:
        name, sel = op.name.rsplit(".", 1)
        return Reg(name), sel
    return op, None


def _sel_digits(sel: str | None, prefix: str, default: str) -> list[int]:
    s = sel or default
    if not s.startswith(prefix):
        raise ValueError(s)
    return [int(ch) for ch in reversed(s[1:])]  # lowest lane first


_SIMD = {"vadd2": ("add", 2), "vsub2": ("sub", 2), "vavrg2": ("avrg", 2), "vabsdiff2": ("absdiff", 2),
         "vmin2": ("min", 2), "vmax2": ("max", 2), "vset2": ("set", 2),
         "vadd4": ("add", 4), "vsub4": ("sub", 4), "vavrg4": ("avrg", 4), "vabsdiff4": ("absdiff", 4),
         "vmin4": ("min", 4), "vmax4": ("max", 4), "vset4": ("set", 4)}
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


def _vop(op: str, x: np.ndarray, y: np.ndarray, cmp: str | None) -> np.ndarray:
    if op == "add":
        return x + y
    if op == "sub":
        return x - y
    if op == "avrg":
        s = x + y
        return np.where(s >= 0, (s + 1) >> 1, s >> 1)
    if op == "absdiff":
        return np.abs(x - y)
    if op == "min":
        return np.minimum(x, y)
    if op == "max":
        return np.maximum(x, y)
    if op == "set":
        return _CMP[cmp](x, y).astype(np.int64)
    raise ValueError(op)


def _video_types(ins, op: str) -> tuple[str | None, str, str, str]:
    """(comparison, .dtype, .atype, .btype) of a video instruction: ``vset`` names a comparison and no
    .dtype (its result is a u32 0/1)."""
    ts = types_of(ins)
    if op == "set":
        return next((x for x in ins.modifiers if x in _CMP), None), "u32", ts[0], ts[1]
    return None, ts[0], ts[1], ts[2]


def h_video_simd(m, f, ins, act):
    """vadd2/vsub2/vavrg2/vabsdiff2/vmin2/vmax2/vset2 and the 4-lane forms: per lane of {b, a} picked by
    the selectors, optional saturation to the lane's range (signed if .dtype is .s32), then either
    the merge (lanes outside the destination mask come from c) or ``.add`` (c + the selected lanes)."""
    op, lanes = _SIMD[ins.base]
    mods = ins.modifiers
    cmp, dt, at, bt = _video_types(ins, op)
    lw = 32 // lanes
    prefix = "h" if lanes == 2 else "b"
    dop, dsel = _strip(ins.operands[0])
    aop, asel = _strip(ins.operands[1])
    bop, bsel = _strip(ins.operands[2])
    try:
        ad = _sel_digits(asel, prefix, "h10" if lanes == 2 else "b3210")
        bd = _sel_digits(bsel, prefix, "h32" if lanes == 2 else "b7654")
        dmask = _sel_digits(dsel, prefix, "h10" if lanes == 2 else "b3210")
    except ValueError:
        raise Unsupported.at(ins, "video selector not understood") from None
    (a, sa), (b, sb) = m.read(f, aop, "b32", ins), m.read(f, bop, "b32", ins)
    c, sc = m.read(f, ins.operands[3], "b32", ins)
    src = (a & mask(32)) | ((b & mask(32)) << U64(32))
    sat = "sat" in mods
    add = "add" in mods
    res = c & mask(32) if add else np.zeros(m.n, np.uint64)
    acc = _ext(c, 32, dt == "s32").astype(np.int64) if add else None
    for i in range(lanes):
        x = _ext(src >> U64(lw * ad[i]), lw, at == "s32")
        y = _ext(src >> U64(lw * bd[i]), lw, bt == "s32")
        r = _vop(op, x, y, cmp)
        if sat:
            r = np.clip(r, -(1 << (lw - 1)), (1 << (lw - 1)) - 1) if dt == "s32" else np.clip(r, 0, (1 << lw) - 1)
        if add:
            if i in dmask:
                acc = acc + r
        else:
            part = np.where(i in dmask, r.astype(np.uint64) & mask(lw), (c >> U64(lw * i)) & mask(lw))
            res |= part << U64(lw * i)
    if add:
        res = acc.astype(np.uint64) & mask(32)
    m.write(f, dop, res, combine_undef([sa, sb, sc], m.n, 32), act, ins)


_SCALAR = {"vadd": "add", "vsub": "sub", "vabsdiff": "absdiff", "vmin": "min", "vmax": "max", "vshl": "shl",
           "vshr": "shr", "vmad": "mad", "vset": "set"}


def _part(bits: np.ndarray, signed: bool, sel: str | None) -> np.ndarray:
    """partSelectSignExtend: byte/half/word of a 32-bit operand, extended as its type says."""
    if sel is None:
        return _ext(bits, 32, signed)
    k = int(sel[1:])
    w = 8 if sel[0] == "b" else 16
    return _ext(bits >> U64(w * k), w, signed)


def h_video_scalar(m, f, ins, act):
    """vadd/vsub/vabsdiff/vmin/vmax/vshl/vshr/vset: the selected byte/half/word of a and b extended
    to 33+ bits, the operation, saturation to .dtype (or to the destination part), then the
    secondary operation with c (.add/.min/.max) or the merge of the result into c's part .dsel."""
    op = _SCALAR[ins.base]
    if op == "mad":
        raise Unsupported.at(ins, "vmad is not modelled")
    mods = ins.modifiers
    cmp, dt, at, bt = _video_types(ins, op)
    dop, dsel = _strip(ins.operands[0])
    aop, asel = _strip(ins.operands[1])
    bop, bsel = _strip(ins.operands[2])
    (a, sa), (b, sb) = m.read(f, aop, "b32", ins), m.read(f, bop, "b32", ins)
    shs = [sa, sb]
    x = _part(a, at == "s32", asel)
    y = _part(b, bt == "s32", bsel)
    signed_d = dt == "s32"
    if op in ("shl", "shr"):
        yy = (y.astype(np.uint64) & mask(32)).astype(np.int64)
        if "wrap" in mods:
            yy = yy & 31
        else:
            yy = np.minimum(yy, 32)
        if op == "shl":
            r = np.where(yy >= 32, 0, (x.astype(np.uint64) << np.minimum(yy, 31).astype(np.uint64)).astype(np.int64))
            r = _ext(r.astype(np.uint64), 32, signed_d)
        else:
            r = np.where(yy >= 32, np.where(x < 0, -1, 0), x >> np.minimum(yy, 31))
    else:
        r = _vop(op, x, y, cmp)
    op2 = next((z for z in mods if z in ("add", "min", "max")), None)
    c = None
    if len(ins.operands) > 3:
        c, scc = m.read(f, ins.operands[3], "b32", ins)
        shs.append(scc)
    if "sat" in mods and op != "set":
        if dsel is not None:
            pw = 8 if dsel[0] == "b" else 16
        else:
            pw = 32
        r = np.clip(r, -(1 << (pw - 1)), (1 << (pw - 1)) - 1) if signed_d else np.clip(r, 0, (1 << pw) - 1)
    if op2 is not None and c is not None:
        cv = _ext(c, 32, signed_d)
        r = r + cv if op2 == "add" else np.minimum(r, cv) if op2 == "min" else np.maximum(r, cv)
        res = r.astype(np.uint64) & mask(32)
    elif dsel is not None and c is not None:
        pw = 8 if dsel[0] == "b" else 16
        k = int(dsel[1:])
        keep = ~(mask(pw) << U64(pw * k)) & mask(32)
        res = (c & keep) | ((r.astype(np.uint64) & mask(pw)) << U64(pw * k))
    else:
        res = r.astype(np.uint64) & mask(32)
    m.write(f, dop, res, combine_undef(shs, m.n, 32), act, ins)
