"""What the ptxas model's pipeline pass tracks along a path (``PS``), how paths merge (``join``),
and what it records for the report (``Out``).  The rules that move the state are in
``ptxas_rules``; the pass that runs them, ``ptxas_pipeline``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple


@dataclass
class Out:
    arrive: dict = field(default_factory=dict)  # line -> why (C7519): "stage", or "flag" (see ptxas_rules.Wgmma)
    arrive_at: dict = field(default_factory=dict)  # line -> the site of that arrive
    wait: dict = field(default_factory=dict)  # line -> True (C7517)
    wait_ser: dict = field(default_factory=dict)  # C7517 lines if the function is serialised
    wait_pre_ind: dict = field(default_factory=dict)  # exit waits for groups committed before an indirect call
    wait_clear: dict = field(default_factory=dict)  # exit waits some path with groups in flight needs that
    # passed no indirect call (PS.clean_fl): ptxas keeps them beside C7510
    wait_opaque: dict = field(default_factory=dict)  # where a wait for groups in flight at an opaque call
    # goes (the call, or the exit branch of a loop just before it): ptxas keeps it beside C7510
    wait_at_use: dict = field(default_factory=dict)  # C7517 at reads of accumulators in flight
    wait_feed: dict = field(default_factory=dict)  # C7517 at reads of future accumulator inputs:
    # line -> whether ptxas still reports it when an indirect call serialises the function
    wait_feed_at: dict = field(default_factory=dict)  # line -> the site of that feed read
    ser: list = field(default_factory=list)  # [(order, code)]
    divergent: list = field(default_factory=list)  # [(order, code)]
    div_wait: list = field(default_factory=list)  # [(order, "C7518")] from a read after a divergent
    # pipeline instruction (PS.div_pipe): reported only when nothing in ``divergent`` is
    a_in_flight: bool = False  # a plain instruction wrote an A register of a wgmma in flight (C7513 "may")
    skipped_read: bool = False  # a read of a wgmma whose wait_group a path skipped (C7514): beside C7510,
    # ptxas still waits for everything at the exits

    def merge(self, other: "Out") -> None:
        """Add what a later piece of the pass recorded, as if it had written here directly: first
        reason wins, a feed wait is shown if any write showed it, lists keep their order."""
        for mine, theirs in ((self.arrive, other.arrive), (self.arrive_at, other.arrive_at),
                             (self.wait_feed_at, other.wait_feed_at)):
            for k, v in theirs.items():
                mine.setdefault(k, v)
        for mine, theirs in ((self.wait, other.wait), (self.wait_ser, other.wait_ser),
                             (self.wait_pre_ind, other.wait_pre_ind), (self.wait_at_use, other.wait_at_use),
                             (self.wait_clear, other.wait_clear), (self.wait_opaque, other.wait_opaque)):
            mine.update(theirs)
        for k, v in other.wait_feed.items():
            self.wait_feed[k] = self.wait_feed.get(k, False) or v
        self.ser += other.ser
        self.divergent += other.divergent
        self.div_wait += other.div_wait
        self.a_in_flight = self.a_in_flight or other.a_in_flight
        self.skipped_read = self.skipped_read or other.skipped_read


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


def join(states: list, divergent: bool, loop_header: bool, at: int | None = None, branch: bool = False) -> PS:
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
            fl=norm(a.fl | b.fl),
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
            (less(a.wait_div, b.waited - fb) | less(b.wait_div, a.waited - fa)
             | ((a.wait_div | b.wait_div) & (a.div_issued | b.div_issued))),
            div_issued=a.div_issued | b.div_issued | (frozenset((fa ^ fb) - a.waited - b.waited) if divergent else frozenset()),
            call_at=merged_call_at(a, b, loop_header),
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


def merged_call_at(a: PS, b: PS, loop_header: bool) -> int | None:
    """Where a later wait is reported after paths meet: at the call on either path -- but where a
    branch skipped the call, both paths with groups in flight, at that branch (measured: campaign
    seed 2 #83, shrunk: call_skipped_by_branch_then_read)."""
    if not loop_header and (a.call_at is None) != (b.call_at is None) and (a.raw or a.fl) and (b.raw or b.fl):
        skip = a if a.call_at is None else b
        if skip.last_branch and skip.last is not None:
            return skip.last
    return a.call_at or b.call_at


def implicit_commit(fl):
    """ptxas treats a wait_group as committing the wgmmas still uncommitted (measured)."""
    if not any(d < 0 for _, d in fl):
        return fl, False
    return frozenset((s, 0 if d < 0 else min(d + 1, 8)) for s, d in fl), True


def norm(entries) -> frozenset:
    best: dict = {}
    for s, d in entries:
        best[s] = min(d, best.get(s, d))
    return frozenset(best.items())


def plus(s: frozenset, d: frozenset) -> frozenset:
    """``s | d``, and ``s`` itself when that adds nothing: a run of accumulator writes would
    otherwise copy the whole set once per instruction."""
    return s if d <= s else s | d


def less(s: frozenset, d: frozenset) -> frozenset:
    """``s - d``, and ``s`` itself when that removes nothing (see ``plus``)."""
    return s if s.isdisjoint(d) else s - d
