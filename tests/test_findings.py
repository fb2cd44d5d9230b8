"""The files kept under reports/findings/ stay true: each parses as a repro and real ptxas still
says what its EXPECT line records; the in-flight register reuse of ptxas -O3 is still in the SASS
(``fuzzptx.oracles.sass``, with nvdisasm from the nvidia-cuda-nvdisasm wheel)."""
from __future__ import annotations

from pathlib import Path

import pytest

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
        if want is not None:
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
