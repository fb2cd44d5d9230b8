"""Uniformity: which registers and branches are the same for every thread of a warp, warpgroup, CTA.

Levels, most uniform first: CTA > WARPGROUP > WARP > THREAD.  ``%ctaid``, parameters and
constants are CTA-uniform; ``%tid``/``%laneid``/clocks vary per thread; arithmetic takes the
least uniform operand; a value defined under a branch is no more uniform than the branch
(control dependence via post-dominators); a guarded definition no more than its guard.

``%tid.x >> k`` (or ``/ 2**k``, or ``& mask`` with k trailing zero bits) is tracked exactly:
k >= 7 is warpgroup-uniform, k >= 5 warp-uniform.  That is sound when the warp rank is
``%tid.x / 32``, i.e. for one-dimensional blocks or ``%ntid.x`` a multiple of 128; a kernel
whose ``.reqntid``/``.maxntid`` (or repro ``LAUNCH:`` header) says otherwise gets no such credit.
``%tid.y``/``%tid.z`` vary per thread unless ``.reqntid`` or the repro header's ``LAUNCH: ...
block=x,y,z`` makes that dimension 1 (then they are 0).  The ``ptxas`` flavour models what
ptxas itself treats as divergent (measured; see ``analyse_uniformity``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from fuzzptx.perf import per_object
from fuzzptx.ptx.ir import Addr, Function, Imm, Instr, Reg

from .flow import Graph
from .regs import defs_uses

THREAD, WARP, WARPGROUP, CTA = 0, 1, 2, 3
LEVEL_NAMES = {THREAD: "thread", WARP: "warp", WARPGROUP: "warpgroup", CTA: "CTA"}

_THREAD_SPECIALS = ("%tid", "%laneid", "%clock", "%lanemask", "%globaltimer")
_WARP_SPECIALS = ("%warpid",)
_TOP = "top"


def _shift_level(k: int, tid_credit: bool) -> int:
    if not tid_credit:
        return THREAD
    return WARPGROUP if k >= 7 else WARP if k >= 5 else THREAD


def _special(name: str) -> tuple[int, object]:
    if name == "%tid.x":
        return THREAD, 0
    stem = name.split(".", 1)[0]
    if stem.startswith(_THREAD_SPECIALS):
        return THREAD, None
    if stem in _WARP_SPECIALS:
        return WARP, None
    return CTA, None


def _pow2(v) -> int | None:
    if isinstance(v, int) and v > 0 and v & (v - 1) == 0:
        return v.bit_length() - 1
    return None


def block_dims(fn: Function, preamble: tuple[str, ...] = ()) -> tuple[int, int, int] | None:
    """The block shape if known: ``.reqntid x, y, z`` or a repro header's ``LAUNCH: kernel=K ... block=x,y,z``."""
    for attr in fn.attributes:
        m = re.match(r"\s*\.reqntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", attr)
        if m:
            return int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1)
    for line in preamble:
        m = re.match(r"\s*LAUNCH:.*\bkernel=(\S+).*\bblock=(\d+),(\d+),(\d+)", line)
        if m and m.group(1) == fn.name:
            return int(m.group(2)), int(m.group(3)), int(m.group(4))
    return None


def _tid_credit(fn: Function) -> bool:
    """False when a launch-bound directive says the block is multi-dimensional with ntid.x % 128 != 0."""
    for attr in fn.attributes:
        m = re.match(r"\s*\.(reqntid|maxntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", attr)
        if m:
            x = int(m.group(2))
            rest = [int(v) for v in (m.group(3), m.group(4)) if v]
            if any(v > 1 for v in rest) and x % 128:
                return False
    return True


@dataclass
class Uniformity:
    regs: dict[str, int]
    block_level: dict[int, int]
    divergent_edges: frozenset  # control-dependence keys (branch block, succ) whose branch is divergent
    threshold: int = WARPGROUP  # levels below this count as divergent

    def level(self, op) -> int:
        if isinstance(op, Reg):
            if op.name in self.regs:
                return self.regs[op.name]
            return _special(op.name)[0] if op.name.startswith("%") and "." in op.name else CTA
        return CTA

    def instr_level(self, block: int, instr: Instr) -> int:
        lvl = self.block_level.get(block, CTA)
        if instr.guard is not None:
            lvl = min(lvl, self.level(instr.guard.reg))
        return lvl


def branch_reg(block) -> Reg | None:
    """The register deciding which successor a block takes (guard of bra/ret/exit, brx index)."""
    if not block.instrs:
        return None
    last = block.instrs[-1]
    if last.base in ("bra", "ret", "exit", "trap") and last.guard is not None:
        return last.guard.reg
    if last.base == "brx" and last.operands and isinstance(last.operands[0], Reg):
        return last.operands[0]
    return None


def analyse_uniformity(fn: Function, g: Graph, flavour: str = "spec", preamble: tuple[str, ...] = ()) -> Uniformity:
    """``flavour="spec"``: sound levels for the PTX rules (divergent = below warpgroup).
    ``flavour="ptxas"``: what ptxas 13.0.88 treats as divergent (measured: anything from %tid/%laneid,
    no credit for %tid.x >> 7; %warpid, %clock and shfl broadcasts uniform; ``bra.uni`` trusted)."""
    ptxas = flavour == "ptxas"
    credit = _tid_credit(fn) and not ptxas
    threshold = WARP if ptxas else WARPGROUP
    dims = None if ptxas else block_dims(fn, preamble)
    if dims and (dims[1] > 1 or dims[2] > 1) and dims[0] % 128:
        credit = False
    flat = {f"%tid.{ax}" for ax, n in zip("yz", dims[1:]) if n == 1} if dims else set()  # always 0
    level: dict[str, int] = {}
    exact: dict[str, object] = {}
    for p in fn.params:
        if p.space == ".reg":
            level[p.name], exact[p.name] = (THREAD if fn.kind == "func" else CTA), None

    def op_val(op) -> tuple[int, object]:
        if isinstance(op, Reg):
            if op.name in level:
                return level[op.name], exact.get(op.name)
            if op.name.startswith("%") and op.name.split(".")[0] not in ("%r", "%rd"):
                sp = (CTA, None) if op.name in flat else _special(op.name)
                if ptxas and op.name.split(".")[0] in ("%clock", "%clock64", "%globaltimer"):
                    sp = (WARP, None)
                if sp != (CTA, None) or "." in op.name:
                    return sp
            return CTA, _TOP
        if isinstance(op, Addr):
            return op_val(op.base) if isinstance(op.base, Reg) else (CTA, None)
        return CTA, None

    def branch_levels() -> tuple[dict[int, int], frozenset]:
        bl: dict[int, int] = {}
        div = set()
        for b in g.blocks:
            lvl = CTA
            for (x, y) in g.cdeps[b.index]:
                r = branch_reg(g.blocks[x])
                bx = THREAD if r is None else op_val(r)[0]
                if ptxas and g.blocks[x].instrs and g.blocks[x].instrs[-1].opcode.startswith("bra.uni"):
                    bx = max(bx, WARP)
                if bx < threshold:
                    div.add((x, y))
                lvl = min(lvl, bx)
            bl[b.index] = lvl
        return bl, frozenset(div)

    instrs = _sliced(g)
    changed = True
    rounds = 0
    while changed and rounds < 50:
        changed = False
        rounds += 1
        bl, _ = branch_levels()
        for bidx, ins in instrs:
            defs, _uses = defs_uses(ins)
            if not defs:
                continue
            val_l, val_e = _transfer(ins, op_val, credit)
            ctl = bl.get(bidx, CTA)
            if ins.guard is not None:
                ctl = min(ctl, op_val(ins.guard.reg)[0])
            if ctl < CTA:
                val_l, val_e = min(val_l, ctl), None
            for d in defs:
                old_l = level.get(d, CTA)
                old_e = exact.get(d, _TOP)
                new_l = min(old_l, val_l)
                new_e = val_e if old_e == _TOP else (old_e if old_e == val_e or val_e == _TOP else None)
                if new_e not in (_TOP, None):
                    new_l = min(new_l, _shift_level(new_e, credit))  # type: ignore[arg-type]
                if (new_l, new_e) != (old_l, old_e) or d not in level:
                    level[d], exact[d] = new_l, new_e
                    changed = True
    bl, div = branch_levels()
    op_val = None  # noqa: F841 (it calls itself: unlinked, it and what it holds die at once)
    return Uniformity(dict(level), bl, div, threshold)


@per_object(64)
def _sliced(g: Graph) -> list:
    """``_slice`` of all the graph's instructions, kept per graph: both flavours of the analysis
    (the spec's and ptxas's) slice the same function."""
    return _slice(g, [(b.index, i) for b in g.blocks for i in b.instrs])


def _slice(g: Graph, instrs: list) -> list:
    """Only definitions that can reach a branch condition or a guard matter (a backward slice)."""
    work = [r.name for b in g.blocks if (r := branch_reg(b)) is not None]
    work += [ins.guard.reg.name for _, ins in instrs if ins.guard is not None]
    if not work:
        return []  # no branch condition or guard: nothing to slice for
    defs_of: dict[str, list] = {}
    for bidx, ins in instrs:
        for d in defs_uses(ins)[0]:
            defs_of.setdefault(d, []).append((bidx, ins))
    seen: set[str] = set()
    keep: dict[int, tuple] = {}
    while work:
        r = work.pop()
        if r in seen:
            continue
        seen.add(r)
        for bidx, ins in defs_of.get(r, ()):
            keep[id(ins)] = (bidx, ins)
            work.extend(defs_uses(ins)[1])
            for (x, _y) in g.cdeps[bidx]:
                br = branch_reg(g.blocks[x])
                if br is not None:
                    work.append(br.name)
    return [x for x in instrs if id(x[1]) in keep]


def _transfer(ins: Instr, op_val, credit: bool) -> tuple[int, object]:
    """(level, exact tid.x shift or None) of the value an instruction defines."""
    base = ins.base
    ops = ins.operands
    srcs = ops[1:] if ops else ()
    if base in ("atom", "elect", "match", "activemask") or ins.opcode.startswith(("mbarrier.try_wait", "mbarrier.test_wait")):
        return THREAD, None
    if base in ("vote", "redux"):
        return max(WARP, min((op_val(o)[0] for o in srcs if not isinstance(o, Imm)), default=CTA)), None
    if base == "shfl" and len(srcs) >= 2:
        lane_l = op_val(srcs[1])[0]
        if lane_l >= WARP:
            return max(WARP, op_val(srcs[0])[0]), None
        return THREAD, None
    vals = [op_val(o) for o in srcs]
    lvl = min((v[0] for v in vals), default=CTA)
    if base in ("mov", "cvt", "cvta") and len(vals) == 1:
        return vals[0]
    if base in ("shr", "div") and len(srcs) == 2 and isinstance(srcs[1], Imm):
        k = vals[0][1]
        c = srcs[1].value if base == "shr" else _pow2(srcs[1].value)
        if isinstance(k, int) and isinstance(c, int) and c >= 0:
            return _shift_level(k + c, credit), k + c
    if base == "and" and len(srcs) == 2 and isinstance(k := vals[0][1], int) and isinstance(srcs[1], Imm):
        m = srcs[1].value
        if isinstance(m, int) and m != 0:
            tz = (m & -m).bit_length() - 1
            return max(lvl, _shift_level(k + tz, credit)), None
    if base in ("ld", "ldu") and ".param" in ins.opcode:
        return CTA, None
    return lvl, None
