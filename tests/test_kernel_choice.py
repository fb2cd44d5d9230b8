"""``--kernel NAME``: which kernel of a plain multi-kernel PTX file the inferred header launches
(replay and shrink); the default stays the first, and the header says which kernels there are."""
from __future__ import annotations

from pathlib import Path

import pytest

from fuzzptx import cli
from fuzzptx.program import INFERRED, Program, ReproError

ROOT = Path(__file__).resolve().parent.parent
TWO = ROOT / "tests" / "data" / "nvcc" / "wgmma_register_a.ptx"  # nvcc: wgmma_register_a, then wgmma_two_groups
NAMES = ("_Z16wgmma_register_aPKjPK6__halfPff", "_Z16wgmma_two_groupsPK6__halfPf")


def test_default_is_the_first_and_the_header_lists_the_rest():
    p = Program.from_file(TWO)
    assert p.launch.kernel == NAMES[0]
    note = next(n for n in p.notes if n.startswith(INFERRED))
    assert all(n in note for n in NAMES) and "--kernel" in note


def test_kernel_chooses_another():
    p = Program.from_file(TWO, kernel=NAMES[1])
    assert p.launch.kernel == NAMES[1]
    assert {b.name for b in p.buffers} == {q.name for q in p.module.function(NAMES[1]).params}


def test_unknown_kernel_is_one_line(tmp_path, capsys):
    with pytest.raises(ReproError, match="no such kernel"):
        Program.from_file(TWO, kernel="nope")
    assert cli.main(["replay", str(TWO), "--no-hardware", "--kernel", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope" in err and NAMES[0] in err


def test_kernel_on_a_file_with_a_header_must_match_it():
    repro = ROOT / "reports" / "findings" / "ptxas_O3_inflight_acc_call_small.ptx"
    assert Program.from_file(repro, kernel="k").launch.kernel == "k"
    with pytest.raises(ReproError, match="header launches k"):
        Program.from_file(repro, kernel="side")


def test_replay_prints_the_chosen_kernel(capsys):
    assert cli.main(["replay", str(TWO), "--no-hardware", "--kernel", NAMES[1]]) == 0
    err = capsys.readouterr().err
    assert f"LAUNCH: kernel={NAMES[1]}" in err and "kernels in the file" in err


def test_shrink_launches_the_chosen_kernel(tmp_path):
    out = tmp_path / "small.ptx"
    assert cli.main(["shrink", str(TWO), "--kernel", NAMES[1], "--keep", "ptxas:accepted", "--budget", "20",
                     "-o", str(out)]) == 0
    assert Program.from_file(out).launch.kernel == NAMES[1]
