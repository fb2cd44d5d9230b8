"""Which registers an instruction writes and reads, and liveness over a CFG.

Tensor-core forms come from the catalogue (``OperandSpec.io``: wgmma's d is
``inout``, so it is both written and read).  Everything else follows PTX
convention: the first operand is the destination unless the instruction has none
(stores, barriers, branches, fences...) or the first operand is an address; a
predicate pair ``%p|%q`` is two destinations; ``call (ret), f, (args)`` writes the
returns and reads the arguments.  The guard register is always read.
"""
from __future__ import annotations

from dataclasses import dataclass

from fuzzptx import isa

from .cfg import CFG
from .ir import Addr, CallArgs, Imm, Instr, Reg, Sym, Vec, registers_in

# Base opcodes that never write their first operand.
NO_DEST = frozenset(
    """
    st bar barrier bra brx ret exit trap brkpt membar fence red prefetch prefetchu stmatrix
    nanosleep pmevent setmaxnreg griddepcontrol discard applypriority stackrestore sust sured
    cp multimem tensormap
    """.split()
)
# Opcodes (full prefix) with no destination although their base usually has one.
NO_DEST_PREFIX = ("wmma.store", "wgmma.fence", "wgmma.commit_group", "wgmma.wait_group", "mbarrier.init",
                   "mbarrier.inval", "mbarrier.expect_tx", "mbarrier.complete_tx", "tcgen05.")
SPECIAL_PREFIXES = ("%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid",
                    "%gridid", "%clock", "%lanemask", "%pm", "%envreg", "%globaltimer", "%cluster", "%is_explicit",
                    "%total_smem", "%dynamic_smem", "%aggr_smem", "%reserved_smem", "%current_graph_exec")


def split_pair(reg: Reg) -> tuple[Reg, ...]:
    """``%p|%q`` (the parser's predicate pair) -> (%p, %q); any other register -> (reg,)."""
    if "|" not in reg.name:
        return (reg,)
    return tuple(Reg(n) for n in reg.name.split("|"))


def is_special(reg: Reg) -> bool:
    """True for read-only special registers (``%tid.x``, ``%clock64``...)."""
    return reg.name.startswith(SPECIAL_PREFIXES)


def _regs(op) -> tuple[Reg, ...]:
    if isinstance(op, Reg) and "|" not in op.name:
        return (op,)
    out: list[Reg] = []
    for r in registers_in(op):
        out.extend(split_pair(r))
    return tuple(out)


def _dedup(regs: list[Reg]) -> tuple[Reg, ...]:
    if len(regs) < 2:  # most instructions: no hashing needed
        return tuple(regs)
    if len(regs) == 2:
        return (regs[0],) if regs[0].name == regs[1].name else tuple(regs)
    return tuple(dict.fromkeys(regs))


def defs_uses(instr: Instr) -> tuple[tuple[Reg, ...], tuple[Reg, ...]]:
    """(registers written, registers read) by ``instr``, each in operand order without repeats."""
    defs: list[Reg] = []
    uses: list[Reg] = []
    if instr.guard is not None:
        uses.append(instr.guard.reg)
    ops = instr.operands
    form = isa.form_for(instr)
    if form is not None and len(form.operands) == len(ops):
        for spec, op in zip(form.operands, ops):
            regs = _regs(op)
            if isinstance(op, Addr) or spec.io == "in":
                uses.extend(regs)
            elif spec.io == "out":
                defs.extend(regs)
            else:  # inout
                defs.extend(regs)
                uses.extend(regs)
        return _dedup(defs), _dedup(uses)
    base = instr.base
    if base == "call":
        k = 0
        if ops and isinstance(ops[0], CallArgs) and len(ops) > 1:
            defs.extend(_regs(ops[0]))
            k = 1
        for op in ops[k:]:
            uses.extend(_regs(op))
        return _dedup(defs), _dedup(uses)
    first_is_dest = (
        bool(ops)
        and isinstance(ops[0], (Reg, Vec))
        and base not in NO_DEST
        and not instr.opcode.startswith(NO_DEST_PREFIX)
    )
    for i, op in enumerate(ops):
        if isinstance(op, Imm):
            continue
        regs = _regs(op)
        if i == 0 and first_is_dest:
            defs.extend(r for r in regs if not is_special(r))
            if base == "wgmma" and "mma_async" in instr.modifiers:
                uses.extend(regs)  # outside the catalogue (illegal form): d is still read and written
        else:
            uses.extend(regs)
    return _dedup(defs), _dedup(uses)


def defs_uses_names(instr: Instr) -> tuple[frozenset[str], frozenset[str]]:
    """``defs_uses`` as two sets of register names (what the checker keeps per instruction)."""
    fast = _plain_names(instr)
    if fast is not None:
        return fast
    d, u = defs_uses(instr)
    return frozenset(r.name for r in d), frozenset(r.name for r in u)


def _plain_names(instr: Instr) -> tuple[frozenset[str], frozenset[str]] | None:
    """``defs_uses`` as names for an instruction outside the catalogue whose operands are plain
    registers, immediates, symbols, addresses and vectors of registers (most loads, stores and
    moves with their one-off addresses), by the same rules without building and deduplicating
    ``Reg`` objects; None where ``defs_uses``'s fuller rules apply (``tests/test_checker_isa.py``
    holds the two to the same answers)."""
    base = instr.base
    if base == "call" or base == "wgmma" or isa.form_for(instr) is not None:
        return None
    ops = instr.operands
    first_is_dest = (bool(ops) and type(ops[0]) in (Reg, Vec) and base not in NO_DEST
                     and not instr.opcode.startswith(NO_DEST_PREFIX))
    defs: list[str] = []
    uses: list[str] = [instr.guard.reg.name] if instr.guard is not None else []
    for k, op in enumerate(ops):
        t = type(op)
        if t is Imm or t is Sym:
            continue
        if t is Reg:
            names = [op.name]
        elif t is Addr:
            b = op.base
            if b is None or type(b) is Sym:
                continue
            if type(b) is not Reg:
                return None
            names = [b.name]
        elif t is Vec:
            names = []
            for item in op.items:
                ti = type(item)
                if ti is Reg:
                    names.append(item.name)
                elif ti is not Imm:
                    return None
        else:
            return None
        if k == 0 and first_is_dest:
            defs.extend(n for n in names if not n.startswith(SPECIAL_PREFIXES))
        else:
            uses.extend(names)
    if any("|" in n for n in defs) or any("|" in n for n in uses):
        return None  # a predicate pair: two registers in one name
    return frozenset(defs), frozenset(uses)


# ------------------------------------------------------------------ liveness


@dataclass(frozen=True)
class Liveness:
    """Per block: registers live on entry and on exit."""

    live_in: tuple[frozenset[Reg], ...]
    live_out: tuple[frozenset[Reg], ...]


def liveness(cfg: CFG) -> Liveness:
    """Backward may-liveness.  A guarded instruction's writes do not kill (it may not execute)."""
    n = len(cfg.blocks)
    gen: list[frozenset[Reg]] = []
    kill: list[frozenset[Reg]] = []
    for b in cfg.blocks:
        g: set[Reg] = set()
        k: set[Reg] = set()
        for ins in reversed(b.instrs):
            d, u = defs_uses(ins)
            if ins.guard is None:
                g.difference_update(d)
                k.update(d)
            g.update(u)
        gen.append(frozenset(g))
        kill.append(frozenset(k))
    live_in = [frozenset()] * n
    live_out = [frozenset()] * n
    changed = True
    while changed:
        changed = False
        for b in reversed(range(n)):
            out = frozenset().union(*(live_in[s] for s in cfg.blocks[b].succs))
            inn = gen[b] | (out - kill[b])
            if out != live_out[b] or inn != live_in[b]:
                live_out[b], live_in[b] = out, inn
                changed = True
    return Liveness(tuple(live_in), tuple(live_out))
