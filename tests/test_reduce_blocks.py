"""The blocks pass (Blocks): labelled blocks and whole loops deleted in one candidate."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Blocks
from support.shrink_cases import every, has_opcode, opcodes, program, ptxas_accepts, reduced


LOOP = "\n".join(["\tmov.u32 %r1, 0;", "L1:", "\tadd.u32 %r1, %r1, 1;", "\tsetp.lt.u32 %p, %r1, 4;", "\t@%p bra L1;",
                   "\tst.global.u32 [%g], 5;"])


def test_a_loop_goes_whole_while_ptxas_accepts():
    p = program(LOOP)
    out = reduced(Blocks(), p, every(lambda q: ptxas_accepts([q])[0], has_opcode("st.global")))
    assert "bra" not in " ".join(opcodes(out)) and "setp.lt.u32" not in opcodes(out), opcodes(out)
    assert _size(out) < _size(p) and "st.global.u32" in opcodes(out)


def test_the_loop_stays_when_the_predicate_needs_the_branch():
    p = program(LOOP)
    assert reduced(Blocks(), p, every(has_opcode("bra"))) is p
