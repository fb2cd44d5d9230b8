"""Findings are classed by what they mean: compiler bug candidate, hardware or spec deviation, or
a gap in our own models -- one table (``fuzzptx.judges.finding.CLASS_RULES``)."""
from __future__ import annotations

import pytest

from fuzzptx.judges.differ import after_sass_hazards, judges_for
from fuzzptx.judges.finding import CLASSES, COMPILER, HARDWARE, MODEL, Finding, classify

CASES = [
    ("checker!=ptxas|missed:C7512|wgmma.sp.f16.f16", MODEL),
    ("expect!=ptxas|wrong_scale_d|wgmma.f32.f16", MODEL),
    ("reference:error:BadAddress:out-of-bounds|mma.f32.f16", MODEL),
    ("reference:crash|wgmma.f32.f16", MODEL),
    ("checker:crash|other", MODEL),
    ("differ:crash|other", MODEL),
    ("mmasim!=hardware|mismatch|wgmma.f32.e4m3", MODEL),
    ("reference:O3!=O0|mismatch|wgmma.f32.f16", MODEL),
    ("hardware:pipelined!=planted|mismatch|wgmma.f32.f16", MODEL),
    ("ptxas:timeout|wgmma.f32.f16", COMPILER),
    ("sass:inflight-write|wgmma.f32.f16", COMPILER),
    ("reference!=hardware|mismatch-repeated-wgmma|wgmma.f32.f16", COMPILER),
    ("hardware:O3!=O0|mismatch|wgmma.f32.f16", COMPILER),
    ("reference!=hardware|mismatch-after-sass-hazard|wgmma.f32.e4m3", COMPILER),
    ("hardware:fault-after-sass-hazard:illegal address|wgmma.f16.f16", COMPILER),
    ("hardware:pipelined!=serialised|mismatch|wgmma.f32.f16", COMPILER),
    ("reference!=hardware|mismatch|wgmma.f32.e4m3", HARDWARE),
    ("hardware:fault:trap|other", HARDWARE),
    ("hardware:nondeterministic|O3|wgmma.f32.f16", HARDWARE),
    ("zerosim!=reference|mismatch|wgmma.f32.f16", HARDWARE),
    ("zerosim:fault|wgmma.f32.f16", MODEL),
]


@pytest.mark.parametrize("signature,cls", CASES)
def test_each_pair_has_its_class(signature, cls):
    assert classify(signature) == cls and Finding(signature, "").kind == cls


def test_every_class_is_reachable_and_unknown_pairs_are_ours():
    assert {cls for _, cls in CASES} == set(CLASSES)
    assert classify("newjudge?|what|family") == MODEL


def test_releases_that_disagree_and_a_release_that_crashes_are_compiler_findings():
    assert classify("ptxas@12.9.86!=ptxas@13.5.37|rejected-then-accepted|wgmma.f32.f16") == COMPILER
    assert classify("ptxas!=ptxas@13.5.37|accepted-then-rejected|wgmma.f32.f16") == COMPILER
    assert classify("ptxas@12.4.131:crash|wgmma.f32.f16") == COMPILER
    assert classify("ptxas@12.9.86!=ptxas|rejected-then-accepted|wgmma.f32.f16") == COMPILER


def test_a_gpu_outcome_beside_a_sass_hazard_is_the_hazards_consequence():
    """A mismatch or fault in a program whose SASS has a hazard is a compiler bug candidate; the
    same outcome without a hazard stays a hardware or spec deviation."""
    gpu = [Finding("reference!=hardware|mismatch|wgmma.f32.e4m3", "3 element(s) differ"),
           Finding("hardware:fault:illegal address|wgmma.f16.f16", "the GPU faulted: illegal address")]
    assert after_sass_hazards(gpu) == gpu and all(f.kind == HARDWARE for f in gpu)
    hazard = Finding("sass:inflight-write|wgmma.f16.f16", "R60 written in flight")
    named = after_sass_hazards(gpu + [hazard])
    assert [f.signature for f in named] == ["reference!=hardware|mismatch-after-sass-hazard|wgmma.f32.e4m3",
                                            "hardware:fault-after-sass-hazard:illegal address|wgmma.f16.f16",
                                            "sass:inflight-write|wgmma.f16.f16"]
    assert [f.kind for f in named] == [COMPILER] * 3
    assert "inflight-write" in named[0].message and ("sass hazards", ("sass:inflight-write",)) in named[0].evidence
    # shrinking or replaying such a finding runs the judges that make it: the GPU, the SASS and the checker
    assert {"hardware", "sass", "checker"} <= set(judges_for(named[1].signature))
