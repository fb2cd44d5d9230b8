"""The funcs pass (Funcs): a .func's body emptied to its declarations and ret."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Funcs
from support.shrink_cases import every, has_opcode, program, ptxas_accepts, reduced


FUNC = ".func (.reg .b32 r) side(.reg .b32 x)\n{\n\tadd.u32 r, x, 1;\n\tmul.lo.u32 r, r, 3;\n\tret;\n}\n"
CALL = "\tcall (%r5), side, (%r1);\n\tst.global.u32 [%g+4], %r5;"


def test_a_func_body_empties_to_ret_while_ptxas_accepts():
    p = program(CALL, FUNC)
    out = reduced(Funcs(), p, ptxas_accepts)
    assert [i.opcode for i in out.module.function("side").instructions()] == ["ret"]
    assert _size(out) < _size(p) and has_opcode("call")(out)


def test_the_body_stays_when_the_predicate_needs_it():
    p = program(CALL, FUNC)
    assert reduced(Funcs(), p, every(has_opcode("mul.lo"))) is p
