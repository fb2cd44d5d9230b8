"""CFG tests on hand-written kernels: blocks, edges, dominators, back edges, loops, calls."""
from __future__ import annotations

import pytest

from fuzzptx.ptx.cfg import CfgError, build_cfg, call_graph, call_targets, has_indirect_call
from fuzzptx.ptx.parse import parse, parse_file

from pathlib import Path

DATA = Path(__file__).parent / "data"
HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"


def fn(body: str, extra: str = ""):
    m = parse(HEADER + extra + ".visible .entry k()\n{\n.reg .pred %p<4>;\n.reg .b32 %r<8>;\n" + body + "\n}\n", "k.ptx")
    return m.function("k")


def shape(cfg):
    return [(b.label, len(b.instrs), b.succs) for b in cfg.blocks]


def test_straight_line_is_one_block_and_call_does_not_split():
    cfg = build_cfg(fn("mov.u32 %r1, 1;\ncall.uni foo, ();\nadd.s32 %r1, %r1, 1;\nret;",
                       ".func foo()\n{\nret;\n}\n"))
    assert shape(cfg) == [(None, 4, ())]
    assert cfg.back_edges() == () and cfg.loops() == ()


def test_if_else_diamond():
    cfg = build_cfg(fn("""
        setp.eq.s32 %p1, %r1, 0;
        @%p1 bra ELSE;
        mov.u32 %r2, 1;
        bra.uni JOIN;
    ELSE:
        mov.u32 %r2, 2;
    JOIN:
        st.global.u32 [%r3], %r2;
        ret;"""))
    assert shape(cfg) == [(None, 2, (2, 1)), (None, 2, (3,)), ("ELSE", 1, (3,)), ("JOIN", 2, ())]
    assert [b.preds for b in cfg.blocks] == [(), (0,), (0,), (1, 2)]
    assert cfg.dominators(3) == frozenset({0, 3})
    assert cfg.loops() == ()


def test_nested_loops_back_edges_and_bodies():
    cfg = build_cfg(fn("""
        mov.u32 %r1, 0;
    OUTER:
        mov.u32 %r2, 0;
    INNER:
        add.s32 %r2, %r2, 1;
        setp.lt.s32 %p1, %r2, 4;
        @%p1 bra INNER;
        add.s32 %r1, %r1, 1;
        setp.lt.s32 %p2, %r1, 4;
        @%p2 bra.uni OUTER;
        ret;"""))
    labels = [b.label for b in cfg.blocks]
    assert labels == [None, "OUTER", "INNER", None, None]
    assert cfg.back_edges() == ((2, 2), (3, 1))
    outer, inner = cfg.loops()
    assert (outer.header, outer.body, outer.latches) == (1, (1, 2, 3), (3,))
    assert (inner.header, inner.body, inner.latches) == (2, (2,), (2,))
    assert [cfg.loop_depth(b) for b in range(5)] == [0, 1, 2, 1, 0]


def test_unguarded_bra_uni_has_one_successor_and_ret_exit_trap_none():
    cfg = build_cfg(fn("bra.uni L;\nL:\n@%p1 ret;\n@!%p1 exit;\nmov.u32 %r1, 1;\ntrap;\nDEAD:\nret;"))
    assert shape(cfg) == [(None, 1, (1,)), ("L", 1, (2,)), (None, 1, (3,)), (None, 2, ()), ("DEAD", 1, ())]
    assert 4 not in cfg.reachable() and cfg.dominators(4) == frozenset()


def test_loop_with_two_latches_merges_into_one_loop():
    cfg = build_cfg(fn("""
    H:
        @%p1 bra H;
        @%p2 bra H;
        ret;"""))
    assert cfg.back_edges() == ((0, 0), (1, 0))
    (loop,) = cfg.loops()
    assert (loop.header, loop.body, loop.latches) == (0, (0, 1), (0, 1))


def test_labels_are_scoped_like_inline_asm_blocks():
    body = """
        { .reg .pred P1;
        WAIT:
        setp.eq.s32 P1, %r1, 0;
        @P1 bra WAIT;
        }
        { .reg .pred P1;
        WAIT:
        setp.eq.s32 P1, %r2, 0;
        @P1 bra WAIT;
        }
        ret;"""
    cfg = build_cfg(fn(body))
    assert shape(cfg) == [("WAIT", 2, (0, 1)), ("WAIT", 2, (1, 2)), (None, 1, ())]
    assert [lp.header for lp in cfg.loops()] == [0, 1]


def test_inner_scope_branch_to_outer_label():
    cfg = build_cfg(fn("OUT:\n{\n@%p1 bra OUT;\n}\nret;"))
    assert cfg.blocks[0].succs == (0, 1)


def test_undefined_label_is_an_error_with_location():
    with pytest.raises(CfgError) as info:
        build_cfg(fn("mov.u32 %r1, 1;\n@%p1 bra NOWHERE;\nret;"))
    assert info.value.line == 9 and "NOWHERE" in str(info.value) and "\n" not in str(info.value)


def test_brx_uses_branchtargets_table():
    cfg = build_cfg(fn("TS: .branchtargets A, B;\nbrx.idx %r1, TS;\nA:\nret;\nB:\nret;"))
    brx_block = next(b for b in cfg.blocks if b.instrs and b.instrs[-1].base == "brx")
    assert [cfg.blocks[s].label for s in brx_block.succs] == ["A", "B"]


def test_declaration_and_empty_body():
    m = parse(HEADER + ".extern .func f(.param .b32 a);\n.entry e()\n{\n}\n")
    assert build_cfg(m.function("f")).blocks == ()
    assert shape(build_cfg(m.function("e"))) == [(None, 0, ())]


def test_nvcc_kernel_loops_and_calls():
    m = parse_file(DATA / "plain_loops_call.ptx")
    k = m.function("_Z12plain_kernelPK6float4Pfi")
    cfg = build_cfg(k)
    loops = cfg.loops()
    assert len(loops) == 2 and sum(len(b.instrs) for b in cfg.blocks) == len(k.instructions())
    headers = {cfg.blocks[lp.header].label for lp in loops}
    assert headers == {"$L__BB1_2", "$L__BB1_8"}
    assert call_targets(k) == ("_Z5scalefi",) and not has_indirect_call(k)
    assert call_graph(m) == {"_Z5scalefi": (), "_Z12plain_kernelPK6float4Pfi": ("_Z5scalefi",)}
    wg = parse_file(DATA / "wgmma_s8_desc_loop.ptx").kernels()[0]
    wcfg = build_cfg(wg)
    mma_blocks = [b.index for b in wcfg.blocks if any(i.opcode.startswith("wgmma.mma_async") for i in b.instrs)]
    assert mma_blocks and all(wcfg.loop_depth(b) >= 1 for b in mma_blocks)  # the K loop


def test_indirect_call_detected():
    k = fn(".reg .b64 %rd<2>;\nproto: .callprototype ()_ (.param .b32 _);\n.param .b32 a;\n"
           "call %rd1, (a), proto;\nret;")
    assert call_targets(k) == () and has_indirect_call(k)


def test_generated_functions_give_consistent_cfgs():
    """On random IR: every instruction lands in exactly one block, edges are mirrored, and
    loops are dominated by their headers; an undefined branch target is a CfgError."""
    from hypothesis import HealthCheck, given, settings

    from fuzzptx.ptx.ir import walk
    from test_parse import modules

    @settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(modules())
    def check(m):
        for f in m.functions():
            try:
                cfg = build_cfg(f)
            except CfgError as e:
                assert "is not defined" in str(e)
                continue
            if f.body is None:
                assert cfg.blocks == ()
                continue
            assert cfg.instructions() == f.instructions()
            for b in cfg.blocks:
                assert all(b.index in cfg.blocks[s].preds for s in b.succs)
                assert all(b.index in cfg.blocks[p].succs for p in b.preds)
            for lp in cfg.loops():
                assert all(lp.header in cfg.dominators(x) for x in lp.body)
            labels = [s.name for s in walk(f.body) if hasattr(s, "name") and type(s).__name__ == "Label"]
            assert [b.label for b in cfg.blocks if b.label] == labels

    check()
