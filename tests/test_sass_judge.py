"""The ``sass`` judge: the GMMA pipeline rules on the SASS ptxas emitted, for programs the checker
finds defined (fuzzptx.oracles.sass; docs/sass.md; reports/findings/README.md)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fuzzptx.judges import differ
from fuzzptx.oracles import sass
from fuzzptx.program import Program

ROOT = Path(__file__).resolve().parents[1]
HANG = ROOT / "reports" / "findings" / "ptxas_O3_inflight_acc_call.ptx"
REPEATED = ROOT / "reports" / "findings" / "ptxas_O3_repeated_wgmma_campaign.ptx"
needs_disassembler = pytest.mark.skipif(sass.disassembler() is None, reason="no disassembler (pip install nvidia-cuda-nvdisasm)")


@needs_disassembler
def test_the_hanging_kernel_is_a_sass_finding_without_a_gpu():
    p = Program.from_file(str(HANG))
    v = differ.judge(p, ("checker", "ptxas", "sass"))
    rules = [rule for rule, _, _ in v.sass]
    assert "inflight-write" in rules and "inflight-read" in rules
    first = next(line for rule, line, _ in v.sass if rule == "inflight-write")
    assert "MOV R152, 0x350" in first and "QGMMA.64x8x32" in first  # the return address, over the accumulator
    (f,) = [f for f in differ.compare(p, v) if f.signature.startswith("sass")]  # one cause, two pieces of evidence
    assert f.signatures == ("sass:inflight-write|wgmma.f32.e5m2.e4m3", "sass:inflight-read|wgmma.f32.e5m2.e4m3")
    assert (f.root_cause.judges, f.root_cause.pattern) == ("sass", "inflight-register")
    summary = v.summary()
    assert summary["sass"].startswith(f"{len(v.sass)} hazard(s): ")
    assert "MOV R152, 0x350" in summary["sass-at"] and "/*0330*/" in summary["sass-excerpt"]


@needs_disassembler
def test_the_repeated_wgmma_collapse_is_a_dropped_gmma():
    p = Program.from_file(str(REPEATED))
    v = differ.judge(p, ("checker", "ptxas", "sass"))
    assert [rule for rule, _, _ in v.sass] == ["gmma-dropped"]
    assert "4 m64n32k32 wgmma(s) must execute, a SASS path holds 3 such GMMA(s)" in v.sass[0][1]
    assert [f.signature for f in differ.compare(p, v) if f.signature.startswith("sass")] == \
        ["sass:gmma-dropped|wgmma.s32.u8"]


@needs_disassembler
def test_a_program_that_writes_in_flight_itself_is_not_scanned():
    from fuzzptx.strategies.mutations import MUTATIONS

    p = Program.from_file(str(HANG))
    mutate = next(m for m in MUTATIONS if m.name == "acc_write_in_flight")
    q = mutate.apply(p, 0)
    if q is None:
        pytest.skip("the mutation does not apply to this kernel")
    v = differ.judge(q, ("checker", "sass"))
    assert v.sass is None and "illegal or undefined" in v.sass_skipped


def test_without_a_disassembler_the_judge_says_so(monkeypatch):
    from fuzzptx.judges import builtin

    from fuzzptx.oracles import toolchains

    monkeypatch.setattr(builtin, "disassembler", lambda: None)  # what the sass judge asks
    monkeypatch.setattr(toolchains, "local_nvdisasm", lambda: None)  # ... and a cached release's nvdisasm
    v = differ.judge(Program.from_file(str(HANG)), ("sass",))
    assert v.sass is None and "no disassembler" in v.sass_skipped
    assert not [f for f in differ.compare(Program.from_file(str(HANG)), v) if f.signature.startswith("sass")]


def test_shrinking_a_sass_finding_runs_the_judges_it_needs():
    assert set(differ.judges_for("sass:inflight-write|wgmma.f32.f16")) >= {"sass", "checker"}


@needs_disassembler
def test_a_campaign_runs_the_sass_judge_on_accepted_programs(tmp_path):
    out = tmp_path / "c"
    subprocess.run([sys.executable, "-m", "fuzzptx.cli", "campaign", "--gpus", "none", "--examples", "8", "--block-size", "8",
                    "--workers", "1", "--judges", "checker,ptxas,sass", "--quiet", "--out", str(out)],
                   check=True, capture_output=True, timeout=600)
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    accepted = [r for r in recs if r["verdicts"].get("ptxas", "").startswith("accepted")]
    assert accepted and all("sass" in r["verdicts"] for r in accepted)


@needs_disassembler
def test_blocks_prepared_as_a_group_share_one_disassembly_and_keep_their_verdicts(monkeypatch):
    """``block.pool_blocks`` (a campaign's pool task where the SASS judge defers its disassembly):
    one disassembler run for the group, and each block's verdicts as ``pool_block`` gives them."""
    from fuzzptx.engine import block
    from fuzzptx.engine.generate import BlockTask
    from fuzzptx.oracles.sass import listing

    runs: list[int] = []
    real = listing.run_disassembler
    monkeypatch.setattr(listing, "run_disassembler", lambda data, tool: runs.append(len(data)) or real(data, tool))
    tasks = [BlockTask(b, 60, 12, ("checker", "ptxas", "sass")) for b in range(2)]
    listing._CACHE.clear()
    alone = [block.pool_block(t) for t in tasks]
    assert len(runs) == 2
    listing._CACHE.clear()
    runs.clear()
    grouped = block.pool_blocks(tasks)
    assert len(runs) == 1 and runs[0] > 0  # the group's code, in one run
    judged = 0
    for a, g in zip(alone, grouped):
        assert not isinstance(g, str), g
        assert [v.summary() for v in a.verdicts] == [v.summary() for v in g.verdicts]
        assert [v.sass for v in a.verdicts] == [v.sass for v in g.verdicts]
        assert g.seconds["sass"] > 0
        judged += sum(1 for v in g.verdicts if v.sass is not None)
    assert judged > 0  # the SASS judge gave verdicts, not only skips
