"""The GMMA pipeline rules of ``fuzzptx.oracles.sass`` (docs/sass.md): each rule on small SASS
written out here, then against real ptxas 13.0.88 -- accepted -O0 builds of legal generated programs
and the Triton-made kernels of tests/data/triton/ at -O3 are clean."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from fuzzptx.builders import repeated_wgmma, wgmma_program
from fuzzptx.engine.generate import draw_direct
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.oracles.sass import (Instruction, Listing, SassFunction, disassemble_all, disassembler,
                                  gmma_count_hazards, verify)
from fuzzptx.oracles.checker import check_module
from support.corpora import TRITON, parsed, triton_o3

ROOT = Path(__file__).resolve().parents[1]
needs_disassembler = pytest.mark.skipif(disassembler() is None, reason="no disassembler (pip install nvidia-cuda-nvdisasm)")


def listing(**functions: str) -> Listing:
    """Functions from ``/*addr*/ OP operands ;`` lines (branch and call targets as ``0x..`` addresses)."""
    out = {}
    for name, text in functions.items():
        instrs, at, calls = [], {}, {}
        for line in text.strip().splitlines():
            m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(@!?P\d\s+)?([A-Z][\w.]*)\s*(.*?)\s*;", line)
            addr, guard, op, args = int(m.group(1), 16), (m.group(2) or "").strip() or None, m.group(3), m.group(4)
            t = re.search(r"0x([0-9a-f]+)", args) if op.split(".")[0] in ("BRA", "CALL") else None
            at[addr] = len(instrs)
            if op.startswith("CALL"):
                calls[len(instrs)] = args.split()[-1]
            instrs.append(Instruction(addr, guard, op, args, line.strip(), int(t.group(1), 16) if t else None))
        out[name] = SassFunction(name, tuple(instrs), at, calls)
    return Listing(out)


def rules(lst: Listing, fn: str = "k") -> list[tuple[str, int]]:
    return [(h.rule, h.addr) for h in verify(lst, fn)]


def test_a_write_to_an_accumulator_in_flight_until_the_wait():
    k = """
    /*0000*/ WARPGROUP.ARRIVE ;
    /*0010*/ HGMMA.64x16x16.F32 R24, gdesc[UR4], R24, gsb0 ;
    /*0020*/ MOV R30, RZ ;
    /*0030*/ STG.E desc[UR4][R2.64], R26 ;
    /*0040*/ WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
    /*0050*/ MOV R24, RZ ;
    /*0060*/ EXIT ;
    """
    # R24..R31: the f32 accumulator of m64n16 is 8 registers; the store reads R26 in flight
    assert rules(listing(k=k)) == [("inflight-write", 0x20), ("inflight-read", 0x30)]


def test_an_a_operand_in_flight_may_be_read_not_written():
    k = """
    /*0000*/ WARPGROUP.ARRIVE ;
    /*0010*/ HGMMA.64x8x16.F32 R24, R40, gdesc[UR4], R24, gsb0 ;
    /*0020*/ IADD3 R2, R41, 0x1, RZ ;
    /*0030*/ MOV R43, RZ ;
    /*0040*/ WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
    /*0050*/ EXIT ;
    """
    assert rules(listing(k=k)) == [("inflight-write", 0x30)]


def test_wait_group_one_keeps_the_newest_group_in_flight():
    k = """
    /*0000*/ WARPGROUP.ARRIVE ;
    /*0010*/ HGMMA.64x8x16.F32 R24, gdesc[UR4], R24, gsb0 ;
    /*0020*/ WARPGROUP.ARRIVE ;
    /*0030*/ HGMMA.64x8x16.F32 R32, gdesc[UR4], R32, gsb0 ;
    /*0040*/ WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
    /*0050*/ MOV R24, RZ ;
    /*0060*/ MOV R32, RZ ;
    /*0070*/ EXIT ;
    """
    assert rules(listing(k=k)) == [("inflight-write", 0x60)]


def test_a_predicated_wait_may_not_run():
    k = """
    /*0000*/ WARPGROUP.ARRIVE ;
    /*0010*/ HGMMA.64x8x16.F32 R24, gdesc[UR4], R24, gsb0 ;
    /*0020*/ @P0 WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
    /*0030*/ MOV R25, RZ ;
    /*0040*/ EXIT ;
    """
    assert rules(listing(k=k)) == [("inflight-write", 0x30)]


def test_every_path_counts_and_the_callee_runs_with_the_callers_gmmas_in_flight():
    k = """
    /*0000*/ WARPGROUP.ARRIVE ;
    /*0010*/ HGMMA.64x8x16.F32 R24, gdesc[UR4], R24, gsb0 ;
    /*0020*/ @P0 BRA 0x50 ;
    /*0030*/ WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
    /*0040*/ CALL.REL.NOINC 0x100 side ;
    /*0050*/ MOV R27, RZ ;
    /*0060*/ EXIT ;
    """
    side = """
    /*0100*/ IMAD.MOV.U32 R26, RZ, RZ, 0x5 ;
    /*0110*/ RET.REL.NODEC R20 0x0 ;
    """
    # the branch skips the wait: R27 is written with the GMMA in flight on that path; the callee
    # runs only after the wait, so its write is fine
    assert rules(listing(k=k, side=side)) == [("inflight-write", 0x50)]
    k2 = k.replace("/*0030*/ WARPGROUP.DEPBAR.LE gsb0, 0x0 ;", "/*0030*/ NOP ;")
    assert rules(listing(k=k2, side=side)) == [("inflight-write", 0x50), ("inflight-write", 0x100)]


def test_a_loop_carries_the_gmma_round_to_its_head():
    k = """
    /*0000*/ MOV R2, RZ ;
    /*0010*/ IADD3 R2, R2, 0x1, RZ ;
    /*0020*/ WARPGROUP.ARRIVE ;
    /*0030*/ HGMMA.64x8x16.F32 R24, gdesc[UR4], R24, gsb0 ;
    /*0040*/ ISETP.GE.AND P0, PT, R2, 0x4, PT ;
    /*0050*/ @!P0 BRA 0x10 ;
    /*0060*/ WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
    /*0070*/ EXIT ;
    """
    assert rules(listing(k=k)) == []  # chained GMMAs on one accumulator are the pipeline itself
    k2 = k.replace("/*0010*/ IADD3 R2, R2, 0x1, RZ ;", "/*0010*/ IADD3 R25, R2, 0x1, RZ ;")
    assert ("inflight-write", 0x10) in rules(listing(k=k2))


def test_a_gmma_reading_a_register_written_after_the_arrive():
    k = """
    /*0000*/ WARPGROUP.ARRIVE ;
    /*0010*/ MOV R41, RZ ;
    /*0020*/ HGMMA.64x8x16.F32 R24, R40, gdesc[UR4], RZ, !UPT, gsb0 ;
    /*0030*/ WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
    /*0040*/ EXIT ;
    """
    assert rules(listing(k=k)) == [("read-after-arrive", 0x20)]
    k2 = k.replace("RZ, !UPT, gsb0", "R24, gsb0").replace("R40, ", "").replace("MOV R41", "MOV R25")
    assert rules(listing(k=k2)) == [("read-after-arrive", 0x20)]  # the accumulator input is read too


# ---------------------------------------------------------------- real ptxas

def _sample(n: int, seed: int):
    progs = [p for p in draw_direct(n, seed, 0.0)
             if any(i.opcode.startswith("wgmma.mma_async") for f in p.module.functions() if f.body is not None
                    for i in f.instructions())
             and not any(f.severity == "error" for f in check_module(p.module, layers=("isa", "spec")))]
    return progs


@needs_disassembler
def test_O0_builds_of_legal_generated_programs_are_clean():
    progs = _sample(48, 5)
    results = compile_batch([p.to_ptx() for p in progs], opt_level=0, want_cubin=True)
    cubins = [r.cubin for r in results if r.accepted and r.cubin]
    listings = dict(zip(map(id, cubins), disassemble_all(cubins, disassembler())))
    checked = 0
    for p, r in zip(progs, results):
        if not (r.accepted and r.cubin):
            continue
        lst, name = listings[id(r.cubin)], r.kernel(p.launch.kernel)
        if lst.function(name) is None:  # a target other than sm_90
            continue
        found = [h.line() for h in verify(lst, name)] + \
            [c.line() for c in gmma_count_hazards(p.module, p.launch.kernel, lst, name)]
        assert found == [], p.to_ptx()[:2000]
        checked += 1
    assert checked >= 20


@needs_disassembler
def test_triton_kernels_are_clean_at_O3(tmp_path_factory):
    """Every Triton kernel's SASS passes the pipeline rules and the count rules (the -O3 build of
    each file's emitted text, ``support.corpora.triton_o3``, which test_triton_corpus shares)."""
    files = sorted(TRITON.glob("*.ptx"))
    built = triton_o3(tmp_path_factory)
    assert len(files) >= 39 and sorted(built) == [f.name for f in files]
    results = [built[f.name] for f in files]
    assert all(r.accepted for r in results)
    for f, r, lst in zip(files, results, disassemble_all([r.cubin for r in results], disassembler())):
        for entry in r.kernel_names:
            name = r.kernel(entry)
            assert lst.function(name) is not None
            assert verify(lst, name) == [], f.name
            assert gmma_count_hazards(parsed(f), entry, lst, name) == [], f.name


def test_a_null_gmma_is_no_tensor_core_op():
    """``RZ, gdesc[URZ], RZ``: writes nothing, so it is neither counted nor in flight on any register."""
    null = Instruction(0x10, None, "HGMMA.64x8x16.F16", "RZ, gdesc[URZ], RZ, !UPT, gsb0",
                       "/*0010*/ HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ, !UPT, gsb0 ;").gmma
    real = Instruction(0x10, None, "HGMMA.64x64x16.F32", "R24, gdesc[UR4], RZ, !UPT, gsb0",
                       "/*0010*/ HGMMA.64x64x16.F32 R24, gdesc[UR4], RZ, !UPT, gsb0 ;").gmma
    assert null.auxiliary and null.acc == frozenset() and null.closes_group
    assert not real.auxiliary and not real.reads_acc  # scale-d 0 is a real GMMA


@needs_disassembler
def test_two_committed_copies_of_a_wgmma_with_one_left_are_dropped():
    """ptxas 13.0.88 -O3 keeps one of two copies of a wgmma with a commit between them and closes the
    second group with a null GMMA; the H100 then gives C + AB, not C + 2AB
    (tests/hw_records/sass_findings_h100.json).  -O0 keeps both."""
    p = repeated_wgmma(wgmma_program("wgmma.mma_async.sync.aligned.m64n32k32.s32.u8.u8|a=reg", seed=7), 2, True)
    found = {}
    for opt in (3, 0):
        r = compile_batch([p.to_ptx()], opt_level=opt, want_cubin=True)[0]
        name = r.kernel(p.launch.kernel)
        lst = disassemble_all([r.cubin], disassembler())[0]
        found[opt] = [c.line() for c in gmma_count_hazards(p.module, p.launch.kernel, lst, name)] + \
            [h.line() for h in verify(lst, name)]
    assert found[3] == [f"gmma-dropped: {name}: 2 m64n32k32 wgmma(s) must execute, a SASS path holds 1 such GMMA(s)"]
    assert found[0] == []


def test_a_call_through_a_register_may_reach_any_subroutine_of_the_section():
    lst = listing(k="""
    /*0000*/ WARPGROUP.ARRIVE ;
    /*0010*/ HGMMA.64x8x16.F32 R24, gdesc[UR4], R24, gsb0 ;
    /*0020*/ CALL.REL.NOINC R6 0x0 ;
    /*0030*/ WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
    /*0040*/ EXIT ;
    """, side="""
    /*0100*/ IMAD.MOV.U32 R26, RZ, RZ, 0x5 ;
    /*0110*/ RET.REL.NODEC R20 0x0 ;
    """)
    k = lst.functions["k"]
    k.calls[2] = ""  # what the listing records for a call through a register
    lst.functions["k"] = SassFunction("k", k.instrs, k.at, k.calls, ("side",))
    assert rules(lst) == [("inflight-write", 0x100)]


def test_two_gmmas_in_flight_at_one_write_come_out_in_address_order():
    # one MOV over the accumulators of two GMMAs in flight: two hazards at one address, ordered by
    # the GMMA (they once came out in the iteration order of a set, which varied between processes)
    k = """
    /*0000*/ WARPGROUP.ARRIVE ;
    /*0010*/ HGMMA.64x8x16.F32 R24, gdesc[UR4], R24 ;
    /*0020*/ HGMMA.64x8x16.F32 R24, gdesc[UR6], R24, gsb0 ;
    /*0030*/ MOV R24, RZ ;
    /*0040*/ WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
    /*0050*/ EXIT ;
    """
    hs = verify(listing(k=k), "k")
    assert [(h.rule, h.addr) for h in hs] == [("inflight-write", 0x30)] * 2
    assert [h.gmma.split("*/")[0] for h in hs] == ["/*0010", "/*0020"]
