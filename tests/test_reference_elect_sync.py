"""Reference: ``elect.sync`` waits until every live lane its membermask names has executed it (PTX
ISA, elect.sync: ``.sync``), so lanes that reach it apart -- CUTLASS's TMA warp, whose elected lane
runs the producer loop the other lanes skip and then comes back to the next tile's elect -- get one
leader, the lowest lane of the mask.  Electing among the lanes that came first made each of them
a leader in turn, and each issued the producer's copies again."""
from __future__ import annotations


from fuzzptx.program import Program
from support.two_warps import output_words, two_warp_kernel


def _kernel(exit_others: bool = False) -> Program:
    """Warp 0: lane 0 waits on an mbarrier that warp 1 arrives at (suspended there: the producer
    lane waiting for its consumers), lanes 1-31 skip ahead; then warp 0 elects a leader."""
    return two_warp_kernel("elect.ptx", ".shared .align 8 .b64 bar;", f"""
setp.ne.u32 %p4, %r0, 0;
@%p4 bra INIT_DONE;
mbarrier.init.shared::cta.b64 [bar], 32;
INIT_DONE:
barrier.sync 0;
setp.lt.u32 %p5, %r0, 32;
@%p5 bra WARP0;
mbarrier.arrive.shared::cta.b64 _, [bar];
st.global.b32 [%rd2], %r0;
ret;
WARP0:
setp.ne.u32 %p1, %r0, 0;
{"@%p1 ret;" if exit_others else ""}
@%p1 bra JOIN;
WAIT:
mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
@!%p2 bra WAIT;
JOIN:
elect.sync %r1|%p3, 0xffffffff;
selp.u32 %r2, 100, 0, %p3;
add.u32 %r2, %r2, %r1;
st.global.b32 [%rd2], %r2;
ret;
""")


def test_lanes_that_reach_elect_sync_apart_get_one_leader():
    got = output_words(_kernel())
    assert got[0] == 100 and (got[1:32] == 0).all()  # lane 0 leads; every lane reads leader lane 0


def test_exited_lanes_of_the_mask_are_not_waited_for():
    got = output_words(_kernel(exit_others=True))
    assert got[0] == 100 and (got[1:32] == 0).all()
