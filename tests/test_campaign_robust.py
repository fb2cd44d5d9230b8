"""Campaign directories under stress (issue 29): one owner per ``--out`` (a lock), stats.json true
after SIGINT/SIGTERM, shards from Slurm/Kubernetes variables merged into one report.

Every campaign here is a real CPU campaign (``--gpus none``, reference and ptxas judges, one
pool process) in a subprocess, as a user starts it.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from fuzzptx.engine.campaign import CampaignError, shard_from_env
from fuzzptx.engine.outlock import LOCK_NAME, LockHeld, acquire

SEED, BLOCK, EXAMPLES = 3, 4, 12
JUDGES = "reference,ptxas"
ROOT = Path(__file__).resolve().parent.parent


def _cmd(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "fuzzptx.cli", "campaign", "--gpus", "none", "--out", str(out), "--seed", str(SEED),
            "--block-size", str(BLOCK), "--workers", "1", "--quiet", "--judges", JUDGES, *extra]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "JOB_COMPLETION_INDEX", "FUZZPTX_SHARD_COUNT"))}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def _run(out: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(_cmd(out, *extra), capture_output=True, text=True, timeout=300, env=env or _env())


def _lines(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]


def _start_long(out: Path, examples: int = 4000) -> subprocess.Popen:
    """A campaign that runs until the test stops it, once its first block is recorded."""
    proc = subprocess.Popen(_cmd(out, "--examples", str(examples)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, env=_env())
    t0 = time.monotonic()
    while time.monotonic() - t0 < 240:
        res = out / "results.jsonl"
        if res.exists() and res.read_text().count("\n") >= BLOCK:
            return proc
        if proc.poll() is not None:
            pytest.fail(f"the campaign ended before the test could act: {proc.stderr.read()}")
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail("the campaign recorded nothing in 240 s")


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("whole")
    r = _run(out, "--examples", str(EXAMPLES))
    assert r.returncode == 0, r.stderr
    return out


# ----------------------------------------------------------------- the lock


def test_second_campaign_and_second_resume_are_refused_naming_the_holder(tmp_path):
    out = tmp_path / "c"
    first = _start_long(out)
    try:
        holder = json.loads((out / LOCK_NAME).read_text())
        assert holder["pid"] == first.pid and holder["host"] == socket.gethostname()
        for extra in ((), ("--resume",)):
            r = _run(out, "--examples", "8", *extra)
            assert r.returncode == 2, r.stderr
            assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
            assert f"pid {first.pid} on {socket.gethostname()}" in r.stderr and LOCK_NAME in r.stderr
        ids = Counter(x["id"] for x in _lines(out))
        assert max(ids.values()) == 1  # the refused ones wrote nothing
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)


def test_kill_9_leaves_a_stale_lock_that_resume_takes_over_losing_nothing(whole, tmp_path):
    out = tmp_path / "k"
    proc = _start_long(out, EXAMPLES)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert json.loads((out / LOCK_NAME).read_text())["pid"] == proc.pid  # left behind by the crash
    before = len(_lines(out))
    r = _run(out, "--examples", str(EXAMPLES), "--resume")
    assert r.returncode == 0, r.stderr
    assert not (out / LOCK_NAME).exists()  # released at the end
    got = Counter(x["id"] for x in _lines(out))
    assert got == Counter(x["id"] for x in _lines(whole))  # each program once: nothing lost, nothing repeated
    assert json.loads(r.stdout)["resumed_skipping"] == before


def _foreign_lock(d: Path, age: float) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / LOCK_NAME).write_text(json.dumps({"host": "node-elsewhere", "pid": 1, "started": time.time() - age,
                                           "token": "x"}))
    os.utime(d / LOCK_NAME, (time.time() - age, time.time() - age))


def test_another_hosts_lock_needs_force_and_a_stale_heartbeat(tmp_path):
    _foreign_lock(tmp_path, age=30)
    with pytest.raises(LockHeld, match="pid 1 on node-elsewhere.*--force-takeover"):
        acquire(tmp_path)
    with pytest.raises(LockHeld):  # forced, but its heartbeat is fresh: a live campaign there
        acquire(tmp_path, force_takeover=True, stale_after=600)
    _foreign_lock(tmp_path, age=3600)
    with pytest.raises(LockHeld):  # stale, but not forced: this host cannot see that pid
        acquire(tmp_path)
    lock = acquire(tmp_path, force_takeover=True, stale_after=600)
    assert lock.took_over is not None and lock.took_over.host == "node-elsewhere"
    assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()
    with pytest.raises(LockHeld, match=f"pid {os.getpid()}"):  # and now it is ours: a second taker is refused
        acquire(tmp_path)
    lock.release()
    assert not (tmp_path / LOCK_NAME).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temporary files left


def test_release_leaves_a_lock_taken_over_by_someone_else(tmp_path):
    lock = acquire(tmp_path)
    (tmp_path / LOCK_NAME).write_text(json.dumps({"host": "h", "pid": 2, "started": 0, "token": "theirs"}))
    lock.release()
    assert json.loads((tmp_path / LOCK_NAME).read_text())["token"] == "theirs"


# ----------------------------------------------------------------- stats.json on every exit


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_leaves_stats_that_match_the_record(tmp_path, sig):
    out = tmp_path / "s"
    proc = _start_long(out)
    os.kill(proc.pid, sig)  # the main process only, as `kill` or a batch system's preemption does
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    stats = json.loads((out / "stats.json").read_text())
    lines = _lines(out)
    assert stats["interrupted"] is True
    assert stats["programs"] == len(lines) > 0
    assert stats["findings"] == sum(len(x["findings"]) for x in lines)
    assert not (out / LOCK_NAME).exists()
    r = _run(out, "--examples", str(len(lines) + BLOCK), "--resume")  # and the record resumes cleanly
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "stats.json").read_text())["interrupted"] is False


# ----------------------------------------------------------------- shards from the batch system


def test_shard_from_env():
    assert shard_from_env({}) is None
    assert shard_from_env({"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "3"})[0] == (2, 3)
    assert shard_from_env({"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "4",
                           "SLURM_ARRAY_TASK_COUNT": "3"})[0] == (1, 3)
    assert shard_from_env({"JOB_COMPLETION_INDEX": "0", "FUZZPTX_SHARD_COUNT": "4"})[0] == (0, 4)
    for bad in ({"SLURM_ARRAY_TASK_ID": "1"}, {"JOB_COMPLETION_INDEX": "1"},
                {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "3"},
                {"JOB_COMPLETION_INDEX": "x", "FUZZPTX_SHARD_COUNT": "2"}):
        with pytest.raises(CampaignError):
            shard_from_env(bad)


def _summary(d: Path) -> dict:
    return json.loads((d / "summary.json").read_text())


def _essence(summ: dict) -> tuple:
    return (summ["programs"], summ["findings"], summ["families"],
            sorted((b["signature"], b["count"], b["instructions"]) for b in summ["buckets"]))


def test_three_slurm_shards_merge_into_the_one_process_report(whole, tmp_path):
    procs, dirs = [], []
    for i in range(3):  # side by side, as a job array's tasks run
        d = tmp_path / f"shard{i}"
        dirs.append(d)
        procs.append(subprocess.Popen(_cmd(d, "--examples", str(EXAMPLES)), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True,
                                      env=_env(SLURM_ARRAY_TASK_ID=str(i + 1), SLURM_ARRAY_TASK_MIN="1",
                                               SLURM_ARRAY_TASK_COUNT="3")))
    for i, p in enumerate(procs):
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert json.loads((dirs[i] / "stats.json").read_text())["shard"] == f"{i}/3"
    merged = tmp_path / "merged"
    r = subprocess.run([sys.executable, "-m", "fuzzptx.cli", "report", *map(str, dirs), "--out", str(merged)],
                       capture_output=True, text=True, timeout=300, env=_env())
    assert r.returncode == 0, r.stderr
    one = subprocess.run([sys.executable, "-m", "fuzzptx.cli", "report", str(whole)], capture_output=True, text=True,
                         timeout=300, env=_env())
    assert one.returncode == 0, one.stderr
    m, w = _summary(merged), _summary(whole)
    assert _essence(m) == _essence(w)
    assert m["campaign_stats"]["programs"] == EXAMPLES
    assert m["campaign_stats"]["buckets"] == w["campaign_stats"]["buckets"]
    assert len(m["campaign_stats"]["shards"]) == 3
    assert (merged / "report.html").exists() and (merged / "junit.xml").exists()
    # the same shard twice is refused, one line
    r = subprocess.run([sys.executable, "-m", "fuzzptx.cli", "report", str(dirs[0]), str(dirs[0]), "--out",
                        str(tmp_path / "m2")], capture_output=True, text=True, timeout=60, env=_env())
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
