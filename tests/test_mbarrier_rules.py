"""The checker's mbarrier phase rules (oracles/checker/mbarrier_rules.py, issue 27): each on a small
hand-written kernel with its legal sibling, and on the generator's illegal twins.  The kernels are
real PTX (ptxas accepts every one: ``test_the_kernels_are_real_ptx``)."""
from __future__ import annotations

import dataclasses

import pytest

from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.program import TensorMap
from fuzzptx.ptx.parse import parse
from fuzzptx.strategies import tensor_copies as tc
from fuzzptx.strategies.mainloops import MainloopPlan, kernel_text

NO_EXPECT = "spec.mbarrier.arrive-no-expect-tx"
SHORT = "spec.mbarrier.expect-tx-short"
PARITY = "spec.mbarrier.wrong-parity"
EARLY = "spec.mbarrier.read-before-wait"

HEAD = """.version 8.4
.target sm_90a
.address_size 64

.visible .entry k(.param .u64 a, .param .u64 o, .param .u32 n, .param .align 64 .b8 tm[128])
.reqntid 128
{
	.reg .pred 	%p<12>;
	.reg .b32 	%r<40>;
	.reg .b64 	%rd<10>;
	.shared .align 128 .b8 buf[1024];
	.shared .align 8 .b64 bar[2];
	ld.param.u64 	%rd1, [a];
	ld.param.u32 	%r30, [n];
	mov.u32 	%r1, %tid.x;
	setp.eq.u32 	%p1, %r1, 0;
	setp.eq.u32 	%p2, %r30, 0;
	mov.u64 	%rd4, tm;
	cvta.param.u64 	%rd5, %rd4;
	@%p1 mbarrier.init.shared::cta.b64 	[bar], 1;
	@%p1 mbarrier.init.shared::cta.b64 	[bar+8], 1;
	fence.mbarrier_init.release.cluster;
	bar.sync 	0;
"""
TAIL = """	ld.shared.u32 	%r9, [buf];
	ld.param.u64 	%rd2, [o];
	st.global.u32 	[%rd2], %r9;
	ret;
}
"""
WAITS = 0


def arrive(bar: int = 0, tx: int | None = 256, guard: str = "@%p1 ") -> str:
    if tx is None:
        return f"\t{guard}mbarrier.arrive.shared::cta.b64 \t_, [bar+{bar}];\n"
    return f"\t{guard}mbarrier.arrive.expect_tx.shared::cta.b64 \t_, [bar+{bar}], {tx};\n"


def copy(bar: int = 0, size: int = 256, dst: int = 0, guard: str = "@%p1 ") -> str:
    return (f"\t{guard}cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes \t[buf+{dst}], [%rd1], {size}, "
            f"[bar+{bar}];\n")


def wait(bar: int = 0, parity: str = "0") -> str:
    global WAITS
    WAITS += 1
    return (f"W{WAITS}:\n\tmbarrier.try_wait.parity.shared::cta.b64 \t%p9, [bar+{bar}], {parity};\n"
            f"\t@!%p9 bra \tW{WAITS};\n")


def kernel(body: str) -> str:
    return HEAD + body + TAIL


def found(text: str, tensormaps=()) -> list[tuple[str, str]]:
    """(rule, the instruction at its line) of each spec finding."""
    lines = text.splitlines()
    return sorted((f.rule, lines[f.line - 1].strip()) for f in
                  check_module(parse(text, "t.ptx"), layers=("spec",), tensormaps=tensormaps))


def wait_lines(text: str) -> list[int]:
    """Which waits (1st, 2nd, ...) ``spec.mbarrier.wrong-parity`` reports."""
    waits = [n for n, ln in enumerate(text.splitlines(), 1) if "try_wait" in ln]
    return [waits.index(f.line) + 1 for f in check_module(parse(text, "t.ptx"), layers=("spec",)) if f.rule == PARITY]


def rules(text: str, tensormaps=()) -> set[str]:
    return {r for r, _ in found(text, tensormaps)}


# ------------------------------------------------------------------ arrive with no expect-tx

def test_an_arrive_without_expect_tx_for_its_own_copies():
    legal = kernel(arrive() + copy() + wait() + arrive() + copy() + wait(parity="1"))
    bad = kernel(arrive() + copy() + wait() + arrive(tx=None) + copy() + wait(parity="1"))
    assert rules(legal) == set()
    assert found(bad) == [(NO_EXPECT, "@%p1 mbarrier.arrive.shared::cta.b64 \t_, [bar+0];")]


def test_another_threads_expect_tx_may_announce_the_bytes():
    # thread 0 announces and copies; the others only arrive (a barrier counting 128 arrivals)
    others = kernel(arrive() + copy() + arrive(tx=None, guard="@!%p1 ") + wait())
    assert NO_EXPECT not in rules(others)
    # the same split on a CTA-uniform predicate: no thread runs both senses, so in a launch where
    # %p2 holds nobody announces the copy's bytes
    uniform = kernel(arrive(tx=None, guard="@%p2 ") + arrive(guard="@!%p2 ") + copy(guard="") + wait())
    assert found(uniform) == [(NO_EXPECT, "@%p2 mbarrier.arrive.shared::cta.b64 \t_, [bar+0];")]
    # the thread-varying predicate's other sense is another thread, which does announce them
    varying = uniform.replace("%p2", "%p1")
    assert NO_EXPECT not in rules(varying)


def test_copies_on_another_barrier_are_not_this_arrives():
    t = kernel(arrive(bar=8, tx=None) + arrive(bar=0) + copy(bar=0) + wait(bar=0) + wait(bar=8))
    assert NO_EXPECT not in rules(t)


def test_the_generators_missing_expect_tx_twin():
    legal = MainloopPlan(128, 2, 4, False, False, False, 3)
    for plan in (dataclasses.replace(legal, fault="missing_expect_tx", fault_tile=3),
                 dataclasses.replace(legal, all_arrive=True, copy_first=True, fault="missing_expect_tx", fault_tile=2)):
        assert NO_EXPECT in rules(kernel_text(plan))
        assert rules(kernel_text(dataclasses.replace(plan, fault=None))) == set()


# ------------------------------------------------------------------ expect-tx short of the copies' bytes

@pytest.mark.parametrize("tx, sizes, fires", [(256, (256,), False), (240, (256,), True), (512, (256, 256), False),
                                              (496, (256, 256), True), (1024, (256,), False)])
def test_expect_tx_counts_every_copy_byte(tx, sizes, fires):
    body = arrive(tx=tx) + "".join(copy(size=s, dst=256 * i) for i, s in enumerate(sizes)) + wait()
    assert (SHORT in rules(kernel(body))) == fires  # (too many bytes is a hang, not a race: another rule's)


def test_sums_are_compared_only_for_one_thread_set():
    # thread 0 announces 240 bytes, every thread copies 256: per-instruction sums say nothing
    assert SHORT not in rules(kernel(arrive(tx=240) + copy(guard="") + wait()))


TM = TensorMap("tm", "a", "u32", (12, 6), (48,), (16, 4), (), 0, "none", "64B", "none", "zero")


def tensor_copy(bar: int = 0) -> str:
    return ("\tmov.b32 \t%r20, 8;\n\tmov.b32 \t%r21, 4;\n"
            "\t@%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \t[buf], "
            f"[%rd5, {{%r20, %r21}}], [bar+{bar}];\n")


def test_a_tensor_copy_brings_its_whole_box():
    # the box at (8, 4) of a 12 x 6 tensor: 4 x 2 elements inside, 16 x 4 (256 bytes) complete
    assert TM.box_bytes == 256
    inside = kernel(arrive(tx=32) + tensor_copy() + wait())
    assert found(inside, (TM,)) == [(SHORT, "@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 \t_, [bar+0], 32;")]
    assert rules(kernel(arrive(tx=256) + tensor_copy() + wait()), (TM,)) == set()
    assert SHORT not in rules(inside)  # no TENSORMAP header: the box is unknown, nothing is claimed


# ------------------------------------------------------------------ which phase a wait waits for

def test_a_wait_for_the_phase_already_seen_complete():
    fill = arrive() + copy()
    legal = kernel(fill + wait(parity="0") + fill + wait(parity="1") + fill + wait(parity="0"))
    assert rules(legal) == set()
    # the second wait names phase 0 again; the third is right again (phase 2 has parity 0)
    assert wait_lines(kernel(fill + wait(parity="0") + fill + wait(parity="0") + fill + wait(parity="0"))) == [2]
    # parities 0, 0, 1: the third names phase 1, not the third fill's phase 2, and is wrong too
    assert wait_lines(kernel(fill + wait(parity="0") + fill + wait(parity="0") + fill + wait(parity="1"))) == [2, 3]
    # a fresh barrier's preceding phase has parity 1: waiting for it after a fill returns at once
    assert rules(kernel(fill + wait(parity="1"))) == {PARITY}


def test_waits_with_no_arrival_of_their_own_are_not_checked():
    # a producer's first wait on an empty barrier uses parity 1 on purpose; a second wait for the
    # same phase with nothing issued in between is redundant, not wrong
    t = kernel(wait(bar=8, parity="1") + arrive() + copy() + wait() + wait())
    assert rules(t) == set()


def loop(flip: str, parity: str = "%r10") -> str:
    return kernel("\tmov.u32 \t%r10, 0;\n\tmov.u32 \t%r11, 0;\nLOOP:\n" + arrive() + copy() + wait(parity=parity)
                  + "\tld.shared.u32 \t%r12, [buf];\n\tbar.sync \t0;\n" + flip
                  + "\tadd.s32 \t%r11, %r11, 1;\n\tsetp.lt.u32 \t%p4, %r11, %r30;\n\t@%p4 bra \tLOOP;\n")


def test_the_phase_register_of_a_loop():
    assert rules(loop("\txor.b32 \t%r10, %r10, 1;\n")) == set()
    assert rules(loop("")) == {PARITY}  # the phase register never flips: the second trip returns at once
    # a wait on the other parity through a copy of the register (the generator's wrong_parity twin)
    other = loop("\txor.b32 \t%r10, %r10, 1;\n", "%r13").replace("LOOP:\n", "LOOP:\n\txor.b32 \t%r13, %r10, 1;\n")
    assert rules(other) == {PARITY}
    # a phase the analysis cannot follow (read from memory) is learnt, never judged
    unknown = loop("\tld.shared.u32 \t%r10, [buf+4];\n")
    assert rules(unknown) == set()


def test_a_barrier_nothing_bounds_is_never_judged():
    t = kernel("\tld.param.u32 \t%r15, [n];\n" + arrive() + copy() + wait() + arrive() + copy()
               + wait(parity="0").replace("[bar+0]", "[%r15]"))
    assert PARITY not in rules(t)


def test_the_generators_wrong_parity_twin():
    for tile in range(4):
        plan = MainloopPlan(128, 2, 4, True, True, False, 3, "wrong_parity", tile)
        assert rules(kernel_text(plan)) == {PARITY}, tile
    assert rules(kernel_text(MainloopPlan(128, 2, 4, True, True, False, 3))) == set()


# ------------------------------------------------------------------ tensor-copy twins

def _copy_plan(fault=None, reduce=None) -> tc.CopyPlan:
    tm = dataclasses.replace(TM, buffer="g")
    return tc.CopyPlan(128, tm, ((0, 0), (8, 4)), (0, 0), reduce, True, 0x0F0F0F0F, 11, fault)


@pytest.mark.parametrize("fault", tc.FAULTS)
@pytest.mark.parametrize("reduce", [None, "add"])
def test_the_tensor_copy_twins_and_their_legal_siblings(fault, reduce):
    bad = tc.render(_copy_plan(fault, reduce))
    legal = tc.render(_copy_plan(None, reduce))
    assert tc.TWIN_RULES[fault] in {f.rule for f in check_module(bad.module, tensormaps=bad.tensormaps)}
    assert check_module(legal.module, layers=("spec",), tensormaps=legal.tensormaps) == []


def test_an_early_read_of_a_tensor_box_needs_the_map():
    bad = tc.render(_copy_plan("early_read"))
    assert EARLY not in {f.rule for f in check_module(bad.module, layers=("spec",))}  # the box is unknown


def test_the_kernels_are_real_ptx():
    texts = [kernel(arrive() + copy() + wait() + arrive(tx=None) + copy() + wait(parity="1")),
             kernel(arrive(tx=32) + tensor_copy() + wait()), loop(""),
             kernel(arrive(tx=None, guard="@%p2 ") + arrive(guard="@!%p2 ") + copy(guard="") + wait())]
    for r in compile_batch(texts):
        assert r.accepted, r.stderr


def test_fuzzptx_check_reads_the_tensor_maps_of_a_repro_header(tmp_path, capsys):
    import json

    from fuzzptx.cli import main
    bad, legal = tmp_path / "short.ptx", tmp_path / "legal.ptx"
    bad.write_text(tc.render(_copy_plan("short_expect_tx")).to_ptx())
    legal.write_text(tc.render(_copy_plan()).to_ptx())
    assert main(["check", "--layers", "spec", str(legal)]) == 0
    capsys.readouterr()
    assert main(["check", "--layers", "spec", "--format", "json", str(bad)]) == 1
    assert [f["rule"] for f in json.loads(capsys.readouterr().out)] == [SHORT]
    broken = tmp_path / "broken.ptx"
    broken.write_text(bad.read_text().replace("TENSORMAP: tm buffer=g", "TENSORMAP: tm buffer=nope"))
    assert main(["check", str(broken)]) == 2  # a bad header is the file's one-line error
    err = capsys.readouterr().err.strip()
    assert f"{broken}:6: TENSORMAP tm: buffer=nope" in err and "\n" not in err and "Traceback" not in err
