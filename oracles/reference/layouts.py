"""wgmma data layouts applied by the interpreter: gather/scatter of register fragments, reading and
writing shared-memory tiles.  The layouts themselves (fragments, swizzles, tiles) are values in
``fuzzptx.isa.layouts``, re-exported here; what follows describes them and where each was checked.

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

import sys

import numpy as np

from fuzzptx.isa.layouts import (  # noqa: F401 - re-exported: readers of the reference take them here
    A_REGISTER_TYPES, ACCUMULATOR_TYPES, M_TILE, ROW_BYTES, SWIZZLES, WARPGROUP, FragmentLayout, SmemLayout, Swizzle,
    a_fragment_layout, accumulator_layout, quad_fragment, smem_address, tile_byte_offsets, tile_coords,
)

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


# ---------------------------------------------------------------- shared-memory tiles (layouts in fuzzptx.isa.layouts)


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
