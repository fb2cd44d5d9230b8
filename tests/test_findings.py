"""The files kept under reports/findings/ stay true: each parses as a repro and real ptxas still
says what its EXPECT line records; the in-flight register reuse of ptxas -O3 is still in the SASS
(``fuzzptx.oracles.sass``, with nvdisasm from the nvidia-cuda-nvdisasm wheel)."""
from __future__ import annotations

from pathlib import Path

import pytest

from fuzzptx.judges import differ
from fuzzptx.judges.finding import COMPILER, classify
from fuzzptx.oracles.ptxas import compile_batch, compile_ptx
from fuzzptx.program import Program
from fuzzptx.oracles.sass import disassembler, hazards

FINDINGS = Path(__file__).resolve().parents[1] / "reports" / "findings"
FILES = sorted(FINDINGS.glob("*.ptx"))
INFLIGHT = sorted(FINDINGS.glob("ptxas_O3_inflight_acc_call*.ptx"))


def test_every_finding_parses_and_ptxas_still_says_so():
    programs = [Program.from_file(str(f)) for f in FILES]
    assert len(INFLIGHT) == 3
    for f, p, r in zip(FILES, programs, compile_batch([p.to_ptx() for p in programs])):
        want = dict(p.expect).get("ptxas")
        if want is not None and want.startswith("crashed"):
            # the crash needs the kernel alone in its module: merged into a batch it assembles
            r = compile_ptx(p.to_ptx(), want_cubin=False)
            assert r.returncode < 0, f"{f.name}: ptxas no longer crashes on it alone"
        elif want is not None:
            assert r.accepted == want.startswith("accepted"), f"{f.name}: ptxas now says {r.verdict}"


@pytest.mark.parametrize("path", INFLIGHT, ids=lambda p: p.stem)
def test_ptxas_O3_still_reuses_registers_of_a_wgmma_in_flight(path):
    tool = disassembler()
    if tool is None:
        pytest.skip("no disassembler (pip install nvidia-cuda-nvdisasm)")
    p = Program.from_file(str(path))
    text = p.to_ptx()
    rules = {}
    for opt in (3, 0):
        r = compile_ptx(text, opt_level=opt, want_cubin=True)
        rules[opt] = {h.rule for h in hazards(r.cubin, r.kernel(p.launch.kernel), tool)}
    assert "inflight-write" in rules[3], "ptxas -O3 no longer reuses them: update reports/findings/README.md"
    assert rules[0] == set()


CRASH = FINDINGS / "ptxas_O3_crash_immediate_descriptor.ptx"


def test_a_ptxas_crash_is_a_compiler_finding_not_a_rejection():
    """The pinned ptxas dies with SIGSEGV at -O3 on an immediate wgmma descriptor (it assembles
    the file at -O0): the ptxas judge says "crashed", the finding is a compiler bug candidate, and
    ``--keep ptxas:crash`` holds it while shrinking."""

    p = Program.from_file(str(CRASH))
    text = p.to_ptx()
    assert compile_ptx(text, opt_level=0, want_cubin=False).accepted
    judged = differ.as_judged(p, text)[0]
    v = differ.judge(judged, ("ptxas", "checker"), text=text, judged=judged)
    assert v.ptxas.returncode < 0 and differ.describe_ptxas(v.ptxas).startswith("crashed (signal ")
    found = differ.compare(judged, v)
    crash = [f for f in found if f.signature.startswith("ptxas:crash|")]
    assert crash and classify(crash[0].signature) == COMPILER
    assert differ.keep_predicate("ptxas:crash")(found, v)
    fixed = text.replace(", 0, 1, 1, 1, 0, 0;", ", %rd8, 1, 1, 1, 0, 0;")  # a register descriptor: assembled
    assert fixed != text
    v2 = differ.judge(judged, ("ptxas",), text=fixed, judged=judged)
    assert v2.ptxas.accepted and not differ.keep_predicate("ptxas:crash")([], v2)


def test_a_ptxas_error_without_a_line_reads_without_line_none():
    """ptxas names no line for an option it cannot take (``.target sm_200``): the verdict says the
    message alone, never ``line None``."""
    from fuzzptx.oracles.ptxas import PtxasResult
    from fuzzptx.oracles.ptxas_diag import Diagnostic

    res = PtxasResult(False, (Diagnostic("error", None, None, "Value 'sm_200' is not defined for option 'gpu-name'", None),),
                      None, 0.0, 255, False)
    assert differ.describe_ptxas(res) == "rejected (Value 'sm_200' is not defined for option 'gpu-name')"


def test_an_allocator_giving_up_does_not_contradict_an_accepted_label():
    """A mutant labelled 'ptxas: accepted' (its change is undefined at run time, not illegal) that
    ptxas rejects because its register allocator gave up says nothing about the label: the 4-GPU
    H200 campaign of seed 4242 counted one as a new bug (block 1239 program 31, a 38 KB sweep of
    sparse wgmmas).  Any other rejection still contradicts the label."""
    from dataclasses import replace

    from fuzzptx.engine.generate import planted_programs
    from fuzzptx.judges.base import Verdicts
    from fuzzptx.oracles.ptxas import PtxasResult
    from fuzzptx.oracles.ptxas_diag import Diagnostic

    p = planted_programs()[0][1]
    p = replace(p, expect=(("ptxas", "accepted"),), notes=p.notes + ("mutation: acc_write_in_flight (test)",))

    def rejected(message: str) -> Verdicts:
        v = Verdicts()
        v["ptxas"] = PtxasResult(False, (Diagnostic("error", None, None, message, None),), None, 0.0, 255, False)
        return v

    gave_up = rejected("Register allocation failed with register count of '255'. Compile the program with a higher "
                       "register target")
    assert gave_up.ptxas.allocation_failed()
    assert differ.expectation_findings(p, gave_up, "wgmma") == []
    other = differ.expectation_findings(p, rejected("Arguments mismatch for instruction 'wgmma'"), "wgmma")
    assert [f.signature for f in other] == ["expect!=ptxas|acc_write_in_flight|wgmma"]
