"""The bytes pass (Bytes): per-thread stores of S-byte elements at x*S + b become byte stores at x + b."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Bytes
from support.shrink_cases import opcodes, program, ptxas_accepts, reduced

TILE = ("\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r2, smem;\n\tmad.lo.u32 %r3, %r1, 4, %r2;\n"
        "\tst.shared.b32 [%r3], 0;\n\tst.shared.u32 [%r3+512], %r1;")


def test_scaled_tile_stores_become_byte_stores():
    p = program(TILE)
    out = reduced(Bytes(), p, ptxas_accepts)
    assert "mad.lo.u32" not in opcodes(out) and "add.u32" in opcodes(out), opcodes(out)
    assert opcodes(out).count("st.shared.b8") == 2 and _size(out) < _size(p)
    (st,) = [i for i in out.module.function("k").instructions() if i.opcode == "st.shared.b8" and str(i.operands[0]) == "[%r3+512]"]
    assert str(st.operands[1]) == "%r1"  # the value stays (its low byte is stored)


def test_a_shift_becomes_a_move():
    p = program("\tmov.u32 %r1, %tid.x;\n\tshl.b32 %r3, %r1, 1;\n\tst.shared.b16 [%r3], 0;")
    (c,) = Bytes().candidates(p)
    assert opcodes(c)[-3:-1] == ["mov.b32", "st.shared.b8"], opcodes(c)


def test_an_address_also_read_as_a_value_is_left_alone():
    p = program(TILE + "\n\tst.global.u32 [%g], %r3;")
    assert Bytes().candidates(p) == []


def test_a_store_of_another_width_is_left_alone():
    p = program(TILE.replace("st.shared.u32 [%r3+512], %r1", "st.shared.u16 [%r3+512], 0"))
    assert Bytes().candidates(p) == []


def test_an_address_set_up_in_two_steps_is_rewritten_at_its_last():
    """``mov %r3, smem; mad.lo %r3, %r1, 4, %r3``: the register is written twice; the mad is the step to rewrite."""
    p = program("\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r3, smem;\n\tmad.lo.u32 %r3, %r1, 4, %r3;\n\tst.shared.b32 [%r3+64], %r1;")
    out = reduced(Bytes(), p, ptxas_accepts)
    assert "add.u32" in opcodes(out) and "st.shared.b8" in opcodes(out) and "mad.lo.u32" not in opcodes(out), opcodes(out)
