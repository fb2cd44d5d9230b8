"""Ctrl-C in ``fuzzptx shrink`` writes the smallest program that held so far and exits 130: the
minutes a shrink has spent are results already gathered (it exited 130 with nothing written).  In
a campaign's own shrinks Ctrl-C still stops the campaign: only ``interruptible=True`` catches it."""
from pathlib import Path

import pytest

from fuzzptx.program import Program
from fuzzptx.reduce import instruction_count, shrink
from fuzzptx.triage import shrink_command

FINDINGS = Path(__file__).resolve().parents[1] / "reports" / "findings"
SRC = FINDINGS / "ptxas_O3_set_compared_with_one.ptx"


def _interrupted_after(calls: int):
    """A predicate that holds for every candidate (each deletion goes through), then Ctrl-C."""
    seen = {"n": 0}

    def holds(programs):
        seen["n"] += 1
        if seen["n"] > calls:
            raise KeyboardInterrupt
        return [True] * len(programs)

    return holds


def test_the_reducer_keeps_what_held_when_interruptible_and_stops_the_caller_otherwise():
    p = Program.from_file(SRC)
    res = shrink(p, _interrupted_after(3), interruptible=True)
    assert res.interrupted and not res.cut_short
    assert instruction_count(res.program) < instruction_count(p)  # what held before Ctrl-C is kept
    with pytest.raises(KeyboardInterrupt):
        shrink(p, _interrupted_after(3))


def test_fuzzptx_shrink_writes_the_smallest_so_far_on_ctrl_c(tmp_path, monkeypatch):
    monkeypatch.setattr(shrink_command, "keep_predicate", lambda keep, program, toolchain: _interrupted_after(3))
    out = tmp_path / "out.ptx"
    code = shrink_command.main_shrink([str(SRC), "--keep", "hardware:O3!=O0|mismatch", "-o", str(out)])
    assert code == 130
    p = Program.from_file(out)
    assert instruction_count(p) < instruction_count(Program.from_file(SRC)) and not p.expect
    assert p.signature == "hardware:O3!=O0|mismatch|other"
    assert any("(interrupted)" in n for n in p.notes) and any(n.startswith("EXPECT lines not regenerated") for n in p.notes)
