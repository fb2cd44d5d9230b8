"""The cse pass (Cse): a second instruction computing what an earlier one did becomes a move of its result."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Cse
from support.shrink_cases import opcodes, program, ptxas_accepts, reduced


TWICE = ("\tmov.u32 %r1, %tid.x;\n\tmad.lo.u32 %r5, %r1, 4, 0;\n\tmad.lo.u32 %r9, %r1, 4, 0;\n"
         "\tst.global.u32 [%g], %r5;\n\tst.global.u32 [%g+4], %r9;")


def test_a_repeated_computation_becomes_a_move_of_the_first():
    p = program(TWICE)
    out = reduced(Cse(), p, ptxas_accepts)
    assert opcodes(out).count("mad.lo.u32") == 1 and "mov.b32" in opcodes(out) and _size(out) < _size(p), opcodes(out)


def test_a_source_written_twice_is_not_shared():
    p = program(TWICE.replace("\tmad.lo.u32 %r9", "\tadd.u32 %r1, %r1, 1;\n\tmad.lo.u32 %r9"))
    assert Cse().candidates(p) == []
