"""Wgmmas ptxas deletes before its GMMA passes: those whose accumulators nothing reads.

ptxas runs dead-code elimination first, so a wgmma whose results are never read -- overwritten by a
scale-d 0 wgmma, read only by arithmetic whose result is itself unused, or simply never touched
again -- is gone before any arrive or wait is placed (measured: ``tests/data/checker/dead_*``; with
no fence, the arrive for such a wgmma is reported at the next pipeline instruction that remains).

This is faint-variable analysis (liveness where a pure instruction's reads count only if one of
its results is live), iterated to a fixed point over the CFG.  A wgmma is pure: it reads its
accumulators unless scale-d is the immediate 0, and writes them unless guarded.
"""
from __future__ import annotations

from fuzzptx import isa
from fuzzptx.ptx.ir import Imm, Instr

from .regs import RegisterBits, defs_uses, is_wgmma, wgmma_regs
from .context import Site

# Instructions without side effects: dead when nothing reads what they define.
_PURE = frozenset({
    "mov", "add", "sub", "mul", "mad", "fma", "div", "rem", "abs", "neg", "min", "max", "and", "or", "xor",
    "not", "shl", "shr", "cvt", "cvta", "setp", "selp", "set", "slct", "ex2", "lg2", "rcp", "sqrt", "rsqrt",
    "sin", "cos", "tanh", "bfe", "bfi", "brev", "popc", "clz", "prmt", "mul24", "mad24", "sad", "testp",
    "copysign", "cnot", "lop3", "shf", "fns", "bfind", "dp4a", "dp2a", "wgmma",
})


def _scale_d_zero(ins: Instr) -> bool:
    form = isa.form_for(ins)
    if form is None:
        return False
    roles = [o.role for o in form.operands]
    k = roles.index("scale_d") if "scale_d" in roles else -1
    return 0 <= k < len(ins.operands) and isinstance(ins.operands[k], Imm) and ins.operands[k].value == 0


def _pure(ins: Instr) -> bool:
    if ins.base == "ld":
        return ".volatile" not in ins.opcode
    return ins.base in _PURE


class _Code:
    """Per-instruction masks over a register numbering (ints as bit sets: the analysis repeats)."""

    def __init__(self, g, returns: frozenset, bits: RegisterBits | None = None, per_register: bool = False):
        self.g = g
        self.mask = mask = (bits or RegisterBits()).of
        self.returns = mask(returns)
        # block -> [(k, kind, writes, kills, reads, tied)], kind: 0 effect, 1 pure, 2 wgmma, 3 ret/exit.
        # ``per_register``: a live wgmma's accumulator input i feeds its output i alone, so it is live
        # only where that output is (``tied``: the accumulators it reads); ptxas sees that when it
        # places a feed wait (measured: feed_of_dead_accumulator_*), not when it deletes code
        self.rows: list[list] = []
        for b in g.blocks:
            rows = []
            for k, ins in enumerate(b.instrs):
                if ins.base in ("ret", "exit"):
                    rows.append((k, 3, 0, 0, self.returns if ins.base == "ret" else 0, 0))
                    continue
                d, u = defs_uses(ins)
                tied = 0
                if is_wgmma(ins):
                    d = wgmma_regs(ins)[0]
                    if _scale_d_zero(ins):
                        u = u - d
                    elif per_register:
                        tied, u = mask(d & u), u - d
                    kind = 2
                else:
                    kind = 1 if _pure(ins) else 0
                w = mask(d)
                rows.append((k, kind, w, 0 if ins.guard is not None else w, mask(u), tied))
            self.rows.append(rows)


def dead_code(g, returns: frozenset = frozenset(), bits: RegisterBits | None = None,
              always: bool = False, per_register: bool = False) -> tuple[frozenset, frozenset]:
    """``(wgmmas, others)``: sites ``(block, pos)`` of the wgmmas and of the other pure instructions
    ptxas deletes as dead code (see the module doc).

    ``g`` is the checker's ``Graph``; ``returns`` are registers live at a ``ret`` (a ``.func``'s
    return values); ``bits``: a register numbering to share (``regs.function_bits``); without
    ``always`` a function with no wgmma.mma_async is not analysed (nothing of it is reported)."""

    if not always and not any(is_wgmma(i) for b in g.blocks for i in b.instrs):
        return frozenset(), frozenset()
    code = _Code(g, returns, bits, per_register)
    dead: set = set()  # (block, pos) of deleted wgmmas
    while True:
        new, others = _dead_after(code, dead)
        if not new:
            break
        dead |= new
    return frozenset(Site(*bk) for bk in dead), frozenset(Site(*bk) for bk in others)


def _out_of(g, n: int, b: int, ins_: list) -> int:
    """The union of ``ins_`` (a live-in bit set per block) over the successors of block ``b``."""
    m = 0
    for s in g.succs[b]:
        if s < n:
            m |= ins_[s]
    return m


def _dead_after(code: _Code, dead: set) -> tuple[set, list]:
    """(wgmmas newly dead, dead pure instructions) as (block, pos), by strong liveness to a fixed
    point (a pure instruction's reads count only if it writes a live register; a deleted wgmma
    does nothing)."""
    g = code.g
    n = len(g.blocks)
    per_register = any(row[5] for rows in code.rows for row in rows)
    # ``per_register``: a wgmma's accumulator input i is live where its output i is by plain liveness
    # (a later wgmma reading that output counts, whatever becomes of that wgmma's own output i:
    # measured, feed_through_two_wgmmas_*), so the plain liveness is solved first
    plain_in = _solve(code, dead, None) if per_register else None
    live_in = _solve(code, dead, plain_in)


    wgmmas: set = set()
    others: list = []
    for b in g.order:
        live = _out_of(g, n, b, live_in)
        plain = _out_of(g, n, b, plain_in) if plain_in is not None else None
        for k, kind, w, kill, reads, tied in reversed(code.rows[b]):
            after = live if plain is None else plain
            if plain is not None:
                plain = _step(plain, b, k, kind, w, kill, reads | tied, 0, dead, plain)
            if kind == 3:
                live = reads
                continue
            if kind == 0:
                live = (live & ~kill) | reads
            elif w & (after if kind == 2 else live) and (kind == 1 or (b, k) not in dead):
                live = (live & ~kill) | reads | (tied & after)
            elif kind == 1:
                if w:
                    others.append((b, k))
            elif (b, k) not in dead:
                wgmmas.add((b, k))
    return wgmmas, others


def _step(live: int, b: int, k: int, kind: int, w: int, kill: int, reads: int, tied: int, dead: set, after: int) -> int:
    """Liveness before one instruction, from ``live`` after it (``after``: the liveness a tied
    accumulator input follows)."""
    if kind == 3:
        return reads
    if kind == 0 or (w & (after if kind == 2 else live) and (kind == 1 or (b, k) not in dead)):
        return (live & ~kill) | reads | (tied & after)
    return live


def _solve(code: _Code, dead: set, plain_in: list | None) -> list:
    """Live-in per block to a fixed point: plain liveness (a wgmma's accumulator inputs read like any
    operand) when ``plain_in`` is None, else per-register liveness following the plain one."""
    g = code.g
    n = len(g.blocks)
    live_in = [0] * n


    def through(b: int, live: int) -> int:
        plain = _out_of(g, n, b, plain_in) if plain_in is not None else None
        for k, kind, w, kill, reads, tied in reversed(code.rows[b]):
            if plain is None:
                live = _step(live, b, k, kind, w, kill, reads | tied, 0, dead, live)
            else:
                after = plain
                plain = _step(plain, b, k, kind, w, kill, reads | tied, 0, dead, plain)
                live = _step(live, b, k, kind, w, kill, reads, tied, dead, after)
        return live

    changed, rounds = True, 0
    while changed and rounds < 100:
        changed, rounds = False, rounds + 1
        for b in reversed(g.order):
            new = through(b, _out_of(g, n, b, live_in))
            if new != live_in[b]:
                live_in[b], changed = new, True
    return live_in
