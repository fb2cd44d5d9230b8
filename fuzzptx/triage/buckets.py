"""Group findings from result records (JSONL) by root cause; keep the smallest repro per bucket.

A result record is one JSON object per judged program, as ``fuzzptx run`` and
``fuzzptx campaign`` append them:

    {"id": "...", "family": "...", "instructions": 12,
     "findings": [{"signature": "...", "message": "...", "repro": "path.ptx" | null,
                   "cause": {"judges": ..., "rule": ..., "pattern": ..., "instruction_class": ...},
                   "also": [{"signature": "...", "message": "..."}]}],
     "repro": "relative/path.ptx" | null, "ptx": "<text, when no repro file>"}

(a finding's own ``repro``, where a campaign wrote one per cause, wins over the record's).  A
bucket is a root cause (``fuzzptx.judges.finding.RootCause``); its type mixes and the
signatures of its evidence are its attributes.  Records written before findings carried a
``cause`` are read through ``finding.program_causes``: their findings of one cause become one.

Shards of one campaign are merged by passing all their files; a bad line is
reported with its file and line and skipped, never losing the rest.
"""
from __future__ import annotations

import argparse
import html
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from fuzzptx.engine import matrix
from fuzzptx.errors import FuzzptxError
from fuzzptx.helptext import Formatter
from fuzzptx.inputs import InputError, output_file, read_jsonl, read_text
from fuzzptx.judges.finding import RootCause, program_causes
from fuzzptx.oracles import toolchains
from fuzzptx.oracles.hardware import gpu_available
from fuzzptx.program import Program
from fuzzptx.reduce import instruction_count
from fuzzptx.triage.known import classify, context_of, load_known


@dataclass
class Bucket:
    """One root cause: how many programs gave it, its smallest repro (``smallest``: that record,
    its ``repro`` and ``signature`` the finding's), the signatures of its evidence and its
    families (type mixes) with their counts."""

    cause: RootCause
    count: int = 0
    smallest: dict | None = None
    sources: set[str] = field(default_factory=set)
    evidence: Counter = field(default_factory=Counter)
    families: Counter = field(default_factory=Counter)

    @property
    def key(self) -> str:
        return str(self.cause)

    @property
    def signature(self) -> str:
        """The smallest repro's signature: what its file keeps (a release matrix asks for it)."""
        return (self.smallest or {}).get("signature") or next(iter(self.evidence), self.key)

    @property
    def kind(self) -> str:
        return self.cause.kind

    def repro_size(self) -> int | None:
        """Instructions in the smallest repro *file* as it is now (a campaign shrinks it after the
        record was written), else the record's count of the program as found."""
        rec = self.smallest or {}
        path = rec.get("repro")
        if path and Path(path).is_file():
            try:
                return instruction_count(Program.from_file(path))
            except (FuzzptxError, RecursionError, ValueError):  # a repro that no longer parses: the record's
                pass
        return rec.get("instructions")

    def size_text(self) -> str:
        """The repro's size, and the program's as found where shrinking changed it: ``12 (found: 845)``."""
        now, found = self.repro_size(), (self.smallest or {}).get("instructions")
        if now is None:
            return "?"
        return f"{now} (found: {found})" if found is not None and found != now else str(now)

    def add(self, record: dict, source: str, signatures: list[str]) -> None:
        self.count += 1
        self.sources.add(source)
        self.evidence.update(signatures)
        self.families.update({s.rsplit("|", 1)[-1] for s in signatures})
        if self.smallest is None or record.get("instructions", 1 << 30) < self.smallest.get("instructions", 1 << 30):
            self.smallest = record


@dataclass
class Triage:
    buckets: dict[RootCause, Bucket] = field(default_factory=dict)
    programs: int = 0
    problems: list[str] = field(default_factory=list)
    first_seen: dict[RootCause, int] = field(default_factory=dict)  # cause -> programs read when first found

    def add_record(self, record: dict, source: str) -> None:
        self.programs += 1
        for cause, fs in record_causes(record):
            # a program with several causes has one repro per cause (campaign records)
            lead = fs[0]
            # its own repro file (none: this program was not the cause's smallest when found);
            # records of findings without their own repro field have one per program
            rec = {**record, "signature": lead["signature"], **({"repro": lead["repro"]} if "repro" in lead else {})}
            sigs = [s for f in fs for s in [f["signature"]] + [a.get("signature", "") for a in f.get("also", ())]]
            self.buckets.setdefault(cause, Bucket(cause)).add(rec, source, sigs)
            self.first_seen.setdefault(cause, self.programs)

    def ordered(self) -> list[Bucket]:
        return sorted(self.buckets.values(), key=lambda b: (-b.count, b.key))


def record_causes(record: dict) -> list[tuple[RootCause, list[dict]]]:
    """(root cause, the record's findings of it) for one record: each finding's recorded ``cause``,
    else what ``finding.program_causes`` makes of the record's signatures (older records)."""
    fs = list(record.get("findings", ()))
    given = [RootCause.from_dict(f["cause"]) if isinstance(f.get("cause"), dict) else None for f in fs]
    causes = program_causes([f["signature"] for f in fs], given)
    out: dict[RootCause, list[dict]] = {}
    for f, c in zip(fs, causes):
        out.setdefault(c, []).append(f)
    return list(out.items())


_FIELD_TYPES: dict[str, tuple[type, ...]] = {  # what each record field read here must be, when present
    "instructions": (int, type(None)), "family": (str,), "verdicts": (dict,), "coverage": (dict,), "forms": (list,),
    "repro": (str, type(None)), "t": (int, float), "id": (str, int), "findings": (list,),
}


_JSON_TYPE = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object",
              type(None): "null"}


def record_problem(rec: dict) -> str | None:
    """Why a JSON object is not a result record triage and report can read (None: it is one).
    Checked before any of it is counted, so a foreign line is skipped whole, never half-added."""
    if "findings" not in rec and "verdicts" not in rec:
        return "a JSON object without findings or verdicts"
    for key, types in _FIELD_TYPES.items():
        if key in rec and (not isinstance(rec[key], types) or isinstance(rec[key], bool)):
            return f"field {key!r} is a JSON {_JSON_TYPE.get(type(rec[key]), '?')}, not what a result record holds"
    for fi in rec.get("findings", ()):
        if not isinstance(fi, dict) or not isinstance(fi.get("signature"), str):
            return "finding without signature"
        if not isinstance(fi.get("repro"), (str, type(None))):
            return "finding whose repro is not a path"
        if "cause" in fi and not (isinstance(fi["cause"], dict) and all(isinstance(fi["cause"].get(k, ""), str)
                                                                         for k in ("judges", "rule", "pattern",
                                                                                   "instruction_class"))):
            return "finding whose cause is not a root cause (judges, rule, pattern, instruction_class)"
        if not (isinstance(fi.get("also", []), list)
                and all(isinstance(a, dict) and isinstance(a.get("signature"), str) for a in fi.get("also", []))):
            return "finding whose 'also' is not a list of findings with signatures"
    if not all(isinstance(x, str) for x in rec.get("forms", ())):
        return "field 'forms' holds something other than form names"
    swz = rec.get("coverage", {}).get("swizzle")
    if swz is not None and not (isinstance(swz, list) and all(isinstance(x, (str, int)) for x in swz)):
        return "field 'coverage.swizzle' is not a list of swizzle modes"
    return None


def read_records(paths: Iterable[str | Path], triage: Triage | None = None,
                 each: Callable[[dict], None] | None = None) -> Triage:
    """Add every record of ``paths`` (files, or directories searched for ``*.jsonl``) to a
    ``Triage``, one line at a time (a nightly record holds millions); ``each`` also sees every good
    record, in the same pass."""
    t = triage or Triage()
    for path in paths:
        p = Path(path)
        if p.is_dir():
            files = sorted(p.rglob("*.jsonl"))
            if not files:
                raise InputError("no *.jsonl campaign records under this directory", str(p))
        else:
            files = [p]
        for f in files:
            try:
                first = True
                for lineno, rec in read_jsonl(f, on_bad="skip", problems=t.problems):
                    why = record_problem(rec)
                    if why is not None and first:  # a file of other JSON objects is not a record at all
                        raise InputError(f"not a campaign record: {why}", str(f), lineno)
                    first = False
                    if why is not None:
                        t.problems.append(f"{f}:{lineno}: skipped: {why}")
                        continue
                    rec.setdefault("_source", str(f))
                    t.add_record(rec, str(f))
                    if each is not None:
                        each(rec)
            except InputError as exc:
                if f is p:  # a file named on the command line must be a record
                    raise
                t.problems.append(f"{exc}: skipped")  # one foreign file found in a directory
    return t


def _repro_ref(rec: dict) -> str:
    if rec.get("repro"):
        return str(rec["repro"])
    return f"(inline in {rec.get('_source', '?')}, id {rec.get('id', '?')})"


def releases_of(t: Triage, spec: str) -> dict[str, dict[str, bool | None]]:
    """Root cause (its ``str``) -> release -> whether its smallest repro keeps its signature with that release as
    the ptxas (None: not applicable to that release; the GPU runs that release's cubin where there is
    a GPU); buckets without a repro file, or whose signature needs a GPU this machine lacks, are left
    out, and so are disagreements between two releases, which their signature names."""
    out: dict[str, dict[str, bool | None]] = {}
    gpu = gpu_available() is None
    for b in t.ordered():
        path = (b.smallest or {}).get("repro")
        if not path or not Path(path).is_file() or ("hardware" in b.signature and not gpu) or "!=ptxas@" in b.signature:
            continue  # a pair of releases is named by the signature itself
        try:
            program = Program.from_file(path)
            res = matrix.bisect(program, read_text(path, what="repro file"), b.signature, spec)
        except FuzzptxError as exc:
            print(f"fuzzptx triage: {path}: no release matrix: {exc}", file=sys.stderr)
            continue
        out[b.key] = res["holds"]
    return out


def holds_text(row: dict[str, bool | None] | None) -> str:
    if row is None:
        return ""
    return ", ".join(f"{r} {'yes' if h else 'n/a' if h is None else 'no'}" for r, h in row.items())


def markdown(t: Triage, known: tuple = (), context: dict | None = None,
             releases: dict[str, dict[str, bool | None]] | None = None) -> str:
    """The buckets (one per root cause) as a Markdown table, new bugs first, each with what it means
    (its class), its evidence and type mixes; with a ledger (``fuzzptx.triage.known``) the headline
    says how many distinct bugs are new (``context``: what the ledger's conditions test, e.g. the
    campaign's numerics); with ``releases``, which ptxas releases keep it."""
    hit, unmatched = classify(t.buckets, known, context)
    new = sum(1 for c in t.buckets if c not in hit)
    lines = [
        "# fuzzptx triage", "",
        f"**distinct bugs: {len(t.buckets)} (new: {new})**" if known else f"**distinct bugs: {len(t.buckets)}**", "",
        f"{t.programs} programs, {sum(b.count for b in t.buckets.values())} findings in {len(t.buckets)} buckets "
        "(one per root cause)" + (f", {new} new, {len(hit)} known." if known else "."), "",
    ]
    head = ["findings", "root cause", "class"] + (["status"] if known else []) + ["evidence", "smallest repro", "instructions"] \
        + (["releases (the signature holds)"] if releases is not None else [])
    lines += ["| " + " | ".join(head) + " |", "| " + " | ".join("---:" if h in ("findings", "instructions") else "---"
                                                                for h in head) + " |"]
    for b in sorted(t.ordered(), key=lambda b: b.cause in hit):
        rec = b.smallest or {}
        cells = [str(b.count), f"`{b.key}`: {b.cause.words()}", b.kind]
        if known:
            cells.append("**new**" if b.cause not in hit else f"known: {hit[b.cause].id} ({hit[b.cause].where()})")
        cells += [evidence_text(b), _repro_ref(rec), b.size_text()]
        if releases is not None:
            cells.append(holds_text(releases.get(b.key)) or "(not judged here)")
        lines.append("| " + " | ".join(cells) + " |")
    if unmatched:
        lines += ["", "## Known bugs that matched no bucket (fixed, stale, or their judges did not run)", ""]
        lines += [f"- `{k.pattern_text()}` ({k.where()}): {k.title}" for k in unmatched]
    if t.problems:
        lines += ["", "## Input problems", ""] + [f"- {p}" for p in t.problems]
    return "\n".join(lines) + "\n"


def evidence_text(b: Bucket, most: int = 3) -> str:
    """The bucket's commonest signatures and how many type mixes it spans: ``sass:inflight-write|wgmma.f32.e4m3 (4), ...; 3 families``."""
    top = ", ".join(f"`{s}` ({n})" for s, n in b.evidence.most_common(most))
    more = len(b.evidence) - most
    return top + (f", {more} more" if more > 0 else "") + f"; {len(b.families)} famil{'y' if len(b.families) == 1 else 'ies'}"


def html_page(t: Triage) -> str:
    rows = "".join(
        f"<tr><td>{b.count}</td><td><code>{html.escape(b.key)}</code> {html.escape(b.cause.words())}</td>"
        f"<td>{_link(b.smallest or {})}</td><td>{html.escape(b.size_text())}</td></tr>"
        for b in t.ordered()
    )
    probs = "".join(f"<li>{html.escape(p)}</li>" for p in t.problems)
    return (
        "<!doctype html><meta charset=utf-8><title>fuzzptx triage</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:4px 10px;border-bottom:1px solid #ddd}</style>"
        f"<h1>fuzzptx triage</h1><p>{t.programs} programs, {len(t.buckets)} buckets.</p>"
        f"<table><tr><th>findings</th><th>root cause</th><th>smallest repro</th><th>instructions</th></tr>{rows}</table>"
        + (f"<h2>Input problems</h2><ul>{probs}</ul>" if probs else "")
    )


def _link(rec: dict) -> str:
    if rec.get("repro"):
        r = html.escape(str(rec["repro"]))
        return f'<a href="{r}">{r}</a>'
    return html.escape(_repro_ref(rec))


def main_triage(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fuzzptx triage", formatter_class=Formatter,
                                 description="Group findings by root cause; smallest repro per bucket (its instructions: "
                                             "the repro file's, and the program's as found where shrinking changed it).")
    ap.add_argument("results", nargs="+", help="JSONL files or directories holding them (shards are merged)")
    ap.add_argument("--md", metavar="FILE", help="also write the Markdown summary to FILE (stdout has it unless --json)")
    ap.add_argument("--html", metavar="FILE", help="write the HTML summary here")
    ap.add_argument("--json", action="store_true", help="print the buckets as JSON instead of Markdown")
    ap.add_argument("--known", metavar="FILE", help="known-bug ledger (TOML, reports/known_bugs.toml; "
                    "fuzzptx.triage.known): say which buckets are new bugs")
    ap.add_argument("--ptxas", metavar="SPEC", help="judge each bucket's smallest repro with every ptxas release of SPEC "
                    "and say which keep its signature (fetched into the user cache on demand)")
    args = ap.parse_args(argv)
    for path, what in ((args.md, "Markdown summary"), (args.html, "HTML summary")):
        if path:
            output_file(path, what=what)
    if args.ptxas:
        toolchains.parse_spec(args.ptxas)  # a bad SPEC is one line before any record is read
    if len({Path(x).resolve() for x in args.results}) != len(args.results):
        raise InputError("a results path is given twice: its programs would count twice")
    known = load_known(args.known) if args.known else ()
    context = context_of(args.results)
    t = read_records(args.results)
    for p in t.problems:
        print(f"fuzzptx triage: {p}", file=sys.stderr)
    releases = releases_of(t, args.ptxas) if args.ptxas else None
    if args.md:
        Path(args.md).write_text(markdown(t, known, context, releases))
    if args.html:
        Path(args.html).write_text(html_page(t))
    if args.json:
        hit, _ = classify(t.buckets, known, context)
        print(json.dumps([{"cause": b.key, **b.cause.as_dict(), "signature": b.signature, "count": b.count,
                           "evidence": dict(b.evidence.most_common()), "families": dict(b.families.most_common()),
                           "smallest": _repro_ref(b.smallest or {}),
                           "instructions": b.repro_size(),
                           "instructions_found": (b.smallest or {}).get("instructions"),
                           "class": b.kind,
                           "known": hit[b.cause].reason if b.cause in hit else None,
                           **({"releases": releases.get(b.key)} if releases is not None else {})}
                          for b in t.ordered()], indent=1))
    else:
        print(markdown(t, known, context, releases), end="")
    return 0
