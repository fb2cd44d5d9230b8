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

import os
import time
from pathlib import Path
from typing import Iterable, Sequence

from fuzzptx.judges.base import COMPILE, DEVICE
from fuzzptx.judges.registry import by_stage
from fuzzptx.judges.finding import CLASSES, MODEL, RootCause
from fuzzptx.judges.selection import JudgeSet
from fuzzptx.oracles.hardware import HardwareUnavailable

from .campaign import parse_gpus, run_campaign
from .config import RunConfig
from .generate import ILLEGAL_SHARE

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


def run(n: int, seed: int, judges: Iterable[str] | JudgeSet, out_dir: Path, *, batch: int = 32,
        illegal_share: float = ILLEGAL_SHARE, shrink_budget: float = 20.0, progress: bool = True,
        numerics: str = "spec", generator: str = "direct", workers: int = 0, repros: bool = True,
        shrink_model_gaps: bool = False, resume: bool = False,
        avoid: frozenset[str] = frozenset(), steer: str = "none", kernels: tuple[str, ...] = ()) -> dict:
    """Judge ``n`` programs into ``out_dir`` with the campaign engine; returns the run's summary
    (``summary``).  ``workers``: pool processes (0: inline, in this process); ``repros=False``:
    findings are counted and recorded but not shrunk (as a benchmark of the per-program cost wants);
    ``shrink_model_gaps``: shrink the findings that are gaps in our own models too; ``resume``:
    carry on from the record in ``out_dir`` (the programs judged there are not judged again);
    ``avoid``: shapes of known bugs the strategies turn down (``triage.known.avoided``)."""
    judges = JudgeSet.of(judges)
    gpus: list[int] = []
    for j in judges.needing(DEVICE):  # the GPU itself: a run that asks for it and has none says so in one line
        why = j.available()
        if why is not None:
            raise HardwareUnavailable(f"--judges {j.name}: {why}")
        gpus = parse_gpus("all")
    config = RunConfig(seed=seed, block_size=batch, examples=n, judges=judges, generator=generator,
                       numerics=None if numerics == "spec" else numerics, illegal_share=illegal_share,
                       shrink_budget=shrink_budget if repros else 0.0, shrink_model_gaps=shrink_model_gaps, avoid=avoid,
                       out=Path(out_dir), workers=max(workers, 1), inline=workers <= 0, gpus=tuple(gpus), steer=steer,
                       kernels=kernels)
    return run_config(config, progress=progress, resume=resume)


def run_config(config: RunConfig, *, progress: bool = True, resume: bool = False) -> dict:
    """A run of ``config`` through the campaign engine; its summary."""
    stats = run_campaign(config.out, config, gpus=list(config.gpus), workers=config.workers, inline=config.inline,
                         progress=progress, resume=resume)
    return summary(stats)


def sass_line(s: dict) -> str:
    """The SASS-form coverage in one line: forms reached, and of the real kernels' forms how many
    (none measured where the pinned release's SASS judge disassembled nothing: a run with
    ``--ptxas RELEASES`` has only the releases' ``sass@`` judges)."""
    if not s.get("sass_programs"):
        return "not measured: the pinned release's SASS judge (sass) disassembled no program of this run"
    line = f"{s['sass_forms_reached']} SASS forms in {s.get('sass_programs', 0)} disassembled programs"
    real = s.get("sass_real_kernels")
    if real:
        line += (f"; real kernels' forms reached {real['reached']}/{real['real_forms']} ({real['fraction']:.1%})"
                 + (f", not reached: {', '.join(real['missing'][:6])}" + (" ..." if len(real["missing"]) > 6 else "")
                    if real["missing"] else ""))
    return line


def summary(stats: dict) -> dict:
    """What the run's summary shows, from the engine's stats."""
    stages = stats["stage_cpu_seconds"]
    ptxas = stages.get(by_stage(COMPILE).name, 0.0)  # the compile stage's time (ptxas's)
    per_program = sum(v for k, v in stages.items() if k not in _NOT_PER_PROGRAM and not k.startswith("gpu"))
    return {
        "programs": stats["programs"],
        "illegal_programs": stats["illegal_programs"],
        "ptxas_accepted": stats["ptxas_accepted"],
        "accepted": stats.get("accepted", {}),
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
        **{k: stats[k] for k in ("sass_forms_reached", "sass_programs", "sass_coverage", "sass_timeline") if k in stats},
        "repros": stats["repros"],
        "judges": stats["judges"],
        "block_errors": stats["block_errors"],
        "block_errors_total": stats["block_errors_total"],
    }


def accepted_words(s: dict) -> str:
    """How many programs each compiler that ran accepted: ``ptxas accepted N`` for the compile
    stage alone, else one count per judge (``ptxas@13.5.37 accepted N``)."""
    accepted = s.get("accepted") or {}
    if not accepted or list(accepted) == [by_stage(COMPILE).name]:
        return f"ptxas accepted {s['ptxas_accepted']}"
    return ", ".join(f"{name} accepted {n}" for name, n in accepted.items())


def format_summary(s: dict, out_dir: Path, bug_lines: Sequence[str] = ()) -> str:
    """The summary as text; ``bug_lines``: the known-bug ledger's lines for the run's root causes
    (``triage.bugs.format_bugs``, which the command that reads the ledger gives)."""
    lines = [
        "fuzzptx run summary",
        f"  programs        {s['programs']} ({s['illegal_programs']} illegal by mutation), {accepted_words(s)}",
        f"  throughput      {s['programs_per_second']} programs/s over {s['wall_seconds']} s",
        "  stage seconds   " + ", ".join(f"{k} {v}" for k, v in s["stage_seconds"].items()),
    ]
    if s["overhead_vs_ptxas"] is not None:
        lines.append(f"  cost vs ptxas   {s['overhead_vs_ptxas']}x CPU (every per-program stage over ptxas time"
                     f" alone); wall {s['wall_over_ptxas']}x (ptxas runs beside the other judges)")
    lines.append(f"  coverage        {s['forms_reached']} catalogue forms; families: " + ", ".join(f"{k} {v}" for k, v in list(s["families"].items())[:8]))
    if s.get("sass_forms_reached") is not None:
        lines.append("  SASS coverage   " + sass_line(s))
    if s["findings_by_bucket"]:
        known = s.get("known") or {}
        if s.get("bugs"):
            lines += list(bug_lines)
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
