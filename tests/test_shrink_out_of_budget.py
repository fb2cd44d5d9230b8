"""A shrink whose budget runs out before its result is judged still writes a repro that says what it
is: the signature it kept (what ``--keep`` named, for a file that came without one), no EXPECT lines,
and a note saying why (the H200 shrinks of issue 38 wrote files with no SIGNATURE line at all)."""
from pathlib import Path

from fuzzptx.program import Program
from fuzzptx.triage import shrink_command

FINDINGS = Path(__file__).resolve().parents[1] / "reports" / "findings"


def test_a_shrink_out_of_budget_keeps_the_signature_it_kept(tmp_path, monkeypatch):
    text = (FINDINGS / "ptxas_O3_crash_immediate_descriptor.ptx").read_text()
    plain = "\n".join(ln for ln in text.splitlines() if not ln.startswith(("// SIGNATURE", "// EXPECT")))
    src = tmp_path / "in.ptx"
    src.write_text(plain)

    def no_time(*args, **kwargs):
        raise shrink_command.OutOfBudget()

    monkeypatch.setattr(shrink_command, "repro", no_time)
    out = tmp_path / "out.ptx"
    assert shrink_command.main_shrink([str(src), "--keep", "ptxas:crash", "-o", str(out), "--budget", "60"]) == 0
    p = Program.from_file(out)
    assert p.signature == "ptxas:crash" and not p.expect
    assert any(n.startswith("EXPECT lines not regenerated") for n in p.notes)
