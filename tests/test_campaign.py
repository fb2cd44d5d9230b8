"""fuzzptx campaign on the CPU: deterministic blocks, shards, kill -9 + --resume, flags, planted faults.

Every campaign here runs the real judges (reference, checker, ptxas) in a real
process pool; the GPU path (planted trap and hang survived) runs only under
``@pytest.mark.gpu``.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from fuzzptx import cli
from fuzzptx.engine.generate import BlockTask, block_programs, planted_programs
from fuzzptx.engine.campaign import _truncate_torn_tail, done_keys

SEED, EXAMPLES, BLOCK = 93, 12, 4  # seed 93: a SASS hazard of the pinned ptxas (sass:gmma-dropped, block 1), so repros get written
JUDGES = "reference,checker,ptxas,sass"  # the compiler bug is stable where model gaps come and go


def _campaign(out: Path, *extra: str, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "fuzzptx.cli", "campaign", "--gpus", "none", "--out", str(out), "--seed", str(SEED),
           "--block-size", str(BLOCK), "--workers", "1", "--quiet", "--judges", JUDGES,
           "--rediscover", *extra]  # the programs as drawn: the known bugs' shapes give these tests repros to check
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _essence(rec: dict) -> tuple:
    """What a record says about its program, without timing.  Of the SASS verdict, the hazards'
    rules: ptxas allocates registers per module, and a resumed block compiles fewer programs
    together (seed 60's in-flight write is ``R56 of QGMMA ... R72, gdesc[UR8]`` in the whole block
    and ``... R76, gdesc[UR4]`` beside one other program), so where a hazard is and how many
    instructions it spans may differ; which hazard it is does not."""
    verdicts = {k: v for k, v in rec["verdicts"].items() if k not in ("sass-at", "sass-excerpt")}
    if "sass" in verdicts:
        verdicts["sass"] = verdicts["sass"].split(":", 1)[-1].strip()
    return (rec["block"], rec["index"], rec["family"], rec["instructions"], tuple(rec["forms"]),
            json.dumps(verdicts, sort_keys=True), tuple(f["signature"] for f in rec["findings"]))


@pytest.fixture(scope="module")
def whole_dir(tmp_path_factory) -> Path:
    """One uninterrupted, unsharded campaign (run once for all xdist workers): the record every
    other run is checked against."""
    from support.shared import once_per_run

    def run(out: Path) -> Path:
        _campaign(out, "--examples", str(EXAMPLES))
        return out

    return once_per_run(tmp_path_factory, "campaign-whole", run)


@pytest.fixture(scope="module")
def whole(whole_dir) -> list[dict]:
    return _records(whole_dir)


def test_whole_campaign_judges_each_program_once(whole):
    keys = Counter((r["block"], r["index"]) for r in whole)
    assert set(keys) == {(i // BLOCK, i % BLOCK) for i in range(EXAMPLES)}
    assert max(keys.values()) == 1
    assert all("ptxas" in r["verdicts"] and "checker" in r["verdicts"] for r in whole)


def test_default_judges_are_the_nightly_set(tmp_path):
    """Without --judges a campaign runs the nightly hardware set (reference, ptxas, the SASS verifier,
    GPU; here no GPU), not the checker: its ptxas-model verdicts are the CPU fuzz runs' job."""
    out = tmp_path / "c"
    cmd = [sys.executable, "-m", "fuzzptx.cli", "campaign", "--gpus", "none", "--out", str(out), "--seed", str(SEED),
           "--block-size", "2", "--examples", "2", "--workers", "1", "--quiet"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["judges"] == ["reference", "ptxas", "sass", "metamorphic"]  # the pairs need the GPU: none here
    sass_keys = {"sass", "sass-at", "sass-excerpt"}  # a hazard's verdict names where it is and the SASS around it
    assert all({"reference", "ptxas"} <= set(rec["verdicts"]) <= {"reference", "ptxas"} | sass_keys for rec in _records(out))


@pytest.mark.slow
def test_a_second_campaign_records_the_same(whole, tmp_path):
    """A second run (new processes, new hash seeds) rebuilds the same programs and verdicts (in CI
    the shards' runs below are held to the same records)."""
    _campaign(tmp_path / "again", "--examples", str(EXAMPLES))
    assert sorted(map(_essence, _records(tmp_path / "again"))) == sorted(map(_essence, whole))


def test_blocks_are_the_same_in_every_process():
    """Another process (another hash seed) draws a block's programs to the same text."""
    task = BlockTask(block=1, seed=SEED, size=BLOCK, judges=("ptxas",))
    here = [p.to_ptx() for _, p, _ in block_programs(task)]
    env = dict(os.environ, PYTHONHASHSEED="12345")
    code = ("import sys, json; from fuzzptx.engine.generate import BlockTask, block_programs; "
            f"t = BlockTask(block=1, seed={SEED}, size={BLOCK}, judges=('ptxas',)); "
            "json.dump([p.to_ptx() for _, p, _ in block_programs(t)], sys.stdout)")
    there = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                      check=True, timeout=120).stdout)
    assert here == there


def test_shards_split_the_work_without_overlap(whole, tmp_path):
    parts = []
    for i in range(2):
        _campaign(tmp_path / f"s{i}", "--examples", str(EXAMPLES), "--shard", f"{i}/2")
        parts.append(_records(tmp_path / f"s{i}"))
    k0 = {(r["block"], r["index"]) for r in parts[0]}
    k1 = {(r["block"], r["index"]) for r in parts[1]}
    assert k0 and k1 and not (k0 & k1)
    assert {b for b, _ in k0} == {0, 2} and {b for b, _ in k1} == {1}
    assert sorted(map(_essence, parts[0] + parts[1])) == sorted(map(_essence, whole))
    # fuzzptx triage merges the shards' records.
    from fuzzptx.triage.buckets import read_records

    t = read_records([tmp_path / "s0", tmp_path / "s1"])
    assert t.programs == EXAMPLES


def test_kill_9_then_resume_loses_and_repeats_nothing(whole, tmp_path):
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "fuzzptx.cli", "campaign", "--gpus", "none", "--out", str(out), "--seed", str(SEED),
           "--block-size", str(BLOCK), "--workers", "1", "--quiet", "--examples", str(EXAMPLES),
           "--judges", JUDGES, "--rediscover"]  # as ``whole`` was judged
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    results = out / "results.jsonl"
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < 240:
            if results.exists() and results.read_text().count("\n") >= BLOCK:
                break
            if proc.poll() is not None:
                pytest.fail("the campaign finished before it could be killed")
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the campaign and its pool: everything this test started
        proc.wait(timeout=30)
    before = done_keys(results)
    assert 0 < sum(before.values()) < EXAMPLES
    with results.open("a") as fh:  # what a kill in the middle of a write leaves behind
        fh.write('{"block": 2, "index": 3, "id": "2:')
    r = _campaign(out, "--examples", str(EXAMPLES), "--resume")
    assert json.loads(r.stdout)["resumed_skipping"] == sum(before.values())
    after = _records(out)
    keys = Counter((x["block"], x["index"]) for x in after)
    assert keys == Counter((x["block"], x["index"]) for x in whole)  # each once: nothing lost, nothing repeated
    assert sorted(map(_essence, after)) == sorted(map(_essence, whole))


def test_torn_tail_is_dropped(tmp_path):
    p = tmp_path / "results.jsonl"
    p.write_text('{"block": 0, "index": 0}\n{"block": 0, "index": 1}\n{"block": 0, "ind')
    assert done_keys(p) == Counter({(0, 0): 1, (0, 1): 1})
    _truncate_torn_tail(p)
    assert p.read_text().endswith('"index": 1}\n')
    whole = p.read_text()
    _truncate_torn_tail(p)  # a clean record stays as it is
    assert p.read_text() == whole
    for torn in ('{"block": 0, "index": 2, "verdicts": {"ptxas": "acc', "x" * 100):  # tails longer than a chunk
        p.write_text(whole + torn)
        _truncate_torn_tail(p, chunk=8)
        assert p.read_text() == whole
    p.write_text('{"block": 0, "ind')  # no complete line at all
    _truncate_torn_tail(p, chunk=8)
    assert p.read_text() == ""


@pytest.mark.parametrize("argv, words", [
    (["--examples", "4", "--shard", "2/2"], "--shard '2/2'"),
    (["--examples", "4", "--shard", "x"], "--shard 'x'"),
    (["--time", "5 minutes"], "--time '5 minutes'"),
    (["--time", "0"], "--time '0'"),
    (["--examples", "0"], "--examples 0"),
    (["--examples", "4", "--gpus", "a,b"], "--gpus 'a,b'"),
    (["--examples", "4", "--judges", "reference,oracle"], "oracle"),
    (["--examples", "4", "--block-size", "0"], "--block-size 0"),
    (["--examples", "4", "--bogus"], "--bogus"),
    (["--examples", "four"], "four"),
    ([], "--time DURATION or --examples N"),
    (["--examples", "4", "--time", "5m"], "not allowed with"),
    (["--corpus", "/nonexistent/dir"], "not a directory"),
])
def test_bad_flags_give_one_line(tmp_path, capsys, argv, words):
    rc = cli.main(["campaign", "--gpus", "none", "--out", str(tmp_path / "c"), *argv])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("fuzzptx campaign: ") and words in err, err


def test_resume_refuses_another_seed_and_fresh_run_refuses_old_record(whole, tmp_path, capsys):
    out = tmp_path / "c"
    out.mkdir()
    (out / "results.jsonl").write_text(json.dumps(whole[0]) + "\n")
    (out / "campaign.json").write_text(json.dumps({"seed": SEED, "block_size": BLOCK, "shard": "0/1", "corpus": None}))
    base = ["campaign", "--gpus", "none", "--out", str(out), "--block-size", str(BLOCK), "--examples", "4"]
    assert cli.main(base + ["--seed", str(SEED)]) == 2
    assert "--resume" in capsys.readouterr().err
    assert cli.main(base + ["--seed", "99", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "seed=99" in err and err.count("\n") == 1


def test_planted_faults_are_ptxas_clean_and_recorded_once(tmp_path):
    from fuzzptx.oracles.ptxas import compile_batch

    kinds = [k for k, _ in planted_programs()]
    assert kinds == ["trap", "hang"]
    res = compile_batch([p.to_ptx() for _, p in planted_programs()], want_cubin=True)
    assert all(r.accepted and r.cubin for r in res)
    out = tmp_path / "planted"
    _campaign(out, "--examples", "8", "--plant-faults")
    recs = _records(out)
    planted = {(r["block"], r["index"]): r.get("planted") for r in recs if r.get("planted")}
    meta = json.loads((out / "campaign.json").read_text())
    b = meta["planted_block"]
    assert planted == {(b, BLOCK): "trap", (b, BLOCK + 1): "hang"}
    assert all(r["verdicts"]["ptxas"] == "accepted" for r in recs if r.get("planted"))
    # Resuming a finished campaign plants nothing twice and judges nothing again.
    r = _campaign(out, "--examples", "8", "--plant-faults", "--resume")
    assert json.loads(r.stdout)["programs"] == 0 and len(_records(out)) == len(recs)


def test_corpus_mode_judges_the_files(whole, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i, (_, p) in enumerate(planted_programs()):
        (corpus / f"k{i}.ptx").write_text(p.to_ptx())
    out = tmp_path / "c"
    cmd = [sys.executable, "-m", "fuzzptx.cli", "campaign", "--gpus", "none", "--out", str(out), "--corpus", str(corpus),
           "--judges", "ptxas,checker", "--workers", "1", "--quiet"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    recs = _records(out)
    assert [(r["block"], r["index"]) for r in recs] == [(0, 0), (0, 1)]
    assert all(r["verdicts"]["ptxas"] == "accepted" for r in recs)


def test_hardware_numerics_reach_every_program_and_its_repro(whole, tmp_path):
    """``--numerics hardware``: the same programs, the reference in the bit-exact H100 model (no
    value is a spec interval), every repro file says so, and a resume cannot change it."""
    from fuzzptx.program import Program

    out = tmp_path / "hw"
    r = _campaign(out, "--examples", str(EXAMPLES), "--numerics", "hardware")
    assert json.loads(r.stdout)["numerics"] == "hardware"
    recs = _records(out)
    spec = {(x["block"], x["index"]): x for x in whole}
    assert sorted(spec) == sorted((x["block"], x["index"]) for x in recs)
    for x in recs:
        assert x["family"] == spec[(x["block"], x["index"])]["family"]
        # (the NUMERICS header line moves the body, and the lines ptxas names, one down)
        assert x["verdicts"]["ptxas"].split()[0] == spec[(x["block"], x["index"])]["verdicts"]["ptxas"].split()[0]
    assert any("within bounds" in x["verdicts"].get("reference", "") for x in whole)
    assert not any("within bounds" in x["verdicts"].get("reference", "") for x in recs)
    repros = sorted((out / "repros").glob("*.ptx"))
    assert repros and all(Program.from_file(f).numerics == "hardware" for f in repros)
    from fuzzptx.engine.replay import main_replay

    for f in repros:  # replay judges in the file's numerics: its EXPECT lines hold
        assert "// EXPECT: reference: " in f.read_text()
        assert main_replay([str(f), "--no-hardware"]) == 0, f
    r = _campaign(out, "--examples", str(EXAMPLES), "--numerics", "spec", "--resume", check=False)
    assert r.returncode == 2 and "numerics=spec" in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.gpu
def test_planted_trap_and_hang_are_survived_on_the_gpu(tmp_path):
    out = tmp_path / "gpu"
    cmd = [sys.executable, "-m", "fuzzptx.cli", "campaign", "--gpus", "0", "--out", str(out), "--seed", "1",
           "--block-size", "8", "--examples", "24", "--plant-faults", "--gpu-timeout", "5", "--quiet"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    sigs = set(stats["evidence"])  # the findings' signatures (stats["buckets"] counts root causes)
    assert any(s.startswith("hardware:fault:trap|") for s in sigs), sigs
    assert any(s.startswith("hardware:fault:timeout|") for s in sigs), sigs
    assert stats["worker_restarts"] >= 2
    recs = _records(out)
    b = stats["planted_block"]
    accepted = [x for x in recs if x["block"] == b and not x.get("planted")
                and x["verdicts"]["ptxas"].startswith("accepted")]
    rest = [x for x in accepted if "gpu_skipped" not in x]
    assert rest and all(x["verdicts"].get("hardware") == "ran" for x in rest)
    # a program kept off the GPU says why, and has no hardware verdict to mislead a reader
    assert all("hardware" not in x["verdicts"] for x in accepted if "gpu_skipped" in x)
    assert len(recs) == 24 + 2


def _judges_loaded() -> tuple[bool, bool]:
    return "fuzzptx.oracles.checker" in sys.modules, "fuzzptx.oracles.reference" in sys.modules


def test_pool_processes_start_with_the_judges_already_imported():
    """The CPU pool forks from a server that preloaded the judges (no 1.5 s import per process)."""
    import concurrent.futures as cf
    import multiprocessing as mp

    from fuzzptx.engine.campaign import pool_context

    if "forkserver" not in mp.get_all_start_methods():
        pytest.skip("no forkserver on this platform: the pool spawns")
    with cf.ProcessPoolExecutor(1, mp_context=pool_context()) as pool:  # no initializer: preload alone
        assert pool.submit(_judges_loaded).result(timeout=120) == (True, True)


class _FakeGpuWorker:
    """Stands in for ``HardwareWorker`` (no GPU here): starts slowly, and 'faults' on program "bad"."""

    def __init__(self, log: list):
        self.log, self.restarts, self.started, self.spans = log, 0, False, []

    def start(self):
        t0 = time.monotonic()
        time.sleep(0.2)
        self.started = True
        self.spans.append((t0, time.monotonic()))

    def run(self, program, *, cubin, kernel):
        assert self.started, "ran on a worker that was never started"
        self.log.append((id(self), program))
        if program == "bad":
            self.restarts += 1
            self.started = False  # killed: the next run on it would need a fresh start
        return program

    def close(self):
        pass


def test_spared_worker_starts_both_at_once_and_swaps_in_the_spare_after_a_fault():
    from fuzzptx.engine.campaign import SparedWorker

    log: list = []
    w = SparedWorker(lambda: _FakeGpuWorker(log))
    first, spare = w.active, w.spare
    assert w.run("ok", cubin=b"", kernel="k") == "ok"
    assert w.run("bad", cubin=b"", kernel="k") == "bad"
    assert w.active is not first and w.restarts == 1
    assert w.run("ok2", cubin=b"", kernel="k") == "ok2"  # on the spare, started long ago
    assert [x for x, _ in log] == [id(first), id(first), id(w.active)]
    w.close()
    assert spare.spans[0][0] < first.spans[0][1], "the spare did not start while the first worker was starting"
    assert len(w.start_seconds) == 3  # active, spare, and the dead one restarted in the background


def test_pool_ships_a_light_program_and_the_text_gives_it_back():
    """The pool sends the main process each program's header and kernel signature plus its text
    (the whole IR was most of a block's pickle); the text gives back the program the judges saw,
    byte for byte, for a repro."""
    import pickle
    from dataclasses import replace

    from fuzzptx.engine.block import prepare_block
    from fuzzptx.oracles.hardware import program_args

    task = BlockTask(3, 7, 8, ("checker", "ptxas"), plant=True)
    prep = prepare_block(task)
    originals = [p for _, p, _ in block_programs(task)]
    assert len(prep.programs) == len(originals) == len(prep.texts)
    for j, original in enumerate(originals):
        light = prep.programs[j]
        assert all(not (f.body or ()) for f in light.module.functions())
        assert [a.name for a in program_args(light)] == [a.name for a in program_args(original)]
        full = prep.program(j)
        assert full.to_ptx() == original.to_ptx()
        assert replace(full, signature="a|b").to_ptx() == replace(original, signature="a|b").to_ptx()
    assert len(pickle.dumps(prep.programs)) * 5 < len(pickle.dumps(originals))


def test_stats_say_where_the_pool_time_went(whole_dir):
    """stats.json accounts for the CPU pool as it does for the GPU: its busy share, the block time
    no stage timer covers, and the time spent finalising repros."""
    st = json.loads((whole_dir / "stats.json").read_text())
    assert 0 < st["pool_busy_share"] <= 1.05
    assert st["pool_unstaged_ms_per_program"] >= 0
    assert st["pool_repro_seconds"] >= 0
    assert sum(st["stage_cpu_seconds"].get(k, 0) for k in ("generate", "ptxas")) > 0


def test_each_repro_carries_the_signature_of_the_finding_that_names_it(whole):
    """A program with several findings gets one repro per signature (a shared file could carry
    only one SIGNATURE line), and triage links each bucket to its own."""
    from fuzzptx.triage.buckets import Triage

    named = [(f["signature"], f["repro"]) for r in whole for f in r["findings"] if f.get("repro")]
    assert named, "the campaign wrote no repro"
    assert len({path for _, path in named}) == len(named)
    for sig, path in named:
        assert f"// SIGNATURE: {sig}\n" in Path(path).read_text()
    t = Triage()
    for r in whole:
        t.add_record(r, "results.jsonl")
    for b in t.buckets.values():
        if b.smallest.get("repro"):
            assert f"// SIGNATURE: {b.signature}\n" in Path(b.smallest["repro"]).read_text()


def test_every_repro_replays_with_its_expectations_holding(whole, capsys):
    """The repro contract: each file the campaign writes carries EXPECT lines that ``fuzzptx replay``
    finds still hold (the verdicts were moved to the final header, not taken again)."""
    from fuzzptx.engine.replay import main_replay

    paths = sorted({f["repro"] for r in whole for f in r["findings"] if f.get("repro")})
    assert paths
    for path in paths:
        text = Path(path).read_text()
        assert "// EXPECT: ptxas: " in text and "// EXPECT: checker: " in text, path
        assert main_replay([path, "--no-hardware"]) == 0, capsys.readouterr().out


def test_a_repro_with_the_hardware_note_still_replays(tmp_path, capsys):
    """The "hardware when found" NOTE is a header line: it must be in place before the verdicts'
    line numbers are, or every located verdict of a GPU finding's repro is off by one."""
    from fuzzptx.engine.repro import judges_that_ran, finalize_repro_file
    from fuzzptx.engine.block import prepare_block
    from fuzzptx.engine.replay import main_replay

    import re

    item = prepare_block(BlockTask(0, 5, 32, ("reference", "checker", "ptxas")))
    located = [j for j, v in enumerate(item.verdicts) if re.search(r"C\d{4}@\d", " ".join(v.summary().values()))]
    assert located, "no program with a located ptxas or model diagnostic in this block"
    for j in located[:2]:
        path = str(tmp_path / f"r{j}.ptx")
        v = item.verdicts[j]
        finalize_repro_file(path, item.program(j), judges_that_ran(v), "test|note|x", "hardware when found: ran",
                            v, item.texts[j])
        text = Path(path).read_text()
        assert "// NOTE: hardware when found: ran\n" in text
        assert main_replay([path, "--no-hardware"]) == 0, capsys.readouterr().out


def test_planted_kernels_go_to_the_gpu_stage_and_not_to_the_pairs():
    """The planted trap and hang are prepared for the GPU stage's judge (the campaign shows its
    worker surviving them) and for no compile pair (a kernel that never ends says nothing built
    twice).  The engine's stage table had left planted kernels out of every GPU-stage judge, so a
    ``--plant-faults`` campaign on the H200 recorded no fault at all."""
    from fuzzptx.engine.block import prepare_block
    from fuzzptx.engine.generate import BlockTask

    task = BlockTask(0, 1, 4, ("ptxas", "hardware", "metamorphic"), plant=True)
    prepared = prepare_block(task)
    planted = [w for w, rec in zip(prepared.gpu, prepared.records) if rec.get("planted")]
    assert len(planted) == 2
    assert all(set(w) == {"hardware"} for w in planted), planted
