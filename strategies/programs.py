"""Whole programs: ``wgmma_programs()`` (pipelines under control flow), ``programs()`` (all families).

Shrinking heads for the simplest program: one accumulator set, one stage of one
wgmma, one warpgroup, no control flow, small-integer inputs, the simplest form
(``one_of`` lists the simple branch first; counts have small minimums).
"""
from __future__ import annotations

from dataclasses import replace

from hypothesis import event, strategies as st, target

from fuzzptx.program import Program

from .control import Loop, UniformIf, depth, max_in_flight, script_state, scripts
from .instructions import WGMMA_FAMILIES, SYNC_FAMILIES, instruction_programs
from .mainloops import mainloop_programs
from .tensor_copies import tensor_copy_programs
from .operands import inits, ints, sampled, seeds
from .pipelines import PipeState, stages, units
from .render import WgmmaPlan, render
from .avoid import avoid_script, check
from .shapes import windows
from .surround import arounds, place
from fuzzptx import isa

#: Register budget for all accumulator sets of one program (ptxas spills past ~200).
D_REG_BUDGET = 160


@st.composite
def unit_sets(draw, max_units: int = 3):
    """1..max_units accumulator sets within the register budget (the first may be any form).

    The count comes first, so the shrinker can delete a whole set and lower the count.
    """
    n = draw(ints(1, max_units))
    first = draw(units(max_d_regs=128))
    us = [first]
    budget = D_REG_BUDGET - first.d_count
    while len(us) < n and budget >= 4:
        u = draw(units(max_d_regs=budget))
        us.append(u)
        budget -= u.d_count
    return tuple(us)


@st.composite
def wgmma_plans(draw, *, max_units: int = 3, control: bool = True, avoid: frozenset[str] = frozenset()) -> WgmmaPlan:
    """A wgmma plan; ``avoid``: shapes of known bugs to turn down (``avoid.AVOIDABLE``)."""
    us = draw(unit_sets(max_units))
    first = draw(stages(us))  # every program starts with a stage, so it runs a wgmma
    script = (first,)
    if control:
        rest, _ = draw(scripts(us, PipeState().after(first), min_ops=0, max_ops=5))
        script += rest
    warpgroups, roles, early = 1, "all", False
    layout = draw(sampled(("one", "two_all", "producer", "producer_exit"))) if control else "one"
    if layout != "one":
        warpgroups = 2
        roles = "all" if layout == "two_all" else "producer"
        early = layout == "producer_exit"
    event(f"warpgroups={layout}")
    acc_init = draw(sampled(("zero", "load")))
    init = draw(inits())
    seed = draw(seeds())
    sd_value = draw(sampled((1, 0)))
    # This choice once picked `.version 9.0` for half the programs; a program now declares the
    # lowest PTX version its units need, so that every ptxas release that reads it can judge it.
    # The draw stays, so that a fixed seed still draws the same programs otherwise.
    draw(sampled((False, True)))
    plan = WgmmaPlan(
        units=us,
        script=script,
        warpgroups=warpgroups,
        roles=roles,
        early_exit=early,
        acc_init=acc_init,
        init=init,
        seed=seed,
        sd_value=sd_value,
        version=_version(us),
        extern_decl=control and draw(sampled((False, True))),
    )
    # Drawn last, so that the choices above (and a fixed seed's programs up to here) stay as they
    # were: three wgmma programs in four end in an in-flight window (``shapes.windows``).
    straight = False
    if control and draw(sampled((False, True, True, True))):
        w = draw(windows(us, script_state(script), warpgroups if roles == "all" else 1, avoid))
        straight = w.straight
        if w.straight:  # ptxas drops a repeated wgmma only in a kernel free of branches and calls
            plan = replace(plan, script=w.head + w.tail, warpgroups=1, roles="all",
                           early_exit=False, acc_init="load", extern_decl=False)
        else:
            plan = replace(plan, script=w.head + script + w.tail)
        script = plan.script
    if avoid:  # the general scripts reach the known bugs' shapes by chance too
        plan = replace(plan, script=avoid_script(plan.script, us, avoid))
        script = plan.script
    # Drawn after everything else (a fixed seed keeps its pipeline and control flow): the code
    # real kernels wrap around the wgmmas (``surround``), between its ops and inside its loops;
    # a straight window stays free of it (ptxas drops a repeated wgmma only without branches).
    if control and not straight:
        items = draw(arounds())
        if items:
            plan = replace(plan, script=place(plan.script, items, Loop))
            script = plan.script
    target(float(max_in_flight(script)), label="groups in flight")
    d = depth(script)
    target(float(d), label="nesting depth")
    event(f"depth={d}")
    for op in script:
        if isinstance(op, (Loop, UniformIf)):
            event(f"control={type(op).__name__}")
    return plan


def _version(us) -> str:
    """The oldest PTX version every unit's form allows (a program declares no newer ISA than it uses)."""
    v = max(max(u.form.min_ptx for u in us), (8, 0))
    return f"{v[0]}.{v[1]}"


def wgmma_programs(*, max_units: int = 3, control: bool = True,
                   avoid: frozenset[str] = frozenset()) -> st.SearchStrategy[Program]:
    """Legal wgmma programs: pipelines of stages on 1..3 accumulator sets under control flow
    (``avoid``: shapes of known bugs turned down, ``avoid.AVOIDABLE``)."""
    return wgmma_plans(max_units=max_units, control=control, avoid=check(avoid)).map(render)


def warp_programs(max_forms: int = 16) -> st.SearchStrategy[Program]:
    """1..max_forms instructions of the non-warpgroup families (mma, wmma, ldmatrix, ...)."""
    fams = tuple(f for f in isa.families() if f not in WGMMA_FAMILIES + SYNC_FAMILIES)
    return instruction_programs(fams, max_forms)


def wgmma_sweeps(max_forms: int = 24) -> st.SearchStrategy[Program]:
    """1..max_forms wgmma forms, each in its own fence/commit/wait, in one straight-line kernel."""
    return instruction_programs(WGMMA_FAMILIES, max_forms)


def programs(avoid: frozenset[str] = frozenset()) -> st.SearchStrategy[Program]:
    """Any legal program: a wgmma pipeline under control flow (first: shrinking ends there or in
    the shorter branches), warp-level instructions, or a straight-line sweep of wgmma forms.

    Every catalogue form within 20,000 examples (benchmarks/README.md): only ~1 example in 5
    is freshly drawn (Hypothesis spends ~5 mutants, copies of earlier choices, on each), and
    3,066 forms need ~30,000 uniform draws (coupon collector), so the two sweep branches
    carry up to 16 and 24 distinct forms per example (``instructions.sweep_forms``: one
    stride draw places a sweep, so mutants move it too), and every form list is drawn
    uniformly (``operands.choice``).
    ``avoid``: shapes of known bugs the wgmma pipelines turn down (``avoid.AVOIDABLE``).
    """
    return st.one_of(wgmma_programs(avoid=avoid), warp_programs(), wgmma_sweeps(), mainloop_programs(), tensor_copy_programs())  # mainloops, tensor copies: docs/tma.md


__all__ = ["programs", "wgmma_sweeps", "wgmma_programs", "wgmma_plans", "warp_programs", "unit_sets", "D_REG_BUDGET"]
