"""Checker rules that production Hopper kernels lean on (issue 27): warpgroup-uniform branches on
the warp index, Triton's warp-indexed partition table, and the address-aware async-proxy rule.
Each legal kernel has an illegal twin the rule must catch."""
from __future__ import annotations

import pytest

from fuzzptx.oracles.checker import check_module
from fuzzptx.ptx.parse import parse

HEAD = """.version 8.4
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];

.visible .entry k(.param .u64 out, .param .u64 any)
.reqntid {ntid}
{{
	.reg .pred 	%p<8>;
	.reg .b16 	%rs<4>;
	.reg .b32 	%r<40>;
	.reg .b64 	%rd<12>;
	.reg .f32 	%f<8>;
	mov.u32 	%r1, %tid.x;
	mov.b32 	%r2, smem;
	shr.u32 	%r20, %r1, 5;
	shfl.sync.idx.b32 	%r21, %r20, 0, 31, -1;
	ld.param.u64 	%rd9, [any];
	cvt.u32.u64 	%r30, %rd9;
"""
# A at smem+0 (m64: 8 row groups of 1024 bytes), B at smem+16384 (n8: one group); 128B swizzle, SBO 1024.
MMA = """	bfe.u32 	%r10, %r2, 4, 14;
	add.s32 	%r3, %r2, 16384;
	bfe.u32 	%r11, %r3, 4, 14;
	cvt.u64.u32 	%rd1, %r10;
	cvt.u64.u32 	%rd2, %r11;
	or.b64 	%rd3, %rd1, 4611686293305294848;
	or.b64 	%rd4, %rd2, 4611686293305294848;
	mov.pred 	%p7, -1;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd3, %rd4, %p7, 1, 1, 0, 0;
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 	0;
"""
TAIL = """END:
	ld.param.u64 	%rd5, [out];
	st.global.f32 	[%rd5], %f1;
	ret;
}
"""


def kernel(before: str, after: str = "", ntid: int = 256) -> str:
    return HEAD.format(ntid=ntid) + before + MMA + after + TAIL


def rules(text: str) -> list[str]:
    return sorted(f.rule for f in check_module(parse(text, "t.ptx"), layers=("spec",)))


# ------------------------------------------------------------------ branches on the warp index

@pytest.mark.parametrize("bound, divergent", [(4, False), (8, False), (2, True), (5, True)])
def test_a_branch_on_the_warp_index_is_uniform_at_warpgroup_boundaries(bound, divergent):
    t = kernel(f"\tsetp.lt.u32 	%p1, %r21, {bound};\n\t@%p1 bra 	END;\n")
    assert ("spec.aligned.divergent" in rules(t)) == divergent


@pytest.mark.parametrize("cmp, k, c, divergent", [("ge", 7, 1, False), ("gt", 5, 3, False), ("gt", 5, 4, True),
                                                  ("eq", 5, 0, True), ("le", 6, 1, False)])
def test_comparisons_of_tid_shifts(cmp, k, c, divergent):
    t = kernel(f"\tshr.u32 	%r22, %r1, {k};\n\tsetp.{cmp}.u32 	%p1, %r22, {c};\n\t@%p1 bra 	END;\n")
    assert ("spec.aligned.divergent" in rules(t)) == divergent


# ------------------------------------------------------------------ the partition table

def table_kernel(words: str, extra: str = "", first_warp: int = 4) -> str:
    """384 threads; warps >= first_warp read their byte of smem+32768+[0, 12) and branch on it."""
    return kernel(
        f"\tst.shared.v4.b32 	[smem+32768], {{{words}}};\n{extra}\tbar.sync 	0;\n"
        f"\tsetp.lt.u32 	%p1, %r21, {first_warp};\n\t@%p1 bra 	END;\n"
        "\tadd.s32 	%r5, %r2, %r21;\n\tld.shared.b8 	%rs1, [%r5+32768];\n"
        "\tsetp.eq.b16 	%p2, %rs1, 0;\n\t@%p2 bra 	END;\n", ntid=384)


def test_a_warp_indexed_table_with_one_value_per_warpgroup_is_uniform():
    assert rules(table_kernel("0, 16843009, 33686018, 0")) == []


def test_the_warps_that_cannot_reach_the_lookup_do_not_count():
    # warps 0-3 branch away: their group may hold anything (here mixed bytes)
    assert rules(table_kernel("66051, 16843009, 33686018, 0")) == []
    assert "spec.aligned.divergent" in rules(table_kernel("66051, 16843009, 33686018, 0", first_warp=0))


def test_a_table_mixed_within_a_warpgroup_is_divergent():
    assert "spec.aligned.divergent" in rules(table_kernel("0, 16777216, 33686018, 0"))


def test_a_store_that_may_reach_the_table_spoils_it():
    near = "\tand.b32 	%r6, %r1, 7;\n\tadd.s32 	%r7, %r2, %r6;\n\tst.shared.u8 	[%r7+32772], %rs0;\n"
    far = "\tand.b32 	%r6, %r1, 7;\n\tadd.s32 	%r7, %r2, %r6;\n\tst.shared.u8 	[%r7+40000], %rs0;\n"
    unknown = "\tst.shared.u8 	[%r30], %rs0;\n"
    assert "spec.aligned.divergent" in rules(table_kernel("0, 16843009, 33686018, 0", near))
    assert rules(table_kernel("0, 16843009, 33686018, 0", far)) == []
    assert "spec.aligned.divergent" in rules(table_kernel("0, 16843009, 33686018, 0", unknown))


# ------------------------------------------------------------------ async proxy

@pytest.mark.parametrize("write, fires", [
    ("st.shared.u32 	[smem+32768], %r1;", False),      # past A (8 KB) and B (1 KB at 16384)
    ("st.shared.u32 	[smem+64], %r1;", True),          # inside A
    ("st.shared.u32 	[smem+17404], %r1;", True),       # the last bytes of B's one 128-byte row group
    ("st.shared.u32 	[smem+17408], %r1;", False),      # just past B
    ("st.shared.u32 	[%r30], %r1;", True),             # an address nothing bounds
    ("stmatrix.sync.aligned.m8n8.x4.shared.b16 	[%r8], {%r1, %r1, %r1, %r1};", False),
])
def test_generic_writes_fire_only_where_the_wgmma_reads(write, fires):
    pre = "\tand.b32 	%r9, %r1, 127;\n\tshl.b32 	%r12, %r9, 4;\n\tadd.s32 	%r13, %r2, %r12;\n\tadd.s32 	%r8, %r13, 20480;\n" \
        if "%r8" in write else ""
    t = kernel(pre + "\t" + write + "\n\tbar.sync 	0;\n")
    assert ("spec.proxy.fence-missing" in rules(t)) == fires
    fenced = kernel(pre + "\t" + write + "\n\tfence.proxy.async.shared::cta;\n\tbar.sync 	0;\n")
    assert "spec.proxy.fence-missing" not in rules(fenced)


def test_a_tma_store_of_generically_written_smem_needs_the_fence():
    store = "\tcvta.param.u64 	%rd7, %rd9;\n\tcp.async.bulk.tensor.2d.global.shared::cta.bulk_group 	[%rd9, {%r1, %r1}], [%r6];\n" \
            "\tcp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group.read 	0;\n"
    write = "\tadd.s32 	%r6, %r2, 32768;\n\tst.shared.u32 	[%r6], %r1;\n\tbar.sync 	0;\n"
    assert "spec.proxy.fence-missing" in rules(kernel(write, store))
    assert "spec.proxy.fence-missing" not in rules(kernel(write.replace("bar.sync", "fence.proxy.async.shared::cta;\n\tbar.sync"), store))


def test_tma_writes_are_async_proxy_cp_async_writes_generic():
    """A TMA load writes through the async proxy (the mbarrier orders it); cp.async (non-bulk) writes
    through the generic proxy, so wgmma reading its bytes needs the fence, as Triton emits it."""
    tma = ("\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes 	[%r2], [%rd9, {%r1, %r1}], [%r30];\n"
           "\tbar.sync 	0;\n")
    assert "spec.proxy.fence-missing" not in rules(kernel(tma))
    cp = "\tcp.async.ca.shared.global 	[%r2+4096], [%rd9], 16;\n\tcp.async.wait_all;\n\tbar.sync 	0;\n"
    assert "spec.proxy.fence-missing" in rules(kernel(cp))
    assert "spec.proxy.fence-missing" not in rules(kernel(cp.replace("bar.sync", "fence.proxy.async.shared::cta;\n\tbar.sync")))


def test_a_tma_store_is_checked_without_any_wgmma():
    body = ("\tadd.s32 	%r6, %r2, 32768;\n\tst.shared.u32 	[%r6], %r1;\n\tbar.sync 	0;\n"
            "\tcp.async.bulk.tensor.2d.global.shared::cta.bulk_group 	[%rd9, {%r1, %r1}], [%r6];\n"
            "\tcp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group.read 	0;\n")
    t = HEAD.format(ntid=128) + body + TAIL
    assert rules(t) == ["spec.proxy.fence-missing"]
    assert rules(t.replace("bar.sync", "fence.proxy.async.shared::cta;\n\tbar.sync")) == []


# ------------------------------------------------------------------ mbarrier identities

def _mainloop(**kw) -> str:
    from fuzzptx.strategies.mainloops import MainloopPlan, kernel_text
    return kernel_text(MainloopPlan(**{"ntid": 128, "stages": 2, "tiles": 4, "copy_first": False,
                                       "all_arrive": False, "setmaxnreg": False, "seed": 0, **kw}))


def test_mbarrier_rules_are_quiet_on_a_legal_mainloop():
    assert rules(_mainloop()) == []


def test_a_barrier_never_initialised():
    t = _mainloop().replace("\t@%p3 mbarrier.init.shared::cta.b64 [bar+8], 1;\n", "")  # (the emitter's form)
    found = check_module(parse(t, "t.ptx"), layers=("spec",))
    lines = {f.line for f in found if f.rule == "spec.mbarrier.no-init"}
    assert lines and all("bar+8" in t.splitlines()[n - 1] for n in lines)


def test_a_barrier_no_expect_tx_raises():
    t = _mainloop().replace("mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar+8], 512;",
                            "mbarrier.arrive.shared::cta.b64 _, [bar+8];")
    found = [f for f in check_module(parse(t, "t.ptx"), layers=("spec",)) if f.rule == "spec.mbarrier.no-expect-tx"]
    assert len(found) == 2 and all("[bar+8]" in t.splitlines()[f.line - 1] for f in found)
    assert rules(_mainloop(stages=1).replace("\t@%p3 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 512;\n",
                                             "", 1)) == []  # another tile's expect_tx on that barrier may match


@pytest.mark.parametrize("shift, divergent", [(7, False), (5, True)])
def test_setmaxnreg_needs_a_warpgroup_uniform_branch(shift, divergent):
    t = kernel(f"\tshr.u32 	%r22, %r1, {shift};\n\tsetp.eq.u32 	%p1, %r22, 0;\n\t@%p1 bra 	SKIP;\n"
               "\tsetmaxnreg.dec.sync.aligned.u32 	40;\nSKIP:\n")
    found = [f for f in check_module(parse(t, "t.ptx"), layers=("spec",)) if f.rule == "spec.aligned.divergent"]
    assert bool(found) == divergent and all("setmaxnreg" in f.message for f in found)


# ---------------------------------------------------------------- a stage released under an in-flight wgmma
# One warpgroup, two stages of one n8k16 B tile (256 bytes, no swizzle: LBO 128, SBO 256) at
# stg+0 and stg+1024; thread 0 fills them with bulk copies.  K-step 0 reads stage 0, K-step 1
# stage 1 with depth 1 (one wgmma kept in flight); then stage {release} is released and refilled.
PIPE = """.version 8.4
.target sm_90a
.address_size 64

.visible .entry k(.param .u64 src, .param .u64 out)
.reqntid 128
{{
	.reg .pred 	%p<8>;
	.reg .b32 	%r<24>;
	.reg .b64 	%rd<12>;
	.reg .f32 	%f<8>;
	.shared .align 1024 .b8 stg[2048];
	.shared .align 8 .b64 full[2];
	.shared .align 8 .b64 empty[2];
	mov.u32 	%r1, %tid.x;
	setp.eq.u32 	%p1, %r1, 0;
	@%p1 mbarrier.init.shared::cta.b64 	[full+0], 1;
	@%p1 mbarrier.init.shared::cta.b64 	[full+8], 1;
	@%p1 mbarrier.init.shared::cta.b64 	[empty+0], 128;
	@%p1 mbarrier.init.shared::cta.b64 	[empty+8], 128;
	fence.mbarrier_init.release.cluster;
	bar.sync 	0;
	ld.param.u64 	%rd1, [src];
	mov.u32 	%r2, stg;
	shr.u32 	%r3, %r2, 4;
	cvt.u64.u32 	%rd2, %r3;
	or.b64 	%rd3, %rd2, {const};
	add.u32 	%r4, %r2, 1024;
	shr.u32 	%r5, %r4, 4;
	cvt.u64.u32 	%rd4, %r5;
	or.b64 	%rd5, %rd4, {const};
	mov.b32 	%r10, 0;
	mov.b32 	%r11, 0;
	mov.b32 	%r12, 0;
	mov.b32 	%r13, 0;
	@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 	_, [full+0], 256;
	@%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[stg+0], [%rd1], 256, [full+0];
	@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 	_, [full+8], 256;
	@%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[stg+1024], [%rd1+256], 256, [full+8];
W0:
	mbarrier.try_wait.parity.shared::cta.b64 	%p2, [full+0], 0;
	@!%p2 bra 	W0;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 	{{%f0, %f1, %f2, %f3}}, {{%r10, %r11, %r12, %r13}}, %rd3, 0, 1, 1, 0;
	wgmma.commit_group.sync.aligned;
W1:
	mbarrier.try_wait.parity.shared::cta.b64 	%p3, [full+8], 0;
	@!%p3 bra 	W1;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 	{{%f0, %f1, %f2, %f3}}, {{%r10, %r11, %r12, %r13}}, %rd5, 1, 1, 1, 0;
	wgmma.commit_group.sync.aligned;
{before}	wgmma.wait_group.sync.aligned 	{depth};
{after}	@!%p1 bra 	SKIP;
W2:
	mbarrier.try_wait.parity.shared::cta.b64 	%p4, [empty+{bar}], 0;
	@!%p4 bra 	W2;
	mbarrier.arrive.expect_tx.shared::cta.b64 	_, [full+{bar}], 256;
	cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[stg+{dst}], [%rd1+512], 256, [full+{bar}];
SKIP:
	wgmma.wait_group.sync.aligned 	0;
	ld.param.u64 	%rd6, [out];
	st.global.f32 	[%rd6], %f0;
	ret;
}}
"""
_B_CONST = "0x1000080000"  # LBO 128, SBO 256, no swizzle (fuzzptx.isa.layouts.MatrixDescriptor(0, 128, 256).encode())


def pipe(release: int, early: bool, depth: int) -> str:
    arrive = f"\tmbarrier.arrive.shared::cta.b64 \t_, [empty+{8 * release}];\n"
    return PIPE.format(const=_B_CONST, before=arrive if early else "", after="" if early else arrive, depth=depth,
                       bar=8 * release, dst=1024 * release)


def test_the_descriptor_constant_is_the_tables():
    from fuzzptx.isa.layouts import MatrixDescriptor
    assert hex(int(MatrixDescriptor(0, 128, 256).encode())) == _B_CONST


@pytest.mark.parametrize("release, early, depth, fires", [
    (0, False, 1, False),  # depth 1: stage 0's wgmma retired, stage 1's still reads stage 1 only
    (1, False, 0, False),  # everything retired before the release
    (1, False, 1, True),   # stage 1 released (and refilled) while its wgmma may be in flight
    (0, True, 1, True),    # released before the wait_group that retires stage 0's wgmma
    (1, True, 0, True),    # the producer-overwrite twin: arrive, then wait_group 0
])
def test_a_stage_released_under_an_in_flight_wgmma(release, early, depth, fires):
    found = rules(pipe(release, early, depth))
    assert ("spec.mbarrier.release-in-flight" in found) == fires, found
    assert [r for r in found if r != "spec.mbarrier.release-in-flight"] == []


def test_the_release_rule_never_guesses_with_unbounded_stages():
    # the refill's destination comes from a parameter: nothing bounds it, so nothing is reported
    text = pipe(0, True, 1).replace("[stg+0], [%rd1+512]", "[%r20], [%rd1+512]").replace(
        "\tmov.u32 \t%r2, stg;", "\tmov.u32 \t%r2, stg;\n\tld.param.u32 \t%r20, [out];")
    assert "spec.mbarrier.release-in-flight" not in rules(text)


def test_the_release_rule_bounds_mn_major_operands():
    from fuzzptx.oracles.checker.spec_rules import _ANY, _wgmma_reads
    from fuzzptx.oracles.checker.uniformity import single_defs
    mod = parse(pipe(1, True, 0).replace(", %rd5, 1, 1, 1, 0;", ", %rd5, 1, 1, 1, 1;"), "t.ptx")
    fn = mod.function("k")
    wg = [i for i in fn.instructions() if i.opcode.startswith("wgmma.mma_async")][1]
    (rng,) = _wgmma_reads(wg, single_defs(fn))
    assert rng != _ANY and rng[0] == "stg" and rng[1] <= 1024 < rng[2] <= 2048
    assert "spec.mbarrier.release-in-flight" in rules(mod_text := pipe(1, True, 0).replace(
        ", %rd5, 1, 1, 1, 0;", ", %rd5, 1, 1, 1, 1;")), mod_text


def test_the_release_kernels_are_real_ptx():
    from fuzzptx.oracles.ptxas import compile_batch
    texts = [pipe(r, e, d) for r, e, d in ((0, False, 1), (1, True, 0), (1, False, 1))]
    for r in compile_batch(texts):
        assert r.accepted, r.stderr


def test_a_stage_read_before_its_barrier_is_waited_on():
    legal = pipe(1, False, 0)
    # the first wgmma (reading stage 0) moved above the wait on stage 0's full barrier
    wait = "W0:\n\tmbarrier.try_wait.parity.shared::cta.b64 \t%p2, [full+0], 0;\n\t@!%p2 bra \tW0;\n"
    first = legal.index("\twgmma.fence.sync.aligned;")
    mma = legal[first:legal.index("W1:")]
    assert wait in legal and mma.count("wgmma.mma_async") == 1
    early = legal.replace(wait, "").replace(mma, mma + wait)
    assert "spec.mbarrier.read-before-wait" not in rules(legal)
    assert rules(early) == ["spec.mbarrier.read-before-wait"]
    # a wait on another barrier does not settle stage 0's copy; one on a barrier nothing bounds
    # may be the right one, so nothing is reported
    other = legal.replace("[full+0], 0;", "[full+8], 0;", 1)
    assert rules(other) == ["spec.mbarrier.read-before-wait"]
    unbounded = legal.replace("[full+0], 0;", "[%r20], 0;", 1).replace(
        "\tmov.u32 \t%r2, stg;", "\tmov.u32 \t%r2, stg;\n\tld.param.u32 \t%r20, [out];")
    assert "spec.mbarrier.read-before-wait" not in rules(unbounded)
