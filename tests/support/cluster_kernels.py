"""Small kernels of two CTAs in one cluster, for the reference's cluster tests
(tests/test_cluster_reference.py) and the GPU (``hw_kernels``' ``cluster_probes``): each CTA arrives on
its peer's mbarrier and reads its peer's shared memory through ``mapa`` (``kernel``), and rank 0's
multicast tensor copy lands in both CTAs (``tensor_kernel``).  Their outputs hold values, never
addresses, so the GPU and the reference must give the same bytes."""
from __future__ import annotations

from fuzzptx.program import Program

HEAD = """// fuzzptx-repro v1
// LAUNCH: kernel=k grid={grid} block=64,1,1 cluster={cluster}
// BUFFER: o type=u32 count={count} init=zeros output
.version 8.4
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 o)
.reqntid 64
{{
	.reg .pred 	%p<8>;
	.reg .b32 	%r<24>;
	.reg .b64 	%rd<8>;
	.shared .align 8 .b64 bar;
	.shared .align 4 .b32 word[64];
	ld.param.u64 	%rd1, [o];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %cluster_ctarank;
	mov.u32 	%r3, bar;
	mov.u32 	%r4, word;
	setp.eq.u32 	%p1, %r1, 0;
	@%p1 mbarrier.init.shared::cta.b64 	[%r3], 1;
	mad.lo.u32 	%r5, %r2, 1000, %r1;
	shl.b32 	%r6, %r1, 2;
	add.s32 	%r7, %r4, %r6;
	st.shared.u32 	[%r7], %r5;
	fence.mbarrier_init.release.cluster;
	barrier.cluster.arrive.relaxed.aligned;
	barrier.cluster.wait.aligned;
	xor.b32 	%r8, %r2, 1;
{body}
	mad.lo.u32 	%r13, %r2, 64, %r1;
	mul.wide.u32 	%rd2, %r13, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r11;
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	ret;
}}
"""

# thread 0 of each CTA arrives on its peer's mbarrier (mapa + remote arrive); every thread waits on its
# own CTA's barrier, then reads its word of the peer's shared memory (mapa + ld.shared::cluster)
REMOTE = """	mapa.shared::cluster.u32 	%r9, %r3, %r8;
	@%p1 mbarrier.arrive.shared::cluster.b64 	_, [%r9];
WAIT:
	mbarrier.try_wait.parity.shared::cta.b64 	%p2, [%r3], 0;
	@!%p2 bra 	WAIT;
	mapa.shared::cluster.u32 	%r10, %r7, %r8;
	ld.shared::cluster.u32 	%r11, [%r10];"""


def kernel(body: str = REMOTE, grid: str = "2,1,1", cluster: str = "2,1,1") -> Program:
    """``body`` in CTAs of 64 threads, each pair (rank, rank ^ 1) partners, its output 64 words per CTA."""
    ctas = 1
    for d in grid.split(","):
        ctas *= int(d) if d.isdigit() else 1
    return Program.from_ptx(HEAD.format(body=body, grid=grid, cluster=cluster, count=64 * max(ctas, 2)), "pair.ptx")


TENSOR = """// fuzzptx-repro v1
// LAUNCH: kernel=k grid=2,1,1 block=64,1,1 cluster=2,1,1
// BUFFER: g type=u32 count=64 init=random seed=5
// BUFFER: o type=u32 count=128 init=zeros output
// TENSORMAP: tm buffer=g type=u32 dims=16,4 strides=64 box=16,4
.version 8.4
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 g, .param .u64 o, .param .align 64 .b8 tm[128])
.reqntid 64
{
	.reg .pred %p<8>;
	.reg .b32 %r<32>;
	.reg .b64 %rd<12>;
	.reg .b16 %rs<2>;
	.shared .align 1024 .b8 tile[256];
	.shared .align 8 .b64 bar[1];
	ld.param.u64 %rd1, [o];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, tile;
	mov.u32 %r24, %cluster_ctarank;
	setp.eq.u32 %p3, %r1, 0;
	setp.eq.u32 %p6, %r24, 0;
	and.pred %p7, %p3, %p6;
	mov.u64 %rd2, tm;
	cvta.param.u64 %rd3, %rd2;
	@%p3 mbarrier.init.shared::cta.b64 [bar], 1;
	fence.mbarrier_init.release.cluster;
	barrier.cluster.arrive.relaxed.aligned;
	barrier.cluster.wait.aligned;
	mov.u16 %rs1, MASK;
	mov.b32 %r30, 0;
	mov.b32 %r31, 0;
	@%p3 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 256;
	@%p7 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [tile], [%rd3, {%r30, %r31}], [bar], %rs1;
W0:
	mbarrier.try_wait.parity.shared::cta.b64 %p4, [bar], 0;
	@!%p4 bra W0;
	shl.b32 %r21, %r1, 2;
	add.s32 %r22, %r2, %r21;
	ld.shared.u32 %r23, [%r22];
	mad.lo.u32 %r25, %r24, 64, %r1;
	mul.wide.u32 %rd6, %r25, 4;
	add.s64 %rd7, %rd1, %rd6;
	st.global.u32 [%rd7], %r23;
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	ret;
}
"""


def tensor_kernel(mask: int = 3) -> Program:
    """Rank 0 alone issues the tensor copy with ``ctaMask`` ``mask``; every CTA waits on its own
    mbarrier and writes the box it received."""
    return Program.from_ptx(TENSOR.replace("MASK", str(mask)), "mc.ptx")


def probes() -> list[tuple[str, Program]]:
    """(name, program) of the two-CTA kernels the GPU runs beside the compiler-made ones."""
    return [("remote-arrive", kernel()), ("tensor-multicast", tensor_kernel())]
