"""The files kept under reports/findings/ stay true: each parses as a repro and real ptxas still
says what its EXPECT line records; the in-flight register reuse of ptxas -O3 is still in the SASS
(where a disassembler is installed: ``pip install 'fuzzptx[sass]'`` or CUDA's cuobjdump)."""
from __future__ import annotations

from pathlib import Path

import pytest

from fuzzptx.oracles.ptxas import compile_batch, compile_ptx
from fuzzptx.program import Program
from fuzzptx.oracles.sass import disassembler, inflight_writes, sass

FINDINGS = Path(__file__).resolve().parents[1] / "reports" / "findings"
FILES = sorted(FINDINGS.glob("*.ptx"))
INFLIGHT = sorted(FINDINGS.glob("ptxas_O3_inflight_acc_call*.ptx"))


def test_every_finding_parses_and_ptxas_still_says_so():
    programs = [Program.from_file(str(f)) for f in FILES]
    assert len(INFLIGHT) == 3
    for f, p, r in zip(FILES, programs, compile_batch([p.to_ptx() for p in programs])):
        want = dict(p.expect).get("ptxas")
        if want is not None:
            assert r.accepted == want.startswith("accepted"), f"{f.name}: ptxas now says {r.verdict}"


@pytest.mark.parametrize("path", INFLIGHT, ids=lambda p: p.stem)
def test_ptxas_O3_still_reuses_registers_of_a_wgmma_in_flight(path):
    tool = disassembler()
    if tool is None:
        pytest.skip("no disassembler (pip install 'fuzzptx[sass]')")
    text = Program.from_file(str(path)).to_ptx()
    o3 = inflight_writes(sass(compile_ptx(text, opt_level=3).cubin, tool))
    o0 = inflight_writes(sass(compile_ptx(text, opt_level=0).cubin, tool))
    assert o3, "ptxas -O3 no longer reuses them: update reports/findings/README.md"
    assert o0 == []


def test_the_scan_reads_both_disassemblers_and_stops_at_the_wait():
    lines = [
        "/*0290*/                   QGMMA.64x8x32.F32.E5M2.E4M3 R24, R28, gdesc[UR8], R24, gsb0 ;",
        "/*02c0*/                   MOV R24, 0x2e0 ;",
        "/*02d0*/                   CALL.REL.NOINC 0x470 ;",
        "/*02e0*/                   STG.E desc[UR4][R2.64], R25 ;",
        "/*0320*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;",
        "/*0330*/                   MOV R25, RZ ;",
        "/*0340*/                   IGMMA.64x48x32.S8.S8 R24, gdesc[UR4], R24 ;",
        "/*0350*/               @P0 MOV R40, RZ ;",
    ]
    assert inflight_writes(lines) == ["02c0: MOV R24, 0x2e0"]  # the store reads R25; after the wait it is free
    lines[6] = lines[6].replace(" ;", ", gsb0 ;")
    assert inflight_writes(lines) == ["02c0: MOV R24, 0x2e0", "0350: MOV R40, RZ"]  # R24..R47: 24 s32 registers
