"""Experiments on pipeline instructions under divergent control before a later read of an
accumulator in flight (measured 2026-11-26, from campaign findings
``checker!=ptxas|spurious:C7517`` paired with ``missed:C7518``).

A fence, wgmma, commit or wait that some thread runs under a divergent branch or guard makes
every later wait ptxas would inject for a read a C7518 serialisation instead ("program
dependence on compiler-inserted WG.DP in divergent path"), however uniform and complete the
stages between are, and so does a wait before a read of a value a later wgmma takes as its
accumulator while a group is in flight (a feed read); a wait injected at the function's exit stays C7517, and so does one whose
read comes before the divergent instruction.  A commit skipped under a divergent branch gives
C7520 once any store follows, even with every group waited for (``div_pipe_commit_*``), and the
wait where paths with and without a group in flight meet serialises too when a store follows
(``div_pipe_empty_group_*``): both not yet modelled.  Files: ``tests/data/checker/NAME.ptx``.
"""
from __future__ import annotations


def more() -> dict[str, tuple[str, str]]:
    """name -> (description, kernel text), as in ``experiments.EXPERIMENTS``."""
    from .experiments import COMMIT, DIV, FENCE, UNI, WAIT, WAIT1, _b, kernel, store, wg

    def skip(cond: str, *body: str) -> list[str]:
        return [_b("SK", cond), *body, "SK:"]

    read = store()
    return {
        "div_pipe_fence_then_read": ("a fence skipped by a divergent branch, then a fenced wgmma whose "
                                     "accumulators are read uncommitted: C7518, not a wait",
                                     kernel(skip(DIV, FENCE) + [FENCE, wg()] + read)),
        "div_pipe_uniform_fence_then_read": ("the same fence skipped by a uniform branch: the wait at the read",
                                             kernel(skip(UNI, FENCE) + [FENCE, wg()] + read)),
        "div_pipe_wait_then_read": ("a wait_group skipped by a divergent branch, then a read in flight: C7518",
                                    kernel(skip(DIV, WAIT) + [FENCE, wg()] + read)),
        "div_pipe_guarded_fence_then_read": ("a fence under a divergent guard, then a read in flight: C7518",
                                             kernel([f"{DIV} {FENCE}", FENCE, wg()] + read)),
        "div_pipe_if_else_fences_then_read": ("a fence on each side of a divergent branch, then a read in flight: C7518",
                                              kernel([_b("EL", DIV), FENCE, "bra.uni JN;", "EL:", FENCE, "JN:", FENCE, wg()]
                                                     + read)),
        "div_pipe_stage_between_then_read": ("a divergent fence, a complete uniform stage, then a read in flight: "
                                             "still C7518",
                                             kernel(skip(DIV, FENCE) + [FENCE, wg(), COMMIT, WAIT, FENCE, wg(5)]
                                                    + store(5))),
        "div_pipe_wait1_then_read": ("a divergent fence, then a read left in flight by wait_group 1: C7518, not C7514",
                                     kernel(skip(DIV, FENCE) + [FENCE, wg(), COMMIT, WAIT1] + read)),
        "div_pipe_waited_read": ("a divergent fence, then a read after wait_group 0: nothing",
                                 kernel(skip(DIV, FENCE) + [FENCE, wg(), COMMIT, WAIT] + read)),
        "div_pipe_exit_wait": ("a divergent fence, then a group left in flight at the exit: the exit's wait stays C7517",
                               kernel(skip(DIV, FENCE) + [FENCE, wg(), COMMIT])),
        "div_pipe_after_the_read": ("a read in flight, then a divergent fence: the wait at the read stays C7517",
                                    kernel([FENCE, wg()] + read + skip(DIV, FENCE))),
        "div_pipe_commit_then_feed": ("an empty group committed under a divergent branch, then a rewrite of the next "
                                      "wgmma's accumulator (a feed read): C7518, not a wait",
                                      kernel(skip(DIV, FENCE, COMMIT) + ["xor.b32 %f1, %f1, 0x80000000;", FENCE, wg(),
                                                                         COMMIT, WAIT] + read)),
        "div_pipe_empty_group_then_store": ("an empty group (fence, commit) under a divergent branch, then a store: "
                                            "the wait where the paths meet serialises (C7518)",
                                            kernel(skip(DIV, FENCE, COMMIT) + ["st.global.u32 [%rd3+64], %r22;"])),
        "div_pipe_empty_group_then_exit": ("the same with nothing after the branch: the wait at the exit stays C7517",
                                           kernel(skip(DIV, FENCE, COMMIT))),
        "div_pipe_commit_then_store": ("a commit skipped by a divergent branch, a complete stage, then a store: C7520",
                                       kernel(skip(DIV, COMMIT) + [FENCE, wg(), COMMIT, WAIT] + read)),
        "div_pipe_commit_no_store": ("the same without the store: only the arrive at the skipped commit",
                                     kernel(skip(DIV, COMMIT) + [FENCE, wg(), COMMIT, WAIT])),
    }
