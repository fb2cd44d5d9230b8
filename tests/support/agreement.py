"""The ptxas model against the real ptxas 13.0.88 on three distributions (issue 28).

(i) the strategies sample (``differential.strategy_programs``: legal wgmma programs and labelled
illegal mutants, Hypothesis derandomized); (ii) campaign programs, exactly as ``fuzzptx run`` and
``fuzzptx campaign`` draw them (``fuzzptx.engine.generate.draw_direct`` at block seeds, the
illegal quarter included); (iii) real compiler-generated kernels: ``tests/data/triton/*.ptx``
(``tests/support/triton_corpus.py``), ``tests/data/nvcc/*.ptx`` (``tests/support/nvcc_corpus.py``)
and ``tests/data/cutlass/*.ptx`` (``tests/support/cutlass_corpus.py``).

A program agrees *exactly* when the accept flag, every diagnostic code and every C7517/C7519/error
line agree (``ptxas_compare.agreement``; a rejection -- a register-allocation failure too -- never
agrees with a predicted acceptance).  A program where the model predicts some code as "may"
(allocator-dependent) is counted apart, never as agreement: the figure is the exact agreement on the
"may"-free programs, printed beside the "may" rate, and the model's target is both (``TARGET``,
``MAY_CEILING``).  Per code, how often the model said yes, no and "may", and how often ptxas printed
it then.  A kernel the parser cannot read is counted and listed, not hidden.  ``PYTHONPATH=$PWD:tests python3 -m support.agreement`` writes the three sections into
``reports/checker_vs_ptxas.md`` and ``benchmarks/results/checker_vs_ptxas.json``.

Every record also holds the figures of a fixed subset, every ``SAMPLE_EVERY``-th program of each
distribution (``sample``), so that ``--sample`` can rerun that subset alone -- a tenth of the
ptxas and model time -- and be compared with the full run's sub-figure
(``python benchmarks/reproduce.py 5a --sample``).
"""
from __future__ import annotations

import argparse
import collections
import json
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from fuzzptx.engine.generate import block_seed, draw_direct
from fuzzptx.oracles.checker.ptxas_compare import agreement, code_verdicts, printed_codes
from fuzzptx.oracles.checker.ptxas_model import predict_module
from fuzzptx.oracles.ptxas import PINNED_VERSION, compile_batch
from fuzzptx.ptx.parse import parse

ROOT = Path(__file__).resolve().parents[2]
REAL_DIRS = ("tests/data/triton", "tests/data/nvcc", "tests/data/cutlass")
BEGIN, END = "<!-- agreement:begin -->", "<!-- agreement:end -->"
TARGET = 0.99  # exact agreement on the programs with no "may" code
MAY_CEILING = 0.10  # programs with a "may" code, at most
SAMPLE_EVERY = 10  # the fixed subset a full record scores apart and ``--sample`` reruns alone
CODES = ("C7508", "C7509", "C7510", "C7511", "C7512", "C7513", "C7514", "C7515", "C7516", "C7517", "C7518", "C7519",
         "C7520", "error")


@dataclass
class Tally:
    """One distribution's score."""

    name: str
    how: str
    n: int = 0  # programs scored (read by the parser)
    exact: int = 0  # exact, with no "may" code
    outside_may: int = 0  # exact outside the "may" codes (a "may" program counted as agreeing: the old figure)
    may: collections.Counter = field(default_factory=collections.Counter)  # "may" code -> programs ptxas printed it in
    may_predicted: int = 0  # programs with any "may" code predicted
    codes: dict = field(default_factory=lambda: collections.defaultdict(collections.Counter))
    # code -> Counter of (model's verdict "yes"/"no"/"may", ptxas printed it)
    mismatches: list = field(default_factory=list)  # (id, ptxas lines, model lines), "may" programs included
    unreadable: list = field(default_factory=list)  # (id, parser's message)
    ptxas_seconds: float = 0.0
    model_seconds: float = 0.0
    sample: Tally | None = None  # the same score on every SAMPLE_EVERY-th program (a full run's sub-figure)
    sampled_every: int = 1  # >1: this tally scored only every n-th program of the distribution (--sample)

    @property
    def may_free(self) -> int:
        return self.n - self.may_predicted

    @property
    def rate(self) -> float:
        """Exact agreement on the programs with no "may" code."""
        return self.exact / self.may_free if self.may_free else 1.0

    @property
    def may_rate(self) -> float:
        return self.may_predicted / self.n if self.n else 0.0

    @property
    def on_target(self) -> bool:
        return self.rate >= TARGET and self.may_rate <= MAY_CEILING

    def figure(self) -> str:
        """The agreement figure with its "may" rate beside it."""
        return (f"{self.exact}/{self.may_free} = {100 * self.rate:.2f}% exact on the \"may\"-free programs; "
                f"\"may\" on {self.may_predicted}/{self.n} = {100 * self.may_rate:.1f}%")

    def as_json(self) -> dict:
        return {"name": self.name, "how": self.how, "programs": self.n, "exact": self.exact,
                "may_free_programs": self.may_free, "exact_percent_of_may_free": round(100 * self.rate, 2),
                "may_predicted_programs": self.may_predicted, "may_percent": round(100 * self.may_rate, 2),
                "exact_outside_may_codes": self.outside_may, "on_target": self.on_target,
                "codes": {c: {f"{v}/{'printed' if p else 'silent'}": k for (v, p), k in sorted(cnt.items())}
                          for c, cnt in sorted(self.codes.items())},
                "may_printed_by_ptxas": dict(self.may), "mismatches": [list(m) for m in self.mismatches],
                "unreadable": [list(u) for u in self.unreadable],
                "ptxas_seconds": round(self.ptxas_seconds, 2), "model_seconds": round(self.model_seconds, 2),
                **({"sampled_every": self.sampled_every} if self.sampled_every > 1 else {}),
                **({"sample": {"every": SAMPLE_EVERY, **_figures(self.sample)}} if self.sample else {})}


def _figures(t: Tally) -> dict:
    """A tally's counts alone (a full record's sub-figure of its fixed subset)."""
    return {"programs": t.n, "exact": t.exact, "may_free_programs": t.may_free, "may_predicted_programs": t.may_predicted,
            "exact_outside_may_codes": t.outside_may, "mismatches": [m[0] for m in t.mismatches],
            "unreadable": [u[0] for u in t.unreadable]}


def score(name: str, how: str, items: list[tuple[str, str]], compile=None, every: int = 1) -> Tally:
    """(id, PTX text) pairs through the parser, the model and one batch of real ptxas (``compile``:
    ``compile_batch``, or results at hand: ``support.shared.StrategyDraw.compile``).  ``every`` > 1
    scores only every ``every``-th pair (``--sample``); otherwise the tally's ``sample`` holds the
    score of every ``SAMPLE_EVERY``-th pair, the subset a sampled run scores."""
    t = Tally(name, how, sampled_every=every)
    picked = [(k % SAMPLE_EVERY == 0, item) for k, item in enumerate(items) if k % every == 0]
    t.sample = Tally(name, how) if every == 1 else None
    readable = []
    t0 = time.perf_counter()
    for in_sample, (ident, text) in picked:
        try:
            readable.append((in_sample, ident, text, parse(text, ident)))
        except Exception as exc:  # noqa: BLE001 - a kernel the parser cannot read is listed, not hidden
            why = (ident, f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
            for tally in (t, t.sample if in_sample else None):
                if tally is not None:
                    tally.unreadable.append(why)
    preds = [predict_module(m) for _, _, _, m in readable]
    t.model_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    results = (compile or compile_batch)([text for _, _, text, _ in readable])
    t.ptxas_seconds = time.perf_counter() - t0
    for (in_sample, ident, _, _), res, pred in zip(readable, results, preds):
        for tally in (t, t.sample if in_sample else None):
            if tally is not None:
                _count(tally, ident, res, pred)
    return t


def _count(t: Tally, ident: str, res, pred) -> None:
    """One program's ptxas result and model prediction into ``t``."""
    a = agreement(res, pred)
    t.n += 1
    t.exact += a.certain
    t.outside_may += a.exact
    t.may_predicted += a.may
    t.may.update(a.may_printed)
    printed = printed_codes(res)
    for code, said in code_verdicts(pred, CODES).items():
        t.codes[code][(said, code in printed)] += 1
    if not a.exact:
        t.mismatches.append((ident, a.real, a.mine))


def strategies_items(n: int, programs: list | None = None) -> list[tuple[str, str]]:
    """``strategy_programs(n)`` as (id, text) pairs (``programs``: that draw, already at hand)."""
    from .differential import strategy_programs

    programs = strategy_programs(n) if programs is None else programs
    assert len(programs) == n
    return [(f"strategies#{i}", p.to_ptx()) for i, p in enumerate(programs)]


def campaign_items(seeds: list[int], per_seed: int) -> list[tuple[str, str]]:
    return [(f"seed{s}#{i}", p.to_ptx()) for s in seeds for i, p in enumerate(draw_direct(per_seed, block_seed(s, 0)))]


def real_items(dirs=REAL_DIRS, limit: int | None = None) -> list[tuple[str, str]]:
    files = sorted(f for d in dirs for f in (ROOT / d).glob("*.ptx"))
    return [(str(f.relative_to(ROOT)), f.read_text()) for f in files[:limit]]


def section(t: Tally) -> list[str]:
    lines = [f"### {t.name}", "", t.how, "",
             f"**{t.figure()}** (accept flag, every code, every C7517/C7519/error line; target: "
             f"{100 * TARGET:.0f}% exact, \"may\" on at most {100 * MAY_CEILING:.0f}% -- "
             + ("met" if t.on_target else "**not met**") + ").", "",
             f"Programs with a \"may\" code are not counted as agreement; outside the \"may\" codes "
             f"{t.outside_may}/{t.n} agree.  ptxas printed a \"may\" code: "
             + (", ".join(f"{c} in {k}" for c, k in sorted(t.may.items())) or "none") + ".", "",
             f"Time: model (parse + predict) {t.model_seconds:.1f} s, ptxas (one batch) {t.ptxas_seconds:.1f} s.", ""]
    if t.unreadable:
        lines += [f"Not read by the parser ({len(t.unreadable)}, not counted above):", "",
                  "| kernel | parser says |", "| --- | --- |"]
        lines += [f"| `{i}` | {why.replace('|', '/')} |" for i, why in t.unreadable] + [""]
    if t.mismatches:
        lines += [f"Mismatches ({len(t.mismatches)}):", "", "| program | ptxas | model |", "| --- | --- | --- |"]
        lines += [f"| `{i}` | {', '.join(r)} | {', '.join(m)} |" for i, r, m in t.mismatches] + [""]
    else:
        lines += ["Mismatches: none.", ""]
    return lines


def code_table(tallies: list[Tally]) -> list[str]:
    """Per code and distribution: how often the model said yes, no and "may", each with how often
    ptxas printed the code then (codes neither side ever names are left out)."""
    lines = ["### What the model says of each code", "",
             "Per code: programs where the model said *yes*, *no* or *\"may\"*, each as `programs (ptxas printed it in)`.", "",
             "| code | distribution | yes | no | \"may\" |", "| --- | --- | --- | --- | --- |"]
    for code in CODES:
        for t in tallies:
            cnt = t.codes.get(code, collections.Counter())
            if not any(k for (v, p), k in cnt.items() if v != "no" or p):
                continue
            cell = [f"{cnt[(v, True)] + cnt[(v, False)]} ({cnt[(v, True)]})" for v in ("yes", "no", "may")]
            lines.append(f"| {code} | {t.name.split(' ', 1)[1] if ' ' in t.name else t.name} | " + " | ".join(cell) + " |")
    return lines + [""]


def write_report(tallies: list[Tally], path: Path, command: str) -> None:
    """The three sections between the report's agreement markers (after its title when absent)."""
    body = [BEGIN, "## Agreement on three distributions (issues 28, 42)", "",
            f"Generated by `{command}` on {time.strftime('%Y-%m-%d')} ({platform.machine()}, ptxas {PINNED_VERSION}). "
            "The model predicts every code yes or no, save the register allocator's (C7511, C7512, C7513) where "
            "it cannot decide: there it says \"may\" (`oracles/checker/ptxas_pressure.py` `allocator_may` says "
            "where, measured).  A program with a \"may\" code is counted apart, never as agreement; a "
            "register-allocation failure is a rejection like any other (the model does not predict one).  "
            f"Target: {100 * TARGET:.0f}% exact on the \"may\"-free programs and \"may\" on at most "
            f"{100 * MAY_CEILING:.0f}% of the programs.", "",
            "| distribution | programs | \"may\" | exact of \"may\"-free | target | exact outside \"may\" codes | not parsed |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    body += [f"| {t.name} | {t.n} | {t.may_predicted} ({100 * t.may_rate:.1f}%) | {t.exact}/{t.may_free} = "
             f"{100 * t.rate:.2f}% | {'met' if t.on_target else 'not met'} | {t.outside_may}/{t.n} | {len(t.unreadable)} |"
             for t in tallies] + [""]
    body += code_table(tallies)
    for t in tallies:
        body += section(t)
    body.append(END)
    text = path.read_text() if path.exists() else "# Checker ptxas model vs real ptxas 13.0.88\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + "\n".join(body) + rest.split(END, 1)[1]
    else:
        title, _, rest = text.partition("\n")
        text = title + "\n\n" + "\n".join(body) + "\n" + rest
    path.write_text(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--strategies", type=int, default=1000, help="programs of the strategies sample")
    ap.add_argument("--seeds", default="1-10", help="campaign block seeds, a range A-B or a list")
    ap.add_argument("--per-seed", type=int, default=100, help="campaign programs per seed")
    ap.add_argument("--report", help="the report to write (default reports/checker_vs_ptxas.md; none with --sample)")
    ap.add_argument("--json", help="the record to write (default benchmarks/results/checker_vs_ptxas.json; "
                                   "none with --sample)")
    ap.add_argument("--sample", action="store_true",
                    help=f"score only every {SAMPLE_EVERY}th program of each distribution (the same programs drawn): "
                         "the subset whose figures a full record holds under 'sample'")
    a = ap.parse_args(argv)
    every = SAMPLE_EVERY if a.sample else 1
    if not a.sample:  # a sampled run never writes over the full run's report and record
        a.report = a.report or str(ROOT / "reports/checker_vs_ptxas.md")
        a.json = a.json or str(ROOT / "benchmarks/results/checker_vs_ptxas.json")
    command = "PYTHONPATH=$PWD:tests python3 -m support.agreement " + " ".join(sys.argv[1:] if argv is None else argv)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from records import Run, _load, commit  # the one record format (benchmarks/records.py)

    run = Run(command.strip(), time.time(), _load(), commit())  # before the report is written: the tree measured
    lo, _, hi = a.seeds.partition("-")
    seeds = list(range(int(lo), int(hi) + 1)) if hi else [int(x) for x in a.seeds.split(",")]
    tallies = [
        score("(i) strategies sample", f"{a.strategies} programs drawn with Hypothesis (derandomized) from "
              "`wgmma_programs() | illegal_programs()` (`tests/support/differential.py` `strategy_programs`).",
              strategies_items(a.strategies), every=every),
        score("(ii) campaign programs", f"{a.per_seed} programs at each of block seeds `block_seed(s, 0)` for s in "
              f"{seeds[0]}..{seeds[-1]}, drawn as `fuzzptx run`/`campaign` draw them (`draw_direct`, a quarter illegal).",
              campaign_items(seeds, a.per_seed), every=every),
        score("(iii) real compiler-generated kernels", "Every `.ptx` under " + ", ".join(f"`{d}/`" for d in REAL_DIRS)
              + " (Triton: `tests/support/triton_corpus.py`; nvcc 13.0: `tests/support/nvcc_corpus.py`).", real_items(), every=every),
    ]
    for t in tallies:
        print(f"{t.name}: {t.figure()} ({'met' if t.on_target else 'NOT met'}); exact outside the may codes "
              f"{t.outside_may}/{t.n}; may printed {dict(t.may)}; unreadable {len(t.unreadable)}"
              + (f" (every {every}th program)" if every > 1 else f"; every {SAMPLE_EVERY}th: {t.sample.figure()}"))
    meta = run.meta()
    if a.report:
        write_report(tallies, Path(a.report), command.strip())
    if a.json:
        Path(a.json).write_text(json.dumps({"targets": {"exact_of_may_free": TARGET, "may_ceiling": MAY_CEILING},
                                            "distributions": [t.as_json() for t in tallies], "meta": meta}, indent=1) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
