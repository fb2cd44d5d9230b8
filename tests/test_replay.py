"""``fuzzptx replay``: verdict table, expectations, JSON, and one-line errors (exit 2) for bad input."""
from __future__ import annotations

import json

import pytest

from fuzzptx import judges
from fuzzptx.engine.generate import block_seed, draw_direct
from fuzzptx.engine.replay import main_replay, same_verdict

GOOD = """// fuzzptx-repro v1
// LAUNCH: kernel=k grid=1,1,1 block=128,1,1
// BUFFER: out type=u32 count=128 init=zeros output
// BUFFER: inp type=s32 count=128 init=iota
// PARAM: n value=5
{expect}.version 8.0
.target sm_90a
.address_size 64

.visible .entry k(
	.param .u64 out,
	.param .u64 inp,
	.param .u32 n
)
{{
	.reg .b32 %r<10>;
	.reg .b64 %rd<10>;
	.reg .pred %p<4>;
	ld.param.u64 %rd1, [out];
	ld.param.u64 %rd2, [inp];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %tid.x;
	mul.wide.u32 %rd3, %r2, 4;
	add.s64 %rd4, %rd2, %rd3;
	ld.global.s32 %r3, [%rd4];
	{extra}
	add.s32 %r5, %r3, %r1;
	add.s64 %rd5, %rd1, %rd3;
	st.global.u32 [%rd5], %r5;
	ret;
}}
"""


def write(tmp_path, expect=(), extra="", edit=None):
    text = GOOD.format(expect="".join(f"// EXPECT: {e}\n" for e in expect), extra=extra)
    if edit:
        text = edit(text)
    f = tmp_path / "repro.ptx"
    f.write_text(text)
    return str(f)


def test_expectations_hold_exit_0(tmp_path, capsys):
    f = write(tmp_path, ["ptxas: accepted", "reference: ran", "hardware: ran"])
    assert main_replay([f, "--no-hardware"]) == 0
    out = capsys.readouterr().out
    assert "judge" in out and "reference" in out and "ptxas" in out
    assert "[holds] ptxas: accepted" in out and "[not run] hardware: ran" in out
    assert "all expectations hold" in out


def test_changed_expectation_exit_1_and_json(tmp_path, capsys):
    f = write(tmp_path, ["ptxas: rejected (line 3: nonsense)", "rule: none"])
    assert main_replay([f, "--no-hardware", "--json"]) == 1
    obj = json.loads(capsys.readouterr().out)
    assert obj["status"] == "changed"
    by = {e["judge"]: e for e in obj["expectations"]}
    assert by["ptxas"]["status"] == "changed" and by["ptxas"]["actual"].startswith("accepted")
    assert by["rule"]["status"] == "label"
    assert {j["judge"] for j in obj["judges"]} >= {"reference", "ptxas", "hardware"}


def test_hardware_skips_cleanly_without_gpu(tmp_path, capsys):
    pytest.importorskip("fuzzptx.oracles.hardware")
    from fuzzptx.oracles import hardware

    if hardware.gpu_available() is None:
        pytest.skip("a GPU is present")
    f = write(tmp_path, ["reference: ran"])
    assert main_replay([f]) == 0
    assert "skipped" in capsys.readouterr().out


@pytest.mark.parametrize("case,expect_in", [
    ("missing_buffer", "no BUFFER or PARAM"),
    ("oob", "out-of-bounds load"),
    ("bad_header", "LAUNCH kernel=zz"),
    ("bad_type", "type="),
    ("missing_file", "cannot read"),
])
def test_bad_input_one_line_exit_2(tmp_path, capsys, case, expect_in):
    if case == "missing_buffer":
        f = write(tmp_path, edit=lambda t: t.replace("// BUFFER: inp type=s32 count=128 init=iota\n", ""))
    elif case == "oob":
        f = write(tmp_path, edit=lambda t: t.replace("inp type=s32 count=128", "inp type=s32 count=100"))
    elif case == "bad_header":
        f = write(tmp_path, edit=lambda t: t.replace("kernel=k ", "kernel=zz "))
    elif case == "bad_type":
        f = write(tmp_path, edit=lambda t: t.replace("type=s32", "type=int9"))
    else:
        f = str(tmp_path / "nope.ptx")
    assert main_replay([f, "--no-hardware"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err and expect_in in err
    assert f in err  # names the file (and the line where there is one)
    if case == "oob":
        assert err.split(f + ":")[1].split(":")[0].isdigit()


def test_a_recorded_reference_error_is_a_verdict_not_bad_input(tmp_path, capsys):
    """A fuzz finding's repro may record the reference's error (an out-of-bounds access is what a
    mutant is about): replay compares it like any verdict instead of refusing the file."""
    oob = lambda t: t.replace("inp type=s32 count=128", "inp type=s32 count=100")  # noqa: E731
    f = write(tmp_path, ["ptxas: accepted", "reference: error: <program>:34: out-of-bounds load"], edit=oob)
    assert main_replay([f, "--no-hardware"]) == 0
    out = capsys.readouterr().out
    assert "[holds] reference: error" in out and "out-of-bounds load" in out
    f = write(tmp_path, ["reference: ran"], edit=oob)
    assert main_replay([f, "--no-hardware"]) == 1
    assert "[changed] reference: ran" in capsys.readouterr().out


def test_same_verdict_rules():
    assert same_verdict("ptxas", "accepted C7519@12", "accepted  C7519@12")
    assert not same_verdict("ptxas", "accepted C7519@12", "accepted")
    assert same_verdict("ptxas", "rejected (line 3: x)", "rejected (line 3: y)")
    assert not same_verdict("ptxas", "rejected", "accepted")
    assert same_verdict("reference", "ran", "ran")


def test_checker_labels_of_the_generator():
    """The strategies label programs legal / illegal: rule / undefined: rule; the checker says
    clean or names its rules, the model's ptxas.* forecasts beside them."""
    assert same_verdict("checker", "legal", "clean")
    assert same_verdict("checker", "legal", "findings ptxas.C7511")
    assert not same_verdict("checker", "legal", "findings spec.pipeline.no-wait")
    assert same_verdict("checker", "illegal: isa.imm", "findings isa.imm.scale-d,ptxas.error")
    assert not same_verdict("checker", "illegal: isa.imm", "findings isa.immediate")
    assert not same_verdict("checker", "undefined: spec.async", "clean")


def test_generated_programs_replay_with_their_labels_holding():
    """A program as the campaign draws it, judged alone by the real checker, keeps its checker
    label: legal ones and mutated ones."""
    checker = judges.get("checker")
    seen = set()
    for p in draw_direct(16, block_seed(2, 0)):
        label = dict(p.expect).get("checker")
        if label is None:
            continue
        actual = checker.summary(checker.judge(p, None))["checker"]
        assert same_verdict("checker", label, actual), (label, actual)
        seen.add(label.split(":")[0])
    assert "legal" in seen and seen & {"illegal", "undefined"}


def test_instruction_outside_the_reference_subset_skips_that_judge_only(tmp_path, capsys):
    """Not bad input: ptxas and the other judges still run, and their expectations are checked."""
    f = write(tmp_path, ["ptxas: accepted", "reference: ran"], extra="vmad.u32.u32.u32 %r6, %r3, %r3, %r3;")
    assert main_replay([f, "--no-hardware"]) == 0
    out = capsys.readouterr().out
    assert "unsupported" in out and "vmad" in out and f + ":" in out
    assert "[holds] ptxas: accepted" in out and "[not run] reference: ran" in out


def test_a_metamorphic_repro_reruns_its_pairs(tmp_path, capsys):
    """A repro whose signature is a metamorphic one reruns the pairs (on the reference for a
    ``reference:`` signature) and says whether the signature still holds; a ``hardware:`` one
    without a GPU is skipped with the reason, never a traceback."""
    from dataclasses import replace

    from fuzzptx.judges.metamorphic import ReferenceJudge, check_program
    from test_metamorphic import chained

    p = chained()
    assert check_program(p, ReferenceJudge()).relations
    for sig, want in (("reference:pipelined!=serialised|mismatch|wgmma.f32.f16", "signature gone"),
                      ("hardware:O3!=O0|mismatch|wgmma.f32.f16", None)):
        f = tmp_path / "meta.ptx"
        f.write_text(replace(p, signature=sig).to_ptx())
        main_replay([str(f), "--json", "--no-hardware"])
        rows = {r["judge"]: r for r in json.loads(capsys.readouterr().out)["judges"]}
        if want:
            assert "pair(s)" in rows["metamorphic"]["verdict"] and rows["metamorphic"]["details"] == want
        else:
            assert rows["metamorphic"]["verdict"] == "skipped" and "needs the GPU" in rows["metamorphic"]["details"]


def test_a_crashing_reference_is_a_row_not_a_traceback(tmp_path, capsys, monkeypatch):
    """Whatever the reference raises, replay prints its table (the crash as the reference's
    verdict, as the differ records it) and never a traceback."""
    from fuzzptx.judges import builtin

    def boom(*a, **k):
        raise ValueError("planted crash")

    monkeypatch.setattr(builtin, "run_program", boom)  # the reference judge's interpreter
    f = write(tmp_path, ["ptxas: accepted"])
    assert main_replay([f, "--no-hardware"]) == 0
    captured = capsys.readouterr()
    assert "internal error: ValueError: planted crash" in captured.out and "Traceback" not in captured.err


def test_a_crashing_checker_is_a_finding_not_a_traceback(tmp_path, capsys, monkeypatch):
    from fuzzptx.judges import builtin

    def boom(*a, **k):
        raise RuntimeError("planted checker crash")

    monkeypatch.setattr(builtin, "check_and_predict", boom)  # what the checker judge calls
    f = write(tmp_path, ["ptxas: accepted", "checker: clean"])
    assert main_replay([f, "--no-hardware"]) == 1  # the recorded checker verdict can no longer be read
    captured = capsys.readouterr()
    assert "internal error: RuntimeError: planted checker crash" in captured.out and "checker:crash" in captured.out
    assert "Traceback" not in captured.err
