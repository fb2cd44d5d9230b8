"""Nothing a user types crashes: every command with its options, all *pairs* of option values
(a pairwise covering array, not the full product: ``--ptxas`` none/one/two releases x every judge
set the README names x ``--workers 0``/N x ``--json``...), on small inputs, and every command that
reads a PTX file on the files that broke commands before: one ptxas rejects, one that crashes
ptxas 13.0.88 at -O3, a plain Triton kernel with dynamic shared memory, one without
``.address_size`` (issue 35).  Each invocation must end with exit 0, 1 or 2, no traceback, and on
exit 2 a last line ``fuzzptx CMD: ...``.

The commands run in this process (``fuzzptx.cli.main``), so the file costs what the judging costs.
Offline the "other" ptxas releases are the pinned one named by its path; 12.9.86 and 13.5.37
join where the user cache has them (nothing is fetched)."""
from __future__ import annotations

import io
import itertools
import json
import re
import shutil
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from fuzzptx import cli
from fuzzptx.oracles import toolchains
from fuzzptx.oracles.hardware import gpu_available
from fuzzptx.oracles.ptxas import find_ptxas

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "reports" / "findings" / "ptxas_O3_inflight_acc_call_small.ptx"
CRASH = ROOT / "reports" / "findings" / "ptxas_O3_crash_immediate_descriptor.ptx"  # crashes 13.0.88 at -O3
REJECTED = ROOT / "corpus" / "spec_ldmatrix_m8n16_b8.ptx"
TRITON = ROOT / "tests" / "data" / "triton" / "matmul_tma_fp8e4nv_128x128x128_w8s3.ptx"  # .extern .shared global_smem[]
KNOWN = ROOT / "reports" / "known_bugs.toml"
# on a machine with an sm_90a GPU the matrix runs the GPU judge too (replay without --no-hardware,
# campaign on GPU 0): the paths a GPU-less CI cannot reach
GPU = gpu_available() is None


def pairwise(factors: dict[str, list]) -> list[dict]:
    """Rows that hold every pair of values of any two factors at least once (greedy: each row
    starts from an uncovered pair and takes, factor by factor, the value covering most new pairs)."""
    names = list(factors)
    sizes = [len(factors[n]) for n in names]
    todo = {(a, i, b, j) for a, b in itertools.combinations(range(len(names)), 2)
            for i in range(sizes[a]) for j in range(sizes[b])}
    rows = []
    while todo:
        a, i, b, j = min(todo)
        row = {a: i, b: j}
        for f in range(len(names)):
            if f not in row:
                row[f] = max(range(sizes[f]), key=lambda v: sum(
                    ((g, row[g], f, v) if g < f else (f, v, g, row[g])) in todo for g in row))
        todo -= {(x, row[x], y, row[y]) for x, y in itertools.combinations(range(len(names)), 2)}
        rows.append({names[f]: factors[names[f]][row[f]] for f in range(len(names))})
    return rows


def test_pairwise_covers_every_pair_in_fewer_rows_than_the_product():
    factors = {"a": [1, 2, 3], "b": "xyz", "c": [0, 1], "d": [None, True], "e": list(range(5))}
    rows = pairwise(factors)
    for (p, vp), (q, vq) in itertools.combinations(factors.items(), 2):
        for x, y in itertools.product(vp, vq):
            assert any(r[p] == x and r[q] == y for r in rows), (p, x, q, y)
    assert len(rows) < 3 * 3 * 2 * 2 * 5 / 4


# ----------------------------------------------------------------- inputs

def _cached(release: str) -> bool:
    try:
        return bool(toolchains.resolve(release, fetch_missing=False))
    except Exception:  # noqa: BLE001 - not cached: the offline spelling
        return False


PINNED_PATH = str(find_ptxas())
ONE = "13.5.37" if _cached("13.5.37") else PINNED_PATH
TWO = "12.9.86,13.5.37" if _cached("12.9.86") and _cached("13.5.37") else f"default,{PINNED_PATH}"
RELEASES = [None, ONE, TWO]
# the judge sets the README names (run's, the SASS example's, the pytest plugin's, the campaign's)
JUDGE_SETS = [None, "reference,checker,ptxas,sass", "checker,ptxas,sass", "reference,ptxas,hardware",
              "reference,ptxas,sass,hardware"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("inputs")
    no_size = d / "no_address_size.ptx"
    no_size.write_text("".join(ln for ln in SMALL.read_text().splitlines(keepends=True)
                               if not ln.startswith(".address_size")))
    out = {"small": SMALL, "rejected": REJECTED, "crash": CRASH, "triton": TRITON, "no_address_size": no_size}
    corpus = d / "corpus"
    corpus.mkdir()
    for name, f in out.items():
        shutil.copy(f, corpus / f"{name}.ptx")
    out["corpus"] = corpus
    return out


FILES = ["small", "rejected", "crash", "triton", "no_address_size"]


@pytest.fixture(scope="module")
def campaign_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("camp") / "c"
    code, _, err = call(["campaign", "--gpus", "none", "--out", str(out), "--examples", "4", "--block-size", "2",
                         "--workers", "0", "--quiet", "--judges", "reference,checker,ptxas,sass", "--seed", "4"])
    assert code == 0, err
    return out


TIMES: dict[str, float] = {}
PYTHON_ERROR = re.compile(r"\b(AttributeError|TypeError|KeyError|IndexError|NameError|UnboundLocalError|"
                          r"ZeroDivisionError|AssertionError|RecursionError|NotImplementedError)\b[:']")


def call(argv: list[str]) -> tuple[int, str, str]:
    """``fuzzptx ARGV`` here, checked for what every command owes any input."""
    out, err = io.StringIO(), io.StringIO()
    t0 = time.monotonic()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse's own exit on a usage error
            code = exc.code if isinstance(exc.code, int) else 2
    TIMES[argv[0]] = TIMES.get(argv[0], 0.0) + time.monotonic() - t0
    e = err.getvalue()
    assert code in (0, 1, 2) or (code == 130 and "interrupted" in e), (argv, code, e[-2000:])
    assert "Traceback" not in e and "Traceback" not in out.getvalue(), (argv, e[-4000:])
    # a crash caught and printed is still a crash ("block 0 failed: AttributeError: ...")
    crash = PYTHON_ERROR.search(e + out.getvalue())
    assert crash is None, (argv, crash and crash.group(0), e[-2000:])
    if code == 2:
        last = e.strip().splitlines()[-1] if e.strip() else ""
        assert last.startswith(f"fuzzptx {argv[0]}: ") or "usage: fuzzptx" in e, (argv, e[-2000:])
    return code, out.getvalue(), e


def _opt(flag: str, value) -> list[str]:
    if value is None or value is False:
        return []
    return [flag] if value is True else [flag, str(value)]


def _ids(rows: list[dict]) -> list[str]:
    return [",".join(f"{k}={v}" for k, v in r.items() if v not in (None, False)) or "defaults" for r in rows]


# ----------------------------------------------------------------- run and campaign

RUN_ROWS = pairwise({"ptxas": RELEASES, "judges": JUDGE_SETS, "workers": ["0", "2"], "json": [False, True],
                     "numerics": [None, "hardware"], "generator": [None, "hypothesis"], "known": [None, KNOWN]})


@pytest.mark.parametrize("row", RUN_ROWS, ids=_ids(RUN_ROWS))
def test_run(row, tmp_path):
    call(["run", "--examples", "3", "--batch", "3", "--seed", "7", "--shrink-budget", "1", "--quiet",
          "--out", str(tmp_path / "r"), "--workers", row["workers"], *_opt("--ptxas", row["ptxas"]),
          *_opt("--judges", row["judges"]), *_opt("--json", row["json"]), *_opt("--numerics", row["numerics"]),
          *_opt("--generator", row["generator"]), *_opt("--known", row["known"])])


CAMPAIGN_ROWS = pairwise({"ptxas": RELEASES, "judges": [None, "reference,checker,ptxas,sass", "reference,ptxas,hardware"],
                          "workers": ["0", "2"], "source": ["examples", "time", "corpus"], "shard": [None, "1/2"],
                          "numerics": [None, "hardware"]})


@pytest.mark.parametrize("row", CAMPAIGN_ROWS, ids=_ids(CAMPAIGN_ROWS))
def test_campaign(row, tmp_path, files):
    source = {"corpus": ["--corpus", str(files["corpus"])], "examples": ["--examples", "2", "--block-size", "2"],
              "time": ["--time", "2s", "--block-size", "2"]}[row["source"]]
    call(["campaign", "--gpus", "0" if GPU else "none", "--out", str(tmp_path / "c"), "--quiet", "--seed", "5", *source,
          "--workers", row["workers"], *_opt("--ptxas", row["ptxas"]), *_opt("--judges", row["judges"]),
          *_opt("--shard", row["shard"]), *_opt("--numerics", row["numerics"])])


# ----------------------------------------------------------------- commands on files

CHECK_ROWS = pairwise({"file": FILES, "format": ["text", "json", "sarif"], "ptxas": [None, True, ONE],
                       "layers": [None, "isa", "spec,ptxas-model"]})


@pytest.mark.parametrize("row", CHECK_ROWS, ids=_ids(CHECK_ROWS))
def test_check(row, files):
    call(["check", str(files[row["file"]]), "--format", row["format"], *_opt("--ptxas", row["ptxas"]),
          *_opt("--layers", row["layers"])])


REPLAY_ROWS = pairwise({"file": FILES, "ptxas": RELEASES, "json": [False, True], "judges": [None, "sass", "mmasim"]})


@pytest.mark.parametrize("row", REPLAY_ROWS, ids=_ids(REPLAY_ROWS))
def test_replay(row, files):
    call(["replay", str(files[row["file"]]), *([] if GPU else ["--no-hardware"]), *_opt("--json", row["json"]),
          *_opt("--ptxas", row["ptxas"]), *_opt("--judges", row["judges"])])


BISECT_ROWS = pairwise({"file": FILES, "keep": ["ptxas:accepted", "ptxas:crash", "sass:"], "ptxas": [ONE, TWO],
                        "json": [False, True]})


@pytest.mark.parametrize("row", BISECT_ROWS, ids=_ids(BISECT_ROWS))
def test_bisect(row, files):
    call(["bisect", str(files[row["file"]]), "--keep", row["keep"], "--ptxas", row["ptxas"], *_opt("--json", row["json"])])


SHRINK_ROWS = pairwise({"file": FILES, "keep": ["ptxas:error", "ptxas:crash"], "ptxas": [None, ONE]})


@pytest.mark.parametrize("row", SHRINK_ROWS, ids=_ids(SHRINK_ROWS))
def test_shrink(row, files, tmp_path):
    call(["shrink", str(files[row["file"]]), "--keep", row["keep"], "-o", str(tmp_path / "o.ptx"), "--budget", "2",
          *_opt("--ptxas", row["ptxas"])])


@pytest.mark.parametrize("file", FILES)
def test_bundle(file, files, tmp_path):
    call(["bundle", str(files[file]), "-o", str(tmp_path / "b"), *(["--ptxas", ONE] if file in ("small", "crash") else [])])


# ----------------------------------------------------------------- commands on records and none

TRIAGE_ROWS = pairwise({"json": [False, True], "known": [None, KNOWN], "md": [False, True], "html": [False, True],
                        "ptxas": [None, ONE]})


@pytest.mark.parametrize("row", TRIAGE_ROWS, ids=_ids(TRIAGE_ROWS))
def test_triage(row, campaign_dir, tmp_path):
    call(["triage", str(campaign_dir), *_opt("--json", row["json"]), *_opt("--known", row["known"]),
          *(["--md", str(tmp_path / "t.md")] if row["md"] else []),
          *(["--html", str(tmp_path / "t.html")] if row["html"] else []), *_opt("--ptxas", row["ptxas"])])


REPORT_ROWS = pairwise({"known": [None, KNOWN], "ptxas": [None, ONE], "out": [False, True]})


@pytest.mark.parametrize("row", REPORT_ROWS, ids=_ids(REPORT_ROWS))
def test_report(row, campaign_dir, tmp_path):
    d = tmp_path / "c"
    shutil.copytree(campaign_dir, d)
    call(["report", str(d), *_opt("--known", row["known"]), *_opt("--ptxas", row["ptxas"]),
          *(["--out", str(tmp_path / "r")] if row["out"] else [])])


# Every command that writes, pointed where it cannot: under a regular file ("{f}/x"), at a regular
# file where a directory goes ("{f}"), at a directory where a file goes ("{d}").
UNWRITABLE = [
    ["run", "--examples", "1", "--out", "{f}/x"], ["run", "--examples", "1", "--out", "{f}"],
    ["campaign", "--gpus", "none", "--examples", "1", "--out", "{f}/x"],
    ["bundle", str(SMALL), "-o", "{f}/x"], ["report", "{camp}", "--out", "{f}/x"], ["report", "{camp}", "--out", "{f}"],
    ["shrink", str(REJECTED), "--keep", "ptxas:error", "-o", "{f}/x.ptx"],
    ["shrink", str(REJECTED), "--keep", "ptxas:error", "-o", "{d}"],
    ["triage", "{camp}", "--md", "{f}/x.md"], ["triage", "{camp}", "--html", "{d}"],
    ["conformance", "--family", "ldmatrix", "--write-report", "{f}/x.md"],
    ["toolchains", "--pack", "{f}/x", "13.0.88"],
]


@pytest.mark.parametrize("argv", UNWRITABLE, ids=lambda a: " ".join(a[:1] + [x for x in a[1:] if "{" in x]))
def test_an_output_that_cannot_be_written_is_one_line_before_any_work(argv, campaign_dir, tmp_path):
    """A path the command cannot write ends it with exit 2 and one line naming the path, before
    it judges anything (a shrink or a conformance run says so at once, not after its minutes)."""
    f = tmp_path / "a_file"
    f.write_text("x")
    d = tmp_path / "a_dir"
    d.mkdir()
    argv = [a.format(f=f, d=d, camp=campaign_dir) for a in argv]
    t0 = time.monotonic()
    code, _, err = call(argv)
    assert code == 2, (argv, err)
    last = err.strip().splitlines()[-1]
    assert str(f) in last or str(d) in last, last
    assert time.monotonic() - t0 < 30
    assert f.read_text() == "x" and list(d.iterdir()) == []


@pytest.mark.parametrize("argv", [["catalogue"], ["catalogue", "--json", "--family", "mma"], ["toolchains"],
                                  ["toolchains", "--json"], ["conformance", "--family", "ldmatrix", "--json"],
                                  ["--version"], ["nope"], ["run", "--no-such-option"]],
                         ids=lambda a: " ".join(a))
def test_small_commands(argv):
    call(argv)


def test_zz_times():
    """The file's cost per command (printed with -s)."""
    print("\ncli matrix seconds per command:", {k: round(v, 1) for k, v in sorted(TIMES.items())},
          "total", round(sum(TIMES.values()), 1))


@pytest.mark.parametrize("var,value", [("FUZZPTX_PTXAS_TIMEOUT", "abc"), ("FUZZPTX_PTXAS_TIMEOUT", "-1"),
                                       ("FUZZPTX_MAX_INPUT_MB", "abc")])
def test_a_malformed_setting_in_the_environment_is_one_line_before_any_work(var, value, monkeypatch, tmp_path):
    """A bad ``FUZZPTX_PTXAS_TIMEOUT`` made every block of a run fail, each said in a line, and the
    run went on judging nothing; now the command says it once and exits 2."""
    monkeypatch.setenv(var, value)
    code, _, err = call(["run", "--examples", "2", "--workers", "0", "--out", str(tmp_path / "r")])
    assert code == 2 and err.strip().splitlines()[-1].startswith(f"fuzzptx run: {var}="), err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("argv,says", [
    (["conformance", "--family", "ldmatrix", "--jobs", "0"], "--jobs 0: expected a positive number"),
    (["conformance", "--family", "bogus"], "invalid choice: 'bogus'"),
    (["check", str(SMALL), "--layers", ","], "names no layer"),
    (["bisect", str(SMALL), "--keep", ""], "--keep '': name a signature"),
    (["shrink", str(SMALL), "--keep", " ", "-o", "{tmp}/o.ptx"], "--keep '': name a signature"),
    (["report", "{camp}", "--ptxas", "9.9.9"], "9.9.9 is not a known ptxas release"),
    (["triage", "{camp}", "--ptxas", "9.9.9"], "9.9.9 is not a known ptxas release"),
    (["triage", "{camp}", "{camp}"], "given twice"),
])
def test_an_option_that_names_nothing_is_one_line_before_any_work(argv, says, campaign_dir, tmp_path):
    """``conformance --jobs 0`` was a ValueError traceback from the process pool; ``--family bogus``
    ran no form and exited 0; ``check --layers ,`` checked nothing and said "clean ()"; ``bisect
    --keep ''`` tried every release; ``report``/``triage --ptxas 9.9.9`` ignored the SPEC where no
    bucket needed it; ``triage DIR DIR`` counted every program twice."""
    argv = [a.format(camp=campaign_dir, tmp=tmp_path) for a in argv]
    code, _, err = call(argv)
    assert code == 2 and says in err.strip().splitlines()[-1], err


def test_kernels_takes_one_file_and_says_at_once_when_none_is_a_kernel(tmp_path):
    """``--generator mutants --kernels FILE`` said 'no .ptx file there' for a .ptx file (it took
    directories only); a set of files none of which is a kernel failed every block of the run, one
    line each, and the run went on; now it is one line before any program is drawn."""
    code, out, err = call(["run", "--examples", "2", "--batch", "2", "--generator", "mutants", "--kernels", str(TRITON),
                           "--workers", "0", "--quiet", "--out", str(tmp_path / "r"), "--json"])
    assert code in (0, 1) and json.loads(out)["programs"] == 2, err
    bad = tmp_path / "deep.ptx"
    bad.write_text(".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n .reg .b32 %r<3>;\n"
                   "  mov.b32 %r1, " + "(" * 100 + "1" + ")" * 100 + ";\n ret;\n}\n")
    code, _, err = call(["run", "--examples", "2", "--generator", "mutants", "--kernels", str(bad), "--out",
                         str(tmp_path / "r2")])
    assert code == 2 and "no real kernel to mutate among 1 file(s); first: " in err and "nested" in err
    assert not (tmp_path / "r2").exists()


def test_ctrl_c_in_a_run_says_where_the_judged_programs_are(monkeypatch, tmp_path):
    """Ctrl-C ended ``fuzzptx run`` with 'interrupted' alone; the record it kept was not named."""
    from fuzzptx.engine import run as engine_run

    def interrupted(n, seed, judges, out_dir, **kw):
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "results.jsonl").write_text('{"block": 0, "index": 0}\n{"block": 0, "index": 1}\n')
        raise KeyboardInterrupt

    monkeypatch.setattr(engine_run, "run", interrupted)
    out = tmp_path / "r"
    code, _, err = call(["run", "--examples", "4", "--out", str(out)])
    assert code == 130 and f"2 judged program(s) kept in {out / 'results.jsonl'}" in err and "--resume" in err
