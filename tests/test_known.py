"""Known findings (fuzzptx.triage.known): the baseline file's grammar, its errors, its conditions, and
the repository's own baseline."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fuzzptx.errors import FuzzptxError
from fuzzptx.triage.known import classify, context_of, load_known, parse_known

ROOT = Path(__file__).resolve().parents[1]

TEXT = """\
# a comment line, then a blank one

checker!=ptxas|missed:C7512|*   # allocator
reference!=hardware|mismatch|wgmma*.f32.e[45]m[23]* numerics=spec   # e8m13 in spec numerics
checker!=ptxas|line:C7517|wgmma.f32.f16 # one exact bucket
"""


def test_entries_carry_pattern_reason_conditions_and_line():
    ks = parse_known(TEXT, "k.txt")
    assert [(k.pattern, k.reason, k.line, k.when) for k in ks] == [
        ("checker!=ptxas|missed:C7512|*", "allocator", 3, ()),
        ("reference!=hardware|mismatch|wgmma*.f32.e[45]m[23]*", "e8m13 in spec numerics", 4, (("numerics", "spec"),)),
        ("checker!=ptxas|line:C7517|wgmma.f32.f16", "one exact bucket", 5, ()),
    ]
    assert ks[0].where() == "k.txt:3"


@pytest.mark.parametrize("line, words", [
    ("checker!=ptxas|missed:C7512|*", "needs a reason"),
    ("checker!=ptxas|missed:C7512|*   #   ", "needs a reason"),
    ("checker!=ptxas|x|y fast=yes  # why", "condition 'fast=yes'"),
    ("checker!=ptxas|x|y numerics=fast  # why", "numerics=spec|hardware"),
    ("C7512  # why", "not a signature glob"),
])
def test_a_bad_line_is_an_error_naming_file_and_line(line, words):
    with pytest.raises(FuzzptxError) as e:
        parse_known("# header\n" + line + "\n", "base.txt")
    assert str(e.value).startswith("base.txt:2: ") and words in str(e.value)


def test_an_unreadable_file_is_one_error():
    with pytest.raises(FuzzptxError, match="cannot read"):
        load_known("/nonexistent/known.txt")


def test_classify_first_entry_wins_and_conditions_gate_matches():
    ks = parse_known(TEXT, "k.txt")
    sigs = ["checker!=ptxas|missed:C7512|wgmma.sp.s32.u8", "reference!=hardware|mismatch|wgmma.sp.f32.e5m2.e4m3",
            "reference!=hardware|mismatch|wgmma.f32.bf16", "checker!=ptxas|missed:C7517|wgmma.f32.f16"]
    hit, unmatched = classify(sigs, ks, {"numerics": "spec"})
    assert {s: k.line for s, k in hit.items()} == {sigs[0]: 3, sigs[1]: 4}
    assert [k.line for k in unmatched] == [5]
    hit, unmatched = classify(sigs, ks, {"numerics": "hardware"})  # the fp8 accumulator is news there
    assert set(hit) == {sigs[0]} and [k.line for k in unmatched] == [5]  # (line 4 does not apply: not stale)
    hit, _ = classify(sigs, ks, {})  # no campaign stats: a conditioned entry never holds
    assert set(hit) == {sigs[0]}


def test_context_comes_from_the_campaigns_stats(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, mode in ((a, "spec"), (b, "hardware")):
        d.mkdir()
        (d / "stats.json").write_text('{"numerics": "%s"}' % mode)
    assert context_of([a]) == {"numerics": "spec"}
    assert context_of([a / "results.jsonl"]) == {"numerics": "spec"}
    assert context_of([a, b]) == {}  # shards that disagree: no context
    assert context_of([tmp_path]) == {}


def test_the_repository_baseline_parses_and_points_at_real_write_ups():
    ks = load_known(ROOT / "reports" / "known_findings.txt")
    assert ks
    for k in ks:
        paths = re.findall(r"[\w./-]+/[\w.-]+\.\w+", k.reason)
        assert paths, f"{k.where()}: the reason names no write-up"
        for p in paths:
            assert (ROOT / p).exists() or (ROOT / "reports" / "findings" / p).exists(), f"{k.where()}: {p} missing"


def test_a_fuzz_run_marks_known_buckets(tmp_path, capsys):
    from fuzzptx import cli

    known = tmp_path / "known.txt"
    known.write_text("*|*   # everything (every signature has a |), for the test\n")
    # the first seed whose 32 programs have findings (the generator decides which; a few seeds suffice)
    for seed in range(1, 9):
        out = tmp_path / f"run{seed}"
        assert cli.main(["run", "--examples", "32", "--seed", str(seed), "--shrink-budget", "0", "--out", str(out),
                         "--known", str(known)]) == 0
        summ = json.loads((out / "summary.json").read_text())
        if summ["findings_by_bucket"]:
            break
    assert summ["findings_by_bucket"], "no findings in the first 32 programs of seeds 1-8"
    assert summ["new_findings"] == 0 and set(summ["known"]) == set(summ["findings_by_bucket"])
    printed = capsys.readouterr().out
    assert all("(known: " in line for line in printed.splitlines() if line.startswith("    ") and "|" in line)
    bad = tmp_path / "bad.txt"
    bad.write_text("*|*|*\n")
    assert cli.main(["run", "--examples", "1", "--out", str(tmp_path / "never"), "--known", str(bad)]) == 2
    assert f"{bad}:1:" in capsys.readouterr().err and not (tmp_path / "never").exists()
