"""The catalogue's data model: one ``Form`` per exact instruction signature.

A form is what ptxas checks: one opcode spelling with one operand list.  Every
other component (strategies, checker, reference, emitter, conformance suite)
reads forms from here instead of re-typing shape or type lists.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Shape:
    m: int
    n: int
    k: int

    def __str__(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    @staticmethod
    def parse(text: str) -> "Shape":
        """``"m64n8k16"`` (with or without a leading dot) -> Shape(64, 8, 16)."""
        import re

        m = re.fullmatch(r"\.?m(\d+)n(\d+)k(\d+)", text)
        if not m:
            raise ValueError(f"not a shape: {text!r}")
        return Shape(int(m.group(1)), int(m.group(2)), int(m.group(3)))


@dataclass(frozen=True)
class OperandSpec:
    """One operand slot of a form.

    kind:
      ``vec``   brace vector of ``count`` registers of one of ``reg_types``
      ``reg``   one register of one of ``reg_types``
      ``pred_or_imm``  a ``.pred`` register or an immediate from ``values``
      ``imm``   an immediate from ``values``
      ``addr``  a memory address operand ``[reg]`` in ``spaces``
    io: ``in``, ``out`` or ``inout`` (wgmma's d is read and written).
    The first of ``reg_types`` is the canonical type a generator declares;
    the others are what PTX also accepts for the slot.
    """

    role: str
    kind: str
    count: int = 1
    reg_types: tuple[str, ...] = ()
    values: tuple[int, ...] = ()
    io: str = "in"
    spaces: tuple[str, ...] = ()
    # A trailing operand PTX lets the writer leave out (wmma's ``stride``).
    optional: bool = False


@dataclass(frozen=True)
class Form:
    """An exact instruction signature.

    ``family``: ``wgmma``, ``wgmma.sp``, ``wgmma.fence``, ``wgmma.commit_group``,
    ``wgmma.wait_group``, ``mma``, ``mma.sp``, ``wmma.load``, ``wmma.store``,
    ``wmma.mma``, ``ldmatrix``, ``stmatrix``.
    ``a_source`` distinguishes wgmma forms that share an opcode (A in registers vs
    by descriptor).  ``attrs`` carries family-specific facts as sorted pairs
    (e.g. ``("layout_a", "row")``, ``("num", 4)``, ``("trans", True)``).
    """

    family: str
    opcode: str
    operands: tuple[OperandSpec, ...]
    shape: Shape | None = None
    dtype: str = ""
    atype: str = ""
    btype: str = ""
    ctype: str = ""
    a_source: str = ""
    satfinite: bool = False
    min_ptx: tuple[int, int] = (8, 0)
    target: str = "sm_90a"
    attrs: tuple[tuple[str, object], ...] = field(default=())
    # What real ptxas 13.0.88 does with this form.  False: the spec lists it but ptxas
    # rejects it (``ptxas_note`` says why); strategies generate only accepted forms as legal.
    ptxas_accepts: bool = True
    ptxas_note: str = ""

    @property
    def key(self) -> str:
        """Stable identifier: the opcode, plus the A source where it matters."""
        return self.opcode + (f"|a={self.a_source}" if self.a_source else "")

    def attr(self, name: str, default: object = None) -> object:
        for k, v in self.attrs:
            if k == name:
                return v
        return default

    def operand(self, role: str) -> OperandSpec:
        for op in self.operands:
            if op.role == role:
                return op
        raise KeyError(f"{self.key} has no operand {role!r}")

    def has_operand(self, role: str) -> bool:
        return any(op.role == role for op in self.operands)


# Element facts every reader needs: bits per element, and whether PTX calls it float.
ELEMENT_BITS: dict[str, int] = {
    "f64": 64, "f32": 32, "tf32": 32, "s32": 32, "u32": 32, "b32": 32,
    "f16": 16, "bf16": 16, "b16": 16,
    "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "b8": 8,
    "s4": 4, "u4": 4, "b1": 1,
}
FLOAT_TYPES = frozenset({"f64", "f32", "tf32", "f16", "bf16", "e4m3", "e5m2"})
INTEGER_TYPES = frozenset({"s32", "u32", "s8", "u8", "s4", "u4"})
