"""Bit-field and bit-manipulation instructions: bfe, bfi, bfind, bmsk, fns, szext, shf, prmt.

Each handler is ``h(m, f, ins, act)`` like ``alu``'s; the formulas are the PTX ISA's pseudocode
(PTX ISA 9.7.1 "Integer Arithmetic" and 9.7.8 "Logic and Shift" chapters), written over
uint64 arrays for every thread at once.  Any input that is not exact makes the result UNDEF
for that thread (``combine_undef``).
"""
from __future__ import annotations

import numpy as np

from .errors import Unsupported
from .ops import the_type
from .values import TYPES, U64, combine_undef, mask, undef_where

_ONES = U64(0xFFFFFFFFFFFFFFFF)


def low_mask(k: np.ndarray) -> np.ndarray:
    """``(1 << k) - 1`` per element for k in [0, 64] (numpy's shift by 64 is undefined)."""
    k = k.astype(np.uint64)
    big = k >= U64(64)
    return np.where(big, _ONES, (U64(1) << np.where(big, U64(0), k)) - U64(1))


def _shr(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``a >> s`` with s >= 64 giving 0."""
    s = s.astype(np.uint64)
    return np.where(s >= U64(64), U64(0), a >> np.minimum(s, U64(63)))


def _shl(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    s = s.astype(np.uint64)
    return np.where(s >= U64(64), U64(0), a << np.minimum(s, U64(63)))


def bfe(a: np.ndarray, b: np.ndarray, c: np.ndarray, w: int, signed: bool) -> np.ndarray:
    """bfe: ``pos = b & 0xff``, ``len = c & 0xff``; bit i of d is a[pos+i] for i < len and
    pos+i <= msb, else the sign bit a[min(pos+len-1, msb)] (signed types, len != 0) or 0."""
    msb = w - 1
    a = a & mask(w)
    pos = b & U64(0xFF)
    ln = c & U64(0xFF)
    room = np.where(pos > U64(msb), U64(0), U64(w) - np.minimum(pos, U64(msb)))  # bits left above pos
    k = np.minimum(ln, room)  # bits taken from a
    field = _shr(a, pos) & low_mask(k)
    if not signed:
        return field
    top = np.minimum(pos + ln - U64(1), U64(msb))
    sbit = (ln != U64(0)) & ((_shr(a, top) & U64(1)) != U64(0))
    return (field | np.where(sbit, ~low_mask(k), U64(0))) & mask(w)


def bfi(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray, w: int) -> np.ndarray:
    """bfi f, a, b, c, d: ``pos = c & 0xff``, ``len = d & 0xff``; f = b with bits
    [pos, pos+len) (clipped at msb) replaced by the low bits of a."""
    pos = c & U64(0xFF)
    ln = d & U64(0xFF)
    room = np.where(pos > U64(w - 1), U64(0), U64(w) - np.minimum(pos, U64(w - 1)))
    k = np.minimum(ln, room)
    field = _shl(low_mask(k), pos) & mask(w)
    return ((b & ~field) | (_shl(a, pos) & field)) & mask(w)


def h_bfe(m, f, ins, act):
    t = the_type(ins)
    w, kind = TYPES[t]
    ops = ins.operands
    (a, sa) = m.read(f, ops[1], t, ins)
    (b, sb), (c, sc) = m.read(f, ops[2], "u32", ins), m.read(f, ops[3], "u32", ins)
    m.write(f, ops[0], bfe(a, b, c, w, kind == "s"), combine_undef([sa, sb, sc], m.n, w), act, ins)


def h_bfi(m, f, ins, act):
    t = the_type(ins)
    w = TYPES[t][0]
    ops = ins.operands
    (a, sa), (b, sb) = m.read(f, ops[1], t, ins), m.read(f, ops[2], t, ins)
    (c, sc), (d, sd) = m.read(f, ops[3], "u32", ins), m.read(f, ops[4], "u32", ins)
    m.write(f, ops[0], bfi(a, b, c, d, w), combine_undef([sa, sb, sc, sd], m.n, w), act, ins)


def bfind(a: np.ndarray, w: int, signed: bool, shiftamt: bool) -> np.ndarray:
    """bfind: the bit position of the most significant non-sign bit (0xffffffff when none);
    ``.shiftamt`` gives the left shift that brings it to the msb instead."""
    a = a & mask(w)
    if signed:
        neg = (a >> U64(w - 1)) & U64(1) != U64(0)
        a = np.where(neg, ~a & mask(w), a)
    pos = np.full(a.shape, -1, np.int64)
    for i in range(w):
        pos = np.where((a >> U64(i)) & U64(1) != U64(0), i, pos)
    none = pos < 0
    if shiftamt:
        pos = np.where(none, pos, (w - 1) - pos)
    return np.where(none, U64(0xFFFFFFFF), pos.astype(np.uint64))


def h_bfind(m, f, ins, act):
    t = the_type(ins)
    w, kind = TYPES[t]
    a, sa = m.read(f, ins.operands[1], t, ins)
    res = bfind(a, w, kind == "s", "shiftamt" in ins.modifiers)
    m.write(f, ins.operands[0], res, combine_undef([sa], m.n, 32), act, ins)


def h_bmsk(m, f, ins, act):
    """bmsk.{clamp,wrap}.b32 d, a, b: a mask of b ones from bit a; .wrap takes a and b mod 32,
    .clamp caps them at 32 (PTX ISA: bmsk)."""
    ops = ins.operands
    (a, sa), (b, sb) = m.read(f, ops[1], "u32", ins), m.read(f, ops[2], "u32", ins)
    a, b = a & mask(32), b & mask(32)
    if "wrap" in ins.modifiers:
        a, b = a & U64(31), b & U64(31)
    elif "clamp" in ins.modifiers:
        a, b = np.minimum(a, U64(32)), np.minimum(b, U64(32))
    else:
        raise Unsupported.at(ins, "bmsk needs .clamp or .wrap")
    res = np.where(a >= U64(32), U64(0), _shl(low_mask(b), a) & mask(32))
    m.write(f, ops[0], res, combine_undef([sa, sb], m.n, 32), act, ins)


def h_szext(m, f, ins, act):
    """szext.{wrap,clamp}.{u32,s32} d, a, b: the low b bits of a, zero- or sign-extended (.wrap:
    b mod 32; .clamp: b capped at 32)."""
    t = the_type(ins)
    ops = ins.operands
    (a, sa), (b, sb) = m.read(f, ops[1], "u32", ins), m.read(f, ops[2], "u32", ins)
    a, b = a & mask(32), b & mask(32)
    b = (b & U64(31)) if "wrap" in ins.modifiers else np.minimum(b, U64(32))
    lo = a & low_mask(b)
    if TYPES[t][1] == "s":
        sign = (b != U64(0)) & ((_shr(a, b - np.minimum(b, U64(1))) & U64(1)) != U64(0))
        lo = np.where(sign, lo | (~low_mask(b) & mask(32)), lo)
    m.write(f, ops[0], lo & mask(32), combine_undef([sa, sb], m.n, 32), act, ins)


def h_fns(m, f, ins, act):
    """fns.b32 d, mask, base, offset: the position of the offset-th set bit of mask counting from
    base (up for offset > 0, down for offset < 0; offset 0: base itself if set), else 0xffffffff."""
    ops = ins.operands
    (mk, s1), (base, s2), (off, s3) = (m.read(f, ops[1], "b32", ins), m.read(f, ops[2], "u32", ins),
                                       m.read(f, ops[3], "s32", ins))
    mk = mk & mask(32)
    base = (base & mask(32)).astype(np.int64)
    off = (off & mask(32)).astype(np.int64)
    off = np.where(off >= 1 << 31, off - (1 << 32), off)
    res = np.full(m.n, 0xFFFFFFFF, np.uint64)
    for t in np.flatnonzero(act):
        res[t] = _fns_one(int(mk[t]), int(base[t]), int(off[t]))
    sh = combine_undef([s1, s2, s3], m.n, 32)
    # "Operand base must be <= 31, otherwise behavior is undefined" (PTX ISA, fns)
    m.write(f, ops[0], res, undef_where(sh, base > 31, m.n, 32), act, ins)


def _fns_one(mk: int, base: int, off: int) -> int:
    if base > 31:
        return 0xFFFFFFFF  # undefined (UNDEF in h_fns; scalar_rules flags a constant base)
    if off == 0:
        return base if mk >> base & 1 else 0xFFFFFFFF
    pos, step, left = base, (1 if off > 0 else -1), abs(off)
    while 0 <= pos <= 31:
        if mk >> pos & 1:
            left -= 1
            if left == 0:
                return pos
        pos += step
    return 0xFFFFFFFF


def shf(a: np.ndarray, b: np.ndarray, c: np.ndarray, left: bool, clamp: bool) -> np.ndarray:
    """shf.{l,r}.{clamp,wrap}.b32 d, a, b, c: shift the 64-bit {b, a} (b high) by c (.wrap: c mod
    32, .clamp: at most 32) and keep the high (.l) or low (.r) word."""
    n = np.minimum(c & mask(32), U64(32)) if clamp else (c & U64(31))
    x = ((b & mask(32)) << U64(32)) | (a & mask(32))
    if left:
        return (_shl(x, n) >> U64(32)) & mask(32)
    return _shr(x, n) & mask(32)


def h_shf(m, f, ins, act):
    mods = ins.modifiers
    if not (("l" in mods) ^ ("r" in mods)) or not (("wrap" in mods) ^ ("clamp" in mods)):
        raise Unsupported.at(ins, "shf needs one of .l/.r and one of .wrap/.clamp")
    ops = ins.operands
    (a, sa), (b, sb), (c, sc) = (m.read(f, op, "b32", ins) for op in ops[1:4])
    res = shf(a, b, c, "l" in mods, "clamp" in mods)
    m.write(f, ops[0], res, combine_undef([sa, sb, sc], m.n, 32), act, ins)


# prmt's modes: the source byte of result bytes 0..3 for each value of c[1:0] (PTX ISA: prmt)
_PRMT_MODES = {
    "f4e": lambda s: [(s + i) & 7 for i in range(4)],  # forward 4 extract
    "b4e": lambda s: [(s - i) & 7 for i in range(4)],  # backward 4 extract
    "rc8": lambda s: [s] * 4,  # replicate 8
    "ecl": lambda s: [max(i, s) for i in range(4)],  # edge clamp left
    "ecr": lambda s: [min(i, s) for i in range(4)],  # edge clamp right
    "rc16": lambda s: [(s & 1) * 2, (s & 1) * 2 + 1] * 2,  # replicate 16
}


def prmt(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str | None) -> np.ndarray:
    """prmt.b32{.mode} d, a, b, c: bytes of {b, a} (a: bytes 0-3) picked per result byte.  Default
    mode: nibble k of c picks byte c[4k+2:4k] and its bit 3 replicates that byte's sign; the
    other modes derive the four picks from c[1:0] (``_PRMT_MODES``)."""
    src = (a & mask(32)) | ((b & mask(32)) << U64(32))
    res = np.zeros(a.shape, np.uint64)
    if mode is None:
        for k in range(4):
            sel = (c >> U64(4 * k)) & U64(0xF)
            byte = (src >> ((sel & U64(7)) * U64(8))) & U64(0xFF)
            byte = np.where((sel & U64(8)) != U64(0), np.where(byte & U64(0x80), U64(0xFF), U64(0)), byte)
            res |= byte << U64(8 * k)
        return res
    fn = _PRMT_MODES[mode]
    s = (c & U64(3)).astype(np.int64)
    for v in range(4):
        rows = s == v
        if not rows.any():
            continue
        picks = fn(v)
        r = np.zeros(int(rows.sum()), np.uint64)
        for k, p in enumerate(picks):
            r |= ((src[rows] >> U64(8 * p)) & U64(0xFF)) << U64(8 * k)
        res[rows] = r
    return res


def h_prmt(m, f, ins, act):
    mode = next((x for x in ins.modifiers if x in _PRMT_MODES), None)
    ops = ins.operands
    (a, sa), (b, sb), (c, sc) = (m.read(f, op, "b32", ins) for op in ops[1:4])
    m.write(f, ops[0], prmt(a, b, c, mode), combine_undef([sa, sb, sc], m.n, 32), act, ins)
