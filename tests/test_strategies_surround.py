"""strategies/surround.py: every construct, placed in a drawn wgmma program, is accepted by real
ptxas, clean under the checker's ISA and spec layers, and run by the reference with defined
outputs (the approximate ones: bounds, never exact bits); the twins are
accepted by ptxas, flagged with their rule, and leave the reference's outputs undefined."""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

import fuzzptx.strategies as S
from fuzzptx.data import buffer_bytes
from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.oracles.reference import run_program
from fuzzptx.strategies.control import Loop
from fuzzptx.strategies.direct import draw, reproducible
from fuzzptx.strategies.mutations import apply, illegal_programs, mutation_of
from fuzzptx.strategies.render import render
from fuzzptx.strategies.surround import NOUNS, Around, Division, place

PER_NOUN = 2


def _programs(noun: str, n: int = PER_NOUN):
    out = []
    with reproducible():
        for i in range(n):
            plan = draw(S.wgmma_plans(), f"surround:{noun}:{i}")
            plan = replace(plan, script=tuple(op for op in plan.script if not isinstance(op, Around)))
            c = draw(NOUNS[noun](), f"construct:{noun}:{i}")
            out.append((c, render(replace(plan, script=place(plan.script, ((3 * i + 1, c),), Loop)))))
    return out


@pytest.mark.parametrize("noun", sorted(NOUNS))
def test_each_construct_compiles_checks_clean_and_runs_defined(noun):
    progs = _programs(noun)
    for (c, p), r in zip(progs, compile_batch([p.to_ptx() for _, p in progs])):
        assert r.accepted, r.stderr
        errors = [f for f in check_module(p.module, layers=("isa", "spec")) if f.severity == "error"]
        assert errors == [], (c, errors)
        res = run_program(p)
        if c.approx:  # runs, and what derives from ex2/rcp.approx is a bound or free, never exact bits
            assert any(n.startswith("approx:") for n in p.notes)
            assert res.undefined is not None or any(
                (res.outputs[b.name].kind != 0).any() for b in p.outputs() if re.fullmatch(r"[yzw]\d+", b.name)), c
            continue
        assert res.undefined is None, (c, res.undefined)
        for b in p.outputs():  # the construct's outputs are exact (the wgmmas' may be bounds)
            if re.fullmatch(r"[yzw]\d+", b.name):
                assert (res.outputs[b.name].kind == 0).all(), (c, b.name)


def test_division_computes_what_numpy_computes():
    with reproducible():
        plan = draw(S.wgmma_plans(control=False), "division")
    for d in (Division(False, "input", 0), Division(True, "param", -5), Division(False, "param", 96)):
        p = render(replace(plan, script=plan.script + (Around(d),)))
        res = run_program(p)
        x = buffer_bytes(p.buffer("x0")).view(np.uint32).reshape(-1, 2)
        if d.divisor == "input":
            div = (x[:, 1] & 0xFFFF) | 1
        else:
            div = np.full(len(x), d.value & 0xFFFFFFFF, np.uint32)
        y = np.frombuffer(res.bytes("y0"), np.uint32).reshape(-1, 2)
        if d.signed:
            a, b = x[:, 0].view(np.int32).astype(np.int64), div.view(np.int32).astype(np.int64)
            q = np.trunc(a / b).astype(np.int64)
            assert np.array_equal(y[:, 0].view(np.int32), q.astype(np.int32))
            assert np.array_equal(y[:, 1].view(np.int32), (a - q * b).astype(np.int32))
        else:
            assert np.array_equal(y[:, 0], x[:, 0] // div)
            assert np.array_equal(y[:, 1], x[:, 0] % div)


def test_wgmma_programs_carry_constructs_between_their_ops():
    with reproducible():
        progs = [draw(S.wgmma_programs(), f"carry:{i}") for i in range(12)]
    assert sum(any(n.startswith("around:") for n in p.notes) for p in progs) >= 6


TWINS = ("div_by_zero", "outside_membermask", "carry_in_undefined")


@pytest.mark.parametrize("name", TWINS)
def test_twins_are_accepted_flagged_and_undefined(name):
    with reproducible():
        progs = [draw(illegal_programs((name,)), f"twin:{name}:{i}", attempts=400) for i in range(2)]
    for p, r in zip(progs, compile_batch([p.to_ptx() for p in progs])):
        m = mutation_of(p)
        assert m.name == name and r.accepted
        assert m.rule in {f.rule for f in check_module(p.module, layers=("isa", "spec")) if f.severity == "error"}
        if any(n.startswith("approx:") for n in p.notes):
            continue
        res = run_program(p)
        assert res.undefined is not None or any((o.kind != 0).any() for o in res.outputs.values())


def test_twin_needs_its_construct():
    with reproducible():
        plan = draw(S.wgmma_plans(control=False), "plain")
    assert apply("div_by_zero", render(plan)) is None
    assert apply("carry_in_undefined", render(plan)) is None


def test_an_address_construct_of_a_bounded_store_alone_writes_no_empty_buffer():
    """``Address(("store16",))`` stores only into its ``z<j>``: no zero-word ``y<j>`` (a header
    cannot name one: the wgmma_programs property test drew it and the program did not parse back)."""
    from fuzzptx.program import Program
    from fuzzptx.strategies.surround import Address

    with reproducible():
        plan = draw(S.wgmma_plans(), "surround:store16")
    plan = replace(plan, script=tuple(op for op in plan.script if not isinstance(op, Around)))
    p = render(replace(plan, script=place(plan.script, ((1, Address(("store16",), 150, 1, 0)),), Loop)))
    assert all(b.count > 0 for b in p.buffers)
    assert not [b for b in p.buffers if re.fullmatch(r"y\d+", b.name)]
    q = Program.from_ptx(p.to_ptx(), "round.ptx")
    assert [b.name for b in q.buffers] == [b.name for b in p.buffers]
