"""The one table of wgmma's data layouts: register fragments, swizzles, shared-memory tiles, descriptors.

Every reader (the reference interpreter, the strategies, the kernel builders, the checker)
imports these values from here, so an encoding is typed once.  Facts: /work/shared/FACTS.md
"wgmma layouts"; checked on an H100 (docs/hardware-facts.md, tests/hw_records/).

Descriptor bit fields (seed 000, 9.7.15.5.1.2.2; base offset included:
tests/hw_records/dense_wgmma_base_offset_explore.json):
  0-13 start >> 4 | 16-29 LBO >> 4 | 32-45 SBO >> 4 | 49-51 base offset | 62-63 swizzle
where each address field is ``matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4``.
All other bits are reserved; ``reserved`` keeps them so decode/encode round-trip any
64-bit value (a fuzzer may set them on purpose).

Swizzles are CuTe's ``Swizzle<B,M,S>`` on byte addresses; tile layouts map (mn, k) of an
operand tile to a byte address (K-major / MN-major, LBO / SBO), as seed 000's canonical
layouts.  numpy is used for vectorised addresses; ``fuzzptx.isa``'s package ``__init__``
does not import this module, so the CLI stays free of numpy.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .model import ELEMENT_BITS

from .encoding import (  # noqa: F401 - re-exported: one import for every layout fact
    FIELD14, K_STEP_BYTES, PATTERN_ALIGN, PATTERN_LINES, RESERVED_MASK, SWIZZLE_CODES, SWIZZLE_MODES, SWIZZLE_NAMES,
    descriptor_encode,
)

WARPGROUP = 128
M_TILE = 64  # every wgmma shape is m64

# ---------------------------------------------------------------- register fragments


@dataclass(frozen=True, eq=False)
class FragmentLayout:
    """Where each register element of each thread lives in a ``rows x cols`` tile.

    ``row[t, s]``, ``col[t, s]``: tile coordinate of element slot s (0..slots-1) of thread t.
    Slot s sits in register ``s // elements_per_register`` at bit offset
    ``(s % elements_per_register) * element_bits`` (little-endian packing).
    """

    name: str
    rows: int
    cols: int
    element_bits: int
    row: np.ndarray
    col: np.ndarray
    checked: bool  # verified on an H100 (FACTS.md), or derived from the spec text

    @property
    def slots(self) -> int:
        return self.row.shape[1]

    @property
    def elements_per_register(self) -> int:
        return 32 // self.element_bits

    @property
    def nregs(self) -> int:
        return self.slots // self.elements_per_register

    def owner(self) -> tuple[np.ndarray, np.ndarray]:
        """Inverse map: ``(thread[rows, cols], slot[rows, cols])`` holding each tile element."""
        thread = np.full((self.rows, self.cols), -1, dtype=np.int64)
        slot = np.full((self.rows, self.cols), -1, dtype=np.int64)
        t, s = np.meshgrid(np.arange(WARPGROUP), np.arange(self.slots), indexing="ij")
        thread[self.row, self.col] = t
        slot[self.row, self.col] = s
        return thread, slot


def quad_fragment(per_reg: int, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """The one wgmma fragment pattern: (row, col) arrays [128, slots] for ``per_reg`` elements per 32 bits."""
    t = np.arange(WARPGROUP)[:, None]
    s = np.arange(slots)[None, :]
    w, lane = t // 32, t % 32
    g, q = lane // 4, lane % 4
    r, b = s // per_reg, s % per_reg
    row = 16 * w + g + 8 * (r % 2)
    col = per_reg * q + b + 4 * per_reg * (r // 2)
    out = np.broadcast_to(row, (WARPGROUP, slots)).copy(), np.broadcast_to(col, (WARPGROUP, slots)).copy()
    for arr in out:
        arr.flags.writeable = False  # layouts are cached values: never mutate them
    return out


ACCUMULATOR_TYPES = ("f32", "s32", "f16")
# A-in-register types -> whether the layout was checked on an H100 (docs/hardware-facts.md).
A_REGISTER_TYPES = {"f16": True, "bf16": True, "tf32": True, "s8": True, "u8": True,
                    "e4m3": True, "e5m2": True, "b1": True}  # all: tests/hw_records/dense_wgmma.json


@functools.lru_cache(maxsize=None)
def accumulator_layout(dtype: str, n: int) -> FragmentLayout:
    """D fragment of ``wgmma .m64nN`` for ``dtype`` in f32/s32 (N/2 regs) or f16 (N/4 f16x2 regs)."""
    dtype = dtype.lstrip(".")
    if dtype not in ACCUMULATOR_TYPES:
        raise ValueError(f"no wgmma accumulator of type {dtype!r}")
    if n % 8 or not 8 <= n <= 256:
        raise ValueError(f"wgmma N must be a multiple of 8 in 8..256, not {n}")
    row, col = quad_fragment(2, n // 2)  # the element pattern is the same for every dtype
    bits = ELEMENT_BITS[dtype]
    return FragmentLayout(f"D.{dtype}.n{n}", M_TILE, n, bits, row, col, checked=True)  # every N: dense_wgmma.json


@functools.lru_cache(maxsize=None)
def a_fragment_layout(atype: str) -> FragmentLayout:
    """A-in-registers fragment: four b32 registers holding one 64 x (128 bits / element) slice."""
    atype = atype.lstrip(".")
    if atype not in A_REGISTER_TYPES:
        raise ValueError(f"no wgmma A-in-registers fragment for type {atype!r}")
    bits = ELEMENT_BITS[atype]
    per_reg = 32 // bits
    row, col = quad_fragment(per_reg, 4 * per_reg)
    return FragmentLayout(f"A.{atype}", M_TILE, 8 * per_reg, bits, row, col, checked=A_REGISTER_TYPES[atype])



# ---------------------------------------------------------------- swizzle


@dataclass(frozen=True)
class Swizzle:
    """CuTe's ``Swizzle<bits, base, shift>`` on byte addresses: ``x ^ ((x & yyy) >> shift)``.

    ``yyy`` = ``bits`` ones at bit ``base + shift``: wgmma's modes XOR the 16-byte chunk
    index (bits 4..) with the 128-byte line index (bits 7..) inside an atom of
    ``atom_bytes`` = 2**(base+shift+bits) bytes.
    """

    bits: int
    base: int
    shift: int

    @property
    def atom_bytes(self) -> int:
        return 1 << (self.base + self.shift + self.bits)

    @property
    def line_bytes(self) -> int:
        """The unit ``base_offset`` counts in (128 B for wgmma's modes)."""
        return 1 << (self.base + self.shift)

    def phase(self, addr: np.ndarray, base_offset: int = 0) -> np.ndarray:
        """The row phase XORed into the chunk bits: ``((addr >> (base+shift)) - base_offset) mod 2**bits``."""
        a = np.asarray(addr, dtype=np.int64)
        return ((a >> (self.base + self.shift)) - base_offset) & ((1 << self.bits) - 1)

    def __call__(self, addr: np.ndarray | int, base_offset: int = 0) -> np.ndarray:
        """Swizzle byte addresses; ``base_offset`` re-phases a pattern not starting on an atom boundary.

        Seed 000 (matrix descriptor): base offset is 0 when the pattern starts on a
        1024/512/256-byte boundary (128B/64B/32B), else ``(pattern start >> 7) & 7``.
        Read literally, a pattern whose row 0 sits at 128-byte line ``base_offset``
        swizzles row r with phase r, i.e. the address's line index minus
        ``base_offset``.  *Checked on an H100* for base_offset != 0, aligned tiles included
        (tests/hw_records/dense_wgmma_base_offset_explore.json).
        """
        a = np.asarray(addr, dtype=np.int64)
        return a ^ (self.phase(a, base_offset) << self.base)

    def apply(self, byte_offset: int, base_offset: int = 0) -> int:
        """One swizzled byte address as a Python int (``__call__`` takes whole arrays)."""
        return int(self(byte_offset, base_offset))


SWIZZLES: dict[str, Swizzle] = {
    "none": Swizzle(0, 4, 3),
    "32B": Swizzle(1, 4, 3),
    "64B": Swizzle(2, 4, 3),
    "128B": Swizzle(3, 4, 3),
}
ROW_BYTES = {"none": 16, "32B": 32, "64B": 64, "128B": 128}  # W: bytes of one atom row


# ---------------------------------------------------------------- shared-memory canonical layouts


@dataclass(frozen=True)
class SmemLayout:
    """A canonical wgmma shared-memory layout: ``(mn, k)`` of an MxK / NxK tile -> byte address.

    ``major``: ``"K"`` (imm-trans 0) or ``"MN"`` (imm-trans 1).  ``lbo``/``sbo``/``start`` in
    bytes, as the descriptor holds them after decoding.  In CuTe's notation (seed 000,
    Canonical Layouts; T = elements per 16 bytes, W = atom row bytes):

    K-major none: ((8,m),(T,2k)):((1T,SBO),(1,LBO))   K-major swizzled: ((8,m),(T,2k)):((W/16·T,SBO),(1,T))
    MN-major none: ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)) MN-major swizzled: ((T,W/16,m),(8,k)):((1,T,LBO),(W/16·T,SBO))
    then ``SWIZZLES[swizzle]`` on the absolute byte address, re-phased by ``base_offset``.
    K-major swizzled tiles hold at most W bytes of K (one instruction reads 32 bytes).
    """

    major: str
    swizzle: str
    element_bits: int
    lbo: int
    sbo: int
    start: int = 0
    base_offset: int = 0

    def __post_init__(self) -> None:
        if self.major not in ("K", "MN"):
            raise ValueError(f"major must be 'K' or 'MN', not {self.major!r}")
        if self.swizzle not in SWIZZLES:
            raise ValueError(f"swizzle must be one of {tuple(SWIZZLES)}, not {self.swizzle!r}")

    @property
    def row_bytes(self) -> int:
        return ROW_BYTES[self.swizzle]

    def bit_offset(self, mn: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Unswizzled bit offset from ``start`` of element (mn, k) (bits: b1 elements are sub-byte)."""
        mn = np.asarray(mn, dtype=np.int64)
        k = np.asarray(k, dtype=np.int64)
        W, eb = self.row_bytes, self.element_bits
        lead = (k if self.major == "K" else mn) * eb  # bits along the contiguous dimension
        other = mn if self.major == "K" else k  # the 8-row dimension
        byte_in_row, sub = lead // 8, lead % 8
        if self.swizzle == "none":
            core = (other % 8) * 16 + byte_in_row % 16
            lead_step, other_step = (self.lbo, self.sbo) if self.major == "K" else (self.sbo, self.lbo)
            off = core + (byte_in_row // 16) * lead_step + (other // 8) * other_step
        else:
            if self.major == "K" and np.any(byte_in_row >= W):
                raise ValueError(f"K-major {self.swizzle} tile holds at most {W} bytes of K")
            core = (other % 8) * W + byte_in_row % W
            lead_step, other_step = (0, self.sbo) if self.major == "K" else (self.lbo, self.sbo)
            off = core + (byte_in_row // W) * lead_step + (other // 8) * other_step
        return off * 8 + sub

    def address(self, mn: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Byte address holding element (mn, k) after the swizzle (for b1: the byte holding its bit)."""
        raw = self.start + self.bit_offset(mn, k) // 8
        bo = 0 if self.swizzle == "none" else self.base_offset
        return SWIZZLES[self.swizzle](raw, bo)

    def bit_in_byte(self, mn: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Bit position of a sub-byte element inside its byte (0 for 8-bit and wider types)."""
        return self.bit_offset(mn, k) % 8


def tile_byte_offsets(major: str, swizzle: str, element_bits: int, lbo: int, sbo: int, mn_extent: int,
                      k_extent: int) -> tuple[np.ndarray, np.ndarray]:
    """``divmod(SmemLayout(major, swizzle, element_bits, lbo, sbo).bit_offset(*tile_coords(mn, k)), 8)``:
    (unswizzled byte offset, bit in byte) of every element of a tile.

    ``bit_offset`` is ``core + i_lead * lead_step + i_other * other_step`` (bytes) plus the
    bit in the byte, where only the steps (LBO/SBO) vary between programs: the rest is cached
    per shape (``_offset_terms``), leaving two multiply-adds per tile.  Same integers, and the
    same ValueError for a K-major swizzled tile wider than its atom row."""
    core, i_lead, i_other, sub = _offset_terms(major, swizzle, element_bits, mn_extent, k_extent)
    W = ROW_BYTES[swizzle]
    if major == "K" and swizzle != "none" and mn_extent > 0 and k_extent > 0 and (k_extent - 1) * element_bits // 8 >= W:
        raise ValueError(f"K-major {swizzle} tile holds at most {W} bytes of K")
    if swizzle == "none":
        lead_step, other_step = (lbo, sbo) if major == "K" else (sbo, lbo)
    else:
        lead_step, other_step = (0, sbo) if major == "K" else (lbo, sbo)
    off = i_lead * np.int64(lead_step)
    off += core
    off += i_other * np.int64(other_step)
    return off, sub


_TERMS: dict = {}


def _offset_terms(major: str, swizzle: str, element_bits: int, mn_extent: int, k_extent: int) -> tuple:
    """The LBO/SBO-free terms of ``SmemLayout.bit_offset`` on a tile (read-only views): core
    bytes, the lead and other step counts, and the bit in the byte.  Each is a function of
    the element's (mn, k) alone, so one table per (major, swizzle, width), grown to the
    largest tile asked for, serves every tile as its top-left corner."""
    key = (major, swizzle, element_bits)
    hit = _TERMS.get(key)
    if hit is None or mn_extent > hit[0] or k_extent > hit[1]:
        old = hit[:2] if hit else (0, 0)
        caps = (_pow2_at_least(max(mn_extent, old[0], 64)), _pow2_at_least(max(k_extent, old[1], 32)))
        hit = _TERMS[key] = caps + (_offset_table(major, swizzle, element_bits, *caps),)
    return tuple(arr[:mn_extent, :k_extent] for arr in hit[2])


def _pow2_at_least(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def _offset_table(major: str, swizzle: str, element_bits: int, mn_extent: int, k_extent: int) -> tuple:
    """``_offset_terms`` of one tile: ``SmemLayout.bit_offset``'s arithmetic without the steps."""
    mn, k = tile_coords(mn_extent, k_extent)
    mn = np.asarray(mn, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64)
    W, eb = ROW_BYTES[swizzle], element_bits
    lead = (k if major == "K" else mn) * eb
    other = mn if major == "K" else k
    byte_in_row, sub = lead // 8, lead % 8
    if swizzle == "none":
        core, i_lead = (other % 8) * 16 + byte_in_row % 16, byte_in_row // 16
    else:
        core, i_lead = (other % 8) * W + byte_in_row % W, byte_in_row // W
    out = (core, i_lead, other // 8, sub)
    for arr in out:
        arr.flags.writeable = False
    return out


def smem_address(major: str, swizzle: str, mn: np.ndarray, k: np.ndarray, element_bits: int,
                 lbo: int, sbo: int, start: int = 0, base_offset: int = 0) -> np.ndarray:
    """Byte address of element (mn, k) of a canonical layout (``SmemLayout`` as one call)."""
    return SmemLayout(major, swizzle, element_bits, lbo, sbo, start, base_offset).address(mn, k)


def tile_coords(mn_extent: int, k_extent: int) -> tuple[np.ndarray, np.ndarray]:
    """All (mn, k) of a tile as two ``[mn_extent, k_extent]`` index arrays."""
    return np.meshgrid(np.arange(mn_extent), np.arange(k_extent), indexing="ij")



# ---------------------------------------------------------------- matrix descriptor

@dataclass(frozen=True)
class MatrixDescriptor:
    """A wgmma matrix descriptor, byte-valued fields (``start``, ``lbo``, ``sbo`` in bytes)."""

    start: int
    lbo: int
    sbo: int
    base_offset: int = 0
    swizzle: str = "none"  # 'none' | '128B' | '64B' | '32B'
    reserved: int = 0  # raw bits outside the defined fields

    def __post_init__(self) -> None:
        if self.swizzle not in SWIZZLE_CODES:
            raise ValueError(f"swizzle must be one of {tuple(SWIZZLE_CODES)}, not {self.swizzle!r}")

    def encode(self) -> int:
        """The 64-bit value, fields encoded exactly as the spec's formula (masking, not checking)."""
        return (
            descriptor_encode(self.start)
            | descriptor_encode(self.lbo) << 16
            | descriptor_encode(self.sbo) << 32
            | (self.base_offset & 0x7) << 49
            | SWIZZLE_CODES[self.swizzle] << 62
            | (self.reserved & RESERVED_MASK)
        )

    @staticmethod
    def decode(value: int) -> "MatrixDescriptor":
        """Fields of a 64-bit descriptor (address fields back in bytes)."""
        if not 0 <= value < 1 << 64:
            value &= (1 << 64) - 1  # a signed .s64 register holds the same bits
        return MatrixDescriptor(
            start=(value & FIELD14) << 4,
            lbo=((value >> 16) & FIELD14) << 4,
            sbo=((value >> 32) & FIELD14) << 4,
            base_offset=(value >> 49) & 0x7,
            swizzle=SWIZZLE_NAMES[(value >> 62) & 0x3],
            reserved=value & RESERVED_MASK,
        )

    @property
    def representable(self) -> bool:
        """True when ``decode(encode())`` gives this descriptor back (fields fit their encodings)."""
        return MatrixDescriptor.decode(self.encode()) == self

    def smem_layout(self, major: str, element_bits: int) -> SmemLayout:
        """The canonical shared-memory layout this descriptor describes for an operand."""
        return SmemLayout(major, self.swizzle, element_bits, self.lbo, self.sbo, self.start, self.base_offset)

    def issues(self) -> tuple[str, ...]:
        """Rule violations of the descriptor alone, as ``"rule-id: reason"`` strings (empty = fine).

        The start is assumed to be the tile's first element (row 0 of a swizzle pattern).
        """
        out: list[str] = []
        for name in ("start", "lbo", "sbo"):
            v = getattr(self, name)
            if v % 16:
                out.append(f"desc.align16.{name}: {name}={v:#x} is not 16-byte aligned (low 4 bits are dropped)")
            if not 0 <= v < 1 << 18:
                out.append(f"desc.range.{name}: {name}={v:#x} does not fit 18 bits (encode masks it)")
        if not 0 <= self.base_offset <= 7:
            out.append(f"desc.range.base_offset: base_offset={self.base_offset} does not fit 3 bits")
        if self.reserved:
            out.append(f"desc.reserved: reserved bits set ({self.reserved:#x})")
        if self.swizzle == "none":
            if self.base_offset:
                out.append("desc.base_offset.no_swizzle: base offset is only valid with a swizzling mode")
        else:
            out.extend(self.pattern_issues())
        return tuple(out)

    def pattern_issues(self) -> list[str]:
        """Seed 000: base offset is 0 iff the pattern starts on its boundary, else (start >> 7) & 7.

        Only the line bits the mode uses are compared (bit 7 for 32B, 7-8 for 64B, 7-9 for
        128B): e.g. a 64B pattern at 1536 is 512-aligned although ``(1536 >> 7) & 7 == 4``.
        """
        swz = SWIZZLES[self.swizzle]
        phase = int(swz.phase(self.start, self.base_offset))
        if phase == 0:
            return []
        want = (self.start >> 7) & 0x7
        align = PATTERN_ALIGN[self.swizzle]
        if self.base_offset == 0:
            return [f"desc.base_offset.misaligned: {self.swizzle} pattern at {self.start:#x} is not "
                    f"{align}-byte aligned; base offset must be {want}, not 0"]
        return [f"desc.base_offset.mismatch: base offset {self.base_offset} does not match the "
                f"pattern start {self.start:#x} (expected {want})"]


def decode(value: int) -> MatrixDescriptor:
    return MatrixDescriptor.decode(value)
