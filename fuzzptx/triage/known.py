"""The known-bug ledger: bugs already understood, matched to findings by root cause, so that a run
says *distinct bugs: N (new: k)* and a nightly dashboard fails on what is new.

The ledger is a TOML file (``reports/known_bugs.toml``), one ``[[bug]]`` table per bug:

    [[bug]]
    id = "ptxas-O3-repeated-wgmma"              # stable name, [a-z0-9-]
    title = "ptxas -O3 drops a wgmma issued again right after an identical one"
    kind = "compiler"                           # compiler | hardware | model
    cause = { judges = "sass", rule = "gmma-pipeline", pattern = "gmma-missing", instruction_class = "wgmma" }
    when = { numerics = "spec" }                # optional: holds only for results of that context
    first_seen = "13.0.88"                      # release (or device) first and last seen with it
    last_seen = "13.5.37"
    status = "not yet reported to NVIDIA"       # public status
    repro = "reports/findings/....ptx"          # the minimal repro
    bundle = "reports/bundles/ptxas-O3-repeated-wgmma"   # fuzzptx bundle of it
    written_up = "reports/findings/README.md"
    avoid = ["repeated-wgmma"]                  # generation options that turn its shapes down
    rediscover = { seed = 4, programs = 384, judges = "checker,ptxas,sass" }   # or { repro = true }
    also = [{ judges = "hardware:O3!=*", rule = "mismatch", pattern = "repeated-wgmma" }]   # optional

``cause`` fields are ``fnmatch`` globs over the ``finding.RootCause`` fields (a missing field is
``*``).  A bug without a written-up reason is a finding hidden, not a bug known: ``title`` and
``written_up`` are required.  ``avoid`` names ``fuzzptx.strategies.AVOIDABLE`` options: campaigns
turn those shapes down unless ``--rediscover``; ``rediscover`` is the budget in which a run with
``--rediscover`` finds the bug again (``tests/test_known_bugs.py`` proves it), or ``repro = true``
where judging the repro alone is the budget (a crash a batched module hides).  ``also`` lists other
evidence of the same defect, each a cause like ``cause``: one bug that the SASS verifier names in
one build and a compile pair names when another build has it (the repeated-wgmma collapse at -O3
and at -O1) stays one bug, not two.

The glob list this replaced (``known_findings.txt``, ``SIGNATURE-GLOB  # why``) is refused with a
message that says so: its entries named evidence, not causes.
"""
from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from fuzzptx.errors import FuzzptxError
from fuzzptx.inputs import read_text
from fuzzptx.judges.finding import COMPILER, HARDWARE, MODEL, RootCause
from fuzzptx.strategies.avoid import AVOIDABLE

CONDITIONS = {"numerics": ("spec", "hardware")}  # what an entry may be conditioned on
KINDS = {"compiler": COMPILER, "hardware": HARDWARE, "model": MODEL}
_CAUSE_FIELDS = ("judges", "rule", "pattern", "instruction_class")
_FIELDS = {"id", "title", "kind", "cause", "also", "when", "first_seen", "last_seen", "status", "repro", "bundle",
           "written_up", "avoid", "rediscover"}
_REQUIRED = ("id", "title", "kind", "cause", "written_up")
#: the checkout's ledger, else the copy an installed package carries (setup.py puts it there)
_CHECKOUT_LEDGER = Path(__file__).resolve().parents[2] / "reports" / "known_bugs.toml"
DEFAULT_LEDGER = _CHECKOUT_LEDGER if _CHECKOUT_LEDGER.is_file() else Path(__file__).resolve().with_name("known_bugs.toml")


@dataclass(frozen=True)
class KnownBug:
    """One ledger entry: a root-cause pattern, what it is, where it was seen and written up."""

    id: str
    title: str
    kind: str
    cause: tuple[tuple[str, str], ...]  # (RootCause field, glob)
    file: str
    line: int
    when: tuple[tuple[str, str], ...] = ()
    first_seen: str = ""
    last_seen: str = ""
    status: str = ""
    repro: str = ""
    bundle: str = ""
    written_up: str = ""
    avoid: tuple[str, ...] = ()
    rediscover: tuple[tuple[str, Any], ...] = field(default=())
    also: tuple[tuple[tuple[str, str], ...], ...] = ()  # other causes of the same defect

    @property
    def reason(self) -> str:
        """What the bug is, for a person (a report's 'known' column)."""
        return f"{self.id}: {self.title}"

    def applies(self, context: dict | None) -> bool:
        """The entry's conditions hold for results of this context (none: always)."""
        ctx = context or {}
        return all(ctx.get(k) == v for k, v in self.when)

    def matches(self, cause: RootCause | str, context: dict | None = None) -> bool:
        """``cause``: a root cause, or its ``str`` (a bucket key), or a signature (its cause)."""
        c = cause if isinstance(cause, RootCause) else RootCause.parse(cause)
        return self.applies(context) and any(all(fnmatch.fnmatchcase(getattr(c, k), g) for k, g in globs)
                                             for globs in (self.cause,) + self.also)

    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def pattern_text(self) -> str:
        return "|".join(dict(self.cause).get(k, "*") for k in _CAUSE_FIELDS)

    def budget(self) -> dict[str, Any]:
        return dict(self.rediscover)


def _entry_lines(text: str) -> list[int]:
    """The line of each ``[[bug]]`` header, in order (TOML readers give no positions)."""
    return [i for i, ln in enumerate(text.splitlines(), 1) if re.match(r"\s*\[\[\s*bug\s*\]\]", ln)]


_OLD_FORMAT = re.compile(r"^\s*[^\s#\[]\S*\|\S*(\s+\w+=\w+)*\s+#")  # ``SIGNATURE-GLOB [cond=v]  # why``


def parse_known(text: str, file: str = "<known>") -> tuple[KnownBug, ...]:
    """The entries of a ledger; a malformed one is an error naming the file and line."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        old = next((n for n, raw in enumerate(text.splitlines(), 1) if _OLD_FORMAT.match(raw)), None)
        if old is not None:
            raise FuzzptxError("a glob list of known finding signatures (the old known_findings.txt format): "
                               "known bugs now live in a TOML ledger matched by root cause, "
                               "reports/known_bugs.toml (format: fuzzptx/triage/known.py)", file, old) from None
        m = re.search(r"at line (\d+)", str(exc))
        raise FuzzptxError(f"not a known-bug ledger (TOML): {exc}", file, int(m.group(1)) if m else None) from None
    extra = sorted(set(doc) - {"bug"})
    if extra:
        raise FuzzptxError(f"unexpected table(s) {', '.join(extra)}: a ledger holds [[bug]] entries", file, 1)
    bugs = doc.get("bug", [])
    if not isinstance(bugs, list):
        raise FuzzptxError("'bug' must be an array of tables ([[bug]])", file, 1)
    lines = _entry_lines(text)
    out: list[KnownBug] = []
    seen: set[str] = set()
    for n, b in enumerate(bugs):
        line = lines[n] if n < len(lines) else 1
        out.append(_entry(b, file, line))
        if out[-1].id in seen:
            raise FuzzptxError(f"bug id {out[-1].id!r} appears twice", file, line)
        seen.add(out[-1].id)
    return tuple(out)


def _entry(b: dict, file: str, line: int) -> KnownBug:
    def bad(why: str) -> FuzzptxError:
        return FuzzptxError(f"bug {b.get('id', '?')!r}: {why}", file, line)

    if not isinstance(b, dict):
        raise FuzzptxError("a [[bug]] entry must be a table", file, line)
    unknown = sorted(set(b) - _FIELDS)
    if unknown:
        raise bad(f"unknown field(s) {', '.join(unknown)} (have {', '.join(sorted(_FIELDS))})")
    missing = [k for k in _REQUIRED if not b.get(k)]
    if missing:
        raise bad(f"needs {', '.join(missing)}: a known bug nobody can explain is a finding hidden")
    for k in ("id", "title", "kind", "first_seen", "last_seen", "status", "repro", "bundle", "written_up"):
        if k in b and not isinstance(b[k], str):
            raise bad(f"{k}: a string")
    for k in ("cause", "when", "rediscover"):
        if k in b and not isinstance(b[k], dict):
            raise bad(f"{k}: a table ({{ key = value, ... }})")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", b["id"]):
        raise bad("id: lower-case letters, digits and '-'")
    if b["kind"] not in KINDS:
        raise bad(f"kind {b['kind']!r}: expected one of {', '.join(KINDS)}")
    cause = b["cause"]
    also = b.get("also", [])
    if not isinstance(also, list):
        raise bad("also: a list of cause tables")
    for c in [cause] + also:
        if not isinstance(c, dict) or not c or set(c) - set(_CAUSE_FIELDS) \
                or not all(isinstance(v, str) for v in c.values()):
            raise bad(f"cause: a table of glob strings over {', '.join(_CAUSE_FIELDS)}")
    when = b.get("when", {})
    for k, v in when.items():
        if k not in CONDITIONS or v not in CONDITIONS[k]:
            raise bad(f"when {k}={v!r}: expected one of "
                      + ", ".join(f"{c}={'|'.join(vs)}" for c, vs in CONDITIONS.items()))
    avoid = b.get("avoid", [])
    if not isinstance(avoid, list) or any(not isinstance(a, str) or a not in AVOIDABLE for a in avoid):
        raise bad(f"avoid {avoid!r}: expected a list of {', '.join(sorted(AVOIDABLE))}")
    red = b.get("rediscover", {})
    if red and not (red.get("repro") is True or ({"seed", "programs"} <= set(red) <= {"seed", "programs", "judges"}
                                                 and all(isinstance(red[k], int) and not isinstance(red[k], bool)
                                                         and red[k] >= 0 for k in ("seed", "programs"))
                                                 and isinstance(red.get("judges", ""), str))):
        raise bad("rediscover: { seed = S, programs = N[, judges = \"...\"] } or { repro = true }")
    return KnownBug(str(b["id"]), str(b["title"]), str(b["kind"]),
                    tuple((k, cause[k]) for k in _CAUSE_FIELDS if k in cause), file, line,
                    tuple(sorted(when.items())), str(b.get("first_seen", "")), str(b.get("last_seen", "")),
                    str(b.get("status", "")), str(b.get("repro", "")), str(b.get("bundle", "")),
                    str(b["written_up"]), tuple(avoid), tuple(sorted(red.items())),
                    tuple(tuple((k, c[k]) for k in _CAUSE_FIELDS if k in c) for c in also))


def load_known(path: str | Path) -> tuple[KnownBug, ...]:
    return parse_known(read_text(path, what="known-bug ledger", allow_empty=True), str(path))


def ledger(path: str | None) -> tuple[KnownBug, ...]:
    """The ledger a run or campaign matches its root causes to: ``path``, else ``DEFAULT_LEDGER``
    (the checkout's ``reports/known_bugs.toml``, or the installed package's copy); ``none``: no ledger."""
    if path is not None:
        return () if path == "none" else load_known(path)
    return load_known(DEFAULT_LEDGER) if DEFAULT_LEDGER.is_file() else ()


def default_numerics(judges: Iterable[str]) -> str | None:
    """The numerics a run's reference uses unless told: the model of the GPU that judges.  The
    hardware judge runs only on sm_90a, whose tensor cores the bit-exact H100 model describes
    (docs/numerics.md), so its known numerics (the fp8 e8m13 accumulator) do not flood a run;
    without a GPU, the PTX ISA's bounds (None: spec).  Spec bounds stay a choice (--numerics spec)."""
    return "hardware" if "hardware" in tuple(judges) else None


def avoided(known: Iterable[KnownBug], context: dict | None = None) -> frozenset[str]:
    """The generation options that turn down the shapes of the ledger's bugs (``--rediscover``: none)."""
    return frozenset(a for k in known if k.applies(context) for a in k.avoid)


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


def classify(causes, known: tuple[KnownBug, ...],
             context: dict | None = None) -> tuple[dict[Any, KnownBug], list[KnownBug]]:
    """(cause -> the first entry that matches it, for the known ones; the entries whose conditions
    hold here but that match no cause).  ``causes``: root causes, bucket keys or signatures."""
    hit: dict[Any, KnownBug] = {}
    used: set[str] = set()
    for c in causes:
        k = next((k for k in known if k.matches(c, context)), None)
        if k is not None:
            hit[c] = k
            used.add(k.id)
    return hit, [k for k in known if k.applies(context) and k.id not in used]


def headline(causes: Iterable[Any], hit: dict) -> str:
    """``distinct bugs: N (new: k)``."""
    cs = list(causes)
    return f"distinct bugs: {len(cs)} (new: {sum(1 for c in cs if c not in hit)})"
