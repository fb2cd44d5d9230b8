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


# ------------------------------------------------------------------ the accumulator footprint

# C7512 ("insufficient register resources for the function") is decided by the 32-bit registers all
# the function's wgmma accumulators take together (each register once), measured on 1,000 campaign
# programs (``support.agreement``'s seeds 1-10), 2,000 strategies programs and the 56 real kernels of
# tests/data, ptxas 13.0.88: below 224 never (real kernels reach 199); from 600 always, unless
# another serialisation reason is printed (C7511: 1 of 27 printed C7511 instead); between, either way
# (25 of 38 with C7512), as in the probes (c7512_*: two m64n248 f32 sections, 248 registers, C7512;
# m64n256 + m64n248 clean; benchmarks/probe_c7512.py: not monotone, order-dependent).
C7512_MAY_FROM = 224
C7512_FROM = 600


def accumulator_footprint(ctx: FnCtx) -> int:
    """32-bit registers the function's wgmma accumulators take together (a register once)."""
    types = declared_types(ctx.fn)
    regs = frozenset().union(*(wgmma_regs(w)[0] for w in ctx.wgmmas.values())) if ctx.wgmmas else frozenset()
    return sum(_weight(types.get(r)) for r in regs)


def register_budget(ctx: FnCtx, ser: list, divergent: bool) -> None:
    """Append ``(order, "C7512")`` to ``ser`` when the accumulators take ``C7512_FROM`` registers or
    more and no other serialisation reason (or divergence code) is predicted: ptxas prints one."""
    if ser or divergent or not ctx.wgmmas or accumulator_footprint(ctx) < C7512_FROM:
        return
    ser.append((min(_order(s) for s in ctx.wgmmas), "C7512"))


# ------------------------------------------------------------------ what the model cannot know

# The serialisation codes whose presence depends on ptxas's register allocator: C7511 (the
# wgmma pipeline's registers), C7512 (the function's), C7513 (a wgmma's A registers defined
# inside a stage).
ALLOCATOR_CODES = ("C7511", "C7512", "C7513")
_SERIALISING = frozenset({"C7509", "C7510", "C7511", "C7512", "C7513", "C7514", "C7515", "C7516", "C7518", "C7520"})


def allocator_may(ctx: FnCtx, certain: frozenset, a_in_flight: bool) -> frozenset:
    """The allocator codes ptxas may or may not print for this function: the model predicts
    them as "may", counted apart from agreement.  Everywhere else it says yes or no.

    C7511 and C7512 where the accumulator footprint is between ``C7512_MAY_FROM`` and ``C7512_FROM``
    (neither when C7511 is certain: ``register_pressure``, or C7512 from ``C7512_FROM``); C7512 from
    ``C7512_FROM`` too when another serialisation reason is predicted (which one ptxas prints is not
    measured).  C7513 where a plain instruction in a loop writes an A register of a wgmma in flight
    that a wgmma reads around the loop (``a_in_flight``, ``ptxas_rules.OperandRewrite``; measured:
    operand_write_in_flight_a_zero_loop prints it, the straight-line probes do not); never otherwise."""
    if not ctx.wgmmas:
        return frozenset()
    out = set()
    foot = accumulator_footprint(ctx)
    if not certain & {"C7511", "C7512"}:
        if C7512_MAY_FROM <= foot < C7512_FROM:
            out |= {"C7511", "C7512"}
        elif foot >= C7512_FROM and certain & _SERIALISING:
            out.add("C7512")
    if a_in_flight and "C7513" not in certain:
        out.add("C7513")
    return frozenset(out)
