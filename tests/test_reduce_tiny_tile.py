"""The tiny-tile pass (TinyTile): every tile of a wgmma in the smallest layout, filled by one store at [%tid]."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import TinyTile
from fuzzptx.reduce.passes.memory import _desc_fields
from support.shrink_cases import opcodes, program, ptxas_accepts

W = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, 0x4000008000000040, 0x2000000060, 1, 1, 1, 0, 0;"
BODY = ("\tmov.u32 %r1, %tid.x;\n\tst.shared.b8 [%r1+1040], %r1;\n\tst.shared.b8 [%r1+1552], 0;\n"
        "\tfence.proxy.async.shared::cta;\n\twgmma.fence.sync.aligned;\n\t" + W + "\n"
        "\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;\n\tst.global.f32 [%g], %f0;")


def _parts(p):
    ins = p.module.function("k").instructions()
    (w,) = [i for i in ins if "mma_async" in i.opcode]
    return [i for i in ins if i.opcode.startswith("st.shared")], w.operands[1].value, w.operands[2].value


def test_one_store_at_offset_0_fills_tiles_of_16_byte_strides():
    p = program(BODY)
    cands = TinyTile().candidates(p)
    assert len(cands) == 2 * 3 * 3  # a store kept, times the (LBO, SBO) of A, times those of B
    for c in cands:
        stores, a, b = _parts(c)
        assert len(stores) == 1 and stores[0].operands[0].offset == 0 and _size(c) < _size(p)
        for d in (a, b):
            assert _desc_fields(d)[0] == 0 and d >> 62 == 0 and ((d >> 16) & 0x3FFF, (d >> 32) & 0x3FFF) in ((1, 1), (1, 0), (0, 1))
    stores, a, b = _parts(cands[0])
    assert str(stores[0].operands[1]) == "%r1" and (a, b) == (0x100010000, 0x100010000)
    assert opcodes(cands[0]).count("st.shared.b8") == 1 and all(ptxas_accepts(cands[:3]))


def test_a_wgmma_without_immediate_descriptors_is_left_alone():
    assert TinyTile().candidates(program(BODY.replace(W, W.replace("0x4000008000000040, 0x2000000060", "%da, %db")))) == []
