"""Every target row of benchmarks/README.md names a committed command and a committed record, and
the record holds the figure the table prints, with the metadata that says where it came from
(``benchmarks/rows.py`` is the table the README, ``reproduce.py`` and this test read)."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))

from records import missing_meta  # noqa: E402
from rows import BY_ID, ROWS  # noqa: E402


def _table(title: str) -> list[list[str]]:
    """The rows (cells) of the markdown table under ``## title``."""
    text = (BENCH / "README.md").read_text()
    section = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")][2:]  # header and rule
    return [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in lines]


TARGETS = {cells[0]: cells for cells in _table("Targets")}


def test_the_readme_and_the_row_table_list_the_same_rows():
    assert list(TARGETS) == [r.id for r in ROWS]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_row_names_its_command_and_record(row):
    cells = TARGETS[row.id]
    before = ROWS[ROWS.index(row) - 1] if ROWS.index(row) else None
    if cells[4] == "the same command":  # as the row above says it
        assert before is not None and before.command == row.command, f"row {row.id}: not the command of the row above"
    else:
        assert f"`{row.command}`" in cells[4], f"row {row.id}: the README's command is not {row.command!r}"
    assert f"`{row.record}`" in cells[7], f"row {row.id}: the README names no record {row.record}"
    for script in re.findall(r"benchmarks/[\w/]+\.py", row.command):
        assert (ROOT / script).is_file(), f"row {row.id}: {script} is not committed"
    for module in re.findall(r"-m (support\.\w+)", row.command):
        assert (ROOT / "tests" / (module.replace(".", "/") + ".py")).is_file()


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_record_holds_the_printed_figure(row):
    assert row.path.is_file(), f"row {row.id}: no record benchmarks/{row.record}"
    figure = row.figure(json.loads(row.path.read_text()))
    bold = re.search(r"\*\*(.+?)\*\*", TARGETS[row.id][2])
    assert bold, f"row {row.id}: no bold figure"
    assert figure in bold[1], f"row {row.id}: the README prints {bold[1]!r}, the record says {figure!r}"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_record_says_where_it_came_from(row):
    """Command, commit, date, machine, load and versions, or the gaps only a rerun on its device can fill."""
    gone = set(missing_meta(json.loads(row.path.read_text())))
    assert gone <= set(row.gaps), f"row {row.id}: the record lacks {sorted(gone - set(row.gaps))}"


def test_missing_meta_names_what_is_absent():
    full = {"command": "c", "commit": {"sha": "abc"}, "date": "d", "machine": {"gpus": ["H100, 580"]}, "load": {"b": 1},
            "versions": {"python": "3", "hypothesis": "6", "numpy": "2", "ptxas": "13", "nvdisasm": "13"}}
    assert missing_meta({"meta": full}) == ["versions.driver"]
    assert missing_meta({"meta": {**full, "commit": {"sha": None}, "machine": {"gpus": []}}}) == ["commit"]
    assert "command" in missing_meta({})


def test_every_other_benchmark_names_a_committed_record():
    for cells in _table("Other maintained benchmarks"):
        script, record = cells[0], cells[-1]
        for path in re.findall(r"`((?:results|tests/hw_records)/[^`]+)`", record):
            where = BENCH / path if path.startswith("results/") else ROOT / path
            assert where.exists(), f"{script}: {path} is not committed"


def test_reproduce_refuses_an_unknown_row_and_prints_a_device_command(capsys):
    from reproduce import main

    assert main(["9z"]) == 2
    assert "no row 9z" in capsys.readouterr().err
    assert main(["2b"]) == 2
    out = capsys.readouterr().out
    assert "row 2b: recorded 0." in out and BY_ID["2b"].command in out


def test_reproduce_judges_a_rerun_by_the_rows_band():
    """A ratio within its band reproduces, one outside does not; a count must be the same; a time
    that grows with the load names both loads when they differ."""
    from reproduce import changed_since, verdict
    from rows import Band, Row

    def rec(x: float, load: float) -> dict:
        return {"x": x, "meta": {"load": {"before": [load, 0, 0], "after": [load, 0, 0]}}}

    ratio = Row("t", "c", "r", lambda r: f"{r['x']:.2f}", value=lambda r: r["x"], band=Band(0.10, "two runs"))
    assert verdict(ratio, rec(0.14, 1), rec(0.15, 1), "0.14", "0.15") == (True, "band: ±10% of 0.14 (two runs): 0.15 is +7%, within")
    ok, text = verdict(ratio, rec(0.14, 1), rec(0.10, 1), "0.14", "0.10")
    assert not ok and "-29%, OUTSIDE" in text
    count = Row("c", "c", "r", lambda r: f"{r['x']:g}")
    assert verdict(count, rec(3, 1), rec(3, 1), "3", "3")[0] and not verdict(count, rec(3, 1), rec(4, 1), "3", "4")[0]
    timed = Row("w", "c", "r", lambda r: f"{r['x']:g} s", value=lambda r: r["x"], band=Band(0.25, "w", load_bound=True))
    assert "the loads differ (17 then, 0.5 now)" in verdict(timed, rec(144, 17), rec(7, 0.5), "144 s", "7 s")[1]
    assert changed_since({}) == "the record names no commit"


def test_a_sampled_row_reads_the_subset_figure_a_full_agreement_record_holds():
    """``reproduce.py 5a --sample`` compares a subset's rerun with the subset's figure the full record
    holds: rows.py reads what support.agreement writes, and says when a record has none."""
    from support.agreement import Tally

    full = Tally("x", "", n=20, exact=17, may_predicted=1, sample=Tally("x", "", n=2, exact=1, may_predicted=1))
    sampled = [r for r in ROWS if r.sample]
    assert [r.id for r in sampled] == ["5a", "5b", "5c"] and all("--sample" in r.sample for r in sampled)
    record = {"distributions": [full.as_json()] * 3}
    assert sampled[0].figure(record) == "17/19" and sampled[0].sample_figure(record) == "1/1"
    assert sampled[0].sample_figure({"distributions": [{}]}).startswith("not recorded")
