"""Experiments on what ptxas assumes at a function's entry (measured 2026-11-26, from a campaign
finding ``checker!=ptxas|spurious:C7517`` shrunk to six instructions: ``wait_group 0``, a label,
a lone commit, ``xor`` of a never-written accumulator, the wgmma that takes it, ``wait_group 0``).

At the entry ptxas does not know what is in flight: a commit there (or a fence then a commit)
makes a group it waits for, so a later read of a value a wgmma will take as accumulator gets a
feed wait (C7517) -- a never-written accumulator included, in the entry block as after a label.
A ``wait_group`` tells it: after one, a commit with no wgmma before it on any path makes no group,
even with a fence between, nor one with only a dead wgmma (ptxas deletes it); and with a known
group in flight a never-written accumulator is a constant to ptxas (no feed wait; the model still
waits there: a known gap).  After a real pipeline and its wait, a stray commit still makes one
(``second_commit_at_end``, ``use_wait_commit``).  Files: ``tests/data/checker/NAME.ptx``.

The model agrees where no wait_group comes first and waits where ptxas does not after one (known
gaps, marked in the files).  A model change that fixed the shrunk finding and eleven variants of it
(an ``entry_unknown`` state, and never-written accumulators as constants unless a group committed
from it is in flight) was tried on 2026-11-26 and held back: it moved pipegen's agreement from
1904 to 1898 of 2000 before it was finished.
"""
from __future__ import annotations


def more() -> dict[str, tuple[str, str]]:
    """name -> (description, kernel text), as in ``experiments.EXPERIMENTS``."""
    from .experiments import COMMIT, FENCE, WAIT, WAIT1, kernel, store, wg

    tail = ["xor.b32 %f1, %f1, 1;", FENCE, wg(), COMMIT, WAIT] + store()

    def k(*head: str) -> str:
        return kernel(list(head) + tail)

    return {
        "entry_commit_feed_read": ("a commit at the entry, then xor of a never-written accumulator a later wgmma "
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
            "(a known group in flight: ptxas folds the never-written register)",
            kernel([WAIT, wg(5), COMMIT] + tail + store(5))),
        "entry_feed_read_alone": ("the read with no commit before it: no wait", k()),
        "entry_wait_feed_read": ("wait_group 0, then the read: no wait", k(WAIT)),
    }
