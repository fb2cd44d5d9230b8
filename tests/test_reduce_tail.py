"""The tail pass (Tail): the kernel's last statement, a plain ret/exit, goes."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Tail
from support.shrink_cases import opcodes, program, ptxas_accepts, reduced


def test_the_final_ret_goes():
    p = program("\tst.global.u32 [%g], 1;")
    out = reduced(Tail(), p, ptxas_accepts)
    assert opcodes(out)[-1] == "st.global.u32" and _size(out) < _size(p)


def test_a_guarded_ret_stays():
    p = program("\tsetp.eq.u32 %p, %r1, 0;\n\tst.global.u32 [%g], 1;\n\t@%p ret;").to_ptx()
    from fuzzptx.program import Program

    q = Program.from_ptx(p.replace("\t@%p ret;\n\tret;", "\t@%p ret;"))
    assert opcodes(q)[-1] == "ret" and Tail().candidates(q) == []
