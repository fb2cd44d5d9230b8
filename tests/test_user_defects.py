"""Defects a new user hit trying every README command (issue 36), one test each: a bad line
in a resumed record, ptxas timeouts, silence during long work, worker processes outliving a
killed campaign, Ctrl-C, a missing shard, and the small ones of its "Also" list."""
from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from fuzzptx import cli

ROOT = Path(__file__).resolve().parent.parent


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(argv)
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return rc, out.getvalue(), err.getvalue()


def _campaign(out: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(["campaign", "--gpus", "none", "--out", str(out), "--seed", "1", "--examples", "8",
                    "--block-size", "4", "--workers", "0", "--quiet", "--judges", "reference", *extra])


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    """A real eight-program campaign directory (reference judge, no GPU)."""
    out = tmp_path_factory.mktemp("camp") / "c"
    rc, _, err = _campaign(out)
    assert rc == 0, err
    return out


# ----------------------------------------------------------------- 6: a bad line in a resumed record

def test_resume_skips_and_counts_a_line_with_a_nul_keeping_every_good_record(campaign, tmp_path):
    d = tmp_path / "c"
    shutil.copytree(campaign, d)
    lines = (d / "results.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == 8
    bad = lines[4][:40] + b"\0" + lines[4][40:]
    (d / "results.jsonl").write_bytes(b"".join(lines[:4] + [bad] + lines[5:]))
    rc, _, err = _campaign(d, "--resume")
    assert rc == 0, err
    assert f"{d / 'results.jsonl'}:5: skipped" in err
    after = (d / "results.jsonl").read_bytes().splitlines(keepends=True)
    assert after[:8] == lines[:4] + [bad] + lines[5:]  # every good record kept, the bad line left as it was
    redone = [json.loads(x) for x in after[8:]]
    assert [(r["block"], r["index"]) for r in redone] == [(json.loads(lines[4])["block"], json.loads(lines[4])["index"])]
    stats = json.loads((d / "stats.json").read_text())
    assert stats["record_lines_skipped"] == 1
    # triage and report read the same record the same way
    rc, _, err = run_cli(["triage", str(d)])
    assert rc in (0, 1) and "results.jsonl:5: skipped" in err


# ----------------------------------------------------------------- 12: a merge with a shard missing

def _shard_copy(campaign: Path, d: Path, shard: str) -> Path:
    shutil.copytree(campaign, d)
    st = json.loads((d / "stats.json").read_text())
    (d / "stats.json").write_text(json.dumps({**st, "shard": shard}))
    return d


def test_report_of_shards_with_one_missing_names_it(campaign, tmp_path):
    dirs = [_shard_copy(campaign, tmp_path / f"sh{i}", f"{i}/3") for i in (0, 2)]
    rc, _, err = run_cli(["report", *map(str, dirs), "--out", str(tmp_path / "m")])
    assert rc == 0, err
    assert "shard 1/3 is missing" in err
    summ = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert summ["shards_missing"] == ["1/3"]
    assert "MISSING 1/3" in summ["campaign_stats"]["shard"]
    assert "Missing shard(s): 1/3" in (tmp_path / "m" / "report.html").read_text()
    # all three: nothing said
    dirs.append(_shard_copy(campaign, tmp_path / "sh1", "1/3"))
    rc, _, err = run_cli(["report", *map(str, dirs), "--out", str(tmp_path / "m3")])
    assert rc == 0 and "missing" not in err
    assert "shards_missing" not in json.loads((tmp_path / "m3" / "summary.json").read_text())


# ----------------------------------------------------------------- Also: one throughput figure per report

def test_report_shows_one_programs_per_second_figure(campaign, tmp_path):
    d = tmp_path / "c"
    shutil.copytree(campaign, d)
    st = json.loads((d / "stats.json").read_text())
    rc, _, err = run_cli(["report", str(d)])
    assert rc == 0, err
    summ = json.loads((d / "summary.json").read_text())
    assert summ["programs_per_second"] == st["programs_per_second"]
    page = (d / "report.html").read_text()
    assert f"{st['programs_per_second']} programs/s" in page
    assert f"<th>programs/s</th><td>{st['programs_per_second']}</td>" in page


# ----------------------------------------------------------------- Also: bisect's answer line, the README

def test_bisect_quotes_the_signature_it_answers_for():
    """``bisect --keep sass:`` once printed ``sass:: no release ...``."""
    rc, out, err = run_cli(["bisect", str(ROOT / "reports" / "findings" / "ptxas_O3_inflight_acc_call_small.ptx"),
                            "--keep", "sass:", "--ptxas", "default"])
    assert rc in (0, 1), err
    assert "sass::" not in out
    assert "'sass:': " in out


def test_readme_names_the_fuzz_test_file_and_exit_1():
    readme = (ROOT / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if "--fuzzptx-profile nightly" in ln and ln.startswith("| `pytest"))
    target = line.split("`")[1].split()[1]
    assert target.endswith(".py") and (ROOT / target).is_file(), line
    assert "**1** findings" in readme


# ----------------------------------------------------------------- 9: kill -9 of a campaign

def _children() -> dict[int, list[int]]:
    """pid -> its children's pids, live processes only (a zombie is dead)."""
    out: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if state != "Z":
            out.setdefault(int(ppid), []).append(int(d.name))
    return out


def _descendants(pid: int) -> set[int]:
    kids, out, todo = _children(), set(), [pid]
    while todo:
        for c in kids.get(todo.pop(), ()):
            out.add(c)
            todo.append(c)
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:  # gone meanwhile
        return ""


def _alive(pids: set[int]) -> set[int]:
    live = {p for ps in _children().values() for p in ps}
    return pids & live


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_pool_workers_exit_when_the_campaign_is_killed_9(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from fuzzptx.oracles.hardware import gpu_available

    gpu = gpu_available() is None  # on a GPU machine its worker process must go too
    cmd = [sys.executable, "-m", "fuzzptx.cli", "campaign", "--gpus", "0" if gpu else "none", "--out", str(tmp_path / "c"),
           "--examples", "100000", "--block-size", "4", "--workers", "2", "--quiet",
           "--judges", "reference,hardware" if gpu else "reference"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the forkserver, its two pool workers (and a GPU worker)
            workers = _descendants(proc.pid) if proc.poll() is None else set()
            forked = [p for p in workers if "forkserver" in _cmdline(p)]
            if len(forked) >= 3 and (tmp_path / "c" / "results.jsonl").exists():
                break
            time.sleep(0.5)
        assert len(workers) >= 3, "the campaign never started its pool"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        t0 = time.monotonic()
        while _alive(workers) and time.monotonic() - t0 < 20:
            time.sleep(0.2)
        assert not _alive(workers), f"still running after the campaign's kill -9: {sorted(_alive(workers))}"
    finally:  # whatever the outcome, nothing of this test outlives it
        for p in _alive(workers | _descendants(proc.pid)) | ({proc.pid} if proc.poll() is None else set()):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass


# ----------------------------------------------------------------- 10: Ctrl-C

def test_ctrl_c_exits_within_seconds_and_resume_loses_nothing(tmp_path):
    """SIGINT once took 14-70 s to exit: the pool's workers, forgotten by its shutdown, ran their
    blocks to the end while the interpreter's exit hook waited.  Now the blocks in flight get a
    few seconds to finish into the record, the rest are stopped, and --resume judges them."""
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "c"
    # three blocks, one worker, no SASS judge (it groups blocks into one pool task): when block 0 is
    # recorded, block 1 is in flight and block 2 has not started, whatever the machine's speed
    argv = ["campaign", "--gpus", "none", "--out", str(out), "--seed", "3", "--examples", "96", "--block-size", "32",
            "--quiet", "--judges", "reference,checker,ptxas"]
    # one worker: when block 0 is recorded, block 1 has just started (a whole block in flight)
    proc = subprocess.Popen([sys.executable, "-m", "fuzzptx.cli", *argv, "--workers", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    res = out / "results.jsonl"
    t0 = time.monotonic()
    while not (res.exists() and res.stat().st_size) and proc.poll() is None and time.monotonic() - t0 < 240:
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()
    t = time.monotonic()
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - t
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert took < 10, f"exit {took:.1f} s after SIGINT"
    stats = json.loads((out / "stats.json").read_text())
    n = len(res.read_text().splitlines())
    assert stats["interrupted"] and stats["programs"] == n < 96
    rc, _, err = run_cli(argv + ["--workers", "0", "--resume"])
    assert rc == 0, err
    keys = [(r["block"], r["index"]) for r in map(json.loads, res.read_text().splitlines())]
    assert len(keys) == len(set(keys)) == 96


# ----------------------------------------------------------------- 7: ptxas timeouts

def test_the_ptxas_time_limit_grows_with_the_input_and_is_an_option(monkeypatch):
    from fuzzptx.errors import FuzzptxError
    from fuzzptx.oracles.ptxas import TIMEOUT_ENV, ptxas_timeout, use_ptxas_timeout

    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert ptxas_timeout(40_000_000) > 2 * 140  # the valid 40 MB module ptxas -O3 compiled in 140 s
    assert 60 <= ptxas_timeout(10_000) < 61
    with use_ptxas_timeout(7.5):
        assert ptxas_timeout(40_000_000) == 7.5
    assert ptxas_timeout(10_000) < 61
    monkeypatch.setenv(TIMEOUT_ENV, "zero")
    with pytest.raises(FuzzptxError, match=TIMEOUT_ENV):
        ptxas_timeout(1)


def test_a_ptxas_timeout_is_never_a_rejection(tmp_path):
    from fuzzptx.oracles.ptxas import compile_ptx

    r = compile_ptx(SMALL.read_text(), timeout=0.001)
    assert r.timed_out and not r.accepted and r.limit == 0.001
    assert "did not finish in 0.001 s" in r.timeout_text() and "not a rejection" in r.timeout_text()
    rc, out, err = run_cli(["bundle", str(SMALL), "-o", str(tmp_path / "b"), "--ptxas", "default",
                            "--ptxas-timeout", "0.001"])
    assert rc == 0, err
    for name in ("sass_O3.txt", "sass_O0.txt"):
        text = (tmp_path / "b" / name).read_text()
        assert "did not finish in 0.001 s" in text and "rejected" not in text, text
    readme = (tmp_path / "b" / "README.md").read_text()
    assert "- `-O3`: ptxas did not finish in 0.001 s" in readme
    rc, out, err = run_cli(["bisect", str(SMALL), "--keep", "sass:", "--ptxas", "default", "--ptxas-timeout", "0.001"])
    assert rc == 1
    assert "did not finish in 0.001 s" in out and "ran out of time (13.0.88)" in out
    assert "timed out" in err


SMALL = ROOT / "reports" / "findings" / "ptxas_O3_inflight_acc_call_small.ptx"


# ----------------------------------------------------------------- 8: progress, and bundle writes atomically

def test_bundle_check_and_bisect_show_progress(tmp_path, monkeypatch):
    from fuzzptx import helptext

    monkeypatch.setattr(helptext, "PROGRESS_SECONDS", 0.05)
    _, _, err = run_cli(["bundle", str(SMALL), "-o", str(tmp_path / "b"), "--ptxas", "default"])
    assert "fuzzptx bundle: [" in err and "ptxas -O3" in err, err
    from fuzzptx.oracles.checker import cli as checker_cli

    real = checker_cli.compile_ptx

    def slow_ptxas(*a, **k):  # a check of this small file ends before any tick: make its ptxas step long
        import time

        time.sleep(0.4)
        return real(*a, **k)

    monkeypatch.setattr(checker_cli, "compile_ptx", slow_ptxas)
    _, _, err = run_cli(["check", str(SMALL), "--ptxas"])
    assert "fuzzptx check: [" in err, err
    from fuzzptx.engine import matrix

    real_judge = matrix.differ.judge

    def slow_judge(*a, **k):  # likewise bisect's one release
        import time

        time.sleep(0.4)
        return real_judge(*a, **k)

    monkeypatch.setattr(matrix.differ, "judge", slow_judge)
    _, _, err = run_cli(["bisect", str(SMALL), "--keep", "sass:", "--ptxas", "default"])
    assert "fuzzptx bisect: [" in err and "judging with ptxas 13.0.88" in err, err


def test_bundle_appears_whole_or_not_at_all(tmp_path, monkeypatch):
    from fuzzptx.engine import matrix

    out = tmp_path / "b"
    seen = []

    def interrupted(*a, **k):
        seen.append((out.exists(), sorted(p.name for p in tmp_path.iterdir())))
        raise KeyboardInterrupt

    monkeypatch.setattr(matrix, "bisect", interrupted)
    rc, _, _ = run_cli(["bundle", str(SMALL), "-o", str(out), "--ptxas", "default"])  # Ctrl-C, say
    assert rc == 130
    assert seen and seen[0][0] is False and any(n.startswith(".b.partial-") for n in seen[0][1])  # written aside
    assert list(tmp_path.iterdir()) == []  # nothing left: no partial directory
    monkeypatch.undo()
    rc, _, err = run_cli(["bundle", str(SMALL), "-o", str(out), "--ptxas", "default"])
    assert rc == 0 and (out / "README.md").exists() and (out / "bundle.json").exists()
    rc, _, err = run_cli(["bundle", str(SMALL), "-o", str(out), "--ptxas", "default"])  # an earlier bundle: replaced
    assert rc == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["b"]
