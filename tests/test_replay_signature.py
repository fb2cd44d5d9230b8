"""``fuzzptx replay`` says whether a repro's SIGNATURE still holds, beside its EXPECT lines: a finding
that no judge finds any more (a fixed bug, or a judge's own error since fixed) changes the status."""
import json
from pathlib import Path

from fuzzptx import cli

FINDINGS = Path(__file__).resolve().parents[1] / "reports" / "findings"


def _replay(path, capsys, *extra):
    rc = cli.main(["replay", str(path), "--json", *extra])
    return rc, json.loads(capsys.readouterr().out)


def test_a_signature_the_judges_still_find_holds(capsys):
    rc, out = _replay(FINDINGS / "ptxas_O3_crash_immediate_descriptor.ptx", capsys)
    assert (rc, out["signature_status"], out["status"]) == (0, "holds", "holds")


def test_a_signature_no_judge_finds_any_more_is_gone(tmp_path, capsys):
    """The checker's ptxas model missed C7512 on this program once; it now says "may" there."""
    text = (FINDINGS / "checker_missed_c7512_sections.ptx").read_text()
    f = tmp_path / "old.ptx"
    note = next(ln for ln in text.splitlines() if ln.startswith("// NOTE: found as "))
    f.write_text(text.replace(note, "// SIGNATURE: checker!=ptxas|missed:C7512|wgmma.s32.b1"))  # as it was found
    rc, out = _replay(f, capsys)
    assert (rc, out["signature_status"], out["status"]) == (1, "gone", "changed")
    assert all(e["status"] != "changed" for e in out["expectations"])  # only the signature changed


def test_a_signature_whose_judge_cannot_run_here_is_not_run(capsys):
    rc, out = _replay(FINDINGS / "ptxas_O3_neg_s32_add_sat_s32.ptx", capsys, "--no-hardware")
    assert (rc, out["signature_status"]) == (0, "not run")


def test_another_tools_signature_is_not_judged_by_replay(capsys):
    """``spec!=ptxas`` comes from ``fuzzptx conformance``: replay runs no such judge."""
    path = next(p for p in sorted((FINDINGS.parent.parent / "corpus").glob("spec_*.ptx")))
    rc, out = _replay(path, capsys, "--no-hardware")
    assert out["signature_status"] == "not run" and rc == 0
