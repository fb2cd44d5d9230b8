"""In-flight windows: the script segments where ptxas 13.0.88 -O3 miscompiles the GMMA pipeline.

Two -O3 miscompiles are known (``reports/findings/README.md``): a repeated wgmma (same
accumulators, same A and B, scale-d 1) dropped, and the registers of a wgmma still in flight
handed to a loop counter or a call's return address once a later scale-d 0 wgmma on the same
accumulators makes their old values dead.  The general scripts of ``control`` reach them
rarely (one in thousands of programs), so ``windows`` draws the segment directly, legal by
construction, and ``programs.wgmma_plans`` adds one to three wgmma plans in four.  Half of
the windows are *straight*: ptxas 13.0.88 -O3 drops a repeated copy in one group only in a
kernel free of branches, loops and calls, on accumulators loaded from memory (not zeroed),
m64n16..m64n64 (measured with ``benchmarks/shapes_find_known.py``'s counter on rendered plans,
2026-11-26: one loop, call or uniform branch anywhere, before or after, and every copy stays),
so a straight window replaces the plan's whole script (an earlier wgmma on the set keeps
the copies too, and an earlier scale-d 0 one would make them dead) and the plan runs in one
warpgroup on loaded accumulators.  The other half go after the plan's script:

  straight                            the others
  --------                            ----------
  Stage(m, m[, m]), Wait(0)           <the plan's script>
  Live(count,                         Live(count,           values held across (pressure)
    Stage(fresh A), [Wait(1)], ...      Stage(fresh A), [Wait(1)], ...   register-A pipeline
    Stage(fresh A)                      Stage(fresh A)                   the group in flight
    Side(arith | predicated) ...        [UniformIf(param | warpgroup,    conditional in half
                                          Loop(Side), Side(call) ...     in flight
                                          [Stage(m with scale-d 0)])]    the restart (2 in 3)
    Wait(n))                            Wait(n))
                                      [Stage(m) Stage(m) ...]  repeated once per commit (half)

All on the smallest register-A accumulator set of the plan (both miscompiles were seen on
m64n8..m64n64 sets).

Every op keeps the pipeline rules: chained wgmmas on one accumulator set share its one form,
no accumulator is touched before a wait, A registers are never written in flight (a fresh
stage loads *new* registers; the segment is never inside a loop, where a register would be
rewritten by the next iteration), and the epilogue waits for the rest.

``shapes_of`` names the shapes a plan holds (the program's ``shapes:`` note), so the coverage
benchmark (``benchmarks/bench_shapes.py``) measures how often the default programs reach each.
"""
from __future__ import annotations

from dataclasses import dataclass

from hypothesis import event, strategies as st

from .control import Live, Loop, Side, UniformIf, script_state, states
from .operands import ints, sampled
from .pipelines import MAX_WAIT_N, Mma, PipeState, Stage, Unit, Wait

#: Shapes ``shapes_of`` names, in report order.
SHAPES: tuple[str, ...] = ("rega_pipeline", "restart_in_flight", "loop_in_flight", "call_in_flight",
                           "pressure", "repeat_in_group", "repeat_across_commit")
#: Registers per thread (accumulators + values held across a window) from which a plan is "pressure".
PRESSURE_REGS = 176
#: The most registers a window's held values and all accumulator sets may reach together
#: (ptxas's limit is 255; the address, descriptor and loop registers need the rest).
MAX_HELD_REGS = 216
_HELD = (0, 8, 12, 13, 16, 20, 24, 48, 96, 160, 216)  # past the cap: as many as the cap allows
_WINDOW_OPS = ("loop_call", "call", "call_indirect", "loop", "arith")
_STRAIGHT_OPS = ("arith", "predicated")


@dataclass(frozen=True)
class Window:
    """A drawn window: ``head`` goes before the plan's script (it leaves the pipeline empty, as
    it found it), ``tail`` after it; a ``straight`` window replaces the script and runs in one
    warpgroup on loaded accumulators (``programs.wgmma_plans``)."""

    head: tuple
    tail: tuple
    straight: bool  # the plan's script is replaced by head + tail


@st.composite
def windows(draw, us: tuple[Unit, ...], state: PipeState, warpgroups: int = 1,
            avoid: frozenset[str] = frozenset()) -> Window:
    """One in-flight window after a script that left ``state`` (a straight window's ops are legal
    from the empty pipeline too: its waits only count down).  ``avoid`` (``avoid.AVOIDABLE``):
    no repeated copies (``repeated-wgmma``), no scale-d 0 restart in flight (``restart-in-flight``);
    the choices are drawn all the same, so the rest of the window stays as it was."""
    reg_a = tuple(i for i, u in enumerate(us) if u.a_tile is None)
    pool = reg_a or tuple(range(len(us)))
    # the smallest accumulator set: both miscompiles were seen on small ones (m64n8..m64n64)
    u = min(pool, key=lambda i: (us[i].d_count, i))
    # straight (half of the windows): no branch, loop or call anywhere, the repeated group first
    straight = draw(sampled((False, True)))
    ops: list = []
    # register-A pipeline: stages on fresh A registers, each followed by wait_group 1 or nothing
    for _ in range(draw(ints(0, 2))):
        ops.append(Stage((Mma(u, draw(ints(0, us[u].slices - 1))),), fresh_a=True))
        if draw(sampled((False, True))):
            ops.append(Wait(1))
    # the window: a group in flight, loops and calls, then the restart on the same accumulators
    ops.append(Stage((Mma(u, draw(ints(0, us[u].slices - 1))),), fresh_a=True))
    body: list = []
    for _ in range(draw(ints(1, 3))):
        kind = draw(sampled(_STRAIGHT_OPS if straight else _WINDOW_OPS))
        if kind == "loop_call":
            body.append(Loop(draw(ints(1, 3)), (Side("call"),)))
        elif kind == "loop":
            body.append(Loop(draw(ints(1, 3)), (Side("arith"),)))
        else:
            body.append(Side(kind))
    restart = Mma(u, draw(ints(0, us[u].slices - 1)), scale_d=0)
    if draw(sampled((True, True, False))) and not straight and "restart-in-flight" not in avoid:
        body.append(Stage((restart,), fresh_a=True))
    if draw(sampled((True, False))) and not straight:  # conditional: the first group's result lives on the other path
        cond = draw(sampled(("param", "warpgroup"))) if warpgroups > 1 else "param"
        ops.append(UniformIf(cond, draw(sampled((True, False))), tuple(body)))
    else:
        ops.extend(body)
    pending = script_state(tuple(ops), state).pending
    if pending:
        ops.append(Wait(draw(ints(0, min(len(pending) - 1, MAX_WAIT_N)))))
    # the same wgmma repeated, in one group (then one more group and wait_group 1, or nothing:
    # the epilogue waits) or once per commit
    # the same wgmma repeated: in a straight window, 2-3 copies in one group at the head, on the
    # accumulators as loaded, then wait_group 0 (the empty pipeline the script began with); else
    # in half of the windows 2-3 copies, one per commit, after the window
    head: list = []
    tail: list = []
    m = Mma(u, draw(ints(0, us[u].slices - 1)))
    copies = draw(ints(2, 3))
    if "repeated-wgmma" in avoid:
        copies = 1
    if straight:
        head += [Stage((m,) * copies), Wait(0)]
    elif draw(sampled((False, True))):
        tail.extend(Stage((m,)) for _ in range(copies))
    held_max = MAX_HELD_REGS - sum(x.d_count for x in us)
    held = draw(sampled(_HELD))
    held = max(0, min(held, held_max))
    seg: tuple = ((Live(held, tuple(ops)),) if held else tuple(ops)) + tuple(tail)
    event(f"window_held={held}")
    return Window(tuple(head), seg, straight)


def shapes_of(units: tuple[Unit, ...], script: tuple) -> tuple[str, ...]:
    """The shapes of ``SHAPES`` a plan's script holds, read from its ops and pipeline states."""
    found: set[str] = set()
    fresh_reg_a = 0
    waits_n = False
    held = 0
    prev = None
    for op, state in states(script):
        busy = state.busy()
        if isinstance(op, Stage):
            if op.fresh_a and any(units[m.unit].a_tile is None for m in op.mmas):
                fresh_reg_a += 1
            if any(m.scale_d == 0 and m.unit in busy for m in op.mmas):
                found.add("restart_in_flight")
            if any(op.mmas.count(m) > 1 and m.scale_d == 1 for m in op.mmas):
                found.add("repeat_in_group")
            if (isinstance(prev, Stage) and len(op.mmas) == 1 and prev.mmas[-1] == op.mmas[0]
                    and op.mmas[0].scale_d == 1):
                found.add("repeat_across_commit")
        elif isinstance(op, Wait) and op.n > 0:
            waits_n = True
        elif isinstance(op, Loop) and state.pending:
            found.add("loop_in_flight")
        elif isinstance(op, Side) and op.kind in ("call", "call_indirect") and state.pending:
            found.add("call_in_flight")
        elif isinstance(op, Live):
            held = max(held, op.count)
        prev = op
    if fresh_reg_a >= 2 and waits_n:
        found.add("rega_pipeline")
    if held and held + sum(u.d_count for u in units) >= PRESSURE_REGS:
        found.add("pressure")
    return tuple(s for s in SHAPES if s in found)


__all__ = ["Window", "windows", "shapes_of", "SHAPES", "PRESSURE_REGS", "MAX_HELD_REGS"]
