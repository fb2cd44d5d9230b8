"""The reference lays out shared memory as the H100 does (tests/hw_records/shared_layout.json).

The record is written on a GPU machine by ``benchmarks/hw_shared_layout.py``: each case is a
kernel that writes its shared variables' addresses.  Here the *current* reference runs the
recorded kernels and must give the addresses the H100 gave, so a descriptor built from a
variable's address means the same on both; and the reserved bytes below the first variable
behave as the H100's did (a store and a load there round-trip).
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from fuzzptx.oracles.reference import run_program
from fuzzptx.oracles.reference.memory import SHARED_RESERVED
from fuzzptx.program import Program

RECORD = pathlib.Path(__file__).parent / "hw_records" / "shared_layout.json"
CASES = json.loads(RECORD.read_text())["cases"]


def test_the_record_covers_the_scripts_cases_and_ran_on_an_h100():
    from support import shared_layout as H

    rec = json.loads(RECORD.read_text())
    assert "H100" in json.dumps(rec["device"])
    assert [c["case"] for c in CASES] == [c.name for c in H.CASES]
    assert [c["kernel"] for c in CASES] == [c.text() for c in H.CASES], "rerun the script: its kernels changed"
    assert all(c["hardware_fault"] is None for c in CASES)


@pytest.mark.parametrize("case", [c for c in CASES if not c["touches_reserved"]], ids=lambda c: c["case"])
def test_variables_land_where_the_h100_put_them(case):
    got = np.frombuffer(run_program(Program.from_ptx(case["kernel"])).bytes("out"), np.uint32)
    want = case["hardware_addresses"]
    assert [int(x) for x in got[:len(want)]] == want
    assert min(want) >= SHARED_RESERVED


@pytest.mark.parametrize("case", [c for c in CASES if c["touches_reserved"]], ids=lambda c: c["case"])
def test_the_reserved_bytes_round_trip_as_on_the_h100(case):
    got = np.frombuffer(run_program(Program.from_ptx(case["kernel"])).bytes("out"), np.uint32)
    assert int(got[-1]) == case["reserved_read_back"] == 7
