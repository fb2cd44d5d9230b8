"""Experiments on when ptxas 13.0.88 trusts ``bra.uni`` (measured 2026-11-27, from campaign findings
seed 9 #93 and seed 10 #77, ``missed:C7518`` and ``spurious:C7519`` beside C7520, shrunk to a guarded
``st.shared`` and a ``bra.uni`` on a %tid.x predicate over a stage).

A ``bra.uni`` on a %tid.x predicate is uniform to ptxas (``uniform_tid_x_bra_uni``) -- unless the
function holds a guarded load, store, atomic or barrier that ptxas keeps, or a guarded wgmma it
deletes as dead, and the branch skips a fence, wgmma or commit: then its edges diverge by the
predicate (what it controls stays uniform).  A guarded ``setp``, wait, commit, ``ret`` or live wgmma
does not do it, nor a dead guarded ``add``, nor a region holding only a wait_group.  The rule:
``ptxas_rules.BraUniDistrusted``, ``uniformity.analyse_uniformity(distrust_uni=...)``.  Where the
distrusted branch leaves groups in flight on one path to an exit with work between, ptxas
serialises (C7518, as for a plain divergent branch: ``div_pipe_empty_group_then_store``); the model
does not model that yet (the ``MODEL: known-gap`` files).

Also here, from campaign seed 1 #76 shrunk: a feed read (a value a later wgmma takes as accumulator,
read while an entry group is in flight) waits where the wgmma it feeds has its output live by plain
liveness -- a later wgmma reading that output counts, whatever becomes of its own output
(``feed_through_two_wgmmas_*``; ``ptxas_dce`` per-register liveness); and ptxas keeps such feed waits
placed before it finds a C7520 divergence, as it keeps the arrives (``feed_wait_then_c7520*``).
Files: ``tests/data/checker/NAME.ptx``.
"""
from __future__ import annotations


def more() -> dict[str, tuple[str, str]]:
    """name -> (description, kernel text), as in ``experiments.EXPERIMENTS``."""
    from .experiments import COMMIT, FENCE, WAIT, kernel, store, wg

    wa = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1,%f2,%f3,%f4}, %rd1, %rd2, 1, 1, 1, 0, 0;"
    wb = ("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%f1,%f2,%f3,%f4,%f5,%f6,%f7,%f8}, %rd1, %rd2, "
          "1, 1, 1, 0, 0;")
    feed = [COMMIT, "xor.b32 %f1, %f1, 1;"]  # an entry group in flight, then a feed read of %f1

    guarded_st = "@%p2 st.global.u32 [%rd3+64], %r1;"
    s = store()

    def k(*body: str) -> str:
        return kernel(list(body))

    return {
        "bra_uni_distrusted_over_fence": (
            "a guarded store, then bra.uni on a %tid.x predicate over a fence: C7520 (without the store, an arrive)",
            k(guarded_st, "@%p1 bra.uni L3;", FENCE, "L3:", wg(), COMMIT, WAIT, *s)),
        "bra_uni_trusted_over_fence": (
            "bra.uni on a %tid.x predicate over a fence, no guarded store: the arrive only",
            k("@%p1 bra.uni L3;", FENCE, "L3:", wg(), COMMIT, WAIT, *s)),
        "bra_uni_distrusted_over_commit": (
            "a guarded store, bra.uni on a %tid.x predicate over the commit: C7520",
            k(guarded_st, FENCE, wg(), "@%p1 bra.uni L3;", COMMIT, "L3:", WAIT, *s)),
        "bra_uni_distrusted_over_wgmma": (
            "a guarded store, bra.uni on a %tid.x predicate over the wgmma: C7520",
            k(guarded_st, FENCE, "@%p1 bra.uni L3;", wg(), "L3:", COMMIT, WAIT, *s)),
        "bra_uni_trusted_over_wait": (
            "a guarded store, bra.uni on a %tid.x predicate over a wait_group only: trusted (C7514 and the wait)",
            k(guarded_st, FENCE, wg(), COMMIT, "@%p1 bra.uni L3;", WAIT, "L3:", *s)),
        "bra_uni_trusted_guarded_setp": (
            "a guarded setp (live), bra.uni on a %tid.x predicate over a stage, a skipped wait: trusted",
            k("@%p2 setp.eq.u32 %p3, %r1, 0;", "selp.u32 %r5, 1, 2, %p3;", "st.global.u32 [%rd3+68], %r5;",
              "@%p1 bra.uni L3;", FENCE, wg(), COMMIT, "L3:", "@%p2 bra SK;", WAIT, "SK:")),
        "bra_uni_trusted_guarded_live_wgmma": (
            "a guarded live wgmma first, then the same: trusted",
            k(FENCE, "@%p2 " + wg(9), COMMIT, WAIT, *store(9),
              "@%p1 bra.uni L3;", FENCE, wg(), COMMIT, "L3:", "@%p2 bra SK;", WAIT, "SK:")),
        "bra_uni_trusted_dead_guarded_add": (
            "a dead guarded add first, then the same: trusted",
            k("@%p2 add.u32 %r30, %r1, 1;", "@%p1 bra.uni L3;", FENCE, wg(), COMMIT, "L3:", "@%p2 bra SK;", WAIT, "SK:")),
        "bra_uni_trusted_inner_after_distrusted": (
            "campaign seed 5 #98 shrunk: a guarded store, a distrusted bra.uni over a region whose own bra.uni "
            "(on a value computed there) skips the fence: that one stays trusted (the arrive at the commit)",
            k(guarded_st, "@%p1 bra.uni L1;", "setp.ne.u32 %p5, %r22, 0;", "@%p5 bra.uni FN;", FENCE, "FN:", COMMIT,
              "L1:")),
        "bra_uni_distrusted_stage_then_exit_work": (
            "a guarded store, bra.uni on a %tid.x predicate over a stage, a uniform branch over the wait: C7518",
            k(guarded_st, "@%p1 bra.uni L3;", FENCE, wg(), COMMIT, "L3:", "@%p2 bra SK;", WAIT, "SK:")),
        # a read after a wait that a uniform branch (or guard) skipped, past a divergent pipeline instruction
        "div_pipe_then_skipped_wait_read": (
            "a fence skipped by a divergent branch, a stage, a uniform branch over its wait, the read: C7514 "
            "and the exit's wait (not C7518)",
            k("@%p1 bra L3;", FENCE, "L3:", FENCE, wg(5), COMMIT, "@%p2 bra SK;", WAIT, "SK:", *store(5))),
        "div_pipe_then_guarded_wait_read": (
            "the same with a guarded wait: C7514 and the exit's wait",
            k("@%p1 bra L3;", FENCE, "L3:", FENCE, wg(5), COMMIT, "@%p2 " + WAIT, *store(5))),
        "div_skip_wait_then_read": (
            "a wait skipped by a divergent branch, then the read: C7518", k(FENCE, wg(), COMMIT, "@%p1 bra L3;", WAIT, "L3:", *s)),
        "div_skip_wait_then_uniform_skip_read": (
            "a wait skipped by a divergent branch, a fence, a second wait skipped by a uniform branch, the read: "
            "C7514 and the exit's wait (campaign seed 1 #85 shrunk)",
            k(FENCE, wg(), COMMIT, "@%p1 bra L3;", WAIT, "L3:", FENCE, "@%p2 bra SK;", WAIT, "SK:", *s)),
        "bra_uni_distrusted_stage_then_uniform_skip_read": (
            "a guarded store, bra.uni on a %tid.x predicate over a stage, a uniform branch over the wait, the "
            "read: C7518 (the wgmma was issued on one path only)",
            k(guarded_st, "@%p1 bra.uni L3;", FENCE, wg(), COMMIT, "L3:", "@%p2 bra SK;", WAIT, "SK:", *s)),
        "feed_through_two_wgmmas_dead": (
            "an entry commit, xor of %f1, a wgmma on %f1..%f4, a wider one on %f1..%f8, only %f8 stored: the feed "
            "wait at the xor (the second wgmma reads the first one's %f1)",
            k(*feed, FENCE, wa, wb, COMMIT, WAIT, "st.global.f32 [%rd3], %f8;")),
        "feed_through_two_wgmmas_commit_between": (
            "the same with a commit and fence between the two wgmmas: the feed wait",
            k(*feed, FENCE, wa, COMMIT, FENCE, wb, COMMIT, WAIT, "st.global.f32 [%rd3], %f8;")),
        "feed_of_one_wgmma_dead_output": (
            "an entry commit, xor of %f1, one wgmma, only %f2 stored: no feed wait (its output %f1 is dead)",
            k(*feed, FENCE, wa, COMMIT, WAIT, "st.global.f32 [%rd3], %f2;")),
        "feed_wait_then_c7520": (
            "a feed wait, then a stage and a wgmma skipped by a divergent branch: C7520, the arrive and the feed "
            "wait placed before it stay",
            k(*feed, FENCE, wg(), COMMIT, WAIT, *s, "@%p1 bra L3;", FENCE, wg(5), "L3:", COMMIT, WAIT, *store(5))),
        "feed_wait_in_flight_then_c7520": (
            "a group in flight, a feed read, then the divergence: C7520 and the feed wait",
            k(FENCE, wg(5), COMMIT, "xor.b32 %f1, %f1, 1;", FENCE, wg(), COMMIT, WAIT, *s, "@%p1 bra L3;", FENCE,
              wg(9), "L3:", COMMIT, WAIT, *store(9), *store(5))),
        "bra_uni_distrusted_dead_guarded_wgmma": (
            "bra.uni on a %tid.x predicate over a dead guarded wgmma and a commit: C7520",
            k("@!%p1 bra.uni L3;", "@%p2 " + wg(), COMMIT, "L3:", WAIT)),
    }
