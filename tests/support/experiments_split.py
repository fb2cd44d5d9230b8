"""Experiments on where ptxas waits when paths with and without a committed group meet before
the exit (measured 2026-11-26, from a campaign finding ``checker!=ptxas|line:C7517`` shrunk to
four instructions).

A wait skipped on one path is reported at the branch (or guarded wait) that split the paths --
unless work that ptxas keeps runs after the paths meet and before the exit: a store, a barrier,
live arithmetic, even a self-move ``mov r, r`` (which ptxas keeps at that point however dead).
Then the wait goes to the exit (line 0 where the kernel falls off its end); so does a dead
update in place (``add r, r, 1``; a campaign finding shrunk to 4 instructions).  Other dead code
there (a dead ``mov``, ``add`` or ``ld``) and control flow (a ``bra.uni`` to the next block) do not
count, nor does work on the waiting path before the paths meet.

A self-move ``mov r, r`` of an accumulator is no read and no write for ptxas's waits: not of a
wgmma in flight (no C7517, no C7515), not of a value a later wgmma takes (no feed wait), unlike
a copy from another register or an ``add`` (``self_move_*``; from campaign findings
``checker!=ptxas|spurious:C7517`` shrunk to 6 instructions).  A read of an accumulator in flight by two
adjacent stores waits at the second store only where the two make an 8-byte aligned pair
(``store_pair_*``; from a ``line:C7517`` finding).  A live read of a register that a later
wgmma overwrites with scale-d 0 waits as a read of one it will take as accumulator does
(``read_before_scale_d_0_*``; from a ``missed:C7517`` finding).  An integer update in place that
leaves the register as it is (``xor r, r, 0``, ``and r, r, -1``, ``max r, r, r``) is a self-move to
ptxas (``identity_in_place_*``; from ``spurious:C7517`` findings), and a feed read waits only
where the wgmma output it feeds is live: accumulator i feeds output i alone
(``feed_of_dead_accumulator*``; from the same findings).  Files: ``tests/data/checker/NAME.ptx``.
"""
from __future__ import annotations


def more() -> dict[str, tuple[str, str]]:
    """name -> (description, kernel text), as in ``experiments.EXPERIMENTS``."""
    from .experiments import COMMIT, FENCE, PRE, UNI, WAIT, _b, kernel, store, wg

    stage = [FENCE, wg(), COMMIT]

    def split(*after: str, waiting: tuple[str, ...] = (), ret: bool = True) -> str:
        text = kernel(stage + [_b("SK", UNI), WAIT, *waiting, "SK:", *after])  # (kernel() ends in ret)
        return text if ret else text.replace("\tret;\n}", "}")

    live = "st.global.u32 [%rd3+64], %r1;"
    unset_pre = [x for x in PRE if not x.startswith("ld.global.f32")]  # accumulators never written

    def feed(*ops: str, reads: list[str] | None = None, pre: list[str] | None = None) -> str:
        """An empty group committed, ``ops`` on %f1 (a later wgmma's accumulator), a stage, its
        wait, then ``reads`` (the accumulators stored, by default)."""
        return kernel([COMMIT, *ops] + stage + [WAIT] + (store() if reads is None else reads), pre=pre)
    SIDE = ".func (.reg .b32 r) side(.reg .b32 x)\n{\n\tadd.u32 r, x, 1;\n\tret;\n}"
    return {
        "split_then_exit": ("a wait skipped on a uniform path, the paths meet at the exit: the wait at the branch",
                            split()),
        "split_then_store": ("... a store after the paths meet: the wait at the exit", split(live)),
        "split_then_bar": ("... a barrier after the paths meet: the wait at the exit", split("bar.sync 0;")),
        "split_then_self_move": ("... a dead self-move mov r, r after the paths meet: the wait at the exit",
                                 split("mov.b32 %r30, %r30;")),
        "split_then_dead_mov": ("... a dead mov after the paths meet: the wait at the branch",
                                split("mov.b32 %r30, 5;")),
        "split_then_dead_add": ("... a dead add after the paths meet: the wait at the branch",
                                split("add.s32 %r30, %r1, 1;")),
        "split_then_dead_load": ("... a dead load after the paths meet: the wait at the branch",
                                 split("ld.global.u32 %r30, [%rd3+68];")),
        "split_then_dead_in_place_add": ("... a dead add r, r, 1 (an update in place) after the paths meet: the wait "
                                         "at the exit", split("add.s32 %r1, %r1, 1;")),
        "split_then_dead_in_place_xor": ("... a dead xor r, r, 1 of a register never set: the wait at the exit",
                                         split("xor.b32 %r30, %r30, 1;")),
        "split_then_bra_uni": ("... a bra.uni to the next block after the paths meet: the wait at the branch",
                               split("bra.uni NX;", "NX:")),
        "split_then_store_then_block": ("... a store, then another block before the exit: the wait at the exit",
                                        split(live, "bra.uni NX;", "NX:")),
        "split_store_on_waiting_path": ("a store after the wait on the waiting path only: the wait at the branch",
                                        split(waiting=(live,))),
        "split_then_self_move_falls_off": ("a self-move after the paths meet and no ret: the wait at line 0",
                                           split("mov.b32 %r30, %r30;", ret=False)),
        "guarded_wait_then_store": ("a guarded wait, then a store, then the exit: the wait at the exit",
                                    kernel(stage + [f"{UNI} {WAIT}", live, "ret;"])),
        "store_then_guarded_wait": ("a store, then a guarded wait, then the exit: the wait at the guarded wait",
                                    kernel(stage + [live, f"{UNI} {WAIT}", "ret;"])),
        "call_split_then_store": ("a direct call, then the split, then a store: the wait at the exit, not the call",
                                  kernel(stage + ["call (%r30), side, (%r1);", _b("SK", UNI), WAIT, "SK:", live, "ret;"],
                                         extra=SIDE)),
        "call_split_then_exit": ("a direct call, then the split, then the exit: the wait at the branch",
                                 kernel(stage + ["call (%r30), side, (%r1);", _b("SK", UNI), WAIT, "SK:", "ret;"],
                                        extra=SIDE)),
        "self_move_in_flight": ("a self-move of an accumulator in flight, then the wait and a read: no wait injected",
                                kernel(stage + ["mov.b32 %f1, %f1;", WAIT] + store())),
        "self_move_in_flight_then_wgmma": ("a self-move of an accumulator in flight, then a second stage on it: nothing",
                                           kernel(stage + ["mov.b32 %f2, %f2;"] + stage + [WAIT] + store())),
        "self_move_feed": ("an empty group committed, a self-move of a later wgmma's accumulator: no feed wait",
                           feed("mov.b32 %f1, %f1;")),
        "copy_feed": ("... a copy from another register into it instead: no feed wait either",
                      feed("mov.b32 %f1, %f5;")),
        "add_feed": ("... an add reading it instead: the feed wait",
                     feed("add.f32 %f1, %f1, 0f3F800000;")),
        # integer updates in place that leave the register as it is: ptxas folds them to a
        # self-move (no read, no write; campaign findings spurious:C7517, shrunk to 4 instructions)
        "identity_in_place_xor": ("an empty group, then xor r, r, 0 on a later wgmma's accumulator: no feed wait",
                                  feed("xor.b32 %f1, %f1, 0;")),
        "identity_in_place_or_left": ("... or r, 0, r: no feed wait",
                                      feed("or.b32 %f1, 0, %f1;")),
        "identity_in_place_and_ones": ("... and r, r, 0xFFFFFFFF: no feed wait",
                                       feed("and.b32 %f1, %f1, 0xFFFFFFFF;")),
        "identity_in_place_shl": ("... shl r, r, 0: no feed wait",
                                  feed("shl.b32 %f1, %f1, 0;")),
        "identity_in_place_mul": ("an empty group, mul.lo r, r, 1 on a .b32 accumulator of an unfenced f16 wgmma, "
                                  "that wgmma: no feed wait (the campaign repro's shape)", _b32_feed("mul.lo.s32 %r56, %r56, 1;")),
        "identity_in_place_max": ("... max r, r, r: no feed wait", _b32_feed("max.s32 %r56, %r56, %r56;")),
        "identity_in_place_add_one": ("... add r, r, 1 (not an identity): an arrive at the wgmma",
                                      _b32_feed("add.s32 %r56, %r56, 1;")),
        "identity_in_place_xor_one": ("... xor r, r, 1 (not an identity): the feed wait",
                                      feed("xor.b32 %f1, %f1, 1;")),
        # a never-written accumulator read while an empty group is in flight, then a fenced stage
        "feed_read_of_unset_after_label": ("an empty group, a label, then xor r, r, 1 of a never-written accumulator "
                                           "a later (fenced) wgmma reads: the feed wait",
                                           feed("L3:", "xor.b32 %f1, %f1, 1;", pre=unset_pre)),
        "feed_read_of_unset_same_block": ("... with no label: the feed wait too",
                                          feed("xor.b32 %f1, %f1, 1;", pre=unset_pre)),
        "feed_read_of_loaded_after_label": ("... of a loaded accumulator after a label: the feed wait",
                                            feed("L3:", "xor.b32 %f1, %f1, 1;")),
        # ptxas places a feed wait only for a read some live output needs: accumulator i of a wgmma
        # feeds its output i alone (a campaign finding spurious:C7517, shrunk to 5 instructions)
        "feed_of_dead_accumulator": ("... xor r, r, 1 of a loaded accumulator whose output nothing reads after the "
                                     "wgmma (the other three are stored): no feed wait",
                                     feed("L3:", "xor.b32 %f1, %f1, 1;", reads=store()[1:])),
        "feed_of_dead_accumulator_same_block": ("... the same with no label: no feed wait",
                                                feed("xor.b32 %f1, %f1, 1;", reads=store()[1:])),
        "split_over_read_in_flight": ("a uniform branch over a read in flight and its wait: ptxas waits once, at the "
                                      "branch (ptxas made the branch a guarded exit: ptxas_sites.exit_jumps)",
                                      kernel(stage + [_b("SK", UNI), store()[0], WAIT, "SK:"])),
        "div_bra_uni_over_feed_read": ("an empty group, a bra.uni on a %tid.x predicate over a feed read and a wait, "
                                       "then an unfenced wgmma: C7518 (the model trusts bra.uni and waits; a campaign "
                                       "finding shrunk to 9 instructions)", _DIV_BRA_UNI_FEED),
        **{f"store_pair_{a}_{b}": (f"a read in flight by stores to +{a} then +{b}: the wait at the second store only "
                                   "where the pair starts 8-byte aligned",
                                   kernel(stage + [f"st.global.f32 [%rd3+{a}], %f1;", f"st.global.f32 [%rd3+{b}], %f2;"]))
           for a, b in ((224, 228), (228, 232), (228, 224), (232, 228), (4, 8), (8, 12))},
        "store_pair_aligned_first": ("a campaign finding shrunk to 4 instructions: an unfenced register-A wgmma "
                                     "(m64n112), commit, stores to +216 and +220: ptxas waits at the first store "
                                     "although the pair is 8-byte aligned", _STORE_PAIR_FIRST),
        "read_before_scale_d_0_other_dest": ("an empty group, an add reading a later scale-d 0 wgmma's accumulator "
                                             "into another (live) register: the wait at the add",
                                             kernel([COMMIT, "add.f32 %f5, %f1, 0f3F800000;"]
                                                    + [FENCE, wg(sd="0"), COMMIT, WAIT] + store() + store(5))),
        "read_before_scale_d_0_in_place": ("... an add updating that accumulator in place (dead: the wgmma "
                                           "overwrites it): no wait",
                                           kernel([COMMIT, "add.f32 %f1, %f1, 0f3F800000;"]
                                                  + [FENCE, wg(sd="0"), COMMIT, WAIT] + store())),
        "read_before_scale_d_0_skipped": ("... the in-place add live on a path that skips the wgmma: the wait at "
                                          "the add (a campaign finding shrunk to 7 instructions)",
                                          kernel([COMMIT, "add.f32 %f1, %f1, 0f3F800000;", _b("SK", UNI)]
                                                 + [FENCE, wg(sd="0"), COMMIT, WAIT, "SK:"] + store())),
        "split_then_read": ("... the accumulators read after the paths meet: the wait at the read",
                            split(*store())),
    }


_DIV_BRA_UNI_FEED = """.version 8.4
.target sm_90a
.address_size 64

.visible .entry k()
{
	.reg .b32 %r<123>;
	.reg .b64 %rd<17>;
	.reg .pred %p<5>;
	.reg .f16x2 %hh<2>;
	mov.u32 %r0, %tid.x;
	setp.ne.u32 %p1, %r0, 0;
	@%p4 st.shared.b32 [%r114], %r122;
	wgmma.commit_group.sync.aligned;
	@!%p1 bra.uni L3;
	xor.b32 %hh0, %hh0, 1;
	wgmma.wait_group.sync.aligned 0;
L3:
	wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%hh0, %hh1}, %rd11, %rd10, %p0, 1, 1, 0, 0;
	st.global.b32 [%rd16], %hh0;
}
"""


_STORE_PAIR_FIRST = """.version 8.2
.target sm_90a
.address_size 64

.visible .entry k()
{
\t.reg .b32 %r<99>;
\t.reg .b64 %rd<26>;
\t.reg .f32 %f<56>;
\twgmma.mma_async.sync.aligned.m64n112k16.f32.f16.f16 {%f0, %f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8, %f9, %f10, %f11, %f12, %f13, %f14, %f15, %f16, %f17, %f18, %f19, %f20, %f21, %f22, %f23, %f24, %f25, %f26, %f27, %f28, %f29, %f30, %f31, %f32, %f33, %f34, %f35, %f36, %f37, %f38, %f39, %f40, %f41, %f42, %f43, %f44, %f45, %f46, %f47, %f48, %f49, %f50, %f51, %f52, %f53, %f54, %f55}, {%r95, %r96, %r97, %r98}, %rd14, 0, 1, 1, 0;
\twgmma.commit_group.sync.aligned;
\tst.global.f32 [%rd25+216], %f54;
\tst.global.f32 [%rd25+220], %f55;
}

"""


def _b32_feed(op: str) -> str:
    """The shrunk campaign repro behind identity_in_place_*: an empty commit group, ``op`` on a
    .b32 accumulator register of the unfenced f16 wgmma that follows, its wait and a store."""
    return "\n".join([
        ".version 8.0", ".target sm_90a", ".address_size 64", "",
        ".visible .entry k(.param .u64 out)", "{", "\t.reg .b32 %r<60>;", "\t.reg .b64 %rd<23>;",
        "\t.reg .pred %p<1>;", "\tld.param.u64 %rd22, [out];", "\twgmma.commit_group.sync.aligned;", f"\t{op}",
        "\twgmma.mma_async.sync.aligned.m64n16k16.f16.f16.f16 {%r56, %r57, %r58, %r59}, {%r52, %r53, %r54, %r55}, "
        "%rd11, %p0, 1, 1, 0;",
        "\twgmma.wait_group.sync.aligned 0;", "\tst.global.b32 [%rd22], %r58;", "\tret;", "}", ""])
