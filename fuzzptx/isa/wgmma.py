"""Warpgroup forms: ``wgmma.mma_async`` (dense and ``.sp``) and fence/commit/wait.

Source: PTX ISA 9.7.15 (seeds 000 and 003).  The rows below are the *spec's*
table; where real ptxas 13.0.88 disagrees, the conformance suite pins ptxas's
behaviour and ``reports/conformance.md`` lists the difference.
"""
from __future__ import annotations

from dataclasses import dataclass

from .model import Form, OperandSpec, Shape

# N values: floating-point forms take every multiple of 8; integer and b1 forms
# take 8, 16, 24 and then multiples of 16 (PTX ISA 9.7.15.2, Matrix Shape table).
N_FLOAT: tuple[int, ...] = tuple(range(8, 257, 8))
N_INT: tuple[int, ...] = (8, 16, 24) + tuple(range(32, 257, 16))

SCALES = (-1, 1)
# wgmma.mma_async.sp: "Introduced in PTX ISA version 8.2" (seed 003; seed 000 9.7.15.6).
SPARSE_MIN_PTX = (8, 2)
BOOLS = (0, 1)


@dataclass(frozen=True)
class WgmmaRow:
    """One row of the wgmma type table: A/B/D types and what the row allows."""

    atype: str
    btype: str
    dtypes: tuple[str, ...]
    k_dense: int
    ns: tuple[int, ...]
    negate: bool  # imm-scale-a/b operands exist
    trans: bool  # imm-trans-a/b operands exist (f16/bf16 only)
    satfinite: bool  # .satfinite variant exists (integer rows)
    op: str = ""  # ".and.popc" for b1
    sparse: bool = True  # a .sp variant exists
    sp_sel_defined: tuple[int, ...] = (0, 1)
    min_ptx: tuple[int, int] = (8, 0)


_FP8 = ("e4m3", "e5m2")
_INT8 = ("s8", "u8")

ROWS: tuple[WgmmaRow, ...] = (
    WgmmaRow("f16", "f16", ("f16", "f32"), 16, N_FLOAT, True, True, False),
    WgmmaRow("bf16", "bf16", ("f32",), 16, N_FLOAT, True, True, False),
    WgmmaRow("tf32", "tf32", ("f32",), 8, N_FLOAT, True, False, False),
    *(
        WgmmaRow(a, b, ("f16", "f32"), 32, N_FLOAT, True, False, False, sp_sel_defined=(0,))
        for a in _FP8
        for b in _FP8
    ),
    *(
        WgmmaRow(
            a, b, ("s32",), 32, N_INT, False, False, True, sp_sel_defined=(0,),
            min_ptx=(8, 0) if a == b else (8, 4),
        )
        for a in _INT8
        for b in _INT8
    ),
    WgmmaRow("b1", "b1", ("s32",), 256, N_INT, False, False, False, op=".and.popc", sparse=False),
)

# Register types accepted for each fragment, canonical first.
D_REG_TYPES = {"f32": (".f32", ".b32"), "f16": (".f16x2", ".b32"), "s32": (".s32", ".b32", ".u32")}
A_REG_TYPES = {"f16": (".f16x2", ".b32"), "bf16": (".b32",), "tf32": (".b32",),
               "e4m3": (".b32",), "e5m2": (".b32",)}  # ptxas: fp8 A takes .b32 only
DEFAULT_A_REG_TYPES = (".b32", ".u32", ".s32")


# Where this table follows real ptxas 13.0.88 rather than the spec text (name, what differs).
PTXAS_CORRECTIONS: tuple[tuple[str, str], ...] = (
    ("wgmma.sp-sel-range",
     "seed 003 gives sp-sel the range 0..3 and defines only 0/1 (f16, bf16, tf32) or 0 (e4m3, e5m2, s8, u8);"
     " ptxas rejects every undefined value ('unexpected value 2, expected to be 0 or 1'), so sp_sel's values"
     " are the defined set."),
    ("wgmma.sp-min-ptx",
     "the table had PTX 8.0 for sparse forms; seed 003 says wgmma.mma_async.sp was introduced in PTX 8.2 and"
     " ptxas agrees ('Sparse WGMMA with floating point types requires PTX ISA .version 8.2')."),
)


def d_register_count(dtype: str, n: int) -> int:
    """Accumulator registers per thread: N/2 for 32-bit D, N/4 packed f16x2 for f16 D."""
    return n // 4 if dtype == "f16" else n // 2


def _opcode(row: WgmmaRow, sparse: bool, shape: Shape, dtype: str, satfinite: bool) -> str:
    parts = ["wgmma", "mma_async"] + (["sp"] if sparse else []) + ["sync", "aligned", str(shape)]
    if satfinite:
        parts.append("satfinite")
    parts += [dtype, row.atype, row.btype]
    return ".".join(parts) + row.op


def _operands(row: WgmmaRow, sparse: bool, shape: Shape, dtype: str, a_source: str) -> tuple[OperandSpec, ...]:
    ops = [OperandSpec("d", "vec", d_register_count(dtype, shape.n), D_REG_TYPES[dtype], io="inout")]
    if a_source == "reg":
        ops.append(OperandSpec("a", "vec", 4, A_REG_TYPES.get(row.atype, DEFAULT_A_REG_TYPES)))
    else:
        ops.append(OperandSpec("a_desc", "reg", 1, (".b64", ".u64", ".s64")))
    ops.append(OperandSpec("b_desc", "reg", 1, (".b64", ".u64", ".s64")))
    if sparse:
        ops.append(OperandSpec("sp_meta", "reg", 1, (".b32", ".u32", ".s32")))
        # The spec says sp-sel is "a 32-bit integer constant with values in the range 0..3"
        # and defines only sp_sel_defined; ptxas rejects the rest (PTXAS_CORRECTIONS).
        ops.append(OperandSpec("sp_sel", "imm", values=row.sp_sel_defined))
    ops.append(OperandSpec("scale_d", "pred_or_imm", reg_types=(".pred",), values=BOOLS))
    if row.negate:
        ops.append(OperandSpec("imm_scale_a", "imm", values=SCALES))
        ops.append(OperandSpec("imm_scale_b", "imm", values=SCALES))
    if row.trans:
        if a_source == "desc":
            ops.append(OperandSpec("imm_trans_a", "imm", values=BOOLS))
        ops.append(OperandSpec("imm_trans_b", "imm", values=BOOLS))
    return tuple(ops)


def mma_async_forms() -> tuple[Form, ...]:
    """Every dense and sparse ``wgmma.mma_async`` form the spec lists."""
    forms: list[Form] = []
    for row in ROWS:
        for sparse in (False, True):
            if sparse and not row.sparse:
                continue
            k = row.k_dense * (2 if sparse else 1)
            for n in row.ns:
                shape = Shape(64, n, k)
                for dtype in row.dtypes:
                    for sat in ((False, True) if row.satfinite else (False,)):
                        for a_source in ("reg", "desc"):
                            attrs: tuple[tuple[str, object], ...] = ()
                            if sparse:
                                attrs = (("sp_sel_defined", row.sp_sel_defined),)
                            forms.append(
                                Form(
                                    family="wgmma.sp" if sparse else "wgmma",
                                    opcode=_opcode(row, sparse, shape, dtype, sat),
                                    operands=_operands(row, sparse, shape, dtype, a_source),
                                    shape=shape,
                                    dtype=dtype,
                                    atype=row.atype,
                                    btype=row.btype,
                                    ctype=dtype,
                                    a_source=a_source,
                                    satfinite=sat,
                                    min_ptx=max(row.min_ptx, SPARSE_MIN_PTX) if sparse else row.min_ptx,
                                    attrs=attrs + ((("op", row.op[1:]),) if row.op else ()),
                                )
                            )
    return tuple(forms)


def sync_forms() -> tuple[Form, ...]:
    """``wgmma.fence``, ``wgmma.commit_group`` and ``wgmma.wait_group N`` (N is any non-negative constant)."""
    return (
        Form("wgmma.fence", "wgmma.fence.sync.aligned", ()),
        Form("wgmma.commit_group", "wgmma.commit_group.sync.aligned", ()),
        Form(
            "wgmma.wait_group",
            "wgmma.wait_group.sync.aligned",
            (OperandSpec("n", "imm", values=tuple(range(0, 8))),),
        ),
    )


def row_for(atype: str, btype: str) -> WgmmaRow:
    for row in ROWS:
        if (row.atype, row.btype) == (atype, btype):
            return row
    raise KeyError((atype, btype))
