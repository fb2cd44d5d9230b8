"""The whole catalogue against real ptxas: every form accepted, every neighbour rejected,
except the disagreements the catalogue pins (fuzzptx.conformance.PINNED).

One batched run feeds all assertions, computed by one xdist worker for all of them
(``once_per_run``).  By default it is a fixed sample (``ci_cases``: every pinned rule and spec
exception whole, every sixth form's kernel, every ``EVERY``-th case of each other rule of each
family, about a tenth of the ~30k kernels); with FUZZPTX_FULL=1 or the
nightly profile, every case (about two minutes on 2 cores).
"""
from __future__ import annotations

import pytest

from fuzzptx import conformance, isa
from fuzzptx.neighbours import RULES, Case
from support.sampling import per_group
from support.shared import once_per_run

pytest.importorskip("fuzzptx.oracles.ptxas")

EVERY = 12  # every 12th case of each rule of each family: the neighbours (rejected early by ptxas, cheap)
EVERY_FORM = 6  # every 6th form's default-target kernel (compiled through, most of the cost)


def ci_cases(cases: list[Case]) -> list[Case]:
    """The default sample: whole where an assertion counts each case (the cases of a pinned rule,
    the spec exceptions, the default-target kernel of each form ptxas is known to reject), every
    EVERY_FORM-th form's default-target kernel of each family and every EVERY-th case of each other
    rule of each family (``wgmma.k-wrong``, ``mma.legal-imm``, ...: every rule keeps a case)."""
    pinned = {p.rule for p in conformance.PINNED}
    spec_only = {f.key for f in isa.forms() if not f.ptxas_accepts}

    def whole(c: Case) -> bool:
        return c.rule in pinned or ".spec-" in c.rule or (c.rule.endswith(".legal") and c.form_key in spec_only)

    rest = [c for c in cases if not whole(c)]
    some = {id(c) for c in per_group((c for c in rest if c.rule.endswith(".legal")), lambda c: c.rule, EVERY_FORM)}
    some |= {id(c) for c in per_group((c for c in rest if not c.rule.endswith(".legal")), lambda c: c.rule, EVERY)}
    return [c for c in cases if whole(c) or id(c) in some]


def _unexplained(outcomes, pred) -> list[str]:
    return [f"{o.case.rule} {o.case.form_key} ({o.case.detail}): {o.explanation()}"
            for o in outcomes if pred(o) and o.discrepancy and o.pin is None]


def _results(full: bool) -> dict:
    """What the tests assert on, as plain data (the pickle ``once_per_run`` passes between workers)."""
    cases = conformance.all_cases()
    sample = ci_cases(cases)
    outcomes = conformance.evaluate(cases if full else sample)
    summary = conformance.summary(outcomes)
    print("\nconformance:", {k: v for k, v in summary.items() if k != "by_rule"})
    return {
        "summary": summary,
        "bad_legal": _unexplained(outcomes, lambda o: ".legal" in o.case.rule),
        "bad_neighbours": _unexplained(outcomes, lambda o: ".legal" not in o.case.rule),
        "rules": {o.case.rule_name for o in outcomes},
        "unused_pins": [p.fact for p in conformance.unused_pins(outcomes)],
        "spec_accepted": [o.accepted for o in outcomes if ".spec-" in o.case.rule],
        "sample": _sample_facts(cases, sample),
        "full": full,
    }


def _sample_facts(cases: list[Case], sample: list[Case]) -> dict:
    pinned = {p.rule for p in conformance.PINNED}
    forms = {c.form_key for c in sample if c.rule.endswith(".legal")}
    return {
        "fraction": len(sample) / len(cases),
        "forms": forms,  # those whose default-target kernel is in the sample
        "legal_forms": {c.form_key for c in sample if ".legal" in c.rule},  # with any legal kernel in it
        "families": {isa.by_key(k).family for k in forms},
        "spec_only_forms": {f.key for f in isa.forms() if not f.ptxas_accepts} <= forms,
        "rules": {c.rule for c in sample},
        "all_rules": {c.rule for c in cases},
        "pinned_whole": [c for c in sample if c.rule in pinned] == [c for c in cases if c.rule in pinned],
        "spec_whole": [c for c in sample if ".spec-" in c.rule] == [c for c in cases if ".spec-" in c.rule],
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory, fuzzptx_full) -> dict:
    from fuzzptx.oracles.ptxas import PtxasNotFound, find_ptxas

    try:
        find_ptxas()
    except PtxasNotFound as e:
        pytest.skip(str(e))
    name = "conformance-full" if fuzzptx_full else "conformance"
    return once_per_run(tmp_path_factory, name, lambda _d: _results(fuzzptx_full))


def test_every_form_is_accepted(run):
    bad, s = run["bad_legal"], run["summary"]
    assert not bad, "\n".join(bad[:20])
    spec_only = sum(not f.ptxas_accepts for f in isa.forms())
    assert s["forms"] == len(isa.forms() if run["full"] else run["sample"]["legal_forms"])
    assert s["forms_accepted"] == s["forms"] - spec_only and s["forms_spec_only_rejected"] == spec_only


def test_every_neighbour_is_rejected(run):
    bad = run["bad_neighbours"]
    assert not bad, "\n".join(bad[:20])
    assert run["summary"]["neighbours"] > 10 * len(isa.families())


def test_every_rule_is_exercised_and_every_pin_is_still_true(run):
    assert set(RULES) <= run["rules"]
    assert not run["unused_pins"], run["unused_pins"]


def test_spec_exceptions_still_hold(run):
    """The spec's own text for each warp.SPEC_EXCEPTIONS entry is still rejected by ptxas."""
    assert run["spec_accepted"] and not any(run["spec_accepted"])


def test_the_sample_keeps_every_family_rule_pin_and_spec_exception(run):
    """The default sample can fail where the full run can: it holds forms of every family (every
    form ptxas is known to reject), a case of every rule of every family, every case a pin matches
    and every spec exception."""
    s = run["sample"]
    assert s["fraction"] < 1 / 3
    assert len(s["forms"]) >= len(isa.forms()) / EVERY_FORM and s["spec_only_forms"]
    assert s["families"] == {f.family for f in isa.forms()}
    assert s["rules"] == s["all_rules"]
    assert s["pinned_whole"] and s["spec_whole"]
