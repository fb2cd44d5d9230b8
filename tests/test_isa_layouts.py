"""fuzzptx.isa.layouts / isa.encoding against the facts checked on an H100 (shared/FACTS.md "wgmma layouts"),
each written out here independently of the module's own arithmetic."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fuzzptx.isa import encoding as E
from fuzzptx.isa.layouts import SWIZZLES, MatrixDescriptor, SmemLayout, tile_coords


@given(st.integers(0, (1 << 64) - 1))
def test_decode_encode_round_trips_every_64_bit_value(value: int) -> None:
    assert MatrixDescriptor.decode(value).encode() == value


@given(st.integers(0, (1 << 14) - 1), st.integers(0, (1 << 14) - 1), st.integers(0, (1 << 14) - 1),
       st.integers(0, 7), st.sampled_from(E.SWIZZLE_MODES))
def test_encode_decode_round_trips_representable_fields(s: int, lbo: int, sbo: int, base: int, swz: str) -> None:
    d = MatrixDescriptor(s << 4, lbo << 4, sbo << 4, base, swz)
    assert d.representable and MatrixDescriptor.decode(d.encode()) == d


def test_descriptor_bit_fields_as_facts_state() -> None:
    """bits 0-13 (start & 0x3FFFF) >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4, 49-51 base offset,
    62-63 swizzle (0 none, 1 128B, 2 64B, 3 32B)."""
    for swz, code in (("none", 0), ("128B", 1), ("64B", 2), ("32B", 3)):
        d = MatrixDescriptor(start=0x41230, lbo=128, sbo=256, base_offset=5, swizzle=swz)
        want = ((0x41230 & 0x3FFFF) >> 4) | (128 >> 4) << 16 | (256 >> 4) << 32 | 5 << 49 | code << 62
        assert d.encode() == want
        assert E.descriptor_field(want, E.SWIZZLE_FIELD) == code
        assert E.descriptor_field(want, E.BASE_OFFSET_FIELD) == 5
        assert E.descriptor_field(want, E.START_FIELD) == 0x1230 >> 4
    assert E.RESERVED_MASK == ((1 << 64) - 1) & ~(0x3FFF | 0x3FFF << 16 | 0x3FFF << 32 | 0x7 << 49 | 0x3 << 62)
    assert MatrixDescriptor(0, 0, 0, reserved=1 << 14).encode() == 1 << 14


def test_checker_reads_the_same_table() -> None:
    from fuzzptx.oracles.checker import spec_rules

    assert spec_rules.RESERVED_MASK == E.RESERVED_MASK
    assert spec_rules.SWIZZLE_BYTES == {1: 1024, 2: 512, 3: 256}


@pytest.mark.parametrize("mode,chunk_bits", [("none", 0), ("32B", 1), ("64B", 2), ("128B", 3)])
def test_swizzle_xors_chunk_bits_with_line_bits(mode: str, chunk_bits: int) -> None:
    """128B: bits 4-6 ^= bits 7-9; 64B: bits 4-5 ^= 7-8; 32B: bit 4 ^= bit 7 (Swizzle<B,4,3>)."""
    mask = (1 << chunk_bits) - 1
    addrs = np.arange(0, 1 << 13)
    want = addrs ^ (((addrs >> 7) & mask) << 4)
    assert np.array_equal(SWIZZLES[mode](addrs), want)
    assert SWIZZLES[mode].apply(0x3F0) == int(want[0x3F0])
    if mode != "none":
        assert SWIZZLES[mode].atom_bytes == E.PATTERN_ALIGN[mode] == 128 * E.PATTERN_LINES[mode]


def test_swizzle_base_offset_rephases_the_pattern() -> None:
    swz = SWIZZLES["128B"]
    assert swz.apply(0x280, base_offset=5) == 0x280  # line 5 is row 0 of a pattern starting there
    assert swz.apply(0x280) == 0x280 ^ (5 << 4)


@pytest.mark.parametrize("eb", [8, 16, 32])
def test_k_major_no_swizzle_core_matrices(eb: int) -> None:
    """byte of (n, k) = (n%8)*16 + (k*s)%16 + ((k*s)//16)*LBO + (n//8)*SBO."""
    s, lbo, sbo = eb // 8, 128, 256
    n, k = tile_coords(16, 64 // s)
    want = (n % 8) * 16 + (k * s) % 16 + ((k * s) // 16) * lbo + (n // 8) * sbo
    assert np.array_equal(SmemLayout("K", "none", eb, lbo, sbo).address(n, k), want)


@pytest.mark.parametrize("mode", ["32B", "64B", "128B"])
def test_k_major_swizzled(mode: str) -> None:
    """o = (n//8)*SBO + (n%8)*W + (k*s)%W, SBO = 8W, then the swizzle on the byte address."""
    W, s = {"32B": 32, "64B": 64, "128B": 128}[mode], 2
    sbo = 8 * W
    n, k = tile_coords(16, W // s)
    o = (n // 8) * sbo + (n % 8) * W + (k * s) % W
    want = o ^ (((o >> 7) & (E.PATTERN_LINES[mode] - 1)) << 4)
    assert np.array_equal(SmemLayout("K", mode, 16, 1, sbo).address(n, k), want)


def test_mn_major_no_swizzle() -> None:
    """byte of (n, k) = (k%8)*16 + (n*s)%16 + ((n*s)//16)*SBO + (k//8)*LBO."""
    s, lbo, sbo = 2, 128, 256
    n, k = tile_coords(16, 16)
    want = (k % 8) * 16 + (n * s) % 16 + ((n * s) // 16) * sbo + (k // 8) * lbo
    assert np.array_equal(SmemLayout("MN", "none", 16, lbo, sbo).address(n, k), want)


def test_descriptor_describes_its_layout() -> None:
    d = MatrixDescriptor(start=1024, lbo=128, sbo=256, swizzle="none")
    assert d.smem_layout("K", 16) == SmemLayout("K", "none", 16, 128, 256, 1024, 0)
    assert MatrixDescriptor(1024 + 128, 16, 1024, 0, "128B").issues()  # off its 1024-byte boundary
    assert not MatrixDescriptor(1024 + 128, 16, 1024, 1, "128B").issues()
