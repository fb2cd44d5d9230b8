"""Shared-memory operand tiles and the wgmma descriptors that describe them.

A ``SmemTile`` is a value: element type, logical extent (MN rows x K elements)
and a canonical ``SmemLayout`` (helper "layouts"'s oracle: major-ness, swizzle,
LBO/SBO, start, base offset).  A program copies a global buffer byte for byte
into shared memory, so the tile's *contents* are that buffer's bytes and the
descriptor describes exactly the bytes the program wrote: ``footprint`` says
how many bytes must be written, ``address`` which byte holds which element.

Shrinking: ``descriptors()`` draws K-major before MN-major, no swizzle before
32B/64B/128B, the inner dimension K first, no padding, offset 0, base offset 0.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np
from hypothesis import event, strategies as st

from fuzzptx.isa import ELEMENT_BITS
from fuzzptx.isa.layouts import PATTERN_ALIGN, ROW_BYTES, MatrixDescriptor, SmemLayout, tile_coords

#: Simplest first (the shrinking order).
SWIZZLES: tuple[str, ...] = ("none", "32B", "64B", "128B")
MAJORS: tuple[str, ...] = ("K", "MN")
ORDERS: tuple[str, ...] = ("k_inner", "mn_inner")
# (major, swizzle, inner dimension, padding 0..2) and (start 0..2 patterns, off the pattern
# boundary, lines past it 1..7) as mixed-radix digits; index 0 is the simplest tile.
_LAYOUTS = st.integers(0, len(MAJORS) * len(SWIZZLES) * len(ORDERS) * 3 - 1)
_PLACES = st.integers(0, 3 * 2 * 7 - 1)


@dataclass(frozen=True)
class SmemTile:
    """An ``mn`` x ``k`` operand tile (A: M x K, B: N x K) laid out in one shared array.

    ``layout.start`` is the tile's byte offset inside its 1024-byte-aligned array, so
    swizzle phases computed on offsets equal those on absolute addresses.
    """

    elem: str
    mn: int
    k: int
    layout: SmemLayout

    @property
    def major(self) -> str:
        return self.layout.major

    @property
    def swizzle(self) -> str:
        return self.layout.swizzle

    @property
    def start(self) -> int:
        return self.layout.start

    def address(self, mn, k):
        return self.layout.address(mn, k)

    def footprint(self) -> int:
        """One past the last byte the tile reads, rounded up to 16 bytes."""
        return _footprint(self)

    def slice(self, j: int, k: int) -> "SmemTile":
        """The j-th K-slice of ``k`` elements: the same layout with the start moved onto it."""
        first = int(self.layout.bit_offset(np.int64(0), np.int64(j * k))) // 8
        return SmemTile(self.elem, self.mn, k, replace(self.layout, start=self.layout.start + first))

    def descriptor(self) -> MatrixDescriptor:
        """The descriptor (start = offset inside the array; the kernel adds the array's address)."""
        lay = self.layout
        return MatrixDescriptor(lay.start, lay.lbo, lay.sbo, lay.base_offset, lay.swizzle)


@functools.lru_cache(maxsize=4096)
def _footprint(tile: SmemTile) -> int:
    # A pure function of a frozen tile, asked for by the buffer sizes and the copy loop;
    # the address map behind it is numpy work over every element.
    mn, k = tile_coords(tile.mn, tile.k)
    top = int(tile.address(mn, k).max()) + max(1, ELEMENT_BITS[tile.elem] // 8)
    return -(-top // 16) * 16


def legal_swizzles(elem: str, k_total: int, major: str) -> tuple[str, ...]:
    """Modes whose atom row holds a K-major tile's whole K extent (all modes for MN-major)."""
    if major == "MN":
        return SWIZZLES
    kbytes = k_total * ELEMENT_BITS[elem] // 8
    return tuple(s for s in SWIZZLES if s == "none" or kbytes <= ROW_BYTES[s])


def canonical_layout(elem: str, mn: int, k: int, major: str, swizzle: str, order: str = "k_inner",
                     pad: int = 0) -> SmemLayout:
    """Dense canonical LBO/SBO for an mn x k tile; ``order`` picks the inner dimension, ``pad`` adds gaps."""
    bits = ELEMENT_BITS[elem]
    w = ROW_BYTES[swizzle]
    lead_bytes = (k if major == "K" else mn) * bits // 8  # bytes along the contiguous dimension
    other = mn if major == "K" else k  # the 8-row dimension
    if swizzle == "none":
        chunks, groups = -(-lead_bytes // 16), -(-other // 8)
        lead_inner = order == ("k_inner" if major == "K" else "mn_inner")
        lead_step, other_step = (128, 128 * chunks + 128 * pad) if lead_inner else (128 * groups + 128 * pad, 128)
        # K-major: LBO steps 16-byte K chunks, SBO 8-row MN groups; MN-major the other way round.
        lbo, sbo = (lead_step, other_step) if major == "K" else (other_step, lead_step)
        return SmemLayout(major, swizzle, bits, lbo, sbo)
    if major == "K":
        return SmemLayout(major, swizzle, bits, 16, 8 * w * (1 + pad))
    atoms, groups = -(-lead_bytes // w), -(-other // 8)
    if order == "mn_inner":
        return SmemLayout(major, swizzle, bits, 8 * w, 8 * w * atoms + 8 * w * pad)
    return SmemLayout(major, swizzle, bits, 8 * w * groups + 8 * w * pad, 8 * w)


def descriptors(elem: str = "f16", mn: int = 8, k: int = 16, *, slices: int = 1,
                allow_mn_major: bool = True) -> st.SearchStrategy[SmemTile]:
    """A legal tile of ``mn`` x ``k * slices`` elements with its descriptor fields (see ``_tiles``)."""
    return _tiles_cached(elem, mn, k, slices, allow_mn_major)


@functools.lru_cache(maxsize=4096)
def _tiles_cached(elem: str, mn: int, k: int, slices: int, allow_mn_major: bool) -> st.SearchStrategy[SmemTile]:
    # One strategy object per tile shape: a new one is validated on its first draw.
    return _tiles(elem, mn, k, slices=slices, allow_mn_major=allow_mn_major)


@st.composite
def _tiles(draw, elem: str = "f16", mn: int = 8, k: int = 16, *, slices: int = 1,
           allow_mn_major: bool = True) -> SmemTile:
    """A legal tile of ``mn`` x ``k * slices`` elements with its descriptor fields.

    Starts are 16-byte aligned: on the swizzle pattern's boundary (base offset 0),
    or — a digit the shrinker clears — some 128-byte lines past it with
    the base offset the PTX ISA formula gives, ``(start >> 7) & 7``.
    """
    # The same two draws whatever the element type and extent (choices illegal for this tile
    # fall back to the simplest legal one), so the shrinker can swap the form under a fixed
    # tile.  Each draw packs several small choices as digits, the simplest-first one highest
    # (one draw costs more than the arithmetic: generation profile, benchmarks/README.md).
    i = draw(_LAYOUTS)
    major, swizzle, order, pad = MAJORS[i // 24], SWIZZLES[i // 6 % 4], ORDERS[i // 3 % 2], i % 3
    if not allow_mn_major:
        major = "K"
    ktot = k * slices
    if swizzle not in legal_swizzles(elem, ktot, major):
        swizzle = "none"
    layout = canonical_layout(elem, mn, ktot, major, swizzle, order, pad)
    align = PATTERN_ALIGN.get(swizzle, 128)
    j = draw(_PLACES)
    start, off_boundary, line = j // 14 * align, j // 7 % 2 == 1, 1 + j % 7
    line = min(line, align // 128 - 1) if off_boundary and align > 128 else 0
    layout = replace(layout, start=start + 128 * line, base_offset=(start + 128 * line) >> 7 & 7 if line else 0)
    event(f"swizzle={swizzle}")
    event(f"major={major}")
    if line:
        event("base_offset!=0")
    return SmemTile(elem, mn, ktot, layout)


__all__ = ["SmemTile", "descriptors", "canonical_layout", "legal_swizzles", "SWIZZLES", "MAJORS"]
