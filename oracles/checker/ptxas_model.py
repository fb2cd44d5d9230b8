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
  ``C7510`` an indirect call in a function with wgmma; ``C7520``/``C7518`` paths whose stage
  state differs meeting at the reconvergence point of a branch ptxas thinks divergent (or a
  guard), when a later wgmma/commit (C7520) or accumulator read (C7518) depends on it; an
  indirect call inside a stage (C7520).  After C7520/C7518 ptxas prints nothing else.
ptxas's divergence is not the spec's: anything from %tid.*/%laneid (even %tid.x >> 7) is
divergent, %warpid/%clock/shfl broadcasts are uniform, ``bra.uni`` is trusted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from fuzzptx import isa
from fuzzptx.ptx.ir import Addr, Imm, Instr, Module, Reg, Sym

from .context import FnCtx, Site, build_ctx, sites
from .findings import Finding, PredictedDiag, PredictedDiagnostics
from .flow import solve_forward
from .ptxas_errors import _callee, predict_errors
from .regs import defs_uses, is_commit, is_fence, is_wait, is_wgmma, wait_n, wgmma_regs

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
    wait: dict = field(default_factory=dict)  # line -> True (C7517)
    wait_ser: dict = field(default_factory=dict)  # C7517 lines if the function is serialised
    wait_at_use: dict = field(default_factory=dict)  # C7517 at reads of accumulators in flight
    wait_feed: dict = field(default_factory=dict)  # C7517 at reads of future accumulator inputs
    ser: list = field(default_factory=list)  # [(order, code)]
    divergent: list = field(default_factory=list)  # [(order, code)]


def _line(ins: Instr | None) -> int | None:
    return ins.loc.line if ins is not None and ins.loc else None


def _order(site: Site) -> tuple[int, int]:
    return (site.block, site.pos)


def _reaching(ctx: FnCtx, entry, step) -> dict:
    """Fixed point of a set-valued forward analysis; returns {site: state before it}."""
    before: dict[Site, frozenset] = {}

    def transfer(block: int, st):
        for site, ins in _live_sites(ctx, block):
            st = step(ins, site, st)
        return st

    ins_states = solve_forward(ctx.g, entry, transfer, lambda xs: frozenset().union(*xs))
    for b, st in ins_states.items():
        for site, ins in _live_sites(ctx, b):
            before[site] = st
            st = step(ins, site, st)
    return before


def _structure(ctx: FnCtx, out: _Out) -> None:
    """C7519 at a wgmma or commit separated by a branch or guard from the stage piece (fence,
    wgmma or commit) before it on some path: ptxas re-arrives there (measured)."""

    def step(ins: Instr, site: Site, st):
        if is_fence(ins) or is_wgmma(ins) or is_commit(ins):
            return st | {site} if ins.guard is not None else frozenset({site})
        return st

    last = _reaching(ctx, frozenset({"entry"}), step)
    for site in sorted(last, key=_order):
        ins = ctx.instr(site)
        if not (is_wgmma(ins) or is_commit(ins)):
            continue
        mine = ctx.ctrl_deps(site)
        if any(o != "entry" and ctx.ctrl_deps(o) != mine for o in last[site]):
            out.arrive[_line(ins)] = True


def _is_zero(op) -> bool:
    return isinstance(op, Imm) and op.value == 0


def _writes_zero(ctx: FnCtx, site: Site, ins: Instr, depth: int = 0) -> bool:
    """A ``mov`` of 0, or of a register the same block last set to 0."""
    if ins.base != "mov" or len(ins.operands) != 2 or ins.guard is not None:
        return False
    src = ins.operands[1]
    if _is_zero(src):
        return True
    if not isinstance(src, Reg) or depth > 4:
        return False
    blk = ctx.g.blocks[site.block]
    for k in range(site.pos - 1, -1, -1):
        prev = blk.instrs[k]
        if src.name in defs_uses(prev)[0]:
            return _writes_zero(ctx, Site(site.block, k), prev, depth + 1)
    return False


def _loop_exit_line(ctx: FnCtx, pos: dict, site: Site, wgmmas) -> int | None:
    """A read just after a loop whose wgmmas are still in flight: ptxas waits on the loop's exit
    branch and reports that line (measured)."""
    if any(w.block == site.block and w.pos < site.pos for w in wgmmas):
        return None  # a wgmma after the loop is read too: the wait goes before the read
    for p in ctx.g.preds[site.block]:
        if p not in pos:
            continue
        for h in ctx.g.succs[p]:
            if h in pos and pos[h] <= pos[p] and any(pos[h] <= pos.get(w.block, -1) <= pos[p] for w in wgmmas):
                instrs = ctx.g.blocks[p].instrs
                return _line(instrs[-1]) if instrs else None
    return None


def _scale_d_zero(ins: Instr) -> bool:
    """A wgmma whose scale-d is the immediate 0: it overwrites its accumulators without reading them."""
    form = isa.form_for(ins)
    if form is None:
        return False
    roles = [o.role for o in form.operands]
    if "scale_d" not in roles or roles.index("scale_d") >= len(ins.operands):
        return False
    return _is_zero(ins.operands[roles.index("scale_d")])


def _dead_wgmmas(ctx: FnCtx) -> frozenset:
    """Wgmmas of a run of adjacent wgmmas on the same accumulators that come before the run's last
    wgmma with scale-d 0: that one overwrites what they computed, so ptxas drops them before its
    GMMA passes (measured: an arrive for the run is reported at the overwriting wgmma)."""
    dead = set()
    for b in {s.block for s in ctx.wgmmas}:
        instrs = ctx.g.blocks[b].instrs
        k = 0
        while k < len(instrs):
            if not is_wgmma(instrs[k]):
                k += 1
                continue
            acc, j, last_zero = wgmma_regs(instrs[k])[0], k, None
            while j + 1 < len(instrs) and is_wgmma(instrs[j + 1]) and wgmma_regs(instrs[j + 1])[0] == acc:
                j += 1
                if _scale_d_zero(instrs[j]):
                    last_zero = j
            if last_zero is not None:
                dead.update(Site(b, i) for i in range(k, last_zero))
            k = j + 1
    return frozenset(dead)


def _live_sites(ctx: FnCtx, block: int):
    dead = ctx.__dict__.get("_dead_wgmma")
    if dead is None:
        dead = ctx.__dict__["_dead_wgmma"] = _dead_wgmmas(ctx)
    items = sites(ctx, block, hot_only=True)
    return [x for x in items if x[0] not in dead] if dead else items


def _postdominates(ctx: FnCtx, b: int, a: int) -> bool:
    """Every path from block ``a`` to an exit passes through block ``b``."""
    seen = 0
    while a is not None and seen < 10_000:
        if a == b:
            return True
        a = ctx.g.ipdom.get(a)
        seen += 1
    return False


def _hoisted_line(ctx: FnCtx, st, site: Site) -> int | None:
    """A read in a later block than the last fence/wgmma/commit: ptxas waits at the end of that
    block and reports its last instruction, if the read's block post-dominates it (measured: loops
    and branches between commit and use)."""
    if st.pblock is None or st.pblock == site.block or not _postdominates(ctx, site.block, st.pblock):
        return None
    instrs = ctx.g.blocks[st.pblock].instrs
    return _line(instrs[-1]) if instrs else None


def _divergent_branch_line(ctx: FnCtx, site: Site) -> int | None:
    """Line of a (ptxas-)divergent branch the instruction is control dependent on, if any."""
    for dep in sorted(ctx.g.cdeps[site.block]):
        if ctx.dep_divergent(dep, ptxas=True):
            instrs = ctx.g.blocks[dep[0]].instrs
            return _line(instrs[-1]) if instrs else None
    return None


def _order_pos(pos: dict, site: Site) -> tuple[int, int]:
    return (pos.get(site.block, 0), site.pos)


def _next_access_is_wgmma(ctx: FnCtx, site: Site, reg: str) -> bool:
    """The next instruction of the block touching ``reg`` is a wgmma using it as accumulator."""
    for ins in ctx.g.blocks[site.block].instrs[site.pos + 1:]:
        if is_wgmma(ins) and reg in wgmma_regs(ins)[0]:
            return True
        d, u = defs_uses(ins)
        if reg in d or reg in u:
            return False
    return False


def _sum_of_registers(blk, pos: int, reg: str) -> bool:
    """The block last set ``reg`` (before ``pos``) by an ``add`` of two registers."""
    for prev in reversed(blk.instrs[:pos]):
        if reg in defs_uses(prev)[0]:
            return prev.base == "add" and len(prev.operands) == 3 and all(
                isinstance(o, Reg) for o in prev.operands[1:])
    return False


def _next_pipe_is_wgmma(ctx: FnCtx, site: Site) -> bool:
    """The next wgmma-family instruction of the block is a wgmma (not a commit, wait or fence)."""
    for ins in ctx.g.blocks[site.block].instrs[site.pos + 1:]:
        if ins.opcode.startswith("wgmma."):
            return is_wgmma(ins)
    return False


def _store_pair_line(ctx: FnCtx, site: Site, ins: Instr) -> int | None:
    """ptxas reports a wait before a store paired with the next adjacent store at the second one,
    unless the address is a register sum (base + per-thread offset): then at the first (measured)."""
    blk = ctx.g.blocks[site.block]
    if ins.base == "st" and ins.guard is None and site.pos + 1 < len(blk.instrs) and len(ins.operands) == 2:
        base = ins.operands[0].base if isinstance(ins.operands[0], Addr) else None
        if isinstance(base, Reg) and _sum_of_registers(blk, site.pos, base.name):
            return _line(ins)
        nxt = blk.instrs[site.pos + 1]
        a, b = ins.operands[0], nxt.operands[0] if nxt.operands else None
        if (nxt.opcode == ins.opcode and isinstance(a, Addr) and isinstance(b, Addr) and a.base == b.base
                and abs(a.offset - b.offset) == 4):
            return _line(nxt)
    return _line(ins)


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


ENTRY_STATE = PS(False, frozenset(), frozenset(), False, frozenset(), frozenset(), False, frozenset(), 0,
                 frozenset(), None, False, frozenset({"entry"}), False, False, False, frozenset())


def _join(states: list, divergent: bool, loop_header: bool, at: int | None = None) -> PS:
    """Merge path states; ``at`` is the line a wait injected at the merge would get."""
    a = states[0]
    for b in states[1:]:
        fa, fb = {s for s, _ in a.fl}, {s for s, _ in b.fl}
        ua, ub = {s for s, d in a.fl if d < 0}, {s for s, d in b.fl if d < 0}
        split = a.split | b.split
        pend_a, pend_b = bool(a.raw or a.fl), bool(b.raw or b.fl)
        if not loop_header and pend_a != pend_b:
            split |= {x.last if x.last_branch or at is None else at for x in (a, b)
                      if (x.raw or x.fl) and (x.last is not None or at is not None)}
        a = PS(
            armed=a.armed and b.armed,
            dirty=a.dirty | b.dirty,
            stage=a.stage | b.stage,
            arm_div=a.arm_div or b.arm_div or (divergent and a.fences != b.fences),
            fl=_norm(a.fl | b.fl),
            waited=a.waited | b.waited | _gone(a.fl, b.fl),
            flag=a.flag or b.flag,
            stage_acc=a.stage_acc | b.stage_acc,
            raw=max(a.raw, b.raw),
            split=split,
            last=None,
            last_branch=False,
            fences=a.fences | b.fences,
            open=a.open or b.open,
            stage_div=a.stage_div or b.stage_div or (divergent and ua != ub),
            raw_div=a.raw_div or b.raw_div or (divergent and a.raw != b.raw),
            wait_div=a.wait_div | b.wait_div | (frozenset(fa ^ fb) if divergent else frozenset()),
            call_at=a.call_at or b.call_at,
            pblock=a.pblock if a.pblock == b.pblock else None,
            vals=a.vals | b.vals,
            konst=frozenset() if loop_header else a.konst & b.konst,  # no folding around a loop
        )
    return a


# Arithmetic whose result is a constant when its register inputs are (ptxas folds it).
_FOLDABLE = frozenset({"mov", "xor", "and", "or", "not", "add", "sub", "mul", "neg", "abs", "cvt", "shl", "shr"})


def _pipeline(ctx: FnCtx, out: _Out) -> None:
    """One forward pass with everything ptxas's GMMA passes visibly track (see the module doc)."""
    ctx_funcs = {f.name for f in ctx.module.functions() if f.body is not None}
    div_joins = {ctx.g.ipdom.get(b.index) for b in ctx.g.blocks
                 if len(b.succs) > 1 and any(ctx.dep_divergent((b.index, s), ptxas=True) for s in b.succs)}
    pos = {b: i for i, b in enumerate(ctx.g.order)}
    accs = frozenset().union(*(wgmma_regs(w)[0] for w in ctx.wgmmas.values()))
    forced: dict = {}  # block -> line: ptxas waits at the block's end, reported there (hoisted feed waits)

    def _feeds_later_wgmma(regs: frozenset, site: Site) -> bool:
        """Some wgmma after ``site`` (in layout order) reads one of ``regs`` as accumulator input."""
        here = _order_pos(pos, site)
        return any(_order_pos(pos, w) > here and regs & wgmma_regs(ins)[0] and not _scale_d_zero(ins)
                   for w, ins in ctx.wgmmas.items())

    def plain0(ins: Instr, site: Site, st: PS, report: bool, guarded: bool = False) -> PS:
        line = _line(ins)
        if is_fence(ins):
            fl, implicit = _implicit_commit(st.fl)  # a fence closes the open group (measured)
            return st._replace(armed=True, dirty=frozenset(), stage=frozenset(), arm_div=False, open=True,
                               fences=frozenset({site}), fl=fl, raw=min(st.raw + implicit, 8), call_at=None,
                               pblock=site.block)
        if is_wgmma(ins):
            acc, a, _ = wgmma_regs(ins)
            if (st.arm_div or st.stage_div or st.raw_div) and report:
                out.divergent.append((_order(site), "C7520"))
            dirty = st.dirty
            first = not st.stage_acc  # accumulator rewrites count only at a stage's first wgmma
            if not st.armed or st.flag or (first and acc & dirty) or (a & dirty & st.stage):
                if report:  # "flag": an accumulator in flight was redefined (moot once serialised)
                    out.arrive.setdefault(line, "flag" if st.armed and st.flag and not (first and acc & dirty)
                                          and not (a & dirty & st.stage) else "stage")
                dirty = frozenset()
            return st._replace(armed=True, dirty=dirty, stage=st.stage | acc | a, flag=False, vals=st.vals - acc,
                               konst=st.konst - acc,
                               fl=_norm(frozenset(x for x in st.fl if x[0] != site) | {(site, -1)}),
                               waited=st.waited - {site}, stage_acc=st.stage_acc | acc, open=True,
                               wait_div=st.wait_div - {site}, call_at=None, pblock=site.block)
        if is_commit(ins):
            if (st.arm_div or st.stage_div or st.raw_div) and report:
                out.divergent.append((_order(site), "C7520"))
            if (not st.armed or st.flag) and report:
                out.arrive.setdefault(line, "flag" if st.armed else "stage")
            counted = st.open or not st.armed
            return st._replace(armed=True, fl=frozenset((s, 0 if d < 0 else min(d + 1, 8)) for s, d in st.fl),
                               flag=False, stage_acc=frozenset(), raw=min(st.raw + counted, 8),
                               open=st.open or not st.armed, stage_div=False, raw_div=False, call_at=None,
                               pblock=site.block)
        if is_wait(ins):
            if st.stage_div and report:
                out.divergent.append((_order(site), "C7520"))
            n = wait_n(ins) or 0
            fl, implicit = _implicit_commit(st.fl)
            passed = frozenset(s for s, d in fl if d >= 0)
            raw = min(st.raw + implicit, 8, n)
            return st._replace(fl=frozenset((s, d) for s, d in fl if d < n), waited=st.waited | passed,
                               raw=raw, split=st.split if raw else frozenset(), raw_div=False,
                               open=st.open or st.armed, call_at=None, pblock=site.block)
        if ins.base in ("ret", "exit"):
            if report and (st.raw or st.fl):
                out.wait_ser[line] = True  # a serialised function waits for everything at its exits
            if report and st.raw:
                for x in (st.split or {st.call_at or line}):  # a call since: the wait goes before it
                    out.wait[x] = True
            elif report and st.fl and st.split:
                for x in st.split:
                    out.wait[x] = True
            return st
        if ins.base == "call":
            callee = _callee(ins)
            if st.fl and st.call_at is None and (isinstance(callee, Reg) or (
                    isinstance(callee, Sym) and callee.name in ctx_funcs)):
                st = st._replace(call_at=line)  # a later wait is reported at this call (measured)
            if isinstance(callee, Reg):  # indirect: ptxas gives up on the pipeline (measured)
                if report:
                    if any(d < 0 for _, d in st.fl):
                        out.divergent.append((_order(site), "C7520"))
                    else:
                        out.ser.append((_order(site), "C7510"))
            elif isinstance(callee, Sym) and callee.name in ctx_funcs:
                # a call breaks the stage: the next wgmma or commit needs an arrive (measured)
                unc = any(d < 0 for _, d in st.fl)
                st = st._replace(flag=st.flag or unc, armed=st.armed and unc)
        defs, uses = defs_uses(ins)
        rel = defs & ctx.relevant
        if rel:
            # zeroing needs no arrive before the stage (ptxas writes RZ), but still redefines an
            # accumulator of the open stage or one in flight (measured)
            zero = _writes_zero(ctx, site, ins)
            if zero and not _next_pipe_is_wgmma(ctx, site):
                return st  # ... unless no wgmma follows in the stage: ptxas sinks the constant
            fed = {r for r in rel & st.stage_acc if _next_access_is_wgmma(ctx, site, r)}
            st = st._replace(dirty=st.dirty if zero else st.dirty | rel,
                             flag=st.flag or bool((rel & st.stage_acc) - fed))
            defs = defs - fed
        if not st.fl:
            return st
        read = [s for s, _ in st.fl if uses & wgmma_regs(ctx.wgmmas[s])[0]]
        feed = uses & st.vals
        if not read and not guarded and feed and _feeds_later_wgmma(feed, site):
            # a read of a value some wgmma will take as accumulator, while a group is in flight:
            # ptxas waits before it (measured; moot once an indirect call serialised the function)
            at = st.call_at or _store_pair_line(ctx, site, ins)
            if report:
                out.wait_feed[at] = True
            if st.pblock is not None and st.pblock != site.block and not st.call_at:
                forced.setdefault(st.pblock, at)  # ... placed at the end of the last commit's block
            return st._replace(fl=frozenset(), raw=0, split=frozenset(), open=False, call_at=None)
        if read:
            if any(s in st.wait_div for s in read):
                if report:
                    out.divergent.append((_order(site), "C7518"))
                return st
            if not guarded and any(s in st.waited or _order_pos(pos, s) >= _order_pos(pos, site) for s in read):
                # a wait that does not cover it, or a wgmma carried around a loop: serialised ...
                branch = _divergent_branch_line(ctx, site)
                if branch is None:
                    if report:
                        out.ser.append((_order(site), "C7514"))
                    return st
                # ... unless the read sits under a divergent branch: ptxas waits at the branch instead
                if report:
                    out.wait_at_use[branch] = True
                return st._replace(fl=frozenset(), raw=0, split=frozenset(), open=False)
            if report:
                out.wait_at_use[st.call_at or _hoisted_line(ctx, st, site) or _loop_exit_line(ctx, pos, site, read)
                                or _store_pair_line(ctx, site, ins)] = True
            return st._replace(fl=frozenset(), raw=0, split=frozenset(), open=False, call_at=None)
        if any(defs & wgmma_regs(ctx.wgmmas[s])[0] for s, _ in st.fl) and report:
            out.ser.append((_order(site), "C7515"))
        return st

    def plain(ins: Instr, site: Site, st: PS, report: bool, guarded: bool = False) -> PS:
        out_st = plain0(ins, site, st, report, guarded)
        if not is_wgmma(ins):
            d, u = defs_uses(ins)
            d = d & accs
            if d:
                folded = ins.guard is None and ins.base in _FOLDABLE and u <= st.konst
                out_st = out_st._replace(vals=out_st.vals - d if folded else out_st.vals | d,
                                         konst=out_st.konst | d if folded else out_st.konst - d)
        return out_st

    def step(ins: Instr, site: Site, st: PS, report: bool) -> PS:
        st = st._replace(last=_line(ins), last_branch=ins.base in ("bra", "brx"))
        if ins.guard is None or ins.base in ("bra", "brx"):
            return plain(ins, site, st, report)
        after = plain(ins, site, st, report, guarded=True)._replace(last=_line(ins))
        if st.fl and not after.fl and not is_wait(ins):
            return after  # ptxas put its wait before the guarded instruction: both paths waited
        div = ctx.dep_divergent(("guard", ins.guard.reg.name, ins.guard.negated), ptxas=True)
        return _join([after, st], div, False, _line(ins))._replace(last=_line(ins), last_branch=False)

    def transfer(block: int, st, report=False):
        for site, ins in _live_sites(ctx, block):
            st = step(ins, site, st, report)
        if block in forced and st.fl:  # a wait ptxas hoisted to the end of this block (see plain0)
            st = st._replace(fl=frozenset(), raw=0, split=frozenset(), open=False, call_at=None)
        instrs = ctx.g.blocks[block].instrs
        if instrs:
            st = st._replace(last=_line(instrs[-1]), last_branch=instrs[-1].base in ("bra", "brx"))
        return st

    def join_at(block: int, states):
        header = any(p in pos and pos[p] >= pos.get(block, 0) for p in ctx.g.preds[block])
        first = ctx.g.blocks[block].instrs[0] if ctx.g.blocks[block].instrs else None
        return _join(states, block in div_joins, header, _line(first))

    ins = {}
    for _ in range(3):  # re-solve while reads force new hoisted waits
        seen = len(forced)
        ins = solve_forward(ctx.g, ENTRY_STATE, transfer, lambda xs: _join(xs, False, False), join_at=join_at)
        if len(forced) == seen:
            break
    for b in ctx.g.order:
        if b in ins:
            transfer(b, ins[b], True)
    for line in forced.values():
        out.wait_feed[line] = True


def _gone(a, b) -> frozenset:
    """Wgmmas in flight on one side only count as waited-for on the other (ptxas saw a wait)."""
    sa, sb = {s for s, _ in a}, {s for s, _ in b}
    return frozenset(sa ^ sb) if sa and sb else frozenset()


def _norm(entries) -> frozenset:
    best: dict = {}
    for s, d in entries:
        best[s] = min(d, best.get(s, d))
    return frozenset(best.items())


def predict_function(ctx: FnCtx) -> list[PredictedDiag]:
    if not any(i.base == "wgmma" for b in ctx.g.blocks for i in b.instrs):
        return []
    out = _Out()
    _structure(ctx, out)
    _pipeline(ctx, out)
    name = ctx.fn.name
    if out.divergent:
        _, code = min(out.divergent)
        return [PredictedDiag(code, None, "info", name, SER_PREFIX + SER_REASONS[code].format(f=name))]
    ser_code = ("C7510" if any(c == "C7510" for _, c in out.ser) else min(out.ser)[1]) if out.ser else None
    # an indirect call serialises the whole function: no wait is left for its exits (measured)
    waits = ({**out.wait_at_use} if ser_code == "C7510" else {**out.wait_ser, **out.wait_at_use, **out.wait_feed}) \
        if out.ser else {**out.wait, **out.wait_at_use, **out.wait_feed}
    arrives = [x for x, why in out.arrive.items() if not (ser_code == "C7510" and why == "flag")]
    diags = [PredictedDiag("C7519", line, "info", name, ADVISORY["C7519"].format(line=line, f=name))
             for line in sorted(arrives, key=lambda x: x or 0)]
    diags += [PredictedDiag("C7517", line, "info", name, ADVISORY["C7517"].format(line=line, f=name))
              for line in sorted(waits, key=lambda x: x or 0)]
    if out.ser:
        _, code = min(out.ser)
        if any(c == "C7510" for _, c in out.ser):
            code = "C7510"  # an indirect call outranks the other reasons (measured)
        diags.append(PredictedDiag(code, None, "info", name, SER_PREFIX + SER_REASONS[code].format(f=name)))
    return diags


def predict_module(module: Module, ctxs: dict | None = None, isa_findings: dict | None = None) -> PredictedDiagnostics:
    errors = predict_errors(module, isa_findings)
    if errors:
        return PredictedDiagnostics(False, tuple(sorted(errors, key=lambda d: (d.line or 0))))
    diags: list[PredictedDiag] = []
    for fn in module.functions():
        if fn.body is None:
            continue
        ctx = (ctxs or {}).get(fn.name) or build_ctx(module, fn)
        diags += predict_function(ctx)
    return PredictedDiagnostics(True, tuple(diags))


def findings_from(pred: PredictedDiagnostics, path: str | None) -> list[Finding]:
    out = []
    for d in pred.diagnostics:
        rule = f"ptxas.{d.code}" if d.code else "ptxas.error"
        out.append(Finding(path, d.line, rule, "error" if d.code is None else "warning", "ptxas-model",
                           d.message, d.kernel))
    return out
