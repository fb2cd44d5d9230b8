"""The bypass pass (Bypass): a computation replaced by a move of one of its sources (a load by 0)."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Bypass
from support.shrink_cases import every, has_opcode, opcodes, program, ptxas_accepts, reduced


BODY = "\tmov.u32 %r1, %tid.x;\n\tadd.u32 %r2, %r1, 7;\n\tst.global.u32 [%g], %r2;"


def test_a_computation_becomes_a_move_of_a_source():
    p = program(BODY)
    out = reduced(Bypass(), p, ptxas_accepts)
    assert "add.u32" not in opcodes(out) and _size(out) < _size(p), opcodes(out)


def test_the_computation_stays_when_the_predicate_needs_it():
    p = program(BODY)
    out = reduced(Bypass(), p, every(lambda q: "add.u32 %r2, %r1, 7;" in q.to_ptx()))
    assert "add.u32 %r2, %r1, 7;" in out.to_ptx() and has_opcode("add.u32")(out)
