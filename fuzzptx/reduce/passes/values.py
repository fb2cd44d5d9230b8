"""Value-level reducer passes: make what a program computes simpler, not only shorter.

Deleting statements stalls on a program whose result depends on data: the copies of
A and B into shared memory, the descriptor arithmetic and the output address all stay,
because each feeds the value that shows the bug.  These passes rewrite such code into
less of it while the caller's predicate still decides whether the signature holds:
a sparse wgmma becomes dense, loads become moves of a per-thread register (``%tid.x``),
a shared variable's address becomes 0, integer arithmetic on constants folds to one
move, ``mul``+``add`` fuse into ``mad``, a repeated computation reuses the first,
fragment registers reuse one another, immediates lose bits (a descriptor's strides
and swizzle go to 0), address offsets go to 0, the launch gets fewer threads, the
kernel's final ``ret`` goes, and unreferenced state-space variables go.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from fuzzptx.program import Program
from fuzzptx.ptx.ir import Addr, Function, Imm, Instr, Label, Reg, Statement, Sym, VarDecl
from fuzzptx.reduce.edit import EFFECTS, edit_function, statements, type_of, used_names, write_counts
from fuzzptx.reduce.passes.base import Pass
from fuzzptx.ptx.dataflow import defs_uses
from fuzzptx.ptx.smem import shared_layout

_INT = {f"{k}{n}": n for k in "bus" for n in (8, 16, 32, 64)}


def _bits(t: str | None) -> int | None:
    """Width of an integer/bit type (``u32`` -> 32); None for floats and predicates."""
    return _INT.get(t or "")


def _imm(value: int, like: Imm | None = None) -> Imm:
    """An integer immediate, spelt in hex when large or when ``like`` was."""
    hexed = value > 255 or (like is not None and like.text.lower().startswith("0x"))
    return Imm(value, hex(value) if hexed else str(value))


def _kernels(program: Program) -> list[Function]:
    return [f for f in program.module.functions() if f.body is not None]


# ------------------------------------------------------------ loads -> thread register


def _thread_registers(sts: dict[int, Statement]) -> dict[int, tuple[int, Reg]]:
    """Statement id -> (width, register) of each unguarded ``mov r, %tid.x`` (a per-thread value)."""
    out = {}
    for i, s in sts.items():
        if (isinstance(s, Instr) and s.base == "mov" and s.guard is None and len(s.operands) == 2
                and isinstance(s.operands[1], Reg) and s.operands[1].name.startswith(("%tid", "%laneid"))
                and _bits(type_of(s))):
            out[i] = (_bits(type_of(s)), s.operands[0])
    return out


def _load_moves(program: Program) -> list[tuple[str, int, Reg | None, Instr]]:
    """(function, statement id, address base, move) for each scalar load ``Loads`` replaces."""
    out = []
    for fn in _kernels(program):
        sts = statements(fn)
        tids = _thread_registers(sts)
        for i, s in sts.items():
            if not (isinstance(s, Instr) and s.base == "ld" and "param" not in s.modifiers and len(s.operands) == 2
                    and isinstance(s.operands[0], Reg)):
                continue
            width = _bits(type_of(s)) or {"f32": 32, "f64": 64, "f16": 16}.get(type_of(s) or "")
            src = next((r for j, (w, r) in tids.items() if j < i and w == width and r != s.operands[0]), None)
            if src is not None:
                base = s.operands[1].base if isinstance(s.operands[1], Addr) else None
                out.append((fn.name, i, base, Instr(f"mov.b{width}", (s.operands[0], src), s.guard, s.loc)))
    return out


def _replaced(program: Program, moves) -> Program:
    for fname in {m[0] for m in moves}:
        program = edit_function(program, fname, subst={i: mov for f, i, _, mov in moves if f == fname})
    return program


def _load_groups(program: Program) -> list[Program]:
    """Every such load at once, then those of one address base at once (one buffer's copy)."""
    moves = _load_moves(program)
    groups: dict[tuple, list] = {}
    for m in moves:
        groups.setdefault((m[0], m[2]), []).append(m)
    return ([_replaced(program, moves)] if len(moves) > 1 else []) + [_replaced(program, g) for g in groups.values() if len(g) > 1 or len(groups) > 1]


@dataclass(frozen=True)
class Loads(Pass):
    name: ClassVar[str] = "loads"

    def candidates(self, program: Program) -> list[Program]:
        """A scalar load replaced by a move of a per-thread register of its width defined before it
        (``ld.global.b32 %r5, [%rd3+64]`` -> ``mov.b32 %r5, %r0`` with ``%r0 = %tid.x``): the data still
        differ between threads (a copied tile is not uniform), while the input buffer, its pointer and the
        address arithmetic become dead.  ``ld.param`` (pointers, sizes) is left alone.  Groups first
        (``_load_groups``), then one load at a time."""
        return _load_groups(program) + [_replaced(program, [m]) for m in _load_moves(program)]


# ------------------------------------------------------------ shared symbols -> 0


def _shared_names(program: Program) -> set[str]:
    decls = [it for it in program.module.items if isinstance(it, VarDecl)]
    for fn in _kernels(program):
        decls += [s for s in statements(fn).values() if isinstance(s, VarDecl)]
    return {d.name for d in decls if d.space.lstrip(".") == "shared"}


@dataclass(frozen=True)
class Symbols(Pass):
    name: ClassVar[str] = "symbols"

    def candidates(self, program: Program) -> list[Program]:
        """``mov.u32 %r, smem`` (a .shared variable's address) -> ``mov.u32 %r, 0``: every address and
        descriptor built from it moves to shared offset 0 together -- the window below the first
        variable (``SHARED_RESERVED``), which the H100 and the reference still read and write as plain
        shared memory -- and becomes a constant that ``fold_constants`` computes."""
        shared = _shared_names(program)
        cands = []
        for fn in _kernels(program):
            for i, s in statements(fn).items():
                if (isinstance(s, Instr) and s.base == "mov" and len(s.operands) == 2
                        and isinstance(s.operands[1], Sym) and s.operands[1].name in shared and _bits(type_of(s))):
                    cands.append(edit_function(program, fn.name, subst={i: replace(s, operands=(s.operands[0], Imm.of(0)))}))
        return cands


# ------------------------------------------------------------ constant folding


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _evaluate(ins: Instr, known: dict[str, int]) -> tuple[int, int] | None:
    """(value, width) of an integer instruction whose sources are all known, else None."""
    t = type_of(ins)
    bits = _bits(t)
    if bits is None or len(ins.operands) < 2 or not isinstance(ins.operands[0], Reg):
        return None
    vals = []
    for op in ins.operands[1:]:
        if isinstance(op, Imm) and isinstance(op.value, int):
            vals.append(op.value)
        elif isinstance(op, Reg) and op.name in known:
            vals.append(known[op.name])
        else:
            return None
    signed = t.startswith("s")
    src = [(_signed(v, bits) if signed else v & ((1 << bits) - 1)) for v in vals]
    base, mods = ins.base, ins.modifiers
    out_bits = 2 * bits if "wide" in mods else bits
    if base == "cvt":  # cvt.dst.src: the type read is the last one, the type written the first
        dst = next((m for m in mods if m in _INT), None)
        if dst is None or len([m for m in mods if m in _INT]) != 2 or len(mods) != 2:
            return None
        return src[0] & ((1 << _INT[dst]) - 1), _INT[dst]
    ops = {
        "mov": lambda a: a, "not": lambda a: ~a, "neg": lambda a: -a,
        "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "and": lambda a, b: a & b,
        "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
        "shl": lambda a, b: a << b if b < bits else 0,
        "shr": lambda a, b: a >> min(b, bits),
        "mul": lambda a, b: a * b, "mad": lambda a, b, c: a * b + c,
    }
    f = ops.get(base)
    if f is None or f.__code__.co_argcount != len(src) or (base in ("mul", "mad") and not ({"lo", "wide"} & set(mods))):
        return None
    if base == "mad" and "wide" in mods:
        src[2] = vals[2]
    if base in ("shl", "shr"):
        src[1] = vals[1] & 0xFFFFFFFF
    return f(*src) & ((1 << out_bits) - 1), out_bits


_PROPAGATE = frozenset("add sub mul mad shl shr and or xor setp min max".split())
_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
        "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b, "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b,
        "hi": lambda a, b: a > b, "hs": lambda a, b: a >= b}


def _compare(ins: Instr, known: dict[str, int]) -> int | None:
    """The truth (0/1) of an integer ``setp.cmp.type p, a, b`` whose sources are known."""
    t = type_of(ins)
    bits = _bits(t)
    cmp = next((m for m in ins.modifiers if m in _CMP), None)
    if bits is None or cmp is None or len(ins.modifiers) != 2 or len(ins.operands) != 3 or "|" in str(ins.operands[0]):
        return None
    vals = []
    for op in ins.operands[1:]:
        v = op.value if isinstance(op, Imm) and isinstance(op.value, int) else known.get(op.name) if isinstance(op, Reg) else None
        if v is None:
            return None
        vals.append(_signed(v, bits) if t.startswith("s") and cmp not in ("lo", "ls", "hi", "hs") else v & ((1 << bits) - 1))
    return int(_CMP[cmp](*vals))


def fold_constants(program: Program) -> Program:
    """Integer arithmetic on known constants becomes a move of its result, and a constant move
    overwritten before anything reads it goes: ``mov %rd, 0; shr %rd, %rd, 4; or %rd, %rd, K``
    becomes ``mov.b64 %rd, K``; a comparison of constants becomes ``mov.pred``; small known
    constants replace registers as later sources of arithmetic (``mad %r, %r0, 4, %r9`` with
    ``%r9 = 0`` reads ``0``).  Knowledge is per straight-line block (reset at labels).

    ``mov %r, smem`` of a shared variable is known too: the variable's offset in the launched
    kernel's layout (``fuzzptx.ptx.smem``, ptxas's and the H100's), so a descriptor built from a
    tile's address folds to one move.  That ``mov`` itself stays: it is what keeps the variable
    allocated (ptxas lays out only the variables an instruction names)."""
    kernel = program.module.function(program.launch.kernel)
    offsets = shared_layout(program.module, kernel).offsets if kernel is not None and kernel.body is not None else {}
    for fn in _kernels(program):
        sts = statements(fn)
        known: dict[str, int] = {}
        subst: dict[int, Statement] = {}
        for i, s in sts.items():
            if isinstance(s, Label):
                known.clear()
            if not isinstance(s, Instr):
                continue
            defs = defs_uses(s)[0]
            if (s.base == "mov" and s.guard is None and len(defs) == 1 and len(s.operands) == 2
                    and isinstance(s.operands[1], Sym) and s.operands[1].name in offsets and _bits(type_of(s))):
                known[defs[0].name] = offsets[s.operands[1].name]
                continue
            got = _evaluate(s, known) if s.guard is None and len(defs) == 1 else None
            if got is None and s.guard is None and len(defs) == 1 and s.base == "setp":
                truth = _compare(s, known)
                if truth is not None:
                    known.pop(defs[0].name, None)
                    subst[i] = Instr("mov.pred", (defs[0], Imm.of(truth)), None, s.loc)
                    continue
            if got is None and s.base in _PROPAGATE:
                ops = tuple(Imm.of(known[o.name]) if k >= 2 and isinstance(o, Reg) and o.name in known and known[o.name] < 256 else o
                            for k, o in enumerate(s.operands))
                if ops != s.operands:
                    subst[i] = replace(s, operands=ops)
            for d in defs:
                known.pop(d.name, None)
            if got is None:
                continue
            value, width = got
            known[defs[0].name] = value
            if width < 16:  # no 8-bit moves in PTX
                continue
            old = s.operands[1] if s.base == "mov" else None
            if not (isinstance(old, Imm) and old.value == value):
                subst[i] = Instr(f"mov.b{width}", (defs[0], _imm(value, old if isinstance(old, Imm) else None)), None, s.loc)
        if subst:
            program = edit_function(program, fn.name, subst=subst)
        program = _drop_overwritten(program, fn.name)
    return program


def _drop_overwritten(program: Program, fname: str) -> Program:
    """Drop unguarded constant moves whose register is written again, in the same block, before a read."""
    sts = statements(program.module.function(fname))
    pending: dict[str, int] = {}
    drop = set()
    for i, s in sts.items():
        if isinstance(s, Label):
            pending.clear()
        if not isinstance(s, Instr):
            continue
        defs, uses = defs_uses(s)
        for u in uses:
            pending.pop(u.name, None)
        if s.base in ("bra", "call", "ret", "exit", "brx"):
            pending.clear()
        for d in defs:
            if d.name in pending and s.guard is None:
                drop.add(pending.pop(d.name))
        if s.base == "mov" and s.guard is None and len(defs) == 1 and isinstance(s.operands[1], Imm):
            pending[defs[0].name] = i
    return edit_function(program, fname, drop) if drop else program


@dataclass(frozen=True)
class Fold(Pass):
    name: ClassVar[str] = "fold"

    def candidates(self, program: Program) -> list[Program]:
        folded = fold_constants(program)
        return [folded] if folded != program else []


# ------------------------------------------------------------ mul + add -> mad


@dataclass(frozen=True)
class Fuse(Pass):
    name: ClassVar[str] = "fuse"

    def candidates(self, program: Program) -> list[Program]:
        """``mul.lo|wide t, a, b; ... add d, c, t`` with ``t`` read only there -> ``mad.lo|wide d, a, b, c``:
        one instruction for an address or index computation instead of two."""
        cands = []
        for fn in _kernels(program):
            sts = statements(fn)
            reads: dict[str, int] = {}
            writes: dict[str, int] = {}
            for s in sts.values():
                if isinstance(s, Instr):
                    d, u = defs_uses(s)
                    for r in u:
                        reads[r.name] = reads.get(r.name, 0) + 1
                    for r in d:
                        writes[r.name] = writes.get(r.name, 0) + 1
            ids = sorted(sts)
            for k, i in enumerate(ids):
                m = sts[i]
                if not (isinstance(m, Instr) and m.base == "mul" and m.guard is None and len(m.operands) == 3
                        and ({"lo", "wide"} & set(m.modifiers)) and _bits(type_of(m))):
                    continue
                t = m.operands[0]
                if reads.get(t.name) != 1 or writes.get(t.name) != 1:
                    continue
                srcs = {r.name for r in defs_uses(m)[1]}
                for j in ids[k + 1:]:
                    s = sts[j]
                    if isinstance(s, Label):
                        break
                    if not isinstance(s, Instr):
                        continue
                    if (s.base == "add" and s.guard is None and len(s.operands) == 3 and t in s.operands[1:]
                            and _bits(type_of(s)) == _bits(type_of(m)) * (2 if "wide" in m.modifiers else 1)):
                        other = s.operands[2] if s.operands[1] == t else s.operands[1]
                        mad = Instr("mad." + ".".join(m.modifiers), (s.operands[0], m.operands[1], m.operands[2], other), None, s.loc)
                        cands.append(edit_function(program, fn.name, drop={i}, subst={j: mad}))
                        break
                    if srcs & {r.name for r in defs_uses(s)[0]} or t.name in {r.name for r in defs_uses(s)[1]}:
                        break
        return cands


# ------------------------------------------------------------ immediates, offsets


def _runs(v: int) -> list[int]:
    """Masks of each run of consecutive set bits of ``v``, then of each single set bit in a longer run."""
    runs, single, b = [], [], 0
    while v >> b:
        if (v >> b) & 1:
            start = b
            while (v >> b) & 1:
                b += 1
            runs.append(((1 << (b - start)) - 1) << start)
            if b - start > 1:
                single += [1 << x for x in range(start, b)]
        else:
            b += 1
    return runs + single


@dataclass(frozen=True)
class Bits(Pass):
    name: ClassVar[str] = "bits"

    def candidates(self, program: Program) -> list[Program]:
        """An integer immediate with several bits set loses one run of set bits (then one bit) at a time,
        a 1 becomes 0 (a scale-d, a wait count), and an address offset goes to 0: a descriptor's stride fields, swizzle mode and start address
        go to 0 one by one; shifted copies line up with the start of their buffer."""
        cands = []
        for fn in _kernels(program):
            for i, s in statements(fn).items():
                if not isinstance(s, Instr):
                    continue
                for j, op in enumerate(s.operands):
                    new = []
                    if isinstance(op, Imm) and isinstance(op.value, int) and op.value > 1 and op.value & (op.value - 1):
                        new = [_imm(op.value & ~mask, op) for mask in _runs(op.value)]
                    elif isinstance(op, Imm) and op.value == 1 and isinstance(op.value, int) and j > 0:
                        new = [Imm.of(0)]
                    elif isinstance(op, Addr) and op.offset:
                        new = [replace(op, offset=0)]
                    for n in new:
                        ops = s.operands[:j] + (n,) + s.operands[j + 1:]
                        cands.append(edit_function(program, fn.name, subst={i: replace(s, operands=ops)}))
        return cands


def imm_bits(program: Program) -> int:
    """Set bits of integer immediates, address offsets and symbol addresses: what ``Bits``
    and ``Symbols`` lower."""
    n = 0
    for fn in _kernels(program):
        for ins in fn.instructions():
            for op in ins.operands:
                if isinstance(op, Imm) and isinstance(op.value, int) and op.value > 0:
                    n += bin(op.value).count("1")
                elif isinstance(op, Addr):
                    n += op.offset != 0
                elif isinstance(op, Sym) and ins.base == "mov":
                    n += 1  # an address taken: Symbols makes it 0
    return n


# ------------------------------------------------------------ launch, tail, declarations


@dataclass(frozen=True)
class Launch(Pass):
    name: ClassVar[str] = "launch"

    def candidates(self, program: Program) -> list[Program]:
        """One block (grid 1,1,1), then half the threads of the block (not below a warp)."""
        la = program.launch
        cands = []
        if la.grid != (1, 1, 1):
            cands.append(replace(program, launch=replace(la, grid=(1, 1, 1), cluster=(1, 1, 1))))
        x, y, z = la.block
        if x * y * z > 32 and x % 2 == 0 and x >= 64:
            cands.append(replace(program, launch=replace(la, block=(x // 2, y, z))))
        return cands


@dataclass(frozen=True)
class Warpgroup(Pass):
    name: ClassVar[str] = "warpgroup"

    def candidates(self, program: Program) -> list[Program]:
        """A block of two halves whose second half is indexed from its own start (``sub.u32 %r2, %r0, 128``
        with ``%r0 = %tid.x`` and 256 threads: the consumer warpgroup of a producer/consumer kernel)
        launched as one half, the index read as it is (``mov.b32 %r2, %r0``): the first half now does
        what the second did; what only the other half did goes."""
        x, y, z = program.launch.block
        if y * z != 1 or x < 256 or x % 256:
            return []
        half = x // 2
        cands = []
        for fn in _kernels(program):
            sts = statements(fn)
            tids = {r.name for _, r in _thread_registers(sts).values()}
            subst = {i: Instr("mov.b32", (s.operands[0], s.operands[1]), None, s.loc) for i, s in sts.items()
                     if isinstance(s, Instr) and s.base == "sub" and s.guard is None and _bits(type_of(s)) == 32
                     and len(s.operands) == 3 and isinstance(s.operands[1], Reg) and s.operands[1].name in tids
                     and isinstance(s.operands[2], Imm) and s.operands[2].value == half}
            if subst:
                cands.append(replace(edit_function(program, fn.name, subst=subst), launch=replace(program.launch, block=(half, 1, 1))))
        return cands


@dataclass(frozen=True)
class Tail(Pass):
    name: ClassVar[str] = "tail"

    def candidates(self, program: Program) -> list[Program]:
        """The kernel's last statement, a plain ``ret``/``exit``, goes: a kernel that runs off its end
        exits (ptxas accepts it)."""
        fn = program.module.function(program.launch.kernel)
        sts = statements(fn)
        if not sts:
            return []
        last = max(sts)
        s = sts[last]
        if isinstance(s, Instr) and s.base in ("ret", "exit") and s.guard is None and fn.body and fn.body[-1] is s:
            return [edit_function(program, fn.name, drop={last})]
        return []


@dataclass(frozen=True)
class Decls(Pass):
    name: ClassVar[str] = "decls"

    def candidates(self, program: Program) -> list[Program]:
        """A state-space variable no instruction names goes (one at a time: an unnamed .shared variable
        may still back addresses made by ``Symbols``)."""
        used: set[str] = set()
        for fn in _kernels(program):
            used |= used_names(fn)
        cands = []
        for k, item in enumerate(program.module.items):
            if isinstance(item, VarDecl) and item.name not in used:
                items = program.module.items[:k] + program.module.items[k + 1:]
                cands.append(replace(program, module=replace(program.module, items=items)))
        for fn in _kernels(program):
            for i, s in statements(fn).items():
                if isinstance(s, VarDecl) and s.name not in used:
                    cands.append(edit_function(program, fn.name, drop={i}))
        return cands


@dataclass(frozen=True)
class Cse(Pass):
    name: ClassVar[str] = "cse"

    def candidates(self, program: Program) -> list[Program]:
        """A second instruction computing what an earlier one did (same opcode and operands, every register
        involved written once) becomes a move of the earlier result: copy propagation then removes it
        (two copies addressed by ``mad.lo.u32 %r5, %r0, 4, 0`` and ``mad.lo.u32 %r9, %r0, 4, 0``)."""
        cands = []
        for fn in _kernels(program):
            sts = statements(fn)
            writes = write_counts(sts)
            seen: dict[tuple, Reg] = {}
            for i, st in sts.items():
                if not (isinstance(st, Instr) and st.guard is None and st.base not in EFFECTS and st.base not in ("mov", "ld")
                        and not st.opcode.startswith(("wmma", "wgmma", "mma"))):
                    continue
                defs, uses = defs_uses(st)
                t = type_of(st)
                if len(defs) != 1 or t is None or any(writes.get(r.name, 0) > 1 for r in (*defs, *uses)):
                    continue
                key = (st.opcode, st.operands[1:])
                if key in seen:
                    bits = _bits(t) or {"f32": 32, "f64": 64, "f16": 16}.get(t)
                    width = 2 * bits if bits and "wide" in st.modifiers else bits
                    if width and width >= 16:
                        cands.append(edit_function(program, fn.name, subst={i: Instr(f"mov.b{width}", (defs[0], seen[key]), None, st.loc)}))
                else:
                    seen[key] = defs[0]
        return cands
