"""The PTX-level reducer: a driver (``fuzzptx.reduce.driver``) running reduction passes
(``fuzzptx.reduce.passes``, in the order written there) over IR edits (``fuzzptx.reduce.edit``).

The public API, for the engine, the judges' callers, triage and the ``fuzzptx shrink`` command;
the predicate that judges candidates for a signature is the engine's (``fuzzptx.engine.predicate``)."""
from __future__ import annotations

from fuzzptx.reduce.driver import (OutOfBudget, PassStats, Predicate, ShrinkResult, cleanup, inline_small_data,
                                   instruction_count, shrink)
from fuzzptx.reduce.edit import dead_code, delete, removable, statements
from fuzzptx.reduce.passes import PASSES, PRE, Pass

__all__ = ["OutOfBudget", "PASSES", "PRE", "Pass", "PassStats", "Predicate", "ShrinkResult", "cleanup", "dead_code", "delete",
           "inline_small_data", "instruction_count", "removable", "shrink", "statements"]
