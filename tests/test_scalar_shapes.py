"""The scalar shapes of known ptxas bugs name a compile pair's -O3 mismatch (differ.DIAGNOSES), so
each known integer miscompile is its own root cause and one without a known shape is new."""
from pathlib import Path

import pytest

from fuzzptx.judges import differ
from fuzzptx.judges.finding import PATTERNS, Finding
from fuzzptx.strategies.scalar_shapes import SHAPES
from fuzzptx.program import Program
from fuzzptx.triage.known import DEFAULT_LEDGER, load_known

FINDINGS = Path(__file__).resolve().parents[1] / "reports" / "findings"
REPROS = {
    "abs-into-saturating-cvt": "ptxas_O3_abs_s32_cvt_sat_s16.ptx",
    "neg-into-saturating-cvt": "ptxas_O3_neg_s32_cvt_sat_s16.ptx",
    "bfi-length-beyond-31": "ptxas_O3_bfi_b32_length_beyond_31.ptx",
    "bfe-s32-position-beyond-31": "ptxas_O3_bfe_s32_position_beyond_31.ptx",
    "abs-assumed-nonnegative": "ptxas_O3_abs_s32_signed_rem.ptx",
    "lop3-repeated-operand": "ptxas_O3_lop3_repeated_operand.ptx",
    "neg-into-saturating-add": "ptxas_O3_neg_s32_add_sat_s32.ptx",
    "clz-into-saturating-add": "ptxas_O3_clz_add_sat_s32.ptx",
    "prmt-sign-into-byte-mask": "ptxas_O3_prmt_sign_byte_mask.ptx",
    "mulhi-into-wide-sub": "ptxas_O3_mulhi_sub_u64_borrow.ptx",
    "unsigned-max-into-signed-min": "ptxas_O3_bfind_unsigned_max_min.ptx",
    "mulhi-accumulated": "ptxas_O3_mulhi_loop_accumulation.ptx",
    "set-compared-with-one": "ptxas_O3_set_compared_with_one.ptx",
}
PAIR = "hardware:O3!=O0|mismatch|other"
SHAPES_BY_NAME = dict(SHAPES)


def _with(program: Program, old: str, new: str) -> Program:
    text = program.to_ptx()
    assert old in text
    return Program.from_ptx(text.replace(old, new), "shape.ptx")


@pytest.mark.parametrize("pattern", sorted(REPROS))
def test_each_repro_holds_its_shape_only(pattern):
    p = Program.from_file(FINDINGS / REPROS[pattern])
    assert [name for name, holds in SHAPES if holds(p)] == [pattern]
    assert pattern in PATTERNS


@pytest.mark.parametrize("pattern", sorted(REPROS))
def test_a_pair_mismatch_takes_the_shape_and_matches_its_ledger_entry(pattern):
    p = Program.from_file(FINDINGS / REPROS[pattern])
    (f,) = differ.diagnose([Finding(PAIR, "O3 and O0 differ")], p)
    assert f.root_cause.pattern == pattern
    known = [k.id for k in load_known(DEFAULT_LEDGER) if k.matches(f.root_cause)]
    assert len(known) == 1 and pattern in known[0]


def test_the_shapes_need_their_operands():
    bfi = Program.from_file(FINDINGS / REPROS["bfi-length-beyond-31"])
    assert not dict(SHAPES)["bfi-length-beyond-31"](_with(bfi, "5, 40;", "5, 20;"))  # a length below 32
    bfe = Program.from_file(FINDINGS / REPROS["bfe-s32-position-beyond-31"])
    assert not dict(SHAPES)["bfe-s32-position-beyond-31"](_with(bfe, "bfe.s32 %r3, %r2, 32, 1;", "bfe.s32 %r3, %r2, 31, 1;"))
    absolute = Program.from_file(FINDINGS / REPROS["abs-into-saturating-cvt"])
    plain = _with(absolute, "cvt.sat.s16.s32", "cvt.s16.s32")  # not saturating: no unsigned clamp to fold
    assert not dict(SHAPES)["abs-into-saturating-cvt"](plain)
    rem = Program.from_file(FINDINGS / REPROS["abs-assumed-nonnegative"])
    assert not dict(SHAPES)["abs-assumed-nonnegative"](_with(rem, "rem.s32", "rem.u32"))  # unsigned: no sign to lose
    lop3 = Program.from_file(FINDINGS / REPROS["lop3-repeated-operand"])
    assert not dict(SHAPES)["lop3-repeated-operand"](_with(lop3, "%r2, %r1, %r1,", "%r2, %r1, 7,"))


def test_the_new_shapes_need_their_operands():
    holds = dict(SHAPES)
    neg = Program.from_file(FINDINGS / REPROS["neg-into-saturating-add"])
    assert not holds["neg-into-saturating-add"](_with(neg, "add.sat.s32", "add.s32"))  # wrapping add: nothing to saturate
    clz = Program.from_file(FINDINGS / REPROS["clz-into-saturating-add"])
    assert not holds["clz-into-saturating-add"](_with(clz, "clz.b32", "popc.b32"))
    prmt = Program.from_file(FINDINGS / REPROS["prmt-sign-into-byte-mask"])
    assert not holds["prmt-sign-into-byte-mask"](_with(prmt, ", 0x8;", ", 0x0;"))  # no byte sign-replicated
    assert not holds["prmt-sign-into-byte-mask"](_with(prmt, "and.b32", "or.b32"))  # not a mask
    sub = Program.from_file(FINDINGS / REPROS["mulhi-into-wide-sub"])
    assert not holds["mulhi-into-wide-sub"](_with(sub, "sub.s64", "add.s64"))


def test_a_slct_of_a_negation_is_the_known_negation_compare():
    """``slct a, b, neg(x)``: -O3 tests x <= 0 for -x >= 0, the rewrite of the known saturating-cvt
    bug (the operand compared against negated bounds), so it is that bug, not a new one."""
    p = Program.from_file(FINDINGS / "ptxas_O3_neg_s32_slct.ptx")
    assert [name for name, holds in SHAPES if holds(p)] == ["neg-into-saturating-cvt"]
    assert not dict(SHAPES)["neg-into-saturating-cvt"](_with(p, "slct.s32.s32 %r13, %r2, 0, %r7;", "slct.s32.s32 %r13, %r2, 0, %r2;"))
    (f,) = differ.diagnose([Finding(PAIR, "O3 and O0 differ")], p)
    assert [k.id for k in load_known(DEFAULT_LEDGER) if k.matches(f.root_cause)] == ["ptxas-o3-neg-into-saturating-cvt"]


def test_a_pair_mismatch_without_a_known_shape_is_a_new_cause():
    p = Program.from_file(FINDINGS / REPROS["bfi-length-beyond-31"])
    p = _with(p, "5, 40;", "5, 20;")
    (f,) = differ.diagnose([Finding(PAIR, "O3 and O0 differ")], p)
    assert f.root_cause.pattern == ""
    assert not [k.id for k in load_known(DEFAULT_LEDGER) if k.matches(f.root_cause)]


def test_a_reference_mismatch_of_a_sign_flip_across_an_empty_commit_is_its_known_bug():
    """The GPU's mismatch with the reference on the xor/commit/xor kernel is named by its shape and
    matched to its ledger entry; without the empty commit group it is not that bug."""
    p = Program.from_file(FINDINGS / "ptxas_wgmma_xor_across_empty_commit.ptx")
    assert [name for name, holds in SHAPES if holds(p)] == ["accumulator-sign-flips-around-sync"]
    (f,) = differ.diagnose([Finding("reference!=hardware|mismatch|wgmma.f32.f16", "100 element(s) differ")], p)
    assert f.root_cause.pattern == "accumulator-sign-flips-around-sync"
    assert [k.id for k in load_known(DEFAULT_LEDGER) if k.matches(f.root_cause)] == [
        "ptxas-wgmma-sign-flips-across-sync"]
    text = p.to_ptx()
    second = text.index("wgmma.commit_group", text.index("wgmma.wait_group"))
    without = Program.from_ptx(text[:second] + text[second:].replace("wgmma.commit_group.sync.aligned;", "", 1), "x.ptx")
    assert not dict(SHAPES)["accumulator-sign-flips-around-sync"](without)
    bfind = Program.from_file(FINDINGS / REPROS["unsigned-max-into-signed-min"])
    assert not dict(SHAPES)["unsigned-max-into-signed-min"](_with(bfind, "min.s32", "min.u32"))  # an unsigned min: no sign
    mask = Program.from_file(FINDINGS / "ptxas_O3_umax_smin_and_mask.ptx")  # the form 13.5.37 still drops the mask of
    assert [name for name, holds in SHAPES if holds(mask)] == ["unsigned-max-into-signed-min"]


def test_a_running_sum_of_mul_hi_needs_the_sum():
    p = Program.from_file(FINDINGS / REPROS["mulhi-accumulated"])
    assert not dict(SHAPES)["mulhi-accumulated"](_with(p, "add.u32 %r20, %r20, %r23;", "add.u32 %r20, %r21, %r23;"))
    assert not dict(SHAPES)["mulhi-accumulated"](_with(p, "mul.hi.u32 %r23", "mul.lo.u32 %r23"))


@pytest.mark.parametrize("between, holds", [
    ("shfl.sync.down.b32 %r5, %r0, 1, 31, 0xffffffff;", True),  # the repro's (wrong on the H200: -16.0 for +16.0)
    ("bar.sync 0;", True), ("vote.sync.any.pred %p1, %p0, 0xffffffff;", True), ("fence.proxy.async.shared::cta;", True),
    ("mov.u32 %r5, %clock;", True),
    ("add.u32 %r5, %r0, 1;", False), ("membar.cta;", False), ("", False),  # ptxas folds both flips here (SASS)
])
def test_sign_flips_of_an_accumulator_around_an_instruction_ptxas_keeps_in_place(between, holds):
    """Two sign flips of a wgmma accumulator with an instruction ptxas keeps in place between them
    (measured in SASS of 12.9.86, 13.0.88 and 13.5.37: one LOP3 kept at -O1 to -O3) name the known
    bug, from the GPU against the reference and from a compile pair alike (campaign seed 4141:
    hardware:O3!=O1 with a shfl.sync between)."""
    p = Program.from_file(FINDINGS / "ptxas_wgmma_xor_across_shfl.ptx")
    text = p.to_ptx().replace("shfl.sync.down.b32 %r5, %r0, 1, 31, 0xffffffff;", between)
    text = text.replace(".reg .f32 %f<4>;", ".reg .f32 %f<4>;\n\t.reg .pred %p<4>;\n\tsetp.eq.u32 %p0, %r0, 0;")
    q = Program.from_ptx(text, "v.ptx")
    assert dict(SHAPES)["accumulator-sign-flips-around-sync"](q) is holds
    if holds:
        for sig in ("reference!=hardware|mismatch|wgmma.f32.f16", "hardware:O3!=O1|mismatch|wgmma.f16.e5m2.e4m3"):
            (f,) = differ.diagnose([Finding(sig, "differ")], q)
            assert [k.id for k in load_known(DEFAULT_LEDGER) if k.matches(f.root_cause)] == [
                "ptxas-wgmma-sign-flips-across-sync"]


@pytest.mark.parametrize("compare,holds", [
    ("setp.ne.s32 %p2, %r35, 1;", True), ("setp.eq.s32 %p2, %r35, 1;", True), ("setp.ne.s32 %p2, 1, %r35;", True),
    ("setp.ne.s32 %p2, %r35, 0;", False), ("setp.ne.s32 %p2, %r35, -1;", False), ("setp.lt.u32 %p2, %r35, 2;", False),
])
def test_a_set_result_compared_with_one_needs_eq_or_ne_and_the_constant_one(compare, holds):
    """In SASS (13.0.88 -O3) only ``setp.eq``/``setp.ne`` against 1 drop the compare of the set's
    result (``d != 0``, ``d != -1``, ``d < 2`` are compiled as written); a set with an f32
    destination (1.0 or 0.0) or a register written again in between is not the shape."""
    p = Program.from_file(FINDINGS / REPROS["set-compared-with-one"])
    q = _with(p, "setp.ne.s32 %p2, %r35, 1;", compare)
    assert [name for name, test in SHAPES if test(q)] == (["set-compared-with-one"] if holds else [])
    assert not SHAPES_BY_NAME["set-compared-with-one"](_with(p, "set.ge.u32.s32 %r35, 0, %r9;",
                                                             "set.ge.u32.s32 %r35, 0, %r9;\n\tadd.u32 %r35, %r35, 2;"))
