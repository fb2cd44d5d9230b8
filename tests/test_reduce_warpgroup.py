"""The warpgroup pass (Warpgroup): a block's second half indexed from its own start runs as one half."""
from __future__ import annotations

from dataclasses import replace

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Warpgroup
from support.shrink_cases import opcodes, program, ptxas_accepts, reduced

CONSUMER = "\tmov.u32 %r1, %tid.x;\n\tsub.u32 %r2, %r1, 128;\n\tmad.lo.u32 %r3, %r2, 4, %r0;\n\tst.shared.u32 [%r3], %r1;"


def _block(p, x):
    return replace(p, launch=replace(p.launch, block=(x, 1, 1)))


def test_the_second_half_becomes_the_block():
    p = _block(program(CONSUMER), 256)
    out = reduced(Warpgroup(), p, ptxas_accepts)
    assert out.launch.block == (128, 1, 1) and "sub.u32" not in opcodes(out) and "mov.b32" in opcodes(out)
    assert _size(out) < _size(p)


def test_an_offset_other_than_half_the_block_is_left_alone():
    assert Warpgroup().candidates(_block(program(CONSUMER), 512)) == []
    assert Warpgroup().candidates(_block(program(CONSUMER.replace("128", "64")), 256)) == []


def test_one_warpgroup_has_no_half_to_drop():
    assert Warpgroup().candidates(_block(program(CONSUMER), 128)) == []
