"""The release matrix: each ptxas release a judge (``ptxas@R``), a program beyond a release's PTX
"not applicable" to it, releases that disagree a finding, and ``fuzzptx bisect``.  Offline, the
releases are the pinned ptxas under two names (its package and its path); with
``FUZZPTX_NETWORK_TESTS=1`` other releases are fetched from PyPI into the user cache."""
from __future__ import annotations

import contextlib

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from fuzzptx import cli
from fuzzptx.engine import matrix
from fuzzptx.judges import NotApplicable, differ, registry
from fuzzptx.judges.builtin import ReleasePtxasJudge, release_judges
from fuzzptx.oracles import toolchains
from fuzzptx.oracles.ptxas import find_ptxas
from fuzzptx.program import Program

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "reports" / "findings" / "ptxas_O3_inflight_acc_call_small.ptx"
NETWORK = os.environ.get("FUZZPTX_NETWORK_TESTS") == "1"


def test_the_pinned_release_stays_the_ptxas_judge_and_a_path_is_a_judge_of_its_own():
    names = release_judges(f"default,{find_ptxas()}")
    assert names[0] == "ptxas" and names[1] == f"ptxas@{find_ptxas()}"
    assert isinstance(registry.get(names[1]), ReleasePtxasJudge)


def test_a_release_judge_says_not_applicable_beyond_its_ptx_version():
    (tc,) = toolchains.resolve("default")
    older = ReleasePtxasJudge(replace(tc, release="12.9.86"))  # reads PTX up to 8.8 (measured)
    p = Program.from_file(str(SMALL))
    newer = replace(p, module=replace(p.module, version="9.0"))
    assert older.not_applicable(p) is None
    assert "9.0" in older.not_applicable(newer)
    v = differ.judge(newer, ("ptxas",))
    v[older.name] = NotApplicable(older.not_applicable(newer))
    assert not [f for f in differ.compare(newer, v) if "ptxas@" in f.signature]
    assert v.summary()[older.name].startswith("n/a: ")


@contextlib.contextmanager
def pinned_ptxas_as(release: str):
    """The pinned ptxas registered as ``ptxas@release`` for the length of a test."""
    (tc,) = toolchains.resolve("default")
    judge = ReleasePtxasJudge(replace(tc, release=release))
    registry.register(judge)
    try:
        yield judge
    finally:
        registry.unregister(judge.name)


def test_releases_that_disagree_are_a_finding_named_by_both():
    p = Program.from_file(str(SMALL))
    v = differ.judge(p, ("ptxas",))
    with pinned_ptxas_as("99.0.1") as newer:
        v[newer.name] = replace(v.ptxas, accepted=False, returncode=1)
        sigs = [f.signature for f in differ.compare(p, v)]
        assert any(s.startswith("ptxas!=ptxas@99.0.1|accepted-then-rejected|") for s in sigs), sigs
        assert [f.kind for f in differ.compare(p, v) if "ptxas@" in f.signature] == ["compiler bug candidate"]


def test_the_matrix_row_of_a_release_is_what_the_judges_say_with_it_as_ptxas():
    p = Program.from_file(str(SMALL))
    rows = matrix.matrix(p, SMALL.read_text(), "default", ("ptxas", "checker", "reference"))
    assert list(rows) == [toolchains.resolve("default")[0].release]
    row = next(iter(rows.values()))
    assert row["verdicts"]["ptxas"] == differ.judge(p, ("ptxas",), text=SMALL.read_text(), judged=p).summary()["ptxas"]


def test_bisect_names_first_and_last(tmp_path, capsys):
    assert cli.main(["bisect", str(SMALL), "--keep", "ptxas:accepted", "--ptxas", "default", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["first"] == res["last"] == toolchains.resolve("default")[0].release
    assert cli.main(["bisect", str(SMALL), "--keep", "ptxas:error", "--ptxas", "default"]) == 1


@pytest.mark.network
@pytest.mark.skipif(not NETWORK, reason="fetches ptxas releases from PyPI (FUZZPTX_NETWORK_TESTS=1)")
def test_the_in_flight_register_miscompile_is_in_12_9_and_13_0_not_in_13_5():
    """reports/findings: ptxas -O3 hands a register of a wgmma in flight to a call's return address.
    The SASS judge (nvdisasm from the 13.5 wheel reads every release's cubins) finds it in 12.9.86
    and 13.0.88 and not in 13.5.37 (measured 2026-11-26, also 12.4.131: holds)."""
    res = matrix.bisect(Program.from_file(str(SMALL)), SMALL.read_text(), "sass:", "12.9.86,13.0.88,13.5.37")
    if any(row.get("verdicts", {}).get("sass", "").startswith("skipped") for row in res["matrix"].values()):
        pytest.skip("no disassembler")
    assert res["holds"] == {"12.9.86": True, "13.0.88": True, "13.5.37": False}


def test_a_release_limit_is_not_a_disagreement():
    """12.x's 48 KB static shared memory limit (13.x allows more on sm_90a) makes the program beyond
    that release, not a finding; another rejection by the same release is one."""
    from fuzzptx.oracles.ptxas_diag import Diagnostic

    p = Program.from_file(str(SMALL))
    v = differ.judge(p, ("ptxas",))
    with pinned_ptxas_as("12.9.86") as older:
        limit = Diagnostic("error", None, None, "Entry function 'k' uses too much shared data (0xc880 bytes, 0xc000 max)", "k")
        other = Diagnostic("error", None, None, "Register allocation failed with register count of '255'", "k")
        for diag, found in ((limit, False), (other, True)):
            v[older.name] = replace(v.ptxas, accepted=False, returncode=255, diagnostics=(diag,))
            sigs = [f.signature for f in differ.compare(p, v) if "!=ptxas" in f.signature and "checker" not in f.signature]
            assert bool(sigs) == found, (diag.message, sigs)


def test_replay_prints_the_matrix_under_its_own_key(capsys):
    assert cli.main(["replay", str(SMALL), "--no-hardware", "--ptxas", "default", "--json"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    release = toolchains.resolve("default")[0].release
    assert set(out["matrix"]) == {release}
    assert out["matrix"][release]["verdicts"]["ptxas"].startswith("accepted")
    assert "sass" in out["matrix"][release]["verdicts"]  # the SASS judge runs in the matrix (or says why not)


def test_shrink_keeps_a_signature_with_a_named_release(tmp_path):
    """``fuzzptx shrink --ptxas R`` judges every candidate with release R as the ptxas."""
    out = tmp_path / "small.ptx"
    rc = cli.main(["shrink", str(SMALL), "--keep", "ptxas:accepted", "--ptxas", "default", "-o", str(out),
                   "--budget", "20"])
    assert rc == 0 and Program.from_file(str(out)).signature == "ptxas:accepted"
    assert cli.main(["shrink", str(SMALL), "--keep", "ptxas:accepted", "--ptxas", f"default,{find_ptxas()}", "-o", str(out)]) == 2
