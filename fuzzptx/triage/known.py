"""Known findings: a baseline of bucket signatures already understood, so that a nightly
dashboard fails on what is new and still shows what is known.

A known-findings file is plain text, one entry per line, read like a lit test's comments:

    # why the line is here, for a person
    checker!=ptxas|missed:C7512|*    # ptxas's register allocator gives up: unmodelled (reports/findings/README.md)

The pattern is an ``fnmatch`` glob over the whole signature (``*`` any run of characters,
``?`` one, ``[...]`` a class); the text after `` # `` is the reason, and it is required: a
baseline entry nobody can explain is a finding hidden, not a finding known.  Conditions may
follow the pattern as ``key=value`` (only ``numerics=spec|hardware`` so far): the entry then
holds only for results whose campaign ``stats.json`` says so -- the fp8 accumulator
difference is known in spec numerics, and would be news in hardware numerics.  ``fuzzptx report
--known FILE`` and ``fuzzptx triage --known FILE`` mark matching buckets as known (JUnit:
skipped, not failed) and list the entries that matched nothing, which are fixed or stale.
"""
from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path

from fuzzptx.errors import FuzzptxError
from fuzzptx.inputs import read_text

CONDITIONS = {"numerics": ("spec", "hardware")}  # what an entry may be conditioned on


@dataclass(frozen=True)
class KnownFinding:
    """One baseline entry: a signature glob, why it is known, and where it was written."""

    pattern: str
    reason: str
    file: str
    line: int
    when: tuple[tuple[str, str], ...] = ()  # (key, value) the results' context must have

    def applies(self, context: dict | None) -> bool:
        """The entry's conditions hold for results of this context (none: always)."""
        ctx = context or {}
        return all(ctx.get(k) == v for k, v in self.when)

    def matches(self, signature: str, context: dict | None = None) -> bool:
        return self.applies(context) and fnmatch.fnmatchcase(signature, self.pattern)

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def parse_known(text: str, file: str = "<known>") -> tuple[KnownFinding, ...]:
    """Entries of a known-findings file; a malformed line is an error naming file and line."""
    out: list[KnownFinding] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pattern, sep, reason = line.partition(" # ")
        pattern, reason = pattern.strip(), reason.strip()
        if not sep or not reason:
            raise FuzzptxError("a known finding needs a reason: 'PATTERN  # why it is known'", file, lineno)
        pattern, *conds = pattern.split()
        when = []
        for c in conds:
            key, eq, value = c.partition("=")
            if not eq or key not in CONDITIONS or value not in CONDITIONS[key]:
                raise FuzzptxError(f"condition {c!r}: expected one of "
                                   + ", ".join(f"{k}={'|'.join(v)}" for k, v in CONDITIONS.items()), file, lineno)
            when.append((key, value))
        if pattern.count("|") < 1:
            raise FuzzptxError(f"pattern {pattern!r} is not a signature glob ('kind|detail|family', '*' allowed)",
                               file, lineno)
        out.append(KnownFinding(pattern, reason, file, lineno, tuple(when)))
    return tuple(out)


def load_known(path: str | Path) -> tuple[KnownFinding, ...]:
    return parse_known(read_text(path, what="known-findings file", allow_empty=True), str(path))


def context_from(stats: dict) -> dict:
    """What conditions can test, from one campaign's ``stats.json`` contents."""
    return {k: stats[k] for k in CONDITIONS if isinstance(stats, dict) and isinstance(stats.get(k), str)}


def context_of(paths) -> dict:
    """What conditions can test, from the ``stats.json`` of each campaign directory given (or
    above a results file); a key whose directories disagree, or that none records, is left out."""
    seen: dict[str, set] = {}
    for path in paths:
        p = Path(path)
        for d in ([p] if p.is_dir() else [p.parent]):
            f = d / "stats.json"
            try:
                ctx = context_from(json.loads(f.read_text())) if f.exists() else {}
            except (OSError, ValueError):
                ctx = {}
            for key in CONDITIONS:
                seen.setdefault(key, set()).add(ctx.get(key))
    return {k: next(iter(v)) for k, v in seen.items() if len(v) == 1 and None not in v}


def classify(signatures, known: tuple[KnownFinding, ...],
             context: dict | None = None) -> tuple[dict[str, KnownFinding], list[KnownFinding]]:
    """(signature -> the first entry that matches it, for the known ones; the entries whose
    conditions hold here but that match no signature)."""
    hit: dict[str, KnownFinding] = {}
    used: set[KnownFinding] = set()
    for sig in signatures:
        k = next((k for k in known if k.matches(sig, context)), None)
        if k is not None:
            hit[sig] = k
            used.add(k)
    return hit, [k for k in known if k.applies(context) and k not in used]
