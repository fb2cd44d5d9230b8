"""Drawing programs straight from the strategies, without Hypothesis's test engine: the only
module of fuzzptx that touches Hypothesis internals (``tests/test_direct_draw.py`` pins what it
relies on; ``pyproject.toml`` pins the Hypothesis range it is known to work with).

A campaign draws millions of programs and wants program ``i`` of seed ``s`` to be the same in
every process and run.  Hypothesis's engine (``@given``) is five times slower per example and
reorders its examples (database, shrinking, simplest-first), so ``draw`` runs one strategy over a
``ConjectureData`` fed by a ``random.Random`` seeded with a string key.

Hypothesis (6.1xx) also mixes "local constants" into its draws: integers and strings it finds in
the source of every non-library module loaded so far (ours included, as an editable install).
So a seeded draw gives different programs in a process that imported more of fuzzptx (a
pytest-xdist worker after other test files, a campaign pool process after the judges): a
fixed-seed sample stops being fixed.  ``reproducible()`` hides those constants (and the cache
built from them) while drawing; the global constants Hypothesis ships stay, so the distribution
is otherwise unchanged.
"""
from __future__ import annotations

import contextlib
import random
from typing import Iterator, TypeVar

from hypothesis.control import BuildContext
from hypothesis.errors import HypothesisException, StopTest, UnsatisfiedAssumption
from hypothesis.internal.conjecture import providers as _providers
from hypothesis.internal.conjecture.data import ConjectureData

T = TypeVar("T")


class DrawFailed(Exception):
    """The strategy gave no value for this key (a filter that rejects everything, or an error
    inside the strategy)."""


@contextlib.contextmanager
def reproducible() -> Iterator[None]:
    """Within this block, Hypothesis's draws ignore constants from the loaded modules."""
    get = getattr(_providers, "_get_local_constants", None)
    cache = getattr(_providers, "CONSTANTS_CACHE", None)
    if get is None or cache is None or not hasattr(_providers, "Constants"):  # pragma: no cover - another layout
        yield
        return
    nothing = _providers.Constants()  # every pool empty
    _providers._get_local_constants = lambda: nothing
    _providers.CONSTANTS_CACHE = type(cache)(1024)  # entries built from the hidden constants stay out too
    try:
        yield
    finally:
        _providers._get_local_constants = get
        _providers.CONSTANTS_CACHE = cache


def draw(strategy, key: str, attempts: int = 50) -> T:
    """One value of ``strategy``, a function of ``key`` alone: attempt ``a`` draws from
    ``random.Random(f"{key}:{a}")``; a draw the strategy rejects (``assume``, a filter) is drawn
    again with the next attempt.  Call it inside ``reproducible()``."""
    for attempt in range(attempts):
        data = ConjectureData(random=random.Random(f"{key}:{attempt}"))
        try:
            with BuildContext(data, is_final=False, wrapped_test=None):
                return data.draw(strategy)
        except (StopTest, UnsatisfiedAssumption):
            continue
        except HypothesisException as exc:  # e.g. a filter that rejects everything
            raise DrawFailed(f"the strategies failed: {exc}") from exc
    raise DrawFailed(f"no valid draw in {attempts} attempts")


def draw_choices(strategy, key: str, prefix: tuple = (), attempts: int = 50) -> tuple[T, tuple, tuple]:
    """``draw`` that also gives the draw's choice sequence and its nodes (type, value, constraints):
    the form in which a kept program is mutated further (``strategies.steer``).  ``prefix``: choices
    replayed first (one that no longer fits where it lands is replaced by the simplest value, as
    Hypothesis's own mutator does), the rest drawn from ``random.Random(f"{key}:{attempt}")``."""
    for attempt in range(attempts):
        data = ConjectureData(random=random.Random(f"{key}:{attempt}"), prefix=prefix or None)
        try:
            with BuildContext(data, is_final=False, wrapped_test=None):
                value = data.draw(strategy)
            return value, data.choices, data.nodes
        except (StopTest, UnsatisfiedAssumption):
            prefix = ()  # a prefix the strategy turns down: a fresh draw of the same key instead
            continue
        except HypothesisException as exc:
            raise DrawFailed(f"the strategies failed: {exc}") from exc
    raise DrawFailed(f"no valid draw in {attempts} attempts")
