"""wgmma data layouts as small values: register fragments, swizzles, shared-memory tiles.

CuTe's idea: a layout is a function from coordinates to an index (a register
slot, a byte address) that can be built, composed and tested on its own; the
interpreter only applies it.  Everything is vectorised over all 128 threads of
the warpgroup (or over all elements of a tile) with numpy.

Register fragments (seed 000, 9.7.15.5.1.1; figures missing, formulas from
shared/FACTS.md).  With thread t, warp w = t//32, lane l = t%32, g = l//4,
q = l%4, every wgmma fragment has the same shape: register r of a thread holds
32 contiguous bits of one row, P = 32/element_bits elements, and

    row = 16w + g + 8*(r % 2),      col = P*q + b + 4P*(r // 2)   (b = 0..P-1)

- accumulator D (f32/s32, and f16 packed in pairs): *checked on an H100* for every
  N (FACTS.md's formula, written per element i = P*r + b with P = 2; N = 8, 16 first,
  then every N of the catalogue: tests/hw_records/dense_wgmma.json, docs/hardware-facts.md).
- A in registers, k16 f16 and bf16: *checked* (P=2).
- A in registers, k8 tf32: *checked* (P=1).
- A in registers, k32 s8, u8, e4m3, e5m2: *checked* (P=4).
- A in registers, k256 b1: *checked* (dense_wgmma.json): seed 000 says four .b32
  registers of 32 .b1 elements each (a0..a127); the same 32-bits-per-register
  pattern gives P = 32, K = 4P*2 = 256, matching the instruction's K.

Sparse wgmma (a later issue) fits the same mould: its A fragment is
``quad_fragment`` over the compressed K with its own per-register count, and its
metadata layout becomes one more ``FragmentLayout`` of 2-bit indices.

Shared memory (seed 000, 9.7.15.5.1.2): canonical K-major and MN-major layouts
for the no-swizzle ("interleave"), 32B, 64B and 128B modes, followed by the
swizzle applied to the byte address.  Checked on an H100 (docs/hardware-facts.md):
K-major and MN-major in every mode (MN-major swizzled: LBO = stride between MN atoms,
SBO = stride between 8-row K groups), K-step starts at +32/64/96 bytes inside a swizzle
atom (tests/hw_records/dense_wgmma.json), and non-zero base offsets, as the phase
``((address >> 7) - base_offset) mod 2^bits`` (dense_wgmma_base_offset_explore.json).
"""
from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

import numpy as np

from fuzzptx.isa import ELEMENT_BITS

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


_FLAT: dict = {}


def flat_index(layout: FragmentLayout) -> np.ndarray:
    """``row * cols + col`` of every slot ``[128, slots]``: one ``take`` from a raveled tile instead
    of two-array indexing (cached per layout; the layouts themselves are cached)."""
    hit = _FLAT.get(id(layout))
    if hit is None or hit[0] is not layout:
        flat = (np.asarray(layout.row, np.intp) * layout.cols + np.asarray(layout.col, np.intp))
        hit = _FLAT[id(layout)] = (layout, np.ascontiguousarray(flat))
    return hit[1]


_LANE_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32}
_LITTLE = sys.byteorder == "little"  # element 0 of a register is its low bits: a view's first lane
_INV: dict = {}


def _inverse_index(layout: FragmentLayout) -> np.ndarray | None:
    """Per tile element (raveled), the flat slot ``thread * slots + slot`` holding it, when every
    element has exactly one slot (every wgmma fragment): ``scatter`` is then one ``take``.
    None otherwise.  Cached per layout, as ``flat_index``."""
    hit = _INV.get(id(layout))
    if hit is None or hit[0] is not layout:
        flat = flat_index(layout).ravel()
        inv = np.full(layout.rows * layout.cols, -1, np.intp)
        inv[flat] = np.arange(flat.size)
        ok = flat.size == inv.size and bool((inv >= 0).all())
        hit = _INV[id(layout)] = (layout, inv if ok else None)
    return hit[1]


def gather(layout: FragmentLayout, matrix: np.ndarray) -> np.ndarray:
    """Tile of element bits ``[rows, cols]`` -> registers ``uint32[128, nregs]`` (pure layout move)."""
    m = np.asarray(matrix)
    if m.shape != (layout.rows, layout.cols):
        raise ValueError(f"{layout.name}: tile shape {m.shape}, expected {(layout.rows, layout.cols)}")
    bits, per = layout.element_bits, layout.elements_per_register
    if m.dtype == np.uint32 and bits in _LANE_UINT and _LITTLE:  # whole-byte lanes: pack by a view
        elems = m.ravel().take(flat_index(layout))
        if bits != 32:
            elems = (elems & np.uint32((1 << bits) - 1)).astype(_LANE_UINT[bits])
        return elems.reshape(WARPGROUP, layout.nregs * per).view(np.uint32)
    elems = m.ravel().take(flat_index(layout)).astype(np.uint64) & np.uint64((1 << bits) - 1)
    if per == 1:  # one element per register: nothing to pack
        return elems.astype(np.uint32)
    shifts = (np.arange(per, dtype=np.uint64) * np.uint64(bits))
    packed = (elems.reshape(WARPGROUP, layout.nregs, per) << shifts).sum(axis=2, dtype=np.uint64)
    return packed.astype(np.uint32)


def scatter(layout: FragmentLayout, regs: np.ndarray) -> np.ndarray:
    """Registers ``[128, nregs]`` (b32 bits) -> tile of element bits ``uint32[rows, cols]``."""
    r = np.asarray(regs).astype(np.uint64)
    if r.shape != (WARPGROUP, layout.nregs):
        raise ValueError(f"{layout.name}: registers shape {r.shape}, expected {(WARPGROUP, layout.nregs)}")
    bits, per = layout.element_bits, layout.elements_per_register
    inv = _inverse_index(layout)
    if inv is not None and bits in _LANE_UINT and _LITTLE:  # whole-byte lanes: split by a view
        lanes = np.ascontiguousarray(r.astype(np.uint32)).view(_LANE_UINT[bits])  # [128, slots]
        return lanes.ravel().take(inv).astype(np.uint32).reshape(layout.rows, layout.cols)
    shifts = np.arange(per, dtype=np.uint64) * np.uint64(bits)
    elems = (r[:, :, None] >> shifts) & np.uint64((1 << bits) - 1)
    out = np.zeros((layout.rows, layout.cols), dtype=np.uint32)
    out[layout.row, layout.col] = elems.reshape(WARPGROUP, layout.slots)
    return out


def scatter_slots(layout: FragmentLayout, values: np.ndarray) -> np.ndarray:
    """Per-slot values ``[128, slots]`` (any dtype) -> tile ``[rows, cols]``, zero where no slot
    lands (``out[layout.row, layout.col] = values``; one ``take`` when the layout is a bijection)."""
    v = np.asarray(values)
    inv = _inverse_index(layout)
    if inv is not None and v.shape == (WARPGROUP, layout.slots):
        return v.ravel().take(inv).reshape(layout.rows, layout.cols)
    out = np.zeros((layout.rows, layout.cols), dtype=v.dtype)
    out[layout.row, layout.col] = v
    return out


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


def read_tile(smem: np.ndarray, layout: SmemLayout, mn_extent: int, k_extent: int) -> np.ndarray:
    """Element bits ``uint32[mn_extent, k_extent]`` read from a shared-memory byte image (little-endian)."""
    mem = np.asarray(smem, dtype=np.uint8)
    mn, k = tile_coords(mn_extent, k_extent)
    addr, eb = layout.address(mn, k), layout.element_bits
    nbytes = max(1, eb // 8)
    if np.any(addr < 0) or np.any(addr + nbytes > mem.size):
        raise IndexError(f"tile reaches outside shared memory of {mem.size} bytes")
    val = np.zeros(addr.shape, dtype=np.uint64)
    for i in range(nbytes):
        val |= mem[addr + i].astype(np.uint64) << np.uint64(8 * i)
    if eb < 8:
        val = (val >> layout.bit_in_byte(mn, k).astype(np.uint64)) & np.uint64((1 << eb) - 1)
    return val.astype(np.uint32)


def write_tile(smem: np.ndarray, layout: SmemLayout, tile: np.ndarray) -> None:
    """Store element bits ``tile[mn, k]`` into a shared-memory byte image in place (inverse of read_tile)."""
    t = np.asarray(tile).astype(np.uint64)
    mn, k = tile_coords(*t.shape)
    addr, eb = layout.address(mn, k), layout.element_bits
    if eb < 8:
        bit = layout.bit_in_byte(mn, k)
        mask = ((1 << eb) - 1) << bit
        flat_a, flat_m = addr.ravel(), mask.ravel()
        flat_v = ((t & np.uint64((1 << eb) - 1)).astype(np.int64) << bit).ravel()
        np.bitwise_and.at(smem, flat_a, (~flat_m & 0xFF).astype(np.uint8))
        np.bitwise_or.at(smem, flat_a, flat_v.astype(np.uint8))
        return
    for i in range(eb // 8):
        smem[addr + i] = ((t >> np.uint64(8 * i)) & np.uint64(0xFF)).astype(np.uint8)
