"""``fuzzptx run``: a CPU fuzz run with a summary -- the campaign engine at a small scale.

It is ``fuzzptx campaign`` with no GPU unless asked, a pool of one process per core (or inline,
``--workers 0``), a fixed number of programs, and each new finding signature shrunk once
(``--shrink-budget``) into its repro.  Batch ``b`` of ``fuzzptx run --seed S`` is block ``b`` of
``fuzzptx campaign --seed S``: the same programs, the same verdicts, the same records.  The
run's directory holds ``results.jsonl`` (one line per judged program, written as it finishes),
``repros/`` and ``summary.json``; by default a new directory under the user's data directory
(``$FUZZPTX_OUT``, else ``$XDG_DATA_HOME/fuzzptx/runs``, else ``~/.local/share/fuzzptx/runs``), so a
run started from a checkout writes nothing into it; the summary prints where.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Sequence

from fuzzptx.helptext import Formatter
from fuzzptx.judges import registry
from fuzzptx.judges.builtin import with_releases
from fuzzptx.judges.finding import CLASSES, MODEL, RootCause
from fuzzptx.oracles.hardware import HardwareUnavailable
from fuzzptx.triage import bugs
from fuzzptx.triage.known import DEFAULT_LEDGER, avoided, ledger

from .campaign import Plan, parse_gpus, run_campaign
from .generate import ILLEGAL_SHARE

DEFAULT_JUDGES = ("reference", "checker", "ptxas", "sass")
# Stages that are paid once per new finding signature, not per program, and time counted twice.
_NOT_PER_PROGRAM = ("shrink", "repro", "overlapped", "gc", "record (main process)")


def runs_dir() -> Path:
    """Where runs go unless ``--out`` says: ``$FUZZPTX_OUT``, else ``$XDG_DATA_HOME/fuzzptx/runs``,
    else ``~/.local/share/fuzzptx/runs`` -- never the current directory, which is often a checkout
    (the README's main job is run from the repository root)."""
    if os.environ.get("FUZZPTX_OUT"):
        return Path(os.environ["FUZZPTX_OUT"]).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share") / "fuzzptx" / "runs"


def default_out(seed: int) -> Path:
    """A fresh directory under ``runs_dir()``: a run never writes into a checkout it was not
    pointed at, and never appends to another run's record."""
    return runs_dir() / f"run-seed{seed}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def run(n: int, seed: int, judges: Sequence[str], out_dir: Path, *, batch: int = 32,
        illegal_share: float = ILLEGAL_SHARE, shrink_budget: float = 20.0, progress: bool = True,
        numerics: str = "spec", generator: str = "direct", workers: int = 0, repros: bool = True,
        shrink_model_gaps: bool = False, avoid: frozenset[str] = frozenset()) -> dict:
    """Judge ``n`` programs into ``out_dir`` with the campaign engine; returns the run's summary
    (``summary``).  ``workers``: pool processes (0: inline, in this process); ``repros=False``:
    findings are counted and recorded but not shrunk (as a benchmark of the per-program cost wants);
    ``shrink_model_gaps``: shrink the findings that are gaps in our own models too; ``avoid``: shapes
    of known bugs the strategies turn down (``triage.known.avoided``)."""
    judges = tuple(judges)
    gpu_judges = [j for j in judges if not registry.get(j).cpu and registry.get(j).wants_cubin]
    gpus: list[int] = []
    if gpu_judges:  # the GPU itself: a run that asks for it and has none says so in one line
        why = registry.get(gpu_judges[0]).available()
        if why is not None:
            raise HardwareUnavailable(f"--judges {gpu_judges[0]}: {why}")
        gpus = parse_gpus("all")
    plan = Plan(seed=seed, block_size=batch, examples=n, judges=judges, generator=generator,
                numerics=None if numerics == "spec" else numerics, illegal_share=illegal_share,
                shrink_budget=shrink_budget if repros else 0.0, shrink_model_gaps=shrink_model_gaps, avoid=avoid)
    stats = run_campaign(out_dir, plan, gpus=gpus, workers=max(workers, 1), inline=workers <= 0,
                         progress=progress)
    return summary(stats)


def summary(stats: dict) -> dict:
    """What the run's summary shows, from the engine's stats."""
    stages = stats["stage_cpu_seconds"]
    ptxas = stages.get("ptxas", 0.0)
    per_program = sum(v for k, v in stages.items() if k not in _NOT_PER_PROGRAM and not k.startswith("gpu"))
    return {
        "programs": stats["programs"],
        "illegal_programs": stats["illegal_programs"],
        "ptxas_accepted": stats["ptxas_accepted"],
        "wall_seconds": stats["wall_seconds"],
        "programs_per_second": stats["programs_per_second"],
        "stage_seconds": dict(sorted(stages.items())),
        # every per-program stage's CPU time over ptxas's (ptxas runs beside the other judges)
        "overhead_vs_ptxas": round(per_program / ptxas, 3) if ptxas else None,
        "wall_over_ptxas": round(stats["wall_seconds"] / ptxas, 3) if ptxas else None,
        "findings_by_bucket": stats["buckets"],  # by root cause (finding.RootCause as str)
        "findings_by_class": {cls: {key: n for key, n in stats["buckets"].items() if RootCause.parse(key).kind == cls}
                              for cls in CLASSES},
        "evidence": stats.get("evidence", {}),
        "first_seen": stats.get("first_seen", {}),
        "cpu_hours": stats.get("cpu_hours"), "gpu_hours": stats.get("gpu_hours"),
        "avoid": stats.get("avoid", []),
        "families": stats["families"],
        "forms_reached": stats["forms_reached"],
        "repros": stats["repros"],
        "judges": stats["judges"],
        "block_errors": stats["block_errors"],
        "block_errors_total": stats["block_errors_total"],
    }


def main_run(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fuzzptx run", description="CPU fuzz run: draw programs, judge them, shrink "
                                 "each new finding into a repro, print a summary.",
                                 formatter_class=Formatter)
    ap.add_argument("--examples", type=int, default=200, help="programs to judge")
    ap.add_argument("--seed", type=int, default=0, help="the run is a function of the seed")
    ap.add_argument("--judges", default=",".join(DEFAULT_JUDGES),
                    help="comma-separated judge names, built-in or from an installed plugin")
    ap.add_argument("--ptxas", metavar="SPEC", default=None,
                    help="the ptxas releases that judge: a release (13.5.37), a list, a range (12.4-13.5), latest, "
                         "all, default (the pinned one) or a path to a ptxas binary; releases are fetched into the "
                         "user cache on demand (fuzzptx toolchains). Each release is a judge (ptxas@R) and releases "
                         "that disagree are a finding; the pinned release stays the judge named ptxas")
    ap.add_argument("--batch", type=int, default=32, help="programs per ptxas module (a campaign block)")
    ap.add_argument("--illegal-share", type=float, default=ILLEGAL_SHARE, help="share of mutated (illegal) programs")
    ap.add_argument("--out", default=None, help="directory for results.jsonl, repros/ and summary.json "
                    "(default: a new directory under $FUZZPTX_OUT, else $XDG_DATA_HOME/fuzzptx/runs, else "
                    "~/.local/share/fuzzptx/runs)")
    ap.add_argument("--shrink-budget", type=float, default=10.0, help="seconds per new finding signature (0: no shrinking)")
    ap.add_argument("--shrink-model-gaps", action="store_true",
                    help="shrink findings that are gaps in our own models too (the checker's model of ptxas, "
                         "mutation labels, the reference): by default only compiler and hardware findings are shrunk")
    ap.add_argument("--workers", type=int, default=None,
                    help="CPU processes (0: judge in this process; default: one per core)")
    ap.add_argument("--numerics", choices=("spec", "hardware"), default="spec",
                    help="reference numerics: spec (the PTX ISA's error bounds) or hardware (bit-exact H100 model)")
    ap.add_argument("--generator", choices=("direct", "hypothesis"), default="direct",
                    help="direct: each program drawn straight from the strategies, as the campaign does (fast); "
                         "hypothesis: through Hypothesis's engine")
    ap.add_argument("--known", metavar="FILE", default=None,
                    help="known-bug ledger (TOML) the run's root causes are matched to: the headline says how many "
                         f"distinct bugs are new; default: {DEFAULT_LEDGER.relative_to(DEFAULT_LEDGER.parents[1])} of "
                         "the checkout when there is one; 'none': no ledger")
    ap.add_argument("--rediscover", action="store_true",
                    help="do not turn down the shapes of the ledger's known bugs (by default the generator avoids "
                         "them, so the run's programs go to what is not known yet)")
    ap.add_argument("--no-bundles", action="store_true", help="do not write a bundle of each new bug into the run "
                    "directory")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--quiet", action="store_true", help="no progress line")
    args = ap.parse_args(argv)
    known = ledger(args.known)  # before the run: a bad file costs nothing
    judges = with_releases(registry.parse(args.judges), args.ptxas)
    out_dir = Path(args.out) if args.out else default_out(args.seed)
    workers = (os.cpu_count() or 1) if args.workers is None else args.workers
    summ = run(args.examples, args.seed, judges, out_dir, batch=args.batch, illegal_share=args.illegal_share,
               shrink_budget=args.shrink_budget, progress=not args.quiet and not args.json, numerics=args.numerics,
               generator=args.generator, workers=workers, shrink_model_gaps=args.shrink_model_gaps,
               avoid=frozenset() if args.rediscover else avoided(known, {"numerics": args.numerics}))
    b = bugs.summarise({"buckets": summ["findings_by_bucket"], **summ}, known, {"numerics": args.numerics}, out_dir,
                       bundles=not args.no_bundles)
    summ["bugs"] = b
    summ["known"] = {x["cause"]: x["known"] for x in b["bugs"] if x["known"]}
    summ["new_findings"] = sum(x["count"] for x in b["bugs"] if x["new"])
    (out_dir / "summary.json").write_text(json.dumps(summ, indent=1))
    if args.json:
        print(json.dumps(summ, indent=1))
    else:
        print(format_summary(summ, out_dir))
    return 1 if summ["block_errors_total"] else 0


def format_summary(s: dict, out_dir: Path) -> str:
    lines = [
        "fuzzptx run summary",
        f"  programs        {s['programs']} ({s['illegal_programs']} illegal by mutation), ptxas accepted {s['ptxas_accepted']}",
        f"  throughput      {s['programs_per_second']} programs/s over {s['wall_seconds']} s",
        "  stage seconds   " + ", ".join(f"{k} {v}" for k, v in s["stage_seconds"].items()),
    ]
    if s["overhead_vs_ptxas"] is not None:
        lines.append(f"  cost vs ptxas   {s['overhead_vs_ptxas']}x CPU (every per-program stage over ptxas time"
                     f" alone); wall {s['wall_over_ptxas']}x (ptxas runs beside the other judges)")
    lines.append(f"  coverage        {s['forms_reached']} catalogue forms; families: " + ", ".join(f"{k} {v}" for k, v in list(s["families"].items())[:8]))
    if s["findings_by_bucket"]:
        known = s.get("known") or {}
        if s.get("bugs"):
            lines += bugs.format_bugs(s["bugs"])
            lines.append(f"  new findings    {s['new_findings']} of {sum(s['findings_by_bucket'].values())} "
                         "(the rest are known bugs of the ledger)")
        for cls, buckets in s["findings_by_class"].items():
            if not buckets:
                continue
            lines.append(f"  {cls}: {sum(buckets.values())} finding(s) in {len(buckets)} bucket(s)"
                         + (" -- not shrunk (--shrink-model-gaps to shrink them)" if cls == MODEL else ""))
            for key, count in buckets.items():
                lines.append(f"    {count:5d}  {key}" + (f"  (known: {known[key]})" if key in known else "")
                             + (f"  -> {s['repros'].get(key)}" if s["repros"].get(key) else ""))
    else:
        lines.append("  findings        none")
    if s.get("block_errors_total"):
        lines.append(f"  ERRORS          {s['block_errors_total']} block(s) could not be judged; first: {s['block_errors'][0]}")
    lines.append(f"  run directory   {out_dir} (results.jsonl, repros/, summary.json; --out to choose)")
    return "\n".join(lines)
