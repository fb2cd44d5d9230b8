"""``--ptxas SPEC`` with the default judges: the SASS judge runs once per release (``sass@R`` on the
code of ``ptxas@R``).  Before, the SASS judge read a pinned ptxas verdict that a run with another
release never takes, and every block failed (``AttributeError: 'NoneType' object has no attribute
'kernel_names'``, issue 35).  Offline, the other release is the pinned ptxas named by its path; the
cached 12.9.86 and 13.5.37 join in where the user cache has them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzzptx import cli
from fuzzptx.oracles import toolchains
from fuzzptx.oracles.ptxas import find_ptxas


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]


def _cached(release: str) -> bool:
    try:
        return any(tc.release == release for tc in toolchains.resolve(release, fetch_missing=False))
    except Exception:  # noqa: BLE001 - not in the cache: the offline spelling alone
        return False


def _spec(cached: bool = True) -> tuple[str, list[str]]:
    """A --ptxas SPEC of releases other than the pinned one, and their judge suffixes."""
    path = str(find_ptxas())
    rels = [r for r in ("12.9.86", "13.5.37") if cached and _cached(r)]
    return ",".join([path] + rels), [path] + rels


@pytest.mark.parametrize("workers", ["0", "1"])
def test_run_with_releases_judges_every_program_with_sass_per_release(tmp_path, capsys, workers):
    spec, rels = _spec(cached=workers == "0")
    code = cli.main(["run", "--examples", "6", "--seed", "3", "--ptxas", spec, "--workers", workers,
                     "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code in (0, 1), err
    assert "failed" not in err and "ERRORS" not in err
    recs = _records(tmp_path / "r")
    assert len(recs) == 6
    for rec in recs:
        for r in rels:
            assert f"ptxas@{r}" in rec["verdicts"] and f"sass@{r}" in rec["verdicts"], rec["verdicts"]
        assert "sass" not in rec["verdicts"] and "ptxas" not in rec["verdicts"]


def test_pinned_and_another_release_each_have_their_sass_verdict(tmp_path, capsys):
    path = str(find_ptxas())
    code = cli.main(["run", "--examples", "4", "--seed", "5", "--ptxas", f"default,{path}", "--workers", "0",
                     "--out", str(tmp_path / "r")])
    assert code in (0, 1), capsys.readouterr().err
    for rec in _records(tmp_path / "r"):
        assert {"ptxas", "sass", f"ptxas@{path}", f"sass@{path}"} <= set(rec["verdicts"]), rec["verdicts"]


def test_campaign_with_a_release_judges_every_program(tmp_path, capsys):
    spec, rels = _spec(cached=False)
    code = cli.main(["campaign", "--examples", "6", "--seed", "2", "--ptxas", spec, "--gpus", "none",
                     "--workers", "1", "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code in (0, 1), err
    assert "failed" not in err
    recs = [r for r in _records(tmp_path / "c") if "verdicts" in r]
    assert len(recs) == 6
    assert all(f"sass@{r}" in rec["verdicts"] for rec in recs for r in rels)
