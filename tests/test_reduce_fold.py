"""The fold pass (Fold): integer arithmetic on known constants becomes a move of its result."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Fold
from support.shrink_cases import opcodes, program, ptxas_accepts, reduced


from fuzzptx.reduce.passes.values import fold_constants


def test_a_constant_chain_folds_to_one_move():
    p = program("\tmov.u32 %r1, 3;\n\tshl.b32 %r2, %r1, 4;\n\tor.b32 %r3, %r2, 5;\n\tst.global.u32 [%g], %r3;")
    out = reduced(Fold(), p, ptxas_accepts)
    movs = [i for i in out.module.function("k").instructions() if i.operands and str(i.operands[0]) == "%r3"]
    assert [(i.opcode, i.operands[1].value) for i in movs] == [("mov.b32", 53)], opcodes(out)
    assert _size(out) < _size(p) and fold_constants(out) == out


def test_unknown_values_do_not_fold():
    p = program("\tmov.u32 %r1, %tid.x;\n\tshl.b32 %r2, %r1, 4;\n\tst.global.u32 [%g], %r2;")
    assert "shl.b32" in opcodes(reduced(Fold(), p, ptxas_accepts))
