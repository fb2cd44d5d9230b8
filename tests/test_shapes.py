"""In-flight windows (``strategies.shapes``): legal by the checker, reached by the default programs,
named right by ``shapes_of``."""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

from hypothesis import HealthCheck, given, settings

from fuzzptx.engine.generate import draw_direct
from fuzzptx.oracles.checker import check_module
from fuzzptx.strategies.direct import draw, reproducible
from fuzzptx.strategies.control import Live, Loop, Side, UniformIf, walk_ops
from fuzzptx.strategies.pipelines import Mma, Stage, Wait
from fuzzptx.strategies.programs import wgmma_plans
from fuzzptx.strategies.render import render
from fuzzptx.strategies.shapes import SHAPES, shapes_of

FAST = settings(max_examples=30, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _notes_shapes(p) -> list[str]:
    return next((n.split(":", 1)[1].split() for n in p.notes if n.startswith("shapes:")), [])


@FAST
@given(wgmma_plans())
def test_plans_with_windows_are_legal_to_the_checker(plan):
    """Whatever window a plan ends in, the checker's ISA and spec layers find nothing wrong: a
    report here is a generator bug or a checker false alarm, never the program's intent."""
    p = render(plan)
    errors = [f.text() for f in check_module(p.module, layers=("isa", "spec")) if f.severity == "error"]
    assert errors == [], (shapes_of(plan.units, plan.script), errors[:3])


@FAST
@given(wgmma_plans())
def test_fresh_stages_load_new_a_registers(plan):
    """Each stage with fresh A registers reads A from registers no other stage reads: the loads of
    the next stage never rewrite the A registers of a group still in flight."""
    p = render(plan)
    fresh = sum(1 for op in walk_ops(plan.script) if isinstance(op, Stage) and op.fresh_a
                and any(plan.units[m.unit].a_tile is None for m in op.mmas))
    kernel = p.module.function(p.launch.kernel)
    a_vectors = {str(i.operands[1]) for i in kernel.instructions()
                 if i.opcode.startswith("wgmma.mma_async") and str(i.operands[1]).startswith("{")}
    assert len(a_vectors) >= fresh


def test_default_programs_reach_every_shape():
    """160 default programs at a fixed seed (what ``fuzzptx run --seed 3`` draws first) hold every
    shape of ``SHAPES`` at least once (``benchmarks/bench_shapes.py`` measures the rates)."""
    counts: Counter = Counter()
    for p in draw_direct(160, 3, illegal_share=0.0):
        counts.update(_notes_shapes(p))
    missing = [s for s in SHAPES if not counts[s]]
    assert missing == [], dict(counts)


def _unit_plan():
    """One register-A unit, drawn (any unit will do for ``shapes_of``'s bookkeeping)."""
    with reproducible():
        for i in range(200):
            plan = draw(wgmma_plans(max_units=1), f"shapes:{i}")
            if plan.units[0].a_tile is None:
                return plan
    raise AssertionError("no register-A unit in 200 plans")


def test_shapes_of_names_each_shape_from_the_pipeline_state():
    plan = _unit_plan()
    us = plan.units
    m, restart = Mma(0), Mma(0, scale_d=0)
    assert shapes_of(us, (Stage((m, m)), Wait(0))) == ("repeat_in_group",)
    assert shapes_of(us, (Stage((m,)), Stage((m,)))) == ("repeat_across_commit",)
    # a restart is "in flight" only while the earlier group is pending
    assert "restart_in_flight" in shapes_of(us, (Stage((m,)), Stage((restart,))))
    assert "restart_in_flight" not in shapes_of(us, (Stage((m,)), Wait(0), Stage((restart,))))
    # calls and loops count only between a commit and the wait that retires it
    inflight = shapes_of(us, (Stage((m,)), UniformIf("param", True, (Side("call"), Loop(2, (Side("arith"),)))), Wait(0)))
    assert {"call_in_flight", "loop_in_flight"} <= set(inflight)
    assert shapes_of(us, (Stage((m,)), Wait(0), Side("call"), Loop(2, (Side("arith"),)))) == ()
    # register-A pipeline: two stages on fresh A registers and a wait_group N > 0
    assert "rega_pipeline" in shapes_of(us, (Stage((m,), True), Stage((m,), True), Wait(1)))
    assert "rega_pipeline" not in shapes_of(us, (Stage((m,), True), Stage((m,), True), Wait(0)))
    big = 216 - us[0].d_count
    assert "pressure" in shapes_of(us, (Live(big, (Stage((m,)), Wait(0))),))
    assert "pressure" not in shapes_of(us, (Live(1, (Stage((m,)), Wait(0))),)) or us[0].d_count >= 175


def test_live_block_is_rendered_as_loads_before_and_stores_after():
    """A ``Live`` block adds exactly its values' loads before the window and their stores after it."""
    plan = _unit_plan()
    body = (Stage((Mma(0),)), Side("call"), Wait(0))

    def counts(script):
        text = render(replace(plan, script=script)).to_ptx()
        cut = text.index("wgmma.fence")
        return text[:cut].count("ld.global"), text[text.index("call"):].count("st.global")

    loads0, stores0 = counts(body)
    loads, stores = counts((Live(12, body),))
    assert (loads - loads0, stores - stores0) == (12, 12)
    assert {"h0", "l0"} <= {b.name for b in render(replace(plan, script=(Live(12, body),))).buffers}
