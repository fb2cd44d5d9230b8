"""Draws that depend on the seed alone, not on which modules happen to be imported.

Hypothesis (6.1xx) mixes "local constants" into its draws: integers and strings it finds in
the source of every non-library module loaded so far (ours included, as an editable install).
So a derandomized draw, or a ``ConjectureData`` with a seeded ``random``, gives different
programs in a process that imported more of fuzzptx (a pytest-xdist worker after other test
files, a campaign pool process after the judges): a fixed-seed sample stops being fixed.
``reproducible()`` hides those constants (and the cache built from them) while drawing; the
global constants Hypothesis ships stay, so the distribution is otherwise unchanged.
"""
from __future__ import annotations

import contextlib
from typing import Iterator


@contextlib.contextmanager
def reproducible() -> Iterator[None]:
    """Within this block, Hypothesis's draws ignore constants from the loaded modules."""
    try:
        from hypothesis.internal.conjecture import providers as P
    except ImportError:  # pragma: no cover - a Hypothesis without the module: nothing to hide
        yield
        return
    get = getattr(P, "_get_local_constants", None)
    cache = getattr(P, "CONSTANTS_CACHE", None)
    if get is None or cache is None or not hasattr(P, "Constants"):  # pragma: no cover - another layout
        yield
        return
    nothing = P.Constants()  # every pool empty
    P._get_local_constants = lambda: nothing
    P.CONSTANTS_CACHE = type(cache)(1024)  # entries built from the hidden constants stay out too
    try:
        yield
    finally:
        P._get_local_constants = get
        P.CONSTANTS_CACHE = cache
