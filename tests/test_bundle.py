"""``fuzzptx bundle``: one directory a compiler team can act on, made from the real -O3 SASS hazard
(reports/findings/ptxas_O3_inflight_acc_call_small.ptx) with the real ptxas."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzzptx.oracles.ptxas import PINNED_VERSION, find_ptxas
from fuzzptx.oracles.sass import disassembler
from fuzzptx.triage.bundle import bundle, excerpt

ROOT = Path(__file__).resolve().parent.parent
REPRO = ROOT / "reports" / "findings" / "ptxas_O3_inflight_acc_call_small.ptx"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    if disassembler() is None:
        pytest.skip("no SASS disassembler (cuobjdump or the nvidia-cuda-nvdisasm wheel)")
    out = tmp_path_factory.mktemp("bundle")
    return out, bundle(REPRO, out, releases=PINNED_VERSION)


def test_bundle_holds_what_a_compiler_team_needs(made):
    out, meta = made
    for name in ("repro.ptx", "commands.sh", "ptxas_O3.txt", "ptxas_O0.txt", "sass_O3.txt", "sass_O0.txt",
                 "releases.txt", "reference_outputs.txt", "gpu_outputs.txt", "README.md", "bundle.json"):
        assert (out / name).is_file(), name
    assert (out / "repro.ptx").read_text() == REPRO.read_text()
    # the hazard itself: the -O3 SASS writes R24 (the in-flight QGMMA's accumulator) before the DEPBAR
    assert meta["sass_hazards_O3"] and "MOV R24" in meta["sass_hazards_O3"][0]
    assert any("QGMMA" in ln for ln in (out / "sass_O3.txt").read_text().splitlines())
    assert meta["asked_of_releases"].startswith("sass:inflight-write|")
    assert meta["releases"] == {PINNED_VERSION: True}
    readme = (out / "README.md").read_text()
    assert "compiler bug candidate" in readme and "MOV R24" in readme and f"holds with: {PINNED_VERSION}" in readme
    assert "H100 (3 of 3)" in (out / "gpu_outputs.txt").read_text()  # what the repro records of the GPU
    assert (out / "reference_outputs.txt").read_text().startswith("out (u32, 2176):")
    assert json.loads((out / "bundle.json").read_text())["ptxas"] == PINNED_VERSION


def test_commands_reproduce_the_cubins(made):
    out, _ = made
    script = [ln for ln in (out / "commands.sh").read_text().splitlines() if ln.startswith(('"$PTXAS"', "PTXAS="))]
    env = dict(os.environ, PTXAS=str(find_ptxas()))
    subprocess.run(["sh", "-ec", "\n".join(script)], cwd=out, env=env, check=True, capture_output=True)
    assert (out / "O3.cubin").stat().st_size > 0 and (out / "O0.cubin").stat().st_size > 0


def test_excerpt_keeps_the_lines_around_warpgroup_instructions():
    lines = [f"/*{i:04x}*/ NOP ;" for i in range(40)]
    lines[20] = "/*0014*/ HGMMA.64x8x16.F32 R24, gdesc[UR4], RZ ;"
    got = excerpt(lines, around=2)
    assert got == lines[18:23]


def test_bad_repro_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fuzzptx.cli", "bundle", str(tmp_path / "missing.ptx"), "-o",
                           str(tmp_path / "b")], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "missing.ptx" in proc.stderr
