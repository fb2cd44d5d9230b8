"""Triage: merging shards, bucketing by root cause, smallest repro per bucket, bad lines."""
import json
from pathlib import Path

from fuzzptx.judges.finding import cause_of
from fuzzptx.triage.buckets import main_triage, markdown, read_records


def _write(path, records):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))


def test_buckets_merge_shards_and_keep_smallest(tmp_path):
    sig_a = "checker!=ptxas|missed:C7519|wgmma.f32.f16"
    sig_b = "reference!=hardware|mismatch|wgmma.f32.bf16"
    _write(tmp_path / "shard0.jsonl", [
        {"id": 0, "instructions": 12, "findings": [{"signature": sig_a, "message": "m"}], "repro": "r0.ptx"},
        {"id": 1, "instructions": 5, "findings": [], "repro": None},
    ])
    _write(tmp_path / "shard1.jsonl", [
        {"id": 2, "instructions": 4, "findings": [{"signature": sig_a, "message": "m"}, {"signature": sig_b, "message": "x"}], "repro": "r2.ptx"},
    ])
    t = read_records([tmp_path / "shard0.jsonl", tmp_path / "shard1.jsonl"])
    assert t.programs == 3
    assert {b.signature: b.count for b in t.ordered()} == {sig_a: 2, sig_b: 1}
    assert t.buckets[cause_of(sig_a)].smallest["repro"] == "r2.ptx"
    assert t.ordered()[0].signature == sig_a
    assert "r2.ptx" in markdown(t)


def test_bad_lines_are_reported_with_location_and_skipped(tmp_path, capsys):
    _write(tmp_path / "r.jsonl", [
        {"id": 0, "instructions": 3, "findings": [{"signature": "s|x|y", "message": "m"}]},
        "{not json",
        {"id": 1, "findings": [{"message": "no signature"}]},
    ])
    assert main_triage([str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "r.jsonl:2:" in err and "r.jsonl:3:" in err
    t = read_records([tmp_path])
    assert t.programs == 1 and [b.signature for b in t.buckets.values()] == ["s|x|y"]


def test_html_summary_written(tmp_path):
    _write(tmp_path / "r.jsonl", [{"id": 0, "instructions": 3, "findings": [{"signature": "a|<b>|c", "message": "m"}], "repro": "x.ptx"}])
    html_path = tmp_path / "s.html"
    assert main_triage([str(tmp_path / "r.jsonl"), "--html", str(html_path)]) == 0
    text = html_path.read_text()
    assert "&lt;b&gt;" in text and 'href="x.ptx"' in text


def test_triage_says_which_buckets_are_new_against_a_baseline(tmp_path, capsys):
    sig_a = "checker!=ptxas|missed:C7512|wgmma.sp.f32.f16"
    sig_b = "reference!=hardware|mismatch|wgmma.f32.e4m3"
    _write(tmp_path / "results.jsonl", [
        {"id": 0, "instructions": 9, "findings": [{"signature": sig_a, "message": "m"}, {"signature": sig_b, "message": "x"}]},
    ])
    (tmp_path / "stats.json").write_text(json.dumps({"numerics": "hardware"}))
    known = tmp_path / "known.toml"
    known.write_text('[[bug]]\nid = "allocator"\ntitle = "allocator"\nkind = "model"\n'
                     'cause = { judges = "checker!=ptxas", rule = "missed:C7512" }\nwritten_up = "w"\n\n'
                     '[[bug]]\nid = "e8m13"\ntitle = "e8m13 in spec numerics"\nkind = "hardware"\n'
                     'cause = { judges = "reference!=hardware", rule = "mismatch" }\nwhen = { numerics = "spec" }\n'
                     'written_up = "w"\n')
    assert main_triage([str(tmp_path), "--known", str(known), "--json"]) == 0
    rows = {r["signature"]: r["known"] for r in json.loads(capsys.readouterr().out)}
    assert rows == {sig_a: "allocator: allocator", sig_b: None}  # hardware numerics: the fp8 mismatch is new
    (tmp_path / "stats.json").write_text(json.dumps({"numerics": "spec"}))
    assert main_triage([str(tmp_path), "--known", str(known)]) == 0
    out = capsys.readouterr().out
    assert "distinct bugs: 2 (new: 0)" in out and "2 known" in out and f"known: allocator ({known}:1)" in out


def test_triage_names_each_buckets_class_and_its_releases(tmp_path, capsys):
    """Every bucket says what it means; with --ptxas, which releases keep its smallest repro's signature."""
    import json as _json
    import shutil

    from fuzzptx import cli
    from fuzzptx.oracles import toolchains

    repro = tmp_path / "r.ptx"
    shutil.copy(Path(__file__).resolve().parent.parent / "reports" / "findings" / "ptxas_O3_inflight_acc_call_small.ptx", repro)
    rec = {"block": 0, "index": 0, "id": "0:0", "family": "wgmma.f32.e5m2.e4m3", "instructions": 30, "verdicts": {},
           "findings": [{"signature": "ptxas:accepted-probe|x|wgmma", "message": "m", "repro": str(repro)}],
           "repro": str(repro)}
    (tmp_path / "results.jsonl").write_text(_json.dumps(rec) + "\n")
    assert cli.main(["triage", str(tmp_path / "results.jsonl"), "--ptxas", "default", "--json"]) == 0
    (bucket,) = _json.loads(capsys.readouterr().out)
    assert bucket["class"] == "compiler bug candidate"
    assert set(bucket["releases"]) == {toolchains.resolve("default")[0].release}
