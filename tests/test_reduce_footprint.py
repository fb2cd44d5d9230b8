"""The footprint pass (Footprint): a wgmma tile moves to offset 0 with a smaller group stride, and the
per-thread stores that fill it follow their group."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Footprint
from fuzzptx.reduce.passes.memory import _desc_fields
from support.shrink_cases import opcodes, program, ptxas_accepts

W = ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, DA, DB, 1, 1, 1, 0, 0;")
BODY = ("\tmov.u32 %r1, %tid.x;\n\tSTORE\n\tfence.proxy.async.shared::cta;\n\twgmma.fence.sync.aligned;\n\tW\n"
        "\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;\n\tst.global.f32 [%g], %f0;")


def _kernel(store: str, da: str, db: str = "%db"):
    return program(BODY.replace("STORE", store).replace("W", W.replace("DA", da).replace("DB", db)))


def _offsets(p) -> list[int]:
    return [i.operands[0].offset for i in p.module.function("k").instructions() if i.opcode.startswith("st.shared")]


def _desc(p) -> int:
    (w,) = [i for i in p.module.function("k").instructions() if "mma_async" in i.opcode]
    return w.operands[1].value


def test_stores_follow_their_group_as_the_stride_shrinks():
    # A tile at 1024 with 8-row groups 1536 bytes apart; the data sit in group 3, 64 bytes in
    sbo = 1536 >> 4 << 32
    p = _kernel("st.shared.b8 [%r1+5696], %r1;", hex(sbo | (1024 >> 4)))
    cands = Footprint().candidates(p)
    assert cands and _size(cands[0]) < _size(p)  # the driver skips any that is not smaller
    first = cands[0]
    start, new = _desc_fields(_desc(first))
    assert (start, new) == (0, 128)  # the smallest stride the 64-byte remainder allows, at offset 0
    assert _offsets(first) == [3 * 128 + 64]
    for c in cands:
        s, n = _desc_fields(_desc(c))
        assert _offsets(c) == [s + 3 * n + 64] and n < 1536
    assert all(ptxas_accepts(cands))


def test_a_descriptor_register_set_by_one_move_is_rewritten_there():
    p = program(("\tmov.b64 %t1, 64;\n" + BODY).replace("STORE", "st.shared.b8 [%r1+1040], 0;")
                .replace("W", W.replace("DA", "%t1").replace("DB", "%t1")))
    (c,) = Footprint().candidates(p)  # SBO 0: the tile only moves, to offset 0
    assert "mov.b64 %t1, 0;" in c.to_ptx() and _offsets(c) == [16] and opcodes(c) == opcodes(p)


def test_stores_outside_the_tile_stay():
    sbo = 1536 >> 4 << 32
    p = _kernel("st.shared.b8 [%r1+512], %r1;", hex(sbo | (1024 >> 4)))
    assert Footprint().candidates(p) == []
