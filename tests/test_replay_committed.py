"""Every committed repro -- reports/findings/*.ptx and corpus/*.ptx -- replays as recorded:
``fuzzptx replay FILE --no-hardware`` exits 0, every EXPECT line it can check holding."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "reports" / "findings").glob("*.ptx")) + sorted((ROOT / "corpus").glob("*.ptx"))


def test_there_are_committed_repros():
    assert len(FILES) >= 20


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_committed_repro_replays_as_recorded(path, capsys):
    from fuzzptx.engine.replay import main_replay

    code = main_replay([str(path), "--no-hardware"])
    out = capsys.readouterr().out
    assert code == 0 and "[changed]" not in out, out[-3000:]
