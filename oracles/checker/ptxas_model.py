"""ptxas model: predict what ptxas 13.0.88 prints for a module, learned by experiment.

Every rule is pinned by a recorded experiment in ``tests/data/checker/*.ptx`` (the ``// PTXAS:``
header says what real ptxas printed; ``tests/test_checker_ptxas.py`` re-runs them) and scored on
generated programs (``reports/checker_vs_ptxas.md``).  All GMMA messages are ``info`` severity.

Errors (assembly aborted, no C-codes): ISA violations at the instruction's line; ``.version`` too
old for ``.target`` at the ``.target`` line; a call to an undefined extern ``.func`` (no line).
Accepted although the spec disagrees: a missing ``.aligned``; ``wait_group N`` with N > 7.

``C7519`` "warpgroup.arrive is injected in around line L" -- L is the line of:
  a wgmma no wgmma.fence reaches on some path; the first wgmma of a stage whose accumulators a
  non-wgmma instruction wrote since the fence (writes of 0 excepted: ptxas uses RZ) or whose
  A registers were rewritten after a wgmma of the stage read them; a wgmma separated from the
  previous stage piece (fence or wgmma) by a branch or guard; a commit separated so from the
  wgmmas it commits (or, with none, from its fence); a commit with no fence before it; a commit
  after an accumulator of its stage was rewritten, or after a direct call inside the stage.
``C7517`` "warpgroup.wait is injected in around line L" -- L is the line of:
  a non-wgmma read of an accumulator no wait_group has passed yet (a store paired with the
  next store to the adjacent address reports the second; a read right after a loop the
  wgmma is in reports the loop's exit branch); a guarded read (always injected, never
  serialised); a ``ret`` reached with a committed group not waited for; where paths with and
  without open groups meet before a ``ret``, the branch (or guarded wait) that split them.
  ptxas treats ``wait_group`` and ``wgmma.fence`` as committing still-uncommitted wgmmas.
Serialisation (no line, one per function): ``C7514`` a read after a wait_group that does not
  cover it, or of a wgmma carried around a loop (but under a divergent branch ptxas waits at
  the branch instead: C7517 there); ``C7515`` a plain write of an accumulator in flight;
  ``C7510`` an indirect call in a function with wgmma (``C7509`` instead when a direct call to a
  function whose address is taken comes before it); ``C7520``/``C7518`` paths whose stage
  state differs meeting at the reconvergence point of a branch ptxas thinks divergent (or a
  guard), when a later wgmma/commit (C7520) or accumulator read (C7518) depends on it; an
  indirect call inside a stage (C7520).  After C7520/C7518 ptxas prints nothing else.
Learned later (tests/data/checker/: no_wait_*, call_*, dead_wgmma*, acc_zero_*, later_acc_*): a
  store through a register-sum address reports its wait at the first store of a pair; after a call
  (direct or indirect) with groups in flight a later wait (also the one at ``ret``) is reported at
  the call; a read in a block post-dominating the last commit's block is waited for at the end of
  that block; a non-wgmma read of a value a later wgmma takes as accumulator (not a constant
  folded in the block that set it, since its last call) while a group is in flight gets a wait
  there, even after a direct call; a body falling off its end returns at "line 0"; wgmmas
  overwritten by an adjacent scale-d 0 wgmma on the same accumulators are dropped; an accumulator rewrite in a stage puts the
  arrive at the next wgmma or commit; zeroing one in flight counts only if a wgmma follows in the
  stage; C7510 outranks the other serialisation reasons and drops rewrite arrives and exit waits.
Learned in issue 6 (tests/data/checker/: experiments_dce.py's files): ptxas deletes dead code
  first (ptxas_dce): a wgmma nothing reads draws no arrive (the arrive for an unfenced one goes to
  the next pipeline instruction) and holds no accumulators, but still makes divergent paths differ;
  a plain instruction whose result nothing reads is gone.  A scale-d 0 wgmma only writes its
  accumulators (ptxas renames a rewrite: no C7515, no arrive); a rewrite between two wgmmas is free
  only when they are the same instruction; a fresh rewrite of a scale-d 0 wgmma's accumulator that
  a later wgmma reads is C7511.  A fence heals differing group counts of a divergent merge.  Beside
  C7520 ptxas keeps the arrives at uniform sites it passed before finding the divergence (the whole
  loop, with a bra.uni back branch); C7510 outranks C7518 but not C7520.  Groups with no wgmma
  make feed waits and call-placed waits too; after an indirect call only feed waits in loops are
  reported.  A read right after a loop whose wait_group 0 was skipped on a path waits at the loop's
  back branch (no C7514).
Learned 2026-11-26 (experiments_exit.py): a ``bra`` to a block holding nothing but the exit (dead code
  aside; not the next block) is the exit itself: the wait is reported at the branch (a guarded one
  waits there for both paths); a label after the last instruction lets the body fall off its end.
  A call right after a loop with a group in flight reports its later wait at the loop's exit
  branch.  An integer update in place that leaves the register as it is (``xor r, r, 0``, ``and r,
  r, -1``, ``max r, r, r``) is a self-move; a feed read waits only where the output it feeds is
  live (accumulator i of a wgmma feeds output i alone: ptxas_dce's ``per_register``).
Learned 2026-11-26 (experiments_entry.py, a campaign finding): feed-read waits happen only while no
  wait_group has been passed since the entry, where ptxas does not know what is in flight: a lone
  commit there makes a group, and a never-written accumulator counts as read; after a wait_group
  no feed read waits (a real group in flight too) and a never-written accumulator is a constant.
  A call inside a loop entered with groups in flight reports its later wait at the last
  instruction ptxas keeps in the last commit's block (call_in_loop_*).
Learned 2026-11-27 (experiments_inflight.py, experiments_bra_uni.py; campaign findings): a plain write
  into an accumulator in flight is judged by where its value is read (``ptxas_sites.value_uses``):
  reads all near (same block, unguarded, nothing wgmma-family, ``bar`` or ``call`` between; a wgmma
  taking it does not count) -- ptxas renames it, nothing; a far plain read -- C7515.  Its arrive:
  at the next wgmma if the value is read past it, at the next commit if a far read precedes it or
  (not for a move) the value is read past it; none with a fence next (``_arrive_for_write``).  A
  read of a rewritten register reads the new value (no wait; ``PS.over``).  A rewritten A register
  or scale-d 0 accumulator arrives only where a later wgmma reads it (``_arrive_for_operand_write``);
  every rewrite arrive stays beside C7510.  A read whose wait a uniform branch or guard skipped is
  C7514 even after a divergent pipeline instruction; a wait on a uniform path clears a wgmma's
  divergent in-flight state unless it was issued on one path only (``PS.div_issued``).
ptxas's divergence is not the spec's: anything from %tid.*/%laneid (even %tid.x >> 7) is
divergent, %warpid/%clock/shfl broadcasts are uniform, ``bra.uni`` is trusted -- save over a fence,
wgmma or commit in a function with a guarded memory access or barrier it keeps, or a dead guarded
wgmma (``_uni_distrusted``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import NamedTuple

from fuzzptx.perf import per_object
from fuzzptx.ptx.ir import Imm, Instr, Label, Module, Reg, SrcLoc, Sym

from .context import FnCtx, Site, build_ctx, defined_names
from .findings import Finding, PredictedDiag, PredictedDiagnostics
from .flow import BlockRecords, idoms, solve_forward
from .ptxas_errors import SYSTEM_FUNCTIONS, _callee, predict_errors
from .ptxas_pressure import allocator_may, register_pressure
from .ptxas_sites import (_after_loop_line, arrives_before_divergence, dead_for_feeds, dead_plain, exit_jumps, _dead, _divergent_branch_line, _hoisted_line,
                          _in_loop, _line, _live_sites, _loop_exit_line, _next_pipe_is_wgmma, _order, _order_pos,
                          _reaching, _same_wgmma, _scale_d_zero, _store_pair_line, _wgmma_next_to, _writes_zero,
                          value_uses)
from .regs import defs_uses, is_commit, is_fence, is_wait, is_wgmma, wait_n, wgmma_regs
from .uniformity import analyse_uniformity

SER_PREFIX = "Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
SER_REASONS = {
    "C7509": "the presence of Extern calls in the function '{f}'",
    "C7510": "wgmma pipeline crossing function boundary at a function call in the function '{f}'",
    "C7511": "insufficient register resources for the wgmma pipeline in the function '{f}'",
    "C7512": "insufficient register resources for the function '{f}'",
    "C7513": "non wgmma instructions defining input registers of a wgmma between start and end of the pipeline stage in the function '{f}'",
    "C7514": "non wgmma instructions reading accumulator registers of  a wgmma between start and end of the pipeline stage in the function '{f}'",
    "C7515": "non wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage in the function '{f}'",
    "C7516": "ill formed pipeline stage in the function '{f}'",
    "C7518": "program dependence on compiler-inserted WG.DP in divergent path in the function '{f}'",
    "C7520": "program dependence on compiler-inserted WG.AR in divergent path in the function '{f}'",
}
ADVISORY = {
    "C7517": "warpgroup.wait is injected in around line {line} by compiler to allow use of registers defined by GMMA in function '{f}'",
    "C7519": "warpgroup.arrive is injected in around line {line} by compiler to allow use of registers in GMMA in function '{f}'",
}
# ------------------------------------------------------------------ pipeline model


@dataclass
class _Out:
    arrive: dict = field(default_factory=dict)  # line -> why (C7519): "stage", or "flag" (see _pipeline)
    arrive_at: dict = field(default_factory=dict)  # line -> the site of that arrive
    wait: dict = field(default_factory=dict)  # line -> True (C7517)
    wait_ser: dict = field(default_factory=dict)  # C7517 lines if the function is serialised
    wait_pre_ind: dict = field(default_factory=dict)  # exit waits for groups committed before an indirect call
    wait_clear: dict = field(default_factory=dict)  # exit waits some path with groups in flight needs that
    # passed no indirect call (PS.clean_fl): ptxas keeps them beside C7510
    wait_at_use: dict = field(default_factory=dict)  # C7517 at reads of accumulators in flight
    wait_feed: dict = field(default_factory=dict)  # C7517 at reads of future accumulator inputs:
    # line -> whether ptxas still reports it when an indirect call serialises the function
    wait_feed_at: dict = field(default_factory=dict)  # line -> the site of that feed read
    ser: list = field(default_factory=list)  # [(order, code)]
    divergent: list = field(default_factory=list)  # [(order, code)]
    div_wait: list = field(default_factory=list)  # [(order, "C7518")] from a read after a divergent
    # pipeline instruction (PS.div_pipe): reported only when nothing in ``divergent`` is

    def merge(self, other: "_Out") -> None:
        """Add what a later piece of the pass recorded, as if it had written here directly: first
        reason wins, a feed wait is shown if any write showed it, lists keep their order."""
        for mine, theirs in ((self.arrive, other.arrive), (self.arrive_at, other.arrive_at),
                             (self.wait_feed_at, other.wait_feed_at)):
            for k, v in theirs.items():
                mine.setdefault(k, v)
        for mine, theirs in ((self.wait, other.wait), (self.wait_ser, other.wait_ser),
                             (self.wait_pre_ind, other.wait_pre_ind), (self.wait_at_use, other.wait_at_use),
                             (self.wait_clear, other.wait_clear)):
            mine.update(theirs)
        for k, v in other.wait_feed.items():
            self.wait_feed[k] = self.wait_feed.get(k, False) or v
        self.ser += other.ser
        self.divergent += other.divergent
        self.div_wait += other.div_wait


def _structure(ctx: FnCtx, out: _Out) -> None:
    """C7519 at a wgmma or commit separated by a branch or guard from the stage piece (fence,
    wgmma or commit) before it on some path: ptxas re-arrives there (measured)."""

    dead = _dead(ctx)

    def step(ins: Instr, site: Site, st):
        if site in dead:
            return st
        if is_fence(ins) or is_wgmma(ins) or is_commit(ins):
            return st | {site} if ins.guard is not None else frozenset({site})
        return st

    last = _reaching(ctx, frozenset({"entry"}), step)
    for site in sorted(last, key=_order):
        ins = ctx.instr(site)
        if site in dead or not (is_wgmma(ins) or is_commit(ins)):
            continue
        mine = ctx.ctrl_deps(site)
        if any(o != "entry" and ctx.ctrl_deps(o) != mine for o in last[site]):
            out.arrive[_line(ins)] = True
            out.arrive_at.setdefault(_line(ins), site)


def _implicit_commit(fl):
    """ptxas treats a wait_group as committing the wgmmas still uncommitted (measured)."""
    if not any(d < 0 for _, d in fl):
        return fl, False
    return frozenset((s, 0 if d < 0 else min(d + 1, 8)) for s, d in fl), True


class PS(NamedTuple):
    """What ptxas tracks along a path (as far as its diagnostics show)."""

    armed: bool  # a wgmma.fence (or an injected arrive) opened the stage on every path
    dirty: frozenset  # wgmma registers defined by non-wgmma instructions since the fence
    stage: frozenset  # registers the stage's wgmmas used since the fence
    arm_div: bool  # paths armed differently met at a divergent reconvergence point
    fl: frozenset  # in flight: {(wgmma site, depth)}, depth -1 = uncommitted
    waited: frozenset  # wgmmas some wait_group has passed
    flag: bool  # an accumulator of the open stage was redefined: its commit needs an arrive
    stage_acc: frozenset  # accumulators of wgmmas since the last commit
    raw: int  # committed groups not waited for
    split: frozenset  # lines ending paths that met, with groups open, paths with none
    last: int | None  # line of the last instruction on this path (None after a merge)
    last_branch: bool  # ... and that instruction is a branch (ptxas puts a wait on its edge)
    fences: frozenset  # fences (sites, or "entry") that opened the stage on some path
    open: bool  # a fence or wgmma since the last injected wait: a commit makes a group
    stage_div: bool  # uncommitted sets differed at a divergent reconvergence point
    raw_div: bool  # open group counts differed there (matters to the next wgmma or commit)
    wait_div: frozenset  # wgmmas in flight on some paths only, merged divergently
    call_at: int | None = None  # first call since the last wgmma/commit while groups were in flight
    pblock: int | None = None  # block of the last fence/wgmma/commit (None where paths disagree)
    vals: frozenset = frozenset()  # accumulator registers holding, on some path, a value computed by a
    # non-wgmma instruction that ptxas cannot fold to a constant
    konst: frozenset = frozenset()  # accumulator registers holding a constant on every path
    here: frozenset = frozenset()  # ... of those, set in this block since its last call: ptxas folds a
    # feed read of a constant only then (measured: feed_read_of_zero_after_*)
    cin: frozenset = frozenset()  # accumulators that entered their last wgmma as constants
    tied: frozenset = frozenset()  # accumulators of wgmmas since the last commit that read them (scale-d
    # not 0): ptxas cannot rename those, so rewriting one in flight costs an arrive or C7515
    lagged: frozenset = frozenset()  # wgmmas a wait_group passed while leaving them in flight
    ghost: frozenset = frozenset()  # uncommitted dead wgmmas (ptxas_dce): no arrive, no accumulators,
    # but paths that differ in them still meet divergently (measured: dead_wgmma_div_*)
    div_pipe: bool = False  # a fence, wgmma, commit or wait ran under divergent control on some path
    # before here: a wait ptxas would inject for a read serialises the function instead (C7518;
    # measured: div_pipe_*), however uniform the stages between
    # At the entry ptxas does not know what is in flight (a wait_group tells it): only then does a
    # feed read wait, a lone commit makes a group for it, and a never-written accumulator counts as
    # read; after a wait_group such a register is a constant to ptxas, in any block (measured:
    # experiments_entry.py)
    entry_unknown: bool = True  # no wait_group since the entry (on some path)
    unknown_flying: bool = False  # a group committed from that unknown state, no wait_group since
    unset: frozenset = frozenset()  # accumulators no instruction has written yet (on some path)
    opaque: bool = False  # every path here passed an indirect (opaque) call
    clean_fl: bool = False  # some path here passed none and has groups in flight
    zdirty: frozenset = frozenset()  # accumulators zeroed since the fence (a ``mov`` of 0: see the wgmma step)
    unknown_waited: bool = False  # a wait_group passed that group on some path: like a wgmma some wait
    # passed (``waited``), it makes no feed wait after the paths meet (measured:
    # empty_group_wait_skipped_in_loop_then_feed)
    div_issued: frozenset = frozenset()  # of ``wait_div``, the wgmmas issued on one path only (no wait passed
    # them on the other): a later wait on a uniform path does not clear them
    over: frozenset = frozenset()  # accumulators an unguarded plain instruction rewrote since their last
    # wgmma, on every path: a read of one reads that value, not the wgmma's (no wait)


ENTRY_STATE = PS(False, frozenset(), frozenset(), False, frozenset(), frozenset(), False, frozenset(), 0,
                 frozenset(), None, False, frozenset({"entry"}), False, False, False, frozenset())


def _join(states: list, divergent: bool, loop_header: bool, at: int | None = None, branch: bool = False) -> PS:
    """Merge path states; ``at`` is the line a wait injected at the merge would get."""
    a = states[0]
    for b in states[1:]:
        fa, fb = {s for s, _ in a.fl}, {s for s, _ in b.fl}
        ua, ub = {s for s, d in a.fl if d < 0} | a.ghost, {s for s, d in b.fl if d < 0} | b.ghost
        split = a.split | b.split
        pend_a, pend_b = bool(a.raw or a.fl), bool(b.raw or b.fl)
        if not loop_header and pend_a != pend_b:
            split |= {x.last if x.last_branch or at is None else at for x in (a, b)
                      if (x.raw or x.fl) and (x.last is not None or at is not None)}
        if loop_header and any(x.call_at and not x.split and (x.raw or x.fl) for x in (a, b)):
            split = frozenset()  # a call in the loop comes after the split: the wait goes there
        a = PS(
            armed=a.armed and b.armed,
            dirty=a.dirty | b.dirty,
            stage=a.stage | b.stage,
            arm_div=a.arm_div or b.arm_div or (divergent and a.fences != b.fences),
            fl=_norm(a.fl | b.fl),
            # a wgmma in flight on one path only is not waited-for on the other: ptxas lets a read
            # after the merge wait there (no C7514; measured: extra_stage_on_a_path_then_read)
            waited=a.waited | b.waited,
            flag=a.flag or b.flag,
            stage_acc=a.stage_acc | b.stage_acc,
            raw=max(a.raw, b.raw),
            split=split,
            last=None,
            last_branch=False,
            fences=a.fences | b.fences,
            open=a.open or b.open,
            stage_div=a.stage_div or b.stage_div or (divergent and ua != ub),
            # at a branch's reconvergence, groups with no wgmma do not count (measured: a guard's do)
            raw_div=a.raw_div or b.raw_div or (divergent and a.raw != b.raw and (bool(fa | fb) or not branch)),
            # (where paths meet uniformly, a wgmma some path waited for is no longer in flight there
            # divergently: a read then serialises as after a uniformly skipped wait, C7514; measured:
            # div_skip_wait_then_uniform_skip_read)
            # (but not one issued on one path only: measured, bra_uni_distrusted_stage_then_uniform_skip_read)
            wait_div=(a.wait_div | b.wait_div | frozenset(fa ^ fb)) if divergent else
            (_less(a.wait_div, b.waited - fb) | _less(b.wait_div, a.waited - fa)
             | ((a.wait_div | b.wait_div) & (a.div_issued | b.div_issued))),
            div_issued=a.div_issued | b.div_issued | (frozenset((fa ^ fb) - a.waited - b.waited) if divergent else frozenset()),
            call_at=_merged_call_at(a, b, loop_header),
            pblock=a.pblock if a.pblock == b.pblock else None,
            vals=a.vals | b.vals,
            konst=frozenset() if loop_header else a.konst & b.konst,  # no folding around a loop
            here=a.here & b.here,
            cin=a.cin & b.cin,
            ghost=a.ghost | b.ghost,
            lagged=a.lagged | b.lagged,
            tied=a.tied | b.tied,
            div_pipe=a.div_pipe or b.div_pipe,
            entry_unknown=a.entry_unknown or b.entry_unknown,
            unknown_flying=a.unknown_flying or b.unknown_flying,
            unknown_waited=a.unknown_waited or b.unknown_waited,
            zdirty=a.zdirty | b.zdirty,
            opaque=a.opaque and b.opaque,
            clean_fl=a.clean_fl or b.clean_fl,
            unset=a.unset | b.unset,
            over=a.over & b.over,
        )
    return a


def _merged_call_at(a: PS, b: PS, loop_header: bool) -> int | None:
    """Where a later wait is reported after paths meet: at the call on either path -- but where a
    branch skipped the call, both paths with groups in flight, at that branch (measured: campaign
    seed 2 #83, shrunk: call_skipped_by_branch_then_read)."""
    if not loop_header and (a.call_at is None) != (b.call_at is None) and (a.raw or a.fl) and (b.raw or b.fl):
        skip = a if a.call_at is None else b
        if skip.last_branch and skip.last is not None:
            return skip.last
    return a.call_at or b.call_at


# Arithmetic whose result is a constant when its register inputs are (ptxas folds it).
_FOLDABLE = frozenset({"mov", "xor", "and", "or", "not", "add", "sub", "mul", "neg", "abs", "cvt", "shl", "shr"})


def _read_later(ctx: FnCtx, pos: dict, site: Site, regs: set) -> bool:
    """Some instruction after ``site`` in layout order reads one of ``regs``."""
    here = (pos.get(site.block, 0), site.pos)
    return any((pos.get(b, 0), k) > here and regs & defs_uses(ins)[1]
               for b in ctx.g.order for k, ins in enumerate(ctx.g.blocks[b].instrs))


def _pipeline(ctx: FnCtx, result: _Out) -> None:
    """One forward pass with everything ptxas's GMMA passes visibly track (see the module doc).

    Every block's transfer records what it would report into a record of its own; the report
    pass then takes each block's record from the solver's last transfer of that block (the one
    from its final in-state) instead of stepping the block again, which was ~40% of the model."""
    out = result  # where plain0 reports: transfer points it at the block's record
    ctx_funcs = defined_names(ctx.module)
    div_joins = {ctx.g.ipdom.get(b.index) for b in ctx.g.blocks
                 if len(b.succs) > 1 and any(ctx.dep_divergent((b.index, s), ptxas=True) for s in b.succs)}
    pos = {b: i for i, b in enumerate(ctx.g.order)}
    accs = frozenset().union(*(wgmma_regs(w)[0] for w in ctx.wgmmas.values()))
    # the accumulators some non-wgmma instruction reads: the only ones a feed read can ask about,
    # so the only ones whose never-written state is tracked (all of ``accs`` cost ~10% of the checker)
    read_accs = frozenset().union(*(defs_uses(i)[1] & accs for b in ctx.g.order for i in ctx.g.blocks[b].instrs
                                    if not is_wgmma(i))) if accs else frozenset()
    dead = _dead(ctx)
    first_indirect = min((_order_pos(pos, Site(b.index, k)) for b in ctx.g.blocks for k, i in enumerate(b.instrs)
                          if i.base == "call" and _opaque(_callee(i))), default=(1 << 30, 0))
    # C7509 ("Extern calls") needs a direct call to a function whose address is taken: a direct
    # call to any other is not one (measured: direct_then_indirect_call_*)
    taken = _address_taken(ctx.module) & ctx_funcs
    first_direct = min((_order_pos(pos, Site(b.index, k)) for b in ctx.g.blocks for k, i in enumerate(b.instrs)
                        if i.base == "call" and isinstance(_callee(i), Sym) and _callee(i).name in taken),
                       default=(1 << 30, 0))
    # block -> (line, reported under C7510): ptxas waits at the block's end, reported there
    # (hoisted feed waits)
    forced: dict = {}
    def under_divergence(site: Site) -> bool:
        return any(ctx.dep_divergent(d, ptxas=True) for d in ctx.ctrl_deps(site))

    div_pipe_sites = {site for b in ctx.g.order for site, i in _live_sites(ctx, b)
                      if (is_fence(i) or is_wgmma(i) or is_commit(i) or is_wait(i)) and under_divergence(site)}
    busy = _busy_positions(ctx)

    def serialised_by_divergence(site: Site, st: PS) -> bool:
        """After a pipeline instruction under divergent control, a wait ptxas would inject for a
        read outside divergent control serialises the function instead (C7518; a C7520 of the
        same function outranks it; a read inside a divergent region still waits; measured:
        div_pipe_*, pipegen seeds 201, 321, 1011, 1187)."""
        if st.div_pipe and not under_divergence(site):
            out.div_wait.append((_order(site), "C7518"))
            return True
        return False

    def wait_for_read(line, site: Site, st: PS) -> None:
        """ptxas waits before a read of an accumulator in flight (C7517 at ``line``) unless that
        serialises the function (``serialised_by_divergence``)."""
        if not serialised_by_divergence(site, st):
            out.wait_at_use[line] = True

    def _feeds_later_wgmma(regs: frozenset, site: Site) -> bool:
        """Some wgmma after ``site`` (in layout order) has one of ``regs`` as accumulator: it reads
        it, or with scale-d 0 overwrites it (the read must come first; measured: feed_read_*,
        read_before_scale_d_0_*)."""
        here = _order_pos(pos, site)
        return any(_order_pos(pos, w) > here and regs & wgmma_regs(ins)[0]
                   for w, ins in ctx.wgmmas.items() if w not in dead)

    jumps_out = exit_jumps(ctx, kept=lambda i: _in_place(i) or _self_move(i))
    # a rewrite between two identical wgmmas is free only in a function with no branch and no guarded
    # instruction ptxas keeps, anywhere (measured: acc_write_between_wgmmas_then_guarded_store and _bra)
    gone = dead_plain(ctx)
    straight = not any(i.base in ("bra", "brx") or (i.guard is not None and Site(b, k) not in gone)
                       for b in ctx.g.order for k, i in enumerate(ctx.g.blocks[b].instrs))

    def exit_at(line, st: PS, jump: bool = False) -> PS:
        """What ptxas reports at an exit with groups still in flight; at a branch it made the exit
        (``jump``), the wait is there whatever came before: a split, a call, a wgmma not yet
        committed (measured: call_split_then_exit, uncommitted_div_wait_path)."""
        if st.raw or st.fl:
            out.wait_ser[line] = True  # a serialised function waits for everything at its exits
        if jump:
            at = {line} if st.raw or st.fl else ()
        else:
            at = (st.split or {st.call_at or line}) if st.raw else st.split if st.fl else ()
        # (a call since: the wait goes before it)
        # (a loop around both the commit and the indirect call: the call comes before the commit too,
        # on the back edge -- measured: campaign seed 6 #99, shrunk: indirect_call_and_commit_in_loop)
        early = st.pblock is None or ((pos.get(st.pblock, 0), 0) < first_indirect
                                      and not _loop_spans(ctx, pos, pos.get(st.pblock, 0), first_indirect[0]))
        for x in at:
            out.wait[x] = True
            if st.clean_fl:
                out.wait_clear[x] = True
            if early:  # committed before an indirect call: still reported beside C7509 (measured)
                out.wait_pre_ind[x] = True
        return st

    def plain0(ins: Instr, site: Site, st: PS, guarded: bool = False) -> PS:
        line = _line(ins)
        if site in div_pipe_sites and not st.div_pipe:
            st = st._replace(div_pipe=True)
        if is_fence(ins):
            fl, implicit = _implicit_commit(st.fl)  # a fence closes the open group (measured)
            # ... and a fence after a divergent merge makes the group counts agree again: a later
            # wgmma or commit needs no arrive on one path only (measured: div_stage_then_stage)
            return st._replace(armed=True, dirty=frozenset(), stage=frozenset(), arm_div=False, open=True,
                               fences=frozenset({site}), fl=fl, raw=min(st.raw + implicit, 8), call_at=None, zdirty=frozenset(),
                               pblock=site.block, raw_div=False, ghost=frozenset())
        if is_wgmma(ins):
            acc, a, _ = wgmma_regs(ins)
            if st.arm_div or st.stage_div or st.raw_div:
                out.divergent.append((_order(site), "C7520"))
            if site in dead:  # a ghost matters only where the stage still needs its arrive (measured)
                return st._replace(ghost=st.ghost if st.armed else st.ghost | {site}, open=True)
            dirty = st.dirty
            first = not st.stage_acc  # accumulator rewrites count only at a stage's first wgmma
            # a zeroed accumulator is free only where every accumulator the wgmma reads is a constant:
            # ptxas then drops the read (as with scale-d 0); one zeroed beside loaded ones is a write
            # like any other (measured: acc_zero_one_of_four_after_fence, acc_zero_after_fence)
            zeroed = _tied_acc(ins) & st.zdirty and not _tied_acc(ins) <= st.konst
            if not st.armed or st.flag or zeroed or (first and _tied_acc(ins) & dirty) or (a & dirty & st.stage):
                # "flag": an accumulator in flight was redefined (moot once serialised)
                out.arrive.setdefault(line, "flag" if st.armed and st.flag and not zeroed and not (first and _tied_acc(ins) & dirty)
                                      and not (a & dirty & st.stage) else "stage")
                out.arrive_at.setdefault(line, site)
                dirty = frozenset()
            return st._replace(armed=True, dirty=dirty, stage=st.stage | acc | a, flag=False, vals=st.vals - acc,
                               zdirty=_less(st.zdirty, acc),
                               konst=st.konst - acc, cin=(st.cin - acc) | (acc & st.konst),
                               fl=_norm(frozenset(x for x in st.fl if x[0] != site) | {(site, -1)}),
                               waited=st.waited - {site}, lagged=st.lagged - {site}, stage_acc=st.stage_acc | acc,
                               open=True,
                               tied=st.tied | (frozenset() if _scale_d_zero(ins) else acc),
                               wait_div=st.wait_div - {site}, div_issued=st.div_issued - {site}, call_at=None, pblock=site.block)
        if is_commit(ins):
            if st.arm_div or st.stage_div or st.raw_div:
                out.divergent.append((_order(site), "C7520"))
            if not st.armed or st.flag:
                out.arrive.setdefault(line, "flag" if st.armed else "stage")
                out.arrive_at.setdefault(line, site)
            counted = st.open or not st.armed
            return st._replace(armed=True, fl=frozenset((s, 0 if d < 0 else min(d + 1, 8)) for s, d in st.fl),
                               unknown_flying=st.unknown_flying or (counted and st.entry_unknown),
                               unknown_waited=st.unknown_waited and not (counted and st.entry_unknown),
                               clean_fl=st.clean_fl or not st.opaque,
                               flag=False, stage_acc=frozenset(), tied=frozenset(), raw=min(st.raw + counted, 8),
                               open=st.open or not st.armed, stage_div=False, raw_div=False, call_at=None, ghost=frozenset(),
                               pblock=site.block)
        if is_wait(ins):
            if st.stage_div:
                out.divergent.append((_order(site), "C7520"))
            n = wait_n(ins) or 0
            fl, implicit = _implicit_commit(st.fl)
            passed = frozenset(s for s, d in fl if d >= 0)
            raw = min(st.raw + implicit, 8, n)
            return st._replace(fl=frozenset((s, d) for s, d in fl if d < n), waited=st.waited | passed,
                               wait_div=_less(st.wait_div, frozenset(s for s, d in fl if d >= n) - {s for s, d in fl if d < n}),
                               lagged=st.lagged | {s for s, d in fl if 0 <= d < n},
                               raw=raw, split=st.split if raw else frozenset(), raw_div=False,
                               open=st.open or st.armed, call_at=None, pblock=site.block, ghost=frozenset(),
                               entry_unknown=False, unknown_flying=False, clean_fl=st.clean_fl and bool(raw),
                               unknown_waited=st.unknown_waited or st.unknown_flying)
        if ins.base in ("ret", "exit"):
            return exit_at(line, st)
        if site in jumps_out and (st.raw or st.fl):
            # ptxas made this branch the exit (ptxas_sites.exit_jumps): it waits here, on both
            # paths of a guarded one
            return exit_at(line, st, jump=True)._replace(fl=frozenset(), raw=0, split=frozenset(),
                                                         open=st.open or st.armed, call_at=None)
        if ins.base == "call":
            callee = _callee(ins)
            if (st.fl or st.raw) and st.call_at is None and (_opaque(callee) or (
                    isinstance(callee, Sym) and callee.name in ctx_funcs)):
                # a later wait is reported at this call, even past a split (measured: exit_wait_call_after_split);
                # right after a loop whose wgmmas are in flight, at the loop's exit branch (as a read there)
                flying = {s for s, _ in st.fl} or (set(ctx.wgmmas) if st.raw else set())
                at = _loop_exit_line(ctx, pos, site, flying) or line
                if at == line and st.pblock not in (None, site.block) and _in_loop(ctx, pos, site.block) \
                        and not _in_loop(ctx, pos, st.pblock):
                    # a call inside a loop entered with groups in flight: at the end of the last
                    # commit's block, as a read there would be (measured: experiments_entry.py, call_in_loop_*)
                    gone = dead_plain(ctx)
                    kept = [i for k, i in enumerate(ctx.g.blocks[st.pblock].instrs) if Site(st.pblock, k) not in gone]
                    at = _line(kept[-1]) if kept else line
                st = st._replace(call_at=at, split=frozenset())
            if _opaque(callee):  # indirect: ptxas gives up on the pipeline (measured)
                st = st._replace(opaque=True, clean_fl=False)
                if any(d < 0 for _, d in st.fl):
                    out.divergent.append((_order(site), "C7520"))
                else:  # after a direct call ptxas names it an extern call (measured)
                    direct = _order_pos(pos, site) > first_direct
                    out.ser.append((_order(site), "C7509" if direct else "C7510"))
            elif isinstance(callee, Sym) and callee.name in ctx_funcs:
                # a call breaks the stage: the next wgmma or commit needs an arrive (measured)
                unc = any(d < 0 for _, d in st.fl)
                st = st._replace(flag=st.flag or unc, armed=st.armed and unc)
        defs, uses = defs_uses(ins)
        rel = defs & ctx.relevant if not ctx.relevant.isdisjoint(defs) else None
        if rel and st.fl:
            # ptxas renames a scale-d 0 wgmma's accumulator rewritten while it is in flight -- but not
            # a rewrite on one path only (under a branch the wgmma is not under) that is read later:
            # C7515 (measured: campaign seed 5 #80, shrunk: scale_d_0_acc_rewritten_on_a_path)
            mine = ctx.ctrl_deps(site)
            hit = {r for r in rel for w, _ in st.fl
                   if _scale_d_zero(ctx.wgmmas[w]) and r in wgmma_regs(ctx.wgmmas[w])[0] and ctx.ctrl_deps(w) != mine}
            if hit and _read_later(ctx, pos, site, hit):
                out.ser.append((_order(site), "C7515"))
        if rel:
            # zeroing needs no arrive before the stage (ptxas writes RZ), but still redefines an
            # accumulator of the open stage or one in flight (measured)
            zero = _writes_zero(ctx, site, ins)
            # a write in flight: what ptxas says depends on where its value is read (value_uses)
            plain_write = ins.guard is None
            if plain_write and not st.flag and _arrive_for_operand_write(ctx, pos, site, ins, st, zero):
                st = st._replace(flag=True)
            if zero and not _next_pipe_is_wgmma(ctx, site):
                # ... unless no wgmma follows in the stage: then only an accumulator that entered
                # the wgmma as a non-constant and is read far from the write makes it serialise, with
                # an arrive at the commit if a far read comes before it (measured: acc_write_in_flight_*)
                hit = frozenset(r for r in rel - st.cin if any(r in _tied_acc(ctx.wgmmas[w]) for w, _ in st.fl))
                if hit:
                    seen = value_uses(ctx, site, hit)
                    if seen.far:
                        out.ser.append((_order(site), "C7515"))
                    if seen.far_before and "commit" in seen.next_pipe and hit & st.tied and not st.flag:
                        st = st._replace(flag=True)
                return st
            # a rewrite between two wgmmas of a stage on the register (the next one takes it as
            # accumulator) is free when the next one does not read it (scale-d 0) or both are the
            # same instruction; otherwise ptxas arrives at the next one (measured:
            # acc_write_between_wgmmas_*)
            fed, moved = set(), set()
            for r in rel & st.stage_acc:
                w2 = _wgmma_next_to(ctx, site, r, 1)
                if w2 is None:
                    continue
                w1 = _wgmma_next_to(ctx, site, r, -1)
                if w1 is None or _scale_d_zero(w2) or (_same_wgmma(w1, w2) and straight):
                    fed.add(r)
                else:
                    moved.add(r)
            dirty = st.dirty if zero else _plus(st.dirty, rel)
            flag = st.flag or bool(moved) or _arrive_for_write(ctx, site, ins, (rel & st.tied) - fed - (st.cin if plain_write else frozenset()))
            if dirty is not st.dirty or flag != st.flag:
                st = st._replace(dirty=dirty, flag=flag)
            defs = defs - fed - moved
            if zero and rel - fed:
                st = st._replace(zdirty=_plus(st.zdirty, rel - fed))
        if not st.fl and not st.raw:  # (a group with no wgmma still makes a feed wait: fence_commit_feed_read)
            return st
        # (a register a plain instruction rewrote since holds that value, not the wgmma's: measured,
        # acc_write_in_flight_read_near)
        mine = uses - st.over if st.over else uses
        read = [s for s, _ in st.fl if mine & wgmma_regs(ctx.wgmmas[s])[0]]
        # (a constant from another block is read too; a never-written one only while a group
        # committed from the entry's unknown state is in flight)
        u_acc = uses & accs  # (small: set differences over all of accs cost ~5% of the checker)
        feed = (uses & st.vals) | (u_acc - st.here - st.unset) | (u_acc & st.unset if st.unknown_flying else frozenset())
        # (not where a path that waited for the groups in flight merged in: measured, feed_read_after_partial_wait)
        # groups with no wgmma make a feed wait only when committed from the entry's unknown state
        # (after a wait_group ptxas knows they are empty: measured, experiments_entry.py)
        pending = any(s not in st.waited for s, _ in st.fl) if st.fl else st.unknown_flying and not st.unknown_waited
        # ... and none at all once a wait_group has been passed (measured: experiments_entry.py)
        pending = pending and st.entry_unknown
        if (not read and not guarded and feed and pending and _feeds_later_wgmma(feed, site)
                and site not in dead_for_feeds(ctx)):  # (a read only a dead output needs: measured,
            # feed_of_dead_accumulator_*)
            # a read of a value some wgmma will take as accumulator, while a group is in flight:
            # ptxas waits before it, there even after a direct call (measured: feed_read_after_call;
            # an accumulator read's wait goes to the call); after an indirect call ptxas no longer
            # reports it
            at = _store_pair_line(ctx, site, ins)
            # after an indirect call ptxas reports it only inside a loop, and not when the call
            # came between the commit and the read (measured: feed_read_*)
            shown = _order_pos(pos, site) < first_indirect or (_in_loop(ctx, pos, site.block) and not st.call_at)
            if not serialised_by_divergence(site, st):  # (measured: div_pipe_commit_then_feed)
                out.wait_feed[at] = out.wait_feed.get(at, False) or shown
                out.wait_feed_at.setdefault(at, site)
            if st.pblock is not None and st.pblock != site.block and not st.call_at:
                # ... placed at the end of the last commit's block
                forced.setdefault(st.pblock, (at, shown))
            return st._replace(fl=frozenset(), raw=0, split=frozenset(), open=False, call_at=None)
        if read:
            if any(s in st.wait_div for s in read):
                out.divergent.append((_order(site), "C7518"))
                return st
            if not guarded and any(d < 0 for s, d in st.fl if s in read) and _next_pipe_is_wgmma(ctx, site):
                # an uncommitted wgmma's accumulator read, then another wgmma before the commit: ptxas
                # serialises instead of waiting here -- C7511 when the registers read went in as
                # constants, else C7514 (measured: read_uncommitted_then_wgmma_*)
                hit = uses & frozenset().union(*(wgmma_regs(ctx.wgmmas[s])[0] for s in read))
                out.ser.append((_order(site), "C7511" if hit <= st.cin else "C7514"))
                return st
            # a read of wgmmas never committed on the path that skipped their wait_group, after a call:
            # ptxas waits at the call, not serialising (measured: campaign seed 4 #94, shrunk; without the
            # call it serialises: uncommitted_uni_wait_then_use)
            at_call = st.call_at is not None and all(d < 0 for s, d in st.fl if s in read)
            if not guarded and not at_call and any(s in st.waited or _order_pos(pos, s) >= _order_pos(pos, site) for s in read):
                # a wait that does not cover it, or a wgmma carried around a loop: serialised ...
                after = _after_loop_line(ctx, pos, site, read)
                if after is not None and any(s in st.waited for s in read) and not any(s in st.lagged for s in read):
                    # ... but right after a loop that waited for it on some path only (no wait_group
                    # left it in flight), ptxas waits at the loop's exit branch (measured: wait_skipped_*)
                    wait_for_read(after, site, st)
                    return st._replace(fl=frozenset(), raw=0, split=frozenset(), open=False)
                branch = _divergent_branch_line(ctx, site)
                if branch is None:
                    # a wait_group some path passed (a uniform branch or guard skipped it on another, no
                    # wait_group left it in flight): C7514 even after a divergent pipeline instruction
                    # (measured: div_pipe_then_skipped_wait_*; a wait_group 1 that leaves it in flight
                    # serialises as C7518 there: div_pipe_wait1_then_read)
                    skipped = any(s in st.waited for s in read) and not any(s in st.lagged for s in read)
                    if skipped or not serialised_by_divergence(site, st):
                        out.ser.append((_order(site), "C7514"))
                    return st
                # ... unless the read sits under a divergent branch: ptxas waits at the branch instead
                wait_for_read(branch, site, st)
                return st._replace(fl=frozenset(), raw=0, split=frozenset(), open=False)
            wait_for_read(st.call_at or _hoisted_line(ctx, st, site) or _loop_exit_line(ctx, pos, site, read)
                          or _store_pair_line(ctx, site, ins), site, st)
            return st._replace(fl=frozenset(), raw=0, split=frozenset(), open=False, call_at=None)
        hit = frozenset(r for s, _ in st.fl for r in defs & _tied_acc(ctx.wgmmas[s]))
        if hit and (ins.guard is not None or ((hit := hit - st.cin) and value_uses(ctx, site, hit).far)):
            out.ser.append((_order(site), "C7515"))
        return st

    def plain(ins: Instr, site: Site, st: PS, guarded: bool = False) -> PS:
        out_st = plain0(ins, site, st, guarded)
        if is_wgmma(ins) and out_st.unset and not out_st.unset.isdisjoint(wgmma_regs(ins)[0]):
            out_st = out_st._replace(unset=out_st.unset - wgmma_regs(ins)[0])
        if is_wgmma(ins) and out_st.over and not out_st.over.isdisjoint(wgmma_regs(ins)[0]):
            out_st = out_st._replace(over=out_st.over - wgmma_regs(ins)[0])
        if not is_wgmma(ins):
            d, u = defs_uses(ins)
            if not accs.isdisjoint(d):
                d = d & accs
                if not out_st.unset.isdisjoint(d):
                    out_st = out_st._replace(unset=out_st.unset - d)
                if ins.guard is None and not d <= out_st.over:
                    out_st = out_st._replace(over=out_st.over | d)
                folded = ins.guard is None and ins.base in _FOLDABLE and u <= st.konst
                near = folded and u <= st.here
                vals = _less(out_st.vals, d) if near else _plus(out_st.vals, d)
                konst = _plus(out_st.konst, d) if folded else _less(out_st.konst, d)
                here = _plus(out_st.here, d) if folded else _less(out_st.here, d)
                if vals is not out_st.vals or konst is not out_st.konst or here is not out_st.here:
                    out_st = out_st._replace(vals=vals, konst=konst, here=here)
            elif ins.base == "call":
                out_st = out_st._replace(here=frozenset())
        return out_st

    def step(ins: Instr, site: Site, st: PS) -> PS:
        if _self_move(ins):
            return st  # ``mov r, r`` neither reads nor writes for ptxas's waits (measured: self_move_*)
        # ``last`` matters only where paths meet: ``transfer`` sets it at each block's end, and a
        # guarded instruction (a join of its two outcomes) sets it here
        if ins.guard is None or ins.base in ("bra", "brx"):
            return plain(ins, site, st)
        st = st._replace(last=_line(ins), last_branch=False)
        after = plain(ins, site, st, guarded=True)._replace(last=_line(ins))
        if st.fl and not after.fl and not is_wait(ins):
            return after  # ptxas put its wait before the guarded instruction: both paths waited
        div = ctx.dep_divergent(("guard", ins.guard.reg.name, ins.guard.negated), ptxas=True)
        return _join([after, st], div, False, _line(ins))._replace(last=_line(ins), last_branch=False)

    records = BlockRecords(key=lambda b: b in forced)  # (whether a wait was hoisted to its end)

    def transfer(block: int, st_in):
        nonlocal out
        st = st_in
        if block != ctx.g.order[0]:
            st = st._replace(here=frozenset())  # a new block: ptxas folds no constant from before
        out = rec = _Out()
        later = busy.get(block, ())  # positions of work that stays, in order
        k = 0
        try:
            for site, ins in _live_sites(ctx, block):
                while k < len(later) and later[k] < site.pos:
                    st, k = _after_busy(st), k + 1
                st = step(ins, site, st)
            if k < len(later):
                st = _after_busy(st)
        finally:
            out = result
        hoisted = block in forced
        if hoisted and st.fl:  # a wait ptxas hoisted to the end of this block (see plain0)
            st = st._replace(fl=frozenset(), raw=0, split=frozenset(), open=False, call_at=None)
        records.keep(block, st_in, rec)
        instrs = ctx.g.blocks[block].instrs
        if instrs:
            st = st._replace(last=_line(instrs[-1]), last_branch=instrs[-1].base in ("bra", "brx"))
        return st

    def join_at(block: int, states):
        header = any(p in pos and pos[p] >= pos.get(block, 0) for p in ctx.g.preds[block])
        first = ctx.g.blocks[block].instrs[0] if ctx.g.blocks[block].instrs else None
        return _join(states, block in div_joins, header, _line(first), branch=True)

    ins = {}
    for _ in range(3):  # re-solve while reads force new hoisted waits
        seen = len(forced)
        # a register nothing has written yet is any constant ptxas likes (measured: read_uncommitted_*)
        ins = solve_forward(ctx.g, ENTRY_STATE._replace(konst=accs, here=accs, unset=read_accs), transfer, lambda xs: _join(xs, False, False),
                            join_at=join_at)
        if len(forced) == seen:
            break
    for _, rec in records.final(ctx.g, ins, transfer):  # (steps again where a wait was hoisted after its last solve)
        result.merge(rec)
    for line, before in forced.values():
        result.wait_feed[line] = result.wait_feed.get(line, False) or before


def _loop_spans(ctx: FnCtx, pos: dict, a: int, b: int) -> bool:
    """Some loop (a back edge, in layout order) holds both layout positions ``a`` and ``b``."""
    lo, hi = min(a, b), max(a, b)
    return any(pos[h] <= lo and hi <= j for p, j in pos.items() for h in ctx.g.succs[p] if h in pos and pos[h] <= j)


def _busy_positions(ctx: FnCtx) -> dict:
    """block -> positions of the instructions ptxas keeps that are not control flow or pipeline
    instructions: a store, a barrier, live arithmetic -- and an update in place (``add r, r, 1``,
    a self-move ``mov r, r``), which ptxas keeps at that point however dead (measured:
    split_then_*)."""
    dead = dead_plain(ctx)
    out: dict = {}
    for b in ctx.g.order:
        row = [k for k, ins in enumerate(ctx.g.blocks[b].instrs)
               if ins.base not in _CONTROL and ins.base != "wgmma"
               and (Site(b, k) not in dead or _in_place(ins))]
        if row:
            out[b] = row
    return out


_CONTROL = frozenset({"bra", "brx", "ret", "exit", "trap", "call"})


def _in_place(ins: Instr) -> bool:
    """The instruction reads a register it writes (its guard aside)."""
    d, u = defs_uses(ins)
    if not d:
        return False
    return not d.isdisjoint(u - {ins.guard.reg.name} if ins.guard is not None else u)


_IDENTITY_RIGHT = {"add": 0, "sub": 0, "or": 0, "xor": 0, "shl": 0, "shr": 0, "mul": 1}  # x op c == x
_COMMUTES = frozenset({"add", "or", "xor", "mul"})


def _self_move(ins: Instr) -> bool:
    """``mov r, r``, or an integer update in place that leaves ``r`` as it is (``xor r, r, 0``,
    ``add r, r, 0``, ``and r, r, -1``, ``mul.lo r, r, 1``, ``max r, r, r``): ptxas folds these
    to a self-move first (measured: identity_in_place_*)."""
    ops = ins.operands
    if ins.base == "mov":
        return len(ops) == 2 and ops[0] == ops[1]
    op = ins.opcode
    if len(ops) != 3 or ins.guard is not None or any(x in op for x in (".f", ".hi", ".wide", ".cc")):
        return False
    d, a, b = ops
    if ins.base in ("min", "max"):
        return d == a == b
    if ins.base == "and":
        return (d == a and _all_ones(b, ins.opcode)) or (d == b and _all_ones(a, ins.opcode))
    c = _IDENTITY_RIGHT.get(ins.base)
    if c is None:
        return False
    if d == a and isinstance(b, Imm) and b.value == c:
        return True
    return ins.base in _COMMUTES and d == b and isinstance(a, Imm) and a.value == c


def _all_ones(op, opcode: str) -> bool:
    if not isinstance(op, Imm) or not isinstance(op.value, int):
        return False
    bits = 64 if "64" in opcode.rsplit(".", 1)[-1] else 32 if "32" in opcode.rsplit(".", 1)[-1] else 16
    return op.value == -1 or op.value == (1 << bits) - 1


def _copy_like(ins: Instr) -> bool:
    """A move in ptxas's eyes: ``mov``, ``neg``, ``abs``, a ``mul`` by one (measured:
    acc_write_in_flight_*: these rewrites of an in-flight accumulator draw no arrive at the commit
    where an ``add``, ``cvt``, ``ld`` or ``selp`` does)."""
    if ins.base in ("mov", "neg", "abs"):
        return True
    return ins.base == "mul" and len(ins.operands) == 3 and any(
        isinstance(o, Imm) and o.value == 1 for o in ins.operands[1:])


def _arrive_for_write(ctx: FnCtx, site: Site, ins: Instr, regs: frozenset) -> bool:
    """Whether a rewrite of accumulators ``regs`` of the open stage's wgmmas (which read them) makes
    ptxas arrive at the next wgmma or commit (C7519; measured: acc_write_in_flight_*): at a wgmma,
    when the value is read past it (by anything); at the commit, when a read far from the write
    (``value_uses``) comes before it, or -- for a write that is not a move -- the value is read past
    it.  A fence next needs none (it is an arrive); a guarded write always arrives."""
    if not regs:
        return False
    if ins.guard is not None:
        return True
    seen = value_uses(ctx, site, regs)
    return (("wgmma" in seen.next_pipe and seen.past)
            or ("commit" in seen.next_pipe and (seen.far_before or (seen.past and not _copy_like(ins)))))


def _arrive_for_operand_write(ctx: FnCtx, pos: dict, site: Site, ins: Instr, st: PS, zero: bool) -> bool:
    """An unguarded rewrite of an A-fragment register, or of an accumulator of a scale-d 0 wgmma, of
    the open stage's wgmmas (not yet committed) makes ptxas arrive at the next wgmma, or -- for a
    write that is not a move -- the next commit, when a later wgmma reads the value past that
    instruction (measured: operand_write_in_flight_*; a plain read does not count, unlike for an
    accumulator the wgmma reads: ``_arrive_for_write``).  A zeroed A register is a constant to
    ptxas unless the reading wgmma comes around a loop."""
    ops: set = set()
    for w, d in st.fl:
        if d < 0:
            acc, a, _ = wgmma_regs(ctx.wgmmas[w])
            ops |= a | (acc if _scale_d_zero(ctx.wgmmas[w]) else frozenset())
    regs = (defs_uses(ins)[0] & ops) - st.tied
    if not regs:
        return False
    seen = value_uses(ctx, site, frozenset(regs))
    here = _order_pos(pos, site)
    a_regs = frozenset().union(*(wgmma_regs(ctx.wgmmas[w])[1] for w, d in st.fl if d < 0))
    readers = [w for w in seen.wgmma_past
               if not (zero and regs <= a_regs and _order_pos(pos, w) > here)]
    if not readers:
        return False
    return "wgmma" in seen.next_pipe or ("commit" in seen.next_pipe and not _copy_like(ins))


def _after_busy(st: PS) -> PS:
    """Work that stays after paths with and without committed groups met: ptxas no longer waits
    at the branch that split them but at the exit (measured: split_then_store, split_then_bar,
    split_then_self_move, split_then_dead_in_place_*; other dead code between does not count:
    split_then_dead_mov/add/load), nor at a call
    before the split (measured: call_split_then_store)."""
    return st._replace(split=frozenset(), call_at=None) if st.split and st.raw else st


def _plus(s: frozenset, d: frozenset) -> frozenset:
    """``s | d``, and ``s`` itself when that adds nothing: a run of accumulator writes would
    otherwise copy the whole set once per instruction."""
    return s if d <= s else s | d


def _less(s: frozenset, d: frozenset) -> frozenset:
    """``s - d``, and ``s`` itself when that removes nothing (see ``_plus``)."""
    return s if s.isdisjoint(d) else s - d


@per_object(64)
def _address_taken(module: Module) -> frozenset:
    """Names used as values (``mov.u64 %rd, f``) rather than as a direct call's callee; once per
    module (every function's pipeline asks: per function, a module of N kernels cost N^2)."""
    out = set()
    for fn in module.functions():
        for ins in fn.instructions() if fn.body is not None else ():
            ops = ins.operands[1:] if ins.base != "call" else ()
            out |= {o.name for o in ops if isinstance(o, Sym)}
    return frozenset(out)


def _opaque(callee) -> bool:
    """A callee ptxas cannot see into: a register (an indirect call) or a system function ptxas
    resolves itself (``__assertfail``, ``vprintf``...).  Both give C7510, in a stage C7520
    (measured: tests/test_cutlass_corpus.py::test_a_system_call_serialises_like_an_indirect_one;
    CUTLASS kernels built without NDEBUG call ``__assertfail``)."""
    return isinstance(callee, Reg) or (isinstance(callee, Sym) and callee.name in SYSTEM_FUNCTIONS)


def _tied_acc(ins: Instr) -> frozenset:
    """Accumulators a wgmma reads and writes: with scale-d 0 it only writes them, and ptxas renames a
    register rewritten while such a wgmma is in flight (measured: acc_write_in_flight_scale_d_0)."""
    return frozenset() if _scale_d_zero(ins) else wgmma_regs(ins)[0]


def _norm(entries) -> frozenset:
    best: dict = {}
    for s, d in entries:
        best[s] = min(d, best.get(s, d))
    return frozenset(best.items())


def _ser_code(ser: list) -> str | None:
    """The one serialisation reason ptxas prints: an indirect call's outranks the rest (measured);
    of an indirect call's two codes the first call's wins, and a C7510 call always comes before any
    C7509 one (C7509 is an indirect call after a direct call; measured: indirect, direct, indirect
    gives C7510)."""
    for code in ("C7510", "C7509"):
        if any(c == code for _, c in ser):
            return code
    return min(ser)[1] if ser else None


_SIDE_EFFECTS = frozenset({"ld", "st", "atom", "red", "bar", "barrier"})


def _uni_distrusted(ctx: FnCtx) -> frozenset:
    """The blocks whose closing ``bra.uni`` ptxas does not trust (a ``bra.uni`` on %tid.x is uniform to
    it otherwise): in a function with a guarded load, store, atomic or barrier that it keeps, or a
    guarded wgmma it deletes as dead, a ``bra.uni`` over a fence, wgmma or commit (measured:
    bra_uni_distrusted_*; a guarded ``setp``, wait, commit, ``ret`` or live wgmma, or a dead guarded
    ``add``, leaves it trusted, as does a region holding only a wait_group; campaign findings seed 9
    #93 and seed 10 #77)."""
    unis = [b.index for b in ctx.g.blocks if b.instrs and b.instrs[-1].opcode.startswith("bra.uni")
            and b.instrs[-1].guard is not None]
    if not unis:
        return frozenset()
    gone, dead = dead_plain(ctx), _dead(ctx)

    def distrusting(b: int, k: int, ins: Instr) -> bool:
        if ins.guard is None:
            return False
        if is_wgmma(ins):
            return Site(b, k) in dead
        return ins.base in _SIDE_EFFECTS and Site(b, k) not in gone

    if not any(distrusting(b, k, i) for b in ctx.g.order for k, i in enumerate(ctx.g.blocks[b].instrs)):
        return frozenset()
    stage = {b.index for b in ctx.g.blocks if any(is_fence(i) or is_wgmma(i) or is_commit(i) for i in b.instrs)}
    return frozenset(x for x in unis
                     if not _to_exit(ctx, x) and any(dep[0] == x for b in stage for dep in ctx.g.cdeps[b]))


def _to_exit(ctx: FnCtx, block: int) -> bool:
    """The block's branch jumps to a block holding nothing but the exit (``ret``/``exit``, or the
    body's end)."""
    for s in ctx.g.succs[block]:
        instrs = ctx.g.blocks[s].instrs
        if s != block + 1 and (not instrs or (len(instrs) == 1 and instrs[0].base in ("ret", "exit"))):
            return True
    return False



def _after_calls_on_every_path(ctx: FnCtx):
    """A test ``line -> bool``: whether an opaque (indirect or system) call comes before ``line`` on
    every path from the entry (in its block before it, or in a block that dominates its block).
    The dominators and the calls are found once per function."""
    where = {(_line(i) or 0): b.index for b in ctx.g.blocks for i in b.instrs}
    calls = [(b.index, _line(i) or 0) for b in ctx.g.blocks for i in b.instrs
             if i.base == "call" and _opaque(_callee(i))]
    idom = idoms(ctx.g.succs, ctx.g.preds, 0)

    def test(line: int) -> bool:
        blk = where.get(line)
        if blk is None:
            return True
        doms, b = set(), blk
        while b in idom and b not in doms:
            doms.add(b)
            b = idom[b]
        return any((cb == blk and cl < line) or (cb != blk and cb in doms) for cb, cl in calls)

    return test


def predict_function(ctx: FnCtx) -> list[PredictedDiag]:
    if not any(i.base == "wgmma" for b in ctx.g.blocks for i in b.instrs):
        return []
    distrust = _uni_distrusted(ctx)
    if distrust:
        ctx._ptxas_uni = analyse_uniformity(ctx.fn, ctx.g, "ptxas", distrust_uni=distrust)
    out = _Out()
    _structure(ctx, out)
    _pipeline(ctx, out)
    register_pressure(ctx, out.ser)
    name = ctx.fn.name
    if out.divergent or out.div_wait:
        _, code = min(out.divergent or out.div_wait)
        if code == "C7518" and _ser_code(out.ser) in ("C7509", "C7510"):
            code = _ser_code(out.ser)  # an indirect call outranks C7518, not C7520 (measured: div_*_indirect_call)
        kept = arrives_before_divergence(ctx, out.arrive_at, out.divergent) if code == "C7520" else []
        # ... and the feed waits it placed there too (measured: feed_wait_then_c7520*)
        fed = arrives_before_divergence(ctx, out.wait_feed_at, out.divergent) if code == "C7520" else []
        return [PredictedDiag("C7519", line, "info", name, ADVISORY["C7519"].format(line=line, f=name))
                for line in kept] + [
            PredictedDiag("C7517", line, "info", name, ADVISORY["C7517"].format(line=line, f=name))
            for line in fed] + [
            PredictedDiag(code, None, "info", name, SER_PREFIX + SER_REASONS[code].format(f=name))]
    ser_code = _ser_code(out.ser)
    # an indirect call serialises the whole function: no wait is left for its exits (measured)
    # ... but ptxas still reports the feed waits it placed before reaching the indirect call (measured)
    early = {x: True for x, before in out.wait_feed.items() if before}
    if ser_code in ("C7509", "C7510"):
        # a read of an accumulator in flight after the first indirect call gets no wait (one placed at
        # that call stays: no_wait_after_indirect_call): the function is serialised from there (measured: campaign seeds 6 #99, 8 #92 and strategies #201-207,
        # shrunk: use_after_indirect_call_*)
        first = min((_line(i) or 0 for b in ctx.g.blocks for i in b.instrs
                     if i.base == "call" and _opaque(_callee(i))), default=None)
        if first is not None:
            # ... where every path to the read passes such a call: a read a branch around the calls
            # reaches still waits (measured: strategies #951-954, calls under a uniform branch)
            past_calls = _after_calls_on_every_path(ctx)
            out.wait_at_use = {x: v for x, v in out.wait_at_use.items()
                               if x is None or x <= first or not past_calls(x)}
    if ser_code == "C7510":  # ... save one at an indirect call itself with groups in flight (measured: wait_at_indirect_call)
        at_ind = {_line(i) for b in ctx.g.blocks for i in b.instrs if i.base == "call" and _opaque(_callee(i))}
        # ... and an exit's wait for groups committed before the first such call that some path carries
        # there without passing one (measured: exit_wait_stage_skipping_indirect_call; committed after
        # the call it is serialised all the same: exit_wait_call_skipped_then_stage)
        at_ind |= set(out.wait_pre_ind) & set(out.wait_clear)
        waits = {**{x: True for x in out.wait if x in at_ind}, **out.wait_at_use, **early}
    elif ser_code == "C7509":  # exits wait as unserialised, for groups committed before the indirect call (measured)
        waits = {**out.wait_pre_ind, **out.wait_at_use, **out.wait_feed}
    elif out.ser:
        waits = {**out.wait_ser, **out.wait_at_use, **out.wait_feed}
    else:
        waits = {**out.wait, **out.wait_at_use, **out.wait_feed}
    # (an indirect call keeps the arrives a rewrite in flight draws: measured, rewrite_arrive_*_indirect_call)
    arrives = list(out.arrive)
    diags = [PredictedDiag("C7519", line, "info", name, ADVISORY["C7519"].format(line=line, f=name))
             for line in sorted(arrives, key=lambda x: x or 0)]
    diags += [PredictedDiag("C7517", line, "info", name, ADVISORY["C7517"].format(line=line, f=name))
              for line in sorted(waits, key=lambda x: x or 0)]
    if out.ser:
        code = ser_code
        diags.append(PredictedDiag(code, None, "info", name, SER_PREFIX + SER_REASONS[code].format(f=name)))
    return diags


def predict_module(module: Module, ctxs: dict | None = None, isa_findings: dict | None = None) -> PredictedDiagnostics:
    errors = predict_errors(module, isa_findings)
    if errors:
        return PredictedDiagnostics(False, tuple(sorted(errors, key=lambda d: (d.line or 0))))
    diags: list[PredictedDiag] = []
    may: set = set()  # allocator-dependent codes (ptxas_pressure.allocator_may)
    for fn in module.functions():
        if fn.body is None:
            continue
        if _falls_off_the_end(fn):
            # ptxas returns there, and reports what it does at that return at line 0 (measured:
            # falls_off_the_end); a ret of line 0 stands for it
            ctx = build_ctx(module, replace(fn, body=tuple(fn.body) + (Instr("ret", loc=SrcLoc("", 0)),)))
        else:
            ctx = (ctxs or {}).get(fn.name) or build_ctx(module, fn)
        mine = predict_function(ctx)
        diags += mine
        if fn.kind == "entry" and _setmaxnreg_ignored(module, fn):
            diags.append(PredictedDiag("C7508", None, "info", fn.name, C7508_MESSAGE))
        may |= allocator_may(ctx, frozenset(d.code for d in mine))
    return PredictedDiagnostics(True, tuple(diags), tuple(sorted(may)))


C7508_MESSAGE = "Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register count at entry."


def _setmaxnreg_ignored(module: Module, kernel) -> bool:
    """C7508, once per kernel: a ``setmaxnreg`` in the kernel or in a ``.func`` it calls (directly,
    at any depth), guarded or not, when the kernel bounds its register count neither by ``.maxnreg``
    nor by ``.maxntid``/``.reqntid`` together with ``.minnctapersm`` (either alone does not do;
    measured: setmaxnreg_*; CUTLASS's warp-specialized kernels have ``.maxntid`` and ``.minnctapersm``)."""
    names = {a.split()[0] for a in kernel.attributes if a.split()}
    if ".maxnreg" in names or (names & {".maxntid", ".reqntid"} and ".minnctapersm" in names):
        return False
    funcs = {f.name: f for f in module.functions() if f.body is not None}
    seen, todo = set(), [kernel]
    while todo:
        f = todo.pop()
        if f.name in seen:
            continue
        seen.add(f.name)
        for ins in f.instructions():
            if ins.base == "setmaxnreg":
                return True
            callee = _callee(ins) if ins.base == "call" else None
            if isinstance(callee, Sym) and callee.name in funcs:
                todo.append(funcs[callee.name])
    return False


def _falls_off_the_end(fn) -> bool:
    """The body's last instruction can fall through the closing brace (no ``ret``/``exit``/jump)."""
    k = max((i for i, s in enumerate(fn.body) if isinstance(s, Instr)), default=None)
    if k is None or any(isinstance(s, Label) for s in fn.body[k + 1:]):
        return True  # a label after the last instruction: a branch there reaches the end (exit_jump_to_next_end)
    last = fn.body[k]
    return last.guard is not None or last.base not in ("ret", "exit", "bra", "trap", "brx")


def findings_from(pred: PredictedDiagnostics, path: str | None) -> list[Finding]:
    out = []
    for d in pred.diagnostics:
        rule = f"ptxas.{d.code}" if d.code else "ptxas.error"
        out.append(Finding(path, d.line, rule, "error" if d.code is None else "warning", "ptxas-model",
                           d.message, d.kernel))
    return out
