"""Spec layer, scalar instructions (oracles/checker/scalar_rules.py): each rule fires on the case the
ISA leaves undefined or unspecified, at its line, and stays quiet on the legal twin; the reference
agrees at run time (UNDEF or an undefined run)."""
from __future__ import annotations

import pytest

from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.reference import run_program
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.parse import parse


def kernel(body: str, *, reqntid: str = ".reqntid 64, 1, 1", funcs: str = "") -> str:
    return f""".version 8.5
.target sm_90a
.address_size 64
{funcs}
.visible .entry k(.param .u64 o) {reqntid}
{{
.reg .b32 %r<16>; .reg .b64 %rd<8>; .reg .pred %p<4>;
mov.u32 %r0, %tid.x;
ld.param.u64 %rd1, [o]; mul.wide.u32 %rd2, %r0, 4; add.s64 %rd1, %rd1, %rd2;
{body}
st.global.u32 [%rd1], %r9;
ret;
}}
"""


def found(text: str) -> list[tuple[str, int | None]]:
    return sorted((f.rule, f.line) for f in check_module(parse(text, "t.ptx"), layers=("spec",))
                  if f.rule.startswith("spec.scalar"))


def line(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def reference(text: str):
    p = Program(parse(text, "t.ptx"), Launch("k", (1, 1, 1), (64, 1, 1)), (Buffer("o", "u32", 64, "zeros", output=True),))
    return run_program(p)


# ------------------------------------------------------------------ division by zero


@pytest.mark.parametrize("divisor", ["0", "%r3"])
def test_integer_division_by_a_constant_zero_is_flagged_and_undef_in_the_reference(divisor):
    text = kernel(f"mov.u32 %r3, 0; div.u32 %r9, %r0, {divisor};")
    assert found(text) == [("spec.scalar.div-by-zero", line(text, "div.u32"))]
    r = reference(text)
    assert (r.outputs["o"].kind == UNDEF).all()


def test_division_by_a_nonzero_or_unknown_divisor_is_quiet():
    assert found(kernel("mov.u32 %r3, 7; div.u32 %r9, %r0, %r3; rem.s32 %r9, %r9, 3;")) == []
    assert found(kernel("add.u32 %r3, %r0, 1; div.u32 %r9, 100, %r3;")) == []
    assert found(kernel("mov.b32 %r8, 0f3F800000; div.rn.f32 %r9, %r8, 0f00000000;")) == []  # float: IEEE inf


# ------------------------------------------------------------------ carry chains


def test_addc_without_a_carry_write_on_every_path_is_flagged():
    text = kernel("setp.lt.u32 %p1, %r0, 3; @%p1 bra L1; add.cc.u32 %r4, %r0, %r0; L1: addc.u32 %r9, %r0, 0;")
    assert found(text) == [("spec.scalar.carry-in-undefined", line(text, "addc.u32"))]
    r = reference(text)
    kind = r.outputs["o"].kind
    assert (kind[:3] == UNDEF).all() and (kind[3:] != UNDEF).all()


def test_carry_chain_in_straight_line_is_quiet_and_a_call_breaks_it():
    assert found(kernel("add.cc.u32 %r4, %r0, %r0; addc.cc.u32 %r5, %r0, 1; addc.u32 %r9, 0, 0;")) == []
    funcs = ".func f() { ret; }"
    text = kernel("add.cc.u32 %r4, %r0, %r0; call f; addc.u32 %r9, 0, 0;", funcs=funcs)
    assert found(text) == [("spec.scalar.carry-in-undefined", line(text, "addc.u32"))]
    assert (reference(text).outputs["o"].kind == UNDEF).all()


def test_a_guarded_carry_write_does_not_define_the_carry():
    text = kernel("setp.lt.u32 %p1, %r0, 3; @%p1 add.cc.u32 %r4, %r0, %r0; addc.u32 %r9, 0, 0;")
    assert found(text) == [("spec.scalar.carry-in-undefined", line(text, "addc.u32"))]


# ------------------------------------------------------------------ fns


def test_fns_with_a_constant_base_above_31_is_flagged():
    text = kernel("fns.b32 %r9, %r0, 32, 1;")
    assert found(text) == [("spec.scalar.fns-base", line(text, "fns.b32"))]
    assert found(kernel("fns.b32 %r9, %r0, 31, -2;")) == []


# ------------------------------------------------------------------ membermask


@pytest.mark.parametrize("ins", ["shfl.sync.idx.b32 %r9, %r0, 0, 0x1f, 0xfffffffe;",
                                 "vote.sync.ballot.b32 %r9, %p0, 0x0000ffff;",
                                 "match.any.sync.b32 %r9, %r0, 0x7fffffff;",
                                 "redux.sync.add.u32 %r9, %r0, 0xfffffff0;",
                                 "bar.warp.sync 0xfffffffe; mov.u32 %r9, 0;"])
def test_a_sync_op_every_lane_runs_with_lanes_left_out_of_the_mask_is_flagged(ins):
    text = kernel("setp.ne.u32 %p0, %r0, 0; " + ins)
    assert found(text) == [("spec.scalar.outside-membermask", line(text, ins.split()[0]))]
    assert reference(text).undefined is not None


def test_a_sync_op_with_a_full_mask_or_under_a_branch_is_quiet():
    assert found(kernel("shfl.sync.bfly.b32 %r9, %r0, 1, 0x1f, 0xffffffff;")) == []
    text = kernel("setp.lt.u32 %p1, %r0, 16; mov.u32 %r9, 0; @!%p1 bra L1;"
                  " shfl.sync.bfly.b32 %r9, %r0, 1, 0x1f, 0x0000ffff; L1:")
    assert found(text) == []  # lanes 16-31 branch around it: which lanes run it is the program's business
    assert reference(text).undefined is None


def test_a_mask_leaving_out_upper_lanes_is_quiet_when_the_block_size_is_unknown():
    assert found(kernel("vote.sync.ballot.b32 %r9, %p0, 0x0000ffff;", reqntid="")) == []


# ------------------------------------------------------------------ nondeterministic registers


def test_reading_a_machine_picked_special_register_is_an_info_finding():
    text = kernel("mov.u32 %r9, %smid;")
    fs = [f for f in check_module(parse(text, "t.ptx"), layers=("spec",)) if f.rule.startswith("spec.scalar")]
    assert [(f.rule, f.severity) for f in fs] == [("spec.scalar.nondeterministic-sreg", "info")]
    assert found(kernel("mov.u32 %r9, %laneid;")) == []
