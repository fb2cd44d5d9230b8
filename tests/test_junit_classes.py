"""JUnit XML is grouped by what a finding means: one testsuite per finding class (issue 28)."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from fuzzptx.judges.finding import CLASSES, COMPILER, HARDWARE, MODEL, cause_of
from fuzzptx.triage.report import junit


def _bucket(sig: str, known: str | None = None) -> dict:
    c = cause_of(sig)  # one bucket per root cause, as triage.report.summary writes it
    return {"cause": str(c), "class": c.kind, "words": c.words(), "evidence": {sig: 2}, "signature": sig, "count": 2,
            "smallest_repro": f"repros/{len(sig)}.ptx", "known": known, "known_entry": "known.toml:3" if known else None}


def test_one_suite_per_class_with_its_buckets():
    sigs = ["sass:inflight-write|wgmma.f32.f16", "ptxas@13.5.37!=ptxas|accept|wgmma",
            "reference!=hardware|mismatch|wgmma.f32.bf16", "checker!=ptxas|missed:C7517|wgmma"]
    summ = {"programs": 40, "headline": "distinct bugs: 4 (new: 3)",
            "buckets": [_bucket(s, "seen before" if s.startswith("checker") else None) for s in sigs]}
    root = ET.fromstring(junit(None, summ))
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(CLASSES) <= set(suites)  # every class has its suite, empty or not
    for cls in CLASSES:
        mine = [str(cause_of(s)) for s in sigs if cause_of(s).kind == cls]
        cases = suites[cls].findall("testcase")
        assert sorted(c.get("name") for c in cases) == sorted(mine)
        assert int(suites[cls].get("tests")) == len(mine)
        assert {c.get("classname") for c in cases} <= {"fuzzptx." + "_".join(cls.replace("(", "").replace(")", "").split())}
    assert {c.get("name") for c in suites[COMPILER].findall("testcase")} == {str(cause_of(s)) for s in sigs[:2]}
    assert len(suites[HARDWARE].findall("testcase/failure")) == 1
    assert int(suites[MODEL].get("skipped")) == 1 and int(suites[MODEL].get("failures")) == 0  # known: skipped
    assert int(root.get("failures")) == 3 and int(root.get("skipped")) == 1 and int(root.get("tests")) == 5


def test_pytest_junitxml_carries_the_finding_class(tmp_path):
    """A fuzz test failed by a finding: pytest's --junitxml testcase has the class, signature and
    repro as properties (a subprocess: pytester's in-process runs cannot reload numpy)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    (tmp_path / "test_found.py").write_text(
        "from dataclasses import replace\n"
        "from fuzzptx.engine.generate import planted_programs\n"
        "from fuzzptx.pytest_plugin import check_program\n\n"
        "def test_contradicted(fuzzptx_config):\n"
        "    p = planted_programs()[0][1]  # legal, labelled as if ptxas had to reject it\n"
        "    check_program(replace(p, expect=(('ptxas', 'rejected'),), notes=p.notes + ('mutation: planted-label x',)),"
        " fuzzptx_config)\n\n"
        "def test_passes():\n    pass\n")
    xml = tmp_path / "junit.xml"
    env = dict(os.environ, PYTHONPATH=str(root))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--fuzzptx-judges", "checker,ptxas", "--fuzzptx-repro-dir", str(tmp_path / "repros"),
                           f"--junitxml={xml}", str(tmp_path / "test_found.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout[-2000:]
    cases = {c.get("name"): c for c in ET.parse(xml).getroot().iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["test_contradicted"].iter("property")}
    assert props["fuzzptx_class"] == MODEL and props["fuzzptx_signature"].startswith("expect!=ptxas|planted-label|")
    assert Path(props["fuzzptx_repro"]).is_file()
    assert not list(cases["test_passes"].iter("property"))
