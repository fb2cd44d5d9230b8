"""fuzzptx report on a real (small, CPU) campaign: summary.json, JUnit XML, self-contained HTML,
and the page rendered by headless Chromium (skipped where none is installed)."""
from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fuzzptx import cli
from fuzzptx.triage.report import write_report


# The recorded experiments the ptxas model knowingly gets wrong (a ``// MODEL:`` line): each is a
# checker!=ptxas finding, so the report has buckets to show whatever the generator draws.
GAPS = sorted(p for p in (Path(__file__).parent / "data" / "checker").glob("*.ptx") if "// MODEL:" in p.read_text())


@pytest.fixture(scope="module")
def campaign_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("camp")
    corpus = tmp_path_factory.mktemp("gaps")
    for p in GAPS:
        (corpus / p.name).write_text(p.read_text())
    cmd = [sys.executable, "-m", "fuzzptx.cli", "campaign", "--gpus", "none", "--corpus", str(corpus), "--block-size", "8",
           "--seed", "11", "--workers", "1", "--plant-faults", "--quiet", "--out", str(out),
           "--judges", "reference,checker,ptxas"]  # the checker's findings give the report buckets to show
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    return out


def test_summary_and_junit_agree_with_the_record(campaign_dir):
    summ = write_report(campaign_dir)
    records = [json.loads(x) for x in (campaign_dir / "results.jsonl").read_text().splitlines()]
    assert summ["programs"] == len(records) == len(GAPS) + 2  # and the two planted kernels
    causes = {f["cause"]["judges"] + "|" + f["cause"]["rule"] + "|" + f["cause"]["pattern"] + "|"
              + f["cause"]["instruction_class"] for r in records for f in r["findings"]}  # one bucket per root cause
    assert {b["cause"] for b in summ["buckets"]} == causes
    assert summ["findings"] == sum(len(r["findings"]) for r in records)
    assert summ["distinct_bugs"] == len(causes) and summ["headline"] == f"distinct bugs: {len(causes)} (new: {len(causes)})"
    assert summ["campaign_stats"]["programs"] == len(GAPS) + 2
    suite = ET.parse(campaign_dir / "junit.xml").getroot()
    failures = suite.findall(".//testcase/failure")
    assert int(suite.get("failures")) == len(failures) == len(causes)
    for b in summ["buckets"]:  # every bucket's smallest repro exists and is the smallest of its bucket
        smallest = min(r["instructions"] for r in records if any(f["cause"]["rule"] == b["rule"] and
                                                                 f["cause"]["judges"] == b["judges"] for f in r["findings"]))
        assert b["instructions"] == smallest and Path(b["smallest_repro"]).exists()
        assert sum(b["evidence"].values()) >= b["count"]


def test_html_is_self_contained_and_links_repros(campaign_dir):
    write_report(campaign_dir)
    page = (campaign_dir / "report.html").read_text()
    assert page.count("<svg") >= 2 and "<script" not in page and "http://" not in page.split("<svg")[0]
    assert "Stages" in page and "GPU faults survived" in page
    for b in json.loads((campaign_dir / "summary.json").read_text())["buckets"]:
        assert f'href="repros/{Path(b["smallest_repro"]).name}"' in page


def test_report_cli_errors_are_one_line(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a directory" in err


def test_report_renders_in_headless_chromium(campaign_dir, tmp_path):
    from support.screenshot import find_browser, screenshot
    if find_browser() is None:
        pytest.skip("no Chromium installed")
    write_report(campaign_dir)
    png = screenshot(campaign_dir / "report.html", tmp_path / "r.png", width=1000, height=1400)
    import matplotlib.image as mpimg

    img = mpimg.imread(png)
    assert img.shape[0] == 1400 and img.shape[1] == 1000
    assert img[..., :3].std() > 0.05  # text and plots, not a blank page


def test_known_buckets_are_skipped_not_failed(campaign_dir, tmp_path, capsys):
    summ = write_report(campaign_dir)
    causes = sorted(b["cause"] for b in summ["buckets"])
    assert causes, "the planted campaign has findings"
    judges, rule, pattern, cls = causes[0].split("|")
    known = tmp_path / "known.toml"
    known.write_text(f'# a ledger\n[[bug]]\nid = "first"\ntitle = "known for the test"\nkind = "model"\n'
                     f'cause = {{ judges = "{judges}", rule = "{rule}", pattern = "{pattern}", instruction_class = "{cls}" }}\n'
                     'written_up = "this test"\n\n'
                     '[[bug]]\nid = "stale"\ntitle = "stale entry"\nkind = "model"\n'
                     'cause = { judges = "nothing!=matches", rule = "this" }\nwritten_up = "w"\n\n'
                     '[[bug]]\nid = "other-numerics"\ntitle = "not this campaign\'s numerics"\nkind = "hardware"\n'
                     'cause = { judges = "reference!=hardware" }\nwhen = { numerics = "hardware" }\nwritten_up = "w"\n')
    assert cli.main(["report", str(campaign_dir), "--known", str(known)]) == 0
    out = capsys.readouterr().out
    assert f"{known}:9: stale (nothing!=matches|this|*|*)" in out and "other-numerics" not in out  # stale listed
    assert f"distinct bugs: {len(causes)} (new: {len(causes) - 1})" in out
    summ = json.loads((campaign_dir / "summary.json").read_text())
    by_cause = {b["cause"]: b for b in summ["buckets"]}
    assert by_cause[causes[0]]["known"] == "first: known for the test" and by_cause[causes[0]]["known_entry"] == f"{known}:2"
    assert summ["known_buckets"] == 1 and summ["new_buckets"] == len(causes) - 1
    assert summ["new_findings"] == summ["findings"] - by_cause[causes[0]]["count"]
    assert [b["new"] for b in summ["buckets"]] == sorted((b["new"] for b in summ["buckets"]), reverse=True)  # new first
    suite = ET.parse(campaign_dir / "junit.xml").getroot()
    assert int(suite.get("failures")) == len(suite.findall(".//testcase/failure")) == len(causes) - 1
    skipped = suite.findall(".//testcase/skipped")
    assert int(suite.get("skipped")) == len(skipped) == 1 and "known for the test" in skipped[0].get("message")
    page = (campaign_dir / "report.html").read_text()
    assert "known: first: known for the test" in page and "stale" in page
    assert cli.main(["report", str(campaign_dir)]) == 0  # without a ledger every bucket fails again
    suite = ET.parse(campaign_dir / "junit.xml").getroot()
    assert int(suite.get("failures")) == len(causes) and int(suite.get("skipped")) == 0


def test_a_bad_baseline_is_one_line_and_writes_nothing(campaign_dir, tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[bug]]\nid = "x"\ntitle = "t"\nkind = "model"\ncause = { judges = "checker!=ptxas" }\n')
    before = (campaign_dir / "junit.xml").read_text() if (campaign_dir / "junit.xml").exists() else None
    assert cli.main(["report", str(campaign_dir), "--known", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bad}:1:" in err and "needs written_up" in err
    after = (campaign_dir / "junit.xml").read_text() if (campaign_dir / "junit.xml").exists() else None
    assert before == after


def test_records_stream_and_the_fault_table_is_capped(campaign_dir, tmp_path):
    """A nightly record holds millions of programs: the report reads it line by line, keeping
    counts (not records), and lists at most FAULT_ROWS GPU faults, counting the rest."""
    from fuzzptx.triage.report import FAULT_ROWS

    out = tmp_path / "many"
    out.mkdir()
    base = [json.loads(x) for x in (campaign_dir / "results.jsonl").read_text().splitlines()]
    extra = FAULT_ROWS + 3
    with (out / "results.jsonl").open("w") as fh:
        for rec in base:
            fh.write(json.dumps(rec) + "\n")
        for i in range(extra):
            fh.write(json.dumps({"id": f"f:{i}", "t": base[-1]["t"] + i, "family": "wgmma.f32.f16",
                                 "verdicts": {"hardware": "fault: illegal address"},
                                 "findings": [{"signature": "hardware:fault:illegal-address|other", "message": "m"}]}) + "\n")
        fh.write("{not json\n")
    summ = write_report(out)
    assert summ["programs"] == len(base) + extra
    assert summ["families"]["wgmma.f32.f16"] >= extra
    assert any(p.endswith(f"results.jsonl:{len(base) + extra + 1}: skipped: Expecting property name enclosed in "
                          "double quotes: line 1 column 2 (char 1)") for p in summ["input_problems"]), summ["input_problems"]
    page = (out / "report.html").read_text()
    planted = sum(1 for r in base if r.get("planted"))  # the campaign's own rows come first
    assert planted == 2 and page.count("<td>fault: illegal address</td>") == FAULT_ROWS - planted
    assert f"and {extra + planted - FAULT_ROWS} more (results.jsonl)" in page
