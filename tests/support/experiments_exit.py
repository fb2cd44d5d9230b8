"""Experiments on branches ptxas turns into the exit (measured 2026-11-26, from a campaign finding
``checker!=ptxas|line:C7517`` shrunk to three instructions: ``bra.uni`` over an unreachable
indirect call to the end of the body).

A ``bra`` to a block that, dead code aside, holds nothing but ``ret`` (or the body's end) becomes
the exit itself, so the wait for groups still in flight is reported at the branch, not at the
``ret`` (nor at line 0).  A guarded branch becomes a guarded exit with the wait before it: the
path that falls through has nothing in flight afterwards either.  Not when the target is the
next block: the branch goes away first (dead code between counts as nothing, unreachable code
does), nor when the target block keeps work before its ``ret``.  And a call right after a loop
whose group is in flight reports the wait it makes ptxas put later at the loop's exit branch, as a
read there does (``call_after_loop*``; a campaign finding at a back branch).  Files:
``tests/data/checker/NAME.ptx``; the rule: ``ptxas_sites.exit_jumps``.
"""
from __future__ import annotations


def more() -> dict[str, tuple[str, str]]:
    """name -> (description, kernel text), as in ``experiments.EXPERIMENTS``."""
    from .experiments import (CALL_R, COMMIT, FENCE, FUNC_R, KEEP_R30, LOOP_HEAD, LOOP_TAIL, UNI, WAIT, kernel,
                              store, wg)

    stage = [FENCE, wg(), COMMIT]
    unreachable = "add.s32 %r30, %r1, 1;"
    live = "st.global.u32 [%rd3+64], %r1;"

    def k(*body: str, ret: bool = True) -> str:
        text = kernel(list(body))
        return text if ret else text.replace("\tret;\n}", "}")

    return {
        "exit_jump_over_unreachable": ("a stage, then bra.uni over unreachable code to a ret: the wait at the branch",
                                       k(*stage, "bra.uni EX;", unreachable, "EX:")),
        "exit_jump_over_unreachable_to_end": ("the same with no ret (the body's end): the wait at the branch",
                                              k(*stage, "bra.uni EX;", unreachable, "EX:", ret=False)),
        "exit_jump_over_unreachable_call": (
            "bra.uni over an unreachable indirect call to the body's end (the campaign finding): the wait at the branch",
            k(*stage, "bra.uni EX;", "PROTO:", ".callprototype (.reg .b32 _) _ (.reg .b32 _);",
              "call (%r30), %rd9, (%r1), PROTO;", "EX:", ret=False)),
        "exit_jump_to_next": ("bra.uni to the next block, a ret there: the wait at the ret",
                              k(*stage, "bra.uni EX;", "EX:")),
        "exit_jump_to_next_end": ("bra.uni to a label that ends the body: the branch goes, the wait at line 0",
                                  k(*stage, "bra.uni EX;", "EX:", ret=False)),
        "exit_jump_dead_then_ret": ("the target block holds a dead mov, then ret: the wait at the branch",
                                    k(*stage, "bra.uni EX;", unreachable, "EX:", "mov.u32 %r31, %r2;")),
        "exit_jump_live_then_ret": ("the target block keeps a store before its ret: the wait at the ret",
                                    k(*stage, "bra.uni EX;", unreachable, "EX:", live)),
        "exit_jump_guarded": ("a uniform guarded branch to a ret block over a store: the wait at the branch only",
                              k(*stage, f"{UNI} bra EX;", live, "EX:")),
        "exit_jump_guarded_then_stage": (
            "the same with another stage on the path that falls through: waits at the branch and at the ret",
            k(*stage, f"{UNI} bra EX;", live, FENCE, wg(5), COMMIT, "EX:")),
        "exit_jump_guarded_over_dead": ("a guarded branch over dead code only: the branch goes, the wait at the ret",
                                        k(*stage, f"{UNI} bra EX;", unreachable, "EX:")),
        "exit_jump_two_paths": (
            "a stage on each side of a uniform branch, one side jumping over the other to the ret: "
            "a wait at that jump and one at the ret",
            k(f"{UNI} bra L7;", *stage, "bra.uni EX;", "L7:", FENCE, wg(5), COMMIT, "EX:")),
        # a call right after a loop whose group is in flight: the wait reported at the loop's exit
        # branch, as for a read there (a campaign finding, line:C7517, ptxas at the back branch)
        "call_after_loop": ("a stage in a loop, then a direct call right after it: the wait at the loop's branch",
                            kernel(LOOP_HEAD + stage + LOOP_TAIL + CALL_R + KEEP_R30 + [WAIT] + store(),
                                   extra=FUNC_R)),
        "call_after_loop_then_exit": ("the same with no read after: the exit's wait at the loop's branch",
                                      kernel(LOOP_HEAD + stage + LOOP_TAIL + CALL_R + KEEP_R30, extra=FUNC_R)),
        "call_after_loop_then_read": ("... then the accumulators stored with no wait_group: the wait at the loop's branch",
                                      kernel(LOOP_HEAD + stage + LOOP_TAIL + CALL_R + KEEP_R30 + store(), extra=FUNC_R)),
        "call_after_stage_then_exit": ("a stage, a call, the exit: the wait at the call (no loop)",
                                       kernel(stage + CALL_R + KEEP_R30, extra=FUNC_R)),
        "exit_jump_after_read": ("a stage read after its wait, then bra.uni over unreachable code: nothing at the branch",
                                 k(*stage, "wgmma.wait_group.sync.aligned 0;", *store(), "bra.uni EX;", unreachable, "EX:")),
    }
