"""Strategies without ptxas: descriptor tiles, pipeline legality, mutations, coverage reading.

Property tests draw from the strategies themselves; the judges they compare
against are other helpers' oracles (layouts, descriptor rules, checker).
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from fuzzptx import isa
from fuzzptx.oracles.reference.descriptors import MatrixDescriptor
from fuzzptx.oracles.reference.layouts import tile_coords
from fuzzptx.strategies import coverage
from fuzzptx.strategies.control import Loop, UniformIf
from fuzzptx.strategies.descriptors import descriptors
from fuzzptx.strategies.instructions import forms, instructions, ordered_forms
from fuzzptx.strategies.mutations import MUTATIONS, apply, mutation_of
from fuzzptx.strategies.pipelines import Mma, PipeState, Stage, Touch, Wait
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


@settings(FAST, max_examples=150)
@given(wgmma_plans())
def test_scripts_never_touch_accumulators_in_flight(plan):
    """Replay each script on every path (each loop 1..4 times, each branch taken or not), group
    by group: no Touch of a unit whose group is still in flight; waits retire the oldest."""

    def run(ops, states):
        for op in ops:
            if isinstance(op, Loop):
                out, cur = set(), states
                for _ in range(4):  # any trip count, as a static checker sees it
                    cur = run(op.body, cur)
                    out |= cur
                states = out
            elif isinstance(op, UniformIf):
                states = states | run(op.body, states)
            elif isinstance(op, Stage):
                states = {s + (frozenset(m.unit for m in op.mmas),) for s in states}
            elif isinstance(op, Wait):
                assert 0 <= op.n <= 7
                states = {s[len(s) - op.n:] if op.n else () for s in states}
            elif isinstance(op, Touch):
                for s in states:
                    busy = set().union(*s) if s else set()
                    assert op.unit not in busy, f"touch of unit {op.unit} while in flight: {plan.script}"
        return states

    run(plan.script, {()})
    assert isinstance(plan.script[0], Stage)


def test_a_touch_after_a_loop_waits_for_the_groups_one_trip_leaves():
    """The loop exit holds the groups of any trip count (a regression: after one trip,
    wait_group 2 still leaves the group issued before the loop in flight)."""
    from fuzzptx.strategies.control import script_state

    before = PipeState().after(Stage((Mma(0),)))
    loop = Loop(1, (Stage((Mma(1),)),))
    after = script_state((loop, Wait(2)), before)
    assert 0 in after.busy(), after


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


def test_long_form_lists_are_drawn_uniformly():
    """A plain sampled_from of 3,066 forms draws its head ~4x more often than uniform and its
    tail ~4x less (Hypothesis's integer distribution); choice() keeps every element within 2x."""
    from collections import Counter

    from fuzzptx.strategies.operands import UNIFORM_SPAN, choice, digits

    for n in (UNIFORM_SPAN + 1, 1092, 3066):
        h, w = digits(n)
        assert h <= UNIFORM_SPAN and w <= UNIFORM_SPAN and h * w >= n
        hits = Counter((hi * w + lo) % n for hi in range(h) for lo in range(w))
        assert set(hits) == set(range(n)) and max(hits.values()) <= 2
    seq = tuple(range(3066))
    drawn = Counter(_collect(choice(seq), 1500))
    head = sum(c for v, c in drawn.items() if v < 1022)
    tail = sum(c for v, c in drawn.items() if v >= 2044)
    assert 0.7 < head / tail < 1.4, (head, tail)


def _forms_of(program) -> list:
    out = []
    for ins in program.module.function(program.launch.kernel).instructions():
        f = isa.form_for(ins)
        if f is not None and f.family not in ("wgmma.fence", "wgmma.commit_group", "wgmma.wait_group"):
            out.append(f)
    return out


def test_sweeps_hold_distinct_forms_built_for_one_target():
    from fuzzptx.kernels import default_target
    from fuzzptx.strategies.programs import warp_programs, wgmma_sweeps

    for prog in _collect(warp_programs(), 60) + _collect(wgmma_sweeps(), 30):
        found = _forms_of(prog)
        assert [f"form: {f.key}" for f in found] == list(prog.notes)  # emitted = recorded, in order
        assert len({f.key for f in found}) == len(found)
        assert {default_target(f) for f in found} == {prog.module.target}


def test_shrinking_heads_for_one_instruction_of_the_simplest_form():
    """Derandomized: otherwise ``find`` starts from random draws, and one run (-n 2 at load 10) shrank
    a wgmma pipeline only as far as an m64n184k32.e5m2 form, not the head."""
    from hypothesis import find

    from fuzzptx.strategies.programs import warp_programs, wgmma_sweeps

    quick = settings(max_examples=60, database=None, deadline=None, derandomize=True,
                     suppress_health_check=list(HealthCheck))
    warp = find(warp_programs(), lambda p: True, settings=quick)
    assert [f.key for f in _forms_of(warp)] == [ordered_forms(tuple(f for f in isa.families() if f in
                                                 ("mma", "mma.sp", "wmma.load", "wmma.store", "wmma.mma",
                                                  "ldmatrix", "stmatrix")))[0].key]
    sparse = find(wgmma_sweeps(), lambda p: any(f.family == "wgmma.sp" for f in _forms_of(p)), settings=quick)
    assert [f.key for f in _forms_of(sparse)] == [ordered_forms(("wgmma.sp",))[0].key]
    assert ordered_forms(("wgmma.sp",))[0].atype == "f16"
    pipe = find(wgmma_programs(), lambda p: True, settings=quick)
    assert [f.key for f in _forms_of(pipe)] == [ordered_forms(("wgmma",))[0].key]
    assert len(find(programs(), lambda p: True, settings=quick).notes) == 1


def test_every_family_and_every_form_of_the_small_families_is_reached():
    """The cheap CI check of the coverage claim (the 20,000-example run is in benchmarks/),
    read back from the emitted programs' instructions (isa.form_for), not from their notes:
    every warp-level family from warp_programs(); every form of the smallest family (27
    forms on two targets) from its sweeps; the tail of the wgmma list about as often as
    its head.  (Margins: derandomized draws still change with the imported modules, whose
    constants Hypothesis mixes into its draws.)"""
    from collections import Counter

    from fuzzptx.strategies.instructions import WGMMA_FAMILIES, SYNC_FAMILIES, instruction_programs
    from fuzzptx.strategies.programs import warp_programs, wgmma_sweeps

    warp = coverage.measure(_collect(warp_programs(), 200))
    fams = {isa.by_key(k).family for k in warp.forms}
    assert fams == set(isa.families()) - set(WGMMA_FAMILIES + SYNC_FAMILIES), fams
    swept = coverage.measure(_collect(instruction_programs("stmatrix", 16), 80))
    missing = [f.key for f in isa.forms("stmatrix") if f.ptxas_accepts and f.key not in swept.forms]
    assert not missing, f"stmatrix: {len(missing)} unreached, e.g. {missing[:3]}"
    order = {f.key: i for i, f in enumerate(ordered_forms(("wgmma",)))}
    thirds = Counter(3 * order[k] // len(order) for p in _collect(wgmma_sweeps(), 100)
                     for k in coverage.program_features(p)[0] if k in order)
    # A plain sampled_from of the 1,092 forms gives tail/head ~0.27; uniform is 1 (Hypothesis's
    # first, zero-extended examples lean to the head at this size: 0.55-0.8 measured).
    assert thirds[2] > 0.4 * thirds[0], thirds


def test_one_immediate_code_covers_every_form_uniformly():
    """form_immediates draws one code in 0..255 for any form: its slots' value counts must
    multiply to a divisor of 256, or some values would come up more often than others."""
    from fuzzptx.strategies.instructions import _immediate_slots

    for f in isa.forms():
        size = 1
        for _, values in _immediate_slots(f.key):
            size *= len(values)
        assert 256 % size == 0, (f.key, size)


def test_fixed_seed_draws_do_not_depend_on_the_imported_modules(tmp_path):
    """Hypothesis mixes constants from loaded modules into draws; ``reproducible()`` hides them,
    so a pytest-xdist worker that imported other test files draws the same fixed-seed sample."""
    import pathlib
    import subprocess
    import sys

    tests = pathlib.Path(__file__).parent
    script = tmp_path / "draw.py"
    script.write_text(
        "import hashlib, sys\n"
        "if sys.argv[1] == 'more':\n"
        f"    sys.path.insert(0, {str(tests)!r})\n"
        "    import test_reduce_driver, test_fuzz, test_corpus  # their constants are 'local' to Hypothesis\n"
        "from fuzzptx.engine.generate import draw_direct\n"
        "print(hashlib.sha1(''.join(p.to_ptx() for p in draw_direct(12, 5)).encode()).hexdigest())\n")
    run = lambda how: subprocess.run([sys.executable, str(script), how], capture_output=True, text=True,  # noqa: E731
                                     cwd=tmp_path, timeout=300).stdout.strip()
    few, more = run("few"), run("more")
    assert few and few == more


def test_sections_built_with_merged_names_equal_renamed_kernels():
    """A sweep's sections come from ``minimal_kernel(merged_names=True)``; renaming the plain
    kernel (what merging any module does) must give the same declarations and code."""
    import importlib

    from fuzzptx.kernels import minimal_kernel

    ins = importlib.import_module("fuzzptx.strategies.instructions")
    forms = isa.forms()[::5]
    assert len(forms) > 500
    for form in forms:
        for pred in (False, True) if form.has_operand("scale_d") else (False,):
            assert ins._section(form.key, (), pred) == ins._renamed_body(minimal_kernel(form, scale_d_pred=pred)), form.key
