"""A judge from another package: built as its own package, installed with pip, found through the
entry-point group ``fuzzptx.judges``, and compared with the reference exactly as the GPU is.

The package is the example of ``docs/judges.md`` (``ZeroSim``: every output buffer zero) plus a
judge that raises; it builds with a few-line in-tree PEP 517 backend, so pip needs no network."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from fuzzptx.judges import OutputJudge, Verdicts, differ, registry

ZEROSIM = '''
import numpy as np
from fuzzptx.judges import OutputJudge

class ZeroSim(OutputJudge):
    name = "zerosim"
    def run(self, program, inputs):  # inputs: buffer name -> numpy array, filled as for the GPU launch
        return {b.name: np.zeros_like(inputs[b.name]) for b in program.buffers if b.output}

class BoomSim(OutputJudge):
    name = "boomsim"
    def run(self, program, inputs):
        raise RuntimeError("boom")
'''

PYPROJECT = '''
[build-system]
requires = []
build-backend = "backend"
backend-path = ["."]

[project]
name = "zerosim"
version = "0.1"

[project.entry-points."fuzzptx.judges"]
zerosim = "zerosim:ZeroSim"
boomsim = "zerosim:BoomSim"
'''

# A PEP 517 backend that writes the wheel by hand: no setuptools, no wheel package, no network.
BACKEND = '''
import base64, hashlib, os, zipfile

NAME, VERSION = "zerosim", "0.1"
DIST = f"{NAME}-{VERSION}.dist-info"
ENTRY = "[fuzzptx.judges]\\nzerosim = zerosim:ZeroSim\\nboomsim = zerosim:BoomSim\\n"

def _record(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {
        "zerosim.py": open("zerosim.py", "rb").read(),
        f"{DIST}/METADATA": f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {VERSION}\\n".encode(),
        f"{DIST}/WHEEL": b"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
        f"{DIST}/entry_points.txt": ENTRY.encode(),
    }
    record = "\\n".join([_record(n, d) for n, d in files.items()] + [f"{DIST}/RECORD,,"]) + "\\n"
    files[f"{DIST}/RECORD"] = record.encode()
    name = f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
        for n, d in files.items():
            z.writestr(n, d)
    return name
'''


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    """The zerosim package, pip-installed into a directory of its own (put on PYTHONPATH)."""
    root = tmp_path_factory.mktemp("plugin")
    pkg = root / "zerosim"
    pkg.mkdir()
    (pkg / "zerosim.py").write_text(textwrap.dedent(ZEROSIM))
    (pkg / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    (pkg / "backend.py").write_text(textwrap.dedent(BACKEND))
    site = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--no-index",
                    "--target", str(site), str(pkg)], check=True, capture_output=True)
    assert (site / "zerosim-0.1.dist-info" / "entry_points.txt").exists()
    return site


def _fuzzptx(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site)] + [p for p in sys.path if p]))
    return subprocess.run([sys.executable, "-m", "fuzzptx.cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def test_an_installed_output_judge_is_compared_with_the_reference(plugin_site, tmp_path):
    """``fuzzptx run --judges reference,zerosim``: the plugin runs on the programs, its verdict is
    recorded, and its disagreements with the reference are bucketed as ``zerosim!=reference``."""
    out = tmp_path / "run"
    r = _fuzzptx(plugin_site, "run", "--judges", "reference,zerosim", "--examples", "16", "--seed", "3",
                 "--shrink-budget", "0", "--workers", "0", "--out", str(out), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["judges"] == ["reference", "zerosim"]
    buckets = summary["findings_by_bucket"]
    assert any(sig.startswith("zerosim!=reference|mismatch|") for sig in buckets), buckets
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert all(rec["verdicts"].get("zerosim") == "ran" for rec in records)
    # a finding's repro replays with the plugin, which its signature names
    repro = next(p for sig, p in summary["repros"].items() if sig.startswith("zerosim!="))
    rr = _fuzzptx(plugin_site, "replay", repro, "--no-hardware", "--json", cwd=tmp_path)
    assert rr.returncode in (0, 1), rr.stderr
    rows = {row["judge"] for row in json.loads(rr.stdout)["judges"]}
    assert "zerosim" in rows and any(f.startswith("zerosim!=reference") for f in json.loads(rr.stdout)["findings"])


def test_a_judge_that_raises_is_a_fault_finding_not_the_end_of_the_run(plugin_site, tmp_path):
    r = _fuzzptx(plugin_site, "run", "--judges", "reference,boomsim", "--examples", "4", "--seed", "1",
                 "--shrink-budget", "0", "--workers", "0", "--out", str(tmp_path / "run"), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    summ = json.loads(r.stdout)
    assert any(sig.startswith("boomsim:fault|") for sig in summ["evidence"]), summ["evidence"]
    assert any(key.startswith("boomsim|fault|") for key in summ["findings_by_bucket"]), summ["findings_by_bucket"]


def test_an_unknown_judge_is_one_line_naming_what_there_is(tmp_path):
    r = subprocess.run([sys.executable, "-m", "fuzzptx.cli", "run", "--judges", "reference,nosuchsim", "--examples", "1",
                        "--out", str(tmp_path / "x")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "nosuchsim" in r.stderr and "reference" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_an_output_judge_registered_in_process_runs_through_the_differ():
    """The same interface without a package: ``register`` and ``differ.judge`` / ``compare``."""
    from fuzzptx.builders import wgmma_program
    from fuzzptx.isa import by_key

    class Negated(OutputJudge):
        name = "negated-test"

        def run(self, program, inputs):
            return {b.name: ~inputs[b.name].view(np.uint8) for b in program.buffers if b.output}

    registry.register(Negated)
    try:
        p = wgmma_program(by_key("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16|a=desc"))
        v = differ.judge(p, ("reference", "ptxas", "negated-test"))
        assert isinstance(v, Verdicts) and v["negated-test"].fault is None
        assert list(v) == ["ptxas", "reference", "negated-test"]  # each after what it reads
        sigs = [f.signature for f in differ.compare(p, v)]
        assert any(s.startswith("negated-test!=reference|mismatch|") for s in sigs), sigs
        assert differ.judges_for(sigs[-1]) == ("ptxas", "reference", "negated-test")
    finally:
        registry.unregister("negated-test")
