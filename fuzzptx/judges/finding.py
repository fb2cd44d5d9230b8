"""A finding: one disagreement between judges, named so that runs and shards bucket it together,
and classed by what it means to the user."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

COMPILER = "compiler bug candidate"
HARDWARE = "hardware or spec deviation"
MODEL = "model gap (ours)"
CLASSES = (COMPILER, HARDWARE, MODEL)

#: What a finding means, by the start of its signature (``<pair>|<what>|<family>``); the first
#: rule that matches wins.  One table: the run's summary, the repro policy (model gaps are not
#: shrunk unless asked) and the reports read it.
CLASS_RULES: tuple[tuple[str, str], ...] = (
    (r"checker!=ptxas\|", MODEL),  # the checker's model of ptxas against ptxas
    (r"expect!=", MODEL),  # a mutation's label against a judge: the label is ours
    (r"(reference|checker|differ):(error|crash)", MODEL),  # our judges could not judge a legal program
    (r"mmasim!=", MODEL),  # one numerics model against another
    (r"reference:[\w-]+!=[\w-]+\|", MODEL),  # metamorphic pairs on the reference: it disagrees with itself
    (r"[\w-]+:pipelined!=planted\|", MODEL),  # the planted self-test of the metamorphic judge
    (r"ptxas(@[\w.+/-]+)?:", COMPILER),  # a ptxas release timed out or crashed
    (r"ptxas(@[\w.+/-]+)?!=ptxas(@[\w.+/-]+)?\|", COMPILER),  # two ptxas releases disagree on one program
    (r"sass:", COMPILER),  # a hazard in the SASS ptxas emitted for a defined program
    (r"reference!=hardware\|mismatch-repeated-wgmma", COMPILER),  # ptxas -O3's collapse of repeated wgmmas
    (r"reference!=hardware\|mismatch-after-sass-hazard", COMPILER),  # the GPU ran SASS with a hazard in it
    (r"hardware:fault-after-sass-hazard", COMPILER),  # (differ.after_sass_hazards)
    (r"hardware:(O3!=O0|pipelined!=serialised|plain!=deadbranch)\|", COMPILER),  # forms that must agree on the GPU
    (r"hardware:nondeterministic\|", HARDWARE),
    (r"reference!=hardware\|", HARDWARE),  # the GPU against what the PTX ISA allows
    (r"hardware:fault", HARDWARE),  # the GPU faulted on a program the spec defines
    (r"[\w.-]+!=reference\|", HARDWARE),  # another simulator or GPU (a plugin) against the PTX ISA
    (r"[\w.-]+:fault\|", MODEL),  # a plugin judge that raised
)


@lru_cache(maxsize=4096)
def classify(signature: str) -> str:
    """The class of a finding signature (``CLASSES``); an unknown pair is a model gap until a rule
    says otherwise."""
    for pattern, cls in CLASS_RULES:
        if re.match(pattern, signature):
            return cls
    return MODEL


@dataclass(frozen=True)
class Finding:
    """A disagreement with a stable ``signature`` ``<pair>|<what>|<family>`` (``checker!=ptxas|C7519|wgmma``)
    so that findings of many runs and shards bucket together, plus its evidence."""

    signature: str
    message: str
    evidence: tuple[tuple[str, Any], ...] = ()

    @property
    def pair(self) -> str:
        return self.signature.split("|", 1)[0]

    @property
    def kind(self) -> str:
        """What it means to the user: ``COMPILER``, ``HARDWARE`` or ``MODEL`` (``classify``)."""
        return classify(self.signature)
