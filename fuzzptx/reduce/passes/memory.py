"""Reducer passes on memory traffic: what a repro reads and writes becomes less code.

A value-level repro still carries the plumbing of its data: a load of one input
scalar (its parameter, its address), a per-thread tile store scaled to its element
size, a fragment stored whole where one register shows the finding, a second tile
the tensor instruction could share with the first.  Each pass here rewrites one
such piece; the caller's predicate decides whether the finding stays."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from fuzzptx import isa
from fuzzptx.data import buffer_bytes
from fuzzptx.program import Program
from fuzzptx.ptx.dataflow import defs_uses
from fuzzptx.ptx.ir import Addr, Imm, Instr, Reg, Statement, Vec, registers_in
from fuzzptx.reduce.edit import dead_code, edit_function, statements, type_of, write_counts
from fuzzptx.reduce.passes.base import Pass
from fuzzptx.reduce.passes.values import _bits, _imm, _kernels

_WIDTH = {"b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16, "b32": 32, "u32": 32, "s32": 32, "f32": 32,
          "b64": 64, "u64": 64, "s64": 64, "f64": 64}


def _defs_by_register(sts: dict[int, Statement]) -> dict[str, tuple[int, Instr]]:
    """Register -> (statement id, instruction) of each register written exactly once, unguarded."""
    writes = write_counts(sts)
    out: dict[str, tuple[int, Instr]] = {}
    for i, s in sts.items():
        if isinstance(s, Instr) and s.guard is None:
            for d in defs_uses(s)[0]:
                if writes.get(d.name) == 1:
                    out[d.name] = (i, s)
    return out


# ------------------------------------------------------------ uniform loads -> constants


def _buffer_address(reg: Reg, defs: dict[str, tuple[int, Instr]], params: set[str]) -> tuple[str, int] | None:
    """(parameter, byte offset) that ``reg`` holds: ``ld.param.u64 r, [p]``, then any chain of
    ``cvta.to.global.u64`` and ``add.u64 r, r, imm`` (each register written once); None otherwise."""
    offset = 0
    for _ in range(8):
        got = defs.get(reg.name)
        if got is None:
            return None
        ins = got[1]
        ops = ins.operands
        if ins.base == "ld" and "param" in ins.modifiers and len(ops) == 2 and isinstance(ops[1], Addr) \
                and ops[1].base is not None and getattr(ops[1].base, "name", None) in params:
            return ops[1].base.name, offset + ops[1].offset
        if ins.base in ("cvta", "mov") and len(ops) == 2 and isinstance(ops[1], Reg):
            reg = ops[1]
        elif ins.base == "add" and len(ops) == 3 and _bits(type_of(ins)) == 64 and isinstance(ops[1], Reg) \
                and isinstance(ops[2], Imm) and isinstance(ops[2].value, int):
            reg, offset = ops[1], offset + ops[2].value
        else:
            return None
    return None


@dataclass(frozen=True)
class Constants(Pass):
    name: ClassVar[str] = "constants"

    def candidates(self, program: Program) -> list[Program]:
        """A load of the same input element in every thread (its address: a buffer parameter plus a
        constant) becomes a move of the value the buffer holds there (``ld.global.f32 %f1, [%rd2]`` ->
        ``mov.b32 %f1, 0x408ae134``): the load, the parameter and (by cleanup) the buffer go, and the
        repro shows the value it depends on.  Only scalar loads of 16, 32 or 64 bits from buffers the
        program initialises (not outputs)."""
        inputs = {b.name: b for b in program.buffers if not b.output}
        cands = []
        for fn in _kernels(program):
            sts = statements(fn)
            defs = _defs_by_register(sts)
            params = {p.name for p in fn.params if p.name in inputs}
            for i, s in sts.items():
                if not (isinstance(s, Instr) and s.base == "ld" and "param" not in s.modifiers and len(s.operands) == 2
                        and isinstance(s.operands[0], Reg) and isinstance(s.operands[1], Addr)
                        and isinstance(s.operands[1].base, Reg) and not set(s.modifiers) & {"v2", "v4", "v8", "shared", "local"}):
                    continue
                width = _WIDTH.get(type_of(s) or "")
                where = _buffer_address(s.operands[1].base, defs, params) if width else None
                if where is None:
                    continue
                data = buffer_bytes(inputs[where[0]])
                at = where[1] + s.operands[1].offset
                if at < 0 or at + width // 8 > data.size:
                    continue
                value = int.from_bytes(np.asarray(data[at:at + width // 8]).tobytes(), "little")
                mov = Instr(f"mov.b{width}", (s.operands[0], _imm(value, Imm(0, "0x0"))), s.guard, s.loc)
                cands.append(dead_code(edit_function(program, fn.name, subst={i: mov})))
        return cands


# ------------------------------------------------------------ scaled per-thread stores -> byte stores


_SCALE = {"mad": lambda ins: ins.operands[2], "mul": lambda ins: ins.operands[2], "shl": lambda ins: ins.operands[2]}


def _scaled(ins: Instr) -> int | None:
    """The byte scale of ``mad.lo r, x, S, b`` / ``mul.lo r, x, S`` / ``shl r, x, log2 S`` (32-bit), else None."""
    if ins.guard is not None or _bits(type_of(ins)) != 32 or "wide" in ins.modifiers or not isinstance(ins.operands[1], Reg):
        return None
    if ins.base in ("mad", "mul") and "lo" in ins.modifiers and len(ins.operands) == (4 if ins.base == "mad" else 3):
        s = ins.operands[2]
        return s.value if isinstance(s, Imm) and isinstance(s.value, int) else None
    if ins.base == "shl" and len(ins.operands) == 3 and isinstance(ins.operands[2], Imm) and isinstance(ins.operands[2].value, int):
        return 1 << ins.operands[2].value if ins.operands[2].value < 8 else None
    return None


@dataclass(frozen=True)
class Bytes(Pass):
    name: ClassVar[str] = "bytes"

    def candidates(self, program: Program) -> list[Program]:
        """Per-thread stores of S-byte elements at ``x*S + b`` become byte stores at ``x + b``
        (``mad.lo.u32 %r1, %r0, 4, %r2; st.shared.b32 [%r1], 0`` -> ``add.u32 %r1, %r0, %r2;
        st.shared.b8 [%r1], 0``): a tile a descriptor with zero strides reads only in part keeps
        its first bytes defined, and the address becomes an index the other passes fold away
        (an add of 0, the shared variable's offset).  Every reader of the address register must
        be such a store."""
        cands = []
        for fn in _kernels(program):
            sts = statements(fn)
            defs = _defs_by_register(sts)
            readers: dict[str, list[int]] = {}
            for i, s in sts.items():
                if isinstance(s, Instr):
                    for r in defs_uses(s)[1]:
                        readers.setdefault(r.name, []).append(i)
            for name, (j, ins) in defs.items():
                scale = _scaled(ins)
                if scale not in (2, 4, 8) or name not in readers:
                    continue
                subst: dict[int, Statement] = {}
                for k in readers[name]:
                    st = sts[k]
                    if not (isinstance(st, Instr) and st.base == "st" and len(st.operands) == 2 and isinstance(st.operands[0], Addr)
                            and st.operands[0].base == ins.operands[0] and Reg(name) not in registers_in(st.operands[1])
                            and _WIDTH.get(type_of(st) or "") == 8 * scale and not set(st.modifiers) & {"v2", "v4", "v8"}):
                        break
                    mods = [m for m in st.modifiers if m != type_of(st)]
                    subst[k] = replace(st, opcode=".".join(["st", *mods, "b8"]))
                else:
                    x, rest = ins.operands[1], ins.operands[3:]
                    subst[j] = (Instr("add.u32", (ins.operands[0], x, rest[0]), None, ins.loc) if rest
                                else Instr("mov.b32", (ins.operands[0], x), None, ins.loc))
                    cands.append(edit_function(program, fn.name, subst=subst))
        return cands


# ------------------------------------------------------------ a fragment stored whole -> one register


@dataclass(frozen=True)
class FragmentStore(Pass):
    name: ClassVar[str] = "fragment-store"

    def candidates(self, program: Program) -> list[Program]:
        """``wmma.store.d`` / ``stmatrix`` of a whole fragment becomes a plain store of one of its
        registers at the same address (``st.shared.b32 [%rd17], %rs8``): the stride and the rest of
        the fragment go, and where nothing reads the other registers, what computed them."""
        cands = []
        for fn in _kernels(program):
            for i, s in statements(fn).items():
                if not (isinstance(s, Instr) and (s.opcode.startswith("wmma.store") or s.base == "stmatrix")):
                    continue
                addr = next((o for o in s.operands if isinstance(o, Addr)), None)
                frag = next((o for o in s.operands if isinstance(o, Vec)), None)
                if addr is None or frag is None or not all(isinstance(x, Reg) for x in frag.items):
                    continue
                width = 64 if "f64" in s.modifiers else 32
                space = next((m for m in s.modifiers if m in ("shared", "global")), None)
                if s.base == "stmatrix":
                    space = "shared"
                opcode = ".".join(["st", *([space] if space else []), f"b{width}"])
                for reg in dict.fromkeys(frag.items):
                    st = Instr(opcode, (addr, reg), s.guard, s.loc)
                    cands.append(dead_code(edit_function(program, fn.name, subst={i: st})))
        return cands


# ------------------------------------------------------------ two tiles -> one


@dataclass(frozen=True)
class ShareTile(Pass):
    name: ClassVar[str] = "share-tile"

    def candidates(self, program: Program) -> list[Program]:
        """A wgmma's A descriptor replaced by its B descriptor, then B's by A's: both operands read
        one tile, so the code that filled (and addressed) the other goes."""
        cands = []
        for fn in _kernels(program):
            for i, s in statements(fn).items():
                form = isa.form_for(s) if isinstance(s, Instr) and s.base == "wgmma" else None
                if form is None or len(form.operands) != len(s.operands):
                    continue
                roles = {spec.role: k for k, spec in enumerate(form.operands)}
                if "a_desc" not in roles or "b_desc" not in roles:
                    continue
                a, b = roles["a_desc"], roles["b_desc"]
                if s.operands[a] == s.operands[b]:
                    continue
                for dst, src in ((a, b), (b, a)):
                    ops = s.operands[:dst] + (s.operands[src],) + s.operands[dst + 1:]
                    cands.append(dead_code(edit_function(program, fn.name, subst={i: replace(s, operands=ops)})))
        return cands


# ------------------------------------------------------------ address arithmetic -> offsets


def _const(ins: Instr) -> int | None:
    """The value of ``mov r, imm`` (an integer move), else None."""
    if ins.base == "mov" and len(ins.operands) == 2 and isinstance(ins.operands[1], Imm) and isinstance(ins.operands[1].value, int):
        return ins.operands[1].value
    return None


def _scaled_index(ins: Instr, defs: dict[str, tuple[int, Instr]]) -> tuple[tuple, int] | None:
    """((opcode type, index register, scale), constant) of ``mad.lo r, x, S, K`` (K an immediate or a
    register moved from one) or ``mul.lo r, x, S`` (K = 0), else None."""
    if ins.base not in ("mad", "mul") or "lo" not in ins.modifiers or not isinstance(ins.operands[1], Reg):
        return None
    scale = ins.operands[2]
    if not (isinstance(scale, Imm) and isinstance(scale.value, int)):
        return None
    key = (type_of(ins), ins.operands[1].name, scale.value)
    if ins.base == "mul":
        return (key, 0) if len(ins.operands) == 3 else None
    if len(ins.operands) != 4:
        return None
    k = ins.operands[3]
    if isinstance(k, Imm) and isinstance(k.value, int):
        return key, k.value
    if isinstance(k, Reg) and k.name in defs and _const(defs[k.name][1]) is not None:
        return key, _const(defs[k.name][1])
    return None


@dataclass(frozen=True)
class Addresses(Pass):
    name: ClassVar[str] = "addresses"

    def candidates(self, program: Program) -> list[Program]:
        """A register read only as a memory address, computed from another register by a constant,
        is replaced there by that register and an offset, so its computation goes:
        ``add r, x, 16`` -> ``[x+16]``; ``mov %r37, 0`` beside an earlier ``mov.b64 %rd2, 0`` ->
        ``[%rd2+256]`` for ``[%r37+256]``; ``mad.lo %r5, %r0, 4, 512`` beside an earlier
        ``mad.lo %r2, %r0, 4, 0`` -> ``[%r2+512]`` (two tiles addressed by one index)."""
        cands = []
        for fn in _kernels(program):
            sts = statements(fn)
            defs = _defs_by_register(sts)
            readers: dict[str, list[int]] = {}
            for i, s in sts.items():
                if isinstance(s, Instr):
                    for r in defs_uses(s)[1]:
                        readers.setdefault(r.name, []).append(i)
            for name, (j, ins) in defs.items():
                uses = readers.get(name, [])
                if not uses or any(not _only_address(sts[k], name) for k in uses):
                    continue
                for base, delta in _rebases(name, j, ins, defs):
                    subst = {k: replace(sts[k], operands=tuple(replace(o, base=base, offset=o.offset + delta)
                                                                if isinstance(o, Addr) and o.base == Reg(name) else o
                                                                for o in sts[k].operands)) for k in uses}
                    cands.append(dead_code(edit_function(program, fn.name, subst=subst)))
        return cands


def _only_address(ins: Statement, name: str) -> bool:
    """``ins`` reads register ``name`` only as the base of a plain memory address (ld/st)."""
    if not (isinstance(ins, Instr) and ins.base in ("ld", "st") and "param" not in ins.modifiers) or ins.guard and ins.guard.reg.name == name:
        return False
    return all(isinstance(o, Addr) and o.base == Reg(name) or Reg(name) not in registers_in(o) for o in ins.operands)


def _rebases(name: str, at: int, ins: Instr, defs: dict[str, tuple[int, Instr]]) -> list[tuple[Reg, int]]:
    """(register, offset to add) pairs that address what ``name`` (written by ``ins`` at ``at``) does."""
    if ins.base == "add" and len(ins.operands) == 3 and isinstance(ins.operands[1], Reg) and isinstance(ins.operands[2], Imm) \
            and isinstance(ins.operands[2].value, int):
        return [(ins.operands[1], ins.operands[2].value)]
    out = []
    mine = _const(ins)
    index = _scaled_index(ins, defs)
    for other, (k, o) in defs.items():
        if other == name or k >= at:
            continue
        if mine is not None and _const(o) is not None and 0 <= _const(o) <= mine:
            out.append((Reg(other), mine - _const(o)))
        theirs = _scaled_index(o, defs) if index is not None else None
        if theirs is not None and theirs[0] == index[0] and theirs[1] <= index[1]:
            out.append((Reg(other), index[1] - theirs[1]))
    return out
