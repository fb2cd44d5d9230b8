"""The addresses pass (Addresses): a register read only as an address, a constant away from another
register, is replaced by that register and an offset."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Addresses
from support.shrink_cases import opcodes, program, ptxas_accepts, reduced


def _stores(p) -> list[str]:
    return [str(i.operands[0]) for i in p.module.function("k").instructions() if i.base == "st"]


def test_an_add_of_a_constant_becomes_an_offset():
    p = program("\tmov.u32 %r1, %tid.x;\n\tadd.u32 %r2, %r1, 16;\n\tst.shared.b32 [%r2+4], %r1;")
    out = reduced(Addresses(), p, ptxas_accepts)
    assert _stores(out) == ["[%r1+20]"] and "add.u32" not in opcodes(out) and _size(out) < _size(p)


def test_two_constant_bases_become_one():
    p = program("\tmov.b64 %t1, 0;\n\tmov.u32 %r37, 0;\n\tst.shared.b32 [%r37+256], 0;\n\tld.shared.b32 %r3, [%t1];\n"
                "\tst.global.b32 [%g], %r3;")
    out = reduced(Addresses(), p, ptxas_accepts)
    assert _stores(out)[0] == "[%t1+256]" and opcodes(out).count("mov.u32") == 1, (_stores(out), opcodes(out))


def test_two_tiles_indexed_alike_share_one_index():
    p = program("\tmov.u32 %r1, %tid.x;\n\tmad.lo.u32 %r2, %r1, 4, 0;\n\tmov.u32 %r4, 512;\n\tmad.lo.u32 %r3, %r1, 4, %r4;\n"
                "\tst.shared.b32 [%r2], 0;\n\tst.shared.b32 [%r3+8], %r1;")
    out = reduced(Addresses(), p, ptxas_accepts)
    assert _stores(out) == ["[%r2]", "[%r2+520]"] and opcodes(out).count("mad.lo.u32") == 1, (_stores(out), opcodes(out))


def test_a_register_also_read_as_a_value_is_left_alone():
    p = program("\tmov.u32 %r1, %tid.x;\n\tadd.u32 %r2, %r1, 16;\n\tst.shared.b32 [%r2], %r2;")
    assert Addresses().candidates(p) == []


def test_a_shared_variable_offset_becomes_part_of_the_address():
    """``mov %r3, smem; add %r3, %r1, %r3``: smem sits at 0x400 in the layout (its only variable); the
    add goes and the address reads ``[%r1+1088]``; the move of smem stays for the driver (it keeps smem allocated)."""
    p = program("\tmov.u32 %r1, %tid.x;\n\tmov.u32 %r3, smem;\n\tadd.u32 %r3, %r1, %r3;\n\tst.shared.b8 [%r3+64], %r1;")
    out = reduced(Addresses(), p, ptxas_accepts)
    assert _stores(out) == ["[%r1+1088]"] and "add.u32" not in opcodes(out), (_stores(out), opcodes(out))
    assert "mov.u32 %r3, smem;" in out.to_ptx()
