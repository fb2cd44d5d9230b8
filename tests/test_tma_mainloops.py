"""strategies/mainloops.py: drawn mainloop kernels are accepted by ptxas, clean under the checker,
and the reference computes what numpy computes; the illegal twins keep their labels."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from fuzzptx.data import buffer_bytes
from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.oracles.reference import run_program
from fuzzptx.ptx.emit import emit
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.strategies.mainloops import FAULTS, MainloopPlan, mainloop_plans, render, render_wgmma, wgmma_loop_plans

FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _sums(p) -> np.ndarray:
    a = buffer_bytes(p.buffers[0]).view(np.uint32).reshape(-1, p.launch.block[0]).astype(np.uint64)
    return (a.sum(0) % 2**32).astype(np.uint32)


@FAST
@given(st.lists(mainloop_plans(), min_size=4, max_size=4))
def test_legal_mainloops_compile_check_clean_and_compute_the_sums(plans):
    progs = [render(p) for p in plans]
    for r in compile_batch([emit(p.module) for p in progs]):
        assert r.accepted and not r.diagnostics, r.stderr  # silent: no C7508 for setmaxnreg
    for p in progs:
        assert [f for f in check_module(p.module) if f.severity == "error"] == []
        r = run_program(p)
        assert r.undefined is None
        assert np.array_equal(np.frombuffer(r.bytes("o"), np.uint32), _sums(p))
        assert not np.frombuffer(r.bytes("o2"), np.uint32).any()  # lane 0 leads every full warp


@FAST
@given(st.sampled_from(FAULTS).flatmap(lambda f: mainloop_plans(fault=f)))
def test_illegal_twins_are_accepted_and_leave_the_outputs_undefined(plan):
    p = render(plan)
    assert dict(p.expect) == {"ptxas": "accepted", "reference": "undefined"}
    assert compile_batch([emit(p.module)])[0].accepted
    r = run_program(p)
    assert r.undefined is not None or (r.outputs["o"].kind != 0).all()


def test_the_one_tile_mutated_is_the_one_that_goes_undefined():
    legal = MainloopPlan(128, 2, 4, False, False, False, 3)
    bad = MainloopPlan(128, 2, 4, False, False, False, 3, "missing_expect_tx", 3)
    assert "mbarrier.arrive.shared::cta.b64" not in emit(render(legal).module)
    assert emit(render(bad).module).count("mbarrier.arrive.expect_tx") == 3
    assert (run_program(render(bad)).outputs["o"].kind != 0).all()
    assert (run_program(render(legal)).outputs["o"].kind == 0).all()


# ---------------------------------------------------------------- wgmma consumers (WgmmaLoopPlan)

WG_FAST = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))


@WG_FAST
@given(st.lists(wgmma_loop_plans(), min_size=3, max_size=3))
def test_wgmma_mainloops_compile_silently_check_clean_and_run_defined(plans):
    progs = [render_wgmma(p) for p in plans]
    for p, r in zip(progs, compile_batch([emit(p.module) for p in progs])):
        assert r.accepted and not r.diagnostics, (p.notes, r.stderr)  # no serialisation, setmaxnreg kept
    for p in progs:
        assert [f for f in check_module(p.module) if f.severity in ("error", "warning")] == [], p.notes
        r = run_program(p)
        assert r.undefined is None, (p.notes, r.undefined)
        assert (r.outputs["d"].kind != UNDEF).all(), (p.notes, r.notes)


@WG_FAST
@given(st.sampled_from(("missing_expect_tx", "wrong_parity", "early_read")).flatmap(
    lambda f: wgmma_loop_plans(fault=f)))
def test_wgmma_twins_are_accepted_and_undefined(plan):
    p = render_wgmma(plan)
    assert dict(p.expect)["reference"] == "undefined"
    assert compile_batch([emit(p.module)])[0].accepted
    r = run_program(p)
    assert r.undefined is not None or (r.outputs["d"].kind == UNDEF).any(), p.notes
