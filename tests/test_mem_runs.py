"""Runs of plain ld/st (``mem_ops.MemRun``): one batch of address checks, the same results.

Each program runs twice on the reference, once as built and once with runs disabled
(every access alone, as before runs existed); results, notes and errors must match.
Programs are chosen so that the run path is really taken (asserted), including partial
warps, a load that writes a later access's base, an access out of bounds in the middle of
a run, an undefined base, and loads that must see the run's own earlier stores.
"""
from __future__ import annotations

import pickle

import pytest

from fuzzptx.oracles.reference import mem_ops, run_program
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.parse import parse

HEAD = """.version 8.0
.target sm_90a
.address_size 64
.shared .align 16 .b8 smem[1024];
.visible .entry k(.param .u64 a, .param .u64 out)
{
.reg .b32 %r<40>; .reg .b64 %rd<20>; .reg .pred %p<4>;
ld.param.u64 %rd10, [a]; cvta.to.global.u64 %rd10, %rd10;
ld.param.u64 %rd11, [out]; cvta.to.global.u64 %rd11, %rd11;
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd0, %r0, 4;
add.u64 %rd1, %rd10, %rd0;
add.u64 %rd2, %rd11, %rd0;
mov.u32 %r1, smem;
mad.lo.u32 %r2, %r0, 4, %r1;
"""


def _program(text: str, bufs, block: int) -> Program:
    return Program(parse(text, "runs.ptx"), Launch("k", (1, 1, 1), (block, 1, 1)), bufs, ())


def outcome(p: Program):
    """Everything a run says, comparable with ==: the result's outputs and summary, or the error."""
    try:
        r = run_program(p)
    except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
        return ("error", type(exc).__name__, str(exc))
    outs = {k: (b.data, b.kind.tobytes(), b.lo.tobytes(), b.hi.tobytes(), b.flags.tobytes())
            for k, b in r.outputs.items()}
    return ("ok", pickle.dumps((r.summary(), outs)))


def both(p_text: str, block: int = 64, count: int = 256):
    """(with runs, without runs, number of MemRuns the with-runs execution took)."""
    taken = []
    real_exec = mem_ops.exec_mem_run

    def counting(m, f, run, act):
        ok = real_exec(m, f, run, act)
        taken.append((len(run.instrs), ok))
        return ok

    mem_ops.exec_mem_run = counting
    try:
        with_runs = outcome(_program(HEAD + p_text + "\nret;\n}\n", _bufs(count), block))
    finally:
        mem_ops.exec_mem_run = real_exec
    real_access = mem_ops.access_of
    mem_ops.access_of = lambda ins: None
    try:
        alone = outcome(_program(HEAD + p_text + "\nret;\n}\n", _bufs(count), block))
    finally:
        mem_ops.access_of = real_access
    return with_runs, alone, taken


def _bufs(count: int):
    return (Buffer("a", "b32", count, "iota"), Buffer("out", "b32", count, "zeros", output=True))


COPY = "\n".join(f"ld.global.b32 %r{10 + i}, [%rd1+{256 * i}]; st.shared.b32 [%r2+{256 * i}], %r{10 + i};"
                 for i in range(4))
BACK = "\n".join(f"ld.shared.b32 %r{20 + i}, [%r2+{256 * i}]; st.global.b32 [%rd2+{256 * i}], %r{20 + i};"
                 for i in range(4))


def test_copy_through_shared_memory_matches_one_by_one():
    w, a, taken = both(COPY + "\nbar.sync 0;\n" + BACK)
    assert w == a and w[0] == "ok"
    assert taken and all(ok for _, ok in taken) and sum(n for n, _ in taken) == 16


def test_partial_warp_run_matches_one_by_one():
    body = "setp.ge.u32 %p0, %r0, 40;\n@%p0 bra DONE;\n" + COPY + "\n" + BACK + "\nDONE:\n"
    w, a, taken = both(body)
    assert w == a and w[0] == "ok"
    assert taken and all(ok for _, ok in taken)


def test_loads_see_the_runs_own_earlier_stores():
    body = ("st.global.b32 [%rd2], %r0; ld.global.b32 %r5, [%rd2]; add.u32 %r5, %r5, 1;"
            "st.global.b32 [%rd2+4], 7; st.global.b32 [%rd2+4], %r5; ld.global.b32 %r6, [%rd2+4];"
            "st.global.b32 [%rd2+512], %r6;")
    w, a, taken = both(body, block=32)
    assert w == a and w[0] == "ok"
    assert [n for n, _ in taken] == [2, 4]  # the add splits the accesses into two runs


def test_a_load_of_a_later_base_splits_the_run():
    body = ("st.global.b64 [%rd11], %rd1; ld.global.b64 %rd3, [%rd11]; ld.global.b32 %r5, [%rd3+8];"
            "st.global.b32 [%rd2+512], %r5;")
    w, a, taken = both(body, block=32)
    assert w == a and w[0] == "ok"
    assert sorted(n for n, _ in taken) == [2, 2]


@pytest.mark.parametrize("bad", ["ld.global.b32 %r7, [%rd1+4096];", "st.global.b32 [%rd2+4096], %r0;",
                                 "ld.global.b32 %r7, [%rd1+2];"])
def test_a_bad_access_in_a_run_is_named_as_when_alone(bad):
    body = "ld.global.b32 %r5, [%rd1]; st.global.b32 [%rd2], %r5;\n" + bad + "\nst.global.b32 [%rd2+4], %r5;"
    w, a, taken = both(body)
    assert w == a and w[:2] == ("error", "BadAddress")
    assert f"runs.ptx:{HEAD.count(chr(10)) + 2}: " in w[2]  # the bad access's own line
    assert taken == [(4, False)]  # the run was refused, and its accesses ran alone


def test_an_undefined_base_in_a_run_is_undefined_as_when_alone():
    body = "ld.global.b32 %r5, [%rd1]; st.global.b32 [%rd2], %r5;\nld.global.b32 %r7, [%rd9];\nst.global.b32 [%rd2+4], %r7;"
    w, a, taken = both(body)
    assert w == a and w[0] == "ok"
    assert b"undefined address" in w[1]
    assert taken == [(4, False)]


def test_segments_hold_runs_of_accesses_only():
    p = _program(HEAD + COPY + "\nret;\n}\n", _bufs(256), 64)
    run_program(p)  # builds the segments
    segs = [s for info in _infos(p) for seg in info.segments.values() for s in seg]
    runs = [s for s in segs if type(s) is mem_ops.MemRun]
    assert len(runs) == 1 and len(runs[0].instrs) == 8
    assert runs[0].bases == ("%rd1", "%r2")


def _infos(p: Program):
    from fuzzptx.oracles.reference.interp import func_info

    return [func_info(fn) for fn in p.module.functions() if fn.body is not None]


def test_access_of_refuses_what_a_run_cannot_hold():
    from fuzzptx.ptx.parse import parse

    text = HEAD + """@%p0 ld.global.b32 %r5, [%rd1];
ld.global.v2.b32 {%r5, %r6}, [%rd1];
ld.param.u64 %rd5, [a];
ld.global.b32 %r5, [smem];
ld.b32 %r5, [%rd1];
ld.global.b32 %r5, [%rd1+-4];
st.global.b32 [%rd2], 3;
ret;
}
"""
    fn = parse(text, "x.ptx").kernels()[0]
    body = [i for i in fn.instructions() if i.loc and i.loc.line > HEAD.count("\n")]
    got = [mem_ops.access_of(i) is not None for i in body[:-1]]
    assert got == [False, False, False, False, False, True, True]


def test_stores_gathered_to_the_end_keep_undefined_elements_and_the_last_write():
    """Stores to a region no load of the run reads are written together: undefined sources
    (never-written registers) leave their shadow records; two stores to one address fall back
    to one-by-one writes, so the later store's value stays."""
    body = ("ld.global.b32 %r5, [%rd1]; st.global.b32 [%rd2], %r5; st.global.b32 [%rd2+256], %r30;"
            "ld.global.b32 %r6, [%rd1+4]; st.global.b32 [%rd2+512], %r6;")
    w, a, taken = both(body)
    assert w == a and w[0] == "ok" and taken == [(5, True)]
    dup = "ld.global.b32 %r5, [%rd1]; st.global.b32 [%rd2], %r5; st.global.b32 [%rd2], %r0; st.global.b32 [%rd2+4], 9;"
    w, a, taken = both(dup, block=32)
    assert w == a and w[0] == "ok" and taken == [(4, True)]


@pytest.mark.parametrize("space", ["global", "shared"])
def test_threads_storing_different_values_to_one_element_leave_it_undefined(space):
    """Which thread's store the hardware keeps is not defined: the element is undefined (the
    reference kept the last thread's value, and the H100 kept another: a false mismatch).
    Threads storing one value agree, and the element stays defined."""
    import numpy as np

    from fuzzptx.oracles.reference.values import UNDEF

    if space == "global":
        body = "and.b32 %r5, %r0, 1;\nst.global.u32 [%rd11], %r5;\nst.global.u32 [%rd11+4], 7;\nret;\n}\n"
    else:
        body = ("and.b32 %r5, %r0, 1;\nst.shared.u32 [%r1], %r5;\nst.shared.u32 [%r1+4], 7;\nbar.sync 0;\n"
                "ld.shared.u32 %r6, [%r1];\nld.shared.u32 %r7, [%r1+4];\nst.global.u32 [%rd2], %r6;\n"
                "st.global.u32 [%rd2+512], %r7;\nret;\n}\n")
    bufs = (Buffer("a", "u32", 128, "zeros"), Buffer("out", "u32", 256, "zeros", output=True))
    ref = run_program(_program(HEAD + body, bufs, 128))
    kind = np.asarray(ref.outputs["out"].kind)
    if space == "global":
        assert kind[0] == UNDEF and kind[1] != UNDEF and int(np.frombuffer(ref.bytes("out"), np.uint32)[1]) == 7
    else:
        assert (kind[:128] == UNDEF).all() and not (kind[128:] == UNDEF).any()
    assert any("different values to one" in n for n in ref.notes)


def test_the_racing_stores_repro_replays():
    from pathlib import Path

    from fuzzptx.engine.replay import main_replay

    assert main_replay([str(Path(__file__).parent / "data" / "repros" / "racing_global_stores.ptx"), "--no-hardware"]) == 0
