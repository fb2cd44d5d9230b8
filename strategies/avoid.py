"""Shapes the generator can turn down because they trigger a known bug (``reports/known_bugs.toml``
names them per bug), as other compiler fuzzers switch off known-buggy idioms: a campaign spends
its programs on what is not known yet.  The engine passes the set in (``programs(avoid=...)``);
``--rediscover`` passes none, and the tests prove each known bug is still found then."""
from __future__ import annotations

from dataclasses import replace

from .control import Live, Loop, UniformIf, states
from .pipelines import Mma, Stage, Touch, Wait

#: Option -> the shapes it turns down (``shapes.windows`` reads them).
AVOIDABLE: dict[str, str] = {
    "repeated-wgmma": "the same wgmma issued again on its accumulators right after itself, in one group or "
                      "once per commit (ptxas -O3 drops a copy: reports/findings/README.md)",
    "restart-in-flight": "a scale-d 0 wgmma restarting an accumulator set whose group is still in flight "
                         "across loops and calls (ptxas -O3 hands the dead registers out while the GMMA "
                         "still writes them)",
    "accumulator-sign-flips-around-sync": "a second sign flip of a wgmma accumulator before a wgmma writes it "
                                          "again, or one in a loop (ptxas -O1 to -O3 up to 13.5.37 keep one of "
                                          "two flips with a warp-synchronous instruction between)",
    # scalar kernels (strategies.scalar_kernels): shapes of ptxas -O3 integer miscompiles
    "bfe-s32-position-beyond-31": "bfe.s32 with a constant start position of 32 or more (ptxas 13.0.88 -O3)",
    "bfi-length-beyond-31": "bfi.b32 with a constant length of 32 or more (ptxas 12.9.86/13.0.88 -O3: length mod 32)",
    "set-compared-with-one": "an integer set result compared with 1 by setp.eq/ne (ptxas 12.0-13.3 -O1+: set taken for 0/1)",
    "abs-into-saturating-cvt": "a saturating cvt of an abs.s32 result (ptxas -O3 up to 13.5.37 clamps it unsigned)",
    "neg-into-saturating-cvt": "a saturating cvt of a neg.s32 result (ptxas -O3 up to 13.5.37 clamps the operand against "
                               "the negated bounds: neg(INT_MIN) saturates to +32767)",
    "abs-assumed-nonnegative": "abs.s32 of INT_MIN read by a signed rem or compare (ptxas 13.0.88 -O3 takes abs as >= 0)",
    "lop3-repeated-operand": "lop3.b32 with a register in two source slots (ptxas 13.0.88 -O3 folds the repeat to RZ)",
    "neg-into-saturating-add": "add.sat/sub.sat.s32 of a neg.s32 result (ptxas -O3 up to 13.5.37 saturates the "
                               "negation itself: add.sat(neg INT_MIN, 0) gives INT_MAX)",
    "clz-into-saturating-add": "add.sat.s32 of a clz.b32 result (ptxas -O3 up to 13.5.37 folds clz's 31 - FLO into the "
                               "constant, which wraps)",
    "prmt-sign-into-byte-mask": "a sign-replicating prmt.b32 masked to its low bytes (ptxas 12.9.86/13.0.88 -O3 "
                                "replicate RZ's sign)",
    "mulhi-into-wide-sub": "a 64-bit sub of a mul.hi result packed as its low word (ptxas -O3 up to 13.5.37 "
                           "borrows wrongly when the subtrahend's low word is 0)",
    "unsigned-max-into-signed-min": "a max.u32 result read by a signed min, max or compare (ptxas -O3 takes it "
                                    "for non-negative: up to 13.5.37 a later byte mask is dropped)",
    "mulhi-accumulated": "a running sum of mul.hi results (ptxas 12.9.86/13.0.88 -O3 add half of an unrolled "
                         "loop's products)",
}


def check(avoid: frozenset[str]) -> frozenset[str]:
    """``avoid`` itself, or ValueError naming an option the generator does not know."""
    bad = sorted(set(avoid) - set(AVOIDABLE))
    if bad:
        raise ValueError(f"unknown avoid option(s) {', '.join(bad)} (have {', '.join(AVOIDABLE)})")
    return frozenset(avoid)


def avoid_script(script: tuple, units: tuple, avoid: frozenset[str]) -> tuple:
    """``script`` (a wgmma plan's ops) with the known bugs' shapes turned down, legal as before:

    - ``restart-in-flight``: a wgmma whose scale-d is not 1 (0, a runtime 0) on an accumulator set
      with a group in flight accumulates instead (scale-d 1: chaining on an accumulator in flight
      is what the pipeline rules allow anyway);
    - ``repeated-wgmma``: a wgmma identical to the one before it (in its group, or across one
      commit) takes the unit's other K-slice where it has two (other A and B: no longer a repeat),
      else it goes (and a stage left empty with it: one group fewer in flight, still legal);
    - ``accumulator-sign-flips-around-sync``: a ``Touch`` (a sign flip of a unit's first accumulator
      register) of a unit already flipped since a wgmma last wrote it goes, and so does one in a
      loop (each iteration flips again): what sits between two flips is then never in question.

    The general scripts (``control.scripts``) reach both shapes by chance; ``shapes.windows`` does
    not draw them at all under these options."""
    if not avoid:
        return script
    restarts: set[int] = set()
    if "restart-in-flight" in avoid:
        for op, state in states(script):
            if isinstance(op, Stage) and any(m.scale_d != 1 and m.unit in state.busy() for m in op.mmas):
                restarts.add(id(op))
    return _rewrite(script, units, avoid, restarts, set(), False)


def _rewrite(ops: tuple, units: tuple, avoid: frozenset[str], restarts: set[int], flipped: set[int],
             in_loop: bool) -> tuple:
    """``ops`` rewritten; ``flipped``: the units whose accumulators a ``Touch`` flipped since a wgmma
    last wrote them (shared with the nested bodies: a flip in a branch may have run)."""
    out: list = []
    last: Mma | None = None  # the wgmma before, across a commit (a stage boundary)
    flips = "accumulator-sign-flips-around-sync" in avoid
    for op in ops:
        if flips and isinstance(op, Touch):
            if in_loop or op.unit in flipped:
                continue
            flipped.add(op.unit)
        if isinstance(op, Stage):
            mmas = list(op.mmas)
            if id(op) in restarts:
                mmas = [replace(m, scale_d=1) for m in mmas]
            if "repeated-wgmma" in avoid:
                kept: list[Mma] = []
                for m in mmas:
                    def again(x: Mma) -> bool:  # in its group already, or right after the same one
                        return x.scale_d == 1 and (x in kept or (not kept and x == last))

                    if again(m):
                        m = replace(m, slice=(m.slice + 1) % units[m.unit].slices)
                        if again(m):
                            continue  # no other slice free: the copy goes (one wgmma fewer, still legal)
                    kept.append(m)
                if not kept:
                    continue  # a stage that only repeated the wgmma before it
                mmas = kept
            op = replace(op, mmas=tuple(mmas))
            last = op.mmas[-1] if op.mmas else None
            flipped.difference_update(m.unit for m in op.mmas)
        elif isinstance(op, (Loop, UniformIf, Live)):
            op = replace(op, body=_rewrite(op.body, units, avoid, restarts, flipped, in_loop or isinstance(op, Loop)))
            last = None
        elif isinstance(op, Wait):
            pass  # a wait between two copies leaves the second a repeat of the first (one accumulator)
        else:
            last = None
        out.append(op)
    return tuple(out)
