"""The ptxas model's pipeline pass: one forward data-flow pass over a function that runs the step
rules (``ptxas_rules.STEP_RULES``) at each instruction ptxas keeps, joins paths where they meet
(``ptxas_state.join``) and gathers what the rules record into an ``Out``.

Every block's transfer records into a record of its own; the report then takes each block's record
from the solver's last transfer of that block (the one from its final in-state) instead of stepping
the block again, which was ~40% of the model."""
from __future__ import annotations

from .context import FnCtx, Site
from .flow import BlockRecords, solve_forward
from .ptxas_rules import TRACK, At, Walk, in_place, rules_for, self_move
from .ptxas_sites import _line, _live_sites, dead_plain
from .ptxas_state import ENTRY_STATE, PS, Out, join
from .regs import defs_uses, is_wait


def step(w: Walk, ins, site: Site, st: PS, guarded: bool = False) -> PS:
    """The state after one instruction on one path: the step rules in order (``rules_for``), then ``TRACK``."""
    d, u = defs_uses(ins)
    rel = w.ctx.relevant
    at = At(ins, site, _line(ins), guarded, d, u, d & rel if not rel.isdisjoint(d) else None)
    new = st
    for rule in rules_for(ins.base):
        new, at, done = rule.apply(w, at, new)
        if done:
            break
    return TRACK.apply(w, at, st, new)


def instruction(w: Walk, ins, site: Site, st: PS) -> PS:
    """One instruction: a self-move is nothing to ptxas (measured: self_move_*); a guarded one is
    the join of its two outcomes, unless ptxas put its wait before it (both paths waited)."""
    if self_move(ins):
        return st
    # ``last`` matters only where paths meet: ``transfer`` sets it at each block's end, and a
    # guarded instruction (a join of its two outcomes) sets it here
    if ins.guard is None or ins.base in ("bra", "brx"):
        return step(w, ins, site, st)
    st = st._replace(last=_line(ins), last_branch=False)
    after = step(w, ins, site, st, guarded=True)._replace(last=_line(ins))
    if st.fl and not after.fl and not is_wait(ins):
        return after
    div = w.ctx.dep_divergent(("guard", ins.guard.reg.name, ins.guard.negated), ptxas=True)
    return join([after, st], div, False, _line(ins))._replace(last=_line(ins), last_branch=False)


def after_busy(st: PS) -> PS:
    """Work that stays after paths with and without committed groups met: ptxas no longer waits
    at the branch that split them but at the exit (measured: split_then_store, split_then_bar,
    split_then_self_move, split_then_dead_in_place_*; other dead code between does not count:
    split_then_dead_mov/add/load), nor at a call before the split (measured: call_split_then_store)."""
    return st._replace(split=frozenset(), call_at=None) if st.split and st.raw else st


def run(ctx: FnCtx, result: Out) -> None:
    """Run the pass over ``ctx``'s function, recording into ``result``."""
    w = Walk(ctx, result)
    pos = w.pos
    div_joins = {ctx.g.ipdom.get(b.index) for b in ctx.g.blocks
                 if len(b.succs) > 1 and any(ctx.dep_divergent((b.index, s), ptxas=True) for s in b.succs)}
    busy = busy_positions(ctx)
    records = BlockRecords(key=lambda b: (b in w.forced, b in w.hoisted))  # (whether a wait was hoisted to its end)

    def transfer(block: int, st_in):
        st = st_in
        if block != ctx.g.order[0]:
            st = st._replace(here=frozenset())  # a new block: ptxas folds no constant from before
        w.out = rec = Out()
        later = busy.get(block, ())  # positions of work that stays, in order
        k = 0
        try:
            for site, ins in _live_sites(ctx, block):
                while k < len(later) and later[k] < site.pos:
                    st, k = after_busy(st), k + 1
                st = instruction(w, ins, site, st)
            if k < len(later):
                st = after_busy(st)
        finally:
            w.out = result
        if block in w.forced and st.fl:  # a wait ptxas hoisted to the end of this block (rules.FeedRead)
            st = st._replace(fl=frozenset(), raw=0, split=frozenset(), open=False, call_at=None)
        if block in w.hoisted and (st.fl or st.raw) and st.call_at is None:  # (rules.Call)
            st = st._replace(call_at=w.hoisted[block])
        records.keep(block, st_in, rec)
        instrs = ctx.g.blocks[block].instrs
        if instrs:
            st = st._replace(last=_line(instrs[-1]), last_branch=instrs[-1].base in ("bra", "brx"))
        return st

    def join_at(block: int, states):
        header = any(p in pos and pos[p] >= pos.get(block, 0) for p in ctx.g.preds[block])
        first = ctx.g.blocks[block].instrs[0] if ctx.g.blocks[block].instrs else None
        return join(states, block in div_joins, header, _line(first), branch=True)

    ins = {}
    for _ in range(3):  # re-solve while reads force new hoisted waits
        seen = len(w.forced) + len(w.hoisted)
        # a register nothing has written yet is any constant ptxas likes (measured: read_uncommitted_*)
        ins = solve_forward(ctx.g, ENTRY_STATE._replace(konst=w.accs, here=w.accs, unset=w.read_accs), transfer,
                            lambda xs: join(xs, False, False), join_at=join_at)
        if len(w.forced) + len(w.hoisted) == seen:
            break
    for _, rec in records.final(ctx.g, ins, transfer):  # (steps again where a wait was hoisted after its last solve)
        result.merge(rec)
    for line, before in w.forced.values():
        result.wait_feed[line] = result.wait_feed.get(line, False) or before


_CONTROL = frozenset({"bra", "brx", "ret", "exit", "trap", "call"})


def busy_positions(ctx: FnCtx) -> dict:
    """block -> positions of the instructions ptxas keeps that are not control flow or pipeline
    instructions: a store, a barrier, live arithmetic -- and an update in place (``add r, r, 1``,
    a self-move ``mov r, r``), which ptxas keeps at that point however dead (measured:
    split_then_*)."""
    dead = dead_plain(ctx)
    out: dict = {}
    for b in ctx.g.order:
        row = [k for k, ins in enumerate(ctx.g.blocks[b].instrs)
               if ins.base not in _CONTROL and ins.base != "wgmma"
               and (Site(b, k) not in dead or in_place(ins))]
        if row:
            out[b] = row
    return out
