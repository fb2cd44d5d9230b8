"""Experiments on the block structure ptxas 13.0.88 sees when it places waits: what it merges or
deletes between a commit and a read (branches without a loop, empty loops), where an exit wait
goes when a call follows the split, and which exit waits survive beside C7509.

Recorded like the others (``experiments.EXPERIMENTS`` includes these) as
``tests/data/checker/NAME.ptx``.
"""
from __future__ import annotations


def more() -> dict[str, tuple[str, str]]:
    """name -> (description, kernel text), built on ``experiments``' helpers."""
    from .experiments import (CALL_IND, CALL_R, COMMIT, DIV, FENCE, FUNC_R, KEEP_R30, PRE_ZERO_ACC, UNI, WAIT, _b, kernel,
                              store, wg)

    read = ["mul.wide.u32 %rd10, %r20, 16;", "add.u64 %rd11, %rd3, %rd10;", "st.global.f32 [%rd11], %f1;",
            "st.global.f32 [%rd11+4], %f2;"]
    stage = [FENCE, wg(), COMMIT]

    def loop(n, body=()) -> list[str]:
        return ["mov.u32 %r24, 0;", "LOOP:", *body, "add.u32 %r24, %r24, 1;", f"setp.lt.u32 %p4, %r24, {n};",
                "@%p4 bra.uni LOOP;"]

    def diamonds(c1: str, c2: str) -> list[str]:
        return stage + [f"{c1} bra D1;", "add.u32 %r25, %r25, 1;", "D1:", f"{c2} bra D2;", "add.u32 %r25, %r25, 3;",
                        "D2:"] + read + ["st.global.u32 [%rd3+64], %r25;"]

    keep_r1 = ["st.global.u32 [%rd3+200], %r1;"]
    ZERO5, NEG5 = [f"mov.b32 %f{i}, 0;" for i in range(5, 9)], "xor.b32 %f5, %f5, 0x80000000;"
    return {
        # what lies between commit and read: ptxas's blocks, not the PTX's
        "no_wait_empty_loop_before_use": ("no wait, an empty counted loop between commit and use: deleted, the wait "
                                          "is at the read", kernel(stage + loop(2) + read)),
        "no_wait_store_loop_before_use": ("no wait, a counted loop that stores: the wait is hoisted to the end of "
                                          "the commit's block", kernel(stage + loop(2, ["st.global.u32 [%rd3+200], %r24;"])
                                                                     + read)),
        "no_wait_branch_to_next_before_use": ("no wait, a branch to the next label between commit and use: the wait "
                                              "is at the read", kernel(stage + [_b("SK", UNI), "SK:"] + read)),
        "no_wait_branch_over_add_before_use": ("no wait, a uniform branch over an add: if-converted, the wait is at "
                                               "the read", kernel(stage + [_b("SK", UNI), "add.u32 %r1, %r1, 1;", "SK:"]
                                                                  + read + keep_r1)),
        "no_wait_branch_over_store_before_use": ("no wait, a uniform branch over a store: the wait is at the read",
                                                 kernel(stage + [_b("SK", UNI), "st.global.u32 [%rd3+200], %r1;", "SK:"]
                                                        + read)),
        "no_wait_div_diamonds_two_predicates": ("no wait, two divergent if-blocks on different predicates: the wait "
                                                "is at the read", kernel(diamonds(DIV, "@%p3"))),
        "no_wait_uni_diamonds_one_predicate": ("no wait, two uniform if-blocks on one predicate: the wait is at the "
                                               "read", kernel(diamonds(UNI, UNI))),
        # exit waits and calls
        "exit_wait_call_after_split": ("a wait skipped on a uniform path, then a direct call, then the exit: the "
                                       "wait is reported at the call", kernel(stage + [_b("SK", UNI), WAIT, "SK:"]
                                                                              + CALL_R + KEEP_R30, extra=FUNC_R)),
        "exit_wait_call_after_split_c7509": ("the same after a direct and an indirect call: C7509 and the wait at "
                                             "the call", kernel(CALL_R + CALL_IND + stage + [_b("SK", UNI), WAIT, "SK:"]
                                                                + CALL_R + KEEP_R30, extra=FUNC_R)),
        "wait_at_indirect_call": ("committed, an indirect call, never waited nor used: C7510 and the wait at the "
                                  "call", kernel(stage + CALL_IND + KEEP_R30, extra=FUNC_R)),
        # what makes a direct call an "Extern call" (C7509): its callee's address is taken
        "direct_then_indirect_call_unknown_target": ("a direct call, then an indirect call through a register "
                                                     "nothing set (no address taken): C7510",
                                                     kernel(CALL_R + [i for i in CALL_IND if not i.startswith("mov.u64")]
                                                            + KEEP_R30 + stage + [WAIT] + store(), extra=FUNC_R)),
        "direct_then_indirect_call_other_target": ("a direct call to one function, the address of another taken "
                                                   "for the indirect call: C7510",
                                                   kernel(CALL_R + ["mov.u64 %rd9, other;"]
                                                          + [i for i in CALL_IND if not i.startswith("mov.u64")]
                                                          + KEEP_R30 + stage + [WAIT] + store(),
                                                          extra=FUNC_R + "\n" + FUNC_R.replace("side", "other"))),
        "empty_group_after_direct_and_indirect_call": ("a direct call, an indirect call, then fence and commit "
                                                       "never waited: C7509 only",
                                                       kernel(CALL_R + CALL_IND + [FENCE, COMMIT] + KEEP_R30,
                                                              extra=FUNC_R)),
        "exit_wait_split_then_call_loop_c7509": ("commit, a uniform branch past a direct and an indirect call and "
                                                 "the wait, then a loop with a direct call: C7509 and the wait at "
                                                 "that call",
                                                 kernel(stage + [_b("SK", UNI)] + CALL_R + CALL_IND + [WAIT, "SK:",
                                                        "LC:"] + CALL_R + ["add.u32 %r24, %r24, 1;",
                                                                           "setp.lt.u32 %p4, %r24, %r22;",
                                                                           "@%p4 bra.uni LC;"] + store() + KEEP_R30,
                                                        extra=FUNC_R)),
        # an uncommitted wgmma's accumulator read, then another wgmma before the commit: serialised
        "read_uncommitted_then_wgmma": ("no fence: a wgmma, a read of its accumulator, another wgmma on them: C7514, "
                                        "no wait at the read", kernel([wg(), "st.global.f32 [%rd3+0], %f1;", wg()]
                                                                      + store())),
        "read_uncommitted_then_wgmma_other_regs": ("the same with the second wgmma on other registers: C7514",
                                                   kernel([wg(), "st.global.f32 [%rd3+0], %f1;", wg(5, sd="0")]
                                                          + store() + store(5))),
        "read_uncommitted_then_wgmma_committed": ("fenced, the read, a scale-d 0 wgmma, commit and wait: C7514 only",
                                                  kernel([FENCE, wg(), "st.global.f32 [%rd3+0], %f1;", wg(sd="0"),
                                                          COMMIT, WAIT] + store())),
        "read_uncommitted_then_commit": ("fenced, the read, then commit and wait: the wait at the read",
                                         kernel([FENCE, wg(), "st.global.f32 [%rd3+0], %f1;", COMMIT, WAIT] + store())),
        "read_uncommitted_zero_acc_then_wgmma": ("accumulators zeroed first, then the read and a scale-d 0 wgmma: "
                                                 "C7511", kernel([wg(), "st.global.f32 [%rd3+0], %f1;", wg(sd="0")]
                                                                 + store(), pre=PRE_ZERO_ACC)),
        # a direct call while groups are in flight: which later wait goes to the call
        "feed_read_after_call": ("committed, a direct call, then a later wgmma's accumulator negated: the wait "
                                 "at the negation, not the call",
                                 kernel([FENCE, wg(), COMMIT, *CALL_R, NEG5, FENCE, wg(5), COMMIT, WAIT] + store() + store(5) + KEEP_R30, extra=FUNC_R)),
        "feed_read_after_call_and_add": ("the same with an add between: the wait at the negation",
                                         kernel([FENCE, wg(), COMMIT, *CALL_R, "add.u32 %r31, %r30, 1;", NEG5, FENCE,
                                                 wg(5), COMMIT, WAIT]
                                                + store() + store(5) + KEEP_R30, extra=FUNC_R)),
        # a later wgmma's accumulators zeroed, then negated while a group is in flight: ptxas folds
        # the constant only inside the block that set it
        "feed_read_of_zero_same_block": ("zeroed, a stage, the negation in the same block: folded, no wait",
                                         kernel(ZERO5 + [FENCE, wg(), COMMIT, NEG5, FENCE, wg(5), COMMIT, WAIT]
                                                + store() + store(5))),
        "feed_read_of_zero_after_call": ("zeroed, a stage, a direct call, the negation: the wait at the negation",
                                         kernel(ZERO5 + [FENCE, wg(), COMMIT, *CALL_R, NEG5, FENCE, wg(5), COMMIT, WAIT]
                                                + store() + store(5) + KEEP_R30, extra=FUNC_R)),
        "feed_read_of_zero_after_call_before": ("a call, then zeroed, a stage, the negation: folded, no wait",
                                                kernel(CALL_R + ZERO5 + [FENCE, wg(), COMMIT, NEG5, FENCE, wg(5), COMMIT,
                                                                         WAIT] + store() + store(5) + KEEP_R30,
                                                       extra=FUNC_R)),
        "feed_read_of_zero_after_branch": ("zeroed, a stage, a uniform branch over a store, the negation: the wait",
                                           kernel(ZERO5 + [FENCE, wg(), COMMIT, _b("SK", UNI),
                                                           "st.global.u32 [%rd3+200], %r1;", "SK:", NEG5, FENCE, wg(5),
                                                           COMMIT, WAIT] + store() + store(5))),
        "feed_read_of_zero_after_loop": ("zeroed, a stage, a loop that stores, the negation: the wait",
                                         kernel(ZERO5 + [FENCE, wg(), COMMIT]
                                                + loop("%r22", ["st.global.u32 [%rd3+200], %r24;"])
                                                + [NEG5, FENCE, wg(5), COMMIT, WAIT] + store() + store(5))),
        "acc_read_after_call": ("committed, a direct call, then the accumulators stored: the wait at the call",
                                kernel([FENCE, wg(), COMMIT, *CALL_R] + store() + KEEP_R30, extra=FUNC_R)),
        # a body that falls through its closing brace: ptxas returns there, at "line 0"
        "falls_off_the_end": ("fence, wgmma, commit and no ret: the exit wait is reported at line 0",
                              kernel([FENCE, wg(), COMMIT]).replace("\tret;\n", "")),
        "falls_off_the_end_waited": ("the same with a wait: nothing at line 0",
                                     kernel([FENCE, wg(), COMMIT, WAIT] + store()).replace("\tret;\n", "")),
        # C7512: too many registers live at once
        "c7512_live_228": ("228 uninitialised accumulator registers of two wgmmas live from the entry (plus three "
                           "addresses): compiles", kernel(_two_stages(256, 200))),
        "c7512_live_230": ("230 of them: C7512", kernel(_two_stages(256, 200, 8))),
        # ptxas does not fold the back branch of a loop that runs once: its second iteration still counts
        "feed_read_in_one_trip_loop": ("a later wgmma's accumulator read in a loop that runs once, an empty group "
                                       "committed after it: the wait at the read all the same",
                                       kernel(["mov.u32 %r24, 0;", "L1:", "xor.b32 %f5, %f5, 0x80000000;", FENCE,
                                               COMMIT, "add.u32 %r24, %r24, 1;", "setp.lt.u32 %p4, %r24, 1;",
                                               "@%p4 bra.uni L1;", WAIT, FENCE, wg(5), COMMIT, WAIT] + store(5))),
        "feed_read_in_two_trip_loop": ("the same loop running twice: the wait at the read",
                                       kernel(["mov.u32 %r24, 0;", "L1:", "xor.b32 %f5, %f5, 0x80000000;", FENCE,
                                               COMMIT, "add.u32 %r24, %r24, 1;", "setp.lt.u32 %p4, %r24, 2;",
                                               "@%p4 bra.uni L1;", WAIT, FENCE, wg(5), COMMIT, WAIT] + store(5))),
    }


def _two_stages(n1: int, n2: int, n3_f16: int = 0) -> list[str]:
    """Fenced, committed, waited wgmmas (f32 m64n{n1}/m64n{n2}, f16 m64n{n3}) on registers nothing
    initialised, each stored after its wait: all of them are live from the entry."""
    from .experiments import COMMIT, FENCE, WAIT

    body, specs = [], [(n1, "f32", 2), (n2, "f32", 2)] + ([(n3_f16, "f16", 4)] if n3_f16 else [])
    for j, (n, t, per) in enumerate(specs):
        regs = ", ".join(f"%q{j}_{i}" for i in range(n // per))
        body += [f".reg .b32 %q{j}_<{n // per}>;", FENCE,
                 f"wgmma.mma_async.sync.aligned.m64n{n}k16.{t}.f16.f16 {{{regs}}}, %rd1, %rd2, 1, 1, 1, 0, 0;",
                 COMMIT, WAIT] + [f"st.global.b32 [%rd3+{4 * i}], %q{j}_{i};" for i in range(n // per)]
    return body
