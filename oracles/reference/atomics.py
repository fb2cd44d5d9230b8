"""atom and red on global, shared and generic addresses (PTX ISA 9.7.13.5 "atom", 9.7.13.6 "red").

All active threads run one atomic at once.  The ISA orders atomics to one address in some
order it does not name, so:

* an address one thread touches: the read-modify-write, exactly;
* an address several threads touch: the final memory value is exact where the operation makes
  it independent of the order (integer add, and, or, xor, min, max), else UNDEF (inc, dec,
  exch, cas, float add: each order may leave another value); the value each thread's ``atom``
  returns depends on the order, so it is UNDEF.

Formulas: inc ``old >= b ? 0 : old + 1``; dec ``old == 0 || old > b ? b : old - 1``; cas
``old == b ? c : old``.  "Current implementation of atom.add.f32 on global memory flushes subnormal
inputs and results to sign-preserving zero; whereas atom.add.f32 on shared memory supports
subnormal inputs and results" (PTX ISA, atom); ``.noftz`` f16/bf16 forms and f64 never flush.
"""
from __future__ import annotations

import numpy as np

from fuzzptx.ptx.ir import Addr, Vec

import fuzzptx.oracles.reference.fp as fp
from .errors import BadAddress, Unsupported
from .mem_ops import _address, _space
from .ops import HALF, _add, _max, _min, nan_bits, the_type
from .values import TYPES, U64, Shadow, combine_undef, mask, sign_extend

_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")
_ORDER_FREE = ("add", "min", "max", "and", "or", "xor")  # integer results independent of the order


def _op_of(ins) -> str:
    op = next((x for x in ins.modifiers if x in _OPS), None)
    if op is None:
        raise Unsupported.at(ins, f"{ins.base} without an operation the reference knows")
    return op


def _float_apply(op: str, t: str, old: np.ndarray, b: np.ndarray, ftz: bool) -> np.ndarray:
    fmt = HALF.get(t, t)
    if t in HALF:
        lo = _float_apply(op, fmt, old & mask(16), b & mask(16), ftz)
        hi = _float_apply(op, fmt, old >> U64(16), b >> U64(16), ftz)
        return lo | (hi << U64(16))
    x, y = fp.decode(fmt, old), fp.decode(fmt, b)
    if ftz:
        x, y = fp.flush_subnormal(x, fmt), fp.flush_subnormal(y, fmt)
    with np.errstate(all="ignore"):
        fn = {"add": _add, "min": _min, "max": _max}[op]
        r = fn(x, y, fmt, "rn")
    if ftz:
        r = fp.flush_subnormal(r, fmt)
    return fp.encode(fmt, r)


def apply(op: str, t: str, old: np.ndarray, b: np.ndarray, c: np.ndarray | None, ftz: bool) -> np.ndarray:
    """The new memory value of one read-modify-write (bits of width ``TYPES[t]``)."""
    w, kind = TYPES[t]
    old, b = old & mask(w), b & mask(w)
    if kind in "fx":
        return _float_apply(op, t, old, b, ftz) & mask(w)
    if op == "add":
        return (old + b) & mask(w)
    if op in ("min", "max"):
        if kind == "s":
            x, y = sign_extend(old, w), sign_extend(b, w)
            r = np.minimum(x, y) if op == "min" else np.maximum(x, y)
            return r.view(np.uint64) & mask(w)
        return np.minimum(old, b) if op == "min" else np.maximum(old, b)
    if op == "and":
        return old & b
    if op == "or":
        return old | b
    if op == "xor":
        return old ^ b
    if op == "exch":
        return b
    if op == "cas":
        return np.where(old == b, c & mask(w), old)
    if op == "inc":
        return np.where(old >= b, U64(0), (old + U64(1)) & mask(w))
    if op == "dec":
        return np.where((old == U64(0)) | (old > b), b, (old - U64(1)) & mask(w))
    raise ValueError(op)


def h_atom(m, f, ins, act):
    _atomic(m, f, ins, act, returns=True)


def h_red(m, f, ins, act):
    _atomic(m, f, ins, act, returns=False)


def _atomic(m, f, ins, act, returns: bool):
    op = _op_of(ins)
    t = the_type(ins)
    if any(x in ins.modifiers for x in ("v2", "v4", "v8")):
        raise Unsupported.at(ins, f"vector {ins.base} is not modelled")
    w, kind = TYPES[t]
    if w == 128:
        raise Unsupported.at(ins, f"{ins.base}.{op}.b128 is not modelled")
    ops = ins.operands
    a = ops[1] if returns else ops[0]
    if not isinstance(a, Addr) or isinstance(ops[-1], Vec):
        raise Unsupported.at(ins, f"{ins.base} operands not understood")
    b_op = ops[2] if returns else ops[1]
    b, sb = m.read(f, b_op, t, ins)
    c, sc = (m.read(f, ops[3], t, ins) if op == "cas" else (None, None))
    idx, addr, pvar = _address(m, f, ins, a, act)
    if pvar is not None:
        raise Unsupported.at(ins, f"{ins.base} on a .param variable")
    space = _space(ins)
    if space in ("param", "local"):
        raise BadAddress.at(ins, f"{ins.base} on .{space} memory")
    eb = w // 8
    n = m.n
    f32_add = t == "f32" and op == "add"
    f64_add = t == "f64" and op == "add"  # a NaN sum: payload left free, as add.f64's (ops.nan_payload_free)
    olds = np.zeros(n, np.uint64)
    old_bad = np.zeros(n, bool)
    if not idx.size:
        return
    for region, pos, off in m.mem.resolve(space, addr, eb, ins, "atomic", idx):
        if not region.writable:
            raise BadAddress.at(ins, f"{ins.base} on read-only {region.space} memory ({region.name})")
        rows = idx[pos]
        ftz = f32_add and region.space == "global"
        offs = off.astype(np.int64)
        uniq, first, counts = np.unique(offs, return_index=True, return_counts=True)
        (cur, csh), = region.read(uniq, eb, 1)
        cur_bad = csh.nonexact() if csh is not None else np.zeros(uniq.size, bool)
        new = cur.copy()
        new_bad = cur_bad.copy()
        where = np.searchsorted(uniq, offs)
        # the operands of the threads at each address, in thread order
        order = np.argsort(where, kind="stable")
        bb, cc = b[rows], (c[rows] if c is not None else None)
        bbad = (sb.nonexact()[rows] if sb is not None else np.zeros(rows.size, bool))
        if sc is not None:
            bbad |= sc.nonexact()[rows]
        ret = np.zeros(rows.size, np.uint64)
        ret_bad = np.zeros(rows.size, bool)
        for k in order:
            u = where[k]
            ret[k] = new[u]
            ret_bad[k] = new_bad[u] or counts[u] > 1
            new[u] = apply(op, t, new[u:u + 1], bb[k:k + 1], None if cc is None else cc[k:k + 1], ftz)[0]
            new_bad[u] = new_bad[u] or bbad[k] or bool(f64_add and nan_bits(new[u:u + 1], t)[0])
        multi = counts > 1
        if not (op in _ORDER_FREE and kind in "subp"):
            new_bad |= multi
        sh = Shadow.undef(uniq.size, w, new_bad) if new_bad.any() else None
        region.write(uniq, eb, [(new, sh)], writers=m.tid32[rows[first]] if region.dirty is not None else None)
        olds[rows] = ret
        old_bad[rows] = ret_bad
    if returns:
        sh = combine_undef([sb, sc], n, w)
        if old_bad.any():
            bad = old_bad | (sh.nonexact() if sh is not None else False)
            sh = Shadow.undef(n, w, bad)
        m.write(f, ops[0], olds, sh, act, ins)

