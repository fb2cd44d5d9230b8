"""The bits pass (Bits): an immediate loses a run of set bits (a 1 becomes 0), an address offset goes to 0."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Bits
from support.shrink_cases import every, program, ptxas_accepts, reduced


from fuzzptx.reduce.passes.values import imm_bits

BODY = "\tmov.u32 %r1, %tid.x;\n\tor.b32 %r2, %r1, 0x1234;\n\tst.global.u32 [%g+8], %r2;"


def test_immediates_lose_bits_and_offsets_go():
    p = program(BODY)
    out = reduced(Bits(), p, ptxas_accepts)
    assert imm_bits(out) < imm_bits(p) and "[%g]" in out.to_ptx() and _size(out) < _size(p)


def test_a_value_the_predicate_needs_stays():
    p = program(BODY)
    out = reduced(Bits(), p, every(lambda q: "0x1234" in q.to_ptx()))
    assert "0x1234" in out.to_ptx() and "[%g]" in out.to_ptx()
