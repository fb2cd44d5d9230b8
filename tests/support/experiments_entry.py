"""Experiments on what ptxas assumes at a function's entry (measured 2026-11-26, from a campaign
finding ``checker!=ptxas|spurious:C7517`` shrunk to six instructions: ``wait_group 0``, a label,
a lone commit, ``xor`` of a never-written accumulator, the wgmma that takes it, ``wait_group 0``).

A read of a value a later wgmma takes as accumulator (a feed read) waits (C7517) only while no
wait_group has been passed since the function's entry: there ptxas does not know what is in
flight, so even a lone commit (or fence, commit) makes a group it waits for, and a never-written
accumulator counts as read.  After any wait_group no feed read waits, with a real group in flight
too, and an empty commit makes no group for it (the stray commit of ``second_commit_at_end`` still
waits at the ``ret``: exits are another rule).  Files: ``tests/data/checker/NAME.ptx``; the rule:
``ptxas_model.PS.entry_unknown``, ``unknown_flying``, ``unset``.
"""
from __future__ import annotations


def more() -> dict[str, tuple[str, str]]:
    """name -> (description, kernel text), as in ``experiments.EXPERIMENTS``."""
    from .experiments import CALL_R, COMMIT, FENCE, FUNC_R, KEEP_R30, LOOP_HEAD, LOOP_TAIL, WAIT, WAIT1, kernel, store, wg

    tail = ["xor.b32 %f1, %f1, 1;", FENCE, wg(), COMMIT, WAIT] + store()  # %f1 is loaded first
    unset = ["xor.b32 %f20, %f20, 1;", FENCE, wg(20), COMMIT, WAIT] + store(20)  # %f20 never written
    pipe = [FENCE, wg(5), COMMIT]

    def k(*head: str) -> str:
        return kernel(list(head) + tail)

    return {
        "entry_commit_feed_read": ("a commit at the entry, then xor of an accumulator (loaded first) a later wgmma "
                                   "takes: the feed wait at the xor", k(COMMIT)),
        "entry_commit_twice_feed_read": ("two commits at the entry, then the read: the feed wait", k(COMMIT, COMMIT)),
        "entry_fence_commit_feed_read": ("fence, commit at the entry, then the read: the feed wait", k(FENCE, COMMIT)),
        "entry_label_commit_feed_read": ("a label, a commit, then the read: the feed wait", k("L3:", COMMIT)),
        "entry_wait_commit_feed_read": ("wait_group 0 first, then a commit and the read: no wait", k(WAIT, COMMIT)),
        "entry_wait_label_commit_feed_read": ("wait_group 0, a label, a commit, the read (the campaign finding): no wait",
                                              k(WAIT, "L3:", COMMIT)),
        "entry_wait_fence_commit_feed_read": ("wait_group 0, fence, commit, the read: no wait", k(WAIT, FENCE, COMMIT)),
        "entry_wait_commit_wait1_feed_read": ("wait_group 0, commit, wait_group 1, the read: no wait",
                                              k(WAIT, COMMIT, WAIT1)),
        "entry_wait_dead_wgmma_commit_feed_read": (
            "wait_group 0, a wgmma whose accumulators nothing reads (ptxas deletes it), commit, the read: no wait",
            k(WAIT, wg(5), COMMIT)),
        "entry_wait_live_wgmma_commit_feed_read": (
            "wait_group 0, a wgmma whose accumulators are stored at the end, commit, the read: no wait either "
            "(a real group in flight, but after a wait_group)",
            kernel([WAIT, wg(5), COMMIT] + tail + store(5))),
        "entry_pipe_wait_commit_feed_read": ("a stage, wait_group 0, a stray commit, then the read: no wait",
                                             kernel(pipe + [WAIT, COMMIT] + tail + store(5))),
        "entry_wait_pipe_feed_read": ("wait_group 0, then a stage in flight and the read: no wait (a wait_group came first)",
                                      kernel([WAIT] + pipe + tail + store(5))),
        "entry_pipe_feed_read": ("a stage in flight and the read, no wait_group before: the feed wait",
                                 kernel(pipe + tail + store(5))),
        "entry_pipe_wait1_pipe_feed_read": (
            "a stage, wait_group 1, another stage in flight, the read: no wait",
            kernel(pipe + [WAIT1, FENCE, wg(9), COMMIT] + tail + store(5) + store(9))),
        "entry_pipe_feed_read_unset": ("a stage in flight, then the read of a never-written accumulator: the feed wait",
                                       kernel(pipe + unset + store(5))),
        "entry_commit_feed_read_unset": ("a lone commit at the entry, then the read of a never-written accumulator: "
                                         "the feed wait", kernel([COMMIT] + unset)),
        # a call inside a loop entered with a group in flight: the wait ptxas makes for it is
        # reported at the end of the last commit's block, not at the call (a campaign finding,
        # line:C7517, shrunk to four instructions)
        "call_in_loop_after_commit": ("a stage, then a loop with a call in it: the wait at the commit",
                                      kernel(pipe + LOOP_HEAD + CALL_R + KEEP_R30 + LOOP_TAIL + store(5), extra=FUNC_R)),
        "call_in_loop_after_lone_commit": ("a lone commit, then a loop with a call in it: the wait at the commit",
                                           kernel([COMMIT] + LOOP_HEAD + CALL_R + KEEP_R30 + LOOP_TAIL, extra=FUNC_R)),
        "call_after_commit_no_loop": ("a stage, then the call with no loop: the wait at the call",
                                      kernel(pipe + CALL_R + KEEP_R30 + store(5), extra=FUNC_R)),
        "entry_feed_read_alone": ("the read with no commit before it: no wait", k()),
        "entry_wait_feed_read": ("wait_group 0, then the read: no wait", k(WAIT)),
    }
