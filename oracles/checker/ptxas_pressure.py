"""C7511 ("insufficient register resources for the wgmma pipeline"), as ptxas 13.0.88 reports it
for accumulators rewritten after a scale-d 0 wgmma (measured: tests/data/checker/c7511_*)."""
from __future__ import annotations

import functools
from functools import reduce

from .context import FnCtx
from .flow import solve_forward
from .ptxas_sites import _dead, _live_sites, _order, _scale_d_zero
from fuzzptx.ptx.ir import Imm

from .regs import declared_types, defs_uses, function_bits, is_wgmma, wgmma_regs


def register_pressure(ctx: FnCtx, ser: list) -> None:
    """Append ``(order, "C7511")`` to ``ser`` when a wgmma reads as accumulator a register that a
    non-wgmma instruction set afresh (not from its own value) after a scale-d 0 wgmma wrote it:
    ptxas cannot give the pipeline its registers (measured: c7511_*; fences, commits and waits
    between do not matter).

    A wgmma whose accumulator registers are all known zero (``mov r, 0`` on every path) counts
    as scale-d 0 whatever its scale-d says: ptxas then needs no C (measured: c7511_zero_c_*; an
    uninitialised register does not count, c7511_zero_c_uninitialised_*).  A reader counts by
    its scale-d alone (zeroed accumulators read after a scale-d 0 wgmma still serialise:
    c7511_constant_accumulators).

    The state is three register bitsets: written by a scale-d 0 wgmma (``w0``), rewritten since
    (``redef``) and known zero (``zero``, on every path); each live site is reduced once to the
    masks its step needs."""
    dead = _dead(ctx)
    wgmmas = [i for b in ctx.g.blocks for i in b.instrs if is_wgmma(i) and i.guard is None]
    zeroing = any(_zeroes(i) for b in ctx.g.blocks for i in b.instrs)
    if not any(_scale_d_zero(i) for i in wgmmas) and not (wgmmas and zeroing):
        return  # neither a scale-d 0 wgmma nor a zeroed accumulator: nothing starts what this tracks
    bits = function_bits(ctx).of
    relevant = ctx.relevant
    # per block, its live sites that matter: (site, wgmma?, register mask, unguarded, scale-d 0,
    # zeroing mov) -- a wgmma's accumulators, or another instruction's fresh definitions (not
    # from its own value)
    ops: dict[int, list] = {}
    for b in range(len(ctx.g.blocks)):
        row = []
        for site, ins in _live_sites(ctx, b):
            if site in dead:
                continue
            if is_wgmma(ins):
                row.append((site, True, bits(wgmma_regs(ins)[0]), ins.guard is None, _scale_d_zero(ins), False))
            else:
                d, u = defs_uses(ins)
                d = (d & relevant) - u  # rewriting a register from its own value keeps what it was (measured)
                if d:
                    row.append((site, False, bits(d), ins.guard is None, False, _zeroes(ins)))
        ops[b] = row

    def transfer(block: int, st: tuple) -> tuple:
        for op in ops[block]:
            st = _pressure_step(op, st)
        return st

    def join(states):
        return reduce(lambda x, y: (x[0] | y[0], x[1] | y[1], x[2] & y[2]), states)

    found = []
    for b, st in solve_forward(ctx.g, (0, 0, 0), transfer, join).items():
        for op in ops[b]:
            site, wg, m, _, sd0, _ = op
            if wg and not sd0 and m & st[1]:
                found.append(_order(site))
            st = _pressure_step(op, st)
    if found:
        ser.append((min(found), "C7511"))


def _zeroes(ins) -> bool:
    """``mov r, 0`` (integer zero or +0.0 bits), unguarded."""
    if ins.base != "mov" or ins.guard is not None or len(ins.operands) != 2 or not isinstance(ins.operands[1], Imm):
        return False
    v = ins.operands[1]
    return (isinstance(v.value, int) and v.value == 0) or v.text.lower() in ("0f00000000", "0d0000000000000000")


def _pressure_step(op: tuple, st: tuple) -> tuple:
    """``register_pressure``'s step over (``w0``, ``redef``, ``zero``) bitsets."""
    _, wg, m, unguarded, sd0, zeroing = op
    w0, redef, zero = st
    if wg:
        starts = unguarded and (sd0 or not (m & ~zero))  # no C read: scale-d 0, or C all zero
        return (w0 & ~m) | (m if starts else 0), redef & ~m, zero & ~m
    zero = (zero | m) if zeroing else (zero & ~m)
    if not (w0 | redef):
        return w0, redef, zero
    return w0 & ~m, (redef & ~m) | (m & (w0 | redef)), zero


# Small kernels draw C7512 from ptxas 13.0.88 once this many 32-bit registers are live at one point
# (measured: c7512_live_* -- 228 accumulator registers plus three 64-bit addresses compile, 230 plus
# the same do not), but real kernels with more live than this compile cleanly (20 of the 23 Triton
# kernels the parser reads: ptxas rematerialises and spills), so it only bounds ``peak_live_registers``'
# work; C7512 is a "may" (``allocator_may``).
C7512_LIVE = 236


@functools.lru_cache(maxsize=None)
def _weight(decl: str | None) -> int:
    """32-bit registers a declared register takes (``.f32`` 1, ``.b64`` 2, ``.v4.f32`` 4,
    ``.f16x2`` 1, predicates none)."""
    if decl is None:
        return 0
    parts = decl.strip(".").split(".")
    base = parts[-1]
    if base == "pred":
        return 0
    lanes = int(parts[0][1:]) if parts[0].startswith("v") and len(parts) > 1 else 1
    bits = int(base[1:].split("x")[0])
    return lanes * max(1, bits // 32)


def peak_live_registers(ctx: FnCtx) -> int:
    """The most 32-bit registers live at any point of the function (may-liveness over bitsets; a
    register read before any write -- an uninitialised accumulator -- is live from the entry)."""
    types = declared_types(ctx.fn)
    numbering = function_bits(ctx)
    bits = numbering.of

    blocks = ctx.g.blocks
    steps = []  # per block: [(kill, use)] in order
    gen, kill = [], []
    for blk in blocks:
        st = []
        for ins in blk.instrs:
            d, u = defs_uses(ins)
            st.append((bits(d) if ins.guard is None else 0, bits(u)))
        g = k = 0
        for dk, du in reversed(st):
            g = (g & ~dk) | du
            k |= dk
        steps.append(st)
        gen.append(g)
        kill.append(k)
    masks = {1: 0, 2: 0, 4: 0}  # registers by how many 32-bit registers each takes
    for name, b in numbering.bit.items():
        k = _weight(types.get(name))
        if k:
            masks[min(k, 4)] |= b
    if sum(k * m.bit_count() for k, m in masks.items()) < C7512_LIVE:
        return sum(k * m.bit_count() for k, m in masks.items())  # not enough registers in all

    def weight(live: int) -> int:
        return (live & masks[1]).bit_count() + 2 * (live & masks[2]).bit_count() + 4 * (live & masks[4]).bit_count()

    n = len(blocks)
    live_in, live_out = [0] * n, [0] * n
    changed = True
    while changed:
        changed = False
        for b in reversed(range(n)):
            out = 0
            for sx in ctx.g.succs[b]:
                out |= live_in[sx]
            inn = gen[b] | (out & ~kill[b])
            if out != live_out[b] or inn != live_in[b]:
                live_out[b], live_in[b] = out, inn
                changed = True
    peak = 0
    for b in range(n):
        live = live_out[b]
        peak = max(peak, weight(live))
        for dk, du in reversed(steps[b]):
            live &= ~dk
            if du & ~live:  # only a new live register can raise the peak
                live |= du
                peak = max(peak, weight(live))
    return peak


# ------------------------------------------------------------------ what the model cannot know

# The serialisation codes whose presence depends on ptxas's register allocator: C7511 (the
# wgmma pipeline's registers), C7512 (the function's), C7513 (a wgmma's A registers defined
# inside a stage: an allocator choice too, never seen in 800 campaign programs).  A rejection with
# "Register allocation failed" is the allocator's as well (``ptxas_compare.regalloc_failure``).
ALLOCATOR_CODES = ("C7511", "C7512", "C7513")
# With fewer 32-bit registers live at once than this ptxas never printed C7511 or C7512 (measured
# on 800 campaign programs, ``fuzzptx.engine.generate.draw_direct(100, block_seed(s, 0))`` for s in
# 1..8: the least peak with C7511 was 81, with C7512 103; declared registers do not separate them --
# C7512 came with as few as 286 declared, none with 1,000 -- and the margin is ours).
ALLOCATOR_MAY_FROM = 64


def allocator_may(ctx: FnCtx, certain: frozenset) -> frozenset:
    """The allocator codes ptxas may or may not print for this function: the model predicts
    them as "may", which never counts as a disagreement either way.

    "Certain" means measured, both ways.  Present: only ``register_pressure``'s rewrite after a
    scale-d 0 wgmma (C7511 in 69 of 69 campaign programs where it fired, and the c7511_*
    experiments): it is in ``certain`` and predicted exactly.  C7512 is never certain: a live-
    register count that separates the c7512_live_* experiments predicts it for 20 Triton kernels
    ptxas compiles cleanly.  Absent: a function with no wgmma; fewer than ``ALLOCATOR_MAY_FROM``
    registers live at once (C7511, C7512); no wgmma that takes A from registers (C7513).
    Anything else is "may"."""
    if not ctx.wgmmas:
        return frozenset()
    out = set()
    if {"C7511", "C7512"} - certain and peak_live_registers(ctx) >= ALLOCATOR_MAY_FROM:
        out |= {"C7511", "C7512"} - certain
    if "C7513" not in certain and any(wgmma_regs(i)[1] for i in ctx.wgmmas.values()):
        out.add("C7513")
    return frozenset(out)
