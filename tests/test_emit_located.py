"""``emit_located`` gives the module ``parse`` reads back from the emitted text, locations included.

The campaign's judges read that located module instead of parsing the text again, so every field
(the ``loc`` of each statement, function and module item too, which ``==`` ignores) must match.
"""
from __future__ import annotations

import dataclasses

import pytest

from fuzzptx.engine.generate import draw_direct
from fuzzptx.program import Program
from fuzzptx.ptx.emit import emit, emit_located
from fuzzptx.ptx.parse import parse


def difference(a, b, path: str = "module") -> str | None:
    """The first place where two IR values differ in any field, ``loc`` included, or None."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            d = difference(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
            if d:
                return d
        return None
    if isinstance(a, tuple):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def test_difference_sees_locations():
    text = ".version 8.0\n.target sm_90a\n.address_size 64\n\n.visible .entry k()\n{\n\tret;\n}\n"
    a, b = parse(text, "f"), parse("\n" + text, "f")
    assert a == b  # == ignores loc
    assert "loc" in difference(a, b)


@pytest.mark.parametrize("seed", [1, 2])
def test_generated_programs_match_parse(seed):
    for i, p in enumerate(draw_direct(48, seed)):  # a quarter of them illegal mutants
        module = p.with_header()
        text, located = emit_located(module)
        assert text == emit(module)
        d = difference(located, parse(text, "<program>"))
        assert d is None, f"program {i} of seed {seed}: {d}"


HAND = """// header line
//
.version 8.4
.target sm_90a
.address_size 64

.global .align 4 .b32 table[4] = {1, 2, 3, 4};
.extern .func (.param .b32 r) ext(.param .b32 a);
.func (.param .b32 ret) add1(
	.param .b32 x
)
{
	.reg .b32 %r<2>;
	ld.param.b32 %r0, [x];
	add.s32 %r1, %r0, 1;
	st.param.b32 [ret], %r1;
	ret;
}

.visible .entry k(
	.param .u64 out
)
.maxntid 128, 1, 1
{
	.reg .pred %p;
	.reg .b32 %x, %y;
	mov.b32 %x, %tid.x;
	{
		.reg .b32 %inner;
		mov.b32 %inner, 3;
		{
			add.s32 %x, %x, %inner;
		}
	}
	setp.eq.s32 %p, %x, 0;
	@%p bra DONE;
	mul.lo.s32 %y, %x, 2;
DONE:
	ret;
}
"""


def test_scopes_labels_declarations_and_signatures_match_parse():
    module = parse(HAND, "<program>")
    text, located = emit_located(module)
    assert text == emit(module)
    assert difference(located, parse(text, "<program>")) is None


def test_program_to_ptx_located_is_what_the_judges_parse():
    from fuzzptx.judges import differ

    p = draw_direct(1, 3)[0]
    text, judged = p.to_ptx_located()
    parsed, text2 = differ.as_judged(p, text)
    assert text == text2 == p.to_ptx()
    assert difference(judged.module, parsed.module) is None
    assert isinstance(judged, Program) and judged.header_lines() == p.header_lines()
