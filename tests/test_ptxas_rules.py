"""The ptxas model's rules are objects that name their probes (``tests/data/checker/``): every glob a
rule names finds a probe, every probe belongs to a rule, and every rule class runs somewhere."""
from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from fuzzptx.oracles.checker import ptxas_model, ptxas_rules

PROBES = sorted(p.stem for p in (Path(__file__).parent / "data" / "checker").glob("*.ptx"))
RULES = (*ptxas_rules.STEP_RULES, ptxas_rules.TRACK, *ptxas_model.FUNCTION_RULES, *ptxas_model.REPORT_RULES,
         *ptxas_model.MODULE_RULES)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_every_glob_of_a_rule_finds_a_probe(rule):
    assert rule.probes, f"{rule.name} names no probe"
    for glob in rule.probes:
        assert fnmatch.filter(PROBES, glob), f"{rule.name}: {glob} matches no file in tests/data/checker"


def test_every_probe_belongs_to_a_rule():
    orphans = [p for p in PROBES if not any(fnmatch.fnmatch(p, g) for r in RULES for g in r.probes)]
    assert len(PROBES) > 400 and not orphans, orphans


def _subclasses(base) -> set:
    out = set()
    for c in base.__subclasses__():
        out |= {c} | _subclasses(c)
    return out


def test_every_rule_class_is_in_an_order():
    """A rule class left out of the order tuples would never run."""
    classes = {c for c in _subclasses(ptxas_rules.Rule) if not getattr(c, "__abstractmethods__", None)}
    assert classes == {type(r) for r in RULES}
    assert len({type(r) for r in ptxas_rules.STEP_RULES}) == len(ptxas_rules.STEP_RULES)
