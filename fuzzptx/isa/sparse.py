"""Structured-sparse A: metadata encode/decode, packed fragments, expansion to dense A.

Seeds 000 §9.7.15.6 and 003 (wgmma.mma_async.sp), seed 004 §5 (mma.sp).  One
model covers every sparse form: a row of A is cut into *units* (16 bits for
f16/bf16/tf32, 8 bits for e4m3/e5m2/s8/u8, and pairs of s4/u4) and every chunk of
four units keeps two, at positions given by two 2-bit indices packed in a 4-bit
metadata field (first kept unit in the low two bits).  So tf32's 1:2 sparsity is
2:4 over its 16-bit halves: 0b0100 keeps element 0, 0b1110 element 1, the only
values the spec allows; every other tf32 value, and a field whose two indices are
equal (0b0000, 0b0101, 0b1010, 0b1111), is UNDEFINED: ``decode_metadata`` says so
instead of inventing a value.

Where each chunk's field lives (per warp; rows g and g+8 of the warp's 16 rows,
lane = 4g + q; ``chunks`` = chunks of four units per row; ``h`` = row // 8):

* 16-bit units, 4 chunks (mma.sp m16n8k16 f16/bf16, m16n8k8 tf32): one thread per
  quad, q = sp-sel (0..3); bits 16 h + 4 c.
* 16-bit units, 8 chunks (wgmma k32 f16/bf16, k16 tf32; mma.sp k32 f16/bf16, k16
  tf32): a thread pair, q = 2 sp-sel + c // 4; bits 16 h + 4 (c % 4).
* 8-bit units, 8 chunks (mma.sp m16n8k32 s8/u8, m16n8k64 s4/u4): a thread pair,
  q = 2 sp-sel + h; bits 4 c (one whole row per thread).  *Found on the H100*: the
  16-bit pattern (first guess, by analogy) gave 96 wrong cases of 96.
* 8-bit units, 16 chunks (wgmma k64 8-bit; mma.sp k64 8-bit and e4m3, k128 s4/u4):
  all four threads (sp-sel 0), q = h + 2 (c // 8); bits 4 (c % 8).

These are CuTe's SM90 sparse GMMA ``ELayout``s read as bit positions, extended to
the warp-level shapes by the same chunk count; *proved on an H100* for every form
in tests/hw_records/ (see the report of issue 4).  The packed A fragment (registers)
is the dense fragment of the packed M x K/2 matrix: ``layouts.a_fragment_layout``
for wgmma, ``warp_layouts.mma_a_layout(..., sparse=True)`` for mma.sp.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from fuzzptx.isa import ELEMENT_BITS

FIELD_BITS = 4
INVALID_2_4 = (0b0000, 0b0101, 0b1010, 0b1111)
TF32_VALID = (0b0100, 0b1110)


@dataclass(frozen=True)
class SparseSpec:
    """The sparsity geometry of one form."""

    atype: str
    m: int  # rows of A
    k: int  # logical K (elements)
    unit_bits: int
    threads: int  # 32 (mma.sp) or 128 (wgmma.sp)
    sel_values: tuple[int, ...]

    @property
    def element_bits(self) -> int:
        return ELEMENT_BITS[self.atype]

    @property
    def units(self) -> int:
        """Units per logical row."""
        return self.k * self.element_bits // self.unit_bits

    @property
    def chunks(self) -> int:
        return self.units // 4

    @property
    def packed_k(self) -> int:
        return self.k // 2


def unit_bits(atype: str) -> int:
    return {"f16": 16, "bf16": 16, "tf32": 16, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "s4": 8, "u4": 8}[atype]


def spec_for(form) -> SparseSpec:
    """The SparseSpec of a catalogue ``wgmma.sp`` or ``mma.sp`` form."""
    if form.family not in ("wgmma.sp", "mma.sp"):
        raise ValueError(f"{form.opcode} is not a sparse form")
    sel = tuple(form.attr("sp_sel_defined", (0,)))
    threads = 128 if form.family == "wgmma.sp" else 32
    return SparseSpec(form.atype, form.shape.m, form.shape.k, unit_bits(form.atype), threads, sel)


# ------------------------------------------------------------------ metadata layout


def meta_position(spec: SparseSpec, sel: int) -> tuple[np.ndarray, np.ndarray]:
    """(thread[m, chunks], bit shift[m, chunks]) of each chunk's 4-bit field (fresh arrays)."""
    thread, shift, _ = _meta_position(spec, sel)
    return thread.copy(), shift.copy()


@functools.lru_cache(maxsize=None)
def _meta_position(spec: SparseSpec, sel: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``meta_position`` per (spec, selector), read-only, with the shifts as uint64 too."""
    thread, shift = _meta_position_uncached(spec, sel)
    out = (thread, shift, shift.astype(np.uint64))
    for arr in out:
        arr.flags.writeable = False
    return out


def _meta_position_uncached(spec: SparseSpec, sel: int) -> tuple[np.ndarray, np.ndarray]:
    rows = np.arange(spec.m)[:, None]
    c = np.arange(spec.chunks)[None, :]
    warp, r16 = rows // 16, rows % 16
    g, half = r16 % 8, r16 // 8
    if spec.chunks == 4:
        q, shift = sel + 0 * c, 16 * half + 4 * c
    elif spec.chunks == 8 and spec.unit_bits == 16:
        q, shift = 2 * sel + c // 4, 16 * half + 4 * (c % 4)
    elif spec.chunks == 8:
        q, shift = 2 * sel + half + 0 * c, 4 * c + 0 * half
    elif spec.chunks == 16:
        q, shift = half + 2 * (c // 8), 4 * (c % 8) + 0 * half
    else:
        raise ValueError(f"no metadata layout for {spec.chunks} chunks per row")
    thread = 32 * warp + 4 * g + q
    return np.broadcast_to(thread, (spec.m, spec.chunks)).copy(), np.broadcast_to(shift, (spec.m, spec.chunks)).copy()


def supplying_threads(spec: SparseSpec, sel: int) -> np.ndarray:
    """bool[threads]: which threads' metadata registers the instruction reads."""
    thread, _ = meta_position(spec, sel)
    out = np.zeros(spec.threads, bool)
    out[thread.ravel()] = True
    return out


def encode_metadata(spec: SparseSpec, fields: np.ndarray, sel: int = 0) -> np.ndarray:
    """4-bit fields ``[m, chunks]`` -> metadata registers ``uint32[threads]`` (others 0)."""
    f = np.asarray(fields, dtype=np.uint64) & np.uint64(0xF)
    thread, shift = meta_position(spec, sel)
    regs = np.zeros(spec.threads, np.uint64)
    np.bitwise_or.at(regs, thread.ravel(), (f << shift.astype(np.uint64)).ravel())
    return regs.astype(np.uint32)


def decode_metadata(spec: SparseSpec, regs: np.ndarray, sel: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Metadata registers ``[threads]`` -> (fields uint8[m, chunks], valid bool[m, chunks])."""
    r = np.asarray(regs).astype(np.uint64)
    thread, _, shift = _meta_position(spec, sel)
    fields = ((r[thread] >> shift) & np.uint64(0xF)).astype(np.uint8)
    return fields, field_valid(spec, fields)


def field_valid(spec: SparseSpec, fields: np.ndarray) -> np.ndarray:
    """Which 4-bit fields the spec defines (two distinct indices; tf32: 0b0100 or 0b1110)."""
    f = np.asarray(fields)
    if spec.atype == "tf32":
        return np.isin(f, TF32_VALID)
    return (f & 3) != (f >> 2)


def fields_from_indices(idx: np.ndarray) -> np.ndarray:
    """Index pairs ``[..., 2]`` (first kept unit, second) -> 4-bit fields."""
    i = np.asarray(idx, dtype=np.uint8)
    return (i[..., 0] | (i[..., 1] << 2)).astype(np.uint8)


# ------------------------------------------------------------------ packed <-> dense


def _to_units(spec: SparseSpec, tile: np.ndarray) -> np.ndarray:
    """Element bits ``[m, n_el]`` -> unit bits ``[m, n_el * eb / ub]`` (little-endian within elements)."""
    eb, ub = spec.element_bits, spec.unit_bits
    t = np.asarray(tile).astype(np.uint64)
    if eb == ub:
        return t
    if eb > ub:  # tf32: split into halves
        f = eb // ub
        sh = np.arange(f, dtype=np.uint64) * np.uint64(ub)
        return ((t[:, :, None] >> sh) & np.uint64((1 << ub) - 1)).reshape(t.shape[0], -1)
    f = ub // eb  # s4/u4: pairs form a byte
    sh = np.arange(f, dtype=np.uint64) * np.uint64(eb)
    parts = (t & np.uint64((1 << eb) - 1)).reshape(t.shape[0], -1, f)
    return (parts << sh).sum(axis=2, dtype=np.uint64)


def _from_units(spec: SparseSpec, units: np.ndarray) -> np.ndarray:
    eb, ub = spec.element_bits, spec.unit_bits
    u = np.asarray(units).astype(np.uint64)
    if eb == ub:
        return u
    if eb > ub:
        f = eb // ub
        sh = np.arange(f, dtype=np.uint64) * np.uint64(ub)
        return (u.reshape(u.shape[0], -1, f) << sh).sum(axis=2, dtype=np.uint64)
    f = ub // eb
    sh = np.arange(f, dtype=np.uint64) * np.uint64(eb)
    return ((u[:, :, None] >> sh) & np.uint64((1 << eb) - 1)).reshape(u.shape[0], -1)


def expand(spec: SparseSpec, packed: np.ndarray, fields: np.ndarray,
           valid: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Packed A bits ``[m, k/2]`` + fields ``[m, chunks]`` -> (dense A bits ``uint64[m, k]``, undefined ``bool[m, k]``).

    Kept unit j of chunk c goes to unit position ``4c + index_j``; the others are zero.
    A chunk whose field the spec calls invalid marks its own elements undefined (a D row
    that uses them is then UNDEF: the reference never invents a value for it).
    """
    pu = _to_units(spec, packed)
    m, ch = spec.m, spec.chunks
    if pu.shape != (m, 2 * ch):
        raise ValueError(f"packed A has {pu.shape[1]} units per row, expected {2 * ch}")
    f = np.asarray(fields).astype(np.int64)
    if valid is None:
        valid = field_valid(spec, f)
    dense = np.zeros((m, 4 * ch), np.uint64)
    rows = np.arange(m)[:, None]
    base = 4 * np.arange(ch)[None, :]
    i0, i1 = f & 3, (f >> 2) & 3
    dense[rows, base + i1] = pu[:, 1::2]
    dense[rows, base + i0] = pu[:, 0::2]
    bad_units = np.repeat(~np.asarray(valid, bool), 4, axis=1)
    dense_el = _from_units(spec, dense)
    ue = max(spec.element_bits // spec.unit_bits, 1)
    eu = max(spec.unit_bits // spec.element_bits, 1)
    bad_el = bad_units.reshape(m, -1, ue).any(axis=2) if ue > 1 else np.repeat(bad_units, eu, axis=1)
    return dense_el, bad_el


def keep_mask(spec: SparseSpec, fields: np.ndarray) -> np.ndarray:
    """bool ``[m, k]``: the dense A positions the metadata selects (``expand`` puts packed data there).

    The H100 forms no product at the other positions (docs/numerics.md), so this is the
    ``keep`` mask of ``hw_numerics``.  tf32: an element is selected when its units are
    (valid fields select both halves of one element); s4/u4: both elements of a unit.
    """
    f = np.asarray(fields).astype(np.int64)
    m, ch = spec.m, spec.chunks
    units = np.zeros((m, 4 * ch), bool)
    rows = np.arange(m)[:, None]
    base = 4 * np.arange(ch)[None, :]
    units[rows, base + (f & 3)] = True
    units[rows, base + ((f >> 2) & 3)] = True
    ue = max(spec.element_bits // spec.unit_bits, 1)
    eu = max(spec.unit_bits // spec.element_bits, 1)
    return units.reshape(m, -1, ue).any(axis=2) if ue > 1 else np.repeat(units, eu, axis=1)


def compress(spec: SparseSpec, dense: np.ndarray, fields: np.ndarray) -> np.ndarray:
    """Dense A bits ``[m, k]`` + valid fields -> packed bits ``[m, k/2]`` (inverse of ``expand`` on valid fields)."""
    du = _to_units(spec, dense)
    f = np.asarray(fields).astype(np.int64)
    rows = np.arange(spec.m)[:, None]
    base = 4 * np.arange(spec.chunks)[None, :]
    pu = np.zeros((spec.m, 2 * spec.chunks), np.uint64)
    pu[:, 0::2] = du[rows, base + (f & 3)]
    pu[:, 1::2] = du[rows, base + ((f >> 2) & 3)]
    return _from_units(spec, pu)


def random_fields(spec: SparseSpec, rng: np.random.Generator, ordered: bool = True) -> np.ndarray:
    """Valid fields ``[m, chunks]``: increasing index pairs, or any distinct pair (``ordered=False``)."""
    if spec.atype == "tf32":
        return rng.choice(np.array(TF32_VALID, np.uint8), size=(spec.m, spec.chunks))
    pairs = [(a, b) for a in range(4) for b in range(4) if a != b and (a < b or not ordered)]
    pick = rng.integers(0, len(pairs), size=(spec.m, spec.chunks))
    idx = np.array(pairs, np.uint8)[pick]
    return fields_from_indices(idx)
