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
from fuzzptx.ptx.smem import shared_layout
from fuzzptx.ptx.ir import Addr, Imm, Instr, Label, Reg, Statement, Sym, Vec, registers_in
from fuzzptx.reduce.edit import dead_code, dead_ids, edit_function, statements, type_of, write_counts
from fuzzptx.reduce.passes.base import Pass
from fuzzptx.reduce.passes.values import _bits, _imm, _kernels, _thread_registers

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


def _last_writes(sts: dict[int, Statement]) -> tuple[dict[str, tuple[int, Instr]], dict[str, list[int]]]:
    """(register -> (id, instruction) of its last unguarded write, register -> ids of the instructions
    reading it): a register set up in two steps (``mov %r3, smem; mad.lo %r3, %r0, 4, %r3``) is
    rewritten at its last step, where every later reader sees it."""
    last: dict[str, tuple[int, Instr]] = {}
    readers: dict[str, list[int]] = {}
    for i, s in sts.items():
        if isinstance(s, Instr):
            defs, uses = defs_uses(s)
            for r in uses:
                readers.setdefault(r.name, []).append(i)
            for d in defs:
                last[d.name] = (i, s)
    return {n: (i, s) for n, (i, s) in last.items() if s.guard is None}, readers


def _later_readers(name: str, at: int, readers: dict[str, list[int]]) -> list[int] | None:
    """The readers of ``name`` after its last write at ``at``; None where something before reads it
    (but the write itself), or where nothing after does."""
    got = readers.get(name, [])
    if any(k < at for k in got) or not any(k > at for k in got):
        return None
    return [k for k in got if k > at]


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
                cands.append(dead_code(edit_function(program, fn.name, subst={i: mov}), dead_ids(program)))
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
        (an add of 0, the shared variable's offset).  Every reader of the address register after
        its last write must be such a store."""
        cands = []
        for fn in _kernels(program):
            sts = statements(fn)
            last, readers = _last_writes(sts)
            for name, (j, ins) in last.items():
                scale = _scaled(ins)
                later = _later_readers(name, j, readers) if scale in (2, 4, 8) else None
                if later is None:
                    continue
                subst: dict[int, Statement] = {}
                for k in later:
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
                    cands.append(dead_code(edit_function(program, fn.name, subst={i: st}), dead_ids(program)))
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
                    cands.append(dead_code(edit_function(program, fn.name, subst={i: replace(s, operands=ops)}), dead_ids(program)))
        return cands


# ------------------------------------------------------------ address arithmetic -> offsets


def _scaled_index(ins: Instr, at: int, sts: dict[int, Statement], offsets: dict[str, int]) -> tuple[tuple, int] | None:
    """((opcode type, index register, scale), constant) of ``mad.lo r, x, S, K`` (K an immediate or a
    register holding a constant there) or ``mul.lo r, x, S`` (K = 0), else None."""
    if ins.base not in ("mad", "mul") or "lo" not in ins.modifiers or not isinstance(ins.operands[1], Reg) \
            or ins.operands[1] == ins.operands[0]:
        return None
    scale = ins.operands[2]
    if not (isinstance(scale, Imm) and isinstance(scale.value, int)):
        return None
    key = (type_of(ins), ins.operands[1].name, scale.value)
    if ins.base == "mul":
        return (key, 0) if len(ins.operands) == 3 else None
    c = _known(ins.operands[3], at, sts, offsets) if len(ins.operands) == 4 else None
    return None if c is None else (key, c)


@dataclass(frozen=True)
class Addresses(Pass):
    name: ClassVar[str] = "addresses"

    def candidates(self, program: Program) -> list[Program]:
        """A register read only as a memory address (after its last write), computed from another
        register by a constant, is replaced there by that register and an offset, and its computation
        goes: ``add r, x, 16`` -> ``[x+16]``; ``mov %r5, smem; add %r5, %r0, %r5`` -> ``[%r0+1024]``
        (the variable's offset in the layout; the ``mov`` stays for the driver's dead code, as it
        keeps the variable allocated); ``mov %r37, 0`` beside an earlier ``mov.b64 %rd2, 0`` ->
        ``[%rd2+256]`` for ``[%r37+256]``; ``mad.lo %r5, %r0, 4, 512`` beside an earlier
        ``mad.lo %r2, %r0, 4, 0`` -> ``[%r2+512]`` (two tiles addressed by one index)."""
        kernel = program.module.function(program.launch.kernel)
        offsets = shared_layout(program.module, kernel).offsets if kernel is not None and kernel.body is not None else {}
        cands = []
        for fn in _kernels(program):
            sts = statements(fn)
            last, readers = _last_writes(sts)
            for name, (j, ins) in last.items():
                uses = _later_readers(name, j, readers)
                if uses is None or any(not _only_address(sts[k], name) for k in uses):
                    continue
                for base, delta in _rebases(name, j, ins, sts, last, offsets):
                    subst = {k: replace(sts[k], operands=tuple(replace(o, base=base, offset=o.offset + delta)
                                                                if isinstance(o, Addr) and o.base == Reg(name) else o
                                                                for o in sts[k].operands)) for k in uses}
                    # only the address computation goes: a move that fed it stays for the driver's dead code
                    # (a ``mov %r, smem`` left unread still keeps the variable allocated)
                    cands.append(edit_function(program, fn.name, drop={j}, subst=subst))
        return cands


def _only_address(ins: Statement, name: str) -> bool:
    """``ins`` reads register ``name`` only as the base of a plain memory address (ld/st)."""
    if not (isinstance(ins, Instr) and ins.base in ("ld", "st") and "param" not in ins.modifiers) or ins.guard and ins.guard.reg.name == name:
        return False
    return all(isinstance(o, Addr) and o.base == Reg(name) or Reg(name) not in registers_in(o) for o in ins.operands)


def _known(reg, at: int, sts: dict[int, Statement], offsets: dict[str, int]) -> int | None:
    """The constant ``reg`` holds at statement ``at``: the last unguarded write before it, in the same
    block, a move of an integer immediate or of a shared variable's address (its layout offset)."""
    if isinstance(reg, Imm):
        return reg.value if isinstance(reg.value, int) else None
    if not isinstance(reg, Reg):
        return None
    for i in sorted((i for i in sts if i < at), reverse=True):
        s = sts[i]
        if isinstance(s, Label):
            return None
        if isinstance(s, Instr) and reg in defs_uses(s)[0]:
            if s.guard is not None or s.base != "mov" or len(s.operands) != 2:
                return None
            src = s.operands[1]
            if isinstance(src, Imm) and isinstance(src.value, int):
                return src.value
            return offsets.get(src.name) if isinstance(src, Sym) else None
    return None


def _rebases(name: str, at: int, ins: Instr, sts: dict[int, Statement], last: dict[str, tuple[int, Instr]],
             offsets: dict[str, int]) -> list[tuple[Reg, int]]:
    """(register, offset to add) pairs that address what ``name`` (last written by ``ins`` at ``at``) does:
    the other source of an add of a constant; an earlier register holding a smaller constant; an earlier
    register scaling the same index by the same factor from a smaller constant."""
    ops = ins.operands
    if ins.base == "add" and len(ops) == 3 and _bits(type_of(ins)) in (32, 64):
        out = []
        for x, k in ((ops[1], ops[2]), (ops[2], ops[1])):
            c = _known(k, at, sts, offsets)
            if isinstance(x, Reg) and x.name != name and c is not None and _unchanged(x, at, sts):
                out.append((x, c))
        return out
    out = []
    mine = _known(ops[1], at, sts, offsets) if ins.base == "mov" and len(ops) == 2 and not isinstance(ops[1], Reg) else None
    index = _scaled_index(ins, at, sts, offsets)
    for other, (k, o) in last.items():
        if other == name or k >= at:
            continue
        theirs_c = _known(o.operands[1], k, sts, offsets) if o.base == "mov" and len(o.operands) == 2 and isinstance(o.operands[1], Imm) else None
        if mine is not None and theirs_c is not None and 0 <= theirs_c <= mine:
            out.append((Reg(other), mine - theirs_c))
        theirs = _scaled_index(o, k, sts, offsets) if index is not None else None
        if theirs is not None and theirs[0] == index[0] and theirs[1] <= index[1]:
            out.append((Reg(other), index[1] - theirs[1]))
    return out


def _unchanged(reg: Reg, at: int, sts: dict[int, Statement]) -> bool:
    """Nothing writes ``reg`` after statement ``at`` (its value there is the one later readers see)."""
    return not any(isinstance(s, Instr) and reg in defs_uses(s)[0] for i, s in sts.items() if i >= at)


# ------------------------------------------------------------ a tile's footprint -> smaller


_FIELD = 0x3FFF  # a descriptor's 14-bit address fields, in 16-byte units


def _desc_fields(v: int) -> tuple[int, int]:
    """(start address, stride byte offset) of a wgmma matrix descriptor, in bytes."""
    return (v & _FIELD) << 4, ((v >> 32) & _FIELD) << 4


def _with_fields(v: int, start: int, sbo: int) -> int:
    return (v & ~(_FIELD | (_FIELD << 32))) | (start >> 4) | ((sbo >> 4) << 32)


@dataclass(frozen=True)
class _Desc:
    """A wgmma matrix descriptor the reducer can rewrite: its role (``a_desc``/``b_desc``), its value,
    and where the immediate is written (statement id and operand index: the wgmma's own operand,
    or the source of the one ``mov`` of an immediate into a register only the wgmma reads)."""

    role: str
    value: int
    at: int
    index: int


def _descriptors(sts: dict[int, Statement]) -> list[tuple[int, Instr, object, list[_Desc]]]:
    """(statement id, wgmma, its catalogue form, its rewritable descriptors) of each wgmma with a
    shape; a register read as both A and B is listed once (one move to rewrite)."""
    defs = _defs_by_register(sts)
    readers: dict[str, list[int]] = {}
    for i, s in sts.items():
        if isinstance(s, Instr):
            for r in dict.fromkeys(defs_uses(s)[1]):
                readers.setdefault(r.name, []).append(i)
    out = []
    for i, s in sts.items():
        form = isa.form_for(s) if isinstance(s, Instr) and s.base == "wgmma" else None
        if form is None or form.shape is None or len(form.operands) != len(s.operands):
            continue
        descs: list[_Desc] = []
        for k, spec in enumerate(form.operands):
            op, at, index = s.operands[k], i, k
            if spec.role not in ("a_desc", "b_desc"):
                continue
            if isinstance(op, Reg) and op.name in defs and readers.get(op.name) == [i] and defs[op.name][1].base == "mov":
                at, op, index = defs[op.name][0], defs[op.name][1].operands[1], 1
            if isinstance(op, Imm) and isinstance(op.value, int) and not any(d.at == at and at != i for d in descs):
                descs.append(_Desc(spec.role, op.value, at, index))
        out.append((i, s, form, descs))
    return out


def _set_desc(sts: dict[int, Statement], d: _Desc, value: int, subst: dict[int, Statement]) -> None:
    """Record in ``subst`` the statement holding descriptor ``d`` with ``value`` in its place."""
    holder = subst.get(d.at, sts[d.at])
    old = holder.operands[d.index]
    subst[d.at] = replace(holder, operands=holder.operands[:d.index] + (_imm(value, old),) + holder.operands[d.index + 1:])


def _tile_stores(sts: dict[int, Statement]) -> dict[int, Instr]:
    """The ``st.shared`` instructions addressed by a thread-index register (``[%r0+off]``, %r0 = %tid.x):
    their offsets are the only shared addresses a rewrite of the tiles must follow."""
    tids = {r for _, r in _thread_registers(sts).values()}
    return {i: s for i, s in sts.items() if isinstance(s, Instr) and s.base == "st" and "shared" in s.modifiers
            and isinstance(s.operands[0], Addr) and s.operands[0].base in tids}


def _moved(st: Instr, offset: int) -> Instr:
    return replace(st, operands=(replace(st.operands[0], offset=offset),) + st.operands[1:])


@dataclass(frozen=True)
class Footprint(Pass):
    name: ClassVar[str] = "footprint"

    def candidates(self, program: Program) -> list[Program]:
        """A wgmma tile given by an immediate descriptor moves to shared offset 0 and its stride byte
        offset (the distance between 8-row groups) shrinks, and the per-thread stores that fill it move
        with their group: a store at ``[%tid + off]`` in group q at r bytes past the group's start
        lands at q * SBO' + r.  A tile the generator spread over kilobytes then fits in the first
        kilobyte (the window below the first variable), and the variable kept only to make room
        goes.  Both start offsets (0, then where the tile was), SBO' the powers of two from 16 bytes
        below SBO, smallest first (a tile of SBO 0 only moves); stores are ``st.shared`` addressed by a
        thread-index register.  A descriptor may be an immediate operand or a register set by one
        ``mov`` of an immediate and read only there."""
        cands = []
        for fn in _kernels(program):
            sts = statements(fn)
            stores = _tile_stores(sts)
            for _, _, form, descs in _descriptors(sts):
                for d in descs:
                    start, sbo = _desc_fields(d.value)
                    groups = (form.shape.m if d.role == "a_desc" else form.shape.n) // 8
                    # with SBO 0 every group overlaps the first: the tile spans at most one 1 KB swizzle atom
                    extent = groups * sbo if sbo else 1024
                    inside = {j: divmod(st.operands[0].offset - start, sbo) if sbo else (0, st.operands[0].offset - start)
                              for j, st in stores.items() if start <= st.operands[0].offset < start + extent}
                    if not inside:
                        continue
                    sizes = [16 << e for e in range(10) if 16 << e < sbo] if sbo else [0]  # powers of two below SBO
                    for new_start in dict.fromkeys((0, start)):
                        if (new_start, sizes) == (start, [0]):
                            continue
                        for new in sizes:
                            if new and any(r >= new for _, r in inside.values()):
                                continue
                            subst: dict[int, Statement] = {j: _moved(stores[j], new_start + q * new + r) for j, (q, r) in inside.items()}
                            _set_desc(sts, d, _with_fields(d.value, new_start, new), subst)
                            cands.append(edit_function(program, fn.name, subst=subst))
        return cands


_TINY = ((16, 16), (16, 0), (0, 16))  # (LBO, SBO) of the smallest layouts, in bytes


@dataclass(frozen=True)
class TinyTile(Pass):
    name: ClassVar[str] = "tiny-tile"

    def candidates(self, program: Program) -> list[Program]:
        """Every tile of a wgmma in the smallest layout at once: each immediate descriptor becomes
        start 0, no swizzle, 16-byte strides (``_TINY``), and one per-thread store fills the first
        bytes for all of them (moved to ``[%tid]``; the other tile stores go).  Where the finding
        lives in which rows or columns meet, not in where the tiles sit, a repro whose data were
        spread over kilobytes by two overlapping tiles (a store that fills one tile's row and the
        other's column) needs one store and no variable.  One candidate per store kept and per
        combination of the layouts of A and B."""
        cands = []
        for fn in _kernels(program):
            sts = statements(fn)
            stores = _tile_stores(sts)
            for _, _, _, descs in _descriptors(sts):
                if not descs or not stores:
                    continue
                layouts = [_TINY] * len(descs)
                for keep in stores:
                    for combo in _product(layouts):
                        subst: dict[int, Statement] = {keep: _moved(stores[keep], 0)}
                        for d, (lbo, sbo) in zip(descs, combo):
                            _set_desc(sts, d, ((lbo >> 4) << 16) | ((sbo >> 4) << 32), subst)
                        if all(subst.get(d.at) == sts[d.at] for d in descs) and len(stores) == 1 and stores[keep].operands[0].offset == 0:
                            continue  # already the smallest layout
                        cands.append(edit_function(program, fn.name, drop=set(stores) - {keep}, subst=subst))
        return cands


def _product(choices: list[tuple]) -> list[tuple]:
    out: list[tuple] = [()]
    for c in choices:
        out = [o + (x,) for o in out for x in c]
    return out
