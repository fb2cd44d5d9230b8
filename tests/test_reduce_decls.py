"""The decls pass (Decls): a state-space variable no instruction names goes, one at a time."""
from __future__ import annotations

from fuzzptx.reduce.passes import Decls
from support.shrink_cases import program, ptxas_accepts, reduced


def test_an_unnamed_shared_variable_goes():
    p = program("\tst.global.u32 [%g], 1;").to_ptx().replace("\tmov.u32 %r0, smem;", "\tmov.u32 %r0, 0;")
    from fuzzptx.program import Program

    q = Program.from_ptx(p)
    out = reduced(Decls(), q, ptxas_accepts)
    assert "smem" not in out.to_ptx() and "smem" in q.to_ptx()


def test_a_named_variable_stays():
    p = program("\tst.global.u32 [%g], 1;")
    assert Decls().candidates(p) == [] and "smem" in p.to_ptx()
