"""Reference semantics of mbarrier phases and transaction counts, bulk copies, elect.sync and
setmaxnreg (oracles/reference/mbarrier.py): a correct pipeline moves the data; a missing
expect_tx leaves it undefined; a wrong parity or a missing arrival is a hang."""
from __future__ import annotations

import numpy as np
import pytest

from fuzzptx.data import buffer_bytes
from fuzzptx.oracles.reference import BadAddress, run_program
from fuzzptx.oracles.reference.errors import StepLimit
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.parse import parse

A = Buffer("a", "u32", 128, "random", 7)
O = Buffer("o", "u32", 128, "zeros", output=True)


def program(issue: str, wait_parity: int = 0, arrivals: int = 1, ntid: int = 128) -> Program:
    """Thread 0 (elected in warp 0) initialises a barrier for ``arrivals`` arrivals and runs ``issue``;
    every thread waits on phase ``wait_parity`` and copies word tid of shared memory out."""
    text = f""".version 8.4
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 o)
.reqntid {ntid}
{{
	.reg .pred 	%p<6>;
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<12>;
	.shared .align 16 .b8 buf[512];
	.shared .align 8 .b64 bar;
	ld.param.u64 	%rd1, [a];
	ld.param.u64 	%rd2, [o];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, buf;
	mov.u32 	%r3, bar;
	shr.u32 	%r4, %r1, 5;
	setp.eq.u32 	%p1, %r4, 0;
	elect.sync 	%r5|%p2, -1;
	and.pred 	%p3, %p1, %p2;
	@%p3 mbarrier.init.shared::cta.b64 	[%r3], {arrivals};
	fence.mbarrier_init.release.cluster;
	bar.sync 	0;
{issue}
WAIT:
	mbarrier.try_wait.parity.shared::cta.b64 	%p4, [%r3], {wait_parity};
	@!%p4 bra 	WAIT;
	shl.b32 	%r6, %r1, 2;
	add.s32 	%r7, %r2, %r6;
	ld.shared.u32 	%r8, [%r7];
	mul.wide.u32 	%rd3, %r6, 1;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.u32 	[%rd4], %r8;
	bar.sync 	0;
	@%p3 mbarrier.inval.shared::cta.b64 	[%r3];
	ret;
}}
"""
    return Program(parse(text, "t.ptx"), Launch("k", (1, 1, 1), (ntid, 1, 1)), (A, O), ())


COPY = "\t@%p3 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[%r2], [%rd1], 512, [%r3];\n"
EXPECT = "\t@%p3 mbarrier.arrive.expect_tx.shared::cta.b64 	_, [%r3], 512;\n"
ARRIVE = "\t@%p3 mbarrier.arrive.shared::cta.b64 	%rd5, [%r3];\n"


def out(r) -> np.ndarray:
    return np.frombuffer(r.bytes("o"), np.uint32)


@pytest.mark.parametrize("issue", [EXPECT + COPY, COPY + EXPECT], ids=["expect-then-copy", "copy-then-expect"])
def test_a_bulk_copy_ordered_by_its_barrier_delivers_the_data(issue):
    r = run_program(program(issue))
    assert np.array_equal(out(r), buffer_bytes(A).view(np.uint32))
    assert not (r.outputs["o"].kind == UNDEF).any()


def test_a_missing_expect_tx_completes_the_phase_early_and_the_data_is_undefined():
    r = run_program(program(ARRIVE + COPY))
    assert (r.outputs["o"].kind == UNDEF).all()


def test_a_wrong_parity_after_a_completed_phase_is_undefined():
    """Waiting on parity 1 once phase 0 has completed hangs, or returns at once where the wait runs
    before that completion: the outcome is undefined, not a certain hang."""
    r = run_program(program(EXPECT + COPY, wait_parity=1))
    assert r.undefined and "returns at once" in r.undefined


def test_waiting_on_a_phase_nothing_can_complete_is_a_hang():
    with pytest.raises(StepLimit, match="hang: every live thread waits"):
        run_program(program("", wait_parity=0))


def test_a_missing_arrival_is_a_hang():
    with pytest.raises(StepLimit, match=r"needs 1 arrival\(s\) and 0 transaction byte"):
        run_program(program(EXPECT + COPY, arrivals=2))


def test_every_thread_arriving_completes_a_phase_of_their_count():
    every = "\tmbarrier.arrive.shared::cta.b64 	%rd5, [%r3];\n"
    init = program(every, arrivals=128)
    r = run_program(init)
    assert (r.outputs["o"].kind == UNDEF).all()  # nothing wrote the buffer: undefined shared memory
    with pytest.raises(StepLimit):
        run_program(program(every, arrivals=129))


def test_setmaxnreg_checks():
    ok = program("\tsetmaxnreg.dec.sync.aligned.u32 	40;\n" + EXPECT + COPY)
    assert np.array_equal(out(run_program(ok)), buffer_bytes(A).view(np.uint32))
    with pytest.raises(BadAddress, match="part of warpgroup"):
        run_program(program("\t@%p1 setmaxnreg.dec.sync.aligned.u32 	40;\n" + EXPECT + COPY))


def test_a_copy_without_expect_tx_before_every_arrival_is_a_race_not_a_hang():
    """tx-count -512 after all 128 arrivals: stuck here, but on hardware the copy's complete_tx may
    land after the arrivals complete the phase; the outcome is undefined."""
    every = "\tmbarrier.arrive.shared::cta.b64 	%rd5, [%r3];\n"
    r = run_program(program(COPY + every, arrivals=128))
    assert r.undefined and "a race" in r.undefined


def test_a_read_before_the_wait_sees_undefined_bytes():
    """The copy's bytes are defined once a wait observes its phase; read before, they are not."""
    from fuzzptx.strategies.mainloops import MainloopPlan, render
    legal = render(MainloopPlan(128, 2, 4, False, False, False, 9))
    early = render(MainloopPlan(128, 2, 4, False, False, False, 9, "early_read", 2))
    assert (run_program(legal).outputs["o"].kind == 0).all()
    assert (run_program(early).outputs["o"].kind == UNDEF).all()
