"""One run configuration, shared options, the engine's stages as judges declare them.

- counts, times and worker numbers that cannot be are one-line errors (issue 36, item 11);
- ``fuzzptx run --resume`` carries on like ``campaign --resume`` (issue 36, item 1);
- ``fuzzptx replay --json`` on a file the compiler rejects, with a GPU judge available, has a row
  for the GPU judge instead of a ``KeyError`` (issue 35);
- a second GPU judge, registered as a plugin, runs on the GPU stage beside a (fake) GPU worker
  as the hardware judge does: the engine reads its declarations, not its name;
- the configuration travels to a pool process as data: the release judges it resolved are the
  ones the process judges with, with no name resolved there.
"""
from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from fuzzptx import cli
from fuzzptx.judges import registry
from fuzzptx.judges.base import ACCEPTED, CUBIN, DEVICE, GPU, IR, Judge

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("argv, words", [
    (["run", "--examples", "-5"], "--examples -5"),
    (["run", "--examples", "0"], "--examples 0"),
    (["run", "--workers", "-1"], "--workers -1"),
    (["run", "--batch", "0"], "--batch 0"),
    (["run", "--shrink-budget", "-1"], "--shrink-budget -1"),
    (["run", "--illegal-share", "2"], "--illegal-share 2"),
    (["run", "--resume"], "--resume"),
    (["run", "--judges", "reference,oracle"], "oracle"),
    (["campaign", "--examples", "-1", "--out", "X"], "--examples -1"),
    (["campaign", "--examples", "4", "--workers", "-2", "--out", "X"], "--workers -2"),
    (["campaign", "--examples", "4", "--gpu-timeout", "0", "--out", "X"], "--gpu-timeout 0"),
    (["campaign", "--examples", "4", "--gpu-workers", "-1", "--out", "X"], "--gpu-workers -1"),
    (["replay", "x.ptx", "--bogus"], "--bogus"),
    (["bisect", "x.ptx"], "--keep"),
])
def test_bad_numbers_and_flags_are_one_line(argv, words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith(f"fuzzptx {argv[0]}: ") and words in err, err
    assert not (tmp_path / "X").exists()  # refused before any work


def _run(out: Path, *more: str) -> int:
    return cli.main(["run", "--examples", "8", "--batch", "4", "--seed", "1", "--judges", "checker", "--workers", "0",
                     "--shrink-budget", "0", "--out", str(out), "--json", *more])


def _keys(out: Path) -> list[tuple[int, int]]:
    return [(r["block"], r["index"]) for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())]


def test_run_resume_carries_on(tmp_path, capsys):
    out = tmp_path / "run"
    assert _run(out) == 0
    assert len(_keys(out)) == 8
    capsys.readouterr()
    assert _run(out) == 2  # a second run into the same record is refused ...
    assert "--resume" in capsys.readouterr().err
    assert _run(out, "--resume") == 0  # ... and --resume (which run did not have) carries on
    assert len(_keys(out)) == 8  # nothing left to judge
    assert json.loads(capsys.readouterr().out)["programs"] == 0
    assert cli.main(["run", "--examples", "12", "--batch", "4", "--seed", "1", "--judges", "checker", "--workers", "0",
                     "--shrink-budget", "0", "--out", str(out), "--json", "--resume"]) == 0
    keys = _keys(out)
    assert len(keys) == len(set(keys)) == 12
    capsys.readouterr()
    assert _run(out, "--resume", "--seed", "2") == 2  # another run's record is not carried on
    assert "seed=2" in capsys.readouterr().err


def test_replay_json_of_a_rejected_file_with_a_gpu_judge(monkeypatch, capsys):
    """The GPU judge says nothing of a program ptxas rejects; replay used to index its verdict
    (``KeyError: 'hardware'``) on a machine with a GPU.  The GPU is faked as available: the judge
    returns before it would touch one."""
    hw = registry.get("hardware")
    monkeypatch.setattr(type(hw), "available", lambda self: None)
    from fuzzptx.engine.replay import main_replay

    assert main_replay([str(ROOT / "corpus" / "spec_wmma_f64_one_register.ptx"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["judge"]: r for r in out["judges"]}
    assert rows["hardware"]["verdict"] == "not run" and "did not accept" in rows["hardware"]["details"]
    assert rows["ptxas"]["verdict"].startswith("rejected")


class FakeWorker:
    """Stands in for a GPU worker (``campaign.SparedWorker``): counts what it was asked to run."""

    def __init__(self):
        self.ran: list[str] = []
        self.restarts = 0
        self.start_seconds: list[float] = []
        self.waited = 0.0

    def launch(self, kernel: str, cubin: bytes) -> str:
        self.ran.append(kernel)
        return f"ran {kernel} ({len(cubin)} bytes)"

    def request_stop(self) -> None:
        pass

    def close(self) -> None:
        pass


class CubinSizer(Judge):
    """A second GPU judge, as a plugin would be: it needs a GPU and ptxas's cubin, and says what
    the worker ran."""

    name = "cubinsizer"
    stage = GPU
    needs = frozenset({IR, ACCEPTED, CUBIN, DEVICE})

    def judge(self, program: Any, ctx: Any) -> Any:
        raise AssertionError("a GPU judge in a run judges through on_gpu")

    def prepare(self, program, text, compiled, *, gpu, verdicts=None):
        return (compiled.kernel(program.launch.kernel), compiled.cubin) if gpu else None

    def on_gpu(self, program, prepared, worker):
        return worker.launch(*prepared)

    def summary(self, verdict):
        return {self.name: verdict}


@pytest.fixture
def cubinsizer():
    registry.register(CubinSizer)
    yield
    registry.unregister(CubinSizer.name)


def test_a_plugin_gpu_judge_runs_on_the_gpu_stage(tmp_path, monkeypatch, cubinsizer):
    from fuzzptx.engine import campaign
    from fuzzptx.engine.config import RunConfig

    workers: list[FakeWorker] = []
    monkeypatch.setattr(campaign, "_hardware_runner", lambda gpu, timeout: workers.append(FakeWorker()) or workers[-1])
    config = RunConfig(seed=4, block_size=8, examples=16, judges=("ptxas", "cubinsizer"), out=tmp_path / "c",
                       inline=True, gpus=(0,))
    stats = campaign.run_campaign(config.out, config, gpus=[0], inline=True, progress=False, gpu_workers=1)
    recs = [json.loads(line) for line in (tmp_path / "c" / "results.jsonl").read_text().splitlines()]
    assert len(recs) == 16
    ran = [r for r in recs if "cubinsizer" in r["verdicts"]]
    accepted = [r for r in recs if r["verdicts"]["ptxas"].startswith("accepted") and "gpu_skipped" not in r]
    assert ran and len(ran) == len(accepted) == stats["gpu_programs"]
    assert all(r["verdicts"]["cubinsizer"].startswith("ran ") for r in ran)
    assert sum(len(w.ran) for w in workers) == len(ran)
    assert not any("cubinsizer" in r["verdicts"] for r in recs if r["verdicts"]["ptxas"].startswith("rejected"))


def test_the_configuration_ships_its_judges(tmp_path):
    """A pool process gets the judge objects the command resolved (a release's judge with its
    toolchain): installing the shipped set registers them, no family or name is resolved again."""
    from fuzzptx.engine.block import prepare_block
    from fuzzptx.engine.config import RunConfig
    from fuzzptx.judges.selection import select
    from fuzzptx.oracles.ptxas import find_ptxas

    judges = select("checker,ptxas", str(find_ptxas()))
    config = RunConfig(seed=2, block_size=4, examples=4, judges=judges)
    task = pickle.loads(pickle.dumps(config.task(0, frozenset(), False)))
    release = [j for j in task.judges.judges if j.name.startswith("ptxas@")]
    assert release and release[0].toolchain.ptxas == judges.judges[[j.name for j in judges.judges].index(
        release[0].name)].toolchain.ptxas
    registry.unregister(release[0].name)  # as in a fresh process: the name is unknown ...
    item = prepare_block(task)  # ... and the block is judged by the shipped judge
    assert registry.registered(release[0].name) is release[0]
    assert all(release[0].name in v for v in item.verdicts)


def test_config_refuses_what_cannot_be():
    from fuzzptx.engine.config import ConfigError, RunConfig

    for bad in ({"examples": 0}, {"block_size": -1}, {"workers": 0}, {"seconds": 0}, {"numerics": "exact"}):
        with pytest.raises(ConfigError):
            RunConfig(judges=("checker",), **bad)
    with pytest.raises(registry.UnknownJudge):
        RunConfig(judges=("oracle",))
