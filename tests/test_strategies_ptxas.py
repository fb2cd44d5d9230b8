"""Generated programs against real ptxas 13.0.88 (batched: one ptxas run per few dozen programs).

- every legal program is accepted;
- every mutation does what its label says (rejected, or accepted with the
  advisory it names unless ptxas serialised the pipeline for another reason),
  or the test fails naming the rule.
A larger run is benchmarks/bench_strategies.py.
"""
from __future__ import annotations

from collections import defaultdict

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.program import Program
from fuzzptx.strategies.mutations import MUTATIONS, apply
from fuzzptx.strategies.programs import warp_programs, wgmma_programs, wgmma_sweeps

COLLECT = settings(deadline=None, database=None, phases=[Phase.generate],
                   suppress_health_check=list(HealthCheck))


def collect(strategy, n: int, derandomize: bool = False) -> list:
    out: list = []

    @settings(COLLECT, max_examples=n, derandomize=derandomize)
    @given(strategy)
    def run(x):
        out.append(x)

    run()
    return out


def compile_programs(progs: list[Program]):
    """ptxas results in program order; one batch per target (a few forms need sm_100a)."""
    by_target: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(progs):
        by_target[p.module.target].append(i)
    results: list = [None] * len(progs)
    for target, idxs in by_target.items():
        for i, r in zip(idxs, compile_batch([progs[i].to_ptx() for i in idxs], arch=target)):
            results[i] = r
    return results


def _errors(r) -> str:
    return "; ".join(f"line {d.line}: {d.message}" for d in r.diagnostics if d.severity in ("error", "fatal"))[:300]


def test_legal_wgmma_programs_are_accepted_by_ptxas(fuzzptx_full):
    progs = collect(wgmma_programs(), 60 if fuzzptx_full else 20)
    bad = [(p, r) for p, r in zip(progs, compile_programs(progs)) if not r.accepted]
    assert not bad, f"{len(bad)}/{len(progs)} rejected; first: {_errors(bad[0][1])}\n" + "\n".join(bad[0][0].notes)


def test_legal_instruction_programs_are_accepted_by_ptxas(fuzzptx_full):
    """Warp-level instruction programs and straight-line wgmma sweeps (several forms per kernel)."""
    progs = collect(warp_programs(), 150 if fuzzptx_full else 50) + collect(wgmma_sweeps(), 40 if fuzzptx_full else 14)
    bad = [(p, r) for p, r in zip(progs, compile_programs(progs)) if not r.accepted]
    assert not bad, f"{len(bad)}/{len(progs)} rejected; first: {_errors(bad[0][1])}\n" + "\n".join(bad[0][0].notes)


def test_spec_only_forms_are_rejected_by_ptxas():
    """The catalogue's spec exceptions: spec-legal forms ptxas refuses (expect says so)."""
    from fuzzptx.strategies.instructions import spec_only_forms, spec_only_programs

    if not spec_only_forms():
        return
    progs = collect(spec_only_programs(), 20)
    wrong = [p for p, r in zip(progs, compile_programs(progs)) if r.accepted]
    assert not wrong, "ptxas accepts a spec-only form: " + "; ".join(wrong[0].notes)


def test_every_mutation_does_what_its_label_says_under_ptxas(fuzzptx_full):
    # derandomized: the same bases every run, so the applicability check below is stable
    bases = collect(st.tuples(wgmma_programs(max_units=2), st.integers(0, 7)), 14, derandomize=True)
    per_mutation = len(bases) if fuzzptx_full else 4  # every mutation by default, on its first 4 bases
    cases = []
    for m in MUTATIONS:
        mine = [q for p, choice in bases if (q := apply(m, p, choice)) is not None]
        cases += [(m, q) for q in mine[:per_mutation]]
    results = compile_programs([q for _, q in cases])
    wrong: dict[str, list[str]] = defaultdict(list)
    tried: dict[str, int] = defaultdict(int)
    for (m, _q), r in zip(cases, results):
        tried[m.name] += 1
        if not m.ptxas_agrees(r.accepted, r.codes()):
            got = ("accepted " + " ".join(sorted(set(c for c in r.codes() if c)))) if r.accepted else "rejected"
            wrong[m.name].append(f"{m.name} (breaks {m.rule}): label '{m.ptxas}', ptxas said '{got.strip()}'")
    assert not wrong, "\n".join(v[0] + f"  [{len(v)}/{tried[k]}]" for k, v in wrong.items())
    untried = [m.name for m in MUTATIONS if not tried[m.name]]
    assert len(untried) <= 1, f"mutations never applicable in this run: {untried}"  # sparse_selector needs a .sp form
