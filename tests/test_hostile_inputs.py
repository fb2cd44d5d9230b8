"""Hostile inputs end quickly with a clear message: random bytes, mutated PTX repros, mutated
JSONL records and known-bug ledgers, thrown at replay, triage, report, run --known,
campaign --resume and campaign --corpus.  Every command exits 0, 1 or 2, never with a
traceback, within a time bound; exit 2 ends with one line ``fuzzptx CMD: file[:line]: ...``.

The default (CI) example counts keep the file near a minute on two shared cores;
``FUZZPTX_NIGHTLY=1`` runs twenty times as many, with a fresh random seed each time.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st
from hypothesis.control import currently_in_test_context

from fuzzptx import cli
from fuzzptx.engine import run as run_mod
from fuzzptx.inputs import LIMIT_ENV, InputError, read_jsonl, read_text

ROOT = Path(__file__).resolve().parent.parent
NIGHTLY = os.environ.get("FUZZPTX_NIGHTLY") == "1"
CORPUS = sorted((ROOT / "corpus").glob("*.ptx"))
KNOWN = (ROOT / "reports" / "known_bugs.toml").read_bytes()
BOUND_S = 60.0  # no command may look hung: each must end well inside this (most take well under a second)


def examples(n: int) -> settings:
    return settings(max_examples=n * 20 if NIGHTLY else n, deadline=None, database=None, derandomize=not NIGHTLY,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``fuzzptx ARGV`` in this process: (exit status, stdout, stderr), checked for what every
    command owes hostile input."""
    out, err = io.StringIO(), io.StringIO()
    t0 = time.monotonic()
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(argv)
    took = time.monotonic() - t0
    e = err.getvalue()
    assert rc in (0, 1, 2), (argv, rc, e)
    assert "Traceback" not in e, e
    assert took < BOUND_S, (argv, took)
    if rc == 2:
        last = e.strip().splitlines()[-1] if e.strip() else ""
        assert last.startswith(f"fuzzptx {argv[0]}: "), e
    if currently_in_test_context():
        event(f"exit {rc}")
    return rc, out.getvalue(), e


# ----------------------------------------------------------------- mutations

@st.composite
def mutated(draw, base: bytes) -> bytes:
    """``base`` after a few byte- and line-level edits of the kinds a broken disk, a bad copy or
    a hand edit makes: truncation, inserted bytes (NUL, invalid UTF-8, any), deleted or
    duplicated or swapped lines, a whole file replaced by random bytes."""
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["truncate", "insert", "special", "delete", "dup_line", "swap_lines", "replace_all",
                                   "flip"]))
        pos = draw(st.integers(0, len(data)))
        if op == "truncate":
            del data[pos:]
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif op == "special":
            data[pos:pos] = draw(st.sampled_from([b"\0", b"\xff\xfe", b"\xc3", b"\n", b"{", b"}", b'"', b"//", b"\r",
                                                  b"\xef\xbb\xbf", b"[1]", b"null", b"|"]))
        elif op == "delete":
            del data[pos:pos + draw(st.integers(1, 64))]
        elif op == "flip" and data:
            i = min(pos, len(data) - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op in ("dup_line", "swap_lines"):
            lines = bytes(data).split(b"\n")
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            if op == "dup_line":
                lines.insert(j, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            data = bytearray(b"\n".join(lines))
        elif op == "replace_all":
            data = bytearray(draw(st.binary(max_size=256)))
    return bytes(data)


def repro_bytes() -> st.SearchStrategy[bytes]:
    """A corpus repro, mutated; or a repro whose header lines are rewritten."""
    bases = [p.read_bytes() for p in CORPUS]
    header = st.tuples(st.sampled_from(bases), st.sampled_from([
        b"// LAUNCH: kernel=nope grid=1,1,1 block=128,1,1", b"// LAUNCH: kernel=k grid=0,1,1 block=x",
        b"// BUFFER: out type=u99 count=-1 init=hex:abc output", b"// BUFFER:", b"// EXPECT: nonsense",
        b"// NUMERICS: fp64", b"// fuzzptx-repro v9", b"// SIGNATURE: \xff\xfe", b"// PARAM:",
    ])).map(lambda t: t[0].replace(b"// LAUNCH:", t[1] + b"\n// LAUNCH:", 1))
    body = st.sampled_from(bases).flatmap(  # the header kept, so the parser and the judges see the mutation
        lambda b: mutated(b[b.index(b".version"):]).map(lambda m: b[:b.index(b".version")] + m))
    return st.one_of(st.sampled_from(bases).flatmap(mutated), header, body, st.binary(max_size=512))


# ----------------------------------------------------------------- a small real campaign

@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    """A real four-program campaign directory (reference and checker judges, no GPU)."""
    out = tmp_path_factory.mktemp("camp") / "c"
    rc, _, err = run_cli(["campaign", "--gpus", "none", "--out", str(out), "--seed", "1", "--examples", "4",
                          "--block-size", "4", "--workers", "1", "--quiet", "--judges", "reference,checker"])
    assert rc == 0, err
    return out


# ----------------------------------------------------------------- the input layer itself

def test_read_text_names_each_kind_of_bad_file(tmp_path, monkeypatch):
    def err(path, what="PTX file", **kw) -> str:
        with pytest.raises(InputError) as exc:
            read_text(path, what=what, **kw)
        msg = str(exc.value)
        assert "\n" not in msg and msg.startswith(str(path))
        return msg

    assert "no such file" in err(tmp_path / "missing.ptx")
    assert "is a directory" in err(tmp_path)
    (tmp_path / "bin.ptx").write_bytes(b".version 8.0\n.tar\0get")
    assert err(tmp_path / "bin.ptx").startswith(f"{tmp_path / 'bin.ptx'}:2:5: binary file (NUL byte at offset 17)")
    (tmp_path / "latin.ptx").write_bytes(b"// ok\n// caf\xe9\n")
    assert err(tmp_path / "latin.ptx").startswith(f"{tmp_path / 'latin.ptx'}:2:7: not UTF-8 text (byte 0xe9 at offset 12)")
    (tmp_path / "empty.ptx").write_text("  \n")
    assert "empty PTX file" in err(tmp_path / "empty.ptx")
    assert read_text(tmp_path / "empty.ptx", what="known-findings file", allow_empty=True) == "  \n"
    (tmp_path / "big.ptx").write_text("x" * 3000)
    monkeypatch.setenv(LIMIT_ENV, "0.001")
    msg = err(tmp_path / "big.ptx")
    assert "3,000 bytes is over the PTX file size limit of 1,048 bytes" in msg and LIMIT_ENV in msg
    monkeypatch.delenv(LIMIT_ENV)
    assert read_text(tmp_path / "big.ptx", what="PTX file") == "x" * 3000
    (tmp_path / "r.ptx").write_text('{"block": 0, "index": 0}\n')
    assert "a JSON-lines record (results.jsonl?), not a PTX file" in err(tmp_path / "r.ptx")
    assert "a PTX file, not a known-findings file" in err(CORPUS[0], "known-findings file")
    if os.geteuid() != 0:  # root reads any file
        (tmp_path / "locked.ptx").write_text(".version 8.0\n")
        (tmp_path / "locked.ptx").chmod(0)
        assert "permission denied" in err(tmp_path / "locked.ptx")


def test_read_jsonl_streams_and_names_bad_lines(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_bytes(b'{"a": 1}\n\n[1, 2]\n{"b": \n\xff\n{"c": 3}\n')
    with pytest.raises(InputError, match=r"r.jsonl:3: not a JSON object"):
        list(read_jsonl(f))
    problems: list[str] = []
    assert list(read_jsonl(f, on_bad="skip", problems=problems)) == [(1, {"a": 1}), (6, {"c": 3})]
    assert [p.split(": skipped: ")[0] for p in problems] == [f"{f}:3", f"{f}:4", f"{f}:5"]
    g = tmp_path / "k.ptx"
    g.write_bytes(CORPUS[0].read_bytes())
    with pytest.raises(InputError, match=r"k.ptx:1: not a campaign record: this is a PTX file"):
        list(read_jsonl(g, on_bad="skip"))


# ----------------------------------------------------------------- commands, in this process

@examples(150)
@given(data=repro_bytes())
def test_replay_survives_hostile_repros(tmp_path_factory, data):
    f = tmp_path_factory.mktemp("replay") / "x.ptx"
    f.write_bytes(data)
    run_cli(["replay", "--no-hardware", str(f)])


@examples(150)
@given(records=st.data(), known=mutated(KNOWN))
def test_triage_survives_hostile_records_and_known_files(campaign, tmp_path_factory, records, known):
    d = tmp_path_factory.mktemp("triage")
    (d / "results.jsonl").write_bytes(records.draw(mutated((campaign / "results.jsonl").read_bytes())))
    (d / "known.toml").write_bytes(known)
    rc, out, _ = run_cli(["triage", str(d / "results.jsonl"), "--known", str(d / "known.toml"), "--json"])
    if rc == 0:
        json.loads(out)


@examples(20)
@given(records=st.data())
def test_report_survives_hostile_records_and_stats(campaign, tmp_path_factory, records):
    d = tmp_path_factory.mktemp("report") / "c"
    shutil.copytree(campaign, d)
    (d / "results.jsonl").write_bytes(records.draw(mutated((campaign / "results.jsonl").read_bytes())))
    if records.draw(st.booleans()):
        (d / "stats.json").write_bytes(records.draw(mutated((campaign / "stats.json").read_bytes())))
    rc, _, _ = run_cli(["report", str(d)])
    assert (d / "report.html").exists() == (rc == 0)  # exit 2 writes nothing


@examples(100)
@given(known=mutated(KNOWN))
def test_run_known_survives_hostile_known_files(tmp_path_factory, monkeypatch, known):
    # the run itself is not what is tested here: a real summary of no programs stands in for it
    monkeypatch.setattr(run_mod, "run", lambda *a, **kw: {
        "programs": 0, "illegal_programs": 0, "ptxas_accepted": 0, "wall_seconds": 0.0, "programs_per_second": 0,
        "findings_by_bucket": {"checker!=ptxas|missed:C7512|wgmma.f32.f16": 1}, "block_errors": [],
        "block_errors_total": 0})
    d = tmp_path_factory.mktemp("run")
    (d / "known.toml").write_bytes(known)
    (d / "o").mkdir(exist_ok=True)
    rc, _, _ = run_cli(["run", "--known", str(d / "known.toml"), "--out", str(d / "o"), "--json", "--examples", "1"])
    assert rc in (0, 2)


@examples(15)
@given(records=st.data())
def test_resume_survives_hostile_records(campaign, tmp_path_factory, records):
    d = tmp_path_factory.mktemp("resume") / "c"
    shutil.copytree(campaign, d)
    (d / "results.jsonl").write_bytes(records.draw(mutated((campaign / "results.jsonl").read_bytes())))
    run_cli(["campaign", "--gpus", "none", "--out", str(d), "--seed", "1", "--examples", "4", "--block-size", "4",
             "--workers", "1", "--quiet", "--judges", "reference", "--resume"])


@examples(15)
@given(files=st.lists(repro_bytes(), min_size=1, max_size=3))
def test_corpus_survives_hostile_files(tmp_path_factory, files):
    d = tmp_path_factory.mktemp("corpus")
    (d / "in").mkdir()
    shutil.copy(CORPUS[0], d / "in" / "good.ptx")  # so the campaign runs beside the hostile files
    for i, data in enumerate(files):
        (d / "in" / f"f{i}.ptx").write_bytes(data)
    rc, _, _ = run_cli(["campaign", "--gpus", "none", "--out", str(d / "o"), "--corpus", str(d / "in"),
                        "--workers", "1", "--quiet", "--judges", "reference"])
    if rc == 0:
        stats = json.loads((d / "o" / "stats.json").read_text())
        assert stats["programs"] + len(stats["corpus_skipped"]) == len(files) + 1


def test_bad_corpus_files_are_named_skips(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    shutil.copy(CORPUS[0], d / "a_good.ptx")
    (d / "b_binary.ptx").write_bytes(b"\x7fELF\0\0\0")
    (d / "c_latin.ptx").write_bytes(CORPUS[0].read_bytes().replace(b"// NOTE", b"// caf\xe9 NOTE", 1))
    (d / "d_noheader.ptx").write_text(".version 8.0\n.target sm_90a\n")
    rc, _, err = run_cli(["campaign", "--gpus", "none", "--out", str(tmp_path / "o"), "--corpus", str(d),
                          "--workers", "1", "--quiet", "--judges", "reference"])
    assert rc == 0, err
    stats = json.loads((tmp_path / "o" / "stats.json").read_text())
    assert stats["programs"] == 1
    assert [s.split(":")[0] for s in stats["corpus_skipped"]] == [str(d / n) for n in
                                                                  ("b_binary.ptx", "c_latin.ptx", "d_noheader.ptx")]
    assert "binary file" in stats["corpus_skipped"][0] and "not UTF-8" in stats["corpus_skipped"][1]
    assert "no .entry kernel to infer one from" in stats["corpus_skipped"][2]
    assert err.count("--corpus: skipped") == 3


def test_resume_refuses_a_foreign_record_and_keeps_it(campaign, tmp_path):
    d = tmp_path / "c"
    shutil.copytree(campaign, d)
    (d / "results.jsonl").write_bytes(b"\x00\x01binary")
    rc, _, err = run_cli(["campaign", "--gpus", "none", "--out", str(d), "--seed", "1", "--examples", "4",
                          "--block-size", "4", "--workers", "1", "--quiet", "--judges", "reference", "--resume"])
    assert rc == 2 and "not a campaign record" in err
    assert (d / "results.jsonl").read_bytes() == b"\x00\x01binary"  # refused before the torn-tail cut


def test_triage_and_report_refuse_what_is_not_a_record(campaign, tmp_path):
    rc, out, err = run_cli(["triage", str(tmp_path / "missing.jsonl")])
    assert rc == 2 and "no such file" in err and not out
    rc, out, err = run_cli(["triage", str(CORPUS[0])])
    assert rc == 2 and err.count("\n") == 1 and ":1: not a campaign record" in err
    (tmp_path / "empty").mkdir()
    rc, _, err = run_cli(["report", str(tmp_path / "empty")])
    assert rc == 2 and "no results.jsonl" in err and not any((tmp_path / "empty").iterdir())
    d = tmp_path / "c"
    shutil.copytree(campaign, d)
    with (d / "results.jsonl").open("a") as fh:
        fh.write('{"torn": \n')
    rc, out, err = run_cli(["triage", str(d), "--json"])
    assert rc == 0 and "results.jsonl:5: skipped" in err
    assert sum(b["count"] for b in json.loads(out)) == sum(
        len(json.loads(ln)["findings"]) for ln in (campaign / "results.jsonl").read_text().splitlines())


# ----------------------------------------------------------------- the real exit path

@pytest.mark.parametrize("argv, data, message", [
    (["replay", "--no-hardware"], b"\0\1\2", "binary file (NUL byte at offset 0), not a PTX file"),
    (["triage"], b"\xff\xfe{}", ":1: not a campaign record: not UTF-8"),
    (["triage", "--known", "{file}", str(ROOT / "tests")], b'{"a": 1}\n', "not a known-bug ledger"),
])
def test_subprocess_exit_2_with_one_line(tmp_path, argv, data, message):
    f = tmp_path / "bad"
    f.write_bytes(data)
    argv = [a.replace("{file}", str(f)) for a in argv]
    if "{file}" not in " ".join(argv) and not any(str(f) == a for a in argv):
        argv = argv + [str(f)]
    r = subprocess.run([sys.executable, "-m", "fuzzptx.cli", *argv], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and message in r.stderr and "Traceback" not in r.stderr
