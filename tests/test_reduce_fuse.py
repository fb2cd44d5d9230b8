"""The fuse pass (Fuse): mul.lo|wide t; add d, c, t with t read only there become one mad."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Fuse
from support.shrink_cases import opcodes, program, ptxas_accepts, reduced


BODY = "\tmov.u32 %r1, %tid.x;\n\tmul.lo.u32 %r2, %r1, 4;\n\tadd.u32 %r3, %r2, %r1;\n\tst.global.u32 [%g], %r3;"


def test_mul_and_add_fuse_into_mad():
    p = program(BODY)
    out = reduced(Fuse(), p, ptxas_accepts)
    assert "mad.lo.u32" in opcodes(out) and "mul.lo.u32" not in opcodes(out) and _size(out) < _size(p), opcodes(out)


def test_a_product_read_twice_does_not_fuse():
    p = program(BODY + "\n\tst.global.u32 [%g+4], %r2;")
    assert Fuse().candidates(p) == []
