"""A fixed sample of a long parametrisation runs by default; the rest is marked ``slow``
(``tests/conftest.py`` runs it with ``FUZZPTX_FULL=1`` or the nightly profile).

The sample is every ``every``-th case of the sorted list, so it is the same on every machine and
spreads over the whole list (probes of every family, not the first family alone).
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Callable, TypeVar

import pytest

T = TypeVar("T")


def full_run(config: pytest.Config) -> bool:
    """Whether this session runs the ``slow`` tests too: FUZZPTX_FULL=1 or the nightly profile."""
    return os.environ.get("FUZZPTX_FULL") == "1" or config.getoption("--fuzzptx-profile", default="ci") == "nightly"


def in_sample(index: int, every: int) -> bool:
    return index % every == 0


def sampled(cases: Sequence[T], every: int, ids: Callable[[T], str] | None = None) -> list:
    """``cases`` as pytest params: every ``every``-th one plain, the others marked ``slow``."""
    return [pytest.param(c, id=ids(c) if ids else None, marks=() if in_sample(i, every) else (pytest.mark.slow,))
            for i, c in enumerate(cases)]


def per_group(cases: Iterable[T], key: Callable[[T], object], every: int) -> list[T]:
    """Every ``every``-th case of each group (by ``key``, in the given order, from its first):
    every group keeps at least one case, so a sample of a long list still holds each kind."""
    seen: dict[object, int] = {}
    out = []
    for c in cases:
        k = key(c)
        seen[k] = seen.get(k, -1) + 1
        if in_sample(seen[k], every):
            out.append(c)
    return out


def sample_of(cases: Iterable[T], every: int, full: bool) -> list[T]:
    """The cases of the default sample (all of them in a ``full_run``): what a
    shared fixture prepares."""
    cases = list(cases)
    return cases if full else [c for i, c in enumerate(cases) if in_sample(i, every)]
