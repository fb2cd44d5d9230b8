"""defs/uses: catalogue forms (wgmma d is inout), PTX conventions for opaque instructions, liveness."""
from __future__ import annotations

from pathlib import Path

from fuzzptx.ptx.cfg import build_cfg
from fuzzptx.ptx.dataflow import defs_uses, is_special, liveness, split_pair
from fuzzptx.ptx.ir import Reg
from fuzzptx.ptx.parse import parse, parse_file

HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"
DECLS = (".reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .f32 %f<16>;\n.reg .b64 %rd<8>;\n"
         ".reg .b64 descA, descB;\n.reg .pred scaleD;\n")


def instrs(body: str):
    m = parse(HEADER + ".entry k()\n{\n" + DECLS + body + "\n}\n")
    return m.kernels()[0].instructions()


def du(line: str):
    (ins,) = instrs(line)
    d, u = defs_uses(ins)
    return [r.name for r in d], [r.name for r in u]


def test_wgmma_accumulator_is_def_and_use():
    d, u = du("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, "
              "{%r1, %r2, %r3, %r4}, descB, scaleD, 1, -1, 1;")
    assert d == ["%f1", "%f2", "%f3", "%f4"]
    assert u == ["%f1", "%f2", "%f3", "%f4", "%r1", "%r2", "%r3", "%r4", "descB", "scaleD"]


def test_wgmma_descriptor_form_and_sparse():
    d, u = du("wgmma.mma_async.sync.aligned.m64n8k32.s32.u8.u8 {%r1, %r2, %r3, %r4}, descA, descB, 1;")
    assert d == ["%r1", "%r2", "%r3", "%r4"] and u == d + ["descA", "descB"]
    d, u = du("wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.u8.u8 {%r1, %r2, %r3, %r4}, descA, descB, %r9, 0, scaleD;")
    assert d == ["%r1", "%r2", "%r3", "%r4"] and u == d + ["descA", "descB", "%r9", "scaleD"]


def test_wgmma_outside_catalogue_still_reads_and_writes_d():
    d, u = du("wgmma.mma_async.sync.aligned.m64n7k16.f32.f16.f16 {%f1, %f2}, descA, descB, 1, 1, 1, 0, 0;")
    assert d == ["%f1", "%f2"] and u == ["%f1", "%f2", "descA", "descB"]


def test_sync_forms_have_no_defs():
    for line in ("wgmma.fence.sync.aligned;", "wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 0;"):
        assert du(line) == ([], [])


def test_guard_is_a_use():
    assert du("@!%p1 add.s32 %r1, %r2, 3;") == (["%r1"], ["%p1", "%r2"])


def test_setp_pair_defines_both_predicates():
    assert du("setp.lt.s32 %p1|%p2, %r1, %r2;") == (["%p1", "%p2"], ["%r1", "%r2"])
    assert split_pair(Reg("%p1|%p2")) == (Reg("%p1"), Reg("%p2")) and split_pair(Reg("%p1")) == (Reg("%p1"),)


def test_stores_branches_barriers_define_nothing():
    assert du("st.global.v2.f32 [%rd1+8], {%f1, %f2};") == ([], ["%rd1", "%f1", "%f2"])
    assert du("bar.sync 0;") == ([], [])
    assert du("@%p1 bra L;") == ([], ["%p1"])
    assert du("red.global.add.u32 [%rd1], %r1;") == ([], ["%rd1", "%r1"])
    assert du("mbarrier.init.shared.b64 [%r1], %r2;") == ([], ["%r1", "%r2"])


def test_loads_and_vector_destinations():
    assert du("ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd2+16];") == (["%f1", "%f2", "%f3", "%f4"], ["%rd2"])
    assert du("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r1, %r2}, [%r3];") == (["%r1", "%r2"], ["%r3"])
    assert du("mov.u32 %r1, %tid.x;") == (["%r1"], ["%tid.x"])
    assert is_special(Reg("%tid.x")) and not is_special(Reg("%r1"))
    assert du("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2}, {%r1, %r2}, {%r3}, {%f3, %f4};") == (
        ["%f1", "%f2"], ["%r1", "%r2", "%r3", "%f3", "%f4"])
    assert du("atom.global.add.u32 %r1, [%rd1], 1;") == (["%r1"], ["%rd1"])


def test_call_defines_returns_and_uses_args():
    assert du("call.uni (%r1), f, (%r2, %r3);") == (["%r1"], ["%r2", "%r3"])
    assert du("call.uni f, (%r2);") == ([], ["%r2"])
    assert du("call (%r1), %rd1, (%r2), proto;") == (["%r1"], ["%rd1", "%r2"])


def test_liveness_around_a_loop():
    m = parse(HEADER + ".entry k()\n{\n" + DECLS + """
        mov.u32 %r1, 0;
    LOOP:
        add.s32 %r1, %r1, %r2;
        setp.lt.s32 %p1, %r1, 100;
        @%p1 bra LOOP;
        st.global.u32 [%rd1], %r1;
        ret;
    }
    """)
    cfg = build_cfg(m.kernels()[0])
    lv = liveness(cfg)
    names = lambda s: sorted(r.name for r in s)  # noqa: E731
    assert names(lv.live_in[0]) == ["%r2", "%rd1"]
    assert names(lv.live_in[1]) == ["%r1", "%r2", "%rd1"]
    assert names(lv.live_out[1]) == ["%r1", "%r2", "%rd1"]
    assert names(lv.live_out[2]) == []


def test_guarded_def_does_not_kill():
    m = parse(HEADER + ".entry k()\n{\n" + DECLS + "@%p1 mov.u32 %r1, 1;\nst.global.u32 [%rd1], %r1;\nret;\n}\n")
    lv = liveness(build_cfg(m.kernels()[0]))
    assert Reg("%r1") in lv.live_in[0]


def test_nvcc_wgmma_accumulators_live_around_k_loop():
    k = parse_file(Path(__file__).parent / "data" / "wgmma_s8_desc_loop.ptx").kernels()[0]
    cfg = build_cfg(k)
    lv = liveness(cfg)
    (mma,) = [i for i in k.instructions() if i.opcode.startswith("wgmma.mma_async")]
    d, u = defs_uses(mma)
    assert len(d) == 8 and set(d) <= set(u)
    loop = next(lp for lp in cfg.loops() if len(lp.body) > 1)
    assert set(d) <= lv.live_in[loop.header]  # accumulators carried around the K loop


def test_generated_instructions_defs_uses_are_mentioned_registers():
    from hypothesis import HealthCheck, given, settings

    from fuzzptx.ptx.dataflow import split_pair
    from fuzzptx.ptx.ir import registers_in
    from test_parse import modules

    @settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(modules())
    def check(m):
        for f in m.functions():
            for ins in f.instructions():
                d, u = defs_uses(ins)
                mentioned = {x for op in ins.operands for r in registers_in(op) for x in split_pair(r)}
                if ins.guard:
                    mentioned.add(ins.guard.reg)
                assert set(d) <= mentioned and set(u) <= mentioned
                assert set(d) | set(u) == mentioned or ins.base == "call" or any(is_special(r) for r in mentioned)

    check()
