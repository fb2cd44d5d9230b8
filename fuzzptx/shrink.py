"""PTX-level reducer: make a repro smaller while it keeps its signature.

Hypothesis shrinks programs it generates; this reducer works on any repro file
(found by a campaign, written by hand, or from a compiler).  Passes, repeated to
a fixed point or a time budget: dead code; delete chunks of statements (ddmin by
levels); delete whole blocks and loops; empty .func bodies; drop guards and
simplify immediates; replace computations by moves of a source and propagate
moves away; narrow wgmma N (fewer accumulators) and simplify its types (f16); simplify input data (random ->
zeros / small integers) and cut buffers to the elements used; finally drop
unused parameters, buffers, functions and declarations (register ranges cut to
the highest register used) and inline small data as hex.  Each candidate is
judged by the caller's predicate; candidates of one pass are judged in batches
(ptxas's batch mode where the predicate allows it).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from fuzzptx.errors import FuzzptxError
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Function, Imm, Instr, Label, Reg, RegDecl, Scope, Statement, Sym, VarDecl, Vec, walk, registers_in

Predicate = Callable[[Sequence[Program]], list[bool]]


def instruction_count(program: Program) -> int:
    """Instructions in the program (declarations, labels and directives do not count)."""
    return sum(len(f.instructions()) for f in program.module.functions() if f.body is not None)


# ---------------------------------------------------------------- IR edits


def _number(body: tuple[Statement, ...], counter: list[int], out: dict[int, Statement]) -> None:
    for s in body:
        if isinstance(s, Scope):
            _number(s.body, counter, out)
        else:
            out[counter[0]] = s
            counter[0] += 1


def _rebuild(body: tuple[Statement, ...], counter: list[int], drop: set[int], subst: dict[int, Statement]) -> tuple[Statement, ...]:
    out: list[Statement] = []
    for s in body:
        if isinstance(s, Scope):
            inner = _rebuild(s.body, counter, drop, subst)
            out.append(replace(s, body=inner))
        else:
            i = counter[0]
            counter[0] += 1
            if i in drop:
                continue
            out.append(subst.get(i, s))
    return tuple(out)


def _edit_function(program: Program, fname: str, drop: set[int] = frozenset(), subst: dict[int, Statement] | None = None) -> Program:
    items = []
    for item in program.module.items:
        if isinstance(item, Function) and item.name == fname and item.body is not None:
            item = replace(item, body=_rebuild(item.body, [0], set(drop), subst or {}))
        items.append(item)
    return replace(program, module=replace(program.module, items=tuple(items)))


def _statements(fn: Function) -> dict[int, Statement]:
    out: dict[int, Statement] = {}
    _number(fn.body or (), [0], out)
    return out


# ------------------------------------------------------------------ passes


def _removable(program: Program) -> list[tuple[str, int]]:
    """(function, statement id) of every instruction or label a deletion may take."""
    out = []
    for fn in program.module.functions():
        if fn.body is None:
            continue
        for i, st in _statements(fn).items():
            if isinstance(st, (Instr, Label)) and not (isinstance(st, Instr) and st.base in ("ret", "exit")):
                out.append((fn.name, i))
    return out


def _delete(program: Program, victims: list[tuple[str, int]]) -> Program:
    by_fn: dict[str, set[int]] = {}
    for fname, i in victims:
        by_fn.setdefault(fname, set()).add(i)
    for fname, ids in by_fn.items():
        program = _edit_function(program, fname, ids)
    return program


_EFFECTS = ("st", "stmatrix", "wmma", "wgmma", "bar", "barrier", "membar", "fence", "bra", "brx", "call", "ret",
            "exit", "trap", "atom", "red", "cp", "mbarrier", "setmaxnreg", "griddepcontrol")


def dead_code(program: Program) -> Program:
    """Instructions with no effect but their register results, none of which is read (to a fixed point)."""
    from fuzzptx.ptx.dataflow import defs_uses

    while True:
        used: set[str] = set()
        for fn in program.module.functions():
            for ins in fn.instructions():
                used |= {r.name for r in defs_uses(ins)[1]}
        victims = []
        for fn in program.module.functions():
            if fn.body is None:
                continue
            for i, st in _statements(fn).items():
                if isinstance(st, Instr) and st.base not in _EFFECTS and not st.opcode.startswith("wmma"):
                    defs = defs_uses(st)[0]
                    if defs and not any(d.name in used for d in defs):
                        victims.append((fn.name, i))
        if not victims:
            return program
        program = _delete(program, victims)


def _candidates_simplify(program: Program) -> list[Program]:
    """Drop guards, make conditional branches unconditional, prefer simple immediates."""
    cands: list[Program] = []
    for fn in program.module.functions():
        if fn.body is None:
            continue
        for i, s in _statements(fn).items():
            if not isinstance(s, Instr):
                continue
            if s.guard is not None:
                cands.append(_edit_function(program, fn.name, subst={i: replace(s, guard=None)}))
            for j, op in enumerate(s.operands):
                if isinstance(op, Imm) and isinstance(op.value, int) and op.value not in (0, 1):
                    for simpler in (1, 0):
                        ops = s.operands[:j] + (Imm.of(simpler),) + s.operands[j + 1:]
                        cands.append(_edit_function(program, fn.name, subst={i: replace(s, operands=ops)}))
    return cands


def _used_names(fn: Function) -> set[str]:
    names: set[str] = set()
    for s in walk(fn.body or ()):
        if isinstance(s, Instr):
            for op in s.operands:
                for r in registers_in(op):
                    names.add(r.name)
                _collect_syms(op, names)
            if s.guard:
                names.add(s.guard.reg.name)
    return names


def _collect_syms(op, names: set[str]) -> None:
    from fuzzptx.ptx.ir import Addr, CallArgs

    if isinstance(op, Sym):
        names.add(op.name)
    elif isinstance(op, Addr) and isinstance(op.base, Sym):
        names.add(op.base.name)
    elif isinstance(op, (Vec, CallArgs)):
        for it in op.items:
            _collect_syms(it, names)


def cleanup(program: Program, *, variables: bool = True) -> Program:
    """Remove what nothing refers to: params with their buffers, .funcs, register declarations and
    (``variables``) state-space variables (an unused one may still back an out-of-range access)."""
    module = program.module
    kernel = module.function(program.launch.kernel)
    used = _used_names(kernel)
    keep_params = tuple(p for p in kernel.params if p.name in used)
    buffers = tuple(b for b in program.buffers if b.name in {p.name for p in keep_params})
    scalars = tuple((n, v) for n, v in program.scalars if n in {p.name for p in keep_params})
    called: set[str] = set()
    for fn in module.functions():
        if fn.body is not None:
            called |= _used_names(fn)
    items = []
    for item in module.items:
        if isinstance(item, Function):
            if item.name == kernel.name:
                item = replace(item, params=keep_params)
            elif item.kind == "func" and item.name not in called:
                continue
            if item.body is not None:
                names = _used_names(item) | {p.name for p in item.params} | {p.name for p in item.returns}
                item = replace(item, body=_prune_decls(item.body, names, variables))
        elif isinstance(item, VarDecl) and variables and item.name not in called:
            continue
        items.append(item)
    return replace(program, module=replace(module, items=tuple(items)), buffers=buffers, scalars=scalars)


def _prune_decls(body: tuple[Statement, ...], used: set[str], variables: bool = True) -> tuple[Statement, ...]:
    out: list[Statement] = []
    for s in body:
        if isinstance(s, Scope):
            out.append(replace(s, body=_prune_decls(s.body, used, variables)))
        elif isinstance(s, RegDecl) and s.count is None:
            names = tuple(n for n in s.names if n in used)
            if names:
                out.append(replace(s, names=names))
        elif isinstance(s, RegDecl):
            live = [k for k, n in enumerate(s.expand()) if n in used]
            if live:  # %r<53> with only %r0..%r11 used becomes %r<12>
                out.append(replace(s, count=live[-1] + 1))
        elif isinstance(s, VarDecl):
            if s.name in used or not variables:
                out.append(s)
        else:
            out.append(s)
    return tuple(out)


_TYPES = frozenset("b8 b16 b32 b64 u8 u16 u32 u64 s8 s16 s32 s64 f16 f32 f64 pred".split())


def _type_of(ins: Instr) -> str | None:
    """The instruction's last type modifier (``add.u64`` -> ``u64``), the type of its result."""
    for m in reversed(ins.modifiers):
        if m in _TYPES:
            return m
    return None


def _candidates_bypass(program: Program) -> list[Program]:
    """Replace a computation by a plain move of one of its sources (``add d, a, b`` -> ``mov d, a``)
    or a load by the constant 0: copy propagation then removes the move."""
    from fuzzptx.ptx.dataflow import defs_uses

    cands: list[Program] = []
    for fn in program.module.functions():
        if fn.body is None:
            continue
        for i, s in _statements(fn).items():
            if not isinstance(s, Instr) or s.base in _EFFECTS or s.base == "mov" or s.opcode.startswith("wmma"):
                continue
            t = _type_of(s)
            defs = defs_uses(s)[0]
            if t is None or len(defs) != 1 or not s.operands or s.operands[0] != defs[0]:
                continue
            srcs = [op for op in s.operands[1:] if isinstance(op, (Reg, Imm))]
            if s.base in ("ld", "cvta", "cvt"):
                srcs = [op for op in s.operands[1:] if isinstance(op, Reg)] + [Imm.of(0)]
            for src in srcs:
                mov = replace(s, opcode=f"mov.{t}", operands=(defs[0], src))
                cands.append(_edit_function(program, fn.name, subst={i: mov}))
    return cands


def _substitute(op, name: str, new):
    """``op`` with register ``name`` replaced by ``new`` (a Reg anywhere; an Imm only as a whole operand)."""
    from fuzzptx.ptx.ir import Addr, CallArgs, Neg

    if isinstance(op, Reg):
        return new if op.name == name else op
    if isinstance(op, Addr) and isinstance(op.base, Reg) and op.base.name == name:
        return replace(op, base=new) if isinstance(new, Reg) else None
    if isinstance(op, Neg) and op.reg.name == name:
        return replace(op, reg=new) if isinstance(new, Reg) else None
    if isinstance(op, (Vec, CallArgs)):
        items = [_substitute(x, name, new) for x in op.items]
        return None if any(x is None for x in items) else replace(op, items=tuple(items))
    return op


# Special registers: ptxas takes them only as mov/cvt sources, so a move from one stays.
_SPECIAL = frozenset("%tid %ntid %ctaid %nctaid %laneid %warpid %nwarpid %smid %nsmid %gridid %clock %clock64 "
                     "%globaltimer %lanemask_eq %lanemask_le %lanemask_lt %lanemask_ge %lanemask_gt "
                     "%dynamic_smem_size %total_smem_size".split())


_TENSOR = frozenset(("wgmma", "wmma", "mma", "ldmatrix", "stmatrix"))


def _candidates_copyprop(program: Program) -> list[Program]:
    """Delete ``mov d, s`` (d written once) and read ``s`` wherever ``d`` was read (for a symbol
    ``s``: the register an earlier move of the same symbol wrote)."""
    from fuzzptx.ptx.dataflow import defs_uses

    cands: list[Program] = []
    for fn in program.module.functions():
        if fn.body is None:
            continue
        sts = _statements(fn)
        writes: dict[str, int] = {}
        for st in sts.values():
            if isinstance(st, Instr):
                for d in defs_uses(st)[0]:
                    writes[d.name] = writes.get(d.name, 0) + 1
        first_mov: dict[tuple, Reg] = {}  # (opcode, symbol) -> the register the first such move writes
        for i, s in sts.items():
            if not (isinstance(s, Instr) and s.base == "mov" and s.guard is None and len(s.operands) == 2
                    and isinstance(s.operands[0], Reg) and isinstance(s.operands[1], (Reg, Imm, Sym))):
                continue
            d, src = s.operands
            if isinstance(src, Sym):  # a second `mov %r, smem`: read the first one's register instead
                key = (s.opcode, src.name)
                if key not in first_mov:
                    first_mov[key] = d
                    continue
                src = first_mov[key]
                if writes.get(src.name) != 1:
                    continue
            if writes.get(d.name) != 1 or (isinstance(src, Reg) and src.name.split(".")[0] in _SPECIAL):
                continue
            subst: dict[int, Statement] = {}
            ok = True
            for j, st in sts.items():
                if j == i or not isinstance(st, Instr):
                    continue
                if st.guard is not None and st.guard.reg.name == d.name:
                    ok = False
                    break
                if isinstance(src, Imm) and st.base in _TENSOR and any(d in registers_in(o) for o in st.operands):
                    ok = False  # descriptors, strides and fragments stay registers
                    break
                ops = tuple(_substitute(op, d.name, src) for op in st.operands)
                if any(o is None for o in ops):
                    ok = False
                    break
                if ops != st.operands:
                    subst[j] = replace(st, operands=ops)
            if ok:
                cands.append(_edit_function(_edit_function(program, fn.name, subst=subst), fn.name, {i}))
    return cands


def _blocks(fn: Function) -> list[list[int]]:
    """Statement-id ranges worth deleting whole: each labelled block (label up to the next label)
    and each loop (a label up to the branch back to it)."""
    sts = _statements(fn)
    ids = sorted(sts)
    labels = [i for i in ids if isinstance(sts[i], Label)]
    out: list[list[int]] = []
    for k, start in enumerate(labels):
        end = labels[k + 1] if k + 1 < len(labels) else ids[-1] + 1
        out.append([i for i in ids if start <= i < end])
        name = sts[start].name
        for j in ids:
            s = sts[j]
            if j > start and isinstance(s, Instr) and s.base == "bra" and any(isinstance(o, Sym) and o.name == name for o in s.operands):
                out.append([i for i in ids if start <= i <= j])
    keep = lambda i: not (isinstance(sts[i], Instr) and sts[i].base in ("ret", "exit"))
    return [[i for i in b if keep(i)] for b in out if len(b) > 1]


def _candidates_blocks(program: Program) -> list[Program]:
    cands = []
    for fn in program.module.functions():
        if fn.body is not None:
            cands += [_delete(program, [(fn.name, i) for i in b]) for b in _blocks(fn) if b]
    return cands


def _candidates_funcs(program: Program) -> list[Program]:
    """A .func's body emptied to its declarations and ``ret``."""
    cands = []
    for k, item in enumerate(program.module.items):
        if isinstance(item, Function) and item.kind == "func" and item.body is not None and len(item.instructions()) > 1:
            body = tuple(s for s in item.body if isinstance(s, (RegDecl, VarDecl))) + (Instr("ret"),)
            items = program.module.items[:k] + (replace(item, body=body),) + program.module.items[k + 1:]
            cands.append(replace(program, module=replace(program.module, items=items)))
    return cands


def _candidates_narrow(program: Program) -> list[Program]:
    """Tensor-core instructions rewritten to a smaller N of the same catalogue row (fewer accumulators)."""
    from fuzzptx import isa

    cands = []
    for fn in program.module.functions():
        if fn.body is None:
            continue
        for i, s in _statements(fn).items():
            if not isinstance(s, Instr):
                continue
            form = isa.form_for(s)
            if form is None or form.shape is None or not form.family.startswith("wgmma"):
                continue
            n = form.shape.n
            smaller = sorted((f for f in isa.forms(form.family) if f.shape is not None and f.shape.n < n
                              and f.key.replace(f"n{f.shape.n}k", "#") == form.key.replace(f"n{n}k", "#")),
                             key=lambda f: f.shape.n)
            d = s.operands[0]
            for f in smaller:  # smallest first: the first that keeps the signature wins
                if not isinstance(d, Vec):
                    continue
                count = f.operand("d").count
                ops = (Vec(d.items[:count]),) + s.operands[1:]
                cands.append(_edit_function(program, fn.name, subst={i: replace(s, opcode=f.opcode, operands=ops)}))
    return cands


_SIMPLE_TYPES = ("f16", "bf16", "tf32", "s8", "u8", "e4m3", "e5m2", "b1")


def _simpler_forms(form):
    """Forms of the same family, shape and A source with simpler types (f16 first), operand roles alike."""
    from fuzzptx import isa

    rank = {t: i for i, t in enumerate(_SIMPLE_TYPES)}
    mine = rank.get(form.atype, 99)
    same = [f for f in isa.forms(form.family) if f.shape is not None and f.shape.m == form.shape.m
            and f.shape.n == form.shape.n and getattr(f, "a_source", None) == getattr(form, "a_source", None)
            and rank.get(f.atype, 99) < mine and f.btype == f.atype]
    return sorted(same, key=lambda f: (rank.get(f.atype, 99), f.dtype != "f32", f.key))


def _candidates_types(program: Program) -> list[Program]:
    """wgmma rewritten with simpler types (``e4m3`` -> ``f16``): operands carried over by role,
    immediates a new form adds take the minimal kernel's defaults."""
    from fuzzptx import isa
    from fuzzptx.kernels import default_immediate

    cands = []
    for fn in program.module.functions():
        if fn.body is None:
            continue
        for i, s in _statements(fn).items():
            form = isa.form_for(s) if isinstance(s, Instr) else None
            if form is None or form.shape is None or not form.family.startswith("wgmma") or len(form.operands) != len(s.operands):
                continue
            by_role = {spec.role: op for spec, op in zip(form.operands, s.operands)}
            for f in _simpler_forms(form)[:3]:
                ops = []
                for spec in f.operands:
                    if spec.role in by_role:
                        ops.append(by_role[spec.role])
                    elif spec.kind in ("imm", "pred_or_imm"):
                        ops.append(Imm.of(default_immediate(spec)))
                    else:
                        break
                else:
                    cands.append(_edit_function(program, fn.name, subst={i: replace(s, opcode=f.opcode, operands=tuple(ops))}))
    return cands


def _candidates_counts(program: Program) -> list[Program]:
    """Buffers cut to 1, 1/16, 1/4 or 1/2 of their elements (the judges refuse what an access then misses)."""
    cands = []
    for k, b in enumerate(program.buffers):
        for n in sorted({1, b.count // 16, b.count // 4, b.count // 2}):
            if 1 <= n < b.count:
                nb = replace(b, count=n)
                if b.init.startswith("hex:"):
                    nb = replace(nb, init="hex:" + b.init[4:][:2 * nb.nbytes])
                cands.append(replace(program, buffers=program.buffers[:k] + (nb,) + program.buffers[k + 1:]))
    return cands


def _candidates_data(program: Program) -> list[Program]:
    cands = []
    for i, b in enumerate(program.buffers):
        for init in ("zeros", "small_int"):
            if b.init in (init, "zeros") or b.init.startswith("hex:"):
                continue
            bufs = program.buffers[:i] + (replace(b, init=init),) + program.buffers[i + 1:]
            cands.append(replace(program, buffers=bufs))
    return cands


def inline_small_data(program: Program, limit: int = 512) -> Program:
    """Buffers of at most ``limit`` bytes get their contents inline as hex (self-contained repro)."""
    from fuzzptx.data import buffer_bytes

    bufs = []
    for b in program.buffers:
        if not b.output and not b.init.startswith("hex:") and b.nbytes <= limit and b.init not in ("zeros",):
            b = replace(b, init="hex:" + buffer_bytes(b).tobytes().hex(), seed=0)
        bufs.append(b)
    return replace(program, buffers=tuple(bufs))


PASSES = (("blocks", _candidates_blocks), ("funcs", _candidates_funcs), ("simplify", _candidates_simplify),
          ("bypass", _candidates_bypass), ("copy-propagate", _candidates_copyprop), ("narrow", _candidates_narrow),
          ("types", _candidates_types), ("data", _candidates_data), ("counts", _candidates_counts))


# -------------------------------------------------------------------- driver


@dataclass(frozen=True)
class ShrinkResult:
    program: Program
    before: int
    after: int
    seconds: float
    evaluations: int


def shrink(program: Program, holds: Predicate, *, budget_s: float = 60.0, log: Callable[[str], None] | None = None) -> ShrinkResult:
    """Reduce ``program`` while ``holds`` stays true; stops at a fixed point or after ``budget_s``.

    Deletion is ddmin by levels: try the chunks of the current size in order (judged in
    batches), drop the first that holds and go on from there at that size, else halve
    the size.  Other passes likewise go on after their last hit; a round that changed
    anything is followed by another, so a candidate skipped once is tried again.
    """
    t0 = time.perf_counter()
    before = instruction_count(program)
    evaluations = 0

    def out_of_time() -> bool:
        return time.perf_counter() - t0 >= budget_s

    def first_holding(cands: list[Program], start: int = 0) -> tuple[Program, int] | None:
        """The first candidate (from ``start``) that holds, and its index.  Batches grow 4, 8, 16, 32:
        a predicate judged one program at a time wastes little past the hit, a batched one
        (ptxas) still gets large batches."""
        nonlocal evaluations
        lo, step = start, 4
        while lo < len(cands):
            if out_of_time():
                return None
            part = cands[lo:lo + step]
            evaluations += len(part)
            for k, (c, ok) in enumerate(zip(part, holds(part))):
                if ok:
                    return c, lo + k
            lo, step = lo + step, min(2 * step, 32)
        return None

    if not holds([program])[0]:
        raise FuzzptxError("the signature does not hold on the input: nothing to keep")
    evaluations += 1
    current = program
    def without_dead_code(p: Program) -> Program:
        dce = dead_code(p)
        return dce if dce is not p and first_holding([dce]) is not None else p

    current = without_dead_code(program)
    if log and current is not program:
        log(f"  dead code: {instruction_count(current)} instructions")
    changed = True
    while changed and not out_of_time():
        changed = False
        items = _removable(current)
        size, start = max(1, len(items) // 2), 0
        while items and not out_of_time():
            chunks = [items[i:i + size] for i in range(0, len(items), size)]
            hit = first_holding([_delete(current, ch) for ch in chunks], start)
            if hit is not None:  # go on at the same size from the chunk after the one that went
                current, start, changed = hit[0], hit[1], True
                if log:
                    log(f"  delete: {instruction_count(current)} instructions")
                items = _removable(current)
                if size > max(1, len(items) // 2):
                    size, start = max(1, len(items) // 2), 0
                continue
            if size == 1:
                break
            size, start = size // 2, 0
        for name, make in PASSES:
            start = 0
            while not out_of_time():
                cands = [c for c in make(current) if _size(c) < _size(current)]
                hit = first_holding(cands, start) if cands else None
                if hit is None:
                    break
                current, start, changed = without_dead_code(hit[0]), hit[1], True
                if log:
                    log(f"  {name}: {instruction_count(current)} instructions")
    for tidy in (cleanup(current), cleanup(current, variables=False)):
        if tidy != current and holds([tidy])[0]:
            current = tidy
            break
    inlined = inline_small_data(current)
    if inlined is not current and holds([inlined])[0]:
        current = inlined
    return ShrinkResult(current, before, instruction_count(current), time.perf_counter() - t0, evaluations)


def _size(p: Program) -> tuple[int, int, int, int]:
    """What the passes minimise, in order: instructions; statements, operands, non-0/1 immediates and
    guards; buffers with drawn (not simple) data; buffer bytes."""
    simple = sum(0 if b.init in ("zeros", "small_int") or b.init.startswith("hex:") else 1 for b in p.buffers)
    atoms = 0
    for f in p.module.functions():
        for ins in f.instructions():
            atoms += sum(1 for o in ins.operands if isinstance(o, Imm) and isinstance(o.value, int) and o.value not in (0, 1))
            atoms += (ins.guard is not None) + sum(_atoms(o) for o in ins.operands) + (ins.base != "mov")
            atoms += 4 * sum(ins.opcode.count(f".{t}") for t in _SIMPLE_TYPES[1:]) if ins.base == "wgmma" else 0
    stmts = sum(len(_statements(f)) for f in p.module.functions() if f.body is not None)
    return (instruction_count(p), stmts + atoms, simple, sum(b.nbytes for b in p.buffers))


def _atoms(op) -> int:
    return sum(_atoms(x) for x in op.items) if isinstance(op, Vec) else 1


def signature_predicate(signature: str, program: Program | None = None) -> Predicate:
    """Judge candidates for ``--keep SIGNATURE``, batching ptxas when only ptxas is needed.

    A corpus signature (``spec!=ptxas|...``, ``notes!=ptxas|...``, the hardware ones) keeps what
    its ``fuzzptx.corpus`` entry keeps (given the ``program`` to keep it for)."""
    from fuzzptx import differ

    if program is not None:
        from fuzzptx.corpus import entry_for, guarded

        entry = entry_for(signature)
        if entry is not None:
            return guarded(entry, program)

    keep = differ.keep_predicate(signature)
    needed = differ.judges_for(signature)

    def holds(programs: Sequence[Program]) -> list[bool]:
        results = None
        texts = [p.to_ptx() for p in programs]
        if "ptxas" in needed and "hardware" not in needed:
            from fuzzptx.oracles.ptxas import compile_batch

            results = compile_batch(texts)
        out = [False] * len(programs)
        for i, p in enumerate(programs):
            v = differ.judge(p, needed, ptxas_result=results[i] if results is not None else None, text=texts[i])
            if keep(differ.compare(p, v), v):
                out[i] = True
                break  # the reducer takes the first candidate that holds: judging the rest is waste
        return out

    return holds


def rejudged(program: Program, signature: str) -> Program:
    """The program with EXPECT lines (and signature) saying what the CPU judges say of it now."""
    from fuzzptx import differ

    judges = tuple(j for j in differ.JUDGES if j != "hardware" or "hardware" in signature)
    v = differ.judge(program, judges)
    findings = differ.compare(program, v)
    sig = next((f.signature for f in findings if f.signature.startswith(signature)), program.signature or signature)
    return differ.finalize_repro(program, judges, sig)


def main_shrink(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fuzzptx shrink", description="Reduce a repro file while it keeps a signature.")
    ap.add_argument("file")
    ap.add_argument("--keep", required=True, help="ptxas:C7519, ptxas:error, checker!=ptxas, reference!=hardware, or a finding signature prefix")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds (default 60)")
    args = ap.parse_args(argv)
    program = Program.from_file(args.file)
    print(f"shrinking {args.file}: {instruction_count(program)} instructions, keep {args.keep}")
    try:
        res = shrink(program, signature_predicate(args.keep, program), budget_s=args.budget, log=print)
    except FuzzptxError as exc:
        if exc.file is None:
            raise FuzzptxError(f"{args.keep}: {exc.message}", file=args.file) from None
        raise
    noted = replace(res.program, notes=res.program.notes + (f"shrunk from {res.before} to {res.after} instructions in {res.seconds:.1f} s",))
    from fuzzptx.corpus import entry_for, finalize

    entry = entry_for(args.keep)
    out = finalize(entry, noted) if entry is not None else rejudged(noted, args.keep)
    with open(args.output, "w") as fh:
        fh.write(out.to_ptx())
    print(f"done: {res.before} -> {res.after} instructions in {res.seconds:.1f} s ({res.evaluations} candidates); wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main_shrink(sys.argv[1:]))
