"""The fold pass (Fold): integer arithmetic on known constants becomes a move of its result."""
from __future__ import annotations

from fuzzptx.oracles.reference import run_program
from fuzzptx.ptx.smem import shared_layout
from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Fold
from fuzzptx.reduce.passes.values import fold_constants
from support.shrink_cases import copy_kernel, opcodes, program, ptxas_accepts, reduced


def test_a_constant_chain_folds_to_one_move():
    p = program("\tmov.u32 %r1, 3;\n\tshl.b32 %r2, %r1, 4;\n\tor.b32 %r3, %r2, 5;\n\tst.global.u32 [%g], %r3;")
    out = reduced(Fold(), p, ptxas_accepts)
    movs = [i for i in out.module.function("k").instructions() if i.operands and str(i.operands[0]) == "%r3"]
    assert [(i.opcode, i.operands[1].value) for i in movs] == [("mov.b32", 53)], opcodes(out)
    assert _size(out) < _size(p) and fold_constants(out) == out


def test_unknown_values_do_not_fold():
    p = program("\tmov.u32 %r1, %tid.x;\n\tshl.b32 %r2, %r1, 4;\n\tst.global.u32 [%g], %r2;")
    assert "shl.b32" in opcodes(reduced(Fold(), p, ptxas_accepts))


def test_a_descriptor_built_from_a_tiles_address_folds_and_the_tile_stays_allocated():
    """``mov smem; add; cvt; shr; and; or`` (a descriptor) is known from the shared layout ptxas and
    the H100 use (the first variable at 0x400): it folds to one move, the ``mov`` naming the tile
    stays (it keeps the tile allocated), and the reference computes the same outputs bit for bit."""
    p = copy_kernel()
    out = reduced(Fold(), p, ptxas_accepts)
    k = out.module.function("k")
    offsets = shared_layout(p.module, p.module.function("k")).offsets
    start = (offsets["sb"] >> 4) & 16383
    descs = [i for i in k.instructions() if i.operands and str(i.operands[0]) == "%rd7"]
    assert [(i.opcode, i.operands[1].value) for i in descs] == [("mov.b64", 0xC000001000010000 | start)], opcodes(out)
    assert "mov.u32 %r7, sb;" in out.to_ptx() and _size(out) < _size(p)
    before, after = run_program(p).outputs["d"], run_program(out).outputs["d"]
    assert (before.kind == after.kind).all() and before.data == after.data
