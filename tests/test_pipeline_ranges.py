"""Issue 40: the uniformity and proxy rules read what compilers write.  Pipeline stage addresses
kept in loop counters (``stage = i mod 3`` by a magic multiply), a scratch area bounded by its
store's guard, ``or`` of disjoint bit fields, and the tensor-map proxy's own acquire.  Each legal
kernel has an illegal twin the rule still catches; the Triton slice that drew 114 false errors
is clean and the SASS judge judges every compiler-made kernel of tests/data."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.checker.values import _udiv_magic
from fuzzptx.oracles.sass import disassembler
from fuzzptx.ptx.parse import parse

DATA = Path(__file__).resolve().parent / "data"
MAGIC3 = -6148914691236517205  # 0xAAAAAAAAAAAAAAAB: with a shift of 1, x / 3 for every 64-bit x


def rules(text: str) -> list[str]:
    return sorted(f.rule for f in check_module(parse(text, "t.ptx"), layers=("spec",)))


# ------------------------------------------------------------------ division by magic numbers

@pytest.mark.parametrize("d", range(2, 40))
def test_a_magic_multiply_is_a_division_only_where_exact_for_every_operand(d):
    """Exhaustive over 12-bit operands: every (multiplier, shift) the recogniser accepts divides
    exactly, and it accepts the round-up multiplier wherever that one is exact."""
    bits = 12
    for shift in range(0, 6):
        for mult in {-(-(1 << (bits + shift)) // d), (1 << (bits + shift)) // d}:
            if mult >= 1 << bits:
                continue  # no bits-wide immediate
            got = _udiv_magic(mult, shift, bits)
            exact = all((x * mult) >> (bits + shift) == x // d for x in range(1 << bits))
            if got is not None:
                assert got == d and exact
            elif mult == -(-(1 << (bits + shift)) // d) < 1 << bits and mult * d <= (1 << (bits + shift)) + (1 << shift):
                pytest.fail(f"missed d={d} shift={shift}")


def test_the_magic_of_triton_three_stage_rings_is_a_division_by_three():
    assert _udiv_magic(MAGIC3, 1, 64) == 3
    assert _udiv_magic(MAGIC3 + 1, 1, 64) is None  # off by one: not exact for every 64-bit operand


# ------------------------------------------------------------------ stage rings and the proxy rule

def ring_kernel(write: str, magic: int = MAGIC3, i_step: int = 1, a_step: int = 8192) -> str:
    """Three 8 KB stages at smem + 8192*(i mod 3), each read by a wgmma (A and B, 128-byte swizzle):
    the stage offset is ``a - 24576*(i / 3)`` with ``a = 8192*i`` advanced alongside ``i`` -- the
    way LLVM strength-reduces Triton's ring.  ``write``: a generic shared store before the loop,
    with no fence.proxy.async."""
    return f""".version 8.4
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];

.visible .entry k(.param .u64 out, .param .u32 n)
.reqntid 128
{{
	.reg .pred 	%p<8>;
	.reg .b32 	%r<40>;
	.reg .b64 	%rd<20>;
	.reg .f32 	%f<8>;
	mov.u32 	%r1, %tid.x;
	mov.b32 	%r2, smem;
	ld.param.u32 	%r3, [n];
	{write}
	bar.sync 	0;
	mov.f32 	%f1, 0f00000000;
	mov.f32 	%f2, 0f00000000;
	mov.f32 	%f3, 0f00000000;
	mov.f32 	%f4, 0f00000000;
	mov.pred 	%p7, -1;
	mov.b64 	%rd10, 0;
	mov.b32 	%r20, %r2;
$LOOP:
	mul.hi.u64 	%rd11, %rd10, {magic};
	shr.u64 	%rd12, %rd11, 1;
	cvt.u32.u64 	%r21, %rd12;
	mul.lo.s32 	%r22, %r21, 24576;
	sub.s32 	%r23, %r20, %r22;
	bfe.u32 	%r10, %r23, 4, 14;
	cvt.u64.u32 	%rd1, %r10;
	or.b64 	%rd3, %rd1, 4611686293305294848;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%f1, %f2, %f3, %f4}}, %rd3, %rd3, %p7, 1, 1, 0, 0;
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 	0;
	add.s64 	%rd10, %rd10, {i_step};
	add.s32 	%r20, %r20, {a_step};
	cvt.u32.u64 	%r25, %rd10;
	setp.lt.u32 	%p1, %r25, %r3;
	@%p1 bra 	$LOOP;
	ld.param.u64 	%rd5, [out];
	st.global.f32 	[%rd5], %f1;
	ret;
}}
"""


PAST_RING = "st.shared.u32 	[smem+24576], %r1;"  # the stages read smem + [0, 24576)
IN_RING = "st.shared.u32 	[smem+24572], %r1;"    # the last word of stage 2


def test_a_write_past_a_three_stage_ring_needs_no_proxy_fence():
    assert rules(ring_kernel(PAST_RING)) == []


def test_a_write_into_the_last_stage_of_the_ring_needs_the_fence():
    assert "spec.proxy.fence-missing" in rules(ring_kernel(IN_RING))
    fenced = ring_kernel(IN_RING + "\n\tfence.proxy.async.shared::cta;")
    assert "spec.proxy.fence-missing" not in rules(fenced)


@pytest.mark.parametrize("twin", [
    dict(magic=MAGIC3 + 1),      # not exact: no floor, no bound
    dict(i_step=2),              # the counters out of step: 8192*i - 24576*(2i/3) is no stage
    dict(a_step=16384),          # the same, the other way round
])
def test_a_ring_whose_stage_is_not_proved_meets_everything(twin):
    assert "spec.proxy.fence-missing" in rules(ring_kernel(PAST_RING, **twin))


@pytest.mark.parametrize("where", [
    # the stage counter advanced only on some iterations: it is no multiple of the iteration count
    "\tsetp.eq.u32 	%p2, %r3, 7;\n\t@%p2 bra 	$SKIP;\n\tadd.s32 	%r20, %r20, 8192;\n$SKIP:\n",
    # advanced in an inner loop: several times per iteration
    "\tmov.b32 	%r30, 0;\n$INNER:\n\tadd.s32 	%r20, %r20, 8192;\n\tadd.s32 	%r30, %r30, 1;\n"
    "\tsetp.lt.u32 	%p2, %r30, %r3;\n\t@%p2 bra 	$INNER;\n",
])
def test_a_counter_not_advanced_once_per_iteration_is_no_induction_variable(where):
    t = ring_kernel(PAST_RING).replace("\tadd.s32 	%r20, %r20, 8192;\n", where)
    assert where in t
    assert "spec.proxy.fence-missing" in rules(t)


# ------------------------------------------------------------------ the scratch area's guard

def scratch_kernel(guard: str, base: int) -> str:
    """A (8 KB at smem) and B (1 KB at 16384) read by one wgmma, after lanes of the warpgroup
    zero a scratch area at smem + base + 4*(t & 127) (Triton's tensor-map scratch: ``t & 127 < 32``
    zeroes 128 bytes)."""
    store = "\tand.b32 	%r9, %r1, 127;\n\tshl.b32 	%r12, %r9, 2;\n\tadd.s32 	%r13, %r2, %r12;\n"
    if guard:
        store += f"\tsetp.{guard}.u32 	%p3, %r9, 32;\n\t@{'!' if guard == 'ge' else ''}%p3 st.shared.b32 	[%r13+{base}], %r1;\n"
    else:
        store += f"\tst.shared.b32 	[%r13+{base}], %r1;\n"
    return f""".version 8.4
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];

.visible .entry k(.param .u64 out)
.reqntid 128
{{
	.reg .pred 	%p<8>;
	.reg .b32 	%r<40>;
	.reg .b64 	%rd<12>;
	.reg .f32 	%f<8>;
	mov.u32 	%r1, %tid.x;
	mov.b32 	%r2, smem;
{store}	bar.sync 	0;
	bfe.u32 	%r10, %r2, 4, 14;
	add.s32 	%r3, %r2, 16384;
	bfe.u32 	%r11, %r3, 4, 14;
	cvt.u64.u32 	%rd1, %r10;
	cvt.u64.u32 	%rd2, %r11;
	or.b64 	%rd3, %rd1, 4611686293305294848;
	or.b64 	%rd4, %rd2, 4611686293305294848;
	mov.pred 	%p7, -1;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%f1, %f2, %f3, %f4}}, %rd3, %rd4, %p7, 1, 1, 0, 0;
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 	0;
	ld.param.u64 	%rd5, [out];
	st.global.f32 	[%rd5], %f1;
	ret;
}}
"""


@pytest.mark.parametrize("guard", ["lt", "ge"])
def test_a_guarded_scratch_store_below_b_needs_no_fence(guard):
    # 32 lanes zero smem + [16256, 16384): B starts at 16384
    assert rules(scratch_kernel(guard, 16256)) == []


def test_the_same_store_without_its_guard_reaches_b():
    assert "spec.proxy.fence-missing" in rules(scratch_kernel("", 16256))


def test_a_guarded_scratch_store_that_overlaps_b_needs_the_fence():
    assert "spec.proxy.fence-missing" in rules(scratch_kernel("lt", 16260))


# ------------------------------------------------------------------ bit fields joined by or

def or_kernel(shift: int, mask: int) -> str:
    """A store at smem + 8704 + ((t << 8) & 7168 | (t << shift) & mask); B is read from 16384."""
    return scratch_kernel("", 0).replace(
        "\tand.b32 	%r9, %r1, 127;\n\tshl.b32 	%r12, %r9, 2;\n\tadd.s32 	%r13, %r2, %r12;\n"
        "\tst.shared.b32 	[%r13+0], %r1;\n",
        f"\tshl.b32 	%r14, %r1, 8;\n\tand.b32 	%r15, %r14, 7168;\n\tshl.b32 	%r16, %r1, {shift};\n"
        f"\tand.b32 	%r17, %r16, {mask};\n\tor.b32 	%r18, %r15, %r17;\n\tadd.s32 	%r19, %r2, %r18;\n"
        "\tst.shared.b32 	[%r19+8704], %r1;\n")


def test_or_of_disjoint_fields_is_bounded_by_their_bits():
    # 7168 | 384 = 7552: the store ends at 8704 + 7556 < 16384 (a power-of-two bound, 8191, would not)
    assert rules(or_kernel(2, 384)) == []


def test_or_with_a_field_that_reaches_b_needs_the_fence():
    # (t << 6) & 8064 sets bits up to 8064 (t < 128): 8704 + 8068 > 16384
    assert "spec.proxy.fence-missing" in rules(or_kernel(6, 8064))


# ------------------------------------------------------------------ the partition table beside a ring of barriers

def table_ring_kernel(bar_base: int) -> str:
    """384 threads: warps 4-11 read their byte of smem + 32768 + [4, 12) and branch on it to a
    wgmma; a loop arrives on three mbarriers at smem + bar_base + 8*(i mod 3) (stage by magic)."""
    return f""".version 8.4
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];

.visible .entry k(.param .u64 out, .param .u32 n)
.reqntid 384
{{
	.reg .pred 	%p<8>;
	.reg .b16 	%rs<4>;
	.reg .b32 	%r<40>;
	.reg .b64 	%rd<20>;
	.reg .f32 	%f<8>;
	mov.u32 	%r1, %tid.x;
	mov.b32 	%r2, smem;
	shr.u32 	%r20, %r1, 5;
	shfl.sync.idx.b32 	%r21, %r20, 0, 31, -1;
	ld.param.u32 	%r4, [n];
	st.shared.v4.b32 	[smem+32768], {{0, 16843009, 33686018, 0}};
	mov.b64 	%rd10, 0;
	mov.b32 	%r24, %r2;
$RING:
	mul.hi.u64 	%rd11, %rd10, {MAGIC3};
	shr.u64 	%rd12, %rd11, 1;
	cvt.u32.u64 	%r25, %rd12;
	mul.lo.s32 	%r26, %r25, 24;
	sub.s32 	%r27, %r24, %r26;
	mbarrier.arrive.shared::cta.b64 	%rd13, [%r27+{bar_base}];
	add.s64 	%rd10, %rd10, 1;
	add.s32 	%r24, %r24, 8;
	cvt.u32.u64 	%r28, %rd10;
	setp.lt.u32 	%p4, %r28, %r4;
	@%p4 bra 	$RING;
	bar.sync 	0;
	setp.lt.u32 	%p1, %r21, 4;
	@%p1 bra 	END;
	add.s32 	%r5, %r2, %r21;
	ld.shared.b8 	%rs1, [%r5+32768];
	setp.eq.b16 	%p2, %rs1, 0;
	@%p2 bra 	END;
	bfe.u32 	%r10, %r2, 4, 14;
	cvt.u64.u32 	%rd1, %r10;
	or.b64 	%rd3, %rd1, 4611686293305294848;
	mov.pred 	%p7, -1;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%f1, %f2, %f3, %f4}}, %rd3, %rd3, %p7, 1, 1, 0, 0;
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 	0;
END:
	ld.param.u64 	%rd5, [out];
	st.global.f32 	[%rd5], %f1;
	ret;
}}
"""


def _divergent(text: str) -> bool:
    return any(f.rule == "spec.aligned.divergent" for f in check_module(parse(text, "t.ptx"), layers=("spec",)))


def test_a_table_beside_a_ring_of_barriers_is_uniform():
    assert not _divergent(table_ring_kernel(32800))  # barriers at [32800, 32824): past the table


def test_a_ring_whose_first_barrier_overlaps_the_table_spoils_it():
    assert _divergent(table_ring_kernel(32768))  # stage 0's barrier is bytes [32768, 32776)


# ------------------------------------------------------------------ the tensor-map proxy

def tensormap_kernel(acquire: str) -> str:
    """A tensor map built in shared memory (zeroed, ``tensormap.replace``), copied out with
    ``tensormap.cp_fenceproxy`` (the release), then used by a tensor copy."""
    return f""".version 8.4
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];

.visible .entry k(.param .u64 maps, .param .u64 src)
.reqntid 128
{{
	.reg .pred 	%p<8>;
	.reg .b32 	%r<40>;
	.reg .b64 	%rd<20>;
	mov.u32 	%r1, %tid.x;
	mov.b32 	%r2, smem;
	ld.param.u64 	%rd1, [maps];
	ld.param.u64 	%rd2, [src];
	cvta.to.global.u64 	%rd3, %rd1;
	add.s64 	%rd4, %rd3, 128;
	and.b32 	%r3, %r1, 127;
	setp.lt.u32 	%p1, %r3, 32;
	shl.b32 	%r4, %r3, 2;
	add.s32 	%r5, %r2, %r4;
	@%p1 st.shared.b32 	[%r5+0], 0;
	bar.warp.sync 	-1;
	cvt.u64.u32 	%rd5, %r2;
	tensormap.replace.tile.global_address.shared::cta.b1024.b64 	[%rd5], %rd2;
	tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned 	[%rd3], [%rd5], 128;
	{acquire}
	bar.sync 	0;
	add.s32 	%r6, %r2, 1024;
	add.s32 	%r7, %r2, 512;
	mbarrier.init.shared::cta.b64 	[%r7], 1;
	mbarrier.arrive.expect_tx.shared::cta.b64 	_, [%r7], 4096;
	cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes 	[%r6], [%rd3, {{%r1, %r1}}], [%r7];
	ret;
}}
"""


def test_a_map_acquired_after_its_release_is_clean():
    assert "spec.proxy.tensormap-acquire-missing" not in rules(
        tensormap_kernel("fence.proxy.tensormap::generic.acquire.gpu 	[%rd3], 128;"))


@pytest.mark.parametrize("acquire", ["", "fence.proxy.tensormap::generic.acquire.gpu 	[%rd4], 128;"])
def test_a_copy_through_a_map_not_acquired_is_caught(acquire):
    # no acquire at all, or one on another map (%rd4 = %rd3 + 128)
    assert "spec.proxy.tensormap-acquire-missing" in rules(tensormap_kernel(acquire))


def test_the_scratch_area_the_map_is_built_in_is_not_the_async_proxys():
    assert "spec.proxy.fence-missing" not in rules(
        tensormap_kernel("fence.proxy.tensormap::generic.acquire.gpu 	[%rd3], 128;"))


# ------------------------------------------------------------------ the Triton slice

def test_the_slice_is_in_the_manifest_with_the_shapes_it_promises():
    m = json.loads((DATA / "triton" / "MANIFEST.json").read_text())
    slice_ = [k for k in m["kernels"] if k.get("slice") == "issue40"]
    assert len(slice_) >= 25
    names = " ".join(k["file"] for k in slice_)
    for part in ("persistent_ws", "matmul_ws_", "matmul_tma_", "devdesc", "128x128x64", "128x256x64", "64x64x64",
                 "w4s3", "w8s4"):
        assert part in names, part
    # the kernels that drew the false alarms: a warpgroup dispatch table (four warps) and a 3-stage ring
    assert sum("setmaxnreg" in (DATA / "triton" / k["file"]).read_text() for k in slice_) >= 6


@pytest.mark.parametrize("name", [
    "matmul_tma_persistent_ws_fp16_64x128x64_w4s3.ptx", "matmul_ws_fp16_64x64x64_w4s3.ptx",
    "matmul_devdesc_persistent_ws_fp16_128x128x64_w4s3.ptx",
])
def test_the_kernels_that_drew_false_alarms_are_clean(name):
    found = check_module(parse((DATA / "triton" / name).read_text(), name), layers=("isa", "spec"))
    assert [f"{f.rule}@{f.line}" for f in found if f.severity == "error"] == []


#: real UB in compiler output, documented where each corpus is tested: CuTe's cp.async fill read by
#: wgmma with no fence.proxy.async (test_cutlass_corpus), accumulators zeroed after wgmma.fence by
#: nvcc's scheduling of inline asm (test_checker_spec.KNOWN_TRUE_POSITIVES)
TRUE_POSITIVES = {"cutlass/cute_wgmma_cpasync_sm90.ptx": {"spec.proxy.fence-missing"},
                  "nvcc/wgmma_register_a.ptx": {"spec.fence.register-access"},
                  "wgmma_f16_regA.ptx": {"spec.fence.register-access"}}


@pytest.mark.slow
@pytest.mark.skipif(disassembler() is None, reason="no disassembler (pip install nvidia-cuda-nvdisasm)")
def test_every_compiler_made_kernel_is_clean_and_judged_by_the_sass_rules():
    """Triton (the slice included), CUTLASS and nvcc output: no isa/spec error but the documented
    true positives, and the SASS judge judges every other kernel with a wgmma (none skipped as
    illegal).  ``python -m support.compiler_kernels`` prints the same figures."""
    from support.compiler_kernels import files, judge_all

    rows = judge_all(files())
    assert len(rows) >= 90
    wrong = {r.file: sorted({e.split("@")[0] for e in r.errors}) for r in rows
             if {e.split("@")[0] for e in r.errors} != TRUE_POSITIVES.get(r.file, set())}
    assert wrong == {}
    skipped = [r.file for r in rows if r.sass.startswith("skipped") and r.file not in TRUE_POSITIVES]
    assert skipped == []
    assert sum(r.sass == "clean" or r.sass.endswith("hazard(s)") for r in rows) >= len(rows) - len(TRUE_POSITIVES) - 10


# ------------------------------------------------------------------ values of parameters under divergent control

def late_predicate_kernel(pred: str) -> str:
    """A loop each thread leaves after its own trip count (``%tid.x & 7`` iterations) computes
    ``pred`` into %p5; after it, a branch on %p5 skips a wgmma."""
    return f""".version 8.4
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 smem[];

.visible .entry k(.param .u64 out, .param .u32 n)
.reqntid 128
{{
	.reg .pred 	%p<8>;
	.reg .b32 	%r<40>;
	.reg .b64 	%rd<12>;
	.reg .f32 	%f<8>;
	mov.u32 	%r1, %tid.x;
	mov.b32 	%r2, smem;
	and.b32 	%r3, %r1, 7;
	mov.b32 	%r6, 0;
$LOOP:
	{pred}
	add.s32 	%r6, %r6, 1;
	setp.lt.u32 	%p1, %r6, %r3;
	@%p1 bra 	$LOOP;
	@%p5 bra 	END;
	bfe.u32 	%r10, %r2, 4, 14;
	cvt.u64.u32 	%rd1, %r10;
	or.b64 	%rd3, %rd1, 4611686293305294848;
	mov.pred 	%p7, -1;
	wgmma.fence.sync.aligned;
	wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%f1, %f2, %f3, %f4}}, %rd3, %rd3, %p7, 1, 1, 0, 0;
	wgmma.commit_group.sync.aligned;
	wgmma.wait_group.sync.aligned 	0;
END:
	ld.param.u64 	%rd5, [out];
	st.global.f32 	[%rd5], %f1;
	ret;
}}
"""


@pytest.mark.parametrize("pred", [
    "ld.param.u32 	%r5, [n];\n\tsetp.lt.u32 	%p5, %r5, 64;",
    "mov.u32 	%r5, %ctaid.x;\n\tmov.u32 	%r7, %nctaid.x;\n\tadd.s32 	%r8, %r5, %r7;\n\tsetp.lt.u32 	%p5, %r8, 64;",
])
def test_a_predicate_of_parameters_and_cta_ids_stays_uniform_after_a_divergent_loop(pred):
    assert not _divergent(late_predicate_kernel(pred))


@pytest.mark.parametrize("pred", [
    "setp.lt.u32 	%p5, %r6, 3;",                                       # the per-thread trip count
    "ld.shared.u32 	%r5, [smem+64];\n\tsetp.lt.u32 	%p5, %r5, 64;",   # memory may change between iterations
    "ld.param.u32 	%r5, [n];\n\tshfl.sync.idx.b32 	%r9, %r5, 0, 31, -1;\n\tsetp.lt.u32 	%p5, %r9, 64;",
])
def test_a_predicate_that_may_differ_between_iterations_is_divergent(pred):
    assert _divergent(late_predicate_kernel(pred))


def test_a_parameter_read_only_on_some_paths_is_divergent():
    """The one definition of %r5 runs only where %laneid < 16: other threads read it undefined."""
    t = late_predicate_kernel("setp.lt.u32 	%p5, %r5, 64;").replace(
        "\tand.b32 	%r3, %r1, 7;\n", "\tand.b32 	%r3, %r1, 7;\n\tmov.u32 	%r11, %laneid;\n"
        "\tsetp.lt.u32 	%p6, %r11, 16;\n\t@%p6 bra 	SKIP;\n\tld.param.u32 	%r5, [n];\nSKIP:\n")
    assert _divergent(t)


def test_an_acquire_on_the_same_address_computed_again_counts():
    t = tensormap_kernel("add.s64 	%rd6, %rd3, 0;\n\tcvta.to.global.u64 	%rd7, %rd1;\n"
                         "\tfence.proxy.tensormap::generic.acquire.gpu 	[%rd7], 128;")
    assert "spec.proxy.tensormap-acquire-missing" not in rules(t)


def test_a_uniform_branch_that_only_some_threads_reach_still_splits_the_warpgroup():
    """%p5 is uniform where it is computed, but only threads with %tid.x >= 64 test it: the fence
    under it runs in a part of the warpgroup."""
    t = late_predicate_kernel("ld.param.u32 	%r5, [n];\n\tsetp.lt.u32 	%p5, %r5, 64;").replace(
        "\t@%p5 bra 	END;\n", "\tsetp.lt.u32 	%p6, %r1, 64;\n\t@%p6 bra 	END;\n\t@%p5 bra 	END;\n")
    assert _divergent(t)
