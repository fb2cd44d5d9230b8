"""Whole mainloop kernels (issue 27): an S-stage ring of shared-memory buffers filled over K tiles by
bulk async copies (``cp.async.bulk`` global -> shared, ``mbarrier::complete_tx::bytes``), each stage
guarded by an mbarrier whose waits flip parity every S tiles, consumed by every thread.

Drawn: threads (1-3 warpgroups), stages S (1-4), tiles K (1-8), whether the expect_tx comes before
or after the copy, whether one elected producer or every thread arrives (count 1 or the block),
whether the warpgroups re-balance registers with setmaxnreg first.  Outputs: per thread the sum of
its word over all tiles, and the lane ``elect.sync`` chose.

Illegal twins, labelled as ``mutations`` labels them (``Program.expect``):
  missing_expect_tx  the producer's arrive for one tile carries no expect_tx: the phase completes
                     before the bytes land, so what the consumers read is undefined
  wrong_parity       the consumers wait on the other parity for one tile: that wait returns at once
                     (the phase before it), the read races the copy and is undefined
  early_read         the consumers read one tile's stage before waiting on its barrier
All are accepted by ptxas ("ptxas", "accepted") and leave the reference's outputs undefined
("reference", "undefined").

Not drawn yet: tensor copies (TMA with a tensor-map description), wgmma consumers reading the
stages through descriptors, producer/consumer warpgroup specialisation and persistent tile loops.
"""
from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.parse import parse

FAULTS = ("missing_expect_tx", "wrong_parity", "early_read")


@dataclass(frozen=True)
class MainloopPlan:
    ntid: int
    stages: int
    tiles: int
    copy_first: bool
    all_arrive: bool
    setmaxnreg: bool
    seed: int
    fault: str | None = None
    fault_tile: int = 0

    @property
    def tile_bytes(self) -> int:
        return 4 * self.ntid  # one word per thread: a multiple of 16, as bulk copies need


@st.composite
def mainloop_plans(draw, *, fault: str | None = None) -> MainloopPlan:
    ntid = draw(st.sampled_from((128, 256, 384)))
    stages = draw(st.integers(1, 4))
    tiles = draw(st.integers(1, 8))
    return MainloopPlan(
        ntid=ntid, stages=stages, tiles=tiles, copy_first=draw(st.booleans()), all_arrive=draw(st.booleans()),
        setmaxnreg=ntid >= 256 and draw(st.booleans()), seed=draw(st.integers(0, 2**31 - 1)),
        fault=fault, fault_tile=draw(st.integers(0, tiles - 1)) if fault else 0)


def kernel_text(plan: MainloopPlan) -> str:
    """The PTX of a plan (one kernel ``k(a, o, o2)``)."""
    S, B = plan.stages, plan.tile_bytes
    lines = [
        ".version 8.4", ".target sm_90a", ".address_size 64", "",
        ".visible .entry k(.param .u64 a, .param .u64 o, .param .u64 o2)", f".reqntid {plan.ntid}",
        # setmaxnreg needs the register count at entry fixed (else ptxas ignores it: C7508)
        *([".maxnreg 168"] if plan.setmaxnreg else []), "{",
        "\t.reg .pred \t%p<8>;", "\t.reg .b32 \t%r<24>;", "\t.reg .b64 \t%rd<10>;",
        f"\t.shared .align 128 .b8 buf[{S * B}];", f"\t.shared .align 8 .b64 bar[{S}];",
        "\tld.param.u64 \t%rd1, [a];", "\tld.param.u64 \t%rd2, [o];", "\tld.param.u64 \t%rd3, [o2];",
        "\tmov.u32 \t%r1, %tid.x;", "\tmov.u32 \t%r2, buf;", "\tmov.u32 \t%r3, bar;",
        "\tshr.u32 \t%r4, %r1, 5;", "\tsetp.eq.u32 \t%p1, %r4, 0;",
        "\telect.sync \t%r5|%p2, -1;", "\tand.pred \t%p3, %p1, %p2;",
        "\tshl.b32 \t%r6, %r1, 2;", "\tadd.s32 \t%r7, %r2, %r6;", "\tmov.u32 \t%r20, 0;",
    ]
    if plan.setmaxnreg:
        lines += ["\tshr.u32 \t%r12, %r1, 7;", "\tsetp.eq.u32 \t%p7, %r12, 0;", "\t@!%p7 bra \tHI;",
                  "\tsetmaxnreg.dec.sync.aligned.u32 \t40;", "\tbra.uni \tGO;", "HI:",
                  "\tsetmaxnreg.inc.sync.aligned.u32 \t232;", "GO:"]
    count = plan.ntid if plan.all_arrive else 1
    lines += [f"\t@%p3 mbarrier.init.shared::cta.b64 \t[bar+{8 * s}], {count};" for s in range(S)]
    lines += ["\tfence.mbarrier_init.release.cluster;", "\tbar.sync \t0;"]
    for i in range(plan.tiles):
        s, parity = i % S, (i // S) % 2
        bar = f"bar+{8 * s}"
        fault_here = plan.fault is not None and plan.fault_tile == i
        if fault_here and plan.fault == "missing_expect_tx":
            expect = f"\t@%p3 mbarrier.arrive.shared::cta.b64 \t_, [{bar}];"
        else:
            expect = f"\t@%p3 mbarrier.arrive.expect_tx.shared::cta.b64 \t_, [{bar}], {B};"
        copy = [f"\tadd.s64 \t%rd4, %rd1, {B * i};",
                f"\t@%p3 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes \t[buf+{B * s}], [%rd4], {B}, [{bar}];"]
        lines += copy + [expect] if plan.copy_first else [expect] + copy
        if plan.all_arrive:
            lines.append(f"\t@!%p3 mbarrier.arrive.shared::cta.b64 \t_, [{bar}];")
        if fault_here and plan.fault == "wrong_parity":
            parity ^= 1
        wait = [f"W{i}:", f"\tmbarrier.try_wait.parity.shared::cta.b64 \t%p4, [{bar}], {parity};", f"\t@!%p4 bra \tW{i};"]
        read = [f"\tld.shared.u32 \t%r8, [%r7+{B * s}];", "\tadd.s32 \t%r20, %r20, %r8;"]
        lines += (read + wait if fault_here and plan.fault == "early_read" else wait + read) + ["\tbar.sync \t0;"]
    lines += ["\tcvt.u64.u32 \t%rd5, %r6;", "\tadd.s64 \t%rd6, %rd2, %rd5;", "\tst.global.u32 \t[%rd6], %r20;",
              "\tadd.s64 \t%rd7, %rd3, %rd5;", "\tst.global.u32 \t[%rd7], %r5;"]
    lines += [f"\t@%p3 mbarrier.inval.shared::cta.b64 \t[bar+{8 * s}];" for s in range(S)]
    lines += ["\tret;", "}", ""]
    return "\n".join(lines)


def render(plan: MainloopPlan) -> Program:
    module = parse(kernel_text(plan), "mainloop.ptx")
    buffers = (Buffer("a", "u32", plan.tiles * plan.ntid, "random", plan.seed),
               Buffer("o", "u32", plan.ntid, "zeros", output=True),
               Buffer("o2", "u32", plan.ntid, "zeros", output=True))
    expect: tuple = ()
    if plan.fault is not None:
        expect = (("ptxas", "accepted"), ("reference", "undefined"))
    return Program(module, Launch("k", (1, 1, 1), (plan.ntid, 1, 1)), buffers, (), expect)


def mainloop_programs() -> st.SearchStrategy[Program]:
    """Legal mainloop kernels (see the module doc)."""
    return mainloop_plans().map(render)


def illegal_mainloop_programs() -> st.SearchStrategy[Program]:
    """Their labelled illegal twins: one tile with a missing expect_tx, a wrong parity or an early read."""
    return st.sampled_from(FAULTS).flatmap(lambda f: mainloop_plans(fault=f)).map(render)


__all__ = ["MainloopPlan", "mainloop_plans", "kernel_text", "render", "mainloop_programs",
           "illegal_mainloop_programs", "FAULTS"]
