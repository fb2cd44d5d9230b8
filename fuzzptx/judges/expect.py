"""What a repro file's EXPECT lines say against what the judges say of it today (``fuzzptx
replay``): the judges a replay runs, and whether each recorded verdict still holds."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from fuzzptx.program import Program

from . import differ, metamorphic
from .base import Verdicts
from .builtin import DEFAULT_JUDGES

LABELS = ("rule", "spec", "mutation", "note")  # EXPECT keys that label the program rather than quote a judge


@dataclass(frozen=True)
class Expectation:
    judge: str
    expected: str
    actual: str | None
    status: str  # holds | changed | not run | label


def _codes(text: str) -> set[str]:
    """The exact codes of a verdict line (the model's "may:C7512" codes are not predictions)."""
    return set(re.findall(r"C\d{4}(?:@\d+)?", re.sub(r"may:\S+", "", text)))


def same_verdict(judge: str, expected: str, actual: str) -> bool:
    """Whether a judge's verdict today still says what the repro recorded."""
    e, a = " ".join(expected.split()), " ".join(actual.split())
    if e == a:
        return True
    if judge in ("ptxas", "ptxas-model"):
        return e.split(" ")[0] == a.split(" ")[0] and _codes(e) == _codes(a)
    if judge == "reference":
        return e.split(" ")[0].rstrip(":") == a.split(" ")[0].rstrip(":")
    if judge == "hardware":
        return e.split(" ")[0] == a.split(" ")[0]
    if judge == "checker":
        return _checker_label_holds(e, a)
    return False


def _checker_label_holds(label: str, actual: str) -> bool:
    """A generator's checker label against the checker's verdict today.

    The strategies label a program ``legal``, ``illegal: <rule>`` or ``undefined: <rule>``
    (``strategies/mutations.py``); the checker answers ``clean`` or ``findings r1,r2``.  The
    model's ``ptxas.*`` findings are its forecast of ptxas's messages, not a verdict on the
    program, so a legal program holds beside them; a labelled rule holds when the checker names
    it or a rule under it (``isa.imm`` covers ``isa.imm.scale-d``)."""
    rules = actual.removeprefix("findings ").split(",") if actual.startswith("findings ") else []
    rules = [r for r in rules if r and not r.startswith("ptxas.")]
    if label == "legal":
        return actual == "clean" or (actual.startswith("findings ") and not rules)
    kind, _, rule = label.partition(":")
    rule = rule.strip()
    if kind in ("illegal", "undefined") and rule:
        return any(r == rule or r.startswith(rule + ".") for r in rules)
    return False


def replay_judges(program: Program, *, hardware: bool = True, extra: Sequence[str] = ()) -> list[str]:
    """The judges a replay runs: the CPU judges, the GPU (unless ``--no-hardware``), the
    metamorphic pairs for a metamorphic signature, any plugin judge the signature names, and
    ``extra`` (``--judges``)."""
    names = list(DEFAULT_JUDGES["replay"])
    sig = program.signature or ""
    if metamorphic.is_metamorphic(sig):
        names.append("metamorphic")
    names += [j for j in differ.judges_for(sig) if j not in differ.BUILTIN] if sig else []
    names += list(extra)
    return list(dict.fromkeys(names))


def check_expectations(program: Program, v: Verdicts) -> list[Expectation]:
    summary = v.summary()
    out: list[Expectation] = []
    spec_rules = None
    if v.checker is not None:
        spec_rules = {f.rule for f in v.checker if getattr(f, "layer", "") == "spec"}
    for judge, expected in program.expect:
        if judge == "spec" and spec_rules is not None:
            undefined = expected.startswith("undefined")
            holds = bool(spec_rules) == undefined
            out.append(Expectation(judge, expected, "undefined" if spec_rules else "defined", "holds" if holds else "changed"))
        elif judge in LABELS or judge == "spec":
            out.append(Expectation(judge, expected, None, "label"))
        elif judge in summary:
            actual = summary[judge]
            out.append(Expectation(judge, expected, actual, "holds" if same_verdict(judge, expected, actual) else "changed"))
        else:
            out.append(Expectation(judge, expected, None, "not run"))
    return out
