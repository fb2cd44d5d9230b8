"""The narrow pass (Narrow): wgmma rewritten to a smaller N of the same catalogue row."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Narrow
from support.shrink_cases import W64, every, opcodes, program, reduced


from fuzzptx.engine.predicate import signature_predicate

BODY = "\t" + W64 + "\n\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;\n\tst.global.f32 [%g], %f0;"


def test_wgmma_n_narrows_while_ptxas_still_says_c7519():
    p = program(BODY)  # no wgmma.fence: C7519
    out = reduced(Narrow(), p, signature_predicate("ptxas:C7519"))
    assert "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16" in opcodes(out), opcodes(out)
    assert _size(out) < _size(p)


def test_n_stays_when_the_predicate_needs_it():
    p = program(BODY)
    assert reduced(Narrow(), p, every(lambda q: any(".m64n64k16." in o for o in opcodes(q)))) is p
