"""Numbers a user reads are true (issue 29): triage shows the repro's own size, and
``check --ptxas`` prints one line per mismatch and one line when ptxas agreed."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from fuzzptx.oracles.checker import cli as check_cli
from fuzzptx.oracles.checker.ptxas_compare import Agreement
from fuzzptx.program import Program
from fuzzptx.reduce import instruction_count
from fuzzptx.triage.buckets import read_records

ROOT = Path(__file__).resolve().parents[1]
REPRO = ROOT / "tests" / "data" / "repros" / "racing_global_stores.ptx"
CLEAN = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n"


def test_triage_shows_the_repro_files_size_and_the_size_found(tmp_path):
    size = instruction_count(Program.from_file(REPRO))
    rec = tmp_path / "results.jsonl"
    rec.write_text(json.dumps({"id": "0:0", "family": "x", "instructions": size + 800, "verdicts": {},
                               "findings": [{"signature": "sig", "repro": str(REPRO)}]}) + "\n")
    r = subprocess.run([sys.executable, "-m", "fuzzptx.cli", "triage", str(rec), "--json"], capture_output=True,
                       text=True, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    (b,) = json.loads(r.stdout)
    assert (b["instructions"], b["instructions_found"]) == (size, size + 800)
    (bucket,) = read_records([rec]).buckets.values()
    assert bucket.size_text() == f"{size} (found: {size + 800})"


def test_check_ptxas_says_when_real_ptxas_agreed(tmp_path):
    f = tmp_path / "clean.ptx"
    f.write_text(CLEAN)
    out = io.StringIO()
    assert check_cli.run(["--ptxas", str(f)], out=out) == 0
    assert out.getvalue() == f"{f}: ptxas agrees with the model (nothing printed)\n"


def _fake(monkeypatch, real: list[str], pred: list[str]) -> list[str]:
    """The model's prediction and ptxas's output replaced (the comparison's wording is under test,
    not ptxas): the messages ``mismatches`` gives."""
    monkeypatch.setattr(check_cli, "compile_ptx", lambda *a, **k: None)
    monkeypatch.setattr(check_cli, "predict_ptxas", lambda _: None)
    monkeypatch.setattr(check_cli, "agreement", lambda *_: Agreement(real == pred, (), real, pred))
    return [f.message for f in check_cli.mismatches("f.ptx", None, "")]


def test_one_line_per_mismatch_and_never_a_diagnostic_called_none(monkeypatch):
    assert _fake(monkeypatch, ["none"], ["info C7510"]) == [
        "predicted 'info C7510' but ptxas did not print it (ptxas printed: nothing)"]
    assert _fake(monkeypatch, ["info C7519 line 31"], ["none"]) == [
        "ptxas printed 'info C7519 line 31' which the model did not predict (the model predicted nothing)"]
    assert _fake(monkeypatch, ["info C7510", "info C7517 line 36"], ["info C7510", "info C7517 line 34"]) == [
        "predicted 'info C7517 line 34' but ptxas printed it at line 36"]
    assert _fake(monkeypatch, ["info C7510"], ["info C7510"]) == []
