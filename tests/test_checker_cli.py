"""``fuzzptx check``: formats, exit status, and one-line errors on bad input."""
from __future__ import annotations

import io
import json
import pathlib

from fuzzptx.oracles.checker.cli import main_check, run
from support.experiments import COMMIT, FENCE, WAIT, kernel, store, wg

DATA = pathlib.Path(__file__).parent / "data" / "checker"


def _write(tmp_path, name, text) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _run(argv) -> tuple[int, str]:
    out = io.StringIO()
    return run(argv, out=out), out.getvalue()


def test_clean_file_exits_zero(tmp_path):
    path = _write(tmp_path, "ok.ptx", kernel([FENCE, wg(), COMMIT, WAIT] + store()))
    assert _run([path]) == (0, f"{path}: clean (isa, spec, ptxas-model)\n")


def test_each_clean_file_gets_one_line_and_a_file_with_findings_none(tmp_path):
    """A check with no finding once printed nothing at all (issue 36)."""
    ok = [_write(tmp_path, f"ok{i}.ptx", kernel([FENCE, wg(), COMMIT, WAIT] + store())) for i in range(2)]
    bad = _write(tmp_path, "nofence.ptx", kernel([wg(), COMMIT, WAIT] + store()))
    rc, out = _run([ok[0], bad, ok[1]])
    assert rc == 1
    assert [ln for ln in out.splitlines() if ln.endswith("clean (isa, spec, ptxas-model)")] == \
        [f"{ok[0]}: clean (isa, spec, ptxas-model)", f"{ok[1]}: clean (isa, spec, ptxas-model)"]
    assert f"{bad}: clean" not in out


def test_text_format(tmp_path):
    text = kernel([wg(), COMMIT, WAIT] + store())
    path = _write(tmp_path, "nofence.ptx", text)
    rc, out = _run([path])
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "mma_async" in ln)
    assert rc == 1
    assert f"{path}:{line}: error: [spec.fence.missing] " in out
    assert f"{path}:{line}: warning: [ptxas.C7519] " in out


def test_json_format(tmp_path):
    path = _write(tmp_path, "nowait.ptx", kernel([FENCE, wg(), COMMIT] + store()))
    rc, out = _run([path, "--format", "json"])
    items = json.loads(out)
    assert rc == 1 and items
    assert set(items[0]) == {"path", "line", "rule", "severity", "layer", "message", "kernel"}
    assert {i["layer"] for i in items} == {"spec", "ptxas-model"}
    assert any(i["rule"] == "ptxas.C7517" for i in items)


def test_sarif_format_is_minimal_valid_2_1_0(tmp_path):
    path = _write(tmp_path, "nofence.ptx", kernel([wg(), COMMIT, WAIT] + store()))
    rc, out = _run([path, "--format", "sarif"])
    doc = json.loads(out)
    assert rc == 1 and doc["version"] == "2.1.0" and "$schema" in doc
    run0 = doc["runs"][0]
    ids = {r["id"] for r in run0["tool"]["driver"]["rules"]}
    for res in run0["results"]:
        assert res["ruleId"] in ids and res["level"] in ("error", "warning", "note")
        assert res["message"]["text"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == path and loc["region"]["startLine"] >= 1


def test_layers_option(tmp_path):
    path = _write(tmp_path, "nofence.ptx", kernel([wg(), COMMIT, WAIT] + store()))
    rc, out = _run([path, "--layers", "isa"])
    assert (rc, out) == (0, f"{path}: clean (isa)\n")


def test_ptxas_flag_reports_no_mismatch_on_a_recorded_experiment():
    rc, out = _run([str(DATA / "no_wait.ptx"), "--ptxas", "--layers", "ptxas-model"])
    assert "ptxas-model.mismatch" not in out and "ptxas.C7517" in out and rc == 1


def _known_gaps() -> list[pathlib.Path]:
    return sorted(p for p in DATA.glob("*.ptx") if "// MODEL: known-gap" in p.read_text())


def test_ptxas_flag_shows_a_difference():
    # Every recorded experiment where the model still disagrees with ptxas must show that
    # disagreement under --ptxas (read from the files, so closing a gap does not break this test).
    gaps = _known_gaps()
    assert gaps, "no recorded known gap left: pick another way to provoke a model mismatch"
    for path in gaps:
        rc, out = _run([str(path), "--ptxas", "--layers", "ptxas-model"])
        assert "ptxas-model.mismatch" in out and rc == 1, (path.name, out)


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    assert main_check([str(tmp_path / "missing.ptx")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.ptx" in err[0] and "no such file" in err[0]
    bad = _write(tmp_path, "bad.ptx", ".version 8.0\n.target sm_90a\n.address_size 64\n\n.visible .entry k()\n{\n\tfoo.bar %r1;\n}\n")
    assert main_check([bad]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}:7:" in err[0] and "Traceback" not in err[0]


def test_bad_option_exit_2(capsys):
    assert main_check(["--format", "xml", "x.ptx"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_ptxas_takes_an_optional_release_spec(capsys, monkeypatch):
    """``--ptxas`` alone compares with the pinned ptxas (before or after the files); ``--ptxas SPEC``
    with each release of SPEC, named in every mismatch it reports."""
    from pathlib import Path

    from fuzzptx.oracles.checker import cli
    from fuzzptx.oracles.checker.findings import PredictedDiagnostics
    from fuzzptx.oracles.ptxas import find_ptxas

    f = str(Path(__file__).resolve().parent.parent / "corpus" / "notes_fence_commits.ptx")  # spec findings: exit 1
    assert cli.run(["--ptxas", f]) == 1 and cli.run([f, "--ptxas"]) == 1
    out = capsys.readouterr().out
    assert out.count("ptxas agrees with the model (info C7517 line 31)") == 2  # both spellings compared
    # a model that predicts nothing where ptxas prints C7517: a mismatch, named by its release
    monkeypatch.setattr(cli, "predict_ptxas", lambda module: PredictedDiagnostics(True, ()))
    assert cli.run([f, "--ptxas", str(find_ptxas()), "--layers", "isa"]) == 1
    mismatches = [ln for ln in capsys.readouterr().out.splitlines() if "ptxas-model.mismatch" in ln]
    assert mismatches and all("ptxas 13.0.88" in ln for ln in mismatches), mismatches


def test_a_bad_file_among_good_ones_is_one_line_and_the_good_ones_are_checked(tmp_path, capsys):
    from pathlib import Path

    from fuzzptx.oracles.checker.cli import run

    good = str(Path(__file__).resolve().parent.parent / "corpus" / "notes_fence_commits.ptx")
    bad = tmp_path / "bad.ptx"
    bad.write_bytes(b"\x00\x01")
    assert run([good, str(bad), str(tmp_path / "missing.ptx")]) == 2
    captured = capsys.readouterr()
    assert "notes_fence_commits.ptx:" in captured.out
    assert captured.err.count("fuzzptx check: ") == 2 and "Traceback" not in captured.err


def test_version_names_the_pinned_ptxas(capsys):
    from fuzzptx import cli

    assert cli.main(["--version"]) == 0
    assert "pinned ptxas 13.0.88" in capsys.readouterr().out
