"""Where ptxas puts and reports things: the per-site helpers of the ptxas model (line placement
of injected waits and arrives, wgmmas ptxas drops, constant writes), each measured against ptxas
13.0.88 (``tests/data/checker/``; see ``ptxas_model``'s docstring)."""
from __future__ import annotations

from typing import NamedTuple

from fuzzptx.ptx.ir import Addr, Imm, Instr, Reg

from .context import FnCtx, Site, sites
from .flow import solve_forward
from .ptxas_dce import _pure, _scale_d_zero, dead_code  # noqa: F401 - _scale_d_zero: the model reads it from here
from .regs import defs_uses, function_bits, is_wait, is_wgmma, wait_n, wgmma_regs

def _line(ins: Instr | None) -> int | None:
    return ins.loc.line if ins is not None and ins.loc else None


def _order(site: Site) -> tuple[int, int]:
    return (site.block, site.pos)


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
    branch and reports that line (measured).  Blocks that only fall into the next one (a label
    nothing jumps to) are one block to ptxas (measured: trap_loop_then_indirect_call_after_label)."""
    head, chain = site.block, [site.block]
    while len(ctx.g.preds[head]) == 1 and tuple(ctx.g.succs[ctx.g.preds[head][0]]) == (head,) \
            and ctx.g.preds[head][0] not in chain:
        head = ctx.g.preds[head][0]
        chain.append(head)
    if any(w.block == site.block and w.pos < site.pos or (w.block in chain and w.block != site.block) for w in wgmmas):
        return None  # a wgmma after the loop is read too: the wait goes before the read
    for p in ctx.g.preds[head]:
        if p not in pos:
            continue
        for h in ctx.g.succs[p]:
            if h in pos and pos[h] <= pos[p] and any(pos[h] <= pos.get(w.block, -1) <= pos[p] for w in wgmmas):
                instrs = ctx.g.blocks[p].instrs
                return _line(instrs[-1]) if instrs else None
    return None


def _after_loop_line(ctx: FnCtx, pos: dict, site: Site, wgmmas) -> int | None:
    """Line of the back branch of the innermost loop around the last ``wait_group 0`` in a loop
    before the instruction, when ``wgmmas`` were issued before that loop's end and no wait_group
    comes after it; else None.  The read need not post-dominate the loop: one under a uniform
    branch after it waits at the back branch too (measured: campaign seed 4 #94, a read in a
    loop under a branch after the loop)."""
    here = pos.get(site.block, 0)
    waits = [j for b, j in pos.items() if j < here and any(is_wait(i) and wait_n(i) == 0 for i in ctx.g.blocks[b].instrs)]
    loops = []  # (span, latch) of loops before the instruction that hold a wait_group 0
    for p, k in pos.items():
        heads = [pos[h] for h in ctx.g.succs[p] if h in pos and pos[h] <= k]
        if heads and k < here and any(min(heads) <= j <= k for j in waits):
            loops.append(((min(heads), k), p))
    if not loops:
        return None
    last = max(j for j in waits if any(a <= j <= b for (a, b), _ in loops))
    span, best = min((x for x in loops if x[0][0] <= last <= x[0][1]), key=lambda x: x[0][1] - x[0][0])
    if any(pos.get(w.block, 0) > span[1] for w in wgmmas):
        return None
    between = [b for b, j in pos.items() if span[1] < j < here] + [site.block]
    if any(is_wait(i) for b in between for i in ctx.g.blocks[b].instrs[:site.pos if b == site.block else None]):
        return None  # a wait after the loop decides instead
    instrs = ctx.g.blocks[best].instrs
    return _line(instrs[-1]) if instrs else None


def _in_loop(ctx: FnCtx, pos: dict, block: int) -> bool:
    """The block lies between a loop header and its latch in layout order."""
    k = pos.get(block)
    return k is not None and any(
        h in pos and pos[h] <= k <= j for p, j in pos.items() for h in ctx.g.succs[p] if pos.get(h, j + 1) <= j)


def _returns(ctx: FnCtx) -> frozenset:
    """Registers live at a ``ret``: the function's register return values."""
    return frozenset(p.name for p in ctx.fn.returns if p.space == ".reg")


def _dead_wgmmas(ctx: FnCtx) -> frozenset:
    """The wgmmas ptxas deletes before its GMMA passes (dead code, ``ptxas_dce``; e.g. a wgmma that
    a later scale-d 0 wgmma on the same accumulators overwrites: the arrive for an unfenced run is
    reported at the overwriting wgmma); remembers the dead plain instructions on the context."""
    wgmmas, others = dead_code(ctx.g, _returns(ctx),
                               function_bits(ctx))
    ctx.__dict__["_dead_other"] = others
    return wgmmas


def _dead(ctx: FnCtx) -> frozenset:
    """The wgmmas ptxas deletes as dead code (memoised on the context)."""
    dead = ctx.__dict__.get("_dead_wgmma")
    if dead is None:
        dead = ctx.__dict__["_dead_wgmma"] = _dead_wgmmas(ctx)
    return dead


def dead_for_feeds(ctx: FnCtx) -> frozenset:
    """Plain instructions dead once a wgmma's accumulator input counts live only where its output
    is (``dead_code(per_register=True)``): a feed read there needs no wait (memoised)."""
    dead = ctx.__dict__.get("_dead_feed")
    if dead is None:
        dead = ctx.__dict__["_dead_feed"] = dead_code(ctx.g, _returns(ctx), function_bits(ctx), per_register=True)[1]
    return dead


def dead_plain(ctx: FnCtx) -> frozenset:
    """The plain instructions ptxas deletes as dead code, in a function without a
    wgmma.mma_async too (the model's pipeline passes skip those, ptxas deletes them anyway)."""
    if ctx.wgmmas:
        _dead(ctx)
        return ctx.__dict__["_dead_other"]
    dead = ctx.__dict__.get("_dead_plain")
    if dead is None:
        dead = ctx.__dict__["_dead_plain"] = dead_code(ctx.g, _returns(ctx), function_bits(ctx), always=True)[1]
    return dead


def _live_sites(ctx: FnCtx, block: int):
    """The block's pipeline-relevant sites, less the plain instructions ptxas deletes as dead code;
    dead wgmmas stay (the model treats them as ghosts: they draw no arrive and hold no
    accumulators, but still make paths differ; see ptxas_dce)."""
    _dead(ctx)
    other = ctx.__dict__["_dead_other"]
    items = sites(ctx, block, hot_only=True)
    return [x for x in items if x[0] not in other] if other else items


def _postdominates(ctx: FnCtx, b: int, a: int) -> bool:
    """Every path from block ``a`` to an exit passes through block ``b``."""
    seen = 0
    while a is not None and seen < 10_000:
        if a == b:
            return True
        a = ctx.g.ipdom.get(a)
        seen += 1
    return False


def _erased_between(ctx: FnCtx, a: int, b: int) -> bool:
    """Whether ptxas merges every block between ``a`` and ``b`` into one before its GMMA passes:
    branches without a loop between (if-converted or folded), or an empty counted loop -- pure
    instructions whose results are read nowhere else (measured: no_wait_empty_loop_before_use,
    no_wait_branch_*_before_use; a loop that stores or feeds a later read keeps its blocks)."""
    memo = ctx.__dict__.setdefault("_erased", {})
    if (a, b) not in memo:
        region = _region_between(ctx, a, b)
        if region is None:
            memo[a, b] = False
        elif _loop_free(ctx, region):
            # ptxas if-converts or merges it (measured: no_wait_branch_*_before_use) -- unless two
            # divergent branches test one predicate (threaded together: no_wait_div_diamonds_before_use)
            conds = [str(i.guard) for x in [a, *region] for i in ctx.g.blocks[x].instrs[-1:]
                     if i.base == "bra" and i.guard is not None
                     and any(ctx.dep_divergent((x, y), ptxas=True) for y in ctx.g.succs[x])]
            memo[a, b] = len(conds) == len(set(conds))
        else:
            memo[a, b] = _dead_region(ctx, region)
    return memo[a, b]


def _region_between(ctx: FnCtx, a: int, b: int) -> set | None:
    """Blocks reachable from ``a`` without passing ``b`` (None when a path returns to ``a`` or the
    region is too large to be one ptxas merges)."""
    region, todo = set(), [s for s in ctx.g.succs[a] if s != b]
    while todo and len(region) <= 64:
        x = todo.pop()
        if x in region or x == a:
            continue
        region.add(x)
        todo += [s for s in ctx.g.succs[x] if s != b]
    if len(region) > 64 or a in {s for x in region for s in ctx.g.succs[x]}:
        return None
    return region


def _loop_free(ctx: FnCtx, region: set) -> bool:
    order = {blk: k for k, blk in enumerate(ctx.g.order)}
    return not any(s in region and order.get(s, -1) <= order.get(x, -1) for x in region for s in ctx.g.succs[x])


def _dead_region(ctx: FnCtx, region: set) -> bool:
    """Only branches and pure instructions, whose results nothing outside the region reads."""
    defs: set = set()
    for x in region:
        for ins in ctx.g.blocks[x].instrs:
            if ins.base != "bra" and not (_pure(ins) and not is_wgmma(ins)):
                return False
            defs |= defs_uses(ins)[0]
    return not defs or not any(defs & defs_uses(ins)[1] for x in range(len(ctx.g.blocks)) if x not in region
                               for ins in ctx.g.blocks[x].instrs)


def _hoisted_line(ctx: FnCtx, st, site: Site) -> int | None:
    """A read in a later block than the last fence/wgmma/commit: ptxas waits at the end of that
    block and reports its last instruction, if the read's block post-dominates it (measured: loops
    and branches between commit and use)."""
    if st.pblock is None or st.pblock == site.block or not _postdominates(ctx, site.block, st.pblock):
        return None
    if _erased_between(ctx, st.pblock, site.block):
        return None  # ptxas deletes what lies between: one block, the wait stays at the read
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


def _wgmma_next_to(ctx: FnCtx, site: Site, reg: str, step: int) -> Instr | None:
    """The wgmma that is the next (``step`` 1) or previous (-1) instruction of the block touching
    ``reg``, if it uses ``reg`` as accumulator and no wgmma.fence comes between."""
    instrs = ctx.g.blocks[site.block].instrs
    k = site.pos + step
    while 0 <= k < len(instrs):
        ins = instrs[k]
        if is_wgmma(ins) and reg in wgmma_regs(ins)[0]:
            return ins
        d, u = defs_uses(ins)
        if reg in d or reg in u or ins.opcode.startswith("wgmma.fence"):
            return None
        k += step
    return None


def _same_wgmma(a: Instr, b: Instr) -> bool:
    """The two wgmmas are the same instruction text (opcode, operands, guard): any difference, even an
    immediate negation or another descriptor, counts (measured: acc_write_between_wgmmas_*)."""
    return a.opcode == b.opcode and a.operands == b.operands and a.guard == b.guard


def _sum_of_registers(blk, pos: int, reg: str) -> bool:
    """The block last set ``reg`` (before ``pos``) by an ``add`` of two registers."""
    for prev in reversed(blk.instrs[:pos]):
        if reg in defs_uses(prev)[0]:
            return prev.base == "add" and len(prev.operands) == 3 and all(
                isinstance(o, Reg) for o in prev.operands[1:])
    return False


def _next_pipe_is_wgmma(ctx: FnCtx, site: Site) -> bool:
    """The next wgmma-family instruction of the block is a wgmma (not a commit, wait or fence)."""
    memo = ctx.__dict__.setdefault("_next_pipe", {})
    nxt = memo.get(site.block)
    if nxt is None:  # one backward pass per block: nxt[k] answers for position k
        instrs = ctx.g.blocks[site.block].instrs
        nxt, after = [False] * len(instrs), False
        for k in range(len(instrs) - 1, -1, -1):
            nxt[k] = after
            if instrs[k].opcode.startswith("wgmma."):
                after = is_wgmma(instrs[k])
        memo[site.block] = nxt
    return nxt[site.pos]


class ValueUses(NamedTuple):
    """Where the value an instruction writes into an accumulator register is read (``value_uses``)."""

    far: bool  # a plain (non-wgmma) read outside the write's straight run: ptxas cannot rename the write
    far_before: bool  # ... one before the next wgmma-family instruction
    past: bool  # a read of any kind (a wgmma's accumulator input too) after the next wgmma-family instruction
    next_pipe: frozenset  # the kinds ("wgmma", "commit", "fence", "wait") of that next instruction, per path
    wgmma_past: frozenset  # the wgmmas that read the value after the next wgmma-family instruction


_RUN_BREAKERS = frozenset({"bar", "barrier", "call"})  # (besides wgmma.*, labels and branches: measured)


def _pipe_kind(ins: Instr) -> str | None:
    if not ins.opcode.startswith("wgmma."):
        return None
    return "wgmma" if is_wgmma(ins) else "commit" if ins.opcode.startswith("wgmma.commit") else \
        "fence" if ins.opcode.startswith("wgmma.fence") else "wait"


def value_uses(ctx: FnCtx, site: Site, regs: frozenset) -> ValueUses:
    """Follow the value the instruction at ``site`` writes into ``regs`` to its live reads (until an
    unguarded redefinition; a self-move ``mov r, r`` neither reads nor writes).  A plain read is
    *near* when it is unguarded, in the same block and no wgmma-family instruction, barrier or call
    comes between: ptxas renames a write in flight whose reads are all near and says nothing; a far
    one is C7515 (measured: tests/data/checker/acc_write_in_flight_read_*).  A wgmma taking the value
    as its accumulator is no read, unless a ``wgmma.wait_group`` that retires the write's group (the
    first commit after it) comes between: then it is a far one (acc_write_in_flight_read_by_wgmma_*;
    a wait_group 1 right after that commit leaves it in flight: campaign seed 8 #99)."""
    gone = dead_plain(ctx) | _dead(ctx)
    far = far_before = past = False
    kinds: set = set()
    readers: set = set()
    for reg in regs:
        seen: set = set()
        todo = [(site.block, site.pos + 1, True, None, False, 0)]
        while todo:
            b, k, near, pipe, waited, commits = todo.pop()
            instrs = ctx.g.blocks[b].instrs
            killed = False
            while k < len(instrs):
                ins = instrs[k]
                here = Site(b, k)
                k += 1
                ops = ins.operands
                if ins.base == "mov" and len(ops) == 2 and ops[0] == ops[1]:
                    continue
                d, u = defs_uses(ins)
                if reg in u and here not in gone:
                    if pipe is not None:
                        past = True
                        if is_wgmma(ins):
                            readers.add(here)
                    if (not is_wgmma(ins) and (not near or ins.guard is not None)) or (is_wgmma(ins) and waited):
                        far = True
                        far_before = far_before or pipe is None
                kind = _pipe_kind(ins)
                if kind is not None:
                    if pipe is None:
                        kinds.add(kind)
                        pipe = kind
                    near = False
                    if kind == "commit":
                        commits = min(commits + 1, 8)
                    elif kind == "wait":
                        n = wait_n(ins)
                        waited = waited or (n is not None and commits > n)
                elif ins.base in _RUN_BREAKERS:
                    near = False
                if reg in d and ins.guard is None and here not in gone:
                    killed = True
                    break
            if killed:
                continue
            for nxt in ctx.g.succs[b]:
                key = (nxt, pipe, waited, commits)
                if key not in seen:
                    seen.add(key)
                    todo.append((nxt, 0, False, pipe, waited, commits))
    return ValueUses(far, far_before, past, frozenset(kinds), frozenset(readers))


def _store_pair_line(ctx: FnCtx, site: Site, ins: Instr) -> int | None:
    """ptxas reports a wait before a store paired with the next adjacent store at the second one,
    unless the address is a register sum (base + per-thread offset): then at the first (measured).
    The pair must start 8-byte aligned (a 2-wide store): +228 and +232 do not pair, +228 and +224
    do (measured: store_pair_*)."""
    blk = ctx.g.blocks[site.block]
    if ins.base == "st" and ins.guard is None and site.pos + 1 < len(blk.instrs) and len(ins.operands) == 2:
        base = ins.operands[0].base if isinstance(ins.operands[0], Addr) else None
        if isinstance(base, Reg) and _sum_of_registers(blk, site.pos, base.name):
            return _line(ins)
        nxt = blk.instrs[site.pos + 1]
        a, b = ins.operands[0], nxt.operands[0] if nxt.operands else None
        if (nxt.opcode == ins.opcode and isinstance(a, Addr) and isinstance(b, Addr) and a.base == b.base
                and abs(a.offset - b.offset) == 4 and min(a.offset, b.offset) % 8 == 0):
            return _line(nxt)
    return _line(ins)


_FOLDED_RUN = frozenset({"xor", "add"})


def _in_place_by_constant(ins: Instr) -> bool:
    ops = ins.operands
    return (ins.guard is None and ins.base in _FOLDED_RUN and len(ops) == 3 and ops[0] == ops[1]
            and isinstance(ops[2], Imm))


def _folded_run_line(ctx: FnCtx, site: Site, ins: Instr) -> int | None:
    """An update in place by a constant (``xor r, r, C``, ``add r, r, C``) followed by more of the
    same on the same register: ptxas folds the run into one instruction at the last one's line,
    where a wait for a read of a constant (or never-written) register goes (measured:
    feed_read_of_*_folded_*; an ``xor`` then an ``add`` do not fold; of a loaded value, the
    wait stays at the first: feed_read_of_loaded_double_xor)."""
    if not _in_place_by_constant(ins):
        return None
    blk, k, last = ctx.g.blocks[site.block], site.pos, ins
    while k + 1 < len(blk.instrs):
        nxt = blk.instrs[k + 1]
        if not (_in_place_by_constant(nxt) and nxt.base == ins.base and nxt.operands[0] == ins.operands[0]):
            break
        last, k = nxt, k + 1
    return _line(last)


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


def arrives_before_divergence(ctx: FnCtx, arrive_at: dict, divergent: list) -> list[int]:
    """Lines of the arrives (``arrive_at``: line -> site) ptxas still reports beside C7520 (the
    first at the order ``(block, pos)`` in ``divergent``): those at warpgroup-uniform sites it
    reached before it found the divergence -- earlier in layout order, or anywhere in the loop around
    that point when the loop's back branch is ``bra.uni`` (measured: div_guard_wgmma_*_loop,
    unfenced_then_div_wgmma)."""
    pos = {b: i for i, b in enumerate(ctx.g.order)}
    found = Site(*min(o for o, c in divergent if c == "C7520"))
    limit = (pos.get(found.block, 0), found.pos)
    loops = [(pos[h], k, p) for p, k in pos.items() for h in ctx.g.succs[p]
             if h in pos and pos[h] <= limit[0] <= k]
    if loops:
        _, k, latch = min(loops, key=lambda x: x[1] - x[0])  # the innermost loop around it
        last = ctx.g.blocks[latch].instrs[-1] if ctx.g.blocks[latch].instrs else None
        if last is not None and last.opcode == "bra.uni":
            limit = (k, 1 << 30)

    def uniform(site: Site) -> bool:
        return not any(ctx.dep_divergent(d, ptxas=True) for d in ctx.ctrl_deps(site))

    return sorted(line for line, site in arrive_at.items()
                  if line is not None and _order_pos(pos, site) < limit and uniform(site))


def exit_jumps(ctx: FnCtx, kept=lambda ins: False) -> frozenset:
    """Sites of the branches ptxas turns into the exit itself: a ``bra`` (guarded or not) to a
    block that, dead code aside, holds nothing but ``ret`` (or the body's end), when that block
    is not the next one.  ptxas then waits for the groups in flight *at the branch* -- before the
    guarded exit it made of it, so on the path that falls through too (measured: exit_jump_*;
    a branch to the next block goes away first: exit_jump_to_next_*; code between that only
    dead code fills does not count, unreachable code does).  ``kept``: the dead instructions
    ptxas keeps all the same (an update in place, a self-move: ``ptxas_pipeline.busy_positions``)."""
    g = ctx.g
    dead = dead_plain(ctx)
    reach = set(g.order)
    n = len(g.blocks)

    def live(b: int) -> list:
        return [i for k, i in enumerate(g.blocks[b].instrs) if Site(b, k) not in dead or kept(i)]

    def present(b: int) -> bool:  # a block a branch over it really jumps over
        return bool(g.blocks[b].instrs) if b not in reach else bool(live(b))

    out = []
    for b in g.order:
        instrs = g.blocks[b].instrs
        if not instrs or instrs[-1].base != "bra" or not g.succs[b]:
            continue
        e = g.succs[b][0]  # the target (a guarded branch's fall-through comes second)
        while e < n and not live(e) and g.succs[e] == (e + 1,):  # labels or dead code only: go on
            e += 1
        body = live(e) if e < n else []
        if len(body) != 1 or body[0].base not in ("ret", "exit") or body[0].guard is not None:
            continue
        if e > b and not any(present(x) for x in range(b + 1, e)):
            continue  # a branch to the next block: ptxas drops it
        out.append(Site(b, len(instrs) - 1))
    return frozenset(out)
