"""Warp-level forms: ``mma.sync``, ``mma.sp``, ``wmma.load/store/mma``, ``ldmatrix``, ``stmatrix``.

Sources: seed 004 (the ``mma`` shape x type table, ``ldmatrix``/``stmatrix``, sparse
``mma``), seed 002 (``wmma``).  Each table below is read by one builder; no shape or
type list is typed twice.  Where the seeds are silent (register counts of ``mma``,
PTX versions of ``mma``/``ldmatrix``, the 8-bit ``ldmatrix`` types) the value is
derived or read off ptxas 13.0.88's own diagnostics ("requires PTX ISA .version X",
"requires .target sm_Y"), and the comment says which.  Where ptxas disagrees with a
seed, ``SPEC_EXCEPTIONS`` names the form and what ptxas does.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product

from .model import ELEMENT_BITS, Form, OperandSpec, Shape

# ------------------------------------------------------------------ register types
# Canonical first.  Checked against ptxas 13.0.88 by the conformance suite's
# wrong-register-type neighbours: bf16/tf32 multiplicands take only .b32; 8-bit and
# 4-bit multiplicands take any 32-bit register type.
_ANY32 = (".b32", ".u32", ".s32", ".f32", ".f16x2")
MUL_REG_TYPES: dict[str, tuple[str, ...]] = {
    "f16": (".f16x2", ".b32"), "bf16": (".b32",), "tf32": (".b32",), "f64": (".f64", ".b64", ".u64", ".s64"),
    **{t: _ANY32 for t in ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1", "s8", "u8", "s4", "u4", "b1")},
}
# ptxas narrows these for some instructions: the legacy int8 mma.m8n8k16 and every wmma
# integer/sub-byte fragment take only integer-typed registers; wmma's f64 fragments
# only .f64/.b64 (checked by the suite's legal-reg-type cases).
MMA_MUL_REG_TYPES_BY_SHAPE: dict[str, tuple[str, ...]] = {"m8n8k16": (".b32", ".u32", ".s32")}
WMMA_REG_TYPES: dict[str, tuple[str, ...]] = {
    "f16": (".f16x2", ".b32"), "bf16": (".b32",), "tf32": (".b32",), "f64": (".f64", ".b64"),
    **{t: (".b32", ".u32", ".s32") for t in ("s8", "u8", "s4", "u4", "b1")},
    "f32": (".f32", ".b32"), "s32": (".s32", ".b32", ".u32"),
}
# ...but wmma.load.a/b of sub-byte fragments take any 32-bit register type, and
# wmma.mma's f64 C/D any 64-bit one (ACC_REG_TYPES), unlike its A/B and wmma.load/store.
WMMA_SUBBYTE_LOAD_REG_TYPES = (".b32", ".u32", ".s32", ".f32", ".f16x2")
ACC_REG_TYPES: dict[str, tuple[str, ...]] = {
    "f16": (".f16x2", ".b32"), "f32": (".f32", ".b32"), "s32": (".s32", ".b32", ".u32"),
    "f64": (".f64", ".b64", ".u64", ".s64"),
}
ADDR_REG_TYPES = (".b64", ".u64", ".s64")
INT32_REG_TYPES = (".b32", ".u32", ".s32")


# The 6- and 4-bit types of mma's .kind::f8f6f4 sit one per byte in the registers.
_CONTAINER_BITS = {"e3m2": 8, "e2m3": 8, "e2m1": 8}


def _reg_bits(elem: str) -> int:
    return 64 if elem == "f64" else 32


def fragment_regs(rows: int, cols: int, elem: str, rep: int = 1) -> int:
    """Registers per thread for a rows x cols fragment spread evenly over a warp.

    Derived (the seeds give only examples): elements per thread x element bits /
    register bits; f64 elements sit one to a 64-bit register.  ``rep`` copies of
    the fragment are held at once (Volta's quad-pairs).
    """
    bits = _CONTAINER_BITS.get(elem) or ELEMENT_BITS[elem]
    return rows * cols * bits * rep // (32 * _reg_bits(elem))


def _vec(role: str, count: int, types: tuple[str, ...], io: str = "in") -> OperandSpec:
    return OperandSpec(role, "vec", count, types, io=io)


def _max_target(a: str, b: str) -> str:
    return a if target_rank(a) >= target_rank(b) else b


def target_rank(target: str) -> tuple[int, int]:
    """Order targets: ``sm_90 < sm_90a < sm_100a``."""
    digits = "".join(ch for ch in target if ch.isdigit())
    return int(digits), 1 if target.endswith("a") else 0


# ------------------------------------------------------------------ mma.sync / mma.sp
@dataclass(frozen=True)
class MmaShape:
    """One shape of an ``mma`` row with its own minimum target and PTX version.

    ``accum`` overrides the row's (dtype, ctype) pairs; ``sp_sel`` holds the sparse
    selector values the spec defines for this shape (mma.sp rows only).
    """

    shape: str
    target: str
    min_ptx: tuple[int, int]
    accum: tuple[tuple[str, str], ...] = ()
    sp_sel: tuple[int, ...] = (0,)


@dataclass(frozen=True)
class MmaRow:
    """A row of seed 004's mma table: multiplicand types, shapes, accumulators, extras."""

    types: tuple[str, ...]
    shapes: tuple[MmaShape, ...]
    accum: tuple[tuple[str, str], ...]
    mixed: bool = False  # atype != btype allowed (fp8 and the 8/4-bit integers)
    satfinite: bool = False
    rnd: tuple[str, ...] = ("",)  # f64: optional .rn/.rz/.rm/.rp
    ops: tuple[tuple[str, str, tuple[int, int]], ...] = (("", "", (0, 0)),)  # (op, min target, min ptx)
    accum_ptx: tuple[tuple[str, tuple[int, int]], ...] = ()  # dtype -> later min PTX version
    kind: str = ""  # ".kind::f8f6f4" rows
    needs_one_of: tuple[str, ...] = ()  # a pair must use one of these types (else it is another row)


_F16_SAME = (("f16", "f16"), ("f32", "f32"))
# Seed 004: m16n8k8/k16 need dtype == ctype; m8n8k4 has no such constraint, so it takes
# every pair (ptxas rejects .f16 D with .f32 C: see SPEC_EXCEPTIONS).
_F16_K4 = tuple(product(("f16", "f32"), repeat=2))
_RND = ("", "rn", "rz", "rm", "rp")

# Targets from seed 004's "Min arch" column; PTX versions read off ptxas (the seeds give none).
MMA_ROWS: tuple[MmaRow, ...] = (
    MmaRow(("f16",), (MmaShape("m8n8k4", "sm_70", (6, 4), _F16_K4),
                      MmaShape("m16n8k8", "sm_75", (6, 5)),
                      MmaShape("m16n8k16", "sm_80", (7, 0))), _F16_SAME),
    MmaRow(("bf16",), (MmaShape("m16n8k8", "sm_80", (7, 0)), MmaShape("m16n8k16", "sm_80", (7, 0))),
           (("f32", "f32"),)),
    MmaRow(("tf32",), (MmaShape("m16n8k4", "sm_80", (7, 0)), MmaShape("m16n8k8", "sm_80", (7, 0))),
           (("f32", "f32"),)),
    MmaRow(("e4m3", "e5m2"), (MmaShape("m16n8k16", "sm_89", (8, 7)), MmaShape("m16n8k32", "sm_89", (8, 4))),
           _F16_SAME, mixed=True, accum_ptx=(("f16", (8, 7)),)),  # ptxas: f16 accumulation needs PTX 8.7
    MmaRow(("f64",), (MmaShape("m8n8k4", "sm_80", (7, 0)), MmaShape("m16n8k4", "sm_90", (7, 8)),
                      MmaShape("m16n8k8", "sm_90", (7, 8)), MmaShape("m16n8k16", "sm_90", (7, 8))),
           (("f64", "f64"),), rnd=_RND),
    MmaRow(("s8", "u8"), (MmaShape("m8n8k16", "sm_75", (6, 5)), MmaShape("m16n8k16", "sm_80", (7, 0)),
                          MmaShape("m16n8k32", "sm_80", (7, 0))), (("s32", "s32"),), mixed=True, satfinite=True),
    MmaRow(("s4", "u4"), (MmaShape("m8n8k32", "sm_75", (6, 5)), MmaShape("m16n8k32", "sm_80", (7, 0)),
                          MmaShape("m16n8k64", "sm_80", (7, 0))), (("s32", "s32"),), mixed=True, satfinite=True),
    MmaRow(("b1",), (MmaShape("m8n8k128", "sm_75", (7, 0)), MmaShape("m16n8k128", "sm_80", (7, 0)),
                     MmaShape("m16n8k256", "sm_80", (7, 0))), (("s32", "s32"),),
           ops=(("xor", "", (0, 0)), ("and", "sm_80", (7, 1)))),
    # Seed 004 lists .f32 accumulators for .kind::f8f6f4; ptxas takes .f16 as well (as for fp8).
    MmaRow(("e4m3", "e5m2", "e3m2", "e2m3", "e2m1"), (MmaShape("m16n8k32", "sm_120a", (8, 7)),), _F16_SAME,
           mixed=True, kind="kind::f8f6f4", needs_one_of=("e3m2", "e2m3", "e2m1")),
)

# Sparse rows (seed 004 section 5 names mma.sp m16n8k32 for f16; the other rows follow the
# PTX ISA's mma.sp syntax).  sp_sel: the selector values the spec defines per shape
# (a thread, a thread pair, or all threads supply metadata).
MMA_SP_ROWS: tuple[MmaRow, ...] = (
    MmaRow(("f16",), (MmaShape("m16n8k16", "sm_80", (7, 1), sp_sel=(0, 1, 2, 3)),
                      MmaShape("m16n8k32", "sm_80", (7, 1), sp_sel=(0, 1))), _F16_SAME),
    MmaRow(("bf16",), (MmaShape("m16n8k16", "sm_80", (7, 1), sp_sel=(0, 1, 2, 3)),
                       MmaShape("m16n8k32", "sm_80", (7, 1), sp_sel=(0, 1))), (("f32", "f32"),)),
    MmaRow(("tf32",), (MmaShape("m16n8k8", "sm_80", (7, 1), sp_sel=(0, 1, 2, 3)),
                       MmaShape("m16n8k16", "sm_80", (7, 1), sp_sel=(0, 1))), (("f32", "f32"),)),
    MmaRow(("e4m3", "e5m2"), (MmaShape("m16n8k64", "sm_89", (8, 4), sp_sel=(0,)),), (("f32", "f32"),),
           mixed=True),
    MmaRow(("s8", "u8"), (MmaShape("m16n8k32", "sm_80", (7, 1), sp_sel=(0, 1)),
                          MmaShape("m16n8k64", "sm_80", (7, 1), sp_sel=(0,))), (("s32", "s32"),),
           mixed=True, satfinite=True),
    MmaRow(("s4", "u4"), (MmaShape("m16n8k64", "sm_80", (7, 1), sp_sel=(0, 1)),
                          MmaShape("m16n8k128", "sm_80", (7, 1), sp_sel=(0,))), (("s32", "s32"),),
           mixed=True, satfinite=True),
)
ORDERED_METADATA_PTX = (8, 5)  # mma.sp::ordered_metadata (PTX ISA 8.5)


def mma_register_counts(shape: Shape, atype: str, dtype: str, sparse: bool = False) -> tuple[int, int, int]:
    """(A, B, C/D) registers per thread for ``mma``: derived from the shape.

    A is M x K (K/2 when sparse), B is K x N, C/D is M x N over 32 lanes.  The Volta
    ``m8n8k4`` f16 shape is computed by four quad-pairs at once, so each thread holds
    four times the even share (PTX ISA: A and B two .f16x2, C/D four .f16x2 or eight .f32).
    """
    k_a = shape.k // 2 if sparse else shape.k
    rep = 4 if (shape.m, shape.n, shape.k) == (8, 8, 4) and atype == "f16" else 1
    return (fragment_regs(shape.m, k_a, atype, rep), fragment_regs(shape.k, shape.n, atype, rep),
            fragment_regs(shape.m, shape.n, dtype, rep))


def _mma_forms(rows: tuple[MmaRow, ...], sparse: bool, ordered: bool = False) -> list[Form]:
    out: list[Form] = []
    head = "mma.sp::ordered_metadata" if ordered else ("mma.sp" if sparse else "mma")
    for row, ms in ((r, s) for r in rows for s in r.shapes):
        shape = Shape.parse(ms.shape)
        layouts = list(product(("row", "col"), repeat=2)) if ms.shape == "m8n8k4" and row.types == ("f16",) else [("row", "col")]
        pairs = [(a, b) for a in row.types for b in row.types if (row.mixed or a == b)
                 and (not row.needs_one_of or a in row.needs_one_of or b in row.needs_one_of)]
        for (la, lb), (at, bt), (dt, ct), sat, rnd, (op, op_target, op_ptx) in product(
                layouts, pairs, ms.accum or row.accum, (False, True) if row.satfinite else (False,),
                row.rnd, row.ops):
            mods = [head, "sync", "aligned", ms.shape, la, lb] + ([rnd] if rnd else []) + (["satfinite"] if sat else [])
            mods += [row.kind] if row.kind else []
            mods += [dt, at, bt, ct] + ([op, "popc"] if op else [])
            na, nb, nd = mma_register_counts(shape, at, dt, sparse)
            mul = MMA_MUL_REG_TYPES_BY_SHAPE.get(ms.shape)
            ops = [_vec("d", nd, ACC_REG_TYPES[dt], "out"), _vec("a", na, mul or MUL_REG_TYPES[at]),
                   _vec("b", nb, mul or MUL_REG_TYPES[bt]), _vec("c", mma_register_counts(shape, at, ct, sparse)[2],
                                                                ACC_REG_TYPES[ct])]
            attrs: list[tuple[str, object]] = [("layout_a", la), ("layout_b", lb)]
            if sparse:
                # ptxas enforces the spec's defined selectors as the operand's range
                # (one exception pinned in fuzzptx.conformance.PINNED).
                ops += [OperandSpec("sp_meta", "reg", 1, INT32_REG_TYPES),
                        OperandSpec("sp_sel", "imm", values=ms.sp_sel)]
                attrs += [("ordered_metadata", ordered), ("sp_sel_defined", ms.sp_sel)]
            if rnd:
                attrs.append(("rnd", rnd))
            if op:
                attrs.append(("op", op))
            if row.kind:
                attrs.append(("kind", row.kind))
            min_ptx = max(ms.min_ptx, op_ptx, dict(row.accum_ptx).get(dt, (0, 0)),
                          ORDERED_METADATA_PTX if ordered else (0, 0))
            out.append(Form(
                family="mma.sp" if sparse else "mma", opcode=".".join(mods), operands=tuple(ops),
                shape=shape, dtype=dt, atype=at, btype=bt, ctype=ct, satfinite=sat,
                min_ptx=min_ptx, target=_max_target(ms.target, op_target) if op_target else ms.target,
                attrs=tuple(sorted(attrs)),
            ))
    return out


# ------------------------------------------------------------------ wmma
@dataclass(frozen=True)
class WmmaShape:
    """A wmma shape of a row: A and B registers per thread (seed 002's fragment tables)."""

    shape: str
    a_regs: int
    b_regs: int
    min_ptx: tuple[int, int]


@dataclass(frozen=True)
class WmmaRow:
    """One syntax block of seed 002: multiplicand types, shapes, accumulators (type, regs)."""

    types: tuple[str, ...]
    shapes: tuple[WmmaShape, ...]
    accum: tuple[tuple[str, int], ...]
    target: str
    mma_dc: tuple[tuple[str, str], ...]  # (dtype, ctype) pairs wmma.mma takes
    satfinite: bool = False
    rnd: tuple[str, ...] = ("",)
    ops: tuple[tuple[str, str, tuple[int, int]], ...] = (("", "", (0, 0)),)
    f16_spelling: bool = False  # wmma.mma spells only .dtype.ctype (A/B implicitly .f16)


_F16_PAIRS = tuple(product(("f16", "f32"), repeat=2))
WMMA_ROWS: tuple[WmmaRow, ...] = (
    WmmaRow(("f16",), (WmmaShape("m16n16k16", 8, 8, (6, 0)), WmmaShape("m8n32k16", 8, 8, (6, 1)),
                       WmmaShape("m32n8k16", 8, 8, (6, 1))),
            (("f16", 4), ("f32", 8)), "sm_70", _F16_PAIRS, f16_spelling=True),
    WmmaRow(("s8", "u8"), (WmmaShape("m16n16k16", 2, 2, (6, 3)), WmmaShape("m8n32k16", 1, 4, (6, 3)),
                           WmmaShape("m32n8k16", 4, 1, (6, 3))),
            (("s32", 8),), "sm_72", (("s32", "s32"),), satfinite=True),
    WmmaRow(("bf16",), (WmmaShape("m16n16k16", 4, 4, (7, 0)), WmmaShape("m8n32k16", 2, 8, (7, 0)),
                        WmmaShape("m32n8k16", 8, 2, (7, 0))),
            (("f32", 8),), "sm_80", (("f32", "f32"),)),
    WmmaRow(("tf32",), (WmmaShape("m16n16k8", 4, 4, (7, 0)),), (("f32", 8),), "sm_80", (("f32", "f32"),)),
    # Seed 002's fragment table says one .f64 register for C/D; see SPEC_EXCEPTIONS.
    WmmaRow(("f64",), (WmmaShape("m8n8k4", 1, 1, (7, 0)),), (("f64", 1),), "sm_80", (("f64", "f64"),),
            rnd=_RND),
    WmmaRow(("s4", "u4"), (WmmaShape("m8n8k32", 1, 1, (6, 3)),), (("s32", 2),), "sm_75", (("s32", "s32"),),
            satfinite=True),
    WmmaRow(("b1",), (WmmaShape("m8n8k128", 1, 1, (6, 3)),), (("s32", 2),), "sm_75", (("s32", "s32"),),
            ops=(("xor", "", (0, 0)), ("and", "sm_80", (7, 1)))),
)
_SUBBYTE = ("s4", "u4", "b1")
WMMA_SPACES = ("", "global", "shared", "shared::cta")
SHARED_CTA_PTX = (7, 8)  # the ::cta sub-qualifier (seeds 002, 004)


def _space_spec(space: str) -> OperandSpec:
    return OperandSpec("addr", "addr", 1, ADDR_REG_TYPES, spaces=(space or "generic",))


def _with_space(ptx: tuple[int, int], space: str) -> tuple[int, int]:
    return max(ptx, SHARED_CTA_PTX) if space == "shared::cta" else ptx


def _wmma_forms() -> list[Form]:
    loads: dict[str, Form] = {}
    stores: dict[str, Form] = {}
    mmas: list[Form] = []
    stride = OperandSpec("stride", "reg", 1, INT32_REG_TYPES, optional=True)
    for row, ws in ((r, s) for r in WMMA_ROWS for s in r.shapes):
        shape = Shape.parse(ws.shape)
        sub = row.types[0] in _SUBBYTE
        for t, space in product(row.types, WMMA_SPACES):
            for mat, regs in (("a", ws.a_regs), ("b", ws.b_regs)):
                layouts = (("row",) if mat == "a" else ("col",)) if sub else ("row", "col")
                for lay in layouts:
                    op = ".".join(["wmma.load", mat, "sync.aligned", lay, ws.shape] + ([space] if space else []) + [t])
                    loads.setdefault(op, Form(
                        "wmma.load", op, (_vec("r", regs, WMMA_SUBBYTE_LOAD_REG_TYPES if sub else WMMA_REG_TYPES[t],
                                               "out"), _space_spec(space), stride),
                        shape=shape, atype=t if mat == "a" else "", btype=t if mat == "b" else "",
                        min_ptx=_with_space(ws.min_ptx, space), target=row.target,
                        attrs=(("layout", lay), ("matrix", mat), ("space", space))))
        for (ct, regs), lay, space in product(row.accum, ("row", "col"), WMMA_SPACES):
            tail = [lay, ws.shape] + ([space] if space else []) + [ct]
            ptx = _with_space(ws.min_ptx, space)
            attrs = (("layout", lay), ("space", space))
            op = ".".join(["wmma.load.c.sync.aligned"] + tail)
            loads.setdefault(op, Form("wmma.load", op, (_vec("r", regs, WMMA_REG_TYPES[ct], "out"), _space_spec(space),
                                                        stride), shape=shape, ctype=ct, min_ptx=ptx,
                                      target=row.target, attrs=attrs + (("matrix", "c"),)))
            op = ".".join(["wmma.store.d.sync.aligned"] + tail)
            stores.setdefault(op, Form("wmma.store", op, (_space_spec(space), _vec("r", regs, WMMA_REG_TYPES[ct]),
                                                          stride), shape=shape, dtype=ct, min_ptx=ptx,
                                       target=row.target, attrs=attrs + (("matrix", "d"),)))
        acc = dict(row.accum)
        ab = (("row", "col"),) if sub else tuple(product(("row", "col"), repeat=2))
        for (la, lb), t, (dt, ct), sat, rnd, (bop, op_target, op_ptx) in product(
                ab, row.types, row.mma_dc, (False, True) if row.satfinite else (False,), row.rnd, row.ops):
            head = ["wmma.mma"] + ([bop, "popc"] if bop else []) + ["sync.aligned", la, lb, ws.shape]
            types = [dt, ct] if row.f16_spelling else [dt, t, t, ct]
            op = ".".join(head + ([rnd] if rnd else []) + types + (["satfinite"] if sat else []))
            attrs = [("layout_a", la), ("layout_b", lb)] + ([("rnd", rnd)] if rnd else []) + ([("op", bop)] if bop else [])
            mmas.append(Form(
                "wmma.mma", op,
                (_vec("d", acc[dt], ACC_REG_TYPES[dt], "out"), _vec("a", ws.a_regs, WMMA_REG_TYPES[t]),
                 _vec("b", ws.b_regs, WMMA_REG_TYPES[t]), _vec("c", acc[ct], ACC_REG_TYPES[ct])),
                shape=shape, dtype=dt, atype=t, btype=t, ctype=ct, satfinite=sat,
                min_ptx=max(ws.min_ptx, op_ptx), target=_max_target(row.target, op_target) if op_target else row.target,
                attrs=tuple(sorted(attrs))))
    return list(loads.values()) + list(stores.values()) + mmas


# ------------------------------------------------------------------ ldmatrix / stmatrix
@dataclass(frozen=True)
class MatrixMove:
    """One ``ldmatrix``/``stmatrix`` shape x type: counts, .trans rule, regs per matrix.

    ``trans``: ``"optional"``, ``"required"`` or ``"forbidden"``.  Registers per
    matrix are derived: an 8x8 .b16 matrix is 128 B over 32 lanes = one .b32; a
    16x16 8-bit matrix two; an m16n8 / m8n16 8-bit matrix one.
    """

    shape: str
    type: str
    nums: tuple[int, ...]
    trans: str
    regs_per_matrix: int
    target: str
    min_ptx: tuple[int, int]


# Seed 004 gives targets sm_75 (ldmatrix) and sm_90 (stmatrix) and the 8-bit shapes;
# ptxas says the 8-bit shapes need sm_100a and PTX 8.6, and spells m8n16's type
# .b8x16.b6x16_p32 / .b8x16.b4x16_p64 (seed 004's plain .b8 is in SPEC_EXCEPTIONS).
LDMATRIX: tuple[MatrixMove, ...] = (
    MatrixMove("m8n8", "b16", (1, 2, 4), "optional", 1, "sm_75", (6, 5)),
    MatrixMove("m16n16", "b8", (1, 2), "required", 2, "sm_100a", (8, 6)),
    MatrixMove("m16n16", "b8x16.b6x16_p32", (1, 2), "required", 2, "sm_100a", (8, 6)),
    MatrixMove("m16n16", "b8x16.b4x16_p64", (1, 2), "required", 2, "sm_100a", (8, 6)),
    MatrixMove("m8n16", "b8", (1, 2, 4), "forbidden", 1, "sm_100a", (8, 6)),
    MatrixMove("m8n16", "b8x16.b6x16_p32", (1, 2, 4), "forbidden", 1, "sm_100a", (8, 6)),
    MatrixMove("m8n16", "b8x16.b4x16_p64", (1, 2, 4), "forbidden", 1, "sm_100a", (8, 6)),
)
STMATRIX: tuple[MatrixMove, ...] = (
    MatrixMove("m8n8", "b16", (1, 2, 4), "optional", 1, "sm_90", (7, 8)),
    MatrixMove("m16n8", "b8", (1, 2, 4), "required", 1, "sm_100a", (8, 6)),
)
MOVE_SPACES = ("", "shared", "shared::cta")
MOVE_REG_TYPES = (".b32", ".u32", ".s32", ".f32", ".f16x2")


def _move_forms(name: str, table: tuple[MatrixMove, ...]) -> list[Form]:
    out = []
    for mv in table:
        for num, space in product(mv.nums, MOVE_SPACES):
            for trans in {"optional": (False, True), "required": (True,), "forbidden": (False,)}[mv.trans]:
                mods = [name, "sync", "aligned", mv.shape, f"x{num}"] + (["trans"] if trans else [])
                op = ".".join(mods + ([space] if space else []) + [mv.type])
                regs = _vec("r", num * mv.regs_per_matrix, MOVE_REG_TYPES, "out" if name == "ldmatrix" else "in")
                addr = _space_spec(space)  # no state space: a generic address (into shared memory)
                out.append(Form(
                    name, op, (regs, addr) if name == "ldmatrix" else (addr, regs), shape=None,
                    atype=mv.type, min_ptx=_with_space(mv.min_ptx, space), target=mv.target,
                    attrs=(("num", num), ("shape", mv.shape), ("space", space), ("trans", trans))))
    return out


# ------------------------------------------------------------------ spec exceptions
# Each entry: a predicate on a form built from the spec tables, and what ptxas 13.0.88
# does instead.  ``fix`` rebuilds the form the way ptxas takes it (or marks it rejected).
@dataclass(frozen=True)
class SpecException:
    rule: str
    spec_says: str
    ptxas_does: str


def _fix_wmma_f64_acc(f: Form) -> Form:
    acc_roles = ("d", "c") if f.family == "wmma.mma" else ("r",)
    ops = tuple(replace(o, count=2) if o.kind == "vec" and o.role in acc_roles else o for o in f.operands)
    return replace(f, operands=ops)


def _reject(note: str):
    return lambda f: replace(f, ptxas_accepts=False, ptxas_note=note)


SPEC_EXCEPTIONS: tuple[tuple[SpecException, object, object], ...] = (
    (SpecException("wmma.f64-acc-regs",
                   "seed 002's fragment table: C/D of .m8n8k4 .f64 is one .f64 register",
                   "ptxas takes two .f64 registers (as seed 002's own examples write: 8x8 over 32 lanes)"),
     lambda f: f.family.startswith("wmma") and f.shape == Shape(8, 8, 4) and "f64" in (f.dtype, f.ctype)
     and f.attr("matrix") not in ("a", "b"),
     _fix_wmma_f64_acc),
    (SpecException("mma.m8n8k4-f16-d-f32-c",
                   "seed 004 constrains .dtype == .ctype only for m16n8k8/k16, so m8n8k4 .f16 D with .f32 C is listed",
                   "ptxas rejects it: '.dtype must be .f32 when .ctype is .f32 for mma with shape .m8n8k4'"),
     lambda f: f.family == "mma" and f.shape == Shape(8, 8, 4) and (f.dtype, f.ctype) == ("f16", "f32"),
     _reject("ptxas: '.dtype must be '.f32' when .ctype is '.f32' for 'mma' instruction with shape '.m8n8k4''")),
    (SpecException("ldmatrix.m8n16-b8",
                   "seed 004: ldmatrix .m8n16 with .type .b8",
                   "ptxas rejects plain .b8 for .m8n16 and needs .b8x16.b6x16_p32 or .b8x16.b4x16_p64"),
     lambda f: f.family == "ldmatrix" and f.attr("shape") == "m8n16" and f.atype == "b8",
     _reject("ptxas: 'Unexpected number of instruction types specified for ldmatrix with shape .m8n16'")),
)


# Facts the seeds do not state, read off ptxas 13.0.88 and built into the tables above.
PTXAS_NOTES: tuple[tuple[str, str], ...] = (
    ("mma.min-ptx", "PTX versions of mma/mma.sp/ldmatrix shapes (the seeds give none): m8n8k4 6.4, m16n8k8 and"
     " the int m8n8 shapes 6.5, b1 m8n8k128 7.0, m16n8k* 7.0, f64 m16n8k* 7.8, fp8 m16n8k32 8.4 and m16n8k16 8.7,"
     " fp8 with .f16 accumulators 8.7, .and.popc 7.1, mma.sp 7.1, ::ordered_metadata 8.5, kind::f8f6f4 8.7."),
    ("mma.sp.selectors", "ptxas enforces the spec's defined sparsity selectors as the operand's range"
     " (0..3 for k16 f16/bf16 and k8 tf32, 0..1 for the next K, 0 for the largest K of 8/4-bit types)."),
    ("reg-types", "register types per slot: bf16/tf32 multiplicands .b32 only; 8/4-bit mma multiplicands any"
     " 32-bit type except in the legacy m8n8k16 (integer types only); wmma integer fragments integer types"
     " only, but sub-byte wmma.load a/b any 32-bit type; f64 fragments .f64/.b64, plus .u64/.s64 for mma and"
     " for wmma.mma's C/D."),
    ("targets", "8-bit ldmatrix/stmatrix shapes need sm_100a and PTX 8.6; .kind::f8f6f4 with a 6/4-bit type"
     " needs sm_120a and PTX 8.7 (with only e4m3/e5m2 it builds for sm_100a: not catalogued)."),
    ("kind-f8f6f4-f16", "seed 004 lists .f32 accumulators for .kind::f8f6f4; ptxas also takes .f16 (catalogued)."),
)


def spec_forms() -> tuple[Form, ...]:
    """The forms exactly as the seed tables state them (before ``SPEC_EXCEPTIONS``)."""
    return tuple(
        _mma_forms(MMA_ROWS, sparse=False) + _mma_forms(MMA_SP_ROWS, sparse=True)
        + _mma_forms(MMA_SP_ROWS, sparse=True, ordered=True) + _wmma_forms()
        + _move_forms("ldmatrix", LDMATRIX) + _move_forms("stmatrix", STMATRIX))


def exceptions_for(form: Form) -> tuple[SpecException, ...]:
    """The spec exceptions that apply to a spec-table form."""
    return tuple(e for e, pred, _ in SPEC_EXCEPTIONS if pred(form))  # type: ignore[operator]


def apply_exceptions(form: Form) -> Form:
    for _, pred, fix in SPEC_EXCEPTIONS:
        if pred(form):  # type: ignore[operator]
            form = fix(form)  # type: ignore[operator]
    return form


def warp_forms() -> tuple[Form, ...]:
    """Every warp-level form: the spec tables with ptxas's exceptions applied."""
    return tuple(apply_exceptions(f) for f in spec_forms())
