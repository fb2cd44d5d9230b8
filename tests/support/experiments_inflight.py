"""Experiments on a plain write into an accumulator of a wgmma in flight (measured 2026-11-27 on
ptxas 13.0.88, from two campaign findings ``checker!=ptxas|spurious:C7515``: seed 5 #82 and seed 8
#99, shrunk to a ``mov.b32 acc, 0`` after a wgmma whose value is read right after, or only by the
next stage's wgmma).

What ptxas says depends on where the written value is read, not on the value (0, 5, another
register): it renames a write whose plain reads are all *near* -- unguarded, in the same block, no
wgmma-family instruction, ``bar`` or ``call`` between (a wgmma taking the value as accumulator
does not count, nor a wait ptxas injects) -- and says nothing.  A far plain read is C7515.  An arrive
(C7519) comes at the next wgmma when the value is read past it; at the next commit when a far read
comes before it, or, for a write that is not a move (``mov``, ``neg``, ``abs``, ``mul`` by one are
moves; ``add``, ``cvt``, ``ld``, ``selp`` are not), when the value is read past it; never when a
fence comes next.  A write between commit and wait draws no arrive.  An accumulator that went into
its wgmma as a constant is renamed whatever reads it.  A read of a rewritten register reads the new
value: no wait there.  Files: ``tests/data/checker/NAME.ptx``; the rule: ``ptxas_sites.value_uses``,
``ptxas_rules.arrive_for_write``, ``PS.over``.

Operands a wgmma of the open stage does not read back (``operand_write_in_flight_*``, from campaign
seed 3 #86 and seed 9 #95 shrunk): a rewrite of an A-fragment register, or of an accumulator of a
scale-d 0 wgmma, draws the arrive at the next wgmma (or, for a non-move, the next commit) only when a
later *wgmma* reads the value; a store of it does not count, and a zeroed A register is a constant
unless the reading wgmma comes around a loop (``ptxas_rules.arrive_for_operand_write``).  Beside
C7510 every one of these arrives stays (``rewrite_arrive_*_indirect_call``).
"""
from __future__ import annotations

ZERO = "mov.f32 %f1, 0f00000000;"
ADD = "add.f32 %f1, %f9, 0f3F800000;"
READ = "st.global.f32 [%rd3+64], %f1;"  # the rewritten accumulator, alone


def more() -> dict[str, tuple[str, str]]:
    """name -> (description, kernel text), as in ``experiments.EXPERIMENTS``."""
    from .experiments import (A_REGS, CALL_IND, CALL_R, COMMIT, FENCE, FUNC_R, KEEP_R30, LOOP_HEAD, LOOP_TAIL, PRE, WAIT,
                              kernel, store, wg)

    s = store()
    rest = s[1:]  # the other three accumulators

    def k(*body: str, pre=None, extra: str = "") -> str:
        return kernel(list(body), pre=pre, extra=extra)

    zinit = PRE + [f"mov.f32 %f{i}, 0f00000000;" for i in range(1, 5)]
    w = wg()
    wa = wg(a=A_REGS)
    return {
        "acc_write_in_flight_read_near": (
            "mov 0 into an accumulator in flight, read right after (same block, nothing between), then commit: nothing",
            k(FENCE, w, ZERO, READ, COMMIT, WAIT, *rest)),
        "acc_write_in_flight_read_near_add": ("the same with an add: nothing", k(FENCE, w, ADD, READ, COMMIT, WAIT, *rest)),
        "acc_write_in_flight_read_near_no_commit": (
            "mov 0, then all four stored with no commit: the wait at the second store (the first reads the 0)",
            k(FENCE, w, ZERO, *s)),
        "acc_write_in_flight_read_near_then_wgmma": (
            "mov 0, read near, then a wgmma on other accumulators: nothing",
            k(FENCE, w, ZERO, READ, wg(5), COMMIT, WAIT, *rest, *store(5))),
        "acc_write_in_flight_read_near_copy": (
            "mov 0, copied to another register near, the copy stored after the wait: nothing",
            k(FENCE, w, ZERO, "mov.f32 %f20, %f1;", COMMIT, WAIT, "st.global.f32 [%rd3+64], %f20;", *rest)),
        "acc_write_in_flight_read_after_injected_wait": (
            "mov 0, a store of another accumulator (ptxas waits there), then the rewritten one: no C7515",
            k(FENCE, w, ZERO, "st.global.f32 [%rd3+64], %f2;", "st.global.f32 [%rd3+128], %f1;", *s[2:])),
        "acc_write_in_flight_guarded_other_between": (
            "mov 0, a guarded add on another register, then the read: still near, nothing",
            k(FENCE, w, ZERO, "@%p2 add.u32 %r22, %r22, 1;", READ, "st.global.u32 [%rd3+68], %r22;", COMMIT, WAIT, *rest)),
        "acc_write_in_flight_mov5_read_past_commit": (
            "mov 5.0, commit, wait, read: C7515 and no arrive (a move)", k(FENCE, w, "mov.f32 %f1, 0f40A00000;", COMMIT, WAIT, *s)),
        "acc_write_in_flight_mov_reg_read_past_commit": (
            "mov of another register, commit, wait, read: C7515 and no arrive", k(FENCE, w, "mov.f32 %f1, %f9;", COMMIT, WAIT, *s)),
        "acc_write_in_flight_neg_read_past_commit": (
            "neg of another register, commit, wait, read: C7515 and no arrive", k(FENCE, w, "neg.f32 %f1, %f9;", COMMIT, WAIT, *s)),
        "acc_write_in_flight_mul_one_read_past_commit": (
            "mul by 1.0, commit, wait, read: C7515 and no arrive",
            k(FENCE, w, "mul.f32 %f1, %f9, 0f3F800000;", COMMIT, WAIT, *s)),
        "acc_write_in_flight_ld_read_past_commit": (
            "a load, commit, wait, read: C7515 and an arrive at the commit",
            k(FENCE, w, "ld.global.f32 %f1, [%rd3+2000];", COMMIT, WAIT, *s)),
        "acc_write_in_flight_read_near_and_past_commit_add": (
            "add, read near, commit, wait, read again: C7515 and an arrive at the commit",
            k(FENCE, w, ADD, READ, COMMIT, WAIT, *s)),
        "acc_write_in_flight_read_between_commit_and_wait": (
            "mov 0, commit, read, wait: C7515 (a read past the commit), no wait at the read",
            k(FENCE, w, ZERO, COMMIT, READ, WAIT, *rest)),
        "acc_write_in_flight_read_by_next_stage_wgmma": (
            "mov 0, fence, a wgmma on the same accumulators (it reads the 0), commit, wait, read: nothing",
            k(FENCE, w, ZERO, FENCE, w, COMMIT, WAIT, *s)),
        "acc_write_in_flight_add_read_by_later_wgmma": (
            "add, commit, fence, a wgmma on the same accumulators: the arrive at the first commit only",
            k(FENCE, w, ADD, COMMIT, FENCE, w, COMMIT, WAIT, *s)),
        "acc_write_in_flight_mov_read_by_later_wgmma": (
            "mov of a b32 register, commit, fence, a wgmma on the same accumulators: nothing",
            k(FENCE, w, "mov.b32 %f1, %r22;", COMMIT, FENCE, w, COMMIT, WAIT, *s)),
        "acc_write_in_flight_read_after_fence": (
            "mov 0, fence, read, commit: C7515, no arrive (the fence is one)",
            k(FENCE, w, ZERO, FENCE, READ, COMMIT, WAIT, *rest)),
        "acc_write_in_flight_add_read_after_fence": (
            "add, fence, read, commit: C7515, no arrive", k(FENCE, w, ADD, FENCE, READ, COMMIT, WAIT, *rest)),
        "acc_write_in_flight_add_fence_wgmma_read": (
            "add, fence, a wgmma on other accumulators, commit, wait, read: C7515, no arrive",
            k(FENCE, w, ADD, FENCE, wg(5), COMMIT, WAIT, *s, *store(5))),
        "acc_write_in_flight_read_after_label": (
            "mov 0, a label, read, commit: C7515 and an arrive at the commit", k(FENCE, w, ZERO, "L0:", READ, COMMIT, WAIT, *rest)),
        "acc_write_in_flight_read_after_bar": (
            "mov 0, bar.sync, read, commit: C7515 and an arrive at the commit",
            k(FENCE, w, ZERO, "bar.sync 0;", READ, COMMIT, WAIT, *rest)),
        "acc_write_in_flight_read_after_call": (
            "mov 0, a direct call, read, commit: C7515 and an arrive at the commit",
            k(FENCE, w, ZERO, *CALL_R, READ, "st.global.u32 [%rd3+68], %r30;", COMMIT, WAIT, *rest, extra=FUNC_R)),
        "acc_write_in_flight_read_guarded": (
            "mov 0, a guarded read, commit: C7515 and an arrive at the commit",
            k(FENCE, w, ZERO, "@%p2 " + READ, COMMIT, WAIT, *rest)),
        "acc_write_in_flight_read_after_uni_branch": (
            "mov 0, a uniform branch over the read, commit: C7515 and an arrive at the commit",
            k(FENCE, w, ZERO, "@%p2 bra L1;", READ, "L1:", COMMIT, WAIT, *rest)),
        "acc_write_in_flight_read_after_wgmma": (
            "mov 0, a wgmma on other accumulators, read, commit: C7515 and an arrive at that wgmma",
            k(FENCE, w, ZERO, wg(5), READ, COMMIT, WAIT, *rest, *store(5))),
        "acc_write_in_flight_past_wgmma_read_by_wgmma": (
            "mov 0, a wgmma on others, commit, fence, a wgmma on the rewritten ones: the arrive at the first "
            "wgmma after the write, no C7515",
            k(FENCE, w, ZERO, wg(5), COMMIT, FENCE, w, COMMIT, WAIT, *s, *store(5))),
        "acc_write_in_flight_zero_init_add": (
            "accumulators zeroed before the wgmma, then an add into one in flight, commit, wait, read: nothing",
            k(FENCE, w, ADD, COMMIT, WAIT, *s, pre=zinit)),
        "acc_write_after_commit_read_near": (
            "commit, then mov 0 and a read right after, wait: nothing", k(FENCE, w, COMMIT, ZERO, READ, WAIT, *rest)),
        "acc_write_after_commit_read_after_label": (
            "commit, mov 0, a label, the read, wait: C7515", k(FENCE, w, COMMIT, ZERO, "L0:", READ, WAIT, *rest)),
        "acc_write_after_commit_add_read_past_wait": (
            "commit, add, wait, read: C7515 and no arrive (the group is committed)", k(FENCE, w, COMMIT, ADD, WAIT, *s)),
        # operands the wgmma does not read back (A fragments, scale-d 0 accumulators)
        "operand_write_in_flight_a_add_read_by_next_stage": (
            "an A register rewritten (add) after its wgmma, a wgmma on others, commit, then a stage whose wgmma "
            "reads it: the arrive at the wgmma after the write",
            k(FENCE, wa, "add.u32 %r1, %r1, 7;", wg(5), COMMIT, FENCE, wg(9, a=A_REGS), COMMIT, WAIT, *s, *store(5),
              *store(9))),
        "operand_write_in_flight_a_zero_read_by_next_stage": (
            "the same with mov 0 (a constant to ptxas): nothing",
            k(FENCE, wa, "mov.b32 %r1, 0;", wg(5), COMMIT, FENCE, wg(9, a=A_REGS), COMMIT, WAIT, *s, *store(5), *store(9))),
        "operand_write_in_flight_a_add_read_by_store": (
            "an A register rewritten after its wgmma, stored after the wait: nothing",
            k(FENCE, wa, "add.u32 %r1, %r1, 7;", wg(5), COMMIT, WAIT, *s, *store(5), "st.global.u32 [%rd3+32], %r1;")),
        "operand_write_in_flight_a_zero_loop": (
            "mov 0 into an A register after its wgmma in a loop (the next iteration's wgmma reads it): the arrive "
            "at the next wgmma, and C7513",
            k(*LOOP_HEAD, FENCE, wa, "mov.b32 %r1, 0;", wg(5), COMMIT, *LOOP_TAIL, WAIT, *s, *store(5))),
        "operand_write_in_flight_sd0_zero_read_by_next_stage": (
            "mov 0 into an accumulator of a scale-d 0 wgmma in flight, a wgmma on others, then a stage reading it: "
            "C7511 and the arrive at the wgmma after the write",
            k(FENCE, wg(sd="0"), ZERO, wg(5), COMMIT, FENCE, w, COMMIT, WAIT, *s, *store(5))),
        "operand_write_in_flight_sd0_zero_commit_read_by_next_stage": (
            "the same with the commit next: C7511, no arrive (a move)",
            k(FENCE, wg(sd="0"), ZERO, COMMIT, FENCE, w, COMMIT, WAIT, *s)),
        "operand_write_in_flight_sd0_add_commit_read_by_next_stage": (
            "an add there, the commit next: C7511 and the arrive at the commit",
            k(FENCE, wg(sd="0"), ADD, COMMIT, FENCE, w, COMMIT, WAIT, *s)),
        "operand_write_in_flight_sd0_add_read_by_store": (
            "an add into an accumulator of a scale-d 0 wgmma in flight, a wgmma on others, stored after the wait: nothing",
            k(FENCE, wg(sd="0"), ADD, wg(5), COMMIT, WAIT, *s, *store(5))),
        # beside an indirect call (C7510) the rewrite arrives stay
        "rewrite_arrive_acc_add_indirect_call": (
            "an accumulator rewritten (add) in flight, read after the wait, an indirect call after: C7510 and the arrive",
            k(FENCE, w, ADD, COMMIT, WAIT, *s, *CALL_IND, *KEEP_R30, extra=FUNC_R)),
        "rewrite_arrive_acc_read_after_label_indirect_call": (
            "mov 0 in flight, a label, the read, an indirect call after: C7510 and the arrive at the commit",
            k(FENCE, w, ZERO, "L0:", READ, COMMIT, WAIT, *rest, *CALL_IND, *KEEP_R30, extra=FUNC_R)),
        "rewrite_arrive_between_wgmmas_indirect_call": (
            "an accumulator rewritten between two different wgmmas on it, an indirect call after: C7510 and the arrive",
            k(FENCE, w, ADD, wg(1, a="%rd2"), COMMIT, WAIT, *s, *CALL_IND, *KEEP_R30, extra=FUNC_R)),
        "rewrite_arrive_a_indirect_call": (
            "operand_write_in_flight_a_add_read_by_next_stage with an indirect call after: C7510 and the arrive",
            k(FENCE, wa, "add.u32 %r1, %r1, 7;", wg(5), COMMIT, FENCE, wg(9, a=A_REGS), COMMIT, WAIT, *s, *store(5),
              *store(9), *CALL_IND, *KEEP_R30, extra=FUNC_R)),
        "rewrite_arrive_sd0_indirect_call": (
            "operand_write_in_flight_sd0_zero_read_by_next_stage with an indirect call after: C7510 and the arrive",
            k(FENCE, wg(sd="0"), ZERO, wg(5), COMMIT, FENCE, w, COMMIT, WAIT, *s, *store(5), *CALL_IND, *KEEP_R30,
              extra=FUNC_R)),
        # the campaign findings, shrunk by ``fuzzptx shrink --keep checker!=ptxas|spurious:C7515``
        "campaign_s8_99_zero_read_near": (
            "campaign seed 8 #99 shrunk: a scale-d 0 wgmma, a wgmma that reads its result, mov 0 into one of "
            "those accumulators, stores of it and of another: the wait at the second store only",
            k("wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%r24, %r25}, {%r1, %r2, %r3, %r4}, %rd1, 0, 1, 1, 0;",
              "wgmma.mma_async.sync.aligned.m64n16k16.f16.f16.f16 {%r24, %r25, %r26, %r27}, {%r1, %r2, %r3, %r4}, "
              "%rd2, 1, 1, 1, 0;",
              "mov.b32 %r24, 0;", "st.global.b32 [%rd3], %r24;", "st.global.b32 [%rd3+8], %r26;")),
        "campaign_s5_82_zero_read_by_wgmma": (
            "campaign seed 5 #82 shrunk: two wgmmas on the same accumulators, mov 0 into one, fence, a wider "
            "wgmma that reads it: no C7515",
            k("wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%r24, %r25}, {%r1, %r2, %r3, %r4}, %rd1, 0, 1, 1, 0;",
              "wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%r24, %r25}, {%r1, %r2, %r3, %r4}, %rd1, %p2, 1, 1, 0;",
              "mov.b32 %r24, 0;", FENCE,
              "wgmma.mma_async.sync.aligned.m64n56k16.f16.f16.f16 {%r24, %r25, %r26, %r27, %r28, %r29, %r30, %r31, "
              "%r32, %r33, %r34, %r35, %r36, %r37}, {%r1, %r2, %r3, %r4}, %rd2, %p2, 1, 1, 0;",
              "st.global.b32 [%rd3], %r36;")),
    }
