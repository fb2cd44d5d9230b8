"""The copyprop pass (CopyPropagate): a move written once deleted, its source read where its result was."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import CopyPropagate
from support.shrink_cases import opcodes, program, ptxas_accepts, reduced


def test_a_move_goes_and_its_source_is_read_instead():
    p = program("\tadd.u32 %r2, %r1, 7;\n\tmov.u32 %r3, %r2;\n\tst.global.u32 [%g], %r3;")
    out = reduced(CopyPropagate(), p, ptxas_accepts)
    (st,) = [i for i in out.module.function("k").instructions() if i.base == "st"]
    assert str(st.operands[1]) == "%r2" and opcodes(out).count("mov.u32") == opcodes(p).count("mov.u32") - 1
    assert _size(out) < _size(p)


def test_a_move_from_a_special_register_stays():
    """ptxas takes %tid.x only as a mov/cvt source: no candidate propagates it."""
    p = program("\tmov.u32 %r3, %tid.x;\n\tst.global.u32 [%g], %r3;")
    assert all("%r3" in c.to_ptx() for c in CopyPropagate().candidates(p))
    assert reduced(CopyPropagate(), p, ptxas_accepts).to_ptx().count("%tid.x") == 1


def test_a_wmma_stride_may_become_an_immediate():
    """ptxas 13.0.88 accepts an immediate stride in wmma.load/store: the move into the stride register goes."""
    p = program("\tmov.u32 %r1, 16;\n\tmov.u32 %r5, 0;\n"
                "\twmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%g], {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7}, %r1;")
    out = reduced(CopyPropagate(), p, ptxas_accepts)
    (w,) = [i for i in out.module.function("k").instructions() if i.base == "wmma"]
    assert str(w.operands[-1]) == "16" and "mov.u32 %r1" not in out.to_ptx()
