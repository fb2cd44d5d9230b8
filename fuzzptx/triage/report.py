"""``fuzzptx report DIR``: a report a person reads, plus summary.json and JUnit XML for dashboards.

Reads every ``*.jsonl`` result record under DIR (a run, a campaign, or merged
shards) and an optional ``stats.json`` written by the campaign (stage rates,
GPU idle share).  ``report.html`` is self-contained: plots are inline SVG made
with matplotlib, each finding bucket links its smallest repro.
"""
from __future__ import annotations

import argparse
import html
import io
import json
import re
import sys
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence
from xml.sax.saxutils import escape, quoteattr

from fuzzptx.helptext import Formatter
from fuzzptx.inputs import InputError, make_dir, read_text
from fuzzptx.triage import bugs as bug_rows
from fuzzptx.triage.known import KnownBug, classify, context_from, load_known
from fuzzptx.judges.finding import CLASSES
from fuzzptx.oracles import toolchains
from fuzzptx.oracles.sass.real import against_real, real_vocabulary
from fuzzptx.triage.buckets import Triage, evidence_text, holds_text, read_records, releases_of


FAULT_ROWS = 500  # GPU-fault rows the HTML lists; the rest are counted


@dataclass
class Digest:
    """What the report needs of the records, gathered as they stream past: a nightly record holds
    millions of programs (~0.8 KB of JSON each), and keeping them all as dicts took ~4 KB a program."""

    times: array = field(default_factory=lambda: array("d"))
    families: Counter = field(default_factory=Counter)
    cells: Counter = field(default_factory=Counter)  # (type mix + A source, N, swizzle) -> programs
    faults: list[dict] = field(default_factory=list)  # the first FAULT_ROWS planted/faulting programs
    more_faults: int = 0
    programs: int = 0
    forms: set = field(default_factory=set)  # catalogue forms reached so far
    coverage: list = field(default_factory=list)  # (programs, forms reached) where the count grew
    # programs with tensor-core instructions, those whose reference run executed none (coverage:none),
    # and the instructions executed of those they have (the records' ``tensor`` field)
    tensor: Counter = field(default_factory=Counter)
    sass: Counter = field(default_factory=Counter)  # SASS form -> programs that reached it (records' sass_forms)
    sass_curve: list = field(default_factory=list)  # (programs, record time, SASS forms reached) where it grew

    def add(self, rec: dict) -> None:
        n = len(self.forms)
        sass = rec.get("sass_forms")
        if isinstance(sass, list) and sass:
            k = len(self.sass)
            self.sass.update(f for f in sass if isinstance(f, str))
            if len(self.sass) > k:
                t = rec.get("t")
                self.sass_curve.append((self.programs + 1, t if isinstance(t, (int, float)) else None, len(self.sass)))
        self.forms.update(rec.get("forms", ()))
        self.programs += 1
        if len(self.forms) > n:
            self.coverage.append((self.programs, len(self.forms)))
        ten = rec.get("tensor")
        if isinstance(ten, dict):
            self.tensor["programs"] += 1
            self.tensor["coverage:none"] += "coverage:none" in (rec.get("notes") or ())
            self.tensor["executed"] += int(ten.get("executed", 0) or 0)
            self.tensor["of"] += int(ten.get("of", 0) or 0)
        t = rec.get("t")
        if isinstance(t, (int, float)):
            self.times.append(t)
        self.families[rec.get("family", "?")] += 1
        _add_cells(self.cells, rec)
        hw = rec.get("verdicts", {}).get("hardware", "not run")
        if rec.get("planted") or str(hw).startswith("fault"):
            if len(self.faults) < FAULT_ROWS:
                self.faults.append({"id": rec.get("id", "?"), "planted": rec.get("planted") or "", "hardware": hw,
                                    "signatures": [f["signature"] for f in rec.get("findings", ())]})
            else:
                self.more_faults += 1


def load_records(directory: Path | Sequence[Path]) -> tuple[Triage, Digest]:
    """Every ``*.jsonl`` record under ``directory`` (or under each of several shard directories),
    read once, line by line."""
    digest = Digest()
    dirs = [directory] if isinstance(directory, Path) else list(directory)
    t = read_records([f for d in dirs for f in sorted(d.rglob("*.jsonl"))], Triage(), digest.add)
    return t, digest


_WGMMA_FORM = re.compile(r"wgmma\.mma_async(\.sp)?\.sync\.aligned\.m64n(\d+)k\d+(?:\.satfinite)?\.(\w+)\.(\w+)\.(\w+)(?:\.\w+)*(?:\|a=(\w+))?")


def _add_cells(cells: Counter, rec: dict) -> None:
    """(type mix + A source, N, swizzle) -> programs, from a record's ``forms`` and ``coverage``."""
    swz = rec.get("coverage", {}).get("swizzle") or ["none"]
    for key in rec.get("forms", ()):
        m = _WGMMA_FORM.match(key)
        if not m:
            continue
        sp, n, d, a, b, src = m.groups()
        row = f"{'sp ' if sp else ''}{d}.{a}.{b} A={src}"
        for s in swz:
            cells[(row, int(n), s)] += 1


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def plot_coverage(cells: Counter) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    if not cells:
        return "<p>No wgmma forms in these records.</p>"
    rows = sorted({r for r, _, _ in cells})
    ns = sorted({n for _, n, _ in cells})
    swizzles = sorted({s for _, _, s in cells})
    fig, axes = plt.subplots(1, len(swizzles), figsize=(max(6, 0.18 * len(ns) * len(swizzles) + 3), 0.22 * len(rows) + 1.5), squeeze=False)
    for ax, s in zip(axes[0], swizzles):
        grid = np.zeros((len(rows), len(ns)))
        for (r, n, sw), c in cells.items():
            if sw == s:
                grid[rows.index(r), ns.index(n)] = c
        ax.imshow(np.log1p(grid), aspect="auto", cmap="viridis")
        ax.set_title(f"swizzle {s}", fontsize=8)
        ax.set_xticks(range(len(ns)), [str(n) for n in ns], fontsize=5, rotation=90)
        ax.set_yticks(range(len(rows)), rows if ax is axes[0][0] else [""] * len(rows), fontsize=5)
        ax.set_xlabel("N", fontsize=7)
    return _svg(fig)


def plot_throughput(times: Sequence[float]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if len(times) < 2:
        return "<p>Not enough timed records for a throughput plot.</p>"
    t0 = min(times)
    span = max(max(times) - t0, 1e-9)
    width = max(span / 40, 1.0)
    bins: Counter = Counter(int((t - t0) // width) for t in times)
    xs = sorted(bins)
    fig, ax = plt.subplots(figsize=(6, 2.4))
    ax.plot([x * width for x in xs], [bins[x] / width for x in xs], marker=".")
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("programs/s")
    ax.grid(alpha=0.3)
    return _svg(fig)


def plot_buckets(t: Triage) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    buckets = t.ordered()[:25]
    if not buckets:
        return "<p>No findings.</p>"
    fig, ax = plt.subplots(figsize=(6, 0.25 * len(buckets) + 0.8))
    ax.barh(range(len(buckets)), [b.count for b in buckets])
    ax.set_yticks(range(len(buckets)), [b.key for b in buckets], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("findings")
    return _svg(fig)


def plot_saturation(t: Triage, digest: Digest, hit: dict) -> str:
    """New distinct bugs (and all distinct bugs) against programs judged -- the saturation curve --
    with the catalogue forms reached beside it (the coverage the programs bought)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not t.first_seen:
        return "<p>No findings: no saturation curve.</p>"
    pts = sorted(t.first_seen.items(), key=lambda kv: kv[1])
    xs, alls, news = [0], [0], [0]
    for c, n in pts:
        xs.append(n)
        alls.append(alls[-1] + 1)
        news.append(news[-1] + (c not in hit))
    xs.append(t.programs)
    alls.append(alls[-1])
    news.append(news[-1])
    fig, axes = plt.subplots(1, 2, figsize=(9, 2.6))
    axes[0].step(xs, alls, where="post", label="distinct bugs")
    axes[0].step(xs, news, where="post", label="new distinct bugs")
    axes[0].set_xlabel("programs judged")
    axes[0].set_ylabel("root causes")
    axes[0].legend(fontsize=7)
    axes[0].grid(alpha=0.3)
    cov = [(0, 0)] + digest.coverage + [(t.programs, len(digest.forms))]
    axes[1].plot([a for a, _ in cov], [b for _, b in cov])
    axes[1].set_xlabel("programs judged")
    axes[1].set_ylabel("catalogue forms reached")
    axes[1].grid(alpha=0.3)
    return _svg(fig)


def plot_sass(digest: Digest, programs: int, real: dict | None) -> str:
    """SASS forms reached against programs judged and against time (the records' ``sass_forms``),
    with the real kernels' forms (``fuzzptx.oracles.sass.real``) as the line to reach."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not digest.sass_curve:
        return "<p>No SASS coverage: the records hold no SASS forms (the sass judge did not run).</p>"
    pts = [(0, 0)] + [(n, f) for n, _, f in digest.sass_curve] + [(programs, len(digest.sass))]
    timed = [(t, f) for _, t, f in digest.sass_curve if t is not None]
    fig, axes = plt.subplots(1, 2, figsize=(9, 2.6))
    axes[0].step([a for a, _ in pts], [b for _, b in pts], where="post", label="SASS forms reached")
    if real:
        axes[0].axhline(real["real_forms"], color="grey", ls="--", lw=0.8, label="real kernels' forms")
        axes[0].legend(fontsize=7)
    axes[0].set_xlabel("programs judged")
    axes[0].set_ylabel("SASS forms")
    axes[0].grid(alpha=0.3)
    if timed:
        t0 = min(digest.times) if digest.times else timed[0][0]
        axes[1].step([a - t0 for a, _ in timed], [b for _, b in timed], where="post")
    axes[1].set_xlabel("seconds")
    axes[1].set_ylabel("SASS forms")
    axes[1].grid(alpha=0.3)
    return _svg(fig)


def _sass_missing(real: dict | None) -> str:
    if not real:
        return ""
    items = "".join(f"<li><code>{html.escape(f)}</code></li>" for f in real["missing"])
    return (f"<p>{real['reached']} of the real kernels' {real['real_forms']} SASS forms reached "
            f"({real['fraction']:.1%}).</p>"
            + (f"<p>The real kernels' forms never reached (most common first):</p><ul>{items}</ul>" if items else ""))


def summary(t: Triage, digest: Digest, stats: dict, known: tuple[KnownBug, ...] = (),
            releases: dict | None = None) -> dict:
    times = digest.times
    # the campaign's own figures where it wrote them (its whole wall, start-up included), else the
    # span of the record's times: one figure, the same in every place the report shows it
    wall = stats.get("wall_seconds") or ((max(times) - min(times)) if len(times) > 1 else None)
    pps = stats.get("programs_per_second")
    if pps is None:
        pps = round(t.programs / wall, 2) if wall else None
    hit, unmatched = classify(t.buckets, known, context_from(stats))
    buckets = [{"cause": b.key, **b.cause.as_dict(), "words": b.cause.words(), "signature": b.signature,
                "count": b.count, "evidence": dict(b.evidence.most_common()),
                "families": dict(b.families.most_common()),
                "smallest_repro": (b.smallest or {}).get("repro"),
                "instructions": b.repro_size(), "instructions_found": (b.smallest or {}).get("instructions"),
                "new": b.cause not in hit,
                "known": hit[b.cause].reason if b.cause in hit else None,
                "known_id": hit[b.cause].id if b.cause in hit else None,
                "known_entry": hit[b.cause].where() if b.cause in hit else None,
                "first_seen_programs": t.first_seen.get(b.cause),
                "class": b.kind,
                **({"releases": releases.get(b.key)} if releases is not None else {})}
               for b in sorted(t.ordered(), key=lambda b: b.cause in hit)]  # new bugs first
    rows = bug_rows.rows({b.cause: b.count for b in t.buckets.values()}, known, context_from(stats))
    return {
        "headline": bug_rows.headline(rows),
        "distinct_bugs": len(rows),
        "new_bugs": sum(r.new for r in rows),
        "bug_yield": bug_rows.bug_yield(rows, stats.get("cpu_hours"), stats.get("gpu_hours") or None),
        "saturation": [(n, str(c)) for c, n in sorted(t.first_seen.items(), key=lambda kv: kv[1])],
        "programs": t.programs,
        "findings": sum(b.count for b in t.buckets.values()),
        "new_findings": sum(b["count"] for b in buckets if b["known"] is None),
        "new_buckets": sum(1 for b in buckets if b["known"] is None),
        "known_buckets": len(hit),
        "buckets": buckets,
        "known_entries_unmatched": [f"{k.where()}: {k.id} ({k.pattern_text()})" for k in unmatched] if known else [],
        "families": dict(digest.families.most_common()),
        "tensor_coverage": dict(digest.tensor),  # coverage:none: programs that agreed about no tensor core
        "sass_forms_reached": len(digest.sass),
        "sass_real_kernels": against_real(digest.sass, real_vocabulary()) if digest.sass else None,
        "wall_seconds": wall,
        "programs_per_second": pps,
        "campaign_stats": stats,
        **({"shards_missing": stats["shards_missing"]} if stats.get("shards_missing") else {}),
        "input_problems": t.problems,
    }


def _tensor_line(c: dict) -> str:
    """How much of the judged programs' tensor cores the reference reached; the coverage:none count
    (programs on which the judges agreed about no tensor core) stands out."""
    if not c.get("programs"):
        return ""
    return (f"<p>Tensor cores: {c.get('executed', 0)} of {c.get('of', 0)} tensor-core instructions of "
            f"{c['programs']} programs executed in the reference; <b>{c.get('coverage:none', 0)}</b> programs with "
            "<code>coverage:none</code> (none of theirs ran).</p>")


def junit(t: Triage, summ: dict) -> str:
    """JUnit XML grouped by what findings mean: a ``<testsuite>`` per finding class (compiler bug
    candidate, hardware or spec deviation, model gap; each present, empty or not, so a dashboard
    keeps its rows) holding a testcase per bucket -- a new bucket fails, a known one (``--known``)
    is skipped with its reason -- and one for the campaign itself."""
    suites = []
    failures = skipped = tests = 0
    groups: dict[str, list[str]] = {cls: [] for cls in CLASSES}
    counts = {cls: [0, 0] for cls in CLASSES}  # failures, skipped
    for b in summ["buckets"]:
        cls = b["class"]
        msg = (f"{'new bug' if b['known'] is None else 'known bug'}: {b['words']}; {b['count']} finding(s), "
               f"evidence {', '.join(list(b['evidence'])[:3])}; smallest repro: {b['smallest_repro'] or 'inline'}")
        if b["known"] is None:
            counts[cls][0] += 1
            body = f"<failure message={quoteattr(msg)}>{escape(msg)}</failure>"
        else:
            counts[cls][1] += 1
            why = f"known ({b['known_entry']}): {b['known']}; {msg}"
            body = f"<skipped message={quoteattr(why)}/>"
        groups[cls].append(f"<testcase classname={quoteattr(_junit_class(cls))} name={quoteattr(b['cause'])}>"
                           f"{body}</testcase>")
    name = f"campaign: {summ['programs']} programs, {summ['headline']}"
    suites.append(f'<testsuite name="fuzzptx campaign" tests="1" failures="0" skipped="0">\n'
                  f'<testcase classname="fuzzptx" name={quoteattr(name)}/>\n</testsuite>')
    tests = 1
    for cls, cases in groups.items():
        f, k = counts[cls]
        failures, skipped, tests = failures + f, skipped + k, tests + len(cases)
        suites.append(f"<testsuite name={quoteattr(cls)} tests=\"{len(cases)}\" failures=\"{f}\" skipped=\"{k}\">\n"
                      + "".join(c + "\n" for c in cases) + "</testsuite>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuites name="fuzzptx" tests="{tests}" failures="{failures}" skipped="{skipped}">\n'
            + "\n".join(suites) + "\n</testsuites>\n")


def _junit_class(cls: str) -> str:
    """``fuzzptx.compiler_bug_candidate``: the class as a JUnit classname (dashboards group by it)."""
    return "fuzzptx." + "_".join(cls.replace("(", "").replace(")", "").split())


def html_report(directory: Path, t: Triage, digest: Digest, summ: dict) -> str:
    rows = []
    status = {b["cause"]: b["known"] for b in summ["buckets"]}
    with_releases = any("releases" in b for b in summ["buckets"])
    held = {b["cause"]: b.get("releases") for b in summ["buckets"]}
    for b in sorted(t.ordered(), key=lambda b: status.get(b.key) is not None):  # new bugs first
        rec = b.smallest or {}
        repro = rec.get("repro")
        link = "inline in results" if not repro else f'<a href="{html.escape(_rel(directory, repro))}">{html.escape(Path(repro).name)}</a>'
        bundle = directory / bug_rows.BUNDLES / bug_rows.slug(b.cause)
        if bundle.is_dir():
            link += f' (<a href="{html.escape(_rel(directory, str(bundle / "README.md")))}">bundle</a>)'
        why = status.get(b.key)
        state = "<b>new</b>" if why is None else f"known: {html.escape(why)}"
        rel = f"<td>{html.escape(holds_text(held.get(b.key)) or '(not judged here)')}</td>" if with_releases else ""
        rows.append(f"<tr><td>{b.count}</td><td><code>{html.escape(b.key)}</code><br>{html.escape(b.cause.words())}</td>"
                    f"<td>{html.escape(b.kind)}</td><td>{state}</td><td>{html.escape(evidence_text(b))}</td><td>{link}</td>"
                    f"<td>{html.escape(b.size_text())}</td>{rel}</tr>")
    y = summ.get("bug_yield") or {}
    per = lambda unit: ", ".join(f"{y.get(f'{k}_per_{unit}')} {k}" for k in ("distinct", "new", "known")) \
        if y.get(f"distinct_per_{unit}") is not None else "-"  # noqa: E731
    stale = "".join(f"<li><code>{html.escape(x)}</code></li>" for x in summ.get("known_entries_unmatched", ()))
    st = summ.get("campaign_stats") or {}
    stage = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>" for k, v in st.items() if not isinstance(v, (dict, list)))
    stage_rows = stage_table(st)
    faults = "".join(f"<tr><td>{html.escape(r['id'])}</td><td>{html.escape(r['planted'])}</td>"
                     f"<td>{html.escape(r['hardware'])}</td><td>{html.escape(', '.join(r['signatures']))}</td></tr>"
                     for r in digest.faults)
    if digest.more_faults:
        faults += f"<tr><td colspan=4>... and {digest.more_faults} more (results.jsonl)</td></tr>"
    pps = summ["programs_per_second"]
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>fuzzptx report: {html.escape(directory.name)}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}}table{{border-collapse:collapse}}
td,th{{padding:3px 10px;border-bottom:1px solid #ddd;text-align:left}}h2{{margin-top:1.6em}}</style></head><body>
<h1>fuzzptx report: {html.escape(directory.name)}</h1>
{f"<p><b>Missing shard(s): {html.escape(', '.join(summ['shards_missing']))}</b> -- this report covers only the shards given.</p>" if summ.get('shards_missing') else ''}
<p style="font-size:1.4em"><b>{html.escape(summ['headline'])}</b></p>
<p><b>{summ['programs']}</b> programs judged, <b>{summ['findings']}</b> findings in <b>{len(t.buckets)}</b> buckets, one per
root cause (<b>{summ['new_buckets']}</b> new, {summ['known_buckets']} known);
{'' if pps is None else f'{pps} programs/s'}.  Bug yield: per CPU-hour {per('cpu_hour')}; per GPU-hour {per('gpu_hour')}.</p>
{_tensor_line(summ.get('tensor_coverage') or {})}
{headline(st)}
<h2>Distinct bugs against programs (saturation) and coverage</h2>{plot_saturation(t, digest, {c for c in t.buckets if status.get(str(c)) is not None})}
<h2>Bugs (one bucket per root cause, new first)</h2>{plot_buckets(t)}
<table><tr><th>findings</th><th>root cause</th><th>class</th><th>status</th><th>evidence</th><th>smallest repro</th><th>instructions</th>{'<th>releases (the signature holds)</th>' if with_releases else ''}</tr>{''.join(rows)}</table>
{f'<p>Known bugs of the ledger that matched no bucket (fixed, stale, or their judges did not run):</p><ul>{stale}</ul>' if stale else ''}
<h2>SASS forms over time</h2>{plot_sass(digest, summ['programs'], summ.get('sass_real_kernels'))}
{_sass_missing(summ.get('sass_real_kernels'))}
<h2>Coverage: type mix &times; N &times; A source &times; swizzle</h2>{plot_coverage(digest.cells)}
<h2>Throughput over time</h2>{plot_throughput(digest.times)}
<h2>Stages</h2>{stage_rows or '<p>no stats.json</p>'}
<h2>GPU faults survived</h2>{f'<table><tr><th>program</th><th>planted</th><th>hardware</th><th>findings</th></tr>{faults}</table>' if faults else '<p>No GPU faults.</p>'}
<h2>Campaign figures</h2><table>{stage or '<tr><td>no stats.json</td></tr>'}</table>
</body></html>
"""


def headline(st: dict) -> str:
    """The campaign's figures a person looks for first (empty without stats.json)."""
    if not st:
        return ""
    idle = st.get("gpu_idle_share")
    items = [("wall", f"{st.get('wall_seconds', '?')} s"), ("programs/s", st.get("programs_per_second", "?")),
             ("CPU processes", st.get("cpu_workers", "?")), ("GPUs", f"{len(st.get('gpus') or [])} (indices {', '.join(map(str, st.get('gpus') or [])) or 'none'})"),
             ("GPU idle share", "-" if idle is None else f"{idle:.1%}"),
             ("GPU faults survived", sum((st.get("faults") or {}).values())),
             ("worker restarts", st.get("worker_restarts", 0)), ("planted block", st.get("planted_block")),
             ("judges", ", ".join(st.get("judges") or [])), ("seed / shard", f"{st.get('seed')} / {st.get('shard')}")]
    return "<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in items) + "</table>"


def stage_table(st: dict) -> str:
    """Per-stage cost and sustainable rate from the campaign's stats.json (empty without one)."""
    ms = st.get("stage_ms_per_program") or {}
    rates = st.get("stage_rates_programs_per_second") or {}
    if not ms:
        return ""
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{v:.2f}</td><td>{rates.get(k, '')}</td></tr>" for k, v in ms.items())
    idle = st.get("gpu_idle_share")
    tail = "" if idle is None else f"<p>GPU idle share: <b>{idle:.1%}</b> over {st.get('gpus')} GPU(s); worker restarts: {st.get('worker_restarts', 0)}; faults: {html.escape(json.dumps(st.get('faults', {})))}.</p>"
    return ("<table><tr><th>stage</th><th>ms per program (one process)</th><th>programs/s the stage sustains</th></tr>"
            + rows + "</table>" + tail)


def _rel(directory: Path, path: str) -> str:
    p = Path(path)
    try:
        return str(p.resolve().relative_to(directory.resolve()))
    except ValueError:
        return str(p)


def read_stats(path: Path) -> dict:
    """A campaign's ``stats.json`` ({} when there is none); a corrupt one is one line naming it."""
    if not path.exists():
        return {}
    text = read_text(path, what="campaign stats file")
    try:
        stats = json.loads(text)
    except ValueError as exc:
        raise InputError(f"not JSON: {getattr(exc, 'msg', exc)}", str(path), getattr(exc, "lineno", None)) from None
    if not isinstance(stats, dict):
        raise InputError(f"a JSON {type(stats).__name__}, not a campaign stats object", str(path))
    return stats


# stats.json counters that add up across the shards of one campaign
_SUMMED = ("programs", "findings", "gpu_programs", "dropped_at_deadline_for_resume", "worker_restarts",
           "gpu_errors_total", "block_errors_total", "illegal_programs", "ptxas_accepted", "resumed_skipping",
           "cpu_workers")
_COUNTERS = ("buckets", "evidence", "faults", "families", "accepted")
_HOURS = ("cpu_hours", "gpu_hours")  # what each shard held: bug yield is per hour of all of them


def merge_stats(shards: Sequence[tuple[Path, dict]]) -> dict:
    """One campaign's figures from its shards' ``stats.json``: counts add up, the wall is the longest
    shard's (they run side by side), programs/s is the sum of the shards' own rates; each shard's
    own figures stay under ``shards``.  Shards of different seeds, or one shard given twice, are
    refused: their merge would not be one campaign."""
    present = [(d, st) for d, st in shards if st]
    if not present:
        return {}
    seeds = {st.get("seed") for _, st in present}
    if len(seeds) > 1:
        raise InputError(f"shards of different campaigns (seeds {sorted(map(str, seeds))}): merge one campaign's shards",
                         str(present[0][0]))
    seen: dict[str, Path] = {}
    for d, st in present:
        sh = str(st.get("shard"))
        if sh in seen:
            raise InputError(f"shard {sh} given twice (also {seen[sh]}): its programs would count twice", str(d))
        seen[sh] = d
    merged: dict = {k: sum(int(st.get(k) or 0) for _, st in present) for k in _SUMMED}
    for k in _COUNTERS:
        c: Counter = Counter()
        for _, st in present:
            c.update(st.get(k) or {})
        merged[k] = dict(c.most_common())
    for k in _HOURS:
        merged[k] = round(sum(float(st.get(k) or 0) for _, st in present), 6)
    merged["wall_seconds"] = max(float(st.get("wall_seconds") or 0) for _, st in present)
    merged["programs_per_second"] = round(sum(float(st.get("programs_per_second") or 0) for _, st in present), 2)
    first = present[0][1]
    for k in ("seed", "block_size", "judges", "numerics"):
        merged[k] = first.get(k)
    missing = missing_shards(seen)
    merged["shard"] = ", ".join(sorted(seen)) + f" ({len(present)} shards merged" + \
        (f"; MISSING {', '.join(missing)})" if missing else ")")
    merged["shards_missing"] = missing
    merged["gpus"] = [g for _, st in present for g in (st.get("gpus") or [])]
    merged["interrupted"] = any(st.get("interrupted") for _, st in present)
    merged["shards"] = {str(d): {k: st.get(k) for k in ("shard", "programs", "findings", "wall_seconds",
                                                          "programs_per_second", "interrupted")} for d, st in present}
    return merged


def missing_shards(seen: Iterable[str]) -> list[str]:
    """The shards ``i/n`` of the campaign that ``seen`` (shard strings) leaves out: a merge of
    fewer than ``n`` shards is not the whole campaign, and says which part it lacks."""
    counts: dict[int, set[int]] = {}
    for sh in seen:
        i, _, n = str(sh).partition("/")
        if i.isdigit() and n.isdigit():
            counts.setdefault(int(n), set()).add(int(i))
    return [f"{i}/{n}" for n, have in sorted(counts.items()) for i in range(n) if i not in have]


def write_report(directory: Path, known: tuple[KnownBug, ...] = (), ptxas: str | None = None,
                 shards: Sequence[Path] = ()) -> dict:
    """``ptxas``: a SPEC of releases to judge each bucket's smallest repro with (``releases_of``).
    ``shards``: several campaign directories (one per shard) to merge into one report written to
    ``directory``; without them ``directory`` is the campaign."""
    if shards:
        t, digest = load_records(list(shards))
        stats = merge_stats([(d, read_stats(d / "stats.json")) for d in shards]) if len(shards) > 1 \
            else read_stats(shards[0] / "stats.json")
        make_dir(directory, what="report directory")
    else:
        t, digest = load_records(directory)
        stats = read_stats(directory / "stats.json")
    summ = summary(t, digest, stats, known, releases_of(t, ptxas) if ptxas else None)
    (directory / "summary.json").write_text(json.dumps(summ, indent=1))
    (directory / "junit.xml").write_text(junit(t, summ))
    (directory / "report.html").write_text(html_report(directory, t, digest, summ))
    return summ


def main_report(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fuzzptx report", formatter_class=Formatter,
                                 description="Write report.html, summary.json and junit.xml for a results directory, "
                                             "or one merged report of several shard directories (--out).")
    ap.add_argument("dir", nargs="+", help="a campaign (or run) directory; several: the shards of one campaign, "
                                           "merged into one report in --out")
    ap.add_argument("--out", metavar="DIR", help="where the report goes (default: the one directory given; "
                                                 "required with several)")
    ap.add_argument("--known", metavar="FILE", help="known-bug ledger (TOML, reports/known_bugs.toml; "
                    "fuzzptx.triage.known): buckets whose root cause it lists are marked known and skipped, not "
                    "failed, in the JUnit XML")
    ap.add_argument("--ptxas", metavar="SPEC", help="say, per bucket, which ptxas releases of SPEC keep its smallest "
                    "repro's signature (as fuzzptx triage --ptxas)")
    args = ap.parse_args(argv)
    for name in args.dir:
        d = Path(name)
        if not d.exists():
            raise InputError("not a directory: no such path (expected a campaign directory)", name)
        if not d.is_dir():
            raise InputError("not a directory (expected a campaign directory holding results.jsonl)", name)
        if not any(d.rglob("*.jsonl")):
            raise InputError("no results.jsonl (or other *.jsonl record) under this directory: not a campaign directory",
                             name)
    if len(args.dir) > 1 and not args.out:
        raise InputError("several directories are merged into one report: say where it goes with --out DIR")
    if len(set(Path(x).resolve() for x in args.dir)) != len(args.dir):
        raise InputError("a directory is given twice: its programs would count twice")
    if args.ptxas:
        toolchains.parse_spec(args.ptxas)  # a bad SPEC is one line before the report is built
    known = load_known(args.known) if args.known else ()
    shards = [Path(x) for x in args.dir] if args.out else []
    d = Path(args.out) if args.out else Path(args.dir[0])
    summ = write_report(d, known, args.ptxas, shards)
    for sh in summ.get("shards_missing", ()):
        print(f"fuzzptx report: shard {sh} is missing: the report covers only the shards given", file=sys.stderr)
    for p in summ["input_problems"]:
        print(f"fuzzptx report: {p}")
    for k in summ["known_entries_unmatched"]:
        print(f"fuzzptx report: known bug matched no bucket (fixed, stale, or its judges did not run): {k}")
    tail = f" ({summ['new_buckets']} new, {summ['known_buckets']} known)" if known else ""
    print(f"{summ['headline']}" if known else f"distinct bugs: {summ['distinct_bugs']}")
    for b in summ["buckets"]:
        if b["new"] and known:
            print(f"  NEW {b['count']:5d}  {b['words']}  -> {b['smallest_repro'] or 'inline'}")
    print(f"{summ['programs']} programs, {summ['findings']} findings in {len(summ['buckets'])} buckets{tail} -> "
          f"{d / 'report.html'}, {d / 'summary.json'}, {d / 'junit.xml'}")
    return 0
