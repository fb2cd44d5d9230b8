"""Operand-level strategies: immediates, register types, sparse metadata, buffer inits.

Every value list comes from the catalogue's ``OperandSpec`` (never retyped
here); the strategies only order it so that shrinking heads for the simplest
choice: the identity immediate (scale 1, no transpose), the canonical register
type, metadata selecting elements (0, 1).
"""
from __future__ import annotations

from hypothesis import strategies as st

from fuzzptx.isa import ELEMENT_BITS, FLOAT_TYPES, Form, OperandSpec

# Buffer input distributions, simplest first; never all zeros (data.py's rule).
INITS: tuple[str, ...] = ("small_int", "random", "special")

# 2:4 metadata nibbles (two distinct 2-bit indices, ascending): (0,1) first.
_PAIR_NIBBLES: tuple[int, ...] = (0x4, 0x8, 0xC, 0x9, 0xD, 0xE)
# 1:2 (tf32) metadata: the only meaningful nibbles (seed 000, 9.7.15.6.1).
_TF32_NIBBLES: tuple[int, ...] = (0x4, 0xE)


def pick(seq: tuple, width: int = 8) -> st.SearchStrategy:
    """An element of ``seq`` (first = simplest) drawn as an index in a fixed range.

    Whatever ``len(seq)`` is (even 1), the draw is the same shape, so a shrinker that
    swaps the form under it does not shift the choices that follow.
    """
    seq = tuple(seq)
    return st.integers(0, width - 1).map(lambda i: seq[i % len(seq)])


def _simplest_first(values: tuple[int, ...], role: str) -> tuple[int, ...]:
    """Identity first: scale-d 1 (accumulate) and scale 1; else 0 (no transpose, selector 0) first."""
    first = 1 if role.startswith(("scale", "imm_scale")) else 0
    return tuple(sorted(values, key=lambda v: (v != first, abs(v), v)))


def immediates(spec: OperandSpec, form: Form | None = None) -> st.SearchStrategy[int]:
    """A legal (and defined) immediate for an ``imm``/``pred_or_imm`` slot."""
    values = spec.values
    if spec.role == "sp_sel" and form is not None:
        values = tuple(v for v in values if v in form.attr("sp_sel_defined", values))
    return st.sampled_from(_simplest_first(tuple(values), spec.role))


def register_types(spec: OperandSpec, form: Form | None = None) -> st.SearchStrategy[str]:
    """One of the register types the slot accepts, the canonical one first.

    Integer-typed registers (.u32/.s32) hold A fragments of integer multiplicands
    only: ptxas 13.0.88 rejects them for FP8 A ("Unexpected instruction types"),
    although the catalogue lists them (reported to helper "catalogue").
    """
    types = spec.reg_types
    if form is not None and spec.role == "a" and form.atype in FLOAT_TYPES:
        types = tuple(t for t in types if t not in (".u32", ".s32")) or types[:1]
    return pick(types)


def scale_d_kinds() -> st.SearchStrategy[object]:
    """scale-d as immediate 1, immediate 0, or a predicate register (named by its source)."""
    return st.sampled_from((1, 0, "param", "loop"))


@st.composite
def sparse_metadata(draw, atype: str) -> int:
    """A 32-bit metadata word of valid nibbles for ``atype`` (2:4, or 1:2 for tf32)."""
    nibbles = _TF32_NIBBLES if atype == "tf32" else _PAIR_NIBBLES
    mixed = draw(st.booleans())  # False: one nibble repeated (shrinks to 0x44444444)
    picks = [draw(pick(nibbles)) for _ in range(8)]
    if not mixed:
        return int(picks[0]) * 0x11111111
    word = 0
    for i, nib in enumerate(picks):
        word |= nib << (4 * i)
    return word


def inits() -> st.SearchStrategy[str]:
    return st.sampled_from(INITS)


def seeds() -> st.SearchStrategy[int]:
    return st.integers(0, 2**16 - 1)


def buffer_type(elem: str) -> str:
    """The Buffer type that holds elements of a catalogue type (b1 images are raw 32-bit words)."""
    return "b32" if ELEMENT_BITS[elem] < 8 else elem


__all__ = ["pick", "INITS", "immediates", "register_types", "scale_d_kinds", "sparse_metadata", "inits", "seeds",
           "buffer_type"]
