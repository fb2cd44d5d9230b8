"""C7511 ("insufficient register resources for the wgmma pipeline"), as ptxas 13.0.88 reports it
for accumulators rewritten after a scale-d 0 wgmma (measured: tests/data/checker/c7511_*)."""
from __future__ import annotations

from fuzzptx.ptx.ir import Instr

from .context import FnCtx, Site
from .ptxas_sites import _dead, _order, _reaching, _scale_d_zero
from .regs import defs_uses, is_wgmma, wgmma_regs


def register_pressure(ctx: FnCtx, ser: list) -> None:
    """Append ``(order, "C7511")`` to ``ser`` when a wgmma reads as accumulator a register that a
    non-wgmma instruction set afresh (not from its own value) after a scale-d 0 wgmma wrote it:
    ptxas cannot give the pipeline its registers (measured: c7511_*; fences, commits and waits
    between do not matter)."""
    dead = _dead(ctx)
    if not any(is_wgmma(i) and _scale_d_zero(i) and i.guard is None for b in ctx.g.blocks for i in b.instrs):
        return  # only a scale-d 0 wgmma starts what this tracks

    def step(ins: Instr, site: Site, st):
        if site in dead:
            return st
        if is_wgmma(ins):
            acc = wgmma_regs(ins)[0]
            return frozenset(x for x in st if x[0] not in acc) | (
                {(r, "w0") for r in acc} if _scale_d_zero(ins) and ins.guard is None else frozenset())
        if not st:
            return st
        d, u = defs_uses(ins)
        d = (d & ctx.relevant) - u  # rewriting a register from its own value keeps what it was (measured)
        if not d:
            return st
        kept = frozenset(x for x in st if x[0] not in d)
        return kept | {(r, "redef") for r in d if (r, "w0") in st or (r, "redef") in st}

    before = _reaching(ctx, frozenset(), step)
    for site in sorted(before, key=_order):
        ins = ctx.instr(site)
        if site not in dead and is_wgmma(ins) and not _scale_d_zero(ins) and any(
                (r, "redef") in before[site] for r in wgmma_regs(ins)[0]):
            ser.append((_order(site), "C7511"))
            return
