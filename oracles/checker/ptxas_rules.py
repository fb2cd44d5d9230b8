"""The learned rules of the ptxas model, one class each, with the probes that pin them.

A rule is what ptxas 13.0.88 was seen to do, found by experiment: each names its probe files under
``tests/data/checker/`` (globs; the ``// PTXAS:`` header of each says what real ptxas printed, and
``tests/test_checker_ptxas.py`` re-runs them).  Three kinds:

- ``StepRule``: what the pipeline pass (``ptxas_pipeline``) does at one instruction.  ``STEP_RULES``
  is their order: the first that says ``done`` ends the instruction's step; ``TRACK`` then runs
  whatever the step said.
- ``FunctionRule``: a pass over one function that records into the report (``ptxas_model.FUNCTION_RULES``).
- ``ModuleRule``: a rule of the whole module (errors, C7508; ``ptxas_model.MODULE_RULES``).

Facts the rules share about a function are computed once, in a ``Walk``.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar, NamedTuple

from fuzzptx.perf import per_object
from fuzzptx.ptx.ir import Imm, Instr, Module, Reg, Sym

from .context import FnCtx, Site, defined_names
from .flow import idoms
from .ptxas_errors import SYSTEM_FUNCTIONS, _callee
from .ptxas_sites import (_after_loop_line, _dead, _divergent_branch_line, _folded_run_line, _hoisted_line, _in_loop, _line,
                          _live_sites, _loop_exit_line, _next_pipe_is_wgmma, _order, _order_pos, _reaching,
                          _same_wgmma, _scale_d_zero, _store_pair_line, _wgmma_next_to, _writes_zero,
                          dead_for_feeds, dead_plain, exit_jumps, value_uses)
from .ptxas_state import PS, Out, implicit_commit, less, norm, plus
from .uniformity import analyse_uniformity
from .regs import defs_uses, is_commit, is_fence, is_wait, is_wgmma, wait_n, wgmma_regs


@dataclass(frozen=True)
class Rule(ABC):
    """One learned rule; ``probes`` are globs of its experiments in ``tests/data/checker/``."""

    probes: ClassVar[tuple[str, ...]] = ()

    @property
    def name(self) -> str:
        return type(self).__name__


# ------------------------------------------------------------------ the facts rules share


class Walk:
    """What the step rules may ask about one function, computed once, and where they report.

    Not frozen: ``out`` is the record of the block being stepped (the pass points it at each
    block's own record) and ``forced`` gathers the waits ptxas hoists to a block's end."""

    def __init__(self, ctx: FnCtx, result: Out) -> None:
        self.ctx = ctx
        self.result = result
        self.out = result
        self.forced: dict = {}  # block -> (line, reported under C7510): hoisted feed waits
        self.opaque_at: set = set()  # lines of the waits for groups in flight at an opaque call (``Call``)
        self.hoisted: dict = {}  # block -> line: the wait for an opaque call in a later loop, at the block's end
        self.funcs = defined_names(ctx.module)
        self.pos = pos = {b: i for i, b in enumerate(ctx.g.order)}
        self.accs = accs = frozenset().union(*(wgmma_regs(w)[0] for w in ctx.wgmmas.values()))
        self.a_regs = frozenset().union(*(wgmma_regs(w)[1] for w in ctx.wgmmas.values()))  # A fragments
        # the accumulators some non-wgmma instruction reads: the only ones a feed read can ask about,
        # so the only ones whose never-written state is tracked (all of ``accs`` cost ~10% of the checker)
        self.read_accs = frozenset().union(*(defs_uses(i)[1] & accs for b in ctx.g.order for i in ctx.g.blocks[b].instrs
                                             if not is_wgmma(i))) if accs else frozenset()
        self.dead = _dead(ctx)
        self.first_indirect = min((_order_pos(pos, Site(b.index, k)) for b in ctx.g.blocks for k, i in enumerate(b.instrs)
                                   if i.base == "call" and _opaque(_callee(i))), default=(1 << 30, 0))
        # C7509 ("Extern calls") needs a direct call to a function whose address is taken: a direct
        # call to any other is not one (measured: direct_then_indirect_call_*)
        taken = _address_taken(ctx.module) & self.funcs
        self.first_direct = min((_order_pos(pos, Site(b.index, k)) for b in ctx.g.blocks for k, i in enumerate(b.instrs)
                                 if i.base == "call" and isinstance(_callee(i), Sym) and _callee(i).name in taken),
                                default=(1 << 30, 0))
        self.div_pipe_sites = frozenset(site for b in ctx.g.order for site, i in _live_sites(ctx, b)
                                        if (is_fence(i) or is_wgmma(i) or is_commit(i) or is_wait(i))
                                        and self.under_divergence(site))
        self.jumps_out = exit_jumps(ctx, kept=lambda i: in_place(i) or self_move(i))
        # a rewrite between two identical wgmmas is free only in a function with no branch and no guarded
        # instruction ptxas keeps, anywhere (measured: acc_write_between_wgmmas_then_guarded_store and _bra)
        self.gone = gone = dead_plain(ctx)
        self.straight = not any(i.base in ("bra", "brx") or (i.guard is not None and Site(b, k) not in gone)
                                for b in ctx.g.order for k, i in enumerate(ctx.g.blocks[b].instrs))

    @cached_property
    def after_opaque(self) -> frozenset:
        """The blocks some opaque (indirect or system) call leads to, after its own block: a path
        that ends in a ``trap`` leads nowhere, a loop leads back to the call's block."""
        g = self.ctx.g
        todo = [s for b in g.blocks if any(i.base == "call" and _opaque(_callee(i)) for i in b.instrs)
                for s in g.succs[b.index]]
        seen: set = set()
        while todo:
            b = todo.pop()
            if b not in seen:
                seen.add(b)
                todo += g.succs[b]
        return frozenset(seen)

    @cached_property
    def first_opaque_in(self) -> dict:
        """block -> position of its first opaque call (a commit there counts as after it only at
        position 0: empty_group_after_direct_and_indirect_call)."""
        out: dict = {}
        for b in self.ctx.g.blocks:
            for k, i in enumerate(b.instrs):
                if i.base == "call" and _opaque(_callee(i)):
                    out.setdefault(b.index, k)
        return out

    def under_divergence(self, site: Site) -> bool:
        return any(self.ctx.dep_divergent(d, ptxas=True) for d in self.ctx.ctrl_deps(site))

    def serialised_by_divergence(self, site: Site, st: PS) -> bool:
        """After a pipeline instruction under divergent control, a wait ptxas would inject for a
        read outside divergent control serialises the function instead (C7518; a C7520 of the
        same function outranks it; a read inside a divergent region still waits; measured:
        div_pipe_*, pipegen seeds 201, 321, 1011, 1187)."""
        if st.div_pipe and not self.under_divergence(site):
            self.out.div_wait.append((_order(site), "C7518"))
            return True
        return False

    def wait_for_read(self, line, site: Site, st: PS) -> None:
        """ptxas waits before a read of an accumulator in flight (C7517 at ``line``) unless that
        serialises the function (``serialised_by_divergence``)."""
        if not self.serialised_by_divergence(site, st):
            self.out.wait_at_use[line] = True

    def feeds_later_wgmma(self, regs: frozenset, site: Site) -> bool:
        """Some wgmma after ``site`` (in layout order) has one of ``regs`` as accumulator: it reads
        it, or with scale-d 0 overwrites it (the read must come first; measured: feed_read_*,
        read_before_scale_d_0_*)."""
        here = _order_pos(self.pos, site)
        return any(_order_pos(self.pos, w) > here and regs & wgmma_regs(ins)[0]
                   for w, ins in self.ctx.wgmmas.items() if w not in self.dead)

    def exit_at(self, line, st: PS, jump: bool = False) -> PS:
        """What ptxas reports at an exit with groups still in flight; at a branch it made the exit
        (``jump``), the wait is there whatever came before: a split, a call, a wgmma not yet
        committed (measured: call_split_then_exit, uncommitted_div_wait_path)."""
        out = self.out
        if st.raw or st.fl:
            out.wait_ser[line] = True  # a serialised function waits for everything at its exits
        if jump:
            at = {line} if st.raw or st.fl else ()
        else:
            at = (st.split or {st.call_at or line}) if st.raw else st.split if st.fl else ()
        # (a call since: the wait goes before it)
        # (committed where no indirect call leads: one in a loop around the commit comes before it
        # too, on the back edge -- measured: campaign seed 6 #99, shrunk: indirect_call_and_commit_in_loop;
        # one on a path that ends in a trap leads nowhere -- measured: campaign seed 8 #79, shrunk:
        # exit_wait_assert_trap_then_stage)
        early = st.pblock is None or (st.pblock not in self.after_opaque and self.first_opaque_in.get(st.pblock) != 0)
        for x in at:
            out.wait[x] = True
            if st.clean_fl:
                out.wait_clear[x] = True
            if early:  # committed before an indirect call: still reported beside C7509 (measured)
                out.wait_pre_ind[x] = True
        return st


class At(NamedTuple):
    """The instruction being stepped, and what earlier rules of its step found."""

    ins: Instr
    site: Site
    line: int | None
    guarded: bool  # stepped as one outcome of its guard (the pass joins it with the other)
    defs: frozenset  # registers it writes (less those a rewrite rule found free)
    uses: frozenset  # registers it reads
    rel: frozenset | None  # of ``defs``, the wgmma registers (``ctx.relevant``); None if none
    read: tuple = ()  # wgmmas in flight whose accumulators it reads (``InFlightReads``)


Step = tuple[PS, At, bool]
"""A rule's answer: the state, what the step knows of the instruction, and whether the step is done."""


class StepRule(Rule):
    """What the pipeline pass does at one instruction (``STEP_RULES`` orders them).  ``only``: the
    instruction bases it can act on (None: any); the pass skips it for others."""

    only: ClassVar[frozenset[str] | None] = None

    @abstractmethod
    def apply(self, w: Walk, at: At, st: PS) -> Step:
        """The state after this rule; ``done`` ends the instruction's step."""


# ------------------------------------------------------------------ step rules, in STEP_RULES order


@dataclass(frozen=True)
class DivergentPipe(StepRule):
    """A fence, wgmma, commit or wait under divergent control marks every later state: a wait
    ptxas would inject for a read outside divergent control then serialises the function (C7518,
    ``Walk.serialised_by_divergence``)."""

    probes = ("div_pipe_*", "div_pipeline_*", "div_wait_*", "div_commit_*", "div_fence_*", "pipe_*")

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        if at.site in w.div_pipe_sites and not st.div_pipe:
            st = st._replace(div_pipe=True)
        return (st, at, False)


@dataclass(frozen=True)
class Fence(StepRule):
    """A fence opens a stage and closes the open group (ptxas commits uncommitted wgmmas there);
    after a divergent merge it makes the group counts agree again: a later wgmma or commit needs no
    arrive on one path only (measured: div_stage_then_stage)."""

    only = frozenset({"wgmma"})
    probes = ("fence_*", "loop_fence*", "div_stage_then_*", "second_commit_*")

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        if not is_fence(at.ins):
            return (st, at, False)
        site = at.site
        fl, implicit = implicit_commit(st.fl)
        return (st._replace(armed=True, dirty=frozenset(), stage=frozenset(), arm_div=False, open=True,
                                fences=frozenset({site}), fl=fl, raw=min(st.raw + implicit, 8), call_at=None,
                                zdirty=frozenset(), pblock=site.block, raw_div=False, ghost=frozenset()), at, True)


@dataclass(frozen=True)
class Wgmma(StepRule):
    """C7519 at a wgmma no fence reaches, or the first wgmma of a stage whose accumulators a
    non-wgmma instruction wrote since the fence (writes of 0 excepted: ptxas uses RZ -- unless
    zeroed beside loaded ones), or whose A registers were rewritten after a wgmma of the stage read
    them, or after an accumulator in flight was redefined ("flag").  C7520 where paths that differ
    in their stage met divergently.  A dead wgmma (``ptxas_dce``) draws nothing but still makes
    divergent paths differ."""

    only = frozenset({"wgmma"})
    probes = ("no_fence*", "acc_zero_*", "a_written_*", "acc_write_before*", "acc_read_before*", "acc_rmw_*",
              "acc_const_*", "dead_wgmma*", "unfenced_*", "wgmma_after_wait*", "copy*", "add*", "desc_written_*",
              "acc_write_after*")

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        ins, site, line = at.ins, at.site, at.line
        if not is_wgmma(ins):
            return (st, at, False)
        acc, a, _ = wgmma_regs(ins)
        if st.arm_div or st.stage_div or st.raw_div:
            w.out.divergent.append((_order(site), "C7520"))
        if site in w.dead:  # a ghost matters only where the stage still needs its arrive (measured)
            return (st._replace(ghost=st.ghost if st.armed else st.ghost | {site}, open=True), at, True)
        dirty = st.dirty
        first = not st.stage_acc  # accumulator rewrites count only at a stage's first wgmma
        # a zeroed accumulator is free only where every accumulator the wgmma reads is a constant:
        # ptxas then drops the read (as with scale-d 0); one zeroed beside loaded ones is a write
        # like any other (measured: acc_zero_one_of_four_after_fence, acc_zero_after_fence)
        zeroed = tied_acc(ins) & st.zdirty and not tied_acc(ins) <= st.konst
        if not st.armed or st.flag or zeroed or (first and tied_acc(ins) & dirty) or (a & dirty & st.stage):
            # "flag": an accumulator in flight was redefined (moot once serialised)
            w.out.arrive.setdefault(line, "flag" if st.armed and st.flag and not zeroed and not (first and tied_acc(ins) & dirty)
                                    and not (a & dirty & st.stage) else "stage")
            w.out.arrive_at.setdefault(line, site)
            dirty = frozenset()
        return (st._replace(armed=True, dirty=dirty, stage=st.stage | acc | a, flag=False, vals=st.vals - acc,
                                zdirty=less(st.zdirty, acc),
                                konst=st.konst - acc, cin=(st.cin - acc) | (acc & st.konst),
                                fl=norm(frozenset(x for x in st.fl if x[0] != site) | {(site, -1)}),
                                waited=st.waited - {site}, lagged=st.lagged - {site}, stage_acc=st.stage_acc | acc,
                                open=True,
                                tied=st.tied | (frozenset() if _scale_d_zero(ins) else acc),
                                wait_div=st.wait_div - {site}, div_issued=st.div_issued - {site}, call_at=None,
                                pblock=site.block), at, True)


@dataclass(frozen=True)
class Commit(StepRule):
    """A commit makes a group of the stage (a lone one too, when something opened it); C7519 at a
    commit with no fence before it or after an accumulator of its stage was rewritten; C7520 where
    paths differing in their stage met divergently."""

    only = frozenset({"wgmma"})
    probes = ("commit*", "fence_commit*", "no_commit*", "empty_commit_*", "lone_commit_*", "empty_group_*")

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        if not is_commit(at.ins):
            return (st, at, False)
        line, site = at.line, at.site
        if st.arm_div or st.stage_div or st.raw_div:
            w.out.divergent.append((_order(site), "C7520"))
        if not st.armed or st.flag:
            w.out.arrive.setdefault(line, "flag" if st.armed else "stage")
            w.out.arrive_at.setdefault(line, site)
        counted = st.open or not st.armed
        return (st._replace(armed=True, fl=frozenset((s, 0 if d < 0 else min(d + 1, 8)) for s, d in st.fl),
                                unknown_flying=st.unknown_flying or (counted and st.entry_unknown),
                                unknown_waited=st.unknown_waited and not (counted and st.entry_unknown),
                                clean_fl=st.clean_fl or not st.opaque,
                                flag=False, stage_acc=frozenset(), tied=frozenset(), raw=min(st.raw + counted, 8),
                                open=st.open or not st.armed, stage_div=False, raw_div=False, call_at=None,
                                ghost=frozenset(), pblock=site.block), at, True)


@dataclass(frozen=True)
class WaitGroup(StepRule):
    """``wait_group N`` passes the groups deeper than N (committing still-uncommitted wgmmas
    first, as ptxas does); after one, ptxas knows what is in flight (``entry_unknown`` ends)."""

    only = frozenset({"wgmma"})
    probes = ("wait1_*", "wait8*", "wait_partial_*", "use_wait*", "guarded_wait_*", "no_commit_wait*",
              "uncommitted_*", "wgmma_branch*")

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        if not is_wait(at.ins):
            return (st, at, False)
        if st.stage_div:
            w.out.divergent.append((_order(at.site), "C7520"))
        n = wait_n(at.ins) or 0
        fl, implicit = implicit_commit(st.fl)
        passed = frozenset(s for s, d in fl if d >= 0)
        raw = min(st.raw + implicit, 8, n)
        return (st._replace(fl=frozenset((s, d) for s, d in fl if d < n), waited=st.waited | passed,
                                wait_div=less(st.wait_div, frozenset(s for s, d in fl if d >= n) - {s for s, d in fl if d < n}),
                                lagged=st.lagged | {s for s, d in fl if 0 <= d < n},
                                raw=raw, split=st.split if raw else frozenset(), raw_div=False,
                                open=st.open or st.armed, call_at=None, pblock=at.site.block, ghost=frozenset(),
                                entry_unknown=False, unknown_flying=False, clean_fl=st.clean_fl and bool(raw),
                                unknown_waited=st.unknown_waited or st.unknown_flying), at, True)


@dataclass(frozen=True)
class Exit(StepRule):
    """C7517 at a ``ret``/``exit`` reached with committed groups not waited for -- or at the
    branch that split paths with and without open groups, or at a call since (``Walk.exit_at``).
    A ``trap`` is an exit like them (measured: trap_*) -- save one after a call to
    ``__assertfail``, which does not return (measured: trap_after_assertfail)."""

    only = frozenset({"ret", "exit", "trap"})
    probes = ("no_wait*", "loop_no_*", "split_*", "call_split_*", "exit_wait_*", "falls_off_the*",
              "commit_no_wait*", "store_then_guarded*", "split_store_*", "trap_*")

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        if at.ins.base not in ("ret", "exit", "trap"):
            return (st, at, False)
        if at.ins.base == "trap" and _after_system_call(w.ctx, at.site):
            return (st, at, True)  # (unreachable after ``__assertfail``: strategies #87-92, #1593)
        return (w.exit_at(at.line, st), at, True)


@dataclass(frozen=True)
class ExitJump(StepRule):
    """A ``bra`` to a block holding nothing but the exit is the exit itself (``ptxas_sites.exit_jumps``):
    ptxas waits at the branch, on both paths of a guarded one."""

    probes = ("exit_jump*",)

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        if at.site not in w.jumps_out or not (st.raw or st.fl):
            return (st, at, False)
        return (w.exit_at(at.line, st, jump=True)._replace(fl=frozenset(), raw=0, split=frozenset(),
                                                               open=st.open or st.armed, call_at=None), at, True)


@dataclass(frozen=True)
class Call(StepRule):
    """A call with groups in flight: a later wait is reported at the call (right after a loop
    with wgmmas in flight, at the loop's exit branch; inside a loop entered with groups in flight,
    at the end of the last commit's block).  An opaque call (indirect, or a system function)
    serialises: C7510, or C7509 after a direct call to a function whose address is taken, C7520
    inside a stage.  A direct call breaks the stage: the next wgmma or commit needs an arrive."""

    only = frozenset({"call"})
    probes = ("call_*", "indirect_*", "direct_then_indirect*", "extern_*", "wait_at_indirect*",
              "empty_group_after_direct_and_indirect*", "div_stage_indirect*", "div_wait_use_indirect*",
              "use_after_indirect_call*", "use_before_indirect_call*", "wait_read_past_calls_*")

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        ins, site, line = at.ins, at.site, at.line
        if ins.base != "call":
            return (st, at, False)
        ctx, pos = w.ctx, w.pos
        callee = _callee(ins)
        if (st.fl or st.raw) and st.call_at is None and (_opaque(callee) or (
                isinstance(callee, Sym) and callee.name in w.funcs)):
            # a later wait is reported at this call, even past a split (measured: exit_wait_call_after_split);
            # right after a loop whose wgmmas are in flight, at the loop's exit branch (as a read there)
            flying = {s for s, _ in st.fl} or (set(ctx.wgmmas) if st.raw else set())
            where = _loop_exit_line(ctx, pos, site, flying) or line
            if where == line and st.pblock not in (None, site.block) and _in_loop(ctx, pos, site.block) \
                    and st.pblock in pos and not loop_spans(ctx, pos, pos[st.pblock], pos[site.block]):
                # a call inside a loop entered with groups in flight: at the end of the last
                # commit's block, as a read there would be (measured: experiments_entry.py, call_in_loop_*;
                # that block in another loop: strategies #1743-1749, shrunk: trap_inner_loop_then_call_in_loop)
                kept = [i for k, i in enumerate(ctx.g.blocks[st.pblock].instrs) if Site(st.pblock, k) not in w.gone]
                where = _line(kept[-1]) if kept else line
                # ... for an opaque call, a wait on every path from there: a later read waits there
                # too (strategies #1743-1749: a read after the loop, past a path to the call that ends
                # in a trap; reported only where something needs it: campaign seed 7 #80)
                if _opaque(callee):
                    w.hoisted.setdefault(st.pblock, where)
            if where == line and _opaque(callee):
                where = _assert_branch_line(ctx, w, site) or where
            st = st._replace(call_at=where, split=frozenset())
            if _opaque(callee):
                w.out.wait_opaque[where] = True
                w.opaque_at.add(where)
        if _opaque(callee):  # indirect: ptxas gives up on the pipeline (measured)
            st = st._replace(opaque=True, clean_fl=False)
            if any(d < 0 for _, d in st.fl):
                w.out.divergent.append((_order(site), "C7520"))
            else:  # after a direct call ptxas names it an extern call (measured)
                direct = _order_pos(pos, site) > w.first_direct
                w.out.ser.append((_order(site), "C7509" if direct else "C7510"))
        elif isinstance(callee, Sym) and callee.name in w.funcs:
            unc = any(d < 0 for _, d in st.fl)
            if st.div_pipe and st.armed and not st.fl:
                # a fenced stage with no wgmma in flight ends at the call: what ran under divergent
                # control before no longer serialises a later read's wait (strategies #157-162,
                # shrunk: div_pipe_fence_then_direct_call_then_read; without the fence, C7518)
                st = st._replace(div_pipe=False)
            st = st._replace(flag=st.flag or unc, armed=st.armed and unc)
        return (st, at, False)


@dataclass(frozen=True)
class ScaleDZeroRewriteOnPath(StepRule):
    """ptxas renames a scale-d 0 wgmma's accumulator rewritten while it is in flight -- but not a
    rewrite on one path only (under a branch the wgmma is not under) that is read later: C7515
    (measured: campaign seed 5 #80, shrunk)."""

    probes = ("scale_d_0_acc_rewritten_on_a_path*",)

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        if not at.rel or not st.fl:
            return (st, at, False)
        ctx = w.ctx
        mine = ctx.ctrl_deps(at.site)
        hit = {r for r in at.rel for s, _ in st.fl
               if _scale_d_zero(ctx.wgmmas[s]) and r in wgmma_regs(ctx.wgmmas[s])[0] and ctx.ctrl_deps(s) != mine}
        if hit and read_later(ctx, w.pos, at.site, hit):
            w.out.ser.append((_order(at.site), "C7515"))
        return (st, at, False)


@dataclass(frozen=True)
class OperandRewrite(StepRule):
    """A rewrite of a wgmma register: of an A register or a scale-d 0 accumulator of the open
    stage, an arrive where a later wgmma reads it (``arrive_for_operand_write``); of an
    accumulator, what it costs depends on where its value is read (``value_uses``): nothing,
    an arrive at the next wgmma or commit (``arrive_for_write``), or C7515.  Zeroing needs no
    arrive before the stage (ptxas writes RZ) but still redefines an accumulator; a rewrite
    between two wgmmas of a stage is free when the next one does not read it or both are the
    same instruction."""

    probes = ("acc_write_in_flight_*", "operand_write_in_flight_*", "acc_write_between*",
              "acc_zero_in_flight*", "rewrite_arrive_*", "acc_write_after_commit*", "campaign_s*_zero_read*",
              "self_move_in_flight*", "later_acc_rmw_*", "a_move_*")

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        rel = at.rel
        if not rel:
            return (st, at, False)
        ctx, ins, site = w.ctx, at.ins, at.site
        if not w.out.a_in_flight and any(not rel.isdisjoint(wgmma_regs(ctx.wgmmas[s])[1]) for s, _ in st.fl) \
                and _in_loop(ctx, w.pos, site.block) and any(
                    _order_pos(w.pos, s) <= _order_pos(w.pos, site) and not rel.isdisjoint(wgmma_regs(i)[1])
                    for s, i in ctx.wgmmas.items()):
            # an A register of a wgmma in flight written in a loop that brings it back to a wgmma: the
            # allocator may serialise (C7513 "may", ptxas_pressure.allocator_may; measured:
            # operand_write_in_flight_a_zero_loop prints it, the straight-line a_written_*,
            # operand_write_in_flight_a_* and rewrite_arrive_a_indirect_call do not)
            w.out.a_in_flight = True
        zero = _writes_zero(ctx, site, ins)
        # a move into an A register (of a constant or a register) is a copy ptxas propagates: no
        # arrive, at the next wgmma or any later one (measured: a_move_between_wgmmas_*)
        moved_a = rel & w.a_regs if ins.base == "mov" and ins.guard is None else frozenset()
        # a write in flight: what ptxas says depends on where its value is read (value_uses)
        plain_write = ins.guard is None
        if plain_write and not st.flag and arrive_for_operand_write(ctx, w.pos, site, ins, st, zero or bool(moved_a)):
            st = st._replace(flag=True)
        if zero and not _next_pipe_is_wgmma(ctx, site):
            # ... unless no wgmma follows in the stage: then only an accumulator that entered
            # the wgmma as a non-constant and is read far from the write makes it serialise, with
            # an arrive at the commit if a far read comes before it (measured: acc_write_in_flight_*)
            hit = frozenset(r for r in rel - st.cin if any(r in tied_acc(ctx.wgmmas[s]) for s, _ in st.fl))
            if hit:
                seen = value_uses(ctx, site, hit)
                if seen.far:
                    w.out.ser.append((_order(site), "C7515"))
                if seen.far_before and "commit" in seen.next_pipe and hit & st.tied and not st.flag:
                    st = st._replace(flag=True)
            return (st, at, True)
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
            if w1 is None or _scale_d_zero(w2) or (_same_wgmma(w1, w2) and w.straight):
                fed.add(r)
            else:
                moved.add(r)
        dirty = st.dirty if zero else plus(st.dirty, rel - moved_a)
        flag = st.flag or bool(moved) or arrive_for_write(ctx, site, ins, (rel & st.tied) - fed - (st.cin if plain_write else frozenset()))
        if dirty is not st.dirty or flag != st.flag:
            st = st._replace(dirty=dirty, flag=flag)
        if zero and rel - fed:
            st = st._replace(zdirty=plus(st.zdirty, rel - fed))
        return (st, at._replace(defs=at.defs - fed - moved), False)


@dataclass(frozen=True)
class InFlightReads(StepRule):
    """With nothing in flight (no wgmma, no committed group) an instruction's reads and writes
    matter no further; otherwise it notes the wgmmas in flight whose accumulators it reads -- not
    a register a plain instruction rewrote since: that holds the new value (measured:
    acc_write_in_flight_read_near)."""

    probes = ("acc_write_in_flight_read_near*",)

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        if not st.fl and not st.raw:  # (a group with no wgmma still makes a feed wait: fence_commit_feed_read)
            return (st, at, True)
        mine = at.uses - st.over if st.over else at.uses
        wg = w.ctx.wgmmas
        return (st, at._replace(read=tuple(s for s, _ in st.fl if mine & wgmma_regs(wg[s])[0])), False)


@dataclass(frozen=True)
class FeedRead(StepRule):
    """A read of a value some later wgmma takes as accumulator while a group is in flight: ptxas
    waits before it (at the end of the last commit's block when that is another block), there even
    after a direct call -- but only while no wait_group has been passed since the entry (then ptxas
    does not know what is in flight), not of a constant folded in this block, not for a dead output,
    and after an indirect call only inside a loop."""

    probes = ("feed_*", "entry_*", "dead_feed*", "later_acc_read_*", "earlier_acc_read_*",
              "read_before_scale_d_0*", "empty_group_wait_skipped_*", "div_bra_uni_over_feed*")

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        if at.read or at.guarded:
            return (st, at, False)
        ctx, site, uses = w.ctx, at.site, at.uses
        # (a constant from another block is read too; a never-written one only while a group
        # committed from the entry's unknown state is in flight)
        u_acc = uses & w.accs  # (small: set differences over all of accs cost ~5% of the checker)
        feed = (uses & st.vals) | (u_acc - st.here - st.unset) | (u_acc & st.unset if st.unknown_flying else frozenset())
        if not feed:
            return (st, at, False)
        # (not where a path that waited for the groups in flight merged in: measured, feed_read_after_partial_wait)
        # groups with no wgmma make a feed wait only when committed from the entry's unknown state
        # (after a wait_group ptxas knows they are empty: measured, experiments_entry.py)
        pending = any(s not in st.waited for s, _ in st.fl) if st.fl else st.unknown_flying and not st.unknown_waited
        # ... and none at all once a wait_group has been passed (measured: experiments_entry.py)
        pending = pending and st.entry_unknown
        if not (pending and w.feeds_later_wgmma(feed, site) and site not in dead_for_feeds(ctx)):
            # (a read only a dead output needs: measured, feed_of_dead_accumulator_*)
            return (st, at, False)
        where = _store_pair_line(ctx, site, at.ins)
        if feed <= st.konst | st.unset:  # a constant: ptxas folds a run of updates into the last
            where = _folded_run_line(ctx, site, at.ins) or where
        # after an indirect call ptxas reports it only inside a loop, and not when the call
        # came between the commit and the read (measured: feed_read_*)
        shown = _order_pos(w.pos, site) < w.first_indirect or (_in_loop(ctx, w.pos, site.block) and not st.call_at)
        if not w.serialised_by_divergence(site, st):  # (measured: div_pipe_commit_then_feed)
            w.out.wait_feed[where] = w.out.wait_feed.get(where, False) or shown
            w.out.wait_feed_at.setdefault(where, site)
        if st.pblock is not None and st.pblock != site.block and not st.call_at:
            # ... placed at the end of the last commit's block
            w.forced.setdefault(st.pblock, (where, shown))
        return (st._replace(fl=frozenset(), raw=0, split=frozenset(), open=False, call_at=None), at, True)


@dataclass(frozen=True)
class AccumulatorRead(StepRule):
    """A non-wgmma read of an accumulator in flight: C7517 where ptxas waits (at the read; the
    second store of a pair; a call since; a loop's exit branch; a divergent branch above it) or
    serialisation: C7514 for a read a wait_group does not cover or of a wgmma carried around a
    loop, C7511/C7514 for an uncommitted wgmma's accumulator read before another wgmma, C7518 where
    the wgmma is in flight on divergent paths only."""

    probes = ("acc_read_after*", "acc_read_mid_pipeline_scale_d_0*", "store_pair_*", "read_uncommitted_*", "wait_skipped_*", "loop_exit_use*",
              "fence_between_read*", "guarded_use_*", "extra_stage_on_a_path*", "div_skip_wait_*",
              "div_branch_*", "uni_*", "bra_uni_*", "loop_*", "div_guard_*", "dead_divergent*")

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        read = at.read
        if not read:
            return (st, at, False)
        ctx, pos, site, ins, guarded = w.ctx, w.pos, at.site, at.ins, at.guarded
        if any(s in st.wait_div for s in read):
            w.out.divergent.append((_order(site), "C7518"))
            return (st, at, True)
        if not guarded and any(d < 0 and not _scale_d_zero(ctx.wgmmas[s]) for s, d in st.fl if s in read) \
                and _next_pipe_is_wgmma(ctx, site):
            # an uncommitted wgmma's accumulator read, then another wgmma before the commit: ptxas
            # serialises instead of waiting here -- C7511 when the registers read went in as
            # constants, else C7514 (measured: read_uncommitted_then_wgmma_*); not for a scale-d 0
            # wgmma, which reads no accumulator: ptxas waits at the read (acc_read_mid_pipeline_scale_d_0)
            hit = at.uses & frozenset().union(*(wgmma_regs(ctx.wgmmas[s])[0] for s in read))
            w.out.ser.append((_order(site), "C7511" if hit <= st.cin else "C7514"))
            return (st, at, True)
        cleared = st._replace(fl=frozenset(), raw=0, split=frozenset(), open=False)
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
                w.wait_for_read(after, site, st)
                return (cleared, at, True)
            branch = _divergent_branch_line(ctx, site)
            if branch is None:
                # a wait_group some path passed (a uniform branch or guard skipped it on another, no
                # wait_group left it in flight): C7514 even after a divergent pipeline instruction
                # (measured: div_pipe_then_skipped_wait_*; a wait_group 1 that leaves it in flight
                # serialises as C7518 there: div_pipe_wait1_then_read)
                skipped = any(s in st.waited for s in read) and not any(s in st.lagged for s in read)
                if skipped or not w.serialised_by_divergence(site, st):
                    w.out.ser.append((_order(site), "C7514"))
                if skipped and _order_pos(pos, site) > w.first_indirect:
                    w.out.skipped_read = True
                return (st, at, True)
            # ... unless the read sits under a divergent branch: ptxas waits at the branch instead
            w.wait_for_read(branch, site, st)
            return (cleared, at, True)
        if st.call_at is not None and st.call_at in w.opaque_at:
            # the wait an opaque call needed serves the read: no serialisation by divergence (strategies
            # #1743-1749, shrunk: trap_inner_loop_then_call_in_loop)
            w.out.wait_at_use[st.call_at] = True
        else:
            w.wait_for_read(st.call_at or _hoisted_line(ctx, st, site) or _loop_exit_line(ctx, pos, site, read)
                            or _store_pair_line(ctx, site, ins), site, st)
        return (cleared._replace(call_at=None), at, True)


@dataclass(frozen=True)
class InFlightWrite(StepRule):
    """C7515: a plain write of an accumulator a wgmma in flight reads -- guarded, or read far
    from the write (``value_uses``; ptxas renames one read only near it)."""

    probes = ("acc_write_in_flight_read_after*", "acc_write_in_flight_guarded*", "acc_write_in_flight_read_by_*")

    def apply(self, w: Walk, at: At, st: PS) -> Step:
        ctx = w.ctx
        hit = frozenset(r for s, _ in st.fl for r in at.defs & tied_acc(ctx.wgmmas[s]))
        if hit and (at.ins.guard is not None or ((hit := hit - st.cin) and value_uses(ctx, at.site, hit).far)):
            w.out.ser.append((_order(at.site), "C7515"))
        return (st, at, True)


STEP_RULES: tuple[StepRule, ...] = (DivergentPipe(), Fence(), Wgmma(), Commit(), WaitGroup(), Exit(), ExitJump(), Call(),
                                    ScaleDZeroRewriteOnPath(), OperandRewrite(), InFlightReads(), FeedRead(),
                                    AccumulatorRead(), InFlightWrite())
"""At each instruction, in this order, until one is done: pipeline instructions and exits first, then
calls, then what the instruction writes, then what it reads."""


# Arithmetic whose result is a constant when its register inputs are (ptxas folds it).
_FOLDABLE = frozenset({"mov", "xor", "and", "or", "not", "add", "sub", "mul", "neg", "abs", "cvt", "shl", "shr"})


@dataclass(frozen=True)
class ValueTracking(Rule):
    """After every step, what ptxas knows of the accumulator values: never written (a constant to
    it), rewritten by a plain instruction (a read reads that value, no wait), a constant it folds
    (in this block since its last call), or a value it must wait for."""

    probes = ("feed_read_of_*", "acc_write_in_flight_read_near*", "read_uncommitted_zero_acc*")

    def apply(self, w: Walk, at: At, before: PS, st: PS) -> PS:
        ins = at.ins
        if is_wgmma(ins):
            acc = wgmma_regs(ins)[0]
            if st.unset and not st.unset.isdisjoint(acc):
                st = st._replace(unset=st.unset - acc)
            if st.over and not st.over.isdisjoint(acc):
                st = st._replace(over=st.over - acc)
            return st
        d, u = defs_uses(ins)
        if not w.accs.isdisjoint(d):
            d = d & w.accs
            if not st.unset.isdisjoint(d):
                st = st._replace(unset=st.unset - d)
            if ins.guard is None and not d <= st.over:
                st = st._replace(over=st.over | d)
            folded = ins.guard is None and ins.base in _FOLDABLE and u <= before.konst
            near = folded and u <= before.here
            vals = less(st.vals, d) if near else plus(st.vals, d)
            konst = plus(st.konst, d) if folded else less(st.konst, d)
            here = plus(st.here, d) if folded else less(st.here, d)
            if vals is not st.vals or konst is not st.konst or here is not st.here:
                st = st._replace(vals=vals, konst=konst, here=here)
        elif ins.base == "call":
            st = st._replace(here=frozenset())
        return st


TRACK = ValueTracking()


# ------------------------------------------------------------------ function rules


class FunctionRule(Rule):
    """A pass over one function that records into its report (``ptxas_model.FUNCTION_RULES``)."""

    @abstractmethod
    def apply(self, ctx: FnCtx, out: Out) -> None:
        """Record what ptxas reports for ``ctx``'s function into ``out``."""


_SIDE_EFFECTS = frozenset({"ld", "st", "atom", "red", "bar", "barrier"})


@dataclass(frozen=True)
class BraUniDistrusted(FunctionRule):
    """ptxas trusts ``bra.uni`` (even on %tid.x) -- save, in a function with a guarded load,
    store, atomic or barrier that it keeps, or a guarded wgmma it deletes as dead, a ``bra.uni``
    over a fence, wgmma or commit; a guarded ``setp``, wait, commit, ``ret`` or live wgmma, or a
    dead guarded ``add``, leaves it trusted, as does a region holding only a wait_group (campaign
    findings seed 9 #93 and seed 10 #77).  The function's ptxas uniformity is then recomputed with
    those branches divergent, for every later rule."""

    probes = ("bra_uni_distrusted_*", "bra_uni_trusted_*")

    def apply(self, ctx: FnCtx, out: Out) -> None:
        distrust = self.distrusted(ctx)
        if distrust:
            ctx._ptxas_uni = analyse_uniformity(ctx.fn, ctx.g, "ptxas", distrust_uni=distrust)

    @staticmethod
    def distrusted(ctx: FnCtx) -> frozenset:
        """The blocks whose closing ``bra.uni`` ptxas does not trust."""
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


@dataclass(frozen=True)
class StageStructure(FunctionRule):
    """C7519 at a wgmma or commit separated by a branch or guard from the stage piece (fence,
    wgmma or commit) before it on some path: ptxas re-arrives there (measured)."""

    probes = ("fence_branch*", "uni_guard*", "uni_branch*", "uni_ifelse*", "uni_commit_*", "div_guard_wgmma*")

    def apply(self, ctx: FnCtx, out: Out) -> None:
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


# ------------------------------------------------------------------ what the rules ask


def read_later(ctx: FnCtx, pos: dict, site: Site, regs: set) -> bool:
    """Some instruction after ``site`` in layout order reads one of ``regs``."""
    here = (pos.get(site.block, 0), site.pos)
    return any((pos.get(b, 0), k) > here and regs & defs_uses(ins)[1]
               for b in ctx.g.order for k, ins in enumerate(ctx.g.blocks[b].instrs))


def loop_spans(ctx: FnCtx, pos: dict, a: int, b: int) -> bool:
    """Some loop (a back edge, in layout order) holds both layout positions ``a`` and ``b``."""
    lo, hi = min(a, b), max(a, b)
    return any(pos[h] <= lo and hi <= j for p, j in pos.items() for h in ctx.g.succs[p] if h in pos and pos[h] <= j)


def in_place(ins: Instr) -> bool:
    """The instruction reads a register it writes (its guard aside)."""
    d, u = defs_uses(ins)
    if not d:
        return False
    return not d.isdisjoint(u - {ins.guard.reg.name} if ins.guard is not None else u)


_IDENTITY_RIGHT = {"add": 0, "sub": 0, "or": 0, "xor": 0, "shl": 0, "shr": 0, "mul": 1}  # x op c == x
_COMMUTES = frozenset({"add", "or", "xor", "mul"})


def self_move(ins: Instr) -> bool:
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


def copy_like(ins: Instr) -> bool:
    """A move in ptxas's eyes: ``mov``, ``neg``, ``abs``, a ``mul`` by one (measured:
    acc_write_in_flight_*: these rewrites of an in-flight accumulator draw no arrive at the commit
    where an ``add``, ``cvt``, ``ld`` or ``selp`` does)."""
    if ins.base in ("mov", "neg", "abs"):
        return True
    return ins.base == "mul" and len(ins.operands) == 3 and any(
        isinstance(o, Imm) and o.value == 1 for o in ins.operands[1:])


def arrive_for_write(ctx: FnCtx, site: Site, ins: Instr, regs: frozenset) -> bool:
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
            or ("commit" in seen.next_pipe and (seen.far_before or (seen.past and not copy_like(ins)))))


def arrive_for_operand_write(ctx: FnCtx, pos: dict, site: Site, ins: Instr, st: PS, zero: bool) -> bool:
    """An unguarded rewrite of an A-fragment register, or of an accumulator of a scale-d 0 wgmma, of
    the open stage's wgmmas (not yet committed) makes ptxas arrive at the next wgmma, or -- for a
    write that is not a move -- the next commit, when a later wgmma reads the value past that
    instruction (measured: operand_write_in_flight_*; a plain read does not count, unlike for an
    accumulator the wgmma reads: ``arrive_for_write``).  A zeroed or moved A register (``zero``) is a
    copy ptxas propagates unless the reading wgmma comes around a loop."""
    ops: set = set()
    for s, d in st.fl:
        if d < 0:
            acc, a, _ = wgmma_regs(ctx.wgmmas[s])
            ops |= a | (acc if _scale_d_zero(ctx.wgmmas[s]) else frozenset())
    regs = (defs_uses(ins)[0] & ops) - st.tied
    if not regs:
        return False
    seen = value_uses(ctx, site, frozenset(regs))
    here = _order_pos(pos, site)
    a_regs = frozenset().union(*(wgmma_regs(ctx.wgmmas[s])[1] for s, d in st.fl if d < 0))
    readers = [r for r in seen.wgmma_past
               if not (zero and regs <= a_regs and _order_pos(pos, r) > here)]
    if not readers:
        return False
    return "wgmma" in seen.next_pipe or ("commit" in seen.next_pipe and not copy_like(ins))


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


def _assert_branch_line(ctx: FnCtx, w: Walk, site: Site) -> int | None:
    """An opaque call in a block that ends the path (a ``trap``) and that only a guarded branch
    falls into: ptxas waits before that branch, on both its paths, and reports the branch's line
    (measured: strategies #1749, an ``__assertfail`` in a loop committing groups, read after the
    loop).  The branch's block is marked (``Walk.hoisted``): the path that skips the call waits there too."""
    g = ctx.g
    if g.succs[site.block]:
        return None
    b = site.block  # (blocks that only fall into the next one are one block: a label nothing jumps to)
    while len(g.preds[b]) == 1 and tuple(g.succs[g.preds[b][0]]) == (b,):
        b = g.preds[b][0]
    if len(g.preds[b]) != 1:
        return None
    p = g.preds[b][0]
    last = g.blocks[p].instrs[-1] if g.blocks[p].instrs else None
    if last is None or last.base != "bra" or last.guard is None or len(g.succs[p]) != 2:
        return None
    w.hoisted.setdefault(p, _line(last))
    return _line(last)


def _after_system_call(ctx: FnCtx, site: Site) -> bool:
    """A call to ``__assertfail`` (which does not return) comes before ``site`` in its block."""
    return any(i.base == "call" and isinstance(_callee(i), Sym) and _callee(i).name == "__assertfail"
               for i in ctx.g.blocks[site.block].instrs[:site.pos])


def tied_acc(ins: Instr) -> frozenset:
    """Accumulators a wgmma reads and writes: with scale-d 0 it only writes them, and ptxas renames a
    register rewritten while such a wgmma is in flight (measured: acc_write_in_flight_scale_d_0)."""
    return frozenset() if _scale_d_zero(ins) else wgmma_regs(ins)[0]


def after_calls_on_every_path(ctx: FnCtx):
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


_FOR_BASE: dict[str, tuple[StepRule, ...]] = {}


def rules_for(base: str) -> tuple[StepRule, ...]:
    """``STEP_RULES`` less those that cannot act on an instruction of this base (``StepRule.only``)."""
    got = _FOR_BASE.get(base)
    if got is None:
        got = _FOR_BASE[base] = tuple(r for r in STEP_RULES if r.only is None or base in r.only)
    return got
