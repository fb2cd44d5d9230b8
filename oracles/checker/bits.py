"""Known bits of registers (a tristate abstraction), enough to decode matrix descriptors built at run time.

A value is ``(mask, value)``: the bits set in ``mask`` are known and equal those of ``value``.
In a kernel, a shared-memory symbol is its exact offset in the shared window (``fuzzptx.ptx.smem``,
the layout checked on the H100); in a ``.func``, whose caller decides, it is known to be zero
below its ``.align``.  ``and``/``or``/``shl``/``shr``
with constants, ``add`` (exact below the first unknown bit), ``mov``/``cvt``/``cvta`` propagate.
Only registers with one unguarded definition are evaluated (PTX from compilers is near-SSA).
"""
from __future__ import annotations

from fuzzptx.ptx.ir import Function, Imm, Instr, Module, Reg, Sym, VarDecl, walk
from fuzzptx.ptx.smem import shared_layout

from .regs import defs_uses

FULL = (1 << 64) - 1
UNKNOWN = (0, 0)


def _tz(x: int) -> int:
    return 64 if x == 0 else (x & -x).bit_length() - 1


def const(c: int) -> tuple[int, int]:
    return FULL, c & FULL


def add(a, b):
    """Bit-serial addition over known bits with a tristate carry (0, 1 or unknown)."""
    ma, va = a
    mb, vb = b
    mask = value = 0
    carry: int | None = 0
    for i in range(64):
        bit = 1 << i
        ka, kb = bool(ma & bit), bool(mb & bit)
        xa, xb = (va >> i) & 1, (vb >> i) & 1
        if ka and kb and carry is not None:
            t = xa + xb + carry
            mask |= bit
            value |= (t & 1) << i
            carry = t >> 1
        else:
            # result bit unknown; the carry stays known only if it cannot occur or must occur
            if (ka and xa == 0 and kb and xb == 0) or ((ka and xa == 0 or kb and xb == 0) and carry == 0):
                carry = 0
            elif ka and xa == 1 and kb and xb == 1:
                carry = 1
            else:
                carry = None
    return mask, value


def and_(a, b):
    ma, va = a
    mb, vb = b
    zero = (ma & ~va) | (mb & ~vb)  # known zero in either
    one = ma & va & mb & vb
    return (zero | one) & FULL, one


def or_(a, b):
    ma, va = a
    mb, vb = b
    one = (ma & va) | (mb & vb)
    zero = ma & ~va & mb & ~vb
    return (zero | one) & FULL, one & FULL


def shl(a, k: int):
    m, v = a
    return ((m << k) | ((1 << k) - 1)) & FULL, (v << k) & FULL


def shr(a, k: int, width: int = 64):
    m, v = a
    top = ((1 << k) - 1) << (width - k) if k else 0
    return ((m >> k) | top) & ((1 << width) - 1), v >> k


def zext32(a):
    m, v = a
    return (m & 0xFFFFFFFF) | (FULL ^ 0xFFFFFFFF), v & 0xFFFFFFFF


def _shared_symbols(module: Module, fn: Function) -> dict[str, tuple[int, int]]:
    """Known bits of each shared symbol's address (see the module doc)."""
    if fn.kind == "entry":
        return {name: const(off) for name, off in shared_layout(module, fn).offsets.items()}
    out = {}
    items = list(module.items) + [s for s in walk(fn.body or ()) if isinstance(s, VarDecl)]
    for v in items:
        if isinstance(v, VarDecl) and v.space.startswith(".shared"):
            out[v.name] = ((v.align or 1) - 1, 0)
    return out


def known_bits(module: Module, fn: Function, blocks, uses) -> dict:
    """(mask, value) of each register at each use: ``uses`` is ``[(block, pos, reg)]``; the result maps
    that triple to the known bits.  The definition is found by walking back over every path; a
    register redefined in place (``shr.u64 %rd1, %rd1, 4``) is followed correctly."""
    symbols = _shared_symbols(module, fn)
    memo: dict = {}

    def reaching(block: int, pos: int, reg: str):
        """The one unguarded definition of ``reg`` that reaches (block, pos) on every path, or
        None (several, a guarded one, or a path from the entry with none).  A loop that does
        not redefine it is no obstacle (found by a campaign: a descriptor read in a loop)."""
        found, seen, todo = set(), set(), [(block, pos)]
        while todo:
            b, k = todo.pop()
            instrs = blocks[b].instrs
            for j in range(k - 1, -1, -1):
                if reg in defs_uses(instrs[j])[0]:
                    found.add((b, j))
                    break
            else:
                preds = blocks[b].preds
                if not preds or len(seen) > 256:
                    return None  # the entry (undefined on that path), or too far to look
                for q in preds:
                    if q not in seen:
                        seen.add(q)
                        todo.append((q, len(blocks[q].instrs)))
            if len(found) > 1:
                return None
        if len(found) != 1:
            return None
        (b, j), = found
        return (b, j) if blocks[b].instrs[j].guard is None else None

    def val(op, block: int, pos: int, depth: int):
        if isinstance(op, Imm) and isinstance(op.value, int):
            return const(op.value)
        if isinstance(op, Sym) and op.name in symbols:
            return symbols[op.name]
        if isinstance(op, Reg) and depth < 24:
            where = reaching(block, pos, op.name)
            if where is None:
                return UNKNOWN
            if where not in memo:
                memo[where] = UNKNOWN
                memo[where] = fold(blocks[where[0]].instrs[where[1]], where[0], where[1], depth + 1)
            return memo[where]
        return UNKNOWN

    def fold(ins: Instr, block: int, pos: int, depth: int):
        base = ins.base
        args = [val(o, block, pos, depth) for o in ins.operands[1:]]
        if not args:
            return UNKNOWN
        mods = ins.modifiers
        if base in ("mov", "cvta") and len(args) == 1:
            return args[0]
        if base == "cvt" and len(args) == 1:
            a = zext32(args[0]) if any(m in ("u32", "b32", "s32") for m in mods[1:2]) else args[0]
            return zext32(a) if mods and mods[0] in ("u32", "b32", "s32") else a
        if len(args) != 2:
            return UNKNOWN
        a, b = args
        width = 32 if any(m.endswith("32") for m in mods) else 64
        res = UNKNOWN
        if base == "add":
            res = add(a, b)
        elif base == "and":
            res = and_(a, b)
        elif base == "or":
            res = or_(a, b)
        elif base in ("shl", "shr") and b[0] == FULL:
            k = b[1]
            if 0 <= k < width:
                res = shl(a, k) if base == "shl" else shr(a if width == 64 else zext32(a), k, 64)
        if width == 32:
            res = zext32(res)
        return res

    try:
        return {(b, k, r): val(Reg(r), b, k, 0) for b, k, r in uses}
    finally:  # the three closures refer to each other: unlinked, the CFG they hold dies at once
        reaching = val = fold = None  # noqa: F841 (not left for the cycle collector: bench_pool_gc.py)
