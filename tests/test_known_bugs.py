"""Bugs, not findings: one finding per root cause per program, the known-bug ledger's bugs found
again with --rediscover within their budgets, their shapes turned down by default, and a new root
cause (planted by a test judge) shown as new in the headline, the report and JUnit, with its
bundle written."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fuzzptx import cli
from fuzzptx.judges import differ, registry
from fuzzptx.judges.compile_pairs import COMPILE_PAIRS
from fuzzptx.oracles.ptxas import compile_ptx
from fuzzptx.judges.base import Context, Judge
from fuzzptx.judges.finding import COMPILER, Finding, RootCause, merge
from fuzzptx.oracles.hardware import HwResult, gpu_available
from fuzzptx.oracles.reference import run_program
from fuzzptx.program import Program
from fuzzptx.strategies.avoid import AVOIDABLE
from fuzzptx.strategies.shapes import SHAPES
from fuzzptx.triage.buckets import Triage, record_causes
from fuzzptx.triage.known import load_known

ROOT = Path(__file__).resolve().parents[1]
LEDGER = ROOT / "reports" / "known_bugs.toml"


def test_one_programs_findings_of_one_cause_are_one_finding():
    """The H100 campaign's case: a fault in SASS with an in-flight hazard, and the hazard read and
    written, were three findings with three repros; they are one bug with three pieces of evidence."""
    fs = [Finding("sass:inflight-write|wgmma.f32.e5m2.e4m3", "w"), Finding("sass:inflight-read|wgmma.f32.e5m2.e4m3", "r"),
          Finding("hardware:fault:illegal instruction|wgmma.s32.s8", "f"),
          Finding("checker!=ptxas|missed:C7512|wgmma.f32.f16", "c")]
    out = merge(differ.after_sass_hazards(fs))
    assert [f.root_cause for f in out] == [RootCause("sass", "gmma-pipeline", "inflight-register", "wgmma"),
                                           RootCause("checker!=ptxas", "missed:C7512", "", "wgmma")]
    assert out[0].signatures == ("sass:inflight-write|wgmma.f32.e5m2.e4m3", "sass:inflight-read|wgmma.f32.e5m2.e4m3",
                                 "hardware:fault-after-sass-hazard:illegal instruction|wgmma.s32.s8")
    assert out[0].kind == COMPILER
    # the repeated-wgmma family: the SASS losing a GMMA and the GPU's mismatch it explains are one cause,
    # whatever the type mix
    a = merge([Finding("sass:gmma-dropped|wgmma.f32.f16", "")])[0].root_cause
    b = merge([Finding("reference!=hardware|mismatch-repeated-wgmma|wgmma.sp.s32.u8.s8", "")])[0].root_cause
    assert a == b == RootCause("sass", "gmma-pipeline", "gmma-missing", "wgmma")


def test_old_records_triage_by_root_cause():
    """A record written before findings carried a cause (one finding per signature) buckets by cause."""
    old = {"id": "1:2", "instructions": 40, "findings": [
        {"signature": "hardware:fault-after-sass-hazard:illegal instruction|wgmma.s32.s8", "message": "", "repro": "a.ptx"},
        {"signature": "sass:inflight-write|wgmma.f32.e5m2.e4m3", "message": "", "repro": "b.ptx"},
        {"signature": "sass:inflight-read|wgmma.f32.e5m2.e4m3", "message": "", "repro": "c.ptx"}]}
    (cause, fs), = record_causes(old)
    assert cause.pattern == "inflight-register" and len(fs) == 3
    t = Triage()
    t.add_record(old, "old.jsonl")
    t.add_record({**old, "id": "1:3", "instructions": 30, "findings": old["findings"][1:2]}, "old.jsonl")
    (b,) = t.buckets.values()
    assert b.count == 2 and b.smallest["id"] == "1:3" and b.evidence["sass:inflight-write|wgmma.f32.e5m2.e4m3"] == 2
    assert b.signature == "sass:inflight-write|wgmma.f32.e5m2.e4m3"


def test_a_ptxas_crash_on_an_immediate_descriptor_is_diagnosed_as_the_ledgers_bug():
    """Real ptxas (the pinned 13.0.88 crashes): the crash's cause carries the program's pattern."""
    p = Program.from_file(str(ROOT / "reports/findings/ptxas_O3_crash_immediate_descriptor.ptx"))
    v = differ.judge(p, ("ptxas",))
    (f,) = [f for f in differ.compare(p, v) if f.signature.startswith("ptxas:crash")]
    assert f.root_cause == RootCause("ptxas", "crash", "immediate-descriptor", "wgmma")
    assert [k.id for k in load_known(LEDGER) if k.matches(f.root_cause)] == ["ptxas-o3-crash-immediate-descriptor"]
    # another crash is another bug: without the pattern no diagnosis
    assert differ.diagnose([Finding("ptxas:crash|wgmma.f32.f16", "")], Program.from_file(
        str(ROOT / "reports/findings/ptxas_O3_repeated_wgmma_gmma_dropped.ptx")))[0].root_cause.pattern == ""


def test_the_h100s_fp8_accumulator_in_spec_numerics_is_the_known_hardware_behaviour():
    """A GPU whose outputs the bit-exact H100 model gives, judged in spec numerics: the ledger's
    e8m13 bug, not a new mismatch; outputs that are neither are a plain mismatch."""
    p = replace(Program.from_file(str(ROOT / "corpus/hw_fp8_f32_accumulator_e8m13.ptx")), numerics="spec")
    v = differ.judge(p, ("reference",))
    hw = run_program(replace(p, numerics="hardware"), mode="hardware")
    v.hardware = HwResult(outputs={b.name: hw.bytes(b.name) for b in p.outputs()})
    (f,) = [f for f in differ.compare(p, v) if f.signature.startswith("reference!=hardware")]
    assert f.signature.split("|")[1] == "mismatch-hardware-numerics"
    assert [k.id for k in load_known(LEDGER) if k.matches(f.root_cause, {"numerics": "spec"})] == \
        ["h100-fp8-f32-accumulator-e8m13"]
    assert not any(k.matches(f.root_cause, {"numerics": "hardware"}) for k in load_known(LEDGER))
    v.hardware = HwResult(outputs={name: bytes(len(data)) for name, data in v.hardware.outputs.items()})
    (g,) = [f for f in differ.compare(p, v) if f.signature.startswith("reference!=hardware")]
    assert g.signature.split("|")[1] == "mismatch" and not any(k.matches(g.root_cause, {"numerics": "spec"})
                                                               for k in load_known(LEDGER))


def _shapes(p: Program) -> set[str]:
    note = next((n for n in p.notes if n.startswith("shapes: ")), "shapes: ")
    return set(note[len("shapes: "):].split())


def test_avoidance_turns_down_the_known_bugs_shapes():
    """The options the ledger names keep the strategies from drawing the repeated and restarted
    wgmmas behind the two ptxas -O3 miscompiles; without them the same seed draws them."""
    from fuzzptx.engine.generate import draw_direct

    plain = draw_direct(96, 11)
    avoided = draw_direct(96, 11, avoid=frozenset(AVOIDABLE))
    known_shapes = {"repeat_in_group", "repeat_across_commit", "restart_in_flight"}
    assert known_shapes <= set(SHAPES)
    assert set().union(*map(_shapes, plain)) & known_shapes == known_shapes
    assert not set().union(*map(_shapes, avoided)) & known_shapes
    assert set().union(*map(_shapes, avoided)) & {"loop_in_flight", "call_in_flight"}  # the windows stay


def _needs_gpu(signature: str | None) -> bool:
    """A repro whose signature is the GPU's evidence (it against the reference, or a compile pair)."""
    return bool(signature) and signature.split("|", 1)[0].startswith(("hardware", "reference!=hardware"))


@pytest.mark.slow
def test_rediscover_finds_each_known_bug_within_its_budget(tmp_path):
    """``--rediscover`` (no avoidance): each ledger bug with a program budget is found again within it
    (CPU judges, real ptxas); a bug whose budget is its repro is found by judging the repro alone."""
    ledger = load_known(LEDGER)
    runs: dict[tuple[int, str], list[Any]] = defaultdict(list)
    for k in ledger:
        b = k.budget()
        if b.get("repro"):
            p = Program.from_file(str(ROOT / k.repro))
            rule = dict(k.cause).get("rule", "")
            if rule.startswith("crashed:") and not p.signature:
                # a compile pair's other build kills ptxas: no GPU needed to see it (the pinned release)
                build = next(c.build for c in COMPILE_PAIRS if c.name == rule.split(":", 1)[1])
                r = compile_ptx(p.to_ptx(), opt_level=build.opt_level, extra_args=build.options, want_cubin=False)
                assert r.returncode < 0, (k.id, r.returncode)
                continue
            if _needs_gpu(p.signature) and gpu_available() is not None:
                # no GPU here: the repro's own signature, diagnosed on its program, names this bug
                (f,) = differ.diagnose([Finding(p.signature, "the repro's signature")], p)
                assert k.matches(f.root_cause), (k.id, str(f.root_cause))
                continue
            judges = ("ptxas", "reference", "hardware", "metamorphic") if _needs_gpu(p.signature) else ("ptxas", "checker")
            found = differ.compare(p, differ.judge(p, judges))
            assert any(k.matches(f.root_cause) for f in found), (k.id, [str(f.root_cause) for f in found])
        elif b:
            runs[(b["seed"], b.get("judges", "checker,ptxas,sass"))].append(k)
    assert runs
    for (seed, judges), bugs in runs.items():
        n = max(k.budget()["programs"] for k in bugs)
        out = tmp_path / f"seed{seed}"
        assert cli.main(["run", "--examples", str(n), "--seed", str(seed), "--judges", judges, "--rediscover",
                         "--shrink-budget", "0", "--workers", "0", "--quiet", "--no-bundles", "--known", str(LEDGER),
                         "--out", str(out), "--json"]) == 0
        summ = json.loads((out / "summary.json").read_text())
        first = {b["known"]: b["first_seen_programs"] for b in summ["bugs"]["bugs"] if b["known"]}
        for k in bugs:
            assert k.id in first and first[k.id] <= k.budget()["programs"], (k.id, first)


class PlantedJudge(Judge):
    """A plugin judge registered by the test: it flags a PTX pattern (an ``ldmatrix``), a cause no
    ledger lists, as a simulator's disagreement with the reference (a hardware or spec deviation:
    bundled for its owner, as a compiler bug would be)."""

    name = "planted"

    def judge(self, program: Program, ctx: Context) -> Any:
        return "ldmatrix" in ctx.text

    def summary(self, verdict: Any) -> dict[str, str]:
        return {"planted": "ldmatrix seen" if verdict else "clean"}

    def findings(self, program: Program, v, family: str, *, full: Any = None) -> list[Finding]:
        return [Finding(f"planted!=reference|ldmatrix-seen|{family}", "the planted judge saw an ldmatrix")] \
            if v.get("planted") else []


@pytest.fixture
def planted():
    registry.register(PlantedJudge)
    yield PlantedJudge.name
    registry.unregister(PlantedJudge.name)


def test_a_planted_root_cause_is_new_in_the_headline_report_and_junit_with_its_bundle(tmp_path, planted, capsys):
    out = tmp_path / "run"
    assert cli.main(["run", "--examples", "32", "--seed", "3", "--judges", f"ptxas,{planted}", "--shrink-budget", "0",
                     "--workers", "0", "--quiet", "--known", str(LEDGER), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    summ = json.loads((out / "summary.json").read_text())
    bugs = summ["bugs"]["bugs"]
    mine = [b for b in bugs if b["judges"] == f"{planted}!=reference"]
    assert mine and all(b["new"] for b in mine) and mine[0]["rule"] == "ldmatrix-seen"
    new = sum(b["new"] for b in bugs)
    assert f"distinct bugs: {len(bugs)} (new: {new})" in printed and summ["bugs"]["headline"] in printed
    assert bugs[0]["new"]  # new bugs first
    assert any(line.lstrip().startswith("NEW") and "planted!=reference ldmatrix-seen" in line for line in printed.splitlines())
    bundle = Path(mine[0]["bundle"])
    assert bundle.parent == out / "bundles" and (bundle / "README.md").is_file() and (bundle / "repro.ptx").is_file()
    assert json.loads((bundle / "bundle.json").read_text())["signature"].startswith("planted!=reference|ldmatrix-seen|")
    # the report and its JUnit XML
    assert cli.main(["report", str(out), "--known", str(LEDGER)]) == 0
    rep = capsys.readouterr().out
    assert f"distinct bugs: {len(bugs)} (new: {new})" in rep and "NEW" in rep and "planted!=reference ldmatrix-seen" in rep
    page = (out / "report.html").read_text()
    assert "planted!=reference|ldmatrix-seen" in page and "<b>new</b>" in page and "bundle</a>" in page
    cases = ET.parse(out / "junit.xml").getroot().iter("testcase")
    failed = {c.get("name"): c.find("failure").get("message") for c in cases if c.find("failure") is not None}
    key = mine[0]["cause"]
    assert key in failed and failed[key].startswith("new bug: planted!=reference ldmatrix-seen")
    assert any(c.get("name").endswith(f"distinct bugs: {len(bugs)} (new: {new})")
               for c in ET.parse(out / "junit.xml").getroot().iter("testcase"))
