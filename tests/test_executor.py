"""One executor: replay, the release matrix and bisect, the reducer's predicate and the pytest
plugin judge through the engine's stages (``fuzzptx.engine.executor``), as run and campaign do;
and a run's summary counts what each compiler that ran accepted."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fuzzptx.engine import block
from fuzzptx.engine.executor import Executor
from fuzzptx.judges import registry
from fuzzptx.judges.base import METAMORPHIC, Context, Done, Judge
from fuzzptx.judges.selection import JudgeSet
from fuzzptx.program import Program

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "reports/findings/ptxas_O3_inflight_acc_call_small.ptx"
CRASH = ROOT / "reports/findings/ptxas_O3_crash_immediate_descriptor.ptx"


class StagedJudge(Judge):
    """A plugin judge of a GPU-side stage: judged by ``prepare`` (``Done``) where the run holds no
    GPU, as the engine's stages judge it; ``judge`` (the one-program path) says something else."""

    name = "staged-test"
    stage = METAMORPHIC
    needs = frozenset()

    def judge(self, program: Program, ctx: Context) -> Any:
        return "judged alone"

    def prepare(self, program: Program, text: str, compiled: Any, *, gpu: bool, verdicts: Any = None) -> Any:
        return Done("through the stages")


@pytest.fixture
def staged():
    judge = StagedJudge()
    registry.register(judge)
    try:
        yield judge
    finally:
        registry.unregister(judge.name)


@pytest.fixture
def stages_seen(monkeypatch):
    """Each block the engine's pool stages judge: its programs' count."""
    seen: list[int] = []
    real = block.pool_stages

    def spy(st):
        out = real(st)
        seen.append(len(out.programs))
        return out

    monkeypatch.setattr(block, "pool_stages", spy)
    import fuzzptx.engine.executor as ex

    monkeypatch.setattr(ex, "pool_stages", spy)
    return seen


def test_replay_judges_through_the_stages(stages_seen, staged, capsys):
    from fuzzptx.engine.replay import main_replay

    assert main_replay([str(SMALL), "--json", "--judges", "staged-test"]) == 0
    out = capsys.readouterr().out
    assert stages_seen == [1]
    assert '"through the stages"' in out and "judged alone" not in out


def test_plugin_check_program_judges_through_the_stages(stages_seen, staged, tmp_path):
    from fuzzptx.pytest_plugin import check_program

    class Cfg:
        judges = JudgeSet.of(("checker", "ptxas", "staged-test"))
        repro_dir = str(tmp_path)
        fail_on = None
        numerics = None
        known = ()

    check_program(Program.from_file(str(SMALL)), Cfg())
    assert stages_seen == [1]


def test_matrix_and_bisect_judge_each_release_through_the_stages(stages_seen):
    from fuzzptx.engine import matrix

    program = Program.from_file(str(CRASH))
    res = matrix.bisect(program, CRASH.read_text(), "ptxas:crash", "12.9.86,13.5.37")
    assert stages_seen == [1, 1]  # one block of one program per release
    # 12.9.86 -O3 crashes on it, 13.5.37 assembles it (reports/findings/README.md)
    assert res["holds"] == {"12.9.86": True, "13.5.37": False}


def test_reducer_predicate_is_one_block_up_to_the_first_hit(stages_seen, monkeypatch):
    """A batch of candidates is one block (one batched compile); the other judges stop at the first that holds."""
    from fuzzptx.engine.predicate import signature_predicate
    from fuzzptx.judges import differ

    judged: list[int] = []
    real = differ.judge

    def counting(program, *a, **k):
        judged.append(1)
        return real(program, *a, **k)

    monkeypatch.setattr(differ, "judge", counting)
    rejected = Program.from_file(str(ROOT / "corpus/spec_mma_sp_selector_2.ptx"))  # checker!=ptxas|reject
    holds = signature_predicate("checker!=ptxas|reject")
    assert holds([Program.from_file(str(SMALL)), rejected, rejected]) == [False, True, False]
    assert stages_seen == [3] and len(judged) == 2  # the third candidate is never judged


def test_executor_verdicts_stop_at_until_and_keep_failures():
    ex = Executor(JudgeSet.of(("checker",)))
    p = Program.from_file(str(SMALL))
    vs = ex.verdicts([p, p, p], until=lambda k, prog, v: k == 1)
    assert len(vs) == 2 and all("checker" in v for v in vs)


def test_executor_compiles_with_the_release_asked_for():
    """The compile stage's release is the executor's (the matrix's row), not the pinned ptxas."""
    from fuzzptx.oracles import toolchains

    (tc,) = toolchains.resolve("13.5.37")
    p = Program.from_file(str(CRASH))
    pinned = Executor(("ptxas",)).judge(p, CRASH.read_text(), p)
    other = Executor(("ptxas",), toolchain=tc).judge(p, CRASH.read_text(), p)
    assert other.release == "13.5.37" and other["ptxas"].accepted
    assert pinned.release is None and pinned["ptxas"].returncode < 0  # the pinned 13.0.88 -O3 crashes


def test_summary_counts_the_releases_that_ran(tmp_path):
    """``--ptxas`` naming only a release other than the pinned one: the summary counts that
    release's acceptances (the pinned ptxas did not run and is not counted as 0)."""
    from fuzzptx.engine.run import format_summary, run
    from fuzzptx.judges.selection import select

    s = run(8, 3, select("checker,ptxas", "13.5.37"), tmp_path / "r", batch=8, progress=False, repros=False)
    assert set(s["accepted"]) == {"ptxas@13.5.37"}
    assert s["accepted"]["ptxas@13.5.37"] > 0 and s["ptxas_accepted"] == s["accepted"]["ptxas@13.5.37"]
    text = format_summary(s, tmp_path / "r")
    assert f"ptxas@13.5.37 accepted {s['accepted']['ptxas@13.5.37']}" in text
    assert "ptxas accepted 0" not in text
    pinned = run(8, 3, select("checker,ptxas"), tmp_path / "p", batch=8, progress=False, repros=False)
    assert set(pinned["accepted"]) == {"ptxas"} and f"ptxas accepted {pinned['ptxas_accepted']}" in format_summary(
        pinned, tmp_path / "p")
