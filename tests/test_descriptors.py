"""The wgmma matrix descriptor: bit positions from FACTS.md, round trips, validity rules."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from fuzzptx.oracles.reference import layouts as L
import numpy as np

from fuzzptx.oracles.reference.descriptors import MatrixDescriptor, RESERVED_MASK, decode, read_operand

addr18 = st.integers(0, (1 << 14) - 1).map(lambda v: v << 4)
descs = st.builds(MatrixDescriptor, start=addr18, lbo=addr18, sbo=addr18, base_offset=st.integers(0, 7),
                  swizzle=st.sampled_from(["none", "128B", "64B", "32B"]))


def facts_encode(start, lbo, sbo, base_offset, swizzle_code):
    """FACTS.md: bits 0-13 = (start & 0x3FFFF) >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4,
    49-51 base offset, 62-63 swizzle (0 none, 1 128B, 2 64B, 3 32B)."""
    return ((start & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (base_offset << 49) | (swizzle_code << 62)


@settings(max_examples=300, deadline=None)
@given(descs)
def test_decode_encode_identity(d):
    assert d.representable
    assert decode(d.encode()) == d


@settings(max_examples=300, deadline=None)
@given(st.integers(0, (1 << 64) - 1))
def test_encode_decode_identity_on_any_64_bits(x):
    assert decode(x).encode() == x


@pytest.mark.parametrize("start,lbo,sbo,bo,swz,code", [
    (0x400, 128, 256, 0, "none", 0), (0x1230, 16, 1024, 5, "128B", 1),
    (0x3FFF0, 0x3FFF0, 0x10, 7, "64B", 2), (0x100, 16, 256, 1, "32B", 3)])
def test_encode_matches_facts_bit_positions(start, lbo, sbo, bo, swz, code):
    d = MatrixDescriptor(start, lbo, sbo, bo, swz)
    assert d.encode() == facts_encode(start, lbo, sbo, bo, code)


def test_probe_descriptor_words():
    # layout_probe.py builds the high word as (SBO >> 4) | (mode << 30) and the low as LBO>>4 << 16 | start>>4.
    d = MatrixDescriptor(start=0x400, lbo=16, sbo=1024, swizzle="128B")
    assert d.encode() >> 32 == (1024 >> 4) | (1 << 30)
    assert d.encode() & 0xFFFFFFFF == (1 << 16) | (0x400 >> 4)


def test_encode_masks_like_the_spec_formula():
    d = MatrixDescriptor(start=0x40008, lbo=0, sbo=0)  # bit 18 and the low nibble drop out
    assert d.encode() == 0 and not d.representable
    assert "desc.align16.start" in " ".join(d.issues()) and "desc.range.start" in " ".join(d.issues())


def test_reserved_bits_round_trip_and_are_reported():
    x = (1 << 14) | (1 << 48) | (1 << 55)
    assert decode(x).reserved == x == x & RESERVED_MASK
    assert any(i.startswith("desc.reserved") for i in decode(x).issues())


def rules(d):
    return {i.split(":")[0] for i in d.issues()}


def test_validity_rules():
    assert rules(MatrixDescriptor(0x400, 128, 256)) == set()
    assert rules(MatrixDescriptor(0x408, 128, 256)) == {"desc.align16.start"}
    assert rules(MatrixDescriptor(0x400, 128, 256, base_offset=2)) == {"desc.base_offset.no_swizzle"}
    # 128B: a tile starting at line 3 of a 1024-byte block needs base offset 3.
    assert rules(MatrixDescriptor(0x400 + 3 * 128, 16, 1024, 0, "128B")) == {"desc.base_offset.misaligned"}
    assert rules(MatrixDescriptor(0x400 + 3 * 128, 16, 1024, 3, "128B")) == set()
    assert rules(MatrixDescriptor(0x400, 16, 1024, 3, "128B")) == {"desc.base_offset.mismatch"}
    # A k-slice inside row 0 of an aligned atom is fine with base offset 0.
    assert rules(MatrixDescriptor(0x400 + 96, 16, 1024, 0, "128B")) == set()
    # 64B only uses line bits 7-8: a pattern at 1536 is 512-aligned although (1536>>7)&7 == 4.
    assert rules(MatrixDescriptor(1536, 16, 512, 0, "64B")) == set()
    assert rules(MatrixDescriptor(256, 16, 256, 0, "32B")) == set()
    assert rules(MatrixDescriptor(128, 16, 256, 0, "32B")) == {"desc.base_offset.misaligned"}


def test_smem_layout_from_descriptor():
    d = MatrixDescriptor(0x800, 16, 1024, 0, "128B")
    assert d.smem_layout("K", 16) == L.SmemLayout("K", "128B", 16, 16, 1024, 0x800, 0)


def test_bad_swizzle_name_raises():
    with pytest.raises(ValueError):
        MatrixDescriptor(0, 0, 0, 0, "16B")


@pytest.mark.parametrize("major,swz,lbo,sbo", [("K", "128B", 16, 1024), ("K", "none", 128, 256),
                                               ("MN", "64B", 2048, 512), ("MN", "none", 512, 128)])
def test_read_operand_through_an_encoded_descriptor(major, swz, lbo, sbo):
    d = MatrixDescriptor(0x1000, lbo, sbo, 0, swz)
    tile = np.random.default_rng(0).integers(0, 1 << 16, (32, 16)).astype(np.uint32)
    smem = np.zeros(32 * 1024, dtype=np.uint8)
    L.write_tile(smem, L.SmemLayout(major, swz, 16, lbo, sbo, 0x1000), tile)
    assert np.array_equal(read_operand(smem, d.encode(), major, 16, 32, 16), tile)
