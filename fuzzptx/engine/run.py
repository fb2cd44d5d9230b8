"""``fuzzptx run``: the CPU fuzz loop — generate, judge in batches, diff, shrink, summarise.

Programs are drawn from ``fuzzptx.strategies`` under a fixed seed (so a run is
reproducible), batch by batch.  ptxas compiles each batch as one module in a
background thread (it waits on the ptxas process, so ptxas and this process's
checker and reference run on two cores at once: the next batch is generated and
the current one judged while ptxas compiles), then the verdicts are compared.
Each new finding signature is shrunk once and written as a repro file; every
judged program is appended to ``results.jsonl`` as it finishes, so an
interrupted run keeps what it judged.

``--generator direct`` (the default) draws each program straight from the
strategies as the campaign does (batch ``b`` of ``fuzzptx run --seed S`` is block
``b`` of ``fuzzptx campaign --seed S``); ``--generator hypothesis`` runs
Hypothesis's engine (``draw_programs``), several times slower per program.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from fuzzptx.judges import differ
from fuzzptx.program import Program


@dataclass
class RunStats:
    programs: int = 0
    illegal: int = 0
    seconds: Counter = field(default_factory=Counter)
    buckets: Counter = field(default_factory=Counter)
    families: Counter = field(default_factory=Counter)
    forms: set[str] = field(default_factory=set)
    ptxas_accepted: int = 0
    repros: dict[str, str] = field(default_factory=dict)
    wall: float = 0.0

    def as_dict(self) -> dict:
        ptxas = self.seconds["ptxas"]
        # Shrinking and repro files are paid once per new finding signature, not per program.
        other = sum(v for k, v in self.seconds.items() if k not in ("ptxas", "shrink", "repro"))
        return {
            "programs": self.programs,
            "illegal_programs": self.illegal,
            "ptxas_accepted": self.ptxas_accepted,
            "wall_seconds": round(self.wall, 3),
            "programs_per_second": round(self.programs / self.wall, 2) if self.wall else 0.0,
            "stage_seconds": {k: round(v, 3) for k, v in sorted(self.seconds.items())},
            "overhead_vs_ptxas": round((ptxas + other) / ptxas, 3) if ptxas else None,
            # ptxas compiles in the background while this process judges: the run's wall time
            # over the ptxas time (excluding the per-signature shrink and repro seconds).
            "wall_over_ptxas": round((self.wall - self.seconds["shrink"] - self.seconds["repro"]) / ptxas, 3)
            if ptxas else None,
            "findings_by_bucket": dict(self.buckets.most_common()),
            "families": dict(self.families.most_common()),
            "forms_reached": len(self.forms),
            "repros": self.repros,
        }


def draw_programs(n: int, seed: int, illegal_share: float = 0.25) -> list[Program]:
    """``n`` programs from the strategies, reproducibly from ``seed`` (legal and mutated illegal ones)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    import fuzzptx.strategies as S

    legal = S.programs()
    illegal = S.illegal_programs()
    n_illegal = int(round(n * illegal_share))
    out: list[Program] = []

    def collect(strategy, count: int, s: int) -> None:
        """Exactly ``count`` programs: ask for what is missing until Hypothesis has given enough."""
        got: list[Program] = []
        for attempt in range(8):
            want = count - len(got)
            if want <= 0:
                break

            @hseed(s + 7919 * attempt)
            @settings(max_examples=want, database=None, deadline=None, phases=[Phase.generate],
                      suppress_health_check=list(HealthCheck), derandomize=False)
            @given(strategy)
            def draw(p: Program) -> None:
                if len(got) < count:
                    got.append(p)

            draw()
        out.extend(got)

    from fuzzptx.strategies.reproducible import reproducible

    with reproducible():  # the same programs whatever else the process imported
        collect(legal, n - n_illegal, seed)
        if n_illegal:
            collect(illegal, n_illegal, seed + 1)
    return out[:n]


def _record(idx: int, program: Program, verdicts: differ.Verdicts, findings: list[differ.Finding], repro: str | None,
            family: str | None = None, forms: set[str] | None = None) -> dict:
    from fuzzptx.reduce import instruction_count

    return {
        "id": idx,
        "t": time.time(),
        "family": differ.program_family(program) if family is None else family,
        "forms": sorted(_forms_in(program) if forms is None else forms),
        "coverage": coverage_of(program),
        "instructions": instruction_count(program),
        "mutation": differ.mutation_of(program),
        "verdicts": verdicts.summary(),
        "findings": [{"signature": f.signature, "message": f.message} for f in findings],
        "repro": repro,
        "seconds": {k: round(v, 5) for k, v in verdicts.seconds.items()},
    }


def coverage_of(program: Program) -> dict[str, list[str]]:
    """Coverage tags the strategies left in the program's notes (``coverage: swizzle=128B,none control=loop``)."""
    tags: dict[str, list[str]] = {}
    for note in program.notes:
        if note.startswith("coverage:"):
            for item in note[len("coverage:"):].split():
                key, _, vals = item.partition("=")
                tags.setdefault(key, []).extend(v for v in vals.split(",") if v)
    return {k: sorted(set(v)) for k, v in tags.items()}


def _forms_in(program: Program) -> set[str]:
    from fuzzptx import isa

    keys = set()
    for fn in program.module.functions():
        for ins in fn.instructions():
            f = isa.form_for(ins)
            if f is not None:
                keys.add(f.key)
    return keys


def judge_batch(programs: Sequence[Program], judges: Sequence[str], numerics: str | None = None) -> list[differ.Verdicts]:
    """Judge a batch: ptxas once for the whole batch (one module), the rest per program."""
    texts, judged = _emit(programs)
    results = None
    if "ptxas" in judges:
        from fuzzptx.oracles.ptxas import compile_batch

        t0 = time.perf_counter()
        results = compile_batch(texts)
        results = (results, time.perf_counter() - t0)
    return judge_texts(programs, texts, judges, results, numerics, judged)


def _emit(programs: Sequence[Program]) -> tuple[list[str], list[Program]]:
    """Each program's text and the program as the judges read it back (located, no parse)."""
    pairs = [p.to_ptx_located() for p in programs]
    return [t for t, _ in pairs], [q for _, q in pairs]


def judge_texts(programs: Sequence[Program], texts: Sequence[str], judges: Sequence[str], ptxas: Any,
                numerics: str | None = None, judged: Sequence[Program] | None = None) -> list[differ.Verdicts]:
    """The other judges on each (program, its emitted text); ``ptxas`` is (results, seconds) of one
    ``compile_batch`` of ``texts``, or a future of it still compiling, or None; ``judged``: the
    programs as read back from ``texts`` (``Program.to_ptx_located``), else each text is parsed.

    The checker runs first, while ptxas may still be compiling; the reference then runs on
    the programs ptxas accepted (as in the campaign: on a rejected program it can only add
    what the checker and ptxas already said, and a quarter of the programs are mutants)."""
    first = [j for j in judges if j not in ("ptxas", "reference", "hardware", "metamorphic")]
    parsed, out = [], []
    for k, (p, t) in enumerate(zip(programs, texts)):
        t0 = time.perf_counter()
        q = differ.as_judged(p, t)[0] if judged is None else judged[k]
        parse_s = time.perf_counter() - t0
        v = differ.judge(p, first, text=t, numerics=numerics, judged=q)
        v.seconds["emit+parse"] = parse_s
        parsed.append(q)
        out.append(v)
    results: list = [None] * len(programs)
    if ptxas is not None:
        results, secs = ptxas.result() if hasattr(ptxas, "result") else ptxas
        for v, r in zip(out, results):
            v.ptxas = r
            v.seconds["ptxas"] = secs / len(programs)
    if "reference" in judges:
        for p, q, v, r in zip(programs, parsed, out, results):
            if r is None or r.accepted:
                differ.judge(p, ("reference",), numerics=numerics, judged=q, into=v)
    if "hardware" in judges:
        from fuzzptx.engine.campaign import gpu_worthy

        worker = gpu_worker()
        for q, v, r in zip(parsed, out, results):
            if (r is None or r.accepted) and gpu_worthy(q, v):
                t0 = time.perf_counter()
                v.hardware = worker.run(q)
                v.seconds["hardware"] = time.perf_counter() - t0
    if "metamorphic" in judges:  # on the GPU beside the hardware judge, else on the reference
        on_gpu = "hardware" in judges
        for q, v, r in zip(parsed, out, results):
            if (r is None or r.accepted) and (v.reference is not None or "reference" not in judges):
                t0 = time.perf_counter()
                v.metamorphic = differ.metamorphic_verdict(q, on_gpu=on_gpu, worker=gpu_worker() if on_gpu else None)
                v.seconds["metamorphic"] = time.perf_counter() - t0
    return out


_WORKER: list = []


def gpu_worker():
    """One GPU worker for the whole run (a fresh worker per program costs seconds: CuPy and a
    CUDA context); it survives faults and hangs itself and is closed when the process exits.
    Raises ``HardwareUnavailable`` (one line at the CLI) without a usable GPU."""
    if not _WORKER:
        import atexit

        from fuzzptx.oracles.hardware import HardwareWorker

        w = HardwareWorker()
        w.start()
        atexit.register(w.close)
        _WORKER.append(w)
    return _WORKER[0]


def batch_programs(b: int, seed: int, batch: int, n: int, illegal_share: float) -> list[Program]:
    """Batch ``b`` of a direct run: block ``b`` of the campaign with the same seed and block size
    (drawn at full size and cut at ``n``, so every program depends on (seed, b, index) alone)."""
    from fuzzptx.engine.campaign import block_seed, draw_direct

    keep = min(batch, n - b * batch)
    return draw_direct(batch, block_seed(seed, b), illegal_share)[:keep]


def main_run(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fuzzptx run", description="CPU fuzz run over reference, checker and ptxas.")
    ap.add_argument("--examples", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--judges", default="reference,checker,ptxas")
    ap.add_argument("--batch", type=int, default=32, help="programs per ptxas module")
    ap.add_argument("--illegal-share", type=float, default=0.25)
    ap.add_argument("--out", default=None, help="directory for results.jsonl and repros (default reports/runs/seed<S>)")
    ap.add_argument("--shrink-budget", type=float, default=10.0, help="seconds per new finding signature (0: no shrinking)")
    ap.add_argument("--numerics", choices=("spec", "hardware"), default="spec",
                    help="reference numerics: spec (the PTX ISA's error bounds) or hardware (bit-exact H100 model)")
    ap.add_argument("--generator", choices=("direct", "hypothesis"), default="direct",
                    help="direct: each program drawn straight from the strategies, as the campaign does (fast); "
                         "hypothesis: through Hypothesis's engine")
    ap.add_argument("--known", metavar="FILE", help="known-findings file (fuzzptx.triage.known, e.g. reports/known_findings.txt): "
                    "the summary marks which buckets are known")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    from fuzzptx.triage.known import classify, load_known

    known = load_known(args.known) if args.known else ()  # before the run: a bad file costs nothing
    judges = tuple(j.strip() for j in args.judges.split(",") if j.strip())
    bad = [j for j in judges if j not in differ.JUDGES]
    if bad:
        ap.error(f"unknown judge(s): {', '.join(bad)} (have {', '.join(differ.JUDGES)})")
    out_dir = Path(args.out or f"reports/runs/seed{args.seed}")
    (out_dir / "repros").mkdir(parents=True, exist_ok=True)
    stats = run(args.examples, args.seed, judges, out_dir, batch=args.batch, illegal_share=args.illegal_share,
                shrink_budget=args.shrink_budget, progress=not args.quiet and not args.json, numerics=args.numerics,
                generator=args.generator)
    summary = stats.as_dict()
    if known:
        hit, _ = classify(summary["findings_by_bucket"], known, {"numerics": args.numerics})
        summary["known"] = {sig: k.where() for sig, k in hit.items()}
        summary["new_findings"] = sum(n for sig, n in summary["findings_by_bucket"].items() if sig not in hit)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(format_summary(summary, out_dir))
    return 0


def run(n: int, seed: int, judges: Sequence[str], out_dir: Path, *, batch: int = 32, illegal_share: float = 0.25,
        shrink_budget: float = 20.0, progress: bool = True, numerics: str = "spec", generator: str = "direct",
        repros: bool = True) -> RunStats:
    """Judge ``n`` programs into ``out_dir`` (``repros=False``: findings are counted and recorded,
    but no repro files are shrunk or written, as a benchmark of the per-program cost wants)."""
    from concurrent.futures import ThreadPoolExecutor

    stats = RunStats()
    (out_dir / "repros").mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    n_batches = -(-n // batch)
    drawn: list[Program] | None = None
    if generator == "hypothesis":
        t0 = time.perf_counter()
        drawn = draw_programs(n, seed, illegal_share)
        stats.seconds["generate"] += time.perf_counter() - t0
    elif generator != "direct":
        raise ValueError(f"unknown generator {generator!r} (direct or hypothesis)")
    ptxas_pool = ThreadPoolExecutor(1, thread_name_prefix="ptxas")

    def compile_timed(texts: list[str]) -> tuple[list, float]:
        from fuzzptx.oracles.ptxas import compile_batch

        t0 = time.perf_counter()
        res = compile_batch(texts)
        return res, time.perf_counter() - t0

    def start(b: int) -> tuple[list[Program], list[str], list[Program], object]:
        """Generate batch ``b``, emit it once, and queue its ptxas run (which starts at once when
        ptxas is idle, so it overlaps the judging of the batch before)."""
        t0 = time.perf_counter()
        progs = drawn[b * batch:(b + 1) * batch] if drawn is not None else batch_programs(b, seed, batch, n, illegal_share)
        if numerics != "spec":  # the repro files say so: a replay or a shrink judges the same way
            progs = [replace(p, numerics=numerics) for p in progs]
        stats.seconds["generate"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        texts, judged = _emit(progs)
        stats.seconds["emit+parse"] += time.perf_counter() - t0
        return progs, texts, judged, ptxas_pool.submit(compile_timed, texts) if "ptxas" in judges else None

    results_path = out_dir / "results.jsonl"
    try:
        with results_path.open("a") as log:
            nxt = start(0) if n_batches else None
            for b in range(n_batches):
                chunk, texts, judged, fut = nxt
                nxt = start(b + 1) if b + 1 < n_batches else None
                verdicts = judge_texts(chunk, texts, judges, fut, numerics, judged)
                for idx, (p, v) in enumerate(zip(chunk, verdicts), start=b * batch):
                    _account(idx, p, v, stats, log, out_dir, shrink_budget if repros else None)
                if progress:
                    _progress(stats, n, time.perf_counter() - t_start)
    finally:
        ptxas_pool.shutdown(wait=False, cancel_futures=True)
    stats.wall = time.perf_counter() - t_start
    if progress:
        print(file=sys.stderr)
    return stats


def _account(idx: int, p: Program, v: differ.Verdicts, stats: RunStats, log, out_dir: Path,
             shrink_budget: float | None) -> None:
    """Compare one judged program, count it, write a repro for a new signature (unless
    ``shrink_budget`` is None), append its record."""
    for k, s in v.seconds.items():
        stats.seconds[k] += s
    t0 = time.perf_counter()
    family = differ.program_family(p)
    findings = differ.compare(p, v, family=family)
    stats.seconds["differ"] += time.perf_counter() - t0
    stats.programs += 1
    stats.illegal += differ.is_labelled(p)
    stats.ptxas_accepted += bool(v.ptxas is not None and v.ptxas.accepted)
    stats.families[family] += 1
    forms = _forms_in(p)
    stats.forms |= forms
    repro = None
    for f in findings:
        stats.buckets[f.signature] += 1
        if f.signature not in stats.repros and shrink_budget is not None:
            repro = _write_repro(p, v, f, out_dir, shrink_budget, stats)
            stats.repros[f.signature] = repro
    log.write(json.dumps(_record(idx, p, v, findings, repro, family, forms)) + "\n")
    log.flush()


def _write_repro(p: Program, v: differ.Verdicts, f: differ.Finding, out_dir: Path, budget: float, stats: RunStats) -> str:
    from fuzzptx.reduce import shrink, signature_predicate

    t0 = time.perf_counter()
    program = p
    if budget > 0:
        try:
            program = shrink(p, signature_predicate(f.signature), budget_s=budget).program
        except Exception as exc:  # a finding must never be lost because shrinking failed
            program = replace(p, notes=p.notes + (f"not shrunk: {type(exc).__name__}: {exc}",))
    stats.seconds["shrink"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    program = differ.finalize_repro(program, tuple(j for j in differ.CPU_JUDGES), f.signature,
                                    verdicts=v if program is p else None,
                                    text=p.to_ptx() if program is p else None)  # ptxas moved, not rerun
    stats.seconds["repro"] += time.perf_counter() - t0
    name = f"{len(stats.repros):03d}_" + "".join(c if c.isalnum() else "_" for c in f.signature)[:80] + ".ptx"
    path = out_dir / "repros" / name
    path.write_text(program.to_ptx())
    return str(path)


def _progress(stats: RunStats, total: int, elapsed: float) -> None:
    width = 30
    done = stats.programs
    bar = "#" * int(width * done / max(total, 1))
    rate = done / elapsed if elapsed else 0.0
    sys.stderr.write(f"\r[{bar.ljust(width)}] {done}/{total} programs  {rate:.1f}/s  findings {sum(stats.buckets.values())}  ")
    sys.stderr.flush()


def format_summary(s: dict, out_dir: Path) -> str:
    lines = [
        "fuzzptx run summary",
        f"  programs        {s['programs']} ({s['illegal_programs']} illegal by mutation), ptxas accepted {s['ptxas_accepted']}",
        f"  throughput      {s['programs_per_second']} programs/s over {s['wall_seconds']} s",
        "  stage seconds   " + ", ".join(f"{k} {v}" for k, v in s["stage_seconds"].items()),
    ]
    if s["overhead_vs_ptxas"] is not None:
        lines.append(f"  cost vs ptxas   {s['overhead_vs_ptxas']}x CPU (every stage but shrinking and repros, over ptxas time"
                     f" alone); wall {s['wall_over_ptxas']}x (ptxas runs beside the other judges)")
    lines.append(f"  coverage        {s['forms_reached']} catalogue forms; families: " + ", ".join(f"{k} {v}" for k, v in list(s["families"].items())[:8]))
    if s["findings_by_bucket"]:
        known = s.get("known") or {}
        if "new_findings" in s:
            lines.append(f"  new findings    {s['new_findings']} of {sum(s['findings_by_bucket'].values())} "
                         "(the rest match the known-findings file)")
        lines.append("  findings by bucket:")
        for sig, count in s["findings_by_bucket"].items():
            lines.append(f"    {count:5d}  {sig}" + (f"  (known: {known[sig]})" if sig in known else "")
                         + (f"  -> {s['repros'].get(sig)}" if s["repros"].get(sig) else ""))
    else:
        lines.append("  findings        none")
    lines.append(f"  results         {out_dir / 'results.jsonl'}")
    return "\n".join(lines)
