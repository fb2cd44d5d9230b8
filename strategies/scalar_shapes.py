"""Shapes of a program's scalar code that known ptxas bugs need, as diagnoses of a compile pair's
mismatch (``differ.DIAGNOSES``) and as what the integer-kernel generator turns down
(``scalar_kernels``, ``--rediscover`` aside): an integer ``hardware:O3!=O0|mismatch`` says only that
-O3 and -O0 disagree, and without a shape every such miscompile would be one root cause.  Each test
reads the program's instructions; the pattern names are ``finding.PATTERNS`` keys, and the ledger's
entries (``reports/known_bugs.toml``) match them, so a pair mismatch without a known shape counts
as a new bug.  Each shape was confirmed on the GPU and in ptxas's SASS (``reports/findings/``).
One table for both readers: the diagnosis and the generator's avoidance cannot drift apart."""
from __future__ import annotations

from typing import Callable, Iterator

from fuzzptx.program import Program
from fuzzptx.ptx.ir import Imm, Instr, Reg, Sym, Vec


def _instructions(program: Program) -> Iterator[Instr]:
    for fn in program.module.functions():
        for s in fn.instructions():
            if isinstance(s, Instr):
                yield s


def _const(op) -> int | None:
    return int(op.value) if isinstance(op, Imm) and isinstance(op.value, int) else None


def bfe_s32_position_beyond_31(program: Program) -> bool:
    """A ``bfe.s32`` whose constant start position is 32 or more (13.0.88 -O3: other bits than the
    sign fill the ISA gives)."""
    return any(i.opcode == "bfe.s32" and len(i.operands) == 4 and (_const(i.operands[2]) or 0) & 0xFF >= 32
               for i in _instructions(program))


def bfi_length_beyond_31(program: Program) -> bool:
    """A ``bfi.b32`` with a constant position below 32 and a constant length of 32 or more
    (12.9.86 and 13.0.88 -O3 insert length mod 32 bits)."""
    for i in _instructions(program):
        if i.opcode == "bfi.b32" and len(i.operands) == 5:
            pos, length = _const(i.operands[3]), _const(i.operands[4])
            if pos is not None and length is not None and (pos & 0xFF) < 32 and (length & 0xFF) >= 32:
                return True
    return False


def _abs_read_by(program: Program, opcodes: tuple[str, ...], reads: Callable[[Instr], bool],
                 slot: int | None = None) -> bool:
    """Whether an instruction ``reads`` accepts reads a register that an instruction of ``opcodes``
    (abs, neg, clz, max.u32, mul.hi) wrote, as any source or in operand ``slot`` (by register name, within one function)."""
    for fn in program.module.functions():
        written: set[str] = set()
        for s in fn.instructions():
            if not isinstance(s, Instr) or not s.operands:
                continue
            if s.opcode in opcodes and isinstance(s.operands[0], Reg):
                written.add(s.operands[0].name)
            elif reads(s):
                srcs = s.operands[1:] if slot is None else s.operands[slot:slot + 1]
                if any(isinstance(o, Reg) and o.name in written for o in srcs):
                    return True
    return False


def abs_into_saturating_cvt(program: Program) -> bool:
    """An ``abs.s32``/``abs.s64`` whose result a saturating narrowing ``cvt.sat.s*`` reads (-O3 of
    12.9.86 to 13.5.37 clamps it as an unsigned value: abs(INT_MIN) saturates to the positive bound)."""
    return _abs_read_by(program, ("abs.s32", "abs.s64"), lambda s: s.base == "cvt" and "sat" in s.modifiers)


def neg_into_saturating_cvt(program: Program) -> bool:
    """A ``neg.s32`` whose result a saturating narrowing ``cvt.sat`` reads, or that a ``slct.*.s32``
    tests (-O3 of 12.9.86 to 13.5.37 compares the *operand* against the negated bounds, as if the
    negation never wrapped: neg(INT_MIN) is INT_MIN, saturating to -32768, but the -O3 build stores
    +32767; ``slct a, b, neg(x)`` tests ``x <= 0`` for ``-x >= 0`` and picks ``a`` at INT_MIN)."""
    return _abs_read_by(program, ("neg.s32",), lambda s: (s.base == "cvt" and "sat" in s.modifiers)) or \
        _abs_read_by(program, ("neg.s32",), lambda s: s.base == "slct" and s.modifiers[-1:] == ("s32",), slot=3)


def neg_into_saturating_add(program: Program) -> bool:
    """A ``neg.s32`` whose result ``add.sat.s32``/``sub.sat.s32`` reads (-O3 of 12.9.86 to 13.5.37
    makes ``add.sat(neg x, 0)`` a saturating negation, ISETP.EQ -x, INT_MIN then SEL 0x7fffffff:
    add.sat(INT_MIN, 0) is INT_MIN, the -O3 build stores INT_MAX)."""
    return _abs_read_by(program, ("neg.s32",), lambda s: s.base in ("add", "sub") and "sat" in s.modifiers)


def clz_into_saturating_add(program: Program) -> bool:
    """A ``clz.b32`` whose result ``add.sat.s32`` reads (-O3 of 12.9.86 to 13.5.37 writes clz as
    31 - FLO and folds the 31 into the saturating add's constant, where it wraps: clz(0) + 0x7ffffff0
    saturates to 0x7fffffff, the -O3 build stores 0x80000010)."""
    return _abs_read_by(program, ("clz.b32",), lambda s: s.base == "add" and "sat" in s.modifiers)


def prmt_sign_into_byte_mask(program: Program) -> bool:
    """A default-mode ``prmt.b32`` whose selector sign-replicates a byte (a nibble with bit 3 set)
    and whose result an ``and.b32`` or a zero-extending ``cvt`` of its low bytes reads (12.9.86 and
    13.0.88 -O3 fold the mask into the PRMT with RZ as its first source, keeping the selector: the
    byte replicates RZ's sign, 0; ``prmt x, y, 0x8`` masked to 0xff is 0 for every x.  13.5.37 keeps
    the source)."""
    def sign_replicating(s: Instr) -> bool:
        if s.opcode != "prmt.b32" or len(s.operands) != 4:
            return False
        sel = _const(s.operands[3])
        return sel is None or any((sel >> (4 * k)) & 8 for k in range(4))

    for fn in program.module.functions():
        made: set[str] = set()
        for s in fn.instructions():
            if not isinstance(s, Instr) or not s.operands:
                continue
            if sign_replicating(s) and isinstance(s.operands[0], Reg):
                made.add(s.operands[0].name)
            elif (s.opcode == "and.b32" or (s.base == "cvt" and s.modifiers[-1:] in (("u8",), ("u16",))))\
                    and any(isinstance(o, Reg) and o.name in made for o in s.operands[1:]):
                return True
    return False


def mulhi_into_wide_sub(program: Program) -> bool:
    """A 64-bit ``sub`` whose minuend's low word is a ``mul.hi`` result packed by ``mov.b64`` (-O3
    of 13.0.88 and 13.5.37 folds the borrow into IMAD.HI with the negated subtrahend as addend; its
    carry is wrong when the subtrahend's low word is 0: {hi(x*x), x} - {x, x} at x = 0 gives -1 in
    the high word, not 0)."""
    for fn in program.module.functions():
        mulhi: set[str] = set()
        packed: set[str] = set()
        for s in fn.instructions():
            if not isinstance(s, Instr) or not s.operands:
                continue
            if s.opcode.startswith("mul.hi.") and isinstance(s.operands[0], Reg):
                mulhi.add(s.operands[0].name)
            elif s.opcode == "mov.b64" and isinstance(s.operands[0], Reg) and len(s.operands) == 2:
                parts = s.operands[1].items if isinstance(s.operands[1], Vec) else ()
                first = parts[0] if parts else None
                if isinstance(first, Reg) and first.name in mulhi:
                    packed.add(s.operands[0].name)
            elif s.opcode in ("sub.s64", "sub.u64") and isinstance(s.operands[1], Reg) and s.operands[1].name in packed:
                return True
    return False


def abs_assumed_nonnegative(program: Program) -> bool:
    """An ``abs.s32`` result read by a signed ``rem`` or a signed compare (13.0.88 -O3 takes it
    for non-negative: the remainder loses its sign, ``abs(x) < 0`` folds to false)."""
    return _abs_read_by(program, ("abs.s32",), lambda s: s.opcode.startswith("rem.s") or (
        s.base == "setp" and any(m.startswith("s") for m in s.modifiers[1:])))


def lop3_repeated_operand(program: Program) -> bool:
    """A ``lop3.b32`` with one register among its three sources twice (13.0.88 -O3 puts RZ in the
    repeated slots without rewriting the truth table: ``lop3 x, x, x, 0x80`` gives 0)."""
    for i in _instructions(program):
        if i.opcode == "lop3.b32" and len(i.operands) >= 5:
            names = [o.name for o in i.operands[1:4] if isinstance(o, Reg)]
            if len(names) != len(set(names)):
                return True
    return False


def unsigned_max_into_signed_min(program: Program) -> bool:
    """A ``max.u32`` result read by a signed ``min``/``max`` or compare.  ptxas -O3 takes
    ``max.u32(x, c)`` for at least ``c`` as a signed value too, where a negative x (a large
    unsigned one) passes through: 12.9.86 to 13.5.37 then drop ``and 0xff`` of
    ``min.s32(max.u32(x, 7), 255)`` as a no-op, and 12.9.86 and 13.0.88 fold
    ``min.s32(max.u32(bfind.s32(0), 0), 0)`` to 0 (it is -1)."""
    return _abs_read_by(program, ("max.u32",), lambda s: s.opcode in ("min.s32", "max.s32") or (
        s.base == "setp" and any(m.startswith("s") for m in s.modifiers[1:])))


_MUL_HI = ("mul.hi.u32", "mul.hi.s32", "mul.hi.u64", "mul.hi.s64")


def mulhi_accumulated(program: Program) -> bool:
    """An ``add`` that accumulates a ``mul.hi`` result into one of its own sources (``acc = acc +
    mul.hi(a, b)``, a loop's running sum: 12.9.86 and 13.0.88 -O3 unroll it by 4 with two
    IMAD.HI.U32 whose 64-bit addend chains the sum, so four iterations add the product twice;
    13.5.37 emits four)."""
    def accumulates(s: Instr) -> bool:
        d = s.operands[0]
        return s.base == "add" and isinstance(d, Reg) and any(isinstance(o, Reg) and o.name == d.name
                                                              for o in s.operands[1:])

    return _abs_read_by(program, _MUL_HI, accumulates)


#: instructions ptxas keeps in place between two sign flips of a wgmma accumulator, and then keeps
#: only one of the flips (12.9.86 to 13.5.37, -O1 to -O3; measured in SASS: an empty
#: wgmma.commit_group, shfl/vote/redux/match .sync, bar.sync, bar.warp.sync, fence.proxy.async,
#: activemask, a %clock read; not: an add, a load, a store, an atomic, membar.cta, nothing)
_FIXED_BASES = frozenset({"shfl", "vote", "redux", "match", "bar", "barrier", "activemask"})
_SIGN_MASKS = (0x80000000, 0x80008000)  # an f32's sign, the two signs of an f16x2


def _fixed(s: Instr, pending: bool) -> bool:
    """An instruction ptxas keeps in place between two sign flips (``_FIXED_BASES``; a commit only
    when it commits no wgmma, ``pending`` being false)."""
    if s.opcode.startswith("wgmma.commit_group"):
        return not pending
    if s.base in _FIXED_BASES or s.opcode.startswith("fence.proxy"):
        return True
    return s.base == "mov" and any(isinstance(o, (Reg, Sym)) and o.name.startswith("%clock") for o in s.operands[1:])


def _sign_flip(s: Instr) -> str | None:
    """The register ``xor d, d, SIGN`` flips the sign(s) of, if ``s`` is one."""
    ops = s.operands
    if s.base != "xor" or len(ops) != 3 or not isinstance(ops[0], Reg) or not isinstance(ops[1], Reg) \
            or ops[0].name != ops[1].name or not isinstance(ops[2], Imm):
        return None
    return ops[0].name if int(ops[2].value) & 0xFFFFFFFF in _SIGN_MASKS else None


def accumulator_sign_flips_around_sync(program: Program) -> bool:
    """Two sign flips (``xor r, r, 0x80000000`` or ``0x80008000``) of a wgmma accumulator register
    with an instruction ptxas keeps in place between them (``_fixed``: an empty commit group, a
    warp-synchronous or barrier instruction, ``fence.proxy.async``, a %clock read) and no other
    write of it: 12.9.86 to 13.5.37 at -O1 to -O3 keep one of the two LOP3s, so the stored value
    is negated (+0.0 as -0.0 where D is zero).  Without the instruction between, or without a
    wgmma writing the register, both flips fold away."""
    for fn in program.module.functions():
        accumulators: set[str] = set()
        flipped: dict[str, bool] = {}  # accumulator -> a fixed instruction came after its first flip
        pending = False
        for s in fn.instructions():
            if not isinstance(s, Instr):
                continue
            if s.opcode.startswith("wgmma.mma_async"):
                pending = True
                d = s.operands[0] if s.operands else None
                names = {o.name for o in (d.items if isinstance(d, Vec) else (d,)) if isinstance(o, Reg)}
                accumulators |= names
                for n in names:
                    flipped.pop(n, None)
                continue
            if _fixed(s, pending):
                flipped = {n: True for n in flipped}
            if s.opcode.startswith("wgmma.commit_group"):
                pending = False
            reg = _sign_flip(s)
            if reg is not None and reg in accumulators:
                if flipped.get(reg):
                    return True
                flipped[reg] = False
            elif s.operands and isinstance(s.operands[0], Reg):
                flipped.pop(s.operands[0].name, None)
    return False


_INT_TYPES = ("u32", "s32", "b32", "u64", "s64", "b64", "u16", "s16", "b16")


def set_compared_with_one(program: Program) -> bool:
    """A ``set`` with an integer destination (all ones for true, 0 for false) whose result a
    ``setp.eq``/``setp.ne`` compares with the constant 1 (ptxas 12.0 to 13.3 -O1 and above take the
    ``set`` for a 0/1 boolean: ``set.ge.u32.s32 d, 0, x; setp.ne.s32 p, d, 1`` becomes ``p = x > 0``,
    where the ISA's ``d`` is 0 or 0xffffffff and ``p`` always true; 13.4 compares ``d`` itself)."""
    for fn in program.module.functions():
        masks: set[str] = set()
        for s in fn.instructions():
            if not isinstance(s, Instr) or not s.operands:
                continue
            if s.base == "setp" and s.modifiers[:1] in (("eq",), ("ne",)) and len(s.operands) >= 3:
                a, b = s.operands[1], s.operands[2]
                if any(isinstance(x, Reg) and x.name in masks and _const(y) == 1 for x, y in ((a, b), (b, a))):
                    return True
            dest = s.operands[0]
            if isinstance(dest, Reg):
                types = [m for m in s.modifiers if m in _INT_TYPES + ("f32",)]
                if s.base == "set" and types[:1] and types[0] in _INT_TYPES:
                    masks.add(dest.name)
                else:
                    masks.discard(dest.name)
    return False


def repeated_wgmma(program: Program) -> bool:
    """A ``wgmma.mma_async`` issued again right after an identical one (the same opcode and
    operands: accumulators, descriptors, scale-d and immediates): ptxas collapses the repeat into one
    GMMA, at -O3 (the known ``ptxas-o3-repeated-wgmma-dropped``, which the SASS verifier names
    ``gmma-missing``) and, in other programs, at -O1 only (campaign seed 4141, block 121 program 7:
    -O1 holds 2 QGMMAs for the PTX's 3, -O3 all three)."""
    for fn in program.module.functions():
        last = None
        for s in fn.instructions():
            if not isinstance(s, Instr):
                continue
            key = (s.opcode, repr(s.operands), repr(s.guard)) if s.opcode.startswith("wgmma.mma_async") else None
            if key is not None and key == last:
                return True
            last = key
    return False


#: pattern -> its test, in the order ``differ.diagnose`` tries them (the first that holds names the cause).
SHAPES: tuple[tuple[str, Callable[[Program], bool]], ...] = (
    ("abs-into-saturating-cvt", abs_into_saturating_cvt),
    ("neg-into-saturating-cvt", neg_into_saturating_cvt),
    ("neg-into-saturating-add", neg_into_saturating_add),
    ("clz-into-saturating-add", clz_into_saturating_add),
    ("prmt-sign-into-byte-mask", prmt_sign_into_byte_mask),
    ("mulhi-into-wide-sub", mulhi_into_wide_sub),
    ("unsigned-max-into-signed-min", unsigned_max_into_signed_min),
    ("mulhi-accumulated", mulhi_accumulated),
    ("accumulator-sign-flips-around-sync", accumulator_sign_flips_around_sync),
    ("abs-assumed-nonnegative", abs_assumed_nonnegative),
    ("lop3-repeated-operand", lop3_repeated_operand),
    ("bfi-length-beyond-31", bfi_length_beyond_31),
    ("bfe-s32-position-beyond-31", bfe_s32_position_beyond_31),
    ("set-compared-with-one", set_compared_with_one),
)
