"""The decls pass (Decls): a state-space variable no instruction names goes, one at a time."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Decls
from support.shrink_cases import every, program, ptxas_accepts, reduced


def test_an_unnamed_shared_variable_goes():
    p = program("\t.shared .align 4 .b32 padsm[4];\n\tst.global.u32 [%g], 1;")
    out = reduced(Decls(), p, ptxas_accepts)
    assert "padsm" not in out.to_ptx() and "padsm" in p.to_ptx() and _size(out) < _size(p)


def test_a_named_variable_stays_and_so_does_one_the_predicate_needs():
    p = program("\tst.global.u32 [%g], 1;")
    assert Decls().candidates(p) == [] and "smem" in p.to_ptx()
    q = program("\t.shared .align 4 .b32 padsm[4];\n\tst.global.u32 [%g], 1;")
    assert "padsm" in reduced(Decls(), q, every(lambda r: "padsm" in r.to_ptx())).to_ptx()
