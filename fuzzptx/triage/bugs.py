"""Bugs, not findings: a run's buckets (one per root cause) matched to the known-bug ledger, new
ones first, with the headline a user asks for -- ``distinct bugs: N (new: k)`` -- the bundle of
each new one written into the run's directory, and the bug yield (distinct root causes per
CPU-hour and per GPU-hour, new and known).

``fuzzptx run``, ``fuzzptx campaign``, ``fuzzptx report`` and ``fuzzptx triage`` all read these
rows: one table, many readers.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from fuzzptx.errors import FuzzptxError
from fuzzptx.judges.finding import MODEL, RootCause

from .bundle import bundle
from .known import KnownBug, classify

BUNDLES = "bundles"  # the run directory's folder of bundles of new bugs


@dataclass
class BugRow:
    """One distinct bug of a run: its root cause, how many findings (programs) gave it, the ledger
    entry it matches (None: new), its repro, and when it was first found."""

    cause: RootCause
    count: int
    known: KnownBug | None = None
    repro: str | None = None
    first_seen: tuple[int, float] | None = None  # (programs judged, seconds) when first found
    evidence: dict[str, int] = field(default_factory=dict)  # signature -> findings
    bundle: str | None = None

    @property
    def new(self) -> bool:
        return self.known is None

    def as_dict(self) -> dict[str, Any]:
        return {"cause": str(self.cause), **self.cause.as_dict(), "class": self.cause.kind,
                "words": self.cause.words(), "count": self.count, "new": self.new,
                "known": self.known.id if self.known else None,
                "known_entry": self.known.where() if self.known else None, "repro": self.repro,
                "first_seen_programs": self.first_seen[0] if self.first_seen else None,
                "first_seen_seconds": self.first_seen[1] if self.first_seen else None,
                **({"evidence": self.evidence} if self.evidence else {}),
                **({"bundle": self.bundle} if self.bundle else {})}


def rows(buckets: Mapping[Any, int], known: tuple[KnownBug, ...] = (), context: dict | None = None, *,
         repros: Mapping[str, str] | None = None, first_seen: Mapping[str, Any] | None = None,
         evidence: Mapping[str, Mapping[str, int]] | None = None) -> list[BugRow]:
    """The distinct bugs of ``buckets`` (root cause or its ``str`` -> findings), new first, then
    by findings."""
    causes = {(c if isinstance(c, RootCause) else RootCause.parse(c)): n for c, n in buckets.items()}
    hit, _ = classify(list(causes), known, context)
    out = []
    for c, n in causes.items():
        fs = (first_seen or {}).get(str(c))
        out.append(BugRow(c, n, hit.get(c), (repros or {}).get(str(c)), tuple(fs) if fs else None,
                          dict((evidence or {}).get(str(c), {}))))
    return sorted(out, key=lambda r: (not r.new, -r.count, str(r.cause)))


def headline(bugs: Iterable[BugRow]) -> str:
    bs = list(bugs)
    return f"distinct bugs: {len(bs)} (new: {sum(r.new for r in bs)})"


def bug_yield(bugs: Iterable[BugRow], cpu_hours: float | None, gpu_hours: float | None) -> dict[str, Any]:
    """Distinct root causes per CPU-hour and per GPU-hour, all, new and known (None: no such hours)."""
    bs = list(bugs)
    n = {"distinct": len(bs), "new": sum(r.new for r in bs), "known": sum(not r.new for r in bs)}
    out: dict[str, Any] = {**n, "cpu_hours": cpu_hours, "gpu_hours": gpu_hours}
    for unit, hours in (("cpu_hour", cpu_hours), ("gpu_hour", gpu_hours)):
        for k, v in n.items():
            out[f"{k}_per_{unit}"] = round(v / hours, 2) if hours else None
    return out


def saturation(first_seen: Mapping[str, Any], bugs: Iterable[BugRow]) -> list[tuple[int, int, int]]:
    """(programs, distinct bugs so far, new bugs so far) at each program that found a bug first."""
    new = {str(r.cause) for r in bugs if r.new}
    pts, d, k = [], 0, 0
    for key, (programs, _s) in sorted(first_seen.items(), key=lambda kv: kv[1][0]):
        d += 1
        k += key in new
        pts.append((int(programs), d, k))
    return pts


def slug(cause: RootCause) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", str(cause)).strip("_")[:80] or "bug"


def write_bundles(bugs: Iterable[BugRow], out_dir: Path, *, releases: str | None = None) -> dict[str, str]:
    """The bundle (``fuzzptx bundle``) of each new bug's repro, into ``out_dir/bundles/<cause>``:
    compiler bug candidates and hardware deviations, for the team that owns them (a gap in our own
    models is ours to fix: its repro is enough); a bundle that cannot be made is named on stderr,
    never the end of the run."""
    made: dict[str, str] = {}
    for r in bugs:
        if not r.new or r.cause.kind == MODEL or not r.repro or not Path(r.repro).is_file():
            continue
        dest = Path(out_dir) / BUNDLES / slug(r.cause)
        try:
            bundle(r.repro, dest, releases=releases)
        except (FuzzptxError, OSError) as exc:
            print(f"fuzzptx: no bundle for {r.cause}: {exc}", file=sys.stderr)
            continue
        r.bundle = made[str(r.cause)] = str(dest)
    return made


def summarise(stats: dict, known: tuple[KnownBug, ...], context: dict | None, out_dir: Path | None = None, *,
              bundles: bool = True) -> dict[str, Any]:
    """What a run's or campaign's ``stats`` (``fuzzptx.engine.campaign``) say of bugs: the headline,
    the rows (new first), the bug yield and the saturation curve; with ``out_dir``, the bundles
    of the new bugs written into it."""
    bs = rows(stats.get("buckets", {}), known, context, repros=stats.get("repros"),
              first_seen=stats.get("first_seen"))
    if bundles and out_dir is not None:
        write_bundles(bs, out_dir)
    return {"headline": headline(bs), "bugs": [r.as_dict() for r in bs],
            "yield": bug_yield(bs, stats.get("cpu_hours"), stats.get("gpu_hours") or None),
            "saturation": saturation(stats.get("first_seen") or {}, bs),
            "ledger": sorted({k.file for k in known}), "avoided": stats.get("avoid", [])}


def format_bugs(summary: dict, limit: int = 20) -> list[str]:
    """The headline and one line per bug, new first: ``NEW  3  sass gmma-pipeline: ... -> repro``."""
    lines = [f"  {summary['headline']}"]
    for b in summary["bugs"][:limit]:
        tag = "NEW  " if b["new"] else "known"
        where = f"  -> {b.get('bundle') or b['repro']}" if b.get("bundle") or b.get("repro") else ""
        lines.append(f"    {tag} {b['count']:5d}  {b['words']}" + (f"  [{b['known']}]" if b["known"] else "") + where)
    if len(summary["bugs"]) > limit:
        lines.append(f"    ... {len(summary['bugs']) - limit} more (summary.json)")
    return lines
