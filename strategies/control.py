"""Control flow around the pipeline: loops over K, uniform and divergent branches, calls.

Ops (rendered by ``render``):

  Loop(trips, body)        uniform counted loop (``@p bra.uni``); the pipeline runs inside it
                           and groups stay in flight across iterations; scale-d may be the
                           predicate ``iteration != 0``
  UniformIf(cond, body)    ``@p bra.uni`` around a balanced block (ends in wait_group 0);
                           cond ``param`` (a kernel parameter) or ``warpgroup`` (warpgroup index)
  Live(count, body)        ``count`` values loaded before ``body`` and stored after it
                           (register pressure across an in-flight window; ``shapes``)
  Side(kind)               non-wgmma work on a scratch register: ``arith``, ``predicated``
                           (a lane-dependent guard), ``divergent`` (a lane-dependent branch),
                           ``call`` (a direct .func call ptxas may inline), ``call_indirect``
                           (through a function pointer: never inlined)

``scripts`` draws a legal script: every choice is checked against ``PipeState``.
``max_in_flight`` and ``depth`` feed ``target()`` in ``programs``.
"""
from __future__ import annotations

from dataclasses import dataclass

from hypothesis import event, strategies as st


from .operands import ints, sampled
from .pipelines import MAX_WAIT_N, PipeState, Touch, Unit, Wait, stages

SIDE_KINDS: tuple[str, ...] = ("arith", "predicated", "divergent", "call", "call_indirect")
UNIFORM_CONDS: tuple[str, ...] = ("param", "warpgroup")
MAX_DEPTH = 2
_KINDS: tuple[str, ...] = ("stage", "wait", "touch", "side", "loop", "if")  # the last two nest


@dataclass(frozen=True)
class Loop:
    trips: int
    body: tuple


@dataclass(frozen=True)
class UniformIf:
    cond: str
    taken: bool  # the value the condition has at run time (param value; warpgroup != 0)
    body: tuple


@dataclass(frozen=True)
class Side:
    kind: str


@dataclass(frozen=True)
class Live:
    """``count`` 32-bit values loaded before ``body`` and stored after it: register pressure
    across an in-flight window (ptxas must keep them in registers while GMMAs are pending)."""

    count: int
    body: tuple


def walk_ops(script: tuple):
    """Every op of a script, nested bodies included (pre-order)."""
    for op in script:
        yield op
        if isinstance(op, (Loop, UniformIf, Live)):
            yield from walk_ops(op.body)


def depth(script: tuple) -> int:
    """Nesting of loops and branches (a ``Live`` block adds no control flow)."""
    return max((int(not isinstance(op, Live)) + depth(op.body) for op in script
                if isinstance(op, (Loop, UniformIf, Live))), default=0)


@st.composite
def scripts(draw, us: tuple[Unit, ...], state: PipeState = PipeState(), *, level: int = 0,
            in_loop: bool = False, min_ops: int = 1, max_ops: int = 5) -> tuple[tuple, PipeState]:
    """A legal op sequence from ``state``; returns (ops, state after them)."""
    ops: list = []
    n = draw(ints(min_ops, max_ops))
    kinds = _KINDS if level < MAX_DEPTH else _KINDS[:4]
    max_pending = len(state.pending)
    for _ in range(n):
        kind = draw(sampled(kinds))
        if kind == "stage":
            op = draw(stages(us, in_loop=in_loop))
        elif kind == "wait":
            if not state.pending:
                continue
            op = Wait(draw(ints(0, min(len(state.pending) - 1, MAX_WAIT_N))))
            if op.n:
                event("wait_group N>0")
        elif kind == "touch":
            free = [i for i in range(len(us)) if i not in state.busy()]
            if not free:
                continue
            op = Touch(draw(sampled(tuple(free))))
        elif kind == "side":
            op = Side(draw(sampled(SIDE_KINDS)))
            event(f"control={op.kind}")
        elif kind == "loop":
            op, state = draw(_loops(us, state, level))
            ops.append(op)
            max_pending = max(max_pending, len(state.pending))
            continue
        else:
            op = draw(_uniform_ifs(us, state, level, in_loop))
            event(f"control=uniform_if:{op.cond}")
        ops.append(op)
        state = state.after(op)
        max_pending = max(max_pending, len(state.pending))
    return tuple(ops), state


@st.composite
def _loops(draw, us, state: PipeState, level: int):
    """A counted loop, legal for *any* number of iterations (as a static checker sees it).

    Touches of accumulators that some iteration's entry may still have in flight are dropped.
    """
    trips = draw(ints(1, 3))
    body, _ = draw(scripts(us, state, level=level + 1, in_loop=True, max_ops=3))
    entry = _loop_entry(body, state)
    if any(isinstance(op, Touch) and op.unit in entry.busy() for op in walk_ops(body)):
        body = _drop_touches(body)
    event("control=loop")
    return Loop(trips, body), _run((Loop(trips, body),), state)


def _drop_touches(body: tuple) -> tuple:
    out = []
    for op in body:
        if isinstance(op, Touch):
            continue
        if isinstance(op, Loop):
            op = Loop(op.trips, _drop_touches(op.body))
        elif isinstance(op, UniformIf):
            op = UniformIf(op.cond, op.taken, _drop_touches(op.body))
        out.append(op)
    return tuple(out)


def _loop_entry(body: tuple, state: PipeState) -> PipeState:
    """The join of the states every iteration may start in (a fixpoint: the states form a
    finite lattice, ``PipeState.TRACKED_GROUPS`` deep)."""
    entry = state
    while True:
        nxt = entry.join(_run(body, entry))
        if nxt == entry:
            return entry
        entry = nxt


def _run(body: tuple, state: PipeState) -> PipeState:
    for op in body:
        if isinstance(op, Loop):
            entry = _loop_entry(op.body, state)
            state = _run(op.body, entry)  # the state after the last iteration, whichever it is
        elif isinstance(op, UniformIf):
            state = state.join(_run(op.body, state))  # both paths, whatever the condition
        elif isinstance(op, Live):
            state = _run(op.body, state)
        else:
            state = state.after(op)
    return state


@st.composite
def _uniform_ifs(draw, us, state: PipeState, level: int, in_loop: bool):
    cond = draw(sampled(UNIFORM_CONDS))
    body, inner = draw(scripts(us, state, level=level + 1, in_loop=in_loop, max_ops=3))
    if inner.pending:
        body = body + (Wait(0),)  # balanced on both paths
    taken = draw(sampled((False, True)))
    return UniformIf(cond, taken, body)


def max_in_flight(script: tuple, state: PipeState = PipeState()) -> int:
    """The most wgmma-groups pending at once while ``script`` runs (for ``target()``)."""
    best = len(state.pending)
    for op in script:
        if isinstance(op, Loop):
            best = max(best, max_in_flight(op.body, _loop_entry(op.body, state)))
            state = _run((op,), state)
        elif isinstance(op, (UniformIf, Live)):
            best = max(best, max_in_flight(op.body, state))
            state = _run((op,), state)
        else:
            state = state.after(op)
        best = max(best, len(state.pending))
    return best


def script_state(script: tuple, state: PipeState = PipeState()) -> PipeState:
    """The pipeline state after running ``script`` (what the epilogue must wait for)."""
    return _run(script, state)


def states(script: tuple, state: PipeState = PipeState()):
    """(op, state before it) for every op, nested bodies included: a loop body's ops with the
    state any iteration may start in, a branch body's with the state before the branch."""
    for op in script:
        yield op, state
        if isinstance(op, Loop):
            yield from states(op.body, _loop_entry(op.body, state))
        elif isinstance(op, (UniformIf, Live)):
            yield from states(op.body, state)
        state = _run((op,), state)


__all__ = ["Loop", "UniformIf", "Side", "Live", "states", "max_in_flight", "SIDE_KINDS", "scripts", "walk_ops", "depth", "script_state"]
