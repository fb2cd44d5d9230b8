"""The whole catalogue against real ptxas: every form accepted, every neighbour rejected,
except the disagreements the catalogue pins (fuzzptx.conformance.PINNED).

One run (batched: ~30k kernels, about two minutes on 2 cores) feeds all assertions.
"""
from __future__ import annotations

import functools

import pytest

from fuzzptx import conformance, isa
from fuzzptx.neighbours import RULES

pytest.importorskip("fuzzptx.oracles.ptxas")


@functools.lru_cache(maxsize=1)
def _run():
    from fuzzptx.oracles.ptxas import PtxasNotFound, find_ptxas

    try:
        find_ptxas()
    except PtxasNotFound as e:
        pytest.skip(str(e))
    outcomes = conformance.evaluate(conformance.all_cases())
    summary = conformance.summary(outcomes)
    print("\nconformance:", {k: v for k, v in summary.items() if k != "by_rule"})
    return outcomes, summary


def _unexplained(outcomes, pred):
    return [f"{o.case.rule} {o.case.form_key} ({o.case.detail}): {o.explanation()}"
            for o in outcomes if pred(o) and o.discrepancy and o.pin is None]


def test_every_form_is_accepted():
    outcomes, s = _run()
    bad = _unexplained(outcomes, lambda o: ".legal" in o.case.rule)
    assert not bad, "\n".join(bad[:20])
    spec_only = sum(not f.ptxas_accepts for f in isa.forms())
    assert s["forms"] == len(isa.forms())
    assert s["forms_accepted"] == s["forms"] - spec_only and s["forms_spec_only_rejected"] == spec_only


def test_every_neighbour_is_rejected():
    outcomes, s = _run()
    bad = _unexplained(outcomes, lambda o: ".legal" not in o.case.rule)
    assert not bad, "\n".join(bad[:20])
    assert s["neighbours"] > 10 * len(isa.families())


def test_every_rule_is_exercised_and_every_pin_is_still_true():
    outcomes, _ = _run()
    rules = {o.case.rule_name for o in outcomes}
    assert set(RULES) <= rules
    assert not conformance.unused_pins(outcomes), [p.fact for p in conformance.unused_pins(outcomes)]


def test_spec_exceptions_still_hold():
    """The spec's own text for each warp.SPEC_EXCEPTIONS entry is still rejected by ptxas."""
    outcomes, _ = _run()
    spec = [o for o in outcomes if ".spec-" in o.case.rule]
    assert spec and all(not o.accepted for o in spec)
