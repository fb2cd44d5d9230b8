"""The share-tile pass (ShareTile): a wgmma's A and B descriptors read one tile."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import ShareTile
from support.shrink_cases import W64, opcodes, program, ptxas_accepts, reduced


def test_a_descriptor_is_replaced_by_the_other_and_its_chain_goes():
    p = program("\twgmma.fence.sync.aligned;\n\t" + W64 + "\n\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;\n"
                "\tst.global.f32 [%g], %f0;")
    cands = ShareTile().candidates(p)
    assert len(cands) == 2
    out = reduced(ShareTile(), p, ptxas_accepts)
    (w,) = [i for i in out.module.function("k").instructions() if i.base == "wgmma" and "mma_async" in i.opcode]
    assert w.operands[1] == w.operands[2]
    assert len(opcodes(out)) < len(opcodes(p)) and _size(out) < _size(p)


def test_a_wgmma_reading_one_tile_has_nothing_to_share():
    p = program("\twgmma.fence.sync.aligned;\n\t" + W64.replace("%da, %db", "%da, %da") + "\n\twgmma.commit_group.sync.aligned;\n"
                "\twgmma.wait_group.sync.aligned 0;")
    assert ShareTile().candidates(p) == []
