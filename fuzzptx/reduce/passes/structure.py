"""The reducer's structural passes: each makes candidates (smaller programs) for the driver in
``fuzzptx.reduce.driver`` to judge: delete blocks and loops, empty .func bodies, drop guards and simplify
immediates, bypass computations and propagate moves, narrow wgmma N, simplify types and data."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from fuzzptx.program import Program
from fuzzptx.ptx.ir import Function, Imm, Instr, Label, Reg, RegDecl, Statement, Sym, VarDecl, Vec, registers_in
from fuzzptx.reduce.edit import EFFECTS, as_form, delete, edit_function, statements, type_of, write_counts
from fuzzptx.reduce.passes.base import Pass
from fuzzptx.ptx.ir import Addr, CallArgs, Neg
from fuzzptx import isa
from fuzzptx.ptx.dataflow import defs_uses


@dataclass(frozen=True)
class Simplify(Pass):
    name: ClassVar[str] = "simplify"

    def candidates(self, program: Program) -> list[Program]:
        """Drop guards, make conditional branches unconditional, prefer simple immediates."""
        cands: list[Program] = []
        for fn in program.module.functions():
            if fn.body is None:
                continue
            for i, s in statements(fn).items():
                if not isinstance(s, Instr):
                    continue
                if s.guard is not None:
                    cands.append(edit_function(program, fn.name, subst={i: replace(s, guard=None)}))
                for j, op in enumerate(s.operands):
                    if isinstance(op, Imm) and isinstance(op.value, int) and op.value not in (0, 1):
                        for simpler in (1, 0):
                            ops = s.operands[:j] + (Imm.of(simpler),) + s.operands[j + 1:]
                            cands.append(edit_function(program, fn.name, subst={i: replace(s, operands=ops)}))
        return cands


@dataclass(frozen=True)
class Bypass(Pass):
    name: ClassVar[str] = "bypass"

    def candidates(self, program: Program) -> list[Program]:
        """Replace a computation by a plain move of one of its sources (``add d, a, b`` -> ``mov d, a``)
        or a load by the constant 0: copy propagation then removes the move."""
        cands: list[Program] = []
        for fn in program.module.functions():
            if fn.body is None:
                continue
            for i, s in statements(fn).items():
                if not isinstance(s, Instr) or s.base in EFFECTS or s.base == "mov" or s.opcode.startswith("wmma"):
                    continue
                t = type_of(s)
                if t is not None and "wide" in s.modifiers:  # mul.wide.u32 writes a u64
                    t = t[0] + str(2 * int(t[1:]))
                defs = defs_uses(s)[0]
                if t is None or len(defs) != 1 or not s.operands or s.operands[0] != defs[0]:
                    continue
                srcs = [op for op in s.operands[1:] if isinstance(op, (Reg, Imm))]
                if s.base in ("ld", "cvta", "cvt"):
                    srcs = [op for op in s.operands[1:] if isinstance(op, Reg)] + [Imm.of(0)]
                for src in srcs:
                    mov = replace(s, opcode=f"mov.{t}", operands=(defs[0], src))
                    cands.append(edit_function(program, fn.name, subst={i: mov}))
        return cands


def _substitute(op, name: str, new):
    """``op`` with register ``name`` replaced by ``new`` (a Reg anywhere; an Imm only as a whole operand)."""
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


@dataclass(frozen=True)
class CopyPropagate(Pass):
    name: ClassVar[str] = "copy-propagate"

    def candidates(self, program: Program) -> list[Program]:
        """Delete ``mov d, s`` (d written once) and read ``s`` wherever ``d`` was read (for a symbol
        ``s``: the register an earlier move of the same symbol wrote)."""
        cands: list[Program] = []
        for fn in program.module.functions():
            if fn.body is None:
                continue
            sts = statements(fn)
            writes = write_counts(sts)
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
                    if isinstance(src, Imm) and st.base in _TENSOR and not _imm_operand_ok(st, d):
                        ok = False  # strides and fragments stay registers (wgmma descriptors may be immediates)
                        break
                    ops = tuple(_substitute(op, d.name, src) for op in st.operands)
                    if any(o is None for o in ops):
                        ok = False
                        break
                    if ops != st.operands:
                        subst[j] = replace(st, operands=ops)
                if ok:
                    cands.append(edit_function(edit_function(program, fn.name, subst=subst), fn.name, {i}))
        return cands


def _imm_operand_ok(ins: Instr, reg: Reg) -> bool:
    """Whether every operand of tensor instruction ``ins`` that reads ``reg`` may be an immediate:
    only a wgmma's A/B descriptors (ptxas 13.0.88 accepts a 64-bit immediate there), scale-d and a
    wmma.load/store's stride (ptxas 13.0.88 accepts ``wmma.load.a...s8 {..}, [%rd2], 24``)."""
    form = isa.form_for(ins) if ins.base in ("wgmma", "wmma") else None
    if form is None or len(form.operands) != len(ins.operands):
        return not any(reg in registers_in(o) for o in ins.operands)
    return all(spec.role in ("a_desc", "b_desc", "stride") or spec.kind == "pred_or_imm" or reg not in registers_in(o)
               for spec, o in zip(form.operands, ins.operands))


def _blocks(fn: Function) -> list[list[int]]:
    """Statement-id ranges worth deleting whole: each labelled block (label up to the next label)
    and each loop (a label up to the branch back to it)."""
    sts = statements(fn)
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


@dataclass(frozen=True)
class Blocks(Pass):
    name: ClassVar[str] = "blocks"

    def candidates(self, program: Program) -> list[Program]:
        cands = []
        for fn in program.module.functions():
            if fn.body is not None:
                cands += [delete(program, [(fn.name, i) for i in b]) for b in _blocks(fn) if b]
        return cands


@dataclass(frozen=True)
class Entries(Pass):
    name: ClassVar[str] = "entries"

    def candidates(self, program: Program) -> list[Program]:
        """The kernels other than the launched one go: all at once, else either half.  Each judgement
        compiles the whole module, and the deletions' chunks, smaller than a kernel, would remove N
        kernels in N steps: N judgements of an N-kernel module (a 30-kernel module took its shrink's
        budget; benchmarks/bench_scaling.py)."""
        items = program.module.items
        entries = {it.name for it in items if isinstance(it, Function) and it.kind == "entry"}
        if program.launch.kernel not in entries:  # nothing known to keep: every kernel may matter
            return []
        others = [k for k, it in enumerate(items)
                  if isinstance(it, Function) and it.kind == "entry" and it.name != program.launch.kernel]
        if not others:
            return []
        halves = [others[:len(others) // 2], others[len(others) // 2:]] if len(others) > 1 else []
        return [replace(program, module=replace(program.module, items=tuple(it for k, it in enumerate(items)
                                                                            if k not in set(drop))))
                for drop in [others, *halves]]


@dataclass(frozen=True)
class Funcs(Pass):
    name: ClassVar[str] = "funcs"

    def candidates(self, program: Program) -> list[Program]:
        """A .func's body emptied to its declarations and ``ret``."""
        cands = []
        for k, item in enumerate(program.module.items):
            if isinstance(item, Function) and item.kind == "func" and item.body is not None and len(item.instructions()) > 1:
                body = tuple(s for s in item.body if isinstance(s, (RegDecl, VarDecl))) + (Instr("ret"),)
                items = program.module.items[:k] + (replace(item, body=body),) + program.module.items[k + 1:]
                cands.append(replace(program, module=replace(program.module, items=items)))
        return cands


@dataclass(frozen=True)
class Narrow(Pass):
    name: ClassVar[str] = "narrow"

    def candidates(self, program: Program) -> list[Program]:
        """Tensor-core instructions rewritten to a smaller N of the same catalogue row (fewer accumulators):
        first every instruction of one form at once (they share accumulators), then one at a time; at
        most 8 Ns each, smallest first (a later round narrows further)."""
        group: dict[tuple[str, str], list[tuple[int, Instr]]] = {}
        for fn in program.module.functions():
            for i, s in (statements(fn).items() if fn.body is not None else ()):
                form = isa.form_for(s) if isinstance(s, Instr) else None
                if form is not None and form.shape is not None and form.family.startswith("wgmma") and isinstance(s.operands[0], Vec):
                    group.setdefault((fn.name, form.key), []).append((i, s))
        singles, cands = [], []
        for (fname, key), members in group.items():
            form = isa.form_for(members[0][1])
            n = form.shape.n
            smaller = sorted((f for f in isa.forms(form.family) if f.shape is not None and f.shape.n < n
                              and f.key.replace(f"n{f.shape.n}k", "#") == key.replace(f"n{n}k", "#")), key=lambda f: f.shape.n)
            step = max(1, -(-len(smaller) // 8))
            smaller = smaller[::step] + ([smaller[-1]] if smaller and (len(smaller) - 1) % step else [])

            def narrowed(s: Instr, f) -> Instr:
                return replace(s, opcode=f.opcode, operands=(Vec(s.operands[0].items[:f.operand("d").count]),) + s.operands[1:])

            for f in smaller:  # smallest first: the first that keeps the signature wins
                if len(members) > 1:
                    cands.append(edit_function(program, fname, subst={i: narrowed(s, f) for i, s in members}))
                singles += [edit_function(program, fname, subst={i: narrowed(s, f)}) for i, s in members]
        return cands + singles


_SIMPLE_TYPES = ("f16", "bf16", "tf32", "s8", "u8", "e4m3", "e5m2", "b1")


def _simpler_forms(form):
    """Forms of the same family, shape and A source with simpler types (f16 first), operand roles alike."""
    rank = {t: i for i, t in enumerate(_SIMPLE_TYPES)}
    mine = rank.get(form.atype, 99)
    same = [f for f in isa.forms(form.family) if f.shape is not None and f.shape.m == form.shape.m
            and f.shape.n == form.shape.n and getattr(f, "a_source", None) == getattr(form, "a_source", None)
            and rank.get(f.atype, 99) < mine and f.btype == f.atype]
    return sorted(same, key=lambda f: (rank.get(f.atype, 99), f.dtype != "f32", f.key))


@dataclass(frozen=True)
class Types(Pass):
    name: ClassVar[str] = "types"

    def candidates(self, program: Program) -> list[Program]:
        """wgmma rewritten with simpler types (``e4m3`` -> ``f16``): operands carried over by role,
        immediates a new form adds take the minimal kernel's defaults."""
        cands = []
        for fn in program.module.functions():
            if fn.body is None:
                continue
            for i, s in statements(fn).items():
                form = isa.form_for(s) if isinstance(s, Instr) else None
                if form is None or form.shape is None or not form.family.startswith("wgmma") or len(form.operands) != len(s.operands):
                    continue
                by_role = {spec.role: op for spec, op in zip(form.operands, s.operands)}
                for f in _simpler_forms(form)[:3]:
                    rewritten = as_form(s, by_role, f)
                    if rewritten is not None:
                        cands.append(edit_function(program, fn.name, subst={i: rewritten}))
        return cands


@dataclass(frozen=True)
class Counts(Pass):
    name: ClassVar[str] = "counts"

    def candidates(self, program: Program) -> list[Program]:
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


@dataclass(frozen=True)
class Data(Pass):
    name: ClassVar[str] = "data"

    def candidates(self, program: Program) -> list[Program]:
        cands = []
        for i, b in enumerate(program.buffers):
            for init in ("zeros", "small_int"):
                if b.init in (init, "zeros") or b.init.startswith("hex:"):
                    continue
                bufs = program.buffers[:i] + (replace(b, init=init),) + program.buffers[i + 1:]
                cands.append(replace(program, buffers=bufs))
        return cands
