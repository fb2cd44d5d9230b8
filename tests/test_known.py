"""The known-bug ledger (fuzzptx.triage.known): its TOML grammar and errors, matching by root cause
with conditions, the old glob list refused with a message, and the repository's own ledger."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fuzzptx.errors import FuzzptxError
from fuzzptx.judges.finding import RootCause, cause_of
from fuzzptx.strategies.avoid import AVOIDABLE
from fuzzptx.triage.known import avoided, classify, context_of, default_numerics, load_known, parse_known

ROOT = Path(__file__).resolve().parents[1]

TEXT = """\
# a comment line, then a blank one

[[bug]]
id = "allocator"
title = "ptxas's allocator"
kind = "model"
cause = { judges = "checker!=ptxas", rule = "missed:C7512" }
written_up = "reports/findings/README.md"

[[bug]]
id = "e8m13"
title = "fp8 accumulator"
kind = "hardware"
cause = { judges = "reference!=hardware", rule = "mismatch", pattern = "hardware-numerics" }
when = { numerics = "spec" }
written_up = "docs/numerics.md"

[[bug]]
id = "one-exact"
title = "an exact cause"
kind = "model"
cause = { judges = "checker!=ptxas", rule = "line:C7517", pattern = "", instruction_class = "mma" }
written_up = "nowhere.md"
avoid = ["repeated-wgmma"]
rediscover = { seed = 1, programs = 32 }
"""


def test_entries_carry_id_cause_conditions_and_line():
    ks = parse_known(TEXT, "k.toml")
    assert [(k.id, k.line, k.when, k.pattern_text()) for k in ks] == [
        ("allocator", 3, (), "checker!=ptxas|missed:C7512|*|*"),
        ("e8m13", 10, (("numerics", "spec"),), "reference!=hardware|mismatch|hardware-numerics|*"),
        ("one-exact", 18, (), "checker!=ptxas|line:C7517||mma"),
    ]
    assert ks[0].where() == "k.toml:3" and ks[2].budget() == {"seed": 1, "programs": 32}
    assert ks[2].avoid == ("repeated-wgmma",)


@pytest.mark.parametrize("entry, words", [
    ('id = "x"\nkind = "model"\ncause = { judges = "a" }\nwritten_up = "w"', "needs title"),
    ('id = "x"\ntitle = "t"\nkind = "model"\ncause = { judges = "a" }', "needs written_up"),
    ('id = "x"\ntitle = "t"\nkind = "fast"\ncause = { judges = "a" }\nwritten_up = "w"', "kind 'fast'"),
    ('id = "X y"\ntitle = "t"\nkind = "model"\ncause = { judges = "a" }\nwritten_up = "w"', "id: lower-case"),
    ('id = "x"\ntitle = "t"\nkind = "model"\ncause = { signature = "a" }\nwritten_up = "w"', "cause: a table"),
    ('id = "x"\ntitle = "t"\nkind = "model"\ncause = "a|b"\nwritten_up = "w"', "cause: a table"),
    ('id = "x"\ntitle = "t"\nkind = "model"\ncause = { judges = "a" }\nwritten_up = "w"\nwhen = { fast = "yes" }',
     "numerics=spec|hardware"),
    ('id = "x"\ntitle = "t"\nkind = "model"\ncause = { judges = "a" }\nwritten_up = "w"\navoid = ["nothing"]',
     "avoid ['nothing']"),
    ('id = "x"\ntitle = "t"\nkind = "model"\ncause = { judges = "a" }\nwritten_up = "w"\nrediscover = { seed = 1 }',
     "rediscover:"),
    ('id = "x"\ntitle = "t"\nkind = "model"\ncause = { judges = "a" }\nwritten_up = "w"\ncolour = "red"',
     "unknown field(s) colour"),
    ('id = "x"\ntitle = "t"\nkind = "model"\ncause = { judges = "a" }\nwritten_up = "w"\nalso = { judges = "b" }',
     "also: a list"),
    ('id = "x"\ntitle = "t"\nkind = "model"\ncause = { judges = "a" }\nwritten_up = "w"\nalso = [{ signature = "b" }]',
     "cause: a table"),
])
def test_a_bad_entry_is_an_error_naming_file_and_line(entry, words):
    with pytest.raises(FuzzptxError) as e:
        parse_known("# header\n[[bug]]\n" + entry + "\n", "base.toml")
    assert str(e.value).startswith("base.toml:2: ") and words in str(e.value), str(e.value)


def test_bad_toml_names_its_line_and_the_old_glob_list_says_what_replaced_it():
    with pytest.raises(FuzzptxError, match=r"^b\.toml:3: not a known-bug ledger \(TOML\)"):
        parse_known("[[bug]]\nid = 'x'\nthis is not toml\n", "b.toml")
    with pytest.raises(FuzzptxError) as e:
        parse_known("# the old format\ncheker!=ptxas|missed:C7512|*   # allocator\n", "known_findings.txt")
    assert str(e.value).startswith("known_findings.txt:2: a glob list of known finding signatures")
    assert "reports/known_bugs.toml" in str(e.value)
    with pytest.raises(FuzzptxError, match="appears twice"):
        parse_known(TEXT + TEXT[TEXT.index("[[bug]]"):], "k.toml")


def test_an_unreadable_file_is_one_error():
    with pytest.raises(FuzzptxError, match="cannot read"):
        load_known("/nonexistent/known.toml")


def test_classify_matches_root_causes_first_entry_wins_and_conditions_gate_matches():
    ks = parse_known(TEXT, "k.toml")
    causes = [cause_of("checker!=ptxas|missed:C7512|wgmma.sp.s32.u8"),
              cause_of("reference!=hardware|mismatch-hardware-numerics|wgmma.sp.f32.e5m2.e4m3"),
              cause_of("reference!=hardware|mismatch|wgmma.f32.bf16"),  # undiagnosed: not the known numerics
              cause_of("checker!=ptxas|missed:C7517|wgmma.f32.f16")]
    hit, unmatched = classify(causes, ks, {"numerics": "spec"})
    assert {str(c): k.id for c, k in hit.items()} == {str(causes[0]): "allocator", str(causes[1]): "e8m13"}
    assert [k.id for k in unmatched] == ["one-exact"]
    hit, unmatched = classify(causes, ks, {"numerics": "hardware"})  # the fp8 accumulator is news there
    assert set(hit) == {causes[0]} and [k.id for k in unmatched] == ["one-exact"]  # (e8m13 does not apply: not stale)
    hit, _ = classify([str(c) for c in causes], ks, {})  # bucket keys work too; no context: a condition never holds
    assert set(hit) == {str(causes[0])}
    # a signature is read as its cause, and two type mixes of one cause are one bucket's
    assert ks[0].matches("checker!=ptxas|missed:C7512|wgmma.f16.f16")
    assert cause_of("checker!=ptxas|missed:C7512|wgmma.f16.f16") == causes[0]


def test_context_comes_from_the_campaigns_stats(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, mode in ((a, "spec"), (b, "hardware")):
        d.mkdir()
        (d / "stats.json").write_text('{"numerics": "%s"}' % mode)
    assert context_of([a]) == {"numerics": "spec"}
    assert context_of([a / "results.jsonl"]) == {"numerics": "spec"}
    assert context_of([a, b]) == {}  # shards that disagree: no context
    assert context_of([tmp_path]) == {}


def test_avoidance_and_numerics_follow_the_ledger_and_the_gpu():
    ks = parse_known(TEXT, "k.toml")
    assert avoided(ks) == {"repeated-wgmma"} and avoided(()) == frozenset()
    assert default_numerics(("reference", "ptxas", "sass", "hardware")) == "hardware"
    assert default_numerics(("checker", "ptxas", "sass")) is None


def test_the_repository_ledger_parses_and_points_at_real_files():
    ks = load_known(ROOT / "reports" / "known_bugs.toml")
    ids = {k.id for k in ks}
    assert {"ptxas-o3-repeated-wgmma-dropped", "ptxas-o3-inflight-gmma-registers-reused",
            "ptxas-o3-crash-immediate-descriptor", "h100-fp8-f32-accumulator-e8m13"} <= ids
    for k in ks:
        assert k.first_seen and k.last_seen and k.status, k.id
        for p in [k.repro, k.bundle] + re.findall(r"[\w./-]+/[\w.-]+\.\w+", k.written_up):
            assert not p or (ROOT / p).exists(), f"{k.where()}: {p} missing"
        if k.bundle:
            meta = json.loads((ROOT / k.bundle / "bundle.json").read_text())
            assert Path(meta["repro"]).name == Path(k.repro).name, k.id
        assert set(k.avoid) <= set(AVOIDABLE)
    # every compiler bug the generator draws names what turns its shapes down
    assert {a for k in ks for a in k.avoid} == set(AVOIDABLE)


def test_a_fuzz_run_marks_known_bugs_and_heads_with_distinct_bugs(tmp_path, capsys):
    from fuzzptx import cli

    known = tmp_path / "known.toml"
    known.write_text('[[bug]]\nid = "everything"\ntitle = "every cause, for the test"\nkind = "model"\n'
                     'cause = { judges = "*" }\nwritten_up = "this test"\n')
    # the first seed whose 32 programs have findings (the generator decides which; a few seeds suffice)
    for seed in range(1, 9):
        out = tmp_path / f"run{seed}"
        assert cli.main(["run", "--examples", "32", "--seed", str(seed), "--shrink-budget", "0", "--out", str(out),
                         "--known", str(known), "--workers", "0"]) == 0
        summ = json.loads((out / "summary.json").read_text())
        if summ["findings_by_bucket"]:
            break
    assert summ["findings_by_bucket"], "no findings in the first 32 programs of seeds 1-8"
    assert summ["new_findings"] == 0 and set(summ["known"]) == set(summ["findings_by_bucket"])
    printed = capsys.readouterr().out
    assert f"distinct bugs: {len(summ['findings_by_bucket'])} (new: 0)" in printed
    assert not (out / "bundles").exists()  # bundles are written for new bugs only
    bad = tmp_path / "bad.txt"
    bad.write_text("*|*|*  # the old glob list\n")
    assert cli.main(["run", "--examples", "1", "--out", str(tmp_path / "never"), "--known", str(bad)]) == 2
    assert f"{bad}:1: a glob list" in capsys.readouterr().err and not (tmp_path / "never").exists()


def test_root_causes_round_trip_through_their_string_and_dict():
    c = RootCause("sass", "gmma-pipeline", "inflight-register", "wgmma")
    assert RootCause.parse(str(c)) == c == RootCause.from_dict(c.as_dict())


def test_a_bug_named_by_other_evidence_too_is_one_bug():
    """``also``: the repeated-wgmma collapse the SASS verifier names in the -O3 build (gmma-missing)
    and a compile pair names where -O1 has it (campaign seed 4141, block 121 program 7) match one
    entry, so a campaign counts one known bug, not a new one beside it."""
    from fuzzptx.judges import differ
    from fuzzptx.judges.finding import Finding
    from fuzzptx.program import Program
    from fuzzptx.triage.known import DEFAULT_LEDGER

    (k,) = [k for k in load_known(DEFAULT_LEDGER) if k.id == "ptxas-o3-repeated-wgmma-dropped"]
    assert k.matches(cause_of("sass:gmma-dropped|gmma-missing|wgmma.f16.e4m3"))
    p = Program.from_file(ROOT / "benchmarks/results/campaign_pairs_seed4141_h200/b121_7.ptx")
    (f,) = differ.diagnose([Finding("hardware:O3!=O1|mismatch|wgmma.f16.e4m3", "1 element differs")], p)
    assert f.root_cause.pattern == "repeated-wgmma" and k.matches(f.root_cause)
    # the GPU against the reference is not named by the repeat alone (the differ's repeats-dropped check does that)
    (g,) = differ.diagnose([Finding("reference!=hardware|mismatch|wgmma.f16.e4m3", "1 element differs")], p)
    assert g.root_cause.pattern == "" and not k.matches(g.root_cause)
    # without the repeat (the third wgmma's scale-b made 1) the pair is not that bug
    text = p.to_ptx()
    last = text.rindex("%p0, 1, -1;")
    q = Program.from_ptx(text[:last] + "%p0, 1, 1;" + text[last + len("%p0, 1, -1;"):], "q.ptx")
    (h,) = differ.diagnose([Finding("hardware:O3!=O1|mismatch|wgmma.f16.e4m3", "d")], q)
    assert h.root_cause.pattern != "repeated-wgmma"
