"""The simplify pass (Simplify): guards dropped, conditional branches made unconditional, immediates made 0 or 1."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Simplify
from support.shrink_cases import opcodes, program, ptxas_accepts, reduced


BODY = "\tsetp.lt.u32 %p, %r1, 4;\n\t@%p add.u32 %r2, %r1, 7;\n\tst.global.u32 [%g], %r2;"


def test_guards_drop_and_immediates_become_0_or_1():
    p = program(BODY)
    out = reduced(Simplify(), p, ptxas_accepts)
    (add,) = [i for i in out.module.function("k").instructions() if i.base == "add" and str(i.operands[0]) == "%r2"]
    assert add.guard is None and add.operands[2].value in (0, 1), add
    assert _size(out) < _size(p)


def test_an_immediate_the_predicate_needs_stays():
    p = program(BODY)
    seven = lambda ps: [any("7" in str(o) for i in q.module.function("k").instructions() if i.base == "add" for o in i.operands)
                        and any(i.guard for i in q.module.function("k").instructions()) for q in ps]
    out = reduced(Simplify(), p, seven)
    assert "@%p add.u32 %r2, %r1, 7;" in out.to_ptx() and "add.u32" in opcodes(out)
