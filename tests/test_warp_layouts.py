"""Warp-level fragment layouts: bijections, register counts, and the PTX/CuTe formulas as independent oracles."""
from __future__ import annotations

import numpy as np
import pytest

from fuzzptx import isa
from fuzzptx.isa import Shape
from fuzzptx.oracles.reference import warp_layouts as WL

# Forms whose element types the catalogue sizes (the sm_120a f8f6f4 kinds are outside this issue).
MMA_FORMS = [f for f in isa.forms("mma") + isa.forms("mma.sp")
             if {f.atype, f.btype, f.ctype, f.dtype} <= set(isa.ELEMENT_BITS)]


def _layouts(f):
    sp = f.family == "mma.sp"
    return (WL.mma_a_layout(f.shape, f.atype, f.attr("layout_a"), sp), WL.mma_b_layout(f.shape, f.btype, f.attr("layout_b")),
            WL.mma_c_layout(f.shape, f.ctype, f.atype), WL.mma_c_layout(f.shape, f.dtype, f.atype))


@pytest.mark.parametrize("form", MMA_FORMS, ids=lambda f: f.opcode)
def test_every_mma_fragment_is_a_bijection_with_the_catalogue_register_count(form):
    frags = _layouts(form)
    counts = tuple(form.operand(r).count for r in ("a", "b", "c", "d"))
    assert tuple(x.nregs for x in frags) == counts
    for fr in frags:
        assert WL.is_bijection(fr), fr.name


def test_gather_scatter_are_inverse():
    rng = np.random.default_rng(1)
    for f in MMA_FORMS[::7]:
        for fr in _layouts(f):
            tile = rng.integers(0, 1 << min(fr.element_bits, 62), size=(fr.batches * fr.rows, fr.cols), dtype=np.uint64)
            assert np.array_equal(WL.scatter(fr, WL.gather(fr, tile)), tile)


def _pos(fr, lane, slot):
    return int(fr.batch[lane, slot]), int(fr.row[lane, slot]), int(fr.col[lane, slot])


def test_m16n8k16_f16_matches_the_ptx_text():
    """PTX ISA mma.m16n8k16 .f16 fragments, written per element as the ISA states them."""
    s = Shape(16, 8, 16)
    A, B, C = WL.mma_a_layout(s, "f16"), WL.mma_b_layout(s, "f16"), WL.mma_c_layout(s, "f32")
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        for i in range(8):
            row = g if (i < 2 or 4 <= i < 6) else g + 8
            col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
            assert _pos(A, lane, i) == (0, row, col)
        for i in range(4):
            assert _pos(B, lane, i) == (0, t * 2 + (i & 1) + (8 if i >= 2 else 0), g)
            assert _pos(C, lane, i) == (0, g if i < 2 else g + 8, t * 2 + (i & 1))


def test_tf32_f64_int8_int4_b1_match_the_ptx_text():
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        a = WL.mma_a_layout(Shape(16, 8, 8), "tf32")
        for i in range(4):
            assert _pos(a, lane, i) == (0, g + 8 * (i % 2), t + 4 * (i // 2))
        b = WL.mma_b_layout(Shape(16, 8, 8), "tf32")
        for i in range(2):
            assert _pos(b, lane, i) == (0, t + 4 * i, g)
        a = WL.mma_a_layout(Shape(16, 8, 16), "f64")
        for i in range(8):
            assert _pos(a, lane, i) == (0, g + 8 * (i % 2), t + 4 * (i // 2))
        a = WL.mma_a_layout(Shape(16, 8, 32), "s8")
        for i in range(16):
            assert _pos(a, lane, i) == (0, g + 8 * ((i // 4) % 2), t * 4 + (i % 4) + 16 * (i // 8))
        a = WL.mma_a_layout(Shape(8, 8, 16), "u8")
        for i in range(4):
            assert _pos(a, lane, i) == (0, g, t * 4 + i)
        a = WL.mma_a_layout(Shape(8, 8, 32), "s4")
        for i in range(8):
            assert _pos(a, lane, i) == (0, g, t * 8 + i)
        b = WL.mma_b_layout(Shape(16, 8, 256), "b1")
        for i in range(64):
            assert _pos(b, lane, i) == (0, t * 32 + (i % 32) + 128 * (i // 32), g)
        c = WL.mma_c_layout(Shape(8, 8, 4), "f64", "f64")
        for i in range(2):
            assert _pos(c, lane, i) == (0, g, 2 * t + i)


def _cute(shape, stride, coord_index: int) -> int:
    """Evaluate a flat CuTe layout (shape, stride tuples) at a colexicographic 1-D index."""
    out, rest = 0, coord_index
    for s, d in zip(shape, stride):
        out += (rest % s) * d
        rest //= s
    return out


def test_volta_m8n8k4_matches_cute_sm70_traits():
    """CuTe's SM70 layouts map (logical thread, value) -> column-major (M, K) index; lanes via the quad pair."""
    row8x4 = ((8, 4), (1, 8))
    col8x4 = ((4, 2, 4), (8, 4, 1))
    c16 = ((8, 8), (1, 8))
    c32 = ((2, 2, 2, 2, 2, 2), (1, 16, 4, 8, 2, 32))
    s = Shape(8, 8, 4)
    for lane in range(32):
        t = lane % 4 + 4 * ((lane >> 4) & 1)
        p = (lane >> 2) & 3
        for v in range(4):
            idx = _cute(row8x4[0], row8x4[1], t + 8 * v)
            assert _pos(WL.mma_a_layout(s, "f16", "row"), lane, v) == (p, idx % 8, idx // 8)
            assert _pos(WL.mma_b_layout(s, "f16", "col"), lane, v) == (p, idx // 8, idx % 8)
            idx = _cute(col8x4[0], col8x4[1], t + 8 * v)
            assert _pos(WL.mma_a_layout(s, "f16", "col"), lane, v) == (p, idx % 8, idx // 8)
            assert _pos(WL.mma_b_layout(s, "f16", "row"), lane, v) == (p, idx // 8, idx % 8)
        for v in range(8):
            idx = _cute(c16[0], c16[1], t + 8 * v)
            assert _pos(WL.mma_c_layout(s, "f16", "f16"), lane, v) == (p, idx % 8, idx // 8)
            idx = _cute(c32[0], c32[1], t + 8 * v)
            assert _pos(WL.mma_c_layout(s, "f32", "f16"), lane, v) == (p, idx % 8, idx // 8)


@pytest.mark.parametrize("num", (1, 2, 4))
@pytest.mark.parametrize("trans", (False, True))
def test_ldmatrix_fragment(num, trans):
    fr = WL.ldmatrix_layout(num, trans)
    assert fr.nregs == num and WL.is_bijection(fr)
    for lane in range(32):
        for j in range(num):
            for b in range(2):
                r, c = lane // 4, 2 * (lane % 4) + b
                assert _pos(fr, lane, 2 * j + b) == ((j, c, r) if trans else (j, r, c))
    mat, row = WL.ldmatrix_row_owner(num)
    assert list(mat[: 8 * num]) == [i // 8 for i in range(8 * num)] and (mat[8 * num:] == -1).all()
    assert list(row[: 8 * num]) == [i % 8 for i in range(8 * num)]
