"""Small rules of the ptxas model, each checked on single instructions or tiny kernels (the
recorded experiments in tests/data/checker/ pin them against real ptxas)."""
from __future__ import annotations

import pytest

from fuzzptx.ptx.parse import parse
from fuzzptx.oracles.checker.context import build_ctx
from fuzzptx.oracles.checker.ptxas_rules import self_move as _self_move
from fuzzptx.oracles.checker.ptxas_sites import exit_jumps


def _instr(text: str):
    m = parse(f".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{{\n"
              f"\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<4>;\n\t{text}\n\tret;\n}}\n")
    return next(iter(m.functions())).instructions()[0]


@pytest.mark.parametrize("text,identity", [
    ("mov.b32 %r1, %r1;", True),
    ("xor.b32 %r1, %r1, 0;", True),
    ("xor.b32 %r1, 0, %r1;", True),
    ("or.b32 %r1, %r1, 0;", True),
    ("add.s32 %r1, %r1, 0;", True),
    ("sub.s32 %r1, %r1, 0;", True),
    ("shl.b32 %r1, %r1, 0;", True),
    ("and.b32 %r1, %r1, -1;", True),
    ("and.b32 %r1, %r1, 0xFFFFFFFF;", True),
    ("and.b64 %rd1, %rd1, 0xFFFFFFFF;", False),  # not all ones for 64 bits
    ("mul.lo.s32 %r1, %r1, 1;", True),
    ("max.s32 %r1, %r1, %r1;", True),
    ("sub.s32 %r1, 0, %r1;", False),  # a negation
    ("xor.b32 %r1, %r1, 1;", False),
    ("xor.b32 %r2, %r1, 0;", False),  # a copy: it reads %r1
    ("add.f32 %r1, %r1, 0f00000000;", False),  # -0 + 0 is +0: not an identity
    ("add.cc.u32 %r1, %r1, 0;", False),  # writes the carry flag
    ("mul.hi.s32 %r1, %r1, 1;", False),
])
def test_identity_updates_in_place_are_self_moves(text, identity):
    assert _self_move(_instr(text)) is identity


_STAGE = ("\twgmma.fence.sync.aligned;\n"
          "\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1,%f2,%f3,%f4}, %rd1, %rd2, 1, 1, 1, 0, 0;\n"
          "\twgmma.commit_group.sync.aligned;\n")


def _text(body: str) -> str:
    return (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n"
              "\t.reg .f32 %f<8>;\n\t.reg .b64 %rd<8>;\n\t.reg .b32 %r<8>;\n\t.reg .pred %p<4>;\n"
              "\tld.param.u64 %rd3, [out];\n\tld.global.u32 %r1, [%rd3];\n\tsetp.eq.u32 %p1, %r1, 0;\n"
            + _STAGE + body + "}\n")


def _jump_lines(body: str) -> list:
    m = parse(_text(body))
    ctx = build_ctx(m, next(iter(m.functions())))
    return sorted(ctx.line(s) for s in exit_jumps(ctx))


@pytest.mark.parametrize("body,is_exit", [
    ("\tbra.uni EX;\n\tadd.s32 %r2, %r1, 1;\nEX:\n\tret;\n", True),  # over unreachable code
    ("\tbra.uni EX;\nEX:\n\tret;\n", False),  # to the next block
    ("\t@%p1 bra EX;\n\tst.global.u32 [%rd3], %r1;\nEX:\n\tret;\n", True),  # guarded, over a store
    ("\t@%p1 bra EX;\n\tadd.s32 %r2, %r1, 1;\nEX:\n\tret;\n", False),  # guarded, over dead code only
    ("\tbra.uni EX;\n\tadd.s32 %r2, %r1, 1;\nEX:\n\tst.global.u32 [%rd3], %r1;\n\tret;\n", False),  # work, ret
])
def test_exit_jumps(body, is_exit):
    bra = next(k for k, line in enumerate(_text(body).split("\n"), 1) if any(w.startswith("bra") for w in line.split()))
    assert _jump_lines(body) == ([bra] if is_exit else [])


# ------------------------------------------------------------ the allocator codes: yes, no, "may"

def _predict(name: str):
    from pathlib import Path

    from fuzzptx.oracles.checker.ptxas_model import predict_module

    path = Path(__file__).parent / "data" / "checker" / f"{name}.ptx"
    return predict_module(parse(path.read_text(), str(path)))


def test_c7512_from_the_accumulator_footprint():
    """The accumulators' registers together decide C7512 (ptxas_pressure.C7512_MAY_FROM/C7512_FROM):
    below, no; from, yes; between, "may" (the probes' PTXAS headers are real ptxas 13.0.88)."""
    big, small, mid = _predict("c7512_footprint_624"), _predict("c7512_footprint_208"), _predict("c7512_equal_sections")
    assert [d.code for d in big.diagnostics] == ["C7512"] and "C7512" not in big.may
    assert small.diagnostics == () and small.may == ()
    assert mid.diagnostics == () and set(mid.may) == {"C7511", "C7512"}


def test_c7511_certain_leaves_no_c7512_may():
    pred = _predict("c7511_in_stage")
    assert "C7511" in {d.code for d in pred.diagnostics} and not {"C7511", "C7512"} & set(pred.may)


def test_c7513_may_only_where_an_a_register_is_written_in_flight():
    """A wgmma taking A from registers is no reason for "may" by itself, nor a plain write of an A
    register in flight in straight-line code (ptxas prints no C7513 for any of these probes); one in a
    loop that brings the value back to a wgmma is (operand_write_in_flight_a_zero_loop: C7513)."""
    assert "C7513" in _predict("operand_write_in_flight_a_zero_loop").may
    for name in ("a_written_after_fence", "a_written_after_wgmma", "a_written_between_wgmmas",
                 "operand_write_in_flight_a_add_read_by_store", "operand_write_in_flight_a_add_read_by_next_stage",
                 "rewrite_arrive_a_indirect_call"):
        assert "C7513" not in _predict(name).may, name
