"""strategies/mainloops.py: drawn mainloop kernels are accepted by ptxas, clean under the checker,
and the reference computes what numpy computes; the illegal twins keep their labels."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fuzzptx.data import buffer_bytes
from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.oracles.reference import run_program
from fuzzptx.ptx.emit import emit
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.oracles.sass import disassemble_all, disassembler, gmma_count_hazards, verify
from fuzzptx.ptx.parse import parse
from fuzzptx.strategies.descriptors import SmemTile, canonical_layout
from fuzzptx.strategies.mainloops import (FAULTS, MAY_HANG, TWIN_RULES, WGMMA_FAULTS, MainloopPlan, WgmmaLoopPlan,
                                         mainloop_plans, render, render_wgmma, twin_name, wgmma_kernel_text,
                                         wgmma_loop_plans)
from fuzzptx.strategies.mutations import illegal_programs, mutation_of

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
        assert [f for f in check_module(p.module, tensormaps=p.tensormaps) if f.severity == "error"] == []
        r = run_program(p)
        assert r.undefined is None
        assert np.array_equal(np.frombuffer(r.bytes("o"), np.uint32), _sums(p))
        assert not np.frombuffer(r.bytes("o2"), np.uint32).any()  # lane 0 leads every full warp


@FAST
@given(st.sampled_from(FAULTS).flatmap(lambda f: mainloop_plans(fault=f)))
def test_illegal_twins_are_accepted_and_leave_the_outputs_undefined(plan):
    p = render(plan)
    labels = dict(p.expect)
    assert labels["ptxas"] == "accepted" and labels["reference"] == "undefined"
    rule = TWIN_RULES[plan.fault]
    assert labels.get("checker") == (f"undefined: {rule}" if rule else None)
    if rule:
        assert rule in {f.rule for f in check_module(p.module, tensormaps=p.tensormaps)}
    assert compile_batch([emit(p.module)])[0].accepted
    r = run_program(p)
    assert r.undefined is not None or (r.outputs["o"].kind == UNDEF).all()


def test_the_one_tile_mutated_is_the_one_that_goes_undefined():
    legal = MainloopPlan(128, 2, 4, False, False, False, 3)
    bad = MainloopPlan(128, 2, 4, False, False, False, 3, "missing_expect_tx", 3)
    assert "mbarrier.arrive.shared::cta.b64" not in emit(render(legal).module)
    assert emit(render(bad).module).count("mbarrier.arrive.expect_tx") == 3
    assert (run_program(render(bad)).outputs["o"].kind == UNDEF).all()
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
        assert [f for f in check_module(p.module, tensormaps=p.tensormaps) if f.severity in ("error", "warning")] == [], p.notes
        r = run_program(p)
        assert r.undefined is None, (p.notes, r.undefined)
        assert (r.outputs["d"].kind != UNDEF).all(), (p.notes, r.notes)


@WG_FAST
@given(st.sampled_from(WGMMA_FAULTS).flatmap(lambda f: wgmma_loop_plans(fault=f)))
def test_wgmma_twins_are_accepted_undefined_and_flagged_where_a_rule_sees_them(plan):
    p = render_wgmma(plan)
    labels = dict(p.expect)
    assert labels["ptxas"] == "accepted" and labels["reference"] == "undefined"
    assert mutation_of(p).name == twin_name(plan.fault)
    assert compile_batch([emit(p.module)])[0].accepted
    r = run_program(p)
    assert r.undefined is not None or (r.outputs["d"].kind == UNDEF).any(), p.notes
    found = {f.rule for f in check_module(p.module, tensormaps=p.tensormaps) if f.severity in ("error", "warning")}
    rule = TWIN_RULES[plan.fault]
    assert found == ({rule} if rule else set()), (p.notes, found)
    if rule:
        assert labels["checker"] == f"undefined: {rule}"


def _plan(**kw) -> WgmmaLoopPlan:
    form = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16|a=desc"
    a = SmemTile("f16", 64, 16, canonical_layout("f16", 64, 16, "K", "none"))
    b = SmemTile("f16", 8, 16, canonical_layout("f16", 8, 16, "K", "none"))
    base = dict(form_key=form, b_tile=b, a_tile=a, a_load="desc", consumers=1, producer_wg=False, setmaxnreg=False,
                depth=1, stages=2, ktiles=4, tiles=2, all_release=False, epilogue="st.global", seed=5)
    base.update(kw)
    return WgmmaLoopPlan(**base)


def test_a_refill_under_an_in_flight_wgmma_is_undefined_in_the_reference():
    legal = run_program(render_wgmma(_plan()))
    assert legal.undefined is None and (legal.outputs["d"].kind != UNDEF).all()
    assert not any("was written before the wgmma.wait_group" in n for n in legal.notes)
    twin = render_wgmma(_plan(fault="producer_overwrite", fault_k=1))
    assert dict(twin.expect) == {"ptxas": "accepted", "checker": "undefined: spec.mbarrier.release-in-flight",
                                 "reference": "undefined"}
    r = run_program(twin)
    assert (r.outputs["d"].kind == UNDEF).all()  # K-steps 2 and 3 accumulate on the poisoned one
    assert any("line" in n and "was written before the wgmma.wait_group" in n for n in r.notes), r.notes
    assert [f.rule for f in check_module(twin.module) if f.severity == "error"] == ["spec.mbarrier.release-in-flight"]


def test_a_generic_store_under_an_in_flight_wgmma_is_undefined_and_after_its_wait_is_not():
    text = wgmma_kernel_text(_plan(depth=0, ktiles=1, tiles=1))
    commit = "\twgmma.commit_group.sync.aligned;\n"
    store = "\tst.shared.u32 \t[stg+64], %r0;\n"  # inside stage 0's A tile
    assert text.count(commit) == 1
    for where, undefined in ((commit + store, True), (commit + "\twgmma.wait_group.sync.aligned \t0;\n" + store, False)):
        p = render_wgmma(_plan(depth=0, ktiles=1, tiles=1))
        p = replace(p, module=parse(text.replace(commit, where), "t.ptx"))
        r = run_program(p)
        assert bool((r.outputs["d"].kind == UNDEF).all()) == undefined, r.notes


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(illegal_programs(tuple(twin_name(f) for f in WGMMA_FAULTS)))
def test_illegal_programs_draws_the_twins_with_their_labels(p):
    m = mutation_of(p)
    assert m.name.startswith("mainloop_") and dict(p.expect) == dict(m.expect())


@pytest.mark.skipif(disassembler() is None, reason="no disassembler (pip install nvidia-cuda-nvdisasm)")
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(wgmma_loop_plans(), min_size=12, max_size=12))
def test_the_sass_of_legal_wgmma_mainloops_at_O3_has_no_pipeline_hazard(plans):
    """A sample of legal kernels through ptxas -O3 and the SASS judge's rules (docs/sass.md):
    the checker finds them defined, so a hazard here would be ptxas's."""
    progs = [render_wgmma(p) for p in plans]
    results = compile_batch([p.to_ptx() for p in progs], want_cubin=True)
    assert all(r.accepted and r.cubin for r in results)
    listings = dict(zip(map(id, [r.cubin for r in results]), disassemble_all([r.cubin for r in results],
                                                                              disassembler())))
    for p, r in zip(progs, results):
        lst, name = listings[id(r.cubin)], r.kernel(p.launch.kernel)
        assert lst.function(name) is not None
        found = [h.line() for h in verify(lst, name)] + \
            [c.line() for c in gmma_count_hazards(p.module, p.launch.kernel, lst, name)]
        assert found == [], p.notes


def test_the_h100_record_ran_every_shape_and_twin_and_explains_every_mismatch():
    """The committed device record (tests/support/hw_mainloops.py) against today's shape lists."""
    import json
    import pathlib

    from support.hw_mainloops import SHAPES, TWINS

    rec = json.loads((pathlib.Path(__file__).parent / "hw_records" / "mainloops_h100.json").read_text())
    ran = {r["case"].split("/")[0] for r in rec["results"] if r["fault"] is None}
    assert set(SHAPES) <= ran and set(TWINS) - {n for n, p in TWINS.items() if p.fault in MAY_HANG} <= ran
    assert rec["device"]["device"].startswith("NVIDIA H100") and rec["ptxas"] == "13.0.88"
    assert rec["faults"] == 0 and rec["rejected_by_ptxas"] == [] and rec["legal_with_undefined_elements"] == 0
    hung = {r["case"].split("/")[0] for r in rec["results"] if r["fault"]}
    assert all(TWINS[n].fault in MAY_HANG for n in hung)
    ex = rec["mismatches_explained"]
    assert ex["mismatched_programs"] == rec["programs_with_mismatches"] and ex["all_fp8_with_f32_accumulator"]
    assert ex["equal_to_hardware_numerics"] == ex["listed_gpu_values"] > 0


def test_every_axis_value_of_the_wgmma_mainloops_is_drawn():
    """Each shape the plans can take comes up in a small seeded sample (no compiling: plans only)."""
    from fuzzptx.strategies.direct import draw, reproducible

    with reproducible():
        plans = [draw(wgmma_loop_plans(), f"axes:{i}") for i in range(150)]
    seen = {(axis, getattr(p, axis)) for p in plans for axis in ("a_load", "consumers", "producer_wg", "setmaxnreg",
                                                                  "depth", "epilogue", "all_release")}
    seen |= {("tiles>1", p.tiles > 1) for p in plans} | {("stages>1", p.stages > 1) for p in plans}
    seen |= {("depth1+producer_wg", True) for p in plans if p.depth and p.producer_wg}
    want = {("a_load", v) for v in ("desc", "ld.shared", "ldmatrix")} | {("consumers", 1), ("consumers", 2)} | {
        (a, v) for a in ("producer_wg", "setmaxnreg", "all_release", "tiles>1", "stages>1") for v in (False, True)} | {
        ("depth", 0), ("depth", 1), ("epilogue", "st.global"), ("epilogue", "stmatrix")}
    assert want <= seen, want - seen
    assert ("depth1+producer_wg", True) not in seen  # not drawn: docs/tma.md says why
    assert {p.form.dtype for p in plans} == {"f32", "f16", "s32"}
