"""Sparse A: metadata encode/decode inverse, CuTe's ELayouts as an independent oracle, expand/compress."""
from __future__ import annotations

import numpy as np
import pytest

from fuzzptx import isa
from fuzzptx.isa import sparse as S

SPARSE = [f for f in isa.forms("wgmma.sp") if f.shape.n == 8] + list(isa.forms("mma.sp"))


@pytest.mark.parametrize("form", SPARSE, ids=lambda f: f.key)
def test_metadata_encode_decode_inverse_for_every_selector(form):
    spec = S.spec_for(form)
    rng = np.random.default_rng(0)
    for sel in spec.sel_values:
        thread, shift = S.meta_position(spec, sel)
        assert len(set(zip(thread.ravel(), shift.ravel()))) == thread.size  # injective
        assert (shift % 4 == 0).all() and (shift <= 28).all()
        fields = S.random_fields(spec, rng, ordered=False)
        regs = S.encode_metadata(spec, fields, sel)
        back, valid = S.decode_metadata(spec, regs, sel)
        assert np.array_equal(back, fields) and valid.all()
        sup = S.supplying_threads(spec, sel)
        assert not regs[~sup].any()
        per_quad = {4: 1, 8: 2, 16: 4}[spec.chunks]
        assert sup.sum() == spec.threads // 4 * per_quad
        # garbage in the other threads changes nothing
        noisy = regs | (rng.integers(0, 1 << 32, spec.threads, dtype=np.uint64).astype(np.uint32) * ~sup)
        assert np.array_equal(S.decode_metadata(spec, noisy, sel)[0], fields)


def _cute(shape, stride, i):
    out = 0
    for s, d in zip(shape, stride):
        out += (i % s) * d
        i //= s
    return out


# CuTe SM90 sparse GMMA metadata layouts: (thread, value) -> column-major (M=64, K) element index.
ELAYOUTS = {
    ("f16", 32): ((2, 2, 8, 4), (1024, 0, 1, 16), (16, 2), (64, 8), 1),  # 1 metadata bit per logical element
    ("tf32", 16): ((2, 2, 8, 4), (512, 0, 1, 16), (8, 2), (64, 8), 2),  # 2 bits per logical element
    ("s8", 64): ((2, 2, 8, 4), (8, 2048, 1, 16), (32,), (64,), 1),
}


@pytest.mark.parametrize("atype,k", list(ELAYOUTS))
def test_wgmma_metadata_matches_cute_elayouts(atype, k):
    tshape, tstride, vshape, vstride, bits_per_value = ELAYOUTS[(atype, k)]
    form = next(f for f in isa.forms("wgmma.sp") if f.atype == atype and f.shape.k == k)
    spec = S.spec_for(form)
    elems_per_chunk = 4 if atype != "tf32" else 2
    for sel in spec.sel_values:
        thread, shift = S.meta_position(spec, sel)
        owner = {}
        for m in range(64):
            for c in range(spec.chunks):
                owner[(int(thread[m, c]), int(shift[m, c]) // 4)] = (m, c)
        for t in range(128):
            q = t % 4
            if spec.chunks == 8 and q // 2 != sel:
                continue  # the other thread pair: CuTe's stride-0 mode, chosen by the selector
            for v in range(int(np.prod(vshape))):
                idx = _cute(tshape, tstride, t) + _cute(vshape, vstride, v)
                m, kk = idx % 64, idx // 64
                bit = v * bits_per_value
                assert owner[(t, bit // 4)] == (m, kk // elems_per_chunk), (t, v)


def test_field_validity_per_spec():
    f16 = S.spec_for(next(f for f in isa.forms("wgmma.sp") if f.atype == "f16"))
    tf32 = S.spec_for(next(f for f in isa.forms("wgmma.sp") if f.atype == "tf32"))
    all_ = np.arange(16)
    assert set(all_[~S.field_valid(f16, all_)]) == set(S.INVALID_2_4)
    assert set(all_[S.field_valid(tf32, all_)]) == {0b0100, 0b1110}


@pytest.mark.parametrize("form", SPARSE[::3], ids=lambda f: f.key)
def test_expand_compress_inverse_and_zeros(form):
    spec = S.spec_for(form)
    rng = np.random.default_rng(3)
    eb = spec.element_bits
    packed = rng.integers(1, 1 << eb, size=(spec.m, spec.packed_k), dtype=np.uint64)
    fields = S.random_fields(spec, rng, ordered=False)
    dense, bad = S.expand(spec, packed, fields)
    assert dense.shape == (spec.m, spec.k) and not bad.any()
    assert np.array_equal(S.compress(spec, dense, fields), packed)
    # exactly half of each row's units are kept
    nz_units = (S._to_units(spec, dense) != 0).sum(axis=1)
    assert (nz_units <= spec.units // 2).all()
    # an invalid field makes exactly its chunk's elements undefined
    fields2 = fields.copy()
    fields2[0, 0] = 0b0101 if spec.atype != "tf32" else 0b1000
    _, bad2 = S.expand(spec, packed, fields2)
    span = 4 * spec.unit_bits // eb if spec.unit_bits >= eb else 4 // (eb // spec.unit_bits)
    assert bad2[0, :span].all() and not bad2[0, span:].any() and not bad2[1:].any()


def test_tf32_metadata_selects_one_element_of_two():
    spec = S.spec_for(next(f for f in isa.forms("wgmma.sp") if f.atype == "tf32"))
    packed = np.arange(1, spec.m * spec.packed_k + 1, dtype=np.uint64).reshape(spec.m, spec.packed_k) << np.uint64(13)
    fields = np.full((spec.m, spec.chunks), 0b1110, np.uint8)
    fields[:, ::2] = 0b0100
    dense, bad = S.expand(spec, packed, fields)
    assert not bad.any()
    assert np.array_equal(dense[:, 0::4], packed[:, 0::2]) and not dense[:, 1::4].any()
    assert np.array_equal(dense[:, 3::4], packed[:, 1::2]) and not dense[:, 2::4].any()


def test_8bit_pair_metadata_holds_one_row_per_thread():
    """Found on the H100 (tests/hw_records/warp_forms.json, history): m16n8k32 s8 / m16n8k64 s4 metadata."""
    for op in ("mma.sp.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", "mma.sp.sync.aligned.m16n8k64.row.col.s32.u4.u4.s32"):
        spec = S.spec_for(isa.by_opcode(op)[0])
        assert spec.chunks == 8
        for sel in (0, 1):
            thread, shift = S.meta_position(spec, sel)
            for row in range(16):
                assert set(thread[row]) == {4 * (row % 8) + 2 * sel + row // 8}
                assert list(shift[row]) == [4 * c for c in range(8)]


def test_reversed_index_pairs_are_defined_and_honoured():
    """The spec calls only equal indices invalid; the H100 agreed on reversed pairs (ordered=False cases)."""
    spec = S.spec_for(next(f for f in isa.forms("wgmma.sp") if f.atype == "s8"))
    packed = np.zeros((spec.m, spec.packed_k), np.uint64)
    packed[:, 0], packed[:, 1] = 7, 9
    fields = np.full((spec.m, spec.chunks), S.fields_from_indices(np.array([1, 3])), np.uint8)
    fields[:, 0] = S.fields_from_indices(np.array([3, 1]))  # first kept unit goes to position 3
    dense, bad = S.expand(spec, packed, fields)
    assert not bad.any() and list(dense[0, :4]) == [0, 9, 0, 7]


@pytest.mark.parametrize("form", SPARSE, ids=lambda f: f.key)
def test_keep_mask_is_where_expand_puts_the_packed_data(form):
    """The hardware model's keep mask: exactly the dense positions a packed element lands on."""
    spec = S.spec_for(form)
    rng = np.random.default_rng(5)
    fields = S.random_fields(spec, rng, ordered=False)
    keep = S.keep_mask(spec, fields)
    assert keep.shape == (spec.m, spec.k) and keep.sum() == spec.m * spec.k // 2
    eb = spec.element_bits
    packed = rng.integers(1, 1 << eb, size=(spec.m, spec.k // 2), dtype=np.uint64)  # no zero element
    if eb == 4:  # s4/u4: a zero nibble would hide a kept position
        packed |= np.uint64(1)
    dense, _ = S.expand(spec, packed, fields)
    assert np.array_equal(keep, dense != 0)


def test_keep_mask_tf32_selects_whole_elements():
    form = next(f for f in isa.forms("mma.sp") if f.atype == "tf32")
    spec = S.spec_for(form)
    fields = np.array([[0b0100, 0b1110] * (spec.chunks // 2)] * spec.m, np.uint8)
    keep = S.keep_mask(spec, fields)
    assert keep[0, :4].tolist() == [True, False, False, True]


def test_spec_set_of_chained_sparse_wgmma_with_specials_contains_the_hardware_result():
    """Found by the H100 campaign (reference!=hardware on wgmma.sp f16 with special inputs): when C is
    already a value set (a chained sparse wgmma), the widening re-evaluated the product without the
    metadata's selection, so an Inf of B at an unselected position made the set NaN-only."""
    import pathlib

    from fuzzptx.program import Program
    from fuzzptx.oracles.reference import compare, run_program

    p = Program.from_file(pathlib.Path(__file__).parent / "data" / "repros" / "sparse_chain_special_inputs.ptx")
    hw = run_program(p, mode="hardware")
    spec = run_program(p)
    assert hw.undefined is None and spec.undefined is None
    assert compare(p, spec, {b: hw.bytes(b) for b in hw.outputs}) == []
