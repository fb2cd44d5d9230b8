"""``fuzzptx bundle``: one directory a compiler team can act on, made from the real -O3 SASS hazard
(reports/findings/ptxas_O3_inflight_acc_call_small.ptx) with the real ptxas; ``--kernel`` on a plain
file with two kernels (nvcc's)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzzptx import cli
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


TWO = ROOT / "tests" / "data" / "nvcc" / "wgmma_register_a.ptx"  # nvcc: wgmma_register_a, then wgmma_two_groups
TWO_NAMES = ("_Z16wgmma_register_aPKjPK6__halfPff", "_Z16wgmma_two_groupsPK6__halfPf")


def test_kernel_chooses_which_kernel_of_a_plain_file_the_bundle_is_about(tmp_path):
    """``fuzzptx bundle FILE --kernel NAME``: the inferred header launches NAME, the README's SASS is
    NAME's (wgmma_two_groups: two GMMAs; wgmma_register_a: one), the replay command says --kernel."""
    if disassembler() is None:
        pytest.skip("no SASS disassembler (cuobjdump or the nvidia-cuda-nvdisasm wheel)")
    out = tmp_path / "b"
    assert cli.main(["bundle", str(TWO), "--kernel", TWO_NAMES[1], "--ptxas", PINNED_VERSION, "-o", str(out)]) == 0
    meta = json.loads((out / "bundle.json").read_text())
    assert meta["kernel"] == TWO_NAMES[1] and meta["sass_hazards_O3"] == []
    assert f"fuzzptx replay repro.ptx --kernel {TWO_NAMES[1]} --no-hardware" in (out / "commands.sh").read_text()
    readme = (out / "README.md").read_text()
    assert f"SASS at -O3 of kernel `{TWO_NAMES[1]}`" in readme
    o3 = readme.split("SASS at -O3")[1].split("```")[1]
    assert sum("GMMA" in ln and "WARPGROUP" not in ln for ln in o3.splitlines()) == 2
    first = bundle(TWO, tmp_path / "first", releases=PINNED_VERSION)  # the default: the first kernel
    assert first["kernel"] == TWO_NAMES[0]
    o3 = (tmp_path / "first" / "README.md").read_text().split("SASS at -O3")[1].split("```")[1]
    assert sum("GMMA" in ln and "WARPGROUP" not in ln for ln in o3.splitlines()) == 1
    assert "--kernel" not in (tmp_path / "first" / "commands.sh").read_text()


def test_an_unknown_kernel_is_one_line(tmp_path, capsys):
    assert cli.main(["bundle", str(TWO), "--kernel", "nope", "-o", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope" in err and TWO_NAMES[0] in err
    assert not (tmp_path / "b").exists()
