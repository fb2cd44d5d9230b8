"""The SIMT runner: blocks with masks, post-dominator reconvergence, calls, dispatch."""
from __future__ import annotations

import numpy as np

from fuzzptx.ptx.ir import CallArgs, Imm, Reg, Sym, Vec

import fuzzptx.oracles.reference.alu as alu
import fuzzptx.oracles.reference.approx as approx
import fuzzptx.oracles.reference.atomics as atomics
import fuzzptx.oracles.reference.bits as bits
import fuzzptx.oracles.reference.cluster as cluster
import fuzzptx.oracles.reference.fpx as fpx
import fuzzptx.oracles.reference.hints as hints
import fuzzptx.oracles.reference.intx as intx
import fuzzptx.oracles.reference.dispatch as dispatch
import fuzzptx.oracles.reference.mbarrier as mbarrier
import fuzzptx.oracles.reference.mem_ops as mem_ops
import fuzzptx.oracles.reference.tensormap as tensormap
import fuzzptx.oracles.reference.tma as tma
import fuzzptx.oracles.reference.warp_ops as warp_ops
from .errors import StepLimit, Undefined, Unsupported
from .interp import STEP_LIMIT, Frame, Machine, func_info
from .ops import types_of
from .values import TYPES, U64, Shadow, undef_where
from .warp_exec import handler_for
from .wgmma_exec import h_wgmma

HANDLERS = {
    "mov": alu.h_mov, "add": intx.h_arith, "sub": intx.h_arith, "mul": intx.h_arith, "mad": intx.h_arith,
    "fma": intx.h_arith, "div": alu.h_arith, "rem": alu.h_arith, "min": intx.h_arith, "max": intx.h_arith,
    "neg": alu.h_arith, "abs": alu.h_arith, "and": alu.h_logic, "or": alu.h_logic, "xor": alu.h_logic,
    "not": alu.h_logic, "cnot": alu.h_logic, "shl": alu.h_shift, "shr": alu.h_shift, "setp": fpx.h_setp,
    "selp": alu.h_selp, "cvt": intx.h_cvt, "cvta": alu.h_cvta, "popc": alu.h_bitcount, "clz": alu.h_bitcount,
    "brev": alu.h_bitcount, "ld": mem_ops.h_ld, "ldu": mem_ops.h_ld, "st": mem_ops.h_st, "bar": warp_ops.h_bar,
    "barrier": cluster.h_barrier, "fence": mem_ops.h_fence, "membar": mem_ops.h_fence,
    "lop3": alu.h_lop3, "prmt": bits.h_prmt, "sqrt": alu.h_sqrt_rcp, "rcp": alu.h_sqrt_rcp,
    **dict.fromkeys(("ex2", "lg2", "sin", "cos", "tanh", "rsqrt"), approx.h_approx),
    "mbarrier": mbarrier.h_mbarrier, "cp": tma.h_cp, "prefetch": tma.h_prefetch, "elect": mbarrier.h_elect,
    "setmaxnreg": mbarrier.h_setmaxnreg, "mapa": cluster.h_mapa, "griddepcontrol": mem_ops.h_griddepcontrol,
    "bfe": bits.h_bfe, "bfi": bits.h_bfi, "bfind": bits.h_bfind, "bmsk": bits.h_bmsk, "szext": bits.h_szext,
    "fns": bits.h_fns, "shf": bits.h_shf, "tensormap": tensormap.h_tensormap,
    "shfl": warp_ops.h_shfl, "vote": warp_ops.h_vote, "match": warp_ops.h_match, "redux": warp_ops.h_redux,
    "activemask": warp_ops.h_activemask,
    "addc": intx.h_carry, "subc": intx.h_carry, "madc": intx.h_carry, "mul24": intx.h_mul24, "mad24": intx.h_mul24,
    "sad": intx.h_sad, "dp4a": intx.h_dp, "dp2a": intx.h_dp, "set": intx.h_set, "slct": intx.h_slct,
    "testp": intx.h_testp, "copysign": intx.h_copysign, "atom": atomics.h_atom, "red": atomics.h_red,
    "createpolicy": hints.h_createpolicy, "nanosleep": hints.h_nothing, "prefetchu": hints.h_nothing, "pmevent": hints.h_nothing,
    "applypriority": hints.h_nothing, "discard": hints.h_discard, "isspacep": hints.h_isspacep,
    **dict.fromkeys(intx._SIMD, intx.h_video_simd), **dict.fromkeys(intx._SCALAR, intx.h_video_scalar),
}
NO_DEST = frozenset(("st", "red", "tensormap", "prefetchu", "nanosleep", "pmevent", "applypriority", "discard", "bar", "barrier", "fence", "membar", "wgmma", "call", "bra", "ret", "exit", "cp", "setmaxnreg", "prefetch",
                     "griddepcontrol"))


WARP_BASES = frozenset(("mma", "wmma", "ldmatrix", "stmatrix"))


def _warp_handler(ins):
    """warp_exec's handler (mma / wmma / ldmatrix / stmatrix / sparse wgmma)."""
    return handler_for(ins)


_BY_OPCODE: dict = {}


def _handler(ins):
    """The handler of ``ins`` (cached per opcode: it depends on nothing else; failures are not cached).

    Hooks in ``dispatch.FIRST`` come first (not cached: they come and go)."""
    for hook in dispatch.FIRST:
        h = hook(ins)
        if h:
            return h
    h = _BY_OPCODE.get(ins.opcode)
    if h is None:
        h = _BY_OPCODE[ins.opcode] = _find_handler(ins)
    return h


def _find_handler(ins):
    h = HANDLERS.get(ins.base)
    if h is None:
        if ins.base in WARP_BASES or (ins.base == "wgmma" and ".sp." in ins.opcode):
            h = _warp_handler(ins)
            if h is not None:
                return h
        if ins.base == "wgmma":
            return h_wgmma
        if ins.base == "nop":
            return mem_ops.h_nop
        raise Unsupported.at(ins, f"instruction {ins.base!r} is not supported by the reference")
    return h


def _guard(m: Machine, f: Frame, ins, mask_: np.ndarray):
    """(active threads, threads whose guard is undefined)."""
    g = ins.guard
    if g is None:
        return mask_, None
    bits, sh = m.read(f, g.reg, "pred", ins)
    p = (bits & U64(1)).astype(bool)
    if g.negated:
        p = ~p
    unc = None
    if sh is not None:
        unc = sh.nonexact() & mask_
        if not unc.any():
            unc = None
        else:
            p = p & ~unc
    return mask_ & p, unc


def _dests(ins):
    if ins.base in NO_DEST or not ins.operands:
        return []
    d = ins.operands[0]
    if isinstance(d, Vec):
        return [i for i in d.items if isinstance(i, Reg)]
    if isinstance(d, Reg):
        return [Reg(x) for x in d.name.split("|")]
    return []


def exec_instr(m: Machine, f: Frame, ins, mask_: np.ndarray) -> None:
    m.cur_reach = mask_  # the threads at this instruction, guard true or not (warp_ops)
    if ins.guard is None:
        m.cur_act = mask_
        if ins.base == "call":
            call(m, f, ins, mask_)
        else:
            _handler(ins)(m, f, ins, mask_)
        return
    act, unc = _guard(m, f, ins, mask_)
    if unc is not None and ins.base in NO_DEST:
        raise Undefined(f"line {ins.loc.line if ins.loc else '?'}: {ins.base} under an undefined guard predicate")
    if act.any() or ins.base == "wgmma":
        m.cur_act = act
        if ins.base == "call":
            call(m, f, ins, act)
        else:
            _handler(ins)(m, f, ins, act)
    if unc is not None:
        for d in _dests(ins):
            w = f.widths.get(d.name, 64)
            bits = f.regs.get(d.name, np.zeros(m.n, np.uint64))
            f.regs[d.name] = bits
            sh = undef_where(f.shadows.get(d.name), unc, m.n, w)
            if sh is not None:
                f.shadows[d.name] = sh


# instructions that write registers and nothing else (no memory, no other thread, no barrier)
REGISTER_ONLY = frozenset(("mov", "add", "sub", "mul", "mad", "fma", "div", "rem", "min", "max", "neg", "abs",
                           "and", "or", "xor", "not", "cnot", "shl", "shr", "setp", "selp", "cvt", "lop3", "prmt",
                           "bfe", "bfi", "copysign", "ex2", "lg2", "rcp", "sqrt", "rsqrt", "sin", "cos", "tanh",
                           "testp", "popc", "clz", "brev"))


def _register_only_skip(info, pc: int):
    """The instructions a conditional branch at the end of block ``pc`` skips, when that is one block
    of register-only instructions falling straight into the branch's target (libdevice's
    ``if (x >= inf) r = fma(x, inf, inf)`` in ``log2f``), else None."""
    blk = info.blocks[pc]
    nxt = pc + 1
    if not blk.succs or nxt >= len(info.blocks) or blk.succs[0] == nxt or info.ipdom[pc] != blk.succs[0]:
        return None
    body = info.blocks[nxt]
    if list(body.succs) != [blk.succs[0]] or not body.instrs:
        return None
    instrs = body.instrs
    if any(i.base not in REGISTER_ONLY or any(d.name in info.wg_regs for d in _dests(i)) for i in instrs):
        return None
    return instrs


def _run_either_way(m: Machine, f: Frame, instrs, unc: np.ndarray) -> None:
    """Threads ``unc`` branch on an undefined predicate over the register-only ``instrs``: run them for
    those threads, then leave every register they write undefined there (the old value or the new
    one, as the branch went), and let the threads go on at the target."""
    for ins in instrs:
        exec_instr(m, f, ins, unc)
    for ins in instrs:
        for d in _dests(ins):
            sh = undef_where(f.shadows.get(d.name), unc, m.n, f.widths.get(d.name, 64))
            if sh is not None:
                f.shadows[d.name] = sh


class MovRun:
    """Consecutive unguarded ``mov reg, imm`` of one block (half the instructions of a fuzz
    program: accumulator and fragment set-up), run as one step when every thread is active."""

    __slots__ = ("instrs",)
    base = "mov"

    def __init__(self, instrs: tuple) -> None:
        self.instrs = instrs


def _plain_mov_imm(ins) -> bool:
    ops = ins.operands
    return (ins.base == "mov" and ins.guard is None and len(ops) == 2 and type(ops[0]) is Reg
            and type(ops[1]) is Imm and "|" not in ops[0].name and len(types_of(ins)) == 1)


def _segments(info, pc: int, body) -> tuple:
    """The block body with its runs of ``mov reg, imm`` as ``MovRun``s and of plain ld/st as
    ``mem_ops.MemRun``s (built once per function: ``info.segments``)."""
    seg = info.segments.get(pc)
    if seg is None:
        out: list = []
        movs: list = []
        mems: list = []
        for ins in body:
            if _plain_mov_imm(ins):
                out.extend(mem_ops.mem_runs(mems))
                mems = []
                movs.append(ins)
                continue
            if movs:
                out.append(movs[0] if len(movs) == 1 else MovRun(tuple(movs)))
                movs = []
            acc = mem_ops.access_of(ins)
            if acc is not None:
                mems.append(acc)
                continue
            out.extend(mem_ops.mem_runs(mems))
            mems = []
            out.append(ins)
        if movs:
            out.append(movs[0] if len(movs) == 1 else MovRun(tuple(movs)))
        out.extend(mem_ops.mem_runs(mems))
        seg = info.segments[pc] = tuple(out)
    return seg


def exec_mov_run(m: Machine, f: Frame, run: MovRun, act: np.ndarray) -> None:
    """What ``exec_instr`` does for each mov of the run, without the per-instruction dispatch."""
    if act is not m.all:
        for ins in run.instrs:
            exec_instr(m, f, ins, act)
        return
    m.cur_act = act
    widths, regs, shadows, contract, wg = f.info.widths, f.regs, f.shadows, f.contract, f.info.wg_regs
    for ins in run.instrs:
        name = ins.operands[0].name
        w = widths.get(name)
        t = types_of(ins)[0]
        if w is None or t not in TYPES:
            exec_instr(m, f, ins, act)  # says what is wrong, as one instruction would
            continue
        bits = m.mov_imm(ins, t, w)
        if contract:
            contract.pop(name, None)
        if name in wg:
            m.wg.on_write(m, f, name, act)
        regs[name] = bits
        shadows.pop(name, None)


def run_function(m: Machine, f: Frame, entry_mask: np.ndarray) -> None:
    """Run ``f``'s function for the threads in ``entry_mask`` until they all return or exit."""
    info = f.info
    blocks = info.blocks
    nb = len(blocks)
    f.live = entry_mask.copy()
    # an entry: [block, mask, reconvergence block{, first instruction (a group resuming mid-block)}]
    stack: list[list] = [[0, entry_mask.copy(), None]]
    while True:  # a CTA of a cluster whose threads all wait goes on after the others ran (cluster.pause)
        while stack or (m.resume and m.depth == 0) or (not stack and cluster.exits_complete(m)) or \
                (m.mbar_waits and m.depth == 0):
            if m.mbar_waits and m.depth == 0:
                mbarrier.wake(m, stalled=not stack and not m.resume)
            if m.resume and m.depth == 0:
                _resume(m, f, stack)
            if not stack:
                continue
            e = stack[-1]
            pc, msk, rpc = e[0], e[1], e[2]
            msk &= m.alive
            msk &= f.live
            if m.parked is not None:
                msk &= ~m.parked
            m.masks_changed()
            if pc is None or pc == rpc or not msk.any():
                stack.pop()
                continue
            blk = blocks[pc]
            instrs = blk.instrs
            if instrs and instrs[0].loc is not None and instrs[-1].loc is not None:
                m.blocks_run.add((instrs[0].loc.line, instrs[-1].loc.line))
            m.steps += len(instrs)
            if m.steps > STEP_LIMIT:
                loc = instrs[0].loc if instrs else None
                raise StepLimit(f"more than {STEP_LIMIT} instructions executed: a hang or an unbounded loop",
                                *((loc.file, loc.line) if loc else ()))
            last = instrs[-1] if instrs else None
            body = instrs[:-1] if last is not None and last.base in ("bra", "ret", "exit", "trap", "brx") else instrs
            ends = body is instrs  # no terminator: falls through
            items = _segments(info, pc, body)
            if len(e) > 3:  # resuming after a named barrier: the rest of the block, one instruction at a time
                items = body[e.pop():]
            full = bool(msk.all())
            for ins in items:
                if type(ins) is MovRun:
                    exec_mov_run(m, f, ins, m.all if full else msk)
                    continue
                if type(ins) is mem_ops.MemRun:
                    if not mem_ops.exec_mem_run(m, f, ins, m.all if full else msk):
                        for one in ins.instrs:  # the failing access says what is wrong, as alone
                            exec_instr(m, f, one, m.all if full else msk)
                    continue
                exec_instr(m, f, ins, m.all if full else msk)
                if ins.base in ("call", "exit", "ret", "bar", "barrier", "mbarrier", "elect"):
                    if m.parking is not None:  # these threads wait at a named barrier: resume after it
                        bid, who = m.parking
                        m.parking = None
                        at = next(k for k, x in enumerate(instrs) if x is ins) + 1
                        m.parked_at.setdefault(bid, []).append((f, pc, at, who, rpc))
                    msk &= m.alive
                    msk &= f.live
                    if m.parked is not None:
                        msk &= ~m.parked
                    m.masks_changed()
                    full = bool(msk.all())
            nxt = pc + 1 if pc + 1 < nb else None
            if last is None or ends:
                e[0] = nxt
                continue
            base = last.base
            act, unc = _guard(m, f, last, msk)
            if unc is not None and base == "bra":
                skipped = _register_only_skip(info, pc)
                if skipped is not None:  # either path ends at the target: only registers differ
                    _run_either_way(m, f, skipped, unc)
                    act = act | unc
                    unc = None
            if unc is not None:
                raise Undefined(f"line {last.loc.line if last.loc else '?'}: {base} on an undefined predicate")
            if base == "bra":
                tgt = blk.succs[0]
                taken = act
                rest = msk & ~taken
                any_taken = bool(taken.any())
                if any_taken and last.loc is not None:
                    m.branches_taken.add(last.loc.line)
                if not rest.any():
                    e[0] = tgt
                elif not any_taken:
                    e[0] = nxt
                else:
                    r = info.ipdom[pc]
                    e[0] = r
                    e[1] = msk.copy()
                    stack.append([nxt, rest, r])
                    stack.append([tgt, taken.copy(), r])
            elif base in ("ret", "exit"):
                if base == "exit" or f.info.fn.kind == "entry":
                    m.alive &= ~act
                f.live &= ~act
                e[0] = nxt if (msk & ~act).any() else None
            elif base == "trap":
                raise Undefined(f"line {last.loc.line if last.loc else '?'}: trap")
            else:
                raise Unsupported.at(last, f"{base} is not supported")
        if not (m.depth == 0 and m.parked is not None and m.parked.any() and cluster.pause(m)):
            break
    if m.depth == 0 and m.parked is not None and m.parked.any():
        bid = next(iter(m.parked_at))
        if bid < 0:  # cluster.CLUSTER_BARRIER
            raise StepLimit(f"hang: {int(m.parked.sum())} thread(s) wait at barrier.cluster, whose phase misses "
                            "arrivals, and every other thread has ended")
        cnt, arrived, _ = m.named_barriers[bid]
        raise StepLimit(f"hang: {int(m.parked.sum())} thread(s) wait at named barrier {bid}, which has {arrived} of "
                        f"its {cnt} arrivals, and every other thread has ended")


def _resume(m: Machine, f: Frame, stack: list) -> None:
    """Push the groups whose named barrier completed (``mem_ops.h_bar``) back on the stack, each at the
    instruction after its barrier.  A group rejoins its reconvergence block when that block's entry
    still waits below (covering the group), else it runs on alone to the function's end."""
    for item in [x for x in m.resume if x[0] is f]:
        m.resume.remove(item)
        _, pc, at, who, rpc = item
        joins = rpc is not None and any(x[0] == rpc and x[2] != rpc and not (who & ~x[1]).any() for x in stack)
        stack.append([pc, who.copy(), rpc if joins else None, at])


def call(m: Machine, f: Frame, ins, act: np.ndarray) -> None:
    """``call (rets), fn, (args)``: run the callee in a new frame for the active threads."""
    ops = list(ins.operands)
    rets = ops.pop(0).items if ops and isinstance(ops[0], CallArgs) else ()
    if not ops or not isinstance(ops[0], (Sym, Reg)):
        raise Unsupported.at(ins, "call without a function")
    target = ops.pop(0)
    args = ops.pop(0).items if ops and isinstance(ops[0], CallArgs) else ()
    if isinstance(target, Reg):  # indirect: each distinct address among the active threads, in turn
        bits, sh = m.read(f, target, "u64", ins)
        if sh is not None and sh.nonexact()[act].any():
            raise Undefined(f"line {ins.loc.line if ins.loc else '?'}: call through an undefined address")
        for v in np.unique(bits[act]):
            name = m.func_at.get(int(v))
            if name is None:
                raise Unsupported.at(ins, f"indirect call to address {int(v):#x}, which is no function")
            _call(m, f, ins, act & (bits == v), name, rets, args)
        return
    _call(m, f, ins, act, target.name, rets, args)


def _call(m: Machine, f: Frame, ins, act: np.ndarray, name: str, rets, args) -> None:
    try:
        callee = m.module.function(name)
    except KeyError:
        raise Unsupported.at(ins, f"call to unknown function {name!r}") from None
    if callee.body is None:
        raise Unsupported.at(ins, f"call to {name!r}, which has no body here")
    if m.depth > 32:
        raise Unsupported.at(ins, "call depth above 32 (recursion is not modelled)")
    info = func_info(callee)
    g = _new_frame(m, info)
    if len(args) != len(callee.params) or len(rets) != len(callee.returns):
        raise Unsupported.at(ins, f"call to {name!r} with {len(args)} arguments / {len(rets)} results")
    for p, a in zip(callee.params, args):
        _pass(m, f, a, g, Reg(p.name) if p.space == ".reg" else Sym(p.name), p.type, act, ins)
    m.depth += 1
    try:
        run_function(m, g, act)
    finally:
        m.depth -= 1
    if f.cc is not None:  # CC is not preserved across calls (PTX ISA, add.cc)
        f.cc_undef = f.cc_undef | act
    for p, r in zip(callee.returns, rets):
        _pass(m, g, Sym(p.name) if p.space != ".reg" else Reg(p.name), f, r, p.type, act, ins)


def _new_frame(m: Machine, info) -> Frame:
    g = Frame(info)
    for name, size in info.pvars.items():
        g.pdata[name] = np.zeros((m.n, (size + 15) // 16 * 16 or 16), np.uint8)
        g.pundef[name] = np.ones(m.n, bool)  # undefined until stored
    return g


def _pass(m: Machine, src: Frame, a, dst: Frame, tgt, ptype: str, act, ins) -> None:
    """Copy one argument (or result) ``a`` of ``src`` to ``tgt`` of ``dst``: registers or per-thread .param bytes."""
    if isinstance(a, Sym) and a.name in src.pdata:
        data, und = src.pdata[a.name], src.pundef[a.name]
        if isinstance(tgt, Sym):
            d = dst.pdata[tgt.name]
            k = min(d.shape[1], data.shape[1])
            d[act, :k] = data[act, :k]
            dst.pundef[tgt.name] = np.where(act, und, dst.pundef[tgt.name])
        else:
            w = dst.widths[tgt.name]
            bits = np.zeros(m.n, np.uint64)
            for i in range(max(w // 8, 1)):
                bits |= data[:, i].astype(np.uint64) << U64(8 * i)
            m.write(dst, tgt, bits, Shadow.undef(m.n, w, und) if und.any() else None, act, ins)
        return
    t = ptype.lstrip(".")
    bits, sh = m.read(src, a, t if t in TYPES else "b64", ins)
    if isinstance(tgt, Sym):
        d = dst.pdata[tgt.name]
        w = max(TYPES.get(t, (64,))[0] // 8, 1)
        for i in range(min(w, d.shape[1])):
            d[act, i] = ((bits[act] >> U64(8 * i)) & U64(0xFF)).astype(np.uint8)
        und = sh.nonexact() if sh is not None else np.zeros(m.n, bool)
        dst.pundef[tgt.name] = np.where(act, und, dst.pundef[tgt.name])
    else:
        m.write(dst, tgt, bits, sh, act, ins)


def run_kernel(m: Machine) -> None:
    info = func_info(m.kernel)
    f = _new_frame(m, info)
    m.kernel_frame = f
    run_function(m, f, m.all.copy())
    tma.finish(m)  # bulk stores still in flight complete at the kernel's end
