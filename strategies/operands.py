"""Operand-level strategies: immediates, register types, sparse metadata, buffer inits.

Every value list comes from the catalogue's ``OperandSpec`` (never retyped
here); the strategies only order it so that shrinking heads for the simplest
choice: the identity immediate (scale 1, no transpose), the canonical register
type, metadata selecting elements (0, 1).
"""
from __future__ import annotations

import functools
import math

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
    return _pick(tuple(seq), width)


@functools.lru_cache(maxsize=4096)
def _pick(seq: tuple, width: int) -> st.SearchStrategy:
    # One strategy object per list: Hypothesis validates a new strategy on its first draw,
    # which cost more than the draw itself (generation profile, benchmarks/README.md).
    return st.integers(0, width - 1).map(lambda i: seq[i % len(seq)])


@functools.lru_cache(maxsize=None)
def ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    """``st.integers(lo, hi)``, one object per range (Hypothesis's own strategy cache costs
    ~60 us a call, a large share of a program's generation time)."""
    return st.integers(lo, hi)


@functools.lru_cache(maxsize=None)
def sampled(seq: tuple) -> st.SearchStrategy:
    """``st.sampled_from(seq)`` (a short tuple), one object per tuple."""
    return st.sampled_from(seq)


#: Hypothesis draws an integer uniformly only within [-256, 256]; a wider range leans
#: toward its small end (Hypothesis >= 6.150's integer distribution: the 3,000th of
#: 3,066 forms came up 4x less often than uniform, the first 4x more often).
UNIFORM_SPAN = 256


def choice(seq: tuple) -> st.SearchStrategy:
    """An element of ``seq`` (first = simplest), uniform however long ``seq`` is.

    Up to ``UNIFORM_SPAN`` elements: ``sampled_from``.  Longer: two digits
    ``hi * w + lo`` (``digits``: each range within the uniform span), wrapped modulo
    ``len(seq)``, so every element has probability at least ``1 / (len + w)`` (the first
    few up to twice that) and shrinking still heads for index 0.  Callers cache the
    strategy (hashing a long tuple of forms is not free).
    """
    seq = tuple(seq)
    n = len(seq)
    if n <= UNIFORM_SPAN:
        return st.sampled_from(seq)
    h, w = digits(n)
    return st.tuples(ints(0, h - 1), ints(0, w - 1)).map(lambda t: seq[(t[0] * w + t[1]) % n])


def digits(n: int) -> tuple[int, int]:
    """(h, w): ranges of the two digits ``choice`` draws for ``n`` elements (h * w >= n)."""
    w = math.isqrt(n - 1) + 1
    h = -(-n // w)
    if max(h, w) > UNIFORM_SPAN:
        raise ValueError(f"choice: {n} elements need more than two digits")
    return h, w


def _simplest_first(values: tuple[int, ...], role: str) -> tuple[int, ...]:
    """Identity first: scale-d 1 (accumulate) and scale 1; else 0 (no transpose, selector 0) first."""
    first = 1 if role.startswith(("scale", "imm_scale")) else 0
    return tuple(sorted(values, key=lambda v: (v != first, abs(v), v)))


def immediates(spec: OperandSpec, form: Form | None = None) -> st.SearchStrategy[int]:
    """A legal (and defined) immediate for an ``imm``/``pred_or_imm`` slot."""
    return _immediates(immediate_values(spec, form))


def immediate_values(spec: OperandSpec, form: Form | None = None) -> tuple[int, ...]:
    """The slot's legal and defined values, simplest first."""
    values = spec.values
    if spec.role == "sp_sel" and form is not None:
        values = tuple(v for v in values if v in form.attr("sp_sel_defined", values))
    return _simplest_first(tuple(values), spec.role)


@functools.lru_cache(maxsize=None)
def _immediates(values: tuple) -> st.SearchStrategy[int]:
    return st.sampled_from(values)


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
    return sampled((1, 0, "param", "loop"))


@functools.lru_cache(maxsize=None)
def sparse_metadata(atype: str) -> st.SearchStrategy[int]:
    """A 32-bit metadata word of valid nibbles for ``atype`` (2:4, or 1:2 for tf32)."""
    return _metadata(atype)


@st.composite
def _metadata(draw, atype: str) -> int:
    nibbles = _TF32_NIBBLES if atype == "tf32" else _PAIR_NIBBLES
    mixed = draw(_BOOLS)  # False: one nibble repeated (shrinks to 0x44444444)
    # Eight nibble indices as base-6 digits of three draws (fewer draws, each uniform).
    digits = []
    for _ in range(3):
        v = draw(_SIX_CUBED)
        digits += [v // 36, v // 6 % 6, v % 6]
    picks = [nibbles[d % len(nibbles)] for d in digits[:8]]
    if not mixed:
        return int(picks[0]) * 0x11111111
    word = 0
    for i, nib in enumerate(picks):
        word |= nib << (4 * i)
    return word


_BOOLS = st.booleans()
_SIX_CUBED = st.integers(0, 6 ** 3 - 1)
_INITS = st.sampled_from(INITS)
_SEEDS = st.integers(0, 2**16 - 1)


def inits() -> st.SearchStrategy[str]:
    return _INITS


def seeds() -> st.SearchStrategy[int]:
    return _SEEDS


def buffer_type(elem: str) -> str:
    """The Buffer type that holds elements of a catalogue type (b1 images are raw 32-bit words)."""
    return "b32" if ELEMENT_BITS[elem] < 8 else elem


__all__ = ["pick", "choice", "digits", "ints", "sampled", "UNIFORM_SPAN", "INITS", "immediates", "immediate_values", "register_types", "scale_d_kinds", "sparse_metadata", "inits", "seeds",
           "buffer_type"]
