"""Reference: a warp that spins on ``mbarrier.try_wait`` for a phase another warp's arrival
completes (a warp-specialised consumer waiting for its producer, CUTLASS's and Triton's pipelines)
is suspended after its failed wait until that phase completes, so the other warp runs: in lockstep
the spin would never yield (the reference stopped at its step limit).  A phase nothing left can
complete is still a hang."""
from __future__ import annotations

import pytest

from fuzzptx.oracles.reference import StepLimit, run_program
from fuzzptx.program import Program
from support.two_warps import output_words, two_warp_kernel


def _kernel(producer_arrives: bool = True) -> Program:
    arrive = "mbarrier.arrive.shared::cta.b64 _, [bar];" if producer_arrives else ""
    return two_warp_kernel("spin.ptx", """.shared .align 8 .b64 bar;
.shared .align 4 .b32 s;""", f"""
setp.ne.u32 %p2, %r0, 0;
@%p2 bra INIT_DONE;
mbarrier.init.shared::cta.b64 [bar], 32;
INIT_DONE:
barrier.sync 0;
setp.lt.u32 %p1, %r0, 32;
@%p1 bra CONSUMER;
mov.u32 %r3, 1234;
st.shared.b32 [s], %r3;
{arrive}
st.global.b32 [%rd2], %r0;
ret;
CONSUMER:
WAIT:
mbarrier.try_wait.parity.shared::cta.b64 %p3, [bar], 0;
@!%p3 bra WAIT;
ld.shared.b32 %r2, [s];
st.global.b32 [%rd2], %r2;
ret;
""")


def test_a_consumer_spinning_on_try_wait_lets_the_producer_run():
    got = output_words(_kernel())
    assert (got[:32] == 1234).all() and list(got[32:]) == list(range(32, 64))


def test_a_phase_nothing_can_complete_is_still_a_hang():
    with pytest.raises(StepLimit, match="hang"):
        run_program(_kernel(producer_arrives=False))
