"""SASS forms (``oracles/sass/vocabulary.py``): the unit in which the generator's reach is measured."""
from __future__ import annotations

from fuzzptx.oracles.sass import Instruction, SassFunction, Listing
from fuzzptx.oracles.sass import vocabulary as V


def ins(opcode: str) -> Instruction:
    return Instruction(0, None, opcode, "", opcode)


def test_a_form_drops_shape_numbers_and_keeps_widths_and_modifiers():
    assert V.form(ins("HGMMA.64x128x16.F32.BF16")) == "HGMMA.F32.BF16"
    assert V.form(ins("STSM.16.MT88.4")) == "STSM.16.MT88.4"
    assert V.form(ins("LDG.E.128")) == "LDG.E.128"
    assert V.form(ins("ISETP.GE.U32.AND")) == "ISETP.GE.U32.AND"
    assert V.opcode("ISETP.GE.U32.AND") == "ISETP"


def test_forms_count_per_listing_and_filter_functions():
    f = SassFunction("k", (ins("IMAD.MOV.U32"), ins("IMAD.MOV.U32"), ins("HGMMA.64x8x16.F32")), {}, {})
    g = SassFunction("g", (ins("EXIT"),), {}, {})
    listing = Listing({"k": f, "g": g})
    assert V.forms(listing) == {"IMAD.MOV.U32": 2, "HGMMA.F32": 1, "EXIT": 1}
    assert V.forms(listing, {"g"}) == {"EXIT": 1}


def test_one_call_with_more_cubins_than_the_cache_holds_lists_them_all(monkeypatch):
    """disassemble_all evicted its own listings when one call held more cubins than its cache (the
    generator's 2,000-program vocabulary run died on a KeyError)."""
    from fuzzptx.oracles.ptxas import compile_ptx
    from fuzzptx.oracles.sass import disassembler, listing as L

    tool = disassembler()
    if tool is None:
        import pytest

        pytest.skip("no nvdisasm")
    text = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k{}(.param .u32 a)\n{{\n"
            "\t.reg .b32 %r<2>;\n\tld.param.u32 %r1, [a];\n\tadd.u32 %r1, %r1, {};\n\tret;\n}}\n")
    cubins = [compile_ptx(text.format(i, i)).cubin for i in range(5)]
    monkeypatch.setattr(L, "_CACHE_SIZE", 2)
    listings = L.disassemble_all(cubins, tool)
    assert [sorted(x.functions) for x in listings] == [[f"k{i}"] for i in range(5)]
