"""Experiments on what ptxas 13.0.88 does before and around its GMMA passes: dead-code elimination
of wgmmas and plain instructions, register renaming around scale-d 0 wgmmas (C7511), divergent
merges that a fence heals, and waits placed after loops or before an indirect call.

Each entry is recorded like the others (``experiments.EXPERIMENTS`` includes these); the files
are ``tests/data/checker/NAME.ptx``.
"""
from __future__ import annotations


def more() -> dict[str, tuple[str, str]]:
    """name -> (description, kernel text), as in ``experiments.EXPERIMENTS`` (built on its helpers,
    imported here so that either module can be imported first)."""
    from .experiments import (CALL_IND, CALL_R, COMMIT, DIV, FENCE, FUNC_R, KEEP_R30, LOOP_HEAD, UNI, WAIT, W, ZERO, _b,
                              kernel, store, wg)

    add1 = "add.f32 %f1, %f5, %f6;"  # a fresh value for accumulator %f1
    neg1 = "xor.b32 %f1, %f1, 0x80000000;"  # %f1 rewritten from its own value
    neg5 = "xor.b32 %f5, %f5, 0x80000000;"
    loop_uni = ["add.u32 %r24, %r24, 1;", "setp.lt.u32 %p4, %r24, %r22;", "@%p4 bra.uni LOOP;"]
    div_stage = [_b("SK", DIV), FENCE, wg(), COMMIT, "SK:"]
    inner = ["mov.u32 %r25, 0;", "LB:"]
    inner_end = ["add.u32 %r25, %r25, 1;", "setp.lt.u32 %p5, %r25, %r22;", "@%p5 bra.uni LB;"]

    def w(sd: str, tail: str = "1, 1, 0, 0", a: str = "%rd1", b: str = "%rd2") -> str:
        """A wgmma on %f1..%f4 with the given scale-d and immediate/transpose tail."""
        return f"{W} {{%f1,%f2,%f3,%f4}}, {a}, {b}, {sd}, {tail};"

    def between(first: str, write: str, second: str) -> str:
        return kernel([FENCE, first, write, second, COMMIT, WAIT] + store())

    return {
        # dead code: ptxas deletes wgmmas nothing reads, before placing arrives
        "dead_wgmma_unused": ("no fence, accumulators never read: the wgmma is dead code, the arrive is at the commit",
                              kernel([wg(), COMMIT, WAIT])),
        "dead_wgmma_read_by_dead_add": ("no fence, accumulators read only by an add whose result is unused",
                                        kernel([wg(), COMMIT, WAIT, "add.f32 %f20, %f1, %f2;"])),
        "dead_wgmma_two_unused": ("no fence, two wgmmas, accumulators never read: the arrive is at the commit",
                                  kernel([wg(), wg(), COMMIT, WAIT])),
        "dead_wgmma_all_acc_rewritten": ("every accumulator rewritten while the wgmma is in flight: dead, no C7515",
                                         kernel([FENCE, wg(), COMMIT] + [f"add.f32 %f{i}, %f5, %f6;" for i in range(1, 5)]
                                                + [WAIT] + store())),
        "dead_wgmma_div_guard": ("a dead wgmma under a divergent guard still makes C7520",
                                 kernel([f"{DIV} " + wg(), COMMIT, WAIT])),
        "dead_wgmma_div_branch": ("a dead wgmma under a divergent branch still makes C7520",
                                  kernel([_b("SK", DIV), wg(), "SK:", COMMIT, WAIT])),
        "dead_wgmma_div_guard_fenced": ("a fenced dead wgmma under a divergent guard: deleted, nothing",
                                        kernel([FENCE, f"{DIV} " + wg(), COMMIT, WAIT])),
        "dead_wgmma_uni_branch": ("a dead wgmma under a uniform branch: the arrive is at the commit",
                                  kernel([_b("SK", UNI), wg(), "SK:", COMMIT, WAIT])),
        "dead_feed_read": ("a later wgmma's accumulator negated twice while a group is in flight, the later wgmma has "
                           "scale-d 0: the negations are dead code, no wait",
                           kernel([FENCE, wg(), COMMIT, neg5, neg5, FENCE, wg(5, sd="0"), COMMIT, WAIT]
                                  + store() + store(5))),
        "fence_commit_call": ("fence, commit (no wgmma), a direct call: the exit wait is reported at the call",
                              kernel([FENCE, COMMIT] + CALL_R + KEEP_R30, extra=FUNC_R)),
        "fence_commit_feed_read": ("a later wgmma's accumulator read while an empty group is in flight: wait at the read",
                                   kernel([FENCE, COMMIT, neg5, FENCE, wg(5), COMMIT, WAIT] + store(5))),
        # divergent merges that a fence heals; C7510 against C7520
        "div_stage_then_stage": ("a whole stage under a divergent branch, then a fenced stage: nothing",
                                 kernel(div_stage + [FENCE, wg(), COMMIT, WAIT] + store())),
        "div_stage_then_unfenced": ("a whole stage under a divergent branch, then an unfenced wgmma: C7520",
                                    kernel(div_stage + [wg(), COMMIT, WAIT] + store())),
        "div_wait_then_stage": ("a wait under a divergent branch, then a fenced stage: nothing",
                                kernel([FENCE, wg(), COMMIT, _b("SK", DIV), WAIT, "SK:", FENCE, wg(5), COMMIT, WAIT]
                                       + store() + store(5))),
        "div_stage_indirect_call": ("a stage under a divergent branch, a fenced stage, an indirect call: C7510",
                                    kernel(div_stage + [FENCE, wg(), COMMIT] + CALL_IND + [WAIT] + store() + KEEP_R30,
                                           extra=FUNC_R)),
        "div_wait_use_indirect_call": ("the wait under a divergent branch, use after, then an indirect call: C7510",
                                       kernel([FENCE, wg(), COMMIT, _b("L1", DIV), WAIT, "L1:"] + store() + CALL_IND
                                              + KEEP_R30, extra=FUNC_R)),
        "div_fence_indirect_call": ("the fence under a divergent branch, then an indirect call: C7520 outranks C7510",
                                    kernel([_b("L1", DIV), FENCE, "L1:", wg(), COMMIT, WAIT] + store() + CALL_IND + KEEP_R30,
                                           extra=FUNC_R)),
        # scale-d 0: the wgmma only writes its accumulators, so ptxas can rename them
        "acc_write_in_flight_scale_d_0": ("an accumulator of an in-flight scale-d 0 wgmma rewritten: nothing",
                                          kernel([FENCE, wg(sd="0"), add1, COMMIT, WAIT] + store())),
        "acc_zero_in_flight_scale_d_0": ("an accumulator of an in-flight scale-d 0 wgmma zeroed: nothing",
                                         kernel([FENCE, wg(sd="0"), ZERO(1), COMMIT, WAIT] + store())),
        "acc_write_before_scale_d_0": ("an accumulator written after the fence, the wgmma has scale-d 0: no arrive",
                                       kernel([FENCE, add1, wg(sd="0"), COMMIT, WAIT] + store())),
        "acc_write_between_wgmmas_same_pred": ("accumulator rewritten between two identical wgmmas (scale-d %p2): nothing",
                                               between(w("%p2"), add1, w("%p2"))),
        "acc_write_between_wgmmas_pred_then_1": ("accumulator zeroed between wgmmas with scale-d %p2 then 1: arrive",
                                                 between(w("%p2"), ZERO(1), w("1"))),
        "acc_write_between_wgmmas_negated_b": ("accumulator zeroed between two wgmmas that differ in imm-scale-b: arrive",
                                               between(w("1"), ZERO(1), w("1", "1, -1, 0, 0"))),
        "acc_write_between_wgmmas_other_a": ("accumulator zeroed between two wgmmas that differ in the A descriptor",
                                             between(w("1"), ZERO(1), w("1", a="%rd2"))),
        "acc_write_between_wgmmas_into_scale_d_0": ("accumulator rewritten before a scale-d 0 wgmma: nothing",
                                                    between(w("1"), add1, w("0", "1, -1, 0, 0"))),
        "c7511_in_stage": ("scale-d 0 wgmma, accumulator rewritten, another wgmma reads it: C7511 and an arrive",
                           between(w("0"), add1, w("1", "1, -1, 0, 0"))),
        "c7511_across_wait": ("scale-d 0 wgmma, wait, accumulator rewritten, a later stage reads it: C7511",
                              kernel([FENCE, w("0"), COMMIT, WAIT, add1, FENCE, w("1", "-1, 1, 0, 0"), COMMIT, WAIT]
                                     + store())),
        "c7511_rmw_is_not_fresh": ("the same with the accumulator negated in place: nothing",
                                   kernel([FENCE, w("0"), COMMIT, WAIT, neg1, FENCE, w("1", "-1, 1, 0, 0"), COMMIT, WAIT]
                                          + store())),
        # where waits go
        "wait_skipped_in_loop": ("a wait skipped on a uniform path inside a loop, use after the loop: wait at its branch",
                                 kernel([FENCE, wg(), COMMIT] + LOOP_HEAD + [_b("SK", UNI), WAIT, "SK:"] + loop_uni
                                        + store())),
        "wait_skipped_before_loop": ("a wait skipped on a uniform path before a loop, use after it: C7514",
                                     kernel([FENCE, wg(), COMMIT, _b("SK", UNI), WAIT, "SK:"] + LOOP_HEAD + loop_uni
                                            + store())),
        "feed_read_after_partial_wait": ("a later wgmma's accumulator read where a path that waited merges in: "
                                         "no wait", kernel([FENCE, wg(), COMMIT, _b("SK", UNI), WAIT, "SK:", neg5, FENCE,
                                                            wg(5), COMMIT, WAIT] + store(5) + store())),
        "wait_skipped_in_inner_loop": ("a wait skipped in an inner loop, an empty loop after: wait at the inner "
                                       "loop's branch",
                                       kernel([FENCE, wg(), COMMIT] + LOOP_HEAD + inner + [_b("SK", UNI), WAIT, "SK:"]
                                              + inner_end + loop_uni + ["mov.u32 %r26, 0;", "LC:",
                                                                        "add.u32 %r26, %r26, 1;",
                                                                        "setp.lt.u32 %p6, %r26, %r22;",
                                                                        "@%p6 bra.uni LC;"] + store())),
        "wait_skipped_in_loop_and_after": ("a wait skipped in a loop and another skipped after it: C7514",
                                           kernel([FENCE, wg(), COMMIT] + LOOP_HEAD + [_b("SK", UNI), WAIT, "SK:"]
                                                  + loop_uni + [_b("S2", UNI), WAIT, "S2:"] + store())),
        "wait_skipped_in_loop_then_stage": ("a wait skipped in a loop, then a stage whose wait is skipped: C7514",
                                            kernel([FENCE, wg(), COMMIT] + LOOP_HEAD + [_b("SK", UNI), WAIT, "SK:"]
                                                   + loop_uni + [FENCE, wg(5), COMMIT, _b("S2", UNI), WAIT, "S2:"]
                                                   + store(5))),
        "feed_read_before_indirect_call": ("a later wgmma's accumulator read in flight, an indirect call after: "
                                           "C7510 and the wait",
                                           kernel([FENCE, wg(), COMMIT, neg5, FENCE, wg(5), COMMIT, WAIT] + store(5)
                                                  + store() + CALL_IND + KEEP_R30, extra=FUNC_R)),
        "feed_read_after_indirect_call": ("the same with the indirect call first: C7510 only",
                                          kernel(CALL_IND + [FENCE, wg(), COMMIT, neg5, FENCE, wg(5), COMMIT, WAIT]
                                                 + store(5) + store() + KEEP_R30, extra=FUNC_R)),
        "feed_read_in_loop_after_indirect_call": ("an indirect call, a stage, then the later wgmma's accumulator read "
                                                  "in a loop: C7510 and the wait",
                                                  kernel(CALL_IND + [FENCE, wg(), COMMIT] + inner + [neg5] + inner_end
                                                         + [FENCE, wg(5), COMMIT, WAIT] + store() + store(5) + KEEP_R30,
                                                         extra=FUNC_R)),
        "feed_read_in_loop_call_between": ("a stage, an indirect call, then the read in a loop: C7510 only",
                                           kernel([FENCE, wg(), COMMIT] + CALL_IND + inner + [neg5] + inner_end
                                                  + [FENCE, wg(5), COMMIT, WAIT] + store() + store(5) + KEEP_R30,
                                                  extra=FUNC_R)),
        "wait_partial_in_loop": ("a wait_group 2 in a loop leaves the first of three groups in flight, read after: C7514",
                                 kernel([FENCE, wg(), COMMIT, FENCE, wg(5), COMMIT, FENCE, wg(9), COMMIT] + LOOP_HEAD
                                        + ["wgmma.wait_group.sync.aligned 2;"] + loop_uni
                                        + ["add.f32 %f20, %f1, %f6;", WAIT] + store() + store(5) + store(9)
                                        + ["st.global.f32 [%rd3+100], %f20;"])),
        "wait_skipped_in_loop_then_partial": ("a wait skipped on a uniform path in a loop, then a wait_group 2: C7514",
                                              kernel([FENCE, wg(), COMMIT] + LOOP_HEAD
                                                     + [_b("SK", UNI), WAIT, "SK:", "wgmma.wait_group.sync.aligned 2;"]
                                                     + loop_uni + ["add.f32 %f20, %f1, %f6;", WAIT] + store()
                                                     + ["st.global.f32 [%rd3+100], %f20;"])),
        # the arrives ptxas still reports beside C7520
        "unfenced_then_div_wgmma": ("an unfenced wgmma, then one under a divergent branch: its arrive and C7520",
                                    kernel([wg(), _b("SK", DIV), wg(), "SK:", COMMIT, WAIT] + store())),
        "div_guard_wgmma_then_wgmma_uniform_loop": ("in a bra.uni loop: fence, a divergently guarded wgmma, another: "
                                                    "the arrive at the second and C7520",
                                                    kernel(LOOP_HEAD + [FENCE, f"{DIV} " + wg(), wg(5), COMMIT]
                                                           + loop_uni + [WAIT] + store() + store(5))),
        "div_guard_wgmma_after_commit_uniform_loop": ("in a bra.uni loop: fence, commit, a divergently guarded wgmma: "
                                                      "C7520 only",
                                                      kernel(LOOP_HEAD + [FENCE, COMMIT, f"{DIV} " + wg()] + loop_uni
                                                             + [WAIT] + store())),
        "div_guard_wgmma_uniform_loop": ("a wgmma under a divergent guard in a loop with a bra.uni back branch: "
                                         "C7520 and an arrive at the commit",
                                         kernel(LOOP_HEAD + [FENCE, f"{DIV} " + wg(), COMMIT] + loop_uni + [WAIT]
                                                + store())),
        "div_guard_wgmma_loop": ("the same with a plain bra back branch: C7520 only",
                                 kernel(LOOP_HEAD + [FENCE, f"{DIV} " + wg(), COMMIT]
                                        + ["add.u32 %r24, %r24, 1;", "setp.lt.u32 %p4, %r24, %r22;", "@%p4 bra LOOP;"]
                                        + [WAIT] + store())),
    }
