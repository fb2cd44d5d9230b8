"""Judges: what each says of a program, and how their disagreements become findings.

A judge is a plugin: ``Judge`` (or ``OutputJudge`` for one that computes output buffers) is the
interface; the built-in judges register through ``register`` like any other, and installed
packages add theirs through the entry-point group ``fuzzptx.judges``.  ``docs/judges.md`` shows
how to write one.
"""
from .base import (ACCEPTED, BATCH, COMPILE, CUBIN, DEVICE, EARLY, GPU, IR, METAMORPHIC, PROGRAM, STAGES,
                   CheckerVerdict, Context, Done, Judge, JudgeFault, NotApplicable, OutputJudge, OutputVerdict,
                   ReferenceVerdict, SkippableVerdict, Verdicts)
from .finding import Finding
from .registry import ENTRY_POINT_GROUP, UnknownJudge, get, names, parse, register, register_family, resolve, unregister
from . import builtin  # noqa: E402,F401 - registers the built-in judges (after the registry exists)

__all__ = ["ACCEPTED", "BATCH", "COMPILE", "CUBIN", "DEVICE", "EARLY", "GPU", "IR", "METAMORPHIC", "PROGRAM",
           "STAGES", "Done", "CheckerVerdict", "Context", "ENTRY_POINT_GROUP", "Finding", "Judge", "JudgeFault", "NotApplicable", "OutputJudge",
           "OutputVerdict", "ReferenceVerdict", "SkippableVerdict", "UnknownJudge", "Verdicts", "get", "names",
           "parse", "register", "register_family", "resolve", "unregister"]
