"""Layouts: fragments are bijections, FACTS.md's H100-checked formulas hold, swizzles and
canonical shared-memory layouts behave as the spec's CuTe layouts say."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fuzzptx import isa
from fuzzptx.oracles.reference import layouts as L

# ---------------------------------------------------------------- independent oracles (FACTS.md text)


def facts_d(t, i):
    w, l = divmod(t, 32)
    g, q = l // 4, l % 4
    return 16 * w + g + 8 * ((i // 2) % 2), 2 * q + (i % 2) + 8 * (i // 4)


def facts_a_k16(t, e):
    w, l = divmod(t, 32)
    return 16 * w + l // 4 + 8 * ((e // 2) % 2), 2 * (l % 4) + (e % 2) + 8 * (e // 4)


def facts_a_tf32(t, e):
    w, l = divmod(t, 32)
    return 16 * w + l // 4 + 8 * (e % 2), l % 4 + 4 * (e // 2)


def facts_a_8bit(t, r, byte):
    w, l = divmod(t, 32)
    return 16 * w + l // 4 + 8 * (r % 2), 4 * (l % 4) + byte + 16 * (r // 2)


def facts_b_kmajor_none(n, k, s, lbo, sbo):
    return (n % 8) * 16 + (k * s) % 16 + ((k * s) // 16) * lbo + (n // 8) * sbo


def facts_b_kmajor_swizzled(n, k, s, width, sbo):
    o = (n // 8) * sbo + (n % 8) * width + (k * s) % width
    lines = {128: 7, 64: 3, 32: 1}[width]
    chunk, line = (o >> 4) & lines, (o >> 7) & lines
    return (o & ~(lines << 4)) | ((chunk ^ line) << 4)


def facts_b_mnmajor_none(n, k, s, lbo, sbo):
    return (k % 8) * 16 + (n * s) % 16 + ((n * s) // 16) * sbo + (k // 8) * lbo


def layout_pairs(layout):
    return {(t, s): (int(layout.row[t, s]), int(layout.col[t, s]))
            for t in range(128) for s in range(layout.slots)}


# ---------------------------------------------------------------- fragments


def catalogue_fragments():
    seen = {}
    for f in isa.forms("wgmma"):
        seen[("D", f.dtype, f.shape.n)] = f
        if f.a_source == "reg":
            seen[("A", f.atype, f.shape.k)] = f
    return seen


@pytest.mark.parametrize("key", sorted(catalogue_fragments(), key=str))
def test_every_catalogue_fragment_is_a_bijection_with_the_right_register_count(key):
    form = catalogue_fragments()[key]
    kind, t, extent = key
    if kind == "D":
        lay = L.accumulator_layout(t, extent)
        assert lay.nregs == form.operand("d").count and lay.cols == extent
    else:
        lay = L.a_fragment_layout(t)
        assert lay.nregs == form.operand("a").count and lay.cols == extent
    assert lay.rows == 64
    counts = np.zeros((lay.rows, lay.cols), dtype=int)
    np.add.at(counts, (lay.row, lay.col), 1)
    assert np.all(counts == 1)


@pytest.mark.parametrize("dtype,n", [("f32", 8), ("f32", 16), ("s32", 256), ("f32", 136)])
def test_accumulator_matches_facts(dtype, n):
    lay = L.accumulator_layout(dtype, n)
    assert layout_pairs(lay) == {(t, i): facts_d(t, i) for t in range(128) for i in range(n // 2)}


def test_f16_accumulator_packs_elements_2j_2j1_into_register_j():
    lay = L.accumulator_layout("f16", 16)
    assert lay.nregs == 4 and lay.elements_per_register == 2 and lay.element_bits == 16
    tile = np.arange(64 * 16, dtype=np.uint32).reshape(64, 16)
    regs = L.gather(lay, tile)
    for t, j in itertools.product(range(0, 128, 7), range(4)):
        lo, hi = tile[facts_d(t, 2 * j)], tile[facts_d(t, 2 * j + 1)]
        assert regs[t, j] == lo | (hi << 16)


def test_a_fragments_match_facts():
    assert layout_pairs(L.a_fragment_layout("f16")) == {
        (t, e): facts_a_k16(t, e) for t in range(128) for e in range(8)}
    assert layout_pairs(L.a_fragment_layout("tf32")) == {
        (t, e): facts_a_tf32(t, e) for t in range(128) for e in range(4)}
    assert layout_pairs(L.a_fragment_layout("s8")) == {
        (t, 4 * r + b): facts_a_8bit(t, r, b) for t in range(128) for r in range(4) for b in range(4)}


def test_b1_fragment_keeps_32_contiguous_bits_per_register():
    lay = L.a_fragment_layout("b1")
    assert (lay.rows, lay.cols, lay.nregs, lay.elements_per_register) == (64, 256, 4, 32)
    row = lay.row.reshape(128, 4, 32)
    col = lay.col.reshape(128, 4, 32)
    assert np.all(row == row[:, :, :1])  # one row per register
    assert np.all(np.diff(col, axis=2) == 1)  # 32 consecutive columns
    assert np.all(col[:, :, 0] % 32 == 0)


@pytest.mark.parametrize("which", ["D.f16.24", "D.f32.40", "A.f16", "A.tf32", "A.e4m3", "A.b1"])
def test_gather_scatter_are_inverse(which):
    parts = which.split(".")
    lay = L.accumulator_layout(parts[1], int(parts[2])) if parts[0] == "D" else L.a_fragment_layout(parts[1])
    rng = np.random.default_rng(3)
    tile = rng.integers(0, 1 << lay.element_bits, (lay.rows, lay.cols), dtype=np.uint64).astype(np.uint32)
    regs = L.gather(lay, tile)
    assert regs.shape == (128, lay.nregs) and regs.dtype == np.uint32
    assert np.array_equal(L.scatter(lay, regs), tile)
    regs2 = rng.integers(0, 1 << 32, (128, lay.nregs), dtype=np.uint64).astype(np.uint32)
    assert np.array_equal(L.gather(lay, L.scatter(lay, regs2)), regs2)


def test_byte_packing_is_little_endian():
    lay = L.a_fragment_layout("s8")
    tile = np.zeros((64, 32), dtype=np.uint32)
    tile[0, 0:4] = [0x11, 0x22, 0x33, 0x44]  # thread 0 register 0 bytes 0..3
    assert L.gather(lay, tile)[0, 0] == 0x44332211


def test_owner_inverts_the_layout():
    lay = L.accumulator_layout("f32", 24)
    thread, slot = lay.owner()
    assert np.array_equal(lay.row[thread, slot], np.arange(64)[:, None].repeat(24, 1))
    assert np.array_equal(lay.col[thread, slot], np.arange(24)[None, :].repeat(64, 0))


def test_bad_fragment_requests_raise():
    with pytest.raises(ValueError):
        L.accumulator_layout("f64", 8)
    with pytest.raises(ValueError):
        L.accumulator_layout("f32", 12)
    with pytest.raises(ValueError):
        L.a_fragment_layout("s32")


# ---------------------------------------------------------------- swizzle


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("bo", range(8))
def test_swizzle_is_an_involution_and_permutes_each_atom(mode, bo):
    swz = L.SWIZZLES[mode]
    addr = np.arange(4 * 1024)
    out = swz(addr, bo)
    assert np.array_equal(swz(out, bo), addr)
    assert np.array_equal(out & ~0x70, addr & ~0x70)  # only the 16-byte chunk bits move
    atoms = addr // swz.atom_bytes
    assert np.array_equal(out // swz.atom_bytes, atoms)
    assert np.array_equal(np.sort(out), addr)


def test_swizzle_modes_xor_chunk_bits_with_line_bits():
    a = np.arange(2048)
    assert np.array_equal(L.SWIZZLES["128B"](a), a ^ (((a >> 7) & 7) << 4))
    assert np.array_equal(L.SWIZZLES["64B"](a), a ^ (((a >> 7) & 3) << 4))
    assert np.array_equal(L.SWIZZLES["32B"](a), a ^ (((a >> 7) & 1) << 4))
    assert np.array_equal(L.SWIZZLES["none"](a), a)
    assert [s.atom_bytes for s in L.SWIZZLES.values()] == [128, 256, 512, 1024]


def test_base_offset_rephases_a_pattern_starting_off_boundary():
    # A 128B pattern whose row 0 sits at line 3 of a 1024-byte block swizzles like one at 0.
    swz = L.SWIZZLES["128B"]
    start = 1024 + 3 * 128
    rows = np.arange(8)[:, None] * 128 + np.arange(128)[None, :]
    assert np.array_equal(swz(start + rows, base_offset=3) - start, swz(rows))


# ---------------------------------------------------------------- shared-memory canonical layouts


@pytest.mark.parametrize("s,lbo,sbo", [(2, 128, 256), (4, 128, 256), (1, 128, 256), (2, 512, 64 * 16)])
def test_kmajor_none_matches_facts(s, lbo, sbo):
    lay = L.SmemLayout("K", "none", 8 * s, lbo, sbo, start=2048)
    n, k = L.tile_coords(64, 32 // s)
    assert np.array_equal(lay.address(n, k), 2048 + facts_b_kmajor_none(n, k, s, lbo, sbo))


@pytest.mark.parametrize("mode,width", [("128B", 128), ("64B", 64), ("32B", 32)])
@pytest.mark.parametrize("s", [1, 2, 4])
def test_kmajor_swizzled_matches_facts(mode, width, s):
    sbo = 8 * width
    lay = L.SmemLayout("K", mode, 8 * s, 16, sbo, start=0)
    n, k = L.tile_coords(32, 32 // s)
    assert np.array_equal(lay.address(n, k), facts_b_kmajor_swizzled(n, k, s, width, sbo))
    lay_at = L.SmemLayout("K", mode, 8 * s, 16, sbo, start=4096)
    assert np.array_equal(lay_at.address(n, k), 4096 + facts_b_kmajor_swizzled(n, k, s, width, sbo))


def test_mnmajor_none_matches_facts():
    n, k = L.tile_coords(16, 16)
    got = L.smem_address("MN", "none", n, k, 16, lbo=128, sbo=256, start=1024)
    assert np.array_equal(got, 1024 + facts_b_mnmajor_none(n, k, 2, 128, 256))


def cute_eval(shape, stride, coord):
    """CuTe layout evaluation: split coord colexicographically over a nested shape."""
    if isinstance(shape, int):
        return coord * stride
    total = 0
    for sh, sd in zip(shape, stride):
        size = int(np.prod(sh)) if isinstance(sh, tuple) else sh
        total = total + cute_eval(sh, sd, coord % size)
        coord = coord // size
    return total


SEED_EXAMPLES = [
    # major, swizzle, element bits, (shape, stride) in elements, LBO and SBO in bytes (seed 000)
    ("K", "none", 32, (((8, 2), (4, 4)), ((4, 32), (1, 64))), 64 * 4, 32 * 4),
    ("MN", "none", 16, (((8, 1, 2), (8, 2)), ((1, 8, 64), (8, 128))), 128 * 2, 64 * 2),
    ("MN", "32B", 16, (((8, 2, 2), (8, 2)), ((1, 8, 128), (16, 256))), 128 * 2, 256 * 2),
    ("MN", "64B", 16, (((8, 4, 2), (8, 2)), ((1, 8, 256), (32, 512))), 256 * 2, 512 * 2),
    # K-major 32B tf32 as written, restricted to the 32 bytes of K one row holds.
    ("K", "32B", 32, (((8, 2), (4, 2)), ((8, 64), (1, 4))), 16, 64 * 4),
]


@pytest.mark.parametrize("major,mode,bits,cute,lbo,sbo", SEED_EXAMPLES)
def test_unswizzled_offsets_match_the_seed_examples(major, mode, bits, cute, lbo, sbo):
    (shape, stride) = cute
    mn_size, k_size = int(np.prod(shape[0])), int(np.prod(shape[1]))
    lay = L.SmemLayout(major, mode, bits, lbo, sbo)
    mn, k = L.tile_coords(mn_size, k_size)
    want = (cute_eval(shape[0], stride[0], mn) + cute_eval(shape[1], stride[1], k)) * (bits // 8)
    assert np.array_equal(lay.bit_offset(mn, k) // 8, want)


def dense_params(major, mode, bits, mn_extent, k_extent):
    """LBO/SBO that pack a tile with no gaps (the usual CUTLASS tiling)."""
    w = L.ROW_BYTES[mode]
    mn_bytes = mn_extent * bits // 8
    if major == "K":
        if mode == "none":
            return 128 * (mn_extent // 8), 128  # LBO: next 16 B of K; SBO: next 8 rows
        return 16, 8 * w
    if mode == "none":
        return 128 * (mn_bytes // 16), 128  # LBO: next 8 k; SBO: next 16 B of MN
    return 8 * w * (k_extent // 8), 8 * w  # LBO: next W bytes of MN; SBO: next 8 k


@pytest.mark.parametrize("major,mode", [(m, s) for m in ("K", "MN") for s in L.SWIZZLES])
@pytest.mark.parametrize("bits", [8, 16, 32])
def test_canonical_layouts_are_bijections_onto_their_bytes(major, mode, bits):
    # One instruction's 32 bytes of K; K-major swizzled atoms fill a whole W-byte row.
    k_extent = 8 * L.ROW_BYTES[mode] // bits if (major == "K" and mode != "none") else 256 // bits
    mn_extent = 64 if major == "K" else max(64, 8 * L.ROW_BYTES[mode] // bits)
    lbo, sbo = dense_params(major, mode, bits, mn_extent, k_extent)
    lay = L.SmemLayout(major, mode, bits, lbo, sbo, start=8192)
    mn, k = L.tile_coords(mn_extent, k_extent)
    addr = lay.address(mn, k).ravel()
    nbytes = bits // 8
    spans = (addr[:, None] + np.arange(nbytes)).ravel()
    assert len(np.unique(spans)) == spans.size == mn_extent * k_extent * nbytes
    assert spans.min() == 8192 and spans.max() == 8192 + spans.size - 1
    raw = (8192 + lay.bit_offset(mn, k) // 8).ravel()
    assert np.array_equal(np.sort(raw), np.sort(addr))  # the swizzle only permutes


def test_kmajor_swizzled_rejects_k_beyond_one_row():
    lay = L.SmemLayout("K", "32B", 16, 16, 256)
    with pytest.raises(ValueError):
        lay.address(np.array([0]), np.array([16]))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([(m, s) for m in ("K", "MN") for s in L.SWIZZLES]),
       st.sampled_from([1, 8, 16, 32]), st.integers(0, 7))
def test_read_tile_inverts_write_tile(ms, bits, bo):
    major, mode = ms
    if bits == 1 and major == "MN":
        bits = 8  # b1 has no transposed layout
    k_extent = 256 // bits
    mn_extent = 64 if major == "K" else max(64, 8 * L.ROW_BYTES[mode] // max(bits, 8))
    lbo, sbo = dense_params(major, mode, max(bits, 8), mn_extent, k_extent if bits >= 8 else 32)
    lay = L.SmemLayout(major, mode, bits, lbo, sbo, start=8192 + 128 * bo, base_offset=bo)
    rng = np.random.default_rng(bo)
    tile = rng.integers(0, 1 << bits, (mn_extent, k_extent), dtype=np.uint64).astype(np.uint32)
    smem = np.zeros(64 * 1024, dtype=np.uint8)
    L.write_tile(smem, lay, tile)
    assert np.array_equal(L.read_tile(smem, lay, mn_extent, k_extent), tile)


def test_checked_flags_follow_the_h100_dense_record():
    """A layout is marked checked only when the H100 record ran every form that uses it, with no mismatch.

    tests/hw_records/dense_wgmma.json (docs/hardware-facts.md) ran every dense form: every
    A-register type (bf16, u8, fp8 and b1 included) and every accumulator N.
    """
    import json
    import pathlib

    from fuzzptx import isa

    rec = json.loads((pathlib.Path(__file__).parent / "hw_records" / "dense_wgmma.json").read_text())
    assert not rec["mismatches"] and not rec["forms_missing"]
    ran = {isa.by_key(k) for k in rec["forms_run"]}
    forms = isa.forms("wgmma")
    for atype in sorted({f.atype for f in forms if f.a_source == "reg"}):
        lay = L.a_fragment_layout(atype)
        assert lay.checked == all(f in ran for f in forms if f.a_source == "reg" and f.atype == atype), atype
    for dtype, n in sorted({(f.dtype, f.shape.n) for f in forms}):
        lay = L.accumulator_layout(dtype, n)
        assert lay.checked == all(f in ran for f in forms if (f.dtype, f.shape.n) == (dtype, n)), (dtype, n)
    assert L.a_fragment_layout("b1").checked and L.accumulator_layout("f32", 256).checked
