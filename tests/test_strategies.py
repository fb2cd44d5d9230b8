"""Strategies without ptxas: descriptor tiles, pipeline legality, mutations, coverage reading.

Property tests draw from the strategies themselves; the judges they compare
against are other helpers' oracles (layouts, descriptor rules, checker).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fuzzptx import isa
from fuzzptx.oracles.reference.descriptors import MatrixDescriptor
from fuzzptx.oracles.reference.layouts import tile_coords
from fuzzptx.strategies import coverage
from fuzzptx.strategies.control import Loop, UniformIf, walk_ops
from fuzzptx.strategies.descriptors import descriptors
from fuzzptx.strategies.instructions import forms, instructions, ordered_forms
from fuzzptx.strategies.mutations import MUTATIONS, apply, mutation_of
from fuzzptx.strategies.pipelines import PipeState, Stage, Touch, Wait
from fuzzptx.strategies.programs import programs, wgmma_plans, wgmma_programs

FAST = settings(max_examples=40, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

tile_params = st.sampled_from(ordered_forms(("wgmma",))).flatmap(
    lambda f: st.tuples(st.just(f), st.integers(1, 3)))


@st.composite
def tiles(draw):
    form, slices = draw(tile_params)
    tile = draw(descriptors(form.btype, form.shape.n, form.shape.k, slices=slices,
                            allow_mn_major=form.has_operand("imm_trans_b")))
    return form, slices, tile


@settings(max_examples=150, deadline=None, database=None)
@given(tiles())
def test_descriptor_tiles_are_legal_and_do_not_overlap(drawn):
    form, slices, tile = drawn
    mn, k = tile_coords(tile.mn, tile.k)
    addr = tile.address(mn, k)
    bit = tile.layout.bit_in_byte(mn, k)
    assert len(set(zip(addr.ravel().tolist(), bit.ravel().tolist()))) == addr.size, "two elements share a byte"
    assert addr.min() >= 0 and addr.max() < tile.footprint()
    d = tile.descriptor()
    assert d.representable and MatrixDescriptor.decode(d.encode()) == d
    assert d.issues() == (), d.issues()  # helper "layouts"'s rules: alignment, base offset
    for j in range(slices):  # each K-slice a program points a descriptor at
        piece = tile.slice(j, form.shape.k)
        assert piece.descriptor().issues() == ()
        sub_mn, sub_k = tile_coords(piece.mn, piece.k)
        np.testing.assert_array_equal(piece.address(sub_mn, sub_k), tile.address(sub_mn, sub_k + j * form.shape.k))


@FAST
@given(wgmma_plans())
def test_scripts_never_touch_accumulators_in_flight(plan):
    """Replay each script path by path: no Touch of a unit whose group may be in flight."""

    def check(ops, state):
        for op in ops:
            if isinstance(op, Touch):
                assert op.unit not in state.busy(), f"touch of unit {op.unit} while in flight: {plan.script}"
            if isinstance(op, Loop):
                for _ in range(3):  # any trip count: the body from each iteration's state
                    state = check(op.body, state)
                continue
            if isinstance(op, UniformIf):
                state = state.join(check(op.body, state))
                continue
            if isinstance(op, Wait):
                assert 0 <= op.n <= 7
            state = state.after(op)
        return state

    check(plan.script, PipeState())
    assert isinstance(plan.script[0], Stage)


@FAST
@given(wgmma_programs())
def test_legal_programs_are_clean_for_the_checker(program):
    """Cross-judge: helper "checker"'s ISA and spec rules find nothing in a legal program."""
    from fuzzptx.oracles.checker import check_module

    found = [f"{f.rule}: {f.message}" for f in check_module(program.module, layers=("isa", "spec"))
             if f.severity == "error"]
    assert not found, "\n".join(found[:3]) + "\n" + "\n".join(program.notes)


@FAST
@given(wgmma_programs())
def test_programs_round_trip_their_header_and_never_have_all_zero_inputs(program):
    from fuzzptx.data import buffer_bytes
    from fuzzptx.program import Program

    text = program.to_ptx()
    back = Program.from_ptx(text)
    assert back.buffers == program.buffers and back.launch == program.launch
    for b in program.buffers:
        if not b.output:
            assert b.init in ("random", "small_int", "special")
            assert buffer_bytes(b).any(), f"{b.name} is all zeros"


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(wgmma_programs(max_units=1), st.integers(0, 7))
def test_every_mutation_is_labelled_and_changes_the_program(program, choice):
    applied = 0
    for m in MUTATIONS:
        out = apply(m, program, choice)
        if out is None:
            continue
        applied += 1
        assert out.module != program.module, m.name
        assert mutation_of(out) == m
        assert dict(out.expect)["checker"] == f"{m.kind}: {m.rule}"
        assert dict(out.expect)["ptxas"] == m.ptxas
    assert applied >= 12  # the rules every wgmma program can break


@settings(max_examples=30, deadline=None, database=None)
@given(instructions())
def test_instructions_cover_their_form(ins):
    form = isa.form_for(ins)
    assert form is not None and ins.opcode == form.opcode


def test_form_choice_is_uniform_at_the_leaves():
    """Every catalogue form is a leaf of the form strategy (so every one is reachable)."""
    from fuzzptx.strategies.instructions import spec_only_forms

    assert set(ordered_forms()) | set(spec_only_forms()) == set(isa.forms())
    assert ordered_forms()[0].family == "wgmma" and ordered_forms()[0].atype == "f16"
    s = forms()
    assert s.is_empty is False


def _collect(strategy, n):
    seen = []

    @settings(max_examples=n, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(p):
        seen.append(p)

    collect()
    return seen


def test_coverage_reads_programs_back_from_ir_and_reaches_every_swizzle_and_control_kind():
    cov = coverage.measure(_collect(programs(), 100))
    assert cov.programs == 100
    fams = {isa.by_key(k).family for k in cov.forms}
    assert {"wgmma", "wgmma.sp", "wgmma.fence", "wgmma.commit_group", "wgmma.wait_group"} <= fams
    assert len(fams) >= 8, fams  # warp-level families too
    pipes = coverage.measure(_collect(wgmma_programs(), 120))
    assert set(coverage.SWIZZLE_NAMES.values()) <= set(pipes.swizzles), pipes.swizzles
    missing = [k for k in coverage.CONTROL_KINDS if not pipes.control[k]]
    assert not missing, missing
    report = cov.report()
    assert "forms reached" in report and "swizzle modes" in report


def test_coverage_cli_rejects_bad_n(capsys):
    assert coverage.main(["-n", "0"]) == 2
    assert "must be positive" in capsys.readouterr().err
