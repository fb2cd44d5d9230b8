"""Steering generation toward SASS that is rare or new: the policy, fed by the engine.

The engine (the driver) judges programs and learns the SASS forms ptxas emitted for each
(``oracles/sass/vocabulary.py``); it folds them into a ``CoverageMap`` (form -> programs that
reached it) and offers each program to a ``Kept`` corpus, whose policy decides what stays.  A block
drawn with a ``Steering`` value (the map and the corpus, frozen) draws a share of its programs as
mutants of kept ones: the kept program's choice sequence (the decisions the strategies made),
a few of them changed or its tail drawn anew, replayed through the same strategies -- so a
mutant is as legal as any program the strategies draw, and keeps most of what made its parent
reach rare SASS.  This module imports nothing of the engine (YARPGen keeps its generator apart
from its driver the same way).

Two policies (``MODES``):

- ``corpus``: a program that reached a form no earlier program reached, or one reached by fewer
  than ``RARE`` programs, is kept (AFL's queue of inputs that found new coverage); parents are
  drawn uniformly among the kept, and the oldest leaves when the corpus is full.
- ``target``: Hypothesis ``target()``'s hill-climbing on a score: a program's score is the sum
  over its forms of 1/(1 + programs that reached the form); the ``LIMIT`` best-scoring programs
  are kept, and parents are drawn in proportion to their score.

A program's ``recipe`` says how to draw it again: ``k:<key>`` (drawn fresh from a key, as
``draw_direct`` does) or ``m<op>:<key>(<parent recipe>)`` (a mutant of the parent drawn under
``key``).  Blocks are rebuilt from their recipes in any process (``choices_of`` caches parents).
"""
from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from .direct import draw_choices

MODES = ("none", "corpus", "target")
LIMIT = 48  # programs a corpus keeps
RARE = 3  # a form fewer programs reached is rare
SHARE = 0.5  # programs of a steered block drawn as mutants of kept ones
_CHOICE_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 256


@dataclass(frozen=True)
class CoverageMap:
    """SASS form -> how many programs reached it, and which program first did (a frozen value)."""

    counts: Mapping[str, int] = field(default_factory=dict)
    first: Mapping[str, str] = field(default_factory=dict)
    programs: int = 0

    def __hash__(self) -> int:
        return hash((self.programs, len(self.counts)))

    def new(self, forms: Iterable[str]) -> frozenset[str]:
        return frozenset(f for f in forms if f not in self.counts)

    def rare(self, forms: Iterable[str]) -> frozenset[str]:
        return frozenset(f for f in forms if self.counts.get(f, 0) < RARE)

    def score(self, forms: Iterable[str]) -> float:
        """Rare forms weigh most: sum of 1/(1 + programs that reached each)."""
        return sum(1.0 / (1 + self.counts.get(f, 0)) for f in forms)

    def add(self, forms: Iterable[str], who: str) -> "CoverageMap":
        counts, first = dict(self.counts), dict(self.first)
        for f in forms:
            counts[f] = counts.get(f, 0) + 1
            first.setdefault(f, who)
        return CoverageMap(counts, first, self.programs + 1)


@dataclass(frozen=True)
class Parent:
    recipe: str
    legal: bool  # drawn by the legal strategy (else by the illegal one: a labelled mutant)
    score: float
    forms: int  # how many forms it reached


@dataclass(frozen=True)
class Kept:
    """The corpus of interesting programs under one policy (``MODES``)."""

    mode: str
    parents: tuple[Parent, ...] = ()

    def offer(self, cov: CoverageMap, forms: frozenset[str], recipe: str | None, legal: bool) -> "Kept":
        """The corpus after a judged program is offered, ``cov`` being the map before it counted."""
        if recipe is None or not forms or self.mode == "none":
            return self
        score = cov.score(forms)
        parent = Parent(recipe, legal, score, len(forms))
        if self.mode == "corpus":
            if not cov.rare(forms):
                return self
            return Kept(self.mode, (self.parents + (parent,))[-LIMIT:])
        if len(self.parents) < LIMIT:
            return Kept(self.mode, self.parents + (parent,))
        worst = min(range(len(self.parents)), key=lambda i: self.parents[i].score)
        if score <= self.parents[worst].score:
            return self
        return Kept(self.mode, self.parents[:worst] + self.parents[worst + 1:] + (parent,))

    def pick(self, rng: random.Random, legal: bool) -> Parent | None:
        pool = [p for p in self.parents if p.legal == legal]
        if not pool:
            return None
        if self.mode == "target":
            return rng.choices(pool, weights=[max(p.score, 1e-6) for p in pool])[0]
        return rng.choice(pool)


@dataclass(frozen=True)
class Steering:
    """What a steered block is drawn with: the corpus (the map is the engine's; only the kept
    programs travel) and the share of mutants."""

    kept: Kept
    share: float = SHARE


def fresh_recipe(key: str) -> str:
    return f"k:{key}"


def choices_of(strategy, recipe: str) -> tuple:
    """The choice sequence and nodes of the program ``recipe`` names (cached in the process)."""
    hit = _CHOICE_CACHE.get((id(strategy), recipe))
    if hit is not None:
        _CHOICE_CACHE.move_to_end((id(strategy), recipe))
        return hit
    _, choices, nodes = _draw_recipe(strategy, recipe)
    _CHOICE_CACHE[(id(strategy), recipe)] = (choices, nodes)
    while len(_CHOICE_CACHE) > _CACHE_SIZE:
        _CHOICE_CACHE.popitem(last=False)
    return choices, nodes


def _split(recipe: str) -> tuple[str, str, str]:
    """``m<op>:<key>(<parent>)`` -> (op, key, parent)."""
    head, _, rest = recipe.partition("(")
    op, _, key = head[1:].partition(":")
    return op, key, rest[:-1]


def _draw_recipe(strategy, recipe: str):
    if recipe.startswith("k:"):
        return draw_choices(strategy, recipe[2:])
    op, key, parent = _split(recipe)
    choices, nodes = choices_of(strategy, parent)
    return draw_choices(strategy, key, prefix=mutate(choices, nodes, op, random.Random(key)))


def draw_recipe(strategy, recipe: str):
    """The program ``recipe`` names, drawn through ``strategy``."""
    return _draw_recipe(strategy, recipe)[0]


OPS = ("tail", "point", "tailpoint")


def mutate(choices: tuple, nodes: tuple, op: str, rng: random.Random) -> tuple:
    """A prefix made from a kept program's choices: ``tail`` keeps a random head and lets the rest
    be drawn anew (the strategies draw the code around the tensor cores last, so a late cut
    redraws it and keeps the pipeline); ``point`` redraws one to three choices within their own
    bounds and keeps the rest; ``tailpoint`` both."""
    out = list(choices)
    if op in ("point", "tailpoint"):
        free = [i for i, n in enumerate(nodes) if not n.was_forced and n.type in ("integer", "boolean")]
        for i in rng.sample(free, min(len(free), rng.randint(1, 3))):
            n = nodes[i]
            if n.type == "boolean":
                out[i] = not out[i]
            else:
                lo, hi = n.constraints.get("min_value"), n.constraints.get("max_value")
                lo = out[i] - 16 if lo is None else lo
                hi = out[i] + 16 if hi is None else hi
                out[i] = rng.randint(lo, hi)
    if op in ("tail", "tailpoint") and out:
        cut = int(len(out) * (1 - rng.random() ** 2))  # cuts near the end are the likelier
        out = out[:cut]
    return tuple(out)


def steered_recipe(steering: Steering, key: str, legal: bool) -> str:
    """The recipe of program ``key`` of a steered block: a mutant of a kept program for a
    ``share`` of keys (where the corpus holds one of its kind), else a fresh draw."""
    rng = random.Random(f"{key}:steer")
    if rng.random() < steering.share:
        parent = steering.kept.pick(rng, legal)
        if parent is not None:
            return f"m{rng.choice(OPS)}:{key}({parent.recipe})"
    return fresh_recipe(key)


__all__ = ["MODES", "CoverageMap", "Kept", "Parent", "Steering", "choices_of", "draw_recipe", "fresh_recipe",
           "mutate", "steered_recipe"]
