"""Reducer passes on tensor-core instructions themselves: a sparse wgmma becomes dense (its metadata
goes), and fragment registers reuse one another so the moves that set them up go."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from fuzzptx.program import Program
from fuzzptx.ptx.ir import Instr, Label, Reg, registers_in
from fuzzptx.reduce.edit import as_form, dead_code, edit_function, statements, type_of
from fuzzptx.reduce.passes.base import Pass
from fuzzptx.reduce.passes.values import _bits, _kernels, _thread_registers
from fuzzptx import isa
from fuzzptx.ptx.dataflow import defs_uses
from fuzzptx.ptx.ir import Vec


@dataclass(frozen=True)
class Dense(Pass):
    name: ClassVar[str] = "dense"

    def candidates(self, program: Program) -> list[Program]:
        """A sparse wgmma (``.sp``) rewritten as the dense form of the same types, M and N (K halved):
        the metadata register and its setup go.  Operands carry over by role; an immediate the dense
        form adds takes the minimal kernel's default."""
        cands = []
        for fn in _kernels(program):
            for i, s in statements(fn).items():
                form = isa.form_for(s) if isinstance(s, Instr) and s.base == "wgmma" else None
                if form is None or form.family != "wgmma.sp" or len(form.operands) != len(s.operands):
                    continue
                by_role = {spec.role: op for spec, op in zip(form.operands, s.operands)}
                dense = [f for f in isa.forms("wgmma") if f.shape is not None and (f.shape.m, f.shape.n) == (form.shape.m, form.shape.n)
                         and (f.atype, f.btype, f.dtype) == (form.atype, form.btype, form.dtype)
                         and getattr(f, "a_source", None) == getattr(form, "a_source", None)]
                for f in dense[:1]:
                    rewritten = as_form(s, by_role, f)
                    if rewritten is not None:
                        cands.append(edit_function(program, fn.name, subst={i: rewritten}))
        return cands


@dataclass(frozen=True)
class Reuse(Pass):
    name: ClassVar[str] = "reuse"

    def candidates(self, program: Program) -> list[Program]:
        """A register of a tensor instruction's source fragment (wgmma/mma A, B; sparse metadata) replaced,
        everywhere it appears in that fragment, by another of the same fragment (the per-thread one first)
        or written just before, and the code that only fed it dropped: a fragment set up by four moves needs none (ptxas accepts a register repeated in a fragment)."""
        cands = []
        for fn in _kernels(program):
            sts = statements(fn)
            tids = {r for _, r in _thread_registers(sts).values()}
            written: list[tuple[int, Reg]] = []  # (width, register) of each plain integer result, in order
            for i, s in sts.items():
                form = isa.form_for(s) if isinstance(s, Instr) and s.base in ("wgmma", "mma") else None
                if isinstance(s, Instr) and form is None and s.guard is None and _bits(type_of(s)) and len(defs_uses(s)[0]) == 1:
                    written.append((_bits(type_of(s)), defs_uses(s)[0][0]))
                if form is None or len(form.operands) != len(s.operands):
                    continue
                for j, (spec, op) in enumerate(zip(form.operands, s.operands)):
                    if isinstance(op, Reg) and spec.role == "sp_meta":  # sparse metadata: a register too
                        op = Vec((op,))
                    if spec.role == "d" or not isinstance(op, Vec) or not all(isinstance(x, Reg) for x in op.items):
                        continue
                    width = next((w for w, r in reversed(written) if r in op.items), 32)
                    near = [r for w, r in reversed(written) if w == width and r not in op.items]
                    others = sorted(set(op.items), key=lambda x: (x not in tids, op.items.index(x)))
                    others += list(dict.fromkeys(near))[:4]  # registers written just before, of the width
                    for x in dict.fromkeys(op.items):  # every place a register fills at once: only then can its setup go
                        for new in (y for y in others if y != x):
                            vec = Vec(tuple(new if y == x else y for y in op.items))
                            vec = vec.items[0] if isinstance(s.operands[j], Reg) else vec
                            ins = replace(s, operands=s.operands[:j] + (vec,) + s.operands[j + 1:])
                            cand = edit_function(program, fn.name, subst={i: ins})
                            cands.append(dead_code(_drop_moves_only_feeding_d(cand, fn.name, x)))
        return cands


def _drop_moves_only_feeding_d(program: Program, fname: str, reg: Reg) -> Program:
    """Drop each move into ``reg`` whose value nothing reads before ``reg`` is written again, a tensor
    accumulator (d) counting as a write (its input counts only with scale-d; the predicate judges)."""
    sts = statements(program.module.function(fname))
    ids = sorted(sts)
    drop = set()
    for k, i in enumerate(ids):
        s = sts[i]
        if not (isinstance(s, Instr) and s.base == "mov" and s.guard is None and s.operands and s.operands[0] == reg):
            continue
        for j in ids[k + 1:]:
            t = sts[j]
            if isinstance(t, Label):
                break
            if not isinstance(t, Instr):
                continue
            form = isa.form_for(t) if t.base in ("wgmma", "mma") else None
            if form is not None and form.operands and form.operands[0].role == "d":
                if any(reg in registers_in(o) for o in t.operands[1:]) or (t.guard and t.guard.reg == reg):
                    break
                if reg in registers_in(t.operands[0]):
                    drop.add(i)
                    break
            elif reg in defs_uses(t)[1]:
                break
            elif reg in defs_uses(t)[0] and t.guard is None:
                drop.add(i)
                break
    return edit_function(program, fname, drop=drop) if drop else program
