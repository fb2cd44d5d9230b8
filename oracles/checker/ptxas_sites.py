"""Where ptxas puts and reports things: the per-site helpers of the ptxas model (line placement
of injected waits and arrives, wgmmas ptxas drops, constant writes), each measured against ptxas
13.0.88 (``tests/data/checker/``; see ``ptxas_model``'s docstring)."""
from __future__ import annotations

from fuzzptx import isa
from fuzzptx.ptx.ir import Addr, Imm, Instr, Reg

from .context import FnCtx, Site, sites
from .regs import defs_uses, is_wgmma, wgmma_regs

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
    dead.update(w for w in ctx.wgmmas if w not in dead and _overwritten(ctx, w))
    return frozenset(dead)


def _overwritten(ctx: FnCtx, w: Site) -> bool:
    """On every path from wgmma ``w`` the next instruction touching its accumulators is a scale-d 0
    wgmma on exactly them (so nothing reads what ``w`` computed)."""
    acc = wgmma_regs(ctx.instr(w))[0]
    seen: set = set()
    work = [(w.block, w.pos + 1)]
    while work:
        b, k = work.pop()
        instrs = ctx.g.blocks[b].instrs
        for ins in instrs[k:]:
            if is_wgmma(ins) and wgmma_regs(ins)[0] == acc and _scale_d_zero(ins) and ins.guard is None:
                break
            d, u = defs_uses(ins)
            if acc & (d | u) or ins.base in ("ret", "exit", "call"):
                return False
        else:
            if not ctx.g.succs[b]:
                return False
            for n in ctx.g.succs[b]:
                if n not in seen:
                    seen.add(n)
                    work.append((n, 0))
    return True


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
