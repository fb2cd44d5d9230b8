"""Spec-layer rules of the checker on hand-written kernels: each rule fires where the PTX ISA says
the behaviour is undefined, at the right line, and stays quiet on the legal twin."""
from __future__ import annotations

import pathlib

import pytest

from fuzzptx.oracles.checker import check_module
from support.experiments import (
    A_REGS, COMMIT, DIV, FENCE, PRE, UNI, WAIT, WAIT1, kernel, store, wg,
)
from fuzzptx.ptx.parse import parse

DATA = pathlib.Path(__file__).parent / "data"


def spec(text: str) -> list:
    return check_module(parse(text, "t.ptx"), layers=("spec",))


def rules(text: str) -> list[tuple[str, int | None]]:
    return sorted((f.rule, f.line) for f in spec(text))


def line(text: str, needle: str, nth: int = 0) -> int:
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    return hits[nth]


LEGAL = kernel([FENCE, wg(), COMMIT, WAIT] + store())


def test_legal_pipeline_is_clean():
    assert rules(LEGAL) == []


# ------------------------------------------------------------------ fences


def test_missing_fence_before_first_wgmma():
    t = kernel([wg(), COMMIT, WAIT] + store())
    assert ("spec.fence.missing", line(t, "mma_async")) in rules(t)


def test_fence_on_one_path_only():
    t = kernel(["@%p2 bra L1;", FENCE, "L1:", wg(), COMMIT, WAIT] + store())
    assert ("spec.fence.missing", line(t, "mma_async")) in rules(t)


def test_accumulator_written_after_fence():
    t = kernel([FENCE, "add.f32 %f1, %f1, %f2;", wg(), COMMIT, WAIT] + store())
    found = [f for f in spec(t) if f.rule == "spec.fence.register-access"]
    assert [f.line for f in found] == [line(t, "mma_async")]
    assert "%f1" in found[0].message and str(line(t, "add.f32")) in found[0].message


def test_same_shape_accumulator_chain_needs_no_fence():
    t = kernel([FENCE, wg(1), wg(1), COMMIT, WAIT] + store())
    assert rules(t) == []


def test_different_shape_on_same_accumulators_needs_a_fence():
    t = kernel([FENCE, wg(1), wg(1, shape="m64n16k16").replace("{%f1,%f2,%f3,%f4}", "{%f1,%f2,%f3,%f4,%f5,%f6,%f7,%f8}"),
                COMMIT, WAIT] + store())
    assert ("spec.fence.register-access", line(t, "m64n16k16")) in rules(t)


def test_a_fragment_written_after_fence():
    t = kernel([FENCE, "add.u32 %r1, %r1, 7;", wg(a=A_REGS), COMMIT, WAIT] + store())
    assert ("spec.fence.register-access", line(t, "mma_async")) in rules(t)


def test_descriptor_written_after_fence_is_fine():
    t = kernel([FENCE, "add.s64 %rd1, %rd1, 16;", wg(), COMMIT, WAIT] + store())
    assert rules(t) == []


def test_fence_each_iteration_of_a_loop_is_clean():
    t = kernel(["mov.u32 %r24, 0;", "LOOP:", FENCE, wg(), COMMIT, WAIT, "add.f32 %f1, %f1, %f9;",
                "add.u32 %r24, %r24, 1;", "setp.lt.u32 %p4, %r24, %r22;", "@%p4 bra LOOP;"] + store())
    assert rules(t) == []


def test_fence_outside_loop_with_accumulator_update_inside():
    t = kernel([FENCE, "mov.u32 %r24, 0;", "LOOP:", wg(), COMMIT, WAIT, "add.f32 %f1, %f1, %f9;",
                "add.u32 %r24, %r24, 1;", "setp.lt.u32 %p4, %r24, %r22;", "@%p4 bra LOOP;"] + store())
    assert ("spec.fence.register-access", line(t, "mma_async")) in rules(t)


# ------------------------------------------------------------------ in flight


def test_read_before_wait():
    t = kernel([FENCE, wg(), COMMIT] + store())
    got = [ln for r, ln in rules(t) if r == "spec.async.access-in-flight"]
    assert got == [line(t, "st.global.f32", k) for k in range(4)]


def test_read_after_wait_zero_is_clean():
    assert [r for r, _ in rules(LEGAL) if r.startswith("spec.async")] == []


def test_wait_one_covers_older_group_only():
    first = kernel([FENCE, wg(1), COMMIT, wg(5), COMMIT, WAIT1] + store(1) + [WAIT] + store(5))
    assert rules(first) == []
    second = kernel([FENCE, wg(1), COMMIT, wg(5), COMMIT, WAIT1] + store(5) + [WAIT] + store(1))
    assert ("spec.async.access-in-flight", line(second, "%f5;")) in rules(second)


def test_wait_on_one_path_only():
    t = kernel([FENCE, wg(), COMMIT, "@%p2 bra L1;", WAIT, "L1:"] + store())
    assert ("spec.async.access-in-flight", line(t, "%f1;")) in rules(t)


def test_a_fragment_written_while_in_flight():
    t = kernel([FENCE, wg(a=A_REGS), "add.u32 %r1, %r1, 7;", COMMIT, WAIT] + store())
    assert ("spec.async.access-in-flight", line(t, "add.u32 %r1")) in rules(t)


def test_pipelined_loop_wait1_then_wait0_is_clean():
    t = kernel(["mov.u32 %r24, 0;", "LOOP:", FENCE, wg(), COMMIT, WAIT1, "add.u32 %r24, %r24, 1;",
                "setp.lt.u32 %p4, %r24, %r22;", "@%p4 bra LOOP;", WAIT] + store())
    assert rules(t) == []


def test_wait_without_commit_is_flagged():
    t = kernel([FENCE, wg(), WAIT] + store())
    found = rules(t)
    assert ("spec.commit.missing", line(t, "wait_group")) in found
    assert ("spec.async.access-in-flight", line(t, "%f1;")) in found


def test_exit_with_group_in_flight():
    t = kernel([FENCE, wg(), COMMIT])
    assert ("spec.exit.unwaited", line(t, "ret;")) in rules(t)
    u = kernel([FENCE, wg()])
    assert ("spec.exit.uncommitted", line(u, "ret;")) in rules(u)


def test_call_to_func_that_waits():
    helper = ".func waiter()\n{\n\twgmma.wait_group.sync.aligned 0;\n\tret;\n}"
    t = kernel([FENCE, wg(), COMMIT, "call.uni waiter, ();"] + store(), extra=helper)
    assert [r for r, _ in rules(t) if r.startswith("spec.async")] == []


# ------------------------------------------------------------------ .aligned and uniformity


def test_wgmma_under_tid_branch():
    t = kernel([FENCE, f"{DIV} bra L1;", wg(), "L1:", COMMIT, WAIT] + store())
    assert ("spec.aligned.divergent", line(t, "mma_async")) in rules(t)


def test_wgmma_under_ctaid_branch_is_uniform():
    t = kernel([FENCE, f"{UNI} bra L1;", wg(), "L1:", COMMIT, WAIT] + store())
    assert [r for r, _ in rules(t) if r == "spec.aligned.divergent"] == []


def test_divergent_guard():
    t = kernel([FENCE, f"{DIV} " + wg(), COMMIT, WAIT] + store())
    found = [f for f in spec(t) if f.rule == "spec.aligned.divergent"]
    assert [f.line for f in found] == [line(t, "mma_async")] and "guard %p1" in found[0].message


@pytest.mark.parametrize("shift, divergent", [(7, False), (8, False), (5, True), (2, True)])
def test_warpgroup_index_from_tid(shift, divergent):
    """%tid.x >> 7 is the warpgroup index: uniform over a warpgroup; >> 5 only over a warp."""
    body = [f"shr.u32 %r30, %r20, {shift};", "setp.eq.u32 %p5, %r30, 0;", "@%p5 bra L1;",
            FENCE, wg(), COMMIT, WAIT] + store() + ["L1:"]
    assert any(r == "spec.aligned.divergent" for r, _ in rules(kernel(body))) == divergent


def test_warpgroup_index_by_division_and_mask():
    div = kernel(["div.u32 %r30, %r20, 128;", "setp.eq.u32 %p5, %r30, 0;", "@%p5 bra L1;",
                  FENCE, wg(), COMMIT, WAIT] + store() + ["L1:"])
    assert rules(div) == []
    mask = kernel(["and.b32 %r30, %r20, -128;", "setp.eq.u32 %p5, %r30, 0;", "@%p5 bra L1;",
                   FENCE, wg(), COMMIT, WAIT] + store() + ["L1:"])
    assert rules(mask) == []


def test_tid_shift_gets_no_credit_for_2d_blocks():
    t = kernel(["shr.u32 %r30, %r20, 7;", "setp.eq.u32 %p5, %r30, 0;", "@%p5 bra L1;",
                FENCE, wg(), COMMIT, WAIT] + store() + ["L1:"])
    t2 = t.replace(".visible .entry k(.param .u64 out)", ".visible .entry k(.param .u64 out)\n.reqntid 96, 2, 1")
    assert any(r == "spec.aligned.divergent" for r, _ in rules(t2))


def test_tid_y_is_uniform_only_when_the_block_is_known_flat():
    t = kernel(["mov.u32 %r30, %tid.y;", "setp.eq.u32 %p5, %r30, 0;", "@%p5 bra L1;",
                FENCE, wg(), COMMIT, WAIT] + store() + ["L1:"])
    assert any(r == "spec.aligned.divergent" for r, _ in rules(t))
    assert rules("// LAUNCH: kernel=k grid=1,1,1 block=256,1,1\n" + t) == []
    assert rules(t.replace("(.param .u64 out)", "(.param .u64 out)\n.reqntid 128, 1, 1")) == []
    assert any(r == "spec.aligned.divergent" for r, _ in rules("// LAUNCH: kernel=k grid=1,1,1 block=128,2,1\n" + t))


def test_value_defined_under_divergent_branch_is_divergent():
    t = kernel(["mov.u32 %r30, 0;", f"{DIV} bra L0;", "mov.u32 %r30, 1;", "L0:", "setp.eq.u32 %p5, %r30, 0;",
                "@%p5 bra L1;", FENCE, wg(), COMMIT, WAIT] + store() + ["L1:"])
    assert any(r == "spec.aligned.divergent" for r, _ in rules(t))


def test_loop_with_divergent_trip_count():
    t = kernel(["mov.u32 %r24, 0;", "LOOP:", FENCE, wg(), COMMIT, WAIT, "add.u32 %r24, %r24, 1;",
                "setp.lt.u32 %p4, %r24, %r20;", "@%p4 bra LOOP;"] + store())
    assert ("spec.aligned.divergent", line(t, "mma_async")) in rules(t)


def test_shfl_broadcast_of_warpgroup_index_is_uniform():
    t = kernel(["shr.u32 %r30, %r20, 7;", "shfl.sync.idx.b32 %r31, %r30, 0, 31, -1;", "setp.eq.u32 %p5, %r31, 0;",
                "@%p5 bra L1;", FENCE, wg(), COMMIT, WAIT] + store() + ["L1:"])
    assert rules(t) == []


def test_call_to_func_with_wgmma_under_divergent_branch():
    helper = ".func stage()\n{\n\twgmma.fence.sync.aligned;\n\tret;\n}"
    t = kernel([f"{DIV} bra L1;", "call.uni stage, ();", "L1:"], extra=helper)
    found = [f for f in spec(t) if f.rule == "spec.aligned.divergent"]
    assert [f.line for f in found] == [line(t, "call.uni")] and "a call to a .func" in found[0].message
    assert rules(t.replace(DIV, UNI)) == []


# ------------------------------------------------------------------ async proxy


SMEM = ".shared .align 1024 .b8 smem[4096];"


def test_generic_shared_store_then_wgmma_without_proxy_fence():
    t = kernel(["st.shared.u32 [smem], %r1;", "bar.sync 0;", FENCE, wg(), COMMIT, WAIT] + store(), extra=SMEM)
    found = [f for f in spec(t) if f.rule == "spec.proxy.fence-missing"]
    assert [f.line for f in found] == [line(t, "mma_async")]
    assert str(line(t, "st.shared")) in found[0].message


def test_proxy_fence_before_barrier_is_clean():
    t = kernel(["st.shared.u32 [smem], %r1;", "fence.proxy.async.shared::cta;", "bar.sync 0;", FENCE, wg(), COMMIT,
                WAIT] + store(), extra=SMEM)
    assert rules(t) == []


# ------------------------------------------------------------------ descriptors


def _desc(start: int, swizzle: int, base: int = 0) -> int:
    return (start >> 4) | (1 << 16) | (64 << 32) | (base << 49) | (swizzle << 62)


def test_constant_descriptor_misaligned_for_128b_swizzle():
    t = kernel([f"mov.b64 %rd5, {_desc(0x180, 1)};", FENCE, wg(a="%rd5"), COMMIT, WAIT] + store())
    found = [f for f in spec(t) if f.rule == "spec.desc.base-offset"]
    assert [f.line for f in found] == [line(t, "mma_async")] and "base offset (start >> 7) & 7 = 3" in found[0].message


@pytest.mark.parametrize("start, base", [(0x000, 0), (0x020, 0), (0x180, 3)])
def test_constant_descriptor_fine(start, base):
    # (starts below 0x400: the kernel declares no shared memory, and only the bytes the hardware
    # reserves lie there; a start at or past 0x400 would be spec.smem.out-of-bounds)
    t = kernel([f"mov.b64 %rd5, {_desc(start, 1, base)};", FENCE, wg(a="%rd5"), COMMIT, WAIT] + store())
    assert rules(t) == []


SMEM_TILE = ".shared .align 1024 .b8 tile[2048];"


def _desc_from_tile(offset: int) -> list[str]:
    """A 128B-swizzle descriptor built at run time from the address of ``tile`` plus ``offset``."""
    return ["mov.u32 %r30, tile;", f"add.u32 %r30, %r30, {offset};", "cvt.u64.u32 %rd5, %r30;",
            "shr.u64 %rd5, %rd5, 4;", f"or.b64 %rd5, %rd5, {_desc(0, 1)};"]


@pytest.mark.parametrize("offset, flagged", [(0, False), (1024, False), (2048, True), (4096, True)])
def test_descriptor_past_the_end_of_shared_memory(offset, flagged):
    """tile sits at 0x400 (the H100's layout, fuzzptx.ptx.smem): 0x400 + 2048 is its end."""
    t = kernel(_desc_from_tile(offset) + [FENCE, wg(a="%rd5"), COMMIT, WAIT] + store(), pre=PRE + [SMEM_TILE])
    found = [f for f in spec(t) if f.rule == "spec.smem.out-of-bounds"]
    assert [f.line for f in found] == ([line(t, "mma_async")] if flagged else [])
    if flagged:
        assert f"shared offset {0x400 + offset:#x}" in found[0].message and "(0xc00;" in found[0].message


LOOP_OVER_WGMMA = ["mov.u32 %r24, 0;", "LOOP:", FENCE, wg(a="%rd5"), COMMIT, WAIT, "add.u32 %r24, %r24, 1;",
                   "setp.lt.u32 %p4, %r24, %r22;", "@%p4 bra LOOP;"]


def test_descriptor_built_before_a_loop_is_judged_inside_it():
    """The descriptor's one definition reaches the wgmma around the loop's back edge too (a
    campaign found the checker silent here: it gave up at the loop head's two predecessors)."""
    t = kernel(_desc_from_tile(4096) + LOOP_OVER_WGMMA + store(), pre=PRE + [SMEM_TILE])
    found = [f for f in spec(t) if f.rule == "spec.smem.out-of-bounds"]
    assert [f.line for f in found] == [line(t, "mma_async")]


def test_descriptor_moved_inside_the_loop_is_not_known():
    """Redefined in the loop, two definitions reach the wgmma: its start is not known."""
    body = _desc_from_tile(4096)[:-1] + ["or.b64 %rd6, %rd5, 0;"] + LOOP_OVER_WGMMA[:2] + [
        "add.s64 %rd6, %rd6, 8;", "mov.b64 %rd5, %rd6;"] + LOOP_OVER_WGMMA[2:]
    t = kernel(body + store(), pre=PRE + [SMEM_TILE, ".reg .b64 %rd6;"])
    assert [f for f in spec(t) if f.rule == "spec.smem.out-of-bounds"] == []


def test_descriptor_bounds_are_not_judged_with_dynamic_shared_memory():
    """The end then depends on the launch, which the checker does not see."""
    t = kernel(_desc_from_tile(4096) + ["mov.u32 %r31, dyn;", FENCE, wg(a="%rd5"), COMMIT, WAIT] + store(),
               pre=PRE + [SMEM_TILE], extra=".extern .shared .align 16 .b8 dyn[];")
    assert [f for f in spec(t) if f.rule == "spec.smem.out-of-bounds"] == []


def test_descriptor_reserved_bits():
    t = kernel([f"mov.b64 %rd5, {_desc(0x400, 0) | (1 << 14)};", FENCE, wg(a="%rd5"), COMMIT, WAIT] + store())
    assert ("spec.desc.reserved", line(t, "mma_async")) in rules(t)


# ------------------------------------------------------------------ real-world kernels

# A genuine spec violation nvcc produced: the CUDA source zeroes the accumulators before
# wgmma.fence, nvcc sinks the zeroing below it (CUTLASS's warpgroup_fence_operand exists to stop
# exactly this).  ptxas repairs it silently; the spec layer must still say so.
KNOWN_TRUE_POSITIVES = {("wgmma_f16_regA.ptx", "spec.fence.register-access")}


def _clean_ptxas_kernels():
    from fuzzptx.oracles.ptxas import compile_ptx

    out = []
    for p in sorted(DATA.glob("*.ptx")):
        res = compile_ptx(p.read_text(), want_cubin=False)
        if res.accepted and not res.diagnostics:
            out.append(p)
    return out


def test_no_false_alarms_on_real_world_kernels():
    paths = _clean_ptxas_kernels()
    assert paths, "no nvcc-produced kernels under tests/data"
    for p in paths:
        found = check_module(parse(p.read_text(), str(p)), layers=("spec", "ptxas-model"))
        unexpected = [f for f in found if (p.name, f.rule) not in KNOWN_TRUE_POSITIVES]
        assert unexpected == [], "\n".join(f.text() for f in unexpected)
