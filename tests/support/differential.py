"""Differential test of the ptxas model against the real ptxas on generated pipeline programs.

``run_sample(n, seed)`` renders ``pipegen.program(seed + i)`` for i < n, asks both the model and
ptxas (batched), and scores exact agreement (accept flag, codes, and lines for C7517/C7519 and
errors) plus per-code presence agreement.  ``PYTHONPATH=tests python -m support.differential
--n 500 --out reports/checker_vs_ptxas.md`` writes the report.
"""
from __future__ import annotations

import argparse
import collections
import time
from dataclasses import dataclass, field

from fuzzptx.oracles.checker.ptxas_compare import agreement
from fuzzptx.oracles.checker.ptxas_model import predict_module
from fuzzptx.ptx.parse import parse

from .pipegen import describe, program, render

CODES = ("C7514", "C7515", "C7517", "C7518", "C7519", "C7520")


@dataclass
class Sample:
    n: int
    seed: int
    agree: int = 0
    ptxas_seconds: float = 0.0
    check_seconds: float = 0.0
    code_table: dict = field(default_factory=dict)  # code -> Counter of (real has, predicted has)
    mismatches: list = field(default_factory=list)  # (seed, description, real, predicted)

    @property
    def rate(self) -> float:
        return self.agree / self.n if self.n else 1.0


def run_sample(n: int = 200, seed: int = 0) -> Sample:
    progs = [program(seed + i) for i in range(n)]
    return _score(Sample(n, seed), progs, [render(p) for p in progs], [f"gen{seed + i}.ptx" for i in range(n)],
                  [seed + i for i in range(n)], describe)


def strategy_programs(n: int) -> list:
    """``n`` distinct programs drawn deterministically from the strategies package: legal wgmma
    programs and their named illegal mutations (``Program``; ``mutation_of`` says which rule each
    one breaks).  Hypothesis's derandomized search can return one example many times; a repeat
    would weigh one program as many, so repeats are dropped and more are drawn."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    from fuzzptx.strategies.mutations import illegal_programs
    from fuzzptx.strategies.programs import wgmma_programs

    out: list = []
    seen: set[str] = set()

    @settings(max_examples=3 * n, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.one_of(wgmma_programs(), illegal_programs()))
    def draw(p):
        text = p.to_ptx()
        if len(out) < n and text not in seen:
            seen.add(text)
            out.append(p)

    from fuzzptx.strategies.direct import reproducible

    with reproducible():  # the same sample whatever else the process imported (pytest-xdist workers)
        draw()
    return out[:n]


def run_strategies_sample(n: int = 2000, toolchain=None, draw=None) -> Sample:
    """The same scoring over programs from the strategies package (``describe`` = mutation name);
    ``toolchain``: another ptxas release to score against (programs it cannot read are left out);
    ``draw``: ``strategy_programs(n)`` with the pinned ptxas's results at hand (``support.shared.StrategyDraw``)."""
    from fuzzptx.strategies.mutations import mutation_of

    assert draw is None or (toolchain is None and len(draw.programs) == n)
    progs = strategy_programs(n) if draw is None else draw.programs
    if toolchain is not None:
        from fuzzptx.judges.builtin import ReleasePtxasJudge

        judge = ReleasePtxasJudge(toolchain)
        progs = [p for p in progs if judge.not_applicable(p) is None]

    def label(prog) -> str:
        """The mutation's name; a program labelled legal that the spec layer faults says so (a
        strategy labelling bug: what ptxas does with it is outside the model's brief)."""
        m = mutation_of(prog)
        if m:
            return m.name
        from fuzzptx.oracles.checker import check_module

        rules = sorted({f.rule for f in check_module(prog.module, layers=("spec",))})
        return f"legal (but spec: {', '.join(rules)})" if rules else "legal"

    return _score(Sample(len(progs), -1), progs, [p.to_ptx() for p in progs], [f"strat{i}.ptx" for i in range(len(progs))],
                  list(range(len(progs))), label, ptxas=toolchain.ptxas if toolchain is not None else None,
                  compile=draw.compile if draw is not None else None)


def _score(s: Sample, progs: list, texts: list[str], names: list[str], ids: list[int], describe_, ptxas=None,
           compile=None) -> Sample:
    """Real ptxas (one batch) against the model on the same texts: agreement, per-code table, mismatches.
    ``compile``: what gives the pinned ptxas's results (``compile_batch``, or results at hand)."""
    from fuzzptx.oracles.ptxas import compile_batch

    t0 = time.perf_counter()
    results = compile_batch(texts, ptxas=ptxas) if compile is None else compile(texts)
    s.ptxas_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    preds = [predict_module(parse(t, name)) for t, name in zip(texts, names)]
    s.check_seconds = time.perf_counter() - t0
    s.code_table = {c: collections.Counter() for c in CODES}
    for ident, prog, res, pred in zip(ids, progs, results, preds):
        a = agreement(res, pred)  # the "may" (allocator-dependent) codes aside
        real, mine = a.real, a.mine
        if a.exact:
            s.agree += 1
        else:
            s.mismatches.append((ident, describe_(prog), real, mine))
        for c in CODES:
            s.code_table[c][(any(c in x for x in real), any(c in x for x in mine))] += 1
    return s


def _sample_section(title: str, how: str, s: Sample) -> list[str]:
    lines = [
        f"## {title}",
        "",
        how,
        "",
        f"**Exact agreement: {s.agree}/{s.n} = {100 * s.rate:.1f}%** (accept flag, every C-code, and the "
        "line of every C7517/C7519 and error).",
        "",
        f"Time: ptxas (batched) {s.ptxas_seconds:.2f} s = {1000 * s.ptxas_seconds / max(s.n, 1):.1f} ms/program; "
        f"model (parse + predict) {s.check_seconds:.2f} s = {1000 * s.check_seconds / max(s.n, 1):.2f} ms/program.",
        "",
        "| code | both | neither | ptxas only (missed) | model only (false alarm) | presence agreement |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for c in CODES:
        t = s.code_table.get(c, {})
        both, none = t.get((True, True), 0), t.get((False, False), 0)
        miss, extra = t.get((True, False), 0), t.get((False, True), 0)
        lines.append(f"| {c} | {both} | {none} | {miss} | {extra} | {100 * (both + none) / max(s.n, 1):.1f}% |")
    acc = sum(1 for _, _, r, m in s.mismatches if _rejects(r) != _rejects(m))
    lines += ["", f"Accept/reject agreement: {s.n - acc}/{s.n} = {100 * (s.n - acc) / max(s.n, 1):.1f}%.", ""]
    reasons = collections.Counter(reason(r, m) for _, _, r, m in s.mismatches)
    lines += ["Disagreements by reason:", "", "| reason | programs |", "| --- | --- |"]
    lines += [f"| {why} | {k} |" for why, k in reasons.most_common()]
    # (the causes were found on the strategies sample, seed -1; pipegen's programs differ)
    known = [(why, CAUSES[why]) for why, _ in reasons.most_common() if why in CAUSES] if s.seed == -1 else []
    if known:
        lines += ["", "What is known of them (shrunk with `fuzzptx shrink --keep checker!=ptxas|...` and probed "
                      "with small kernels):", "", "| reason | what we know |", "| --- | --- |"]
        lines += [f"| {why} | {text} |" for why, text in known]
    shown = s.mismatches if len(s.mismatches) <= 60 else s.mismatches[:60]
    lines += ["", f"Disagreements ({'all' if shown is s.mismatches else 'first 60'}):", "",
              "| # | program | ptxas | model | reason |", "| --- | --- | --- | --- | --- |"]
    for seed, desc, real, mine in shown:
        lines.append(f"| {seed} | `{desc}` | {', '.join(real)} | {', '.join(mine)} | {reason(real, mine)} |")
    return lines + [""]


CAUSES = {
    "false C7517": "beside C7509 (a direct, then an indirect call): a later wgmma's accumulator read again in a "
                   "loop's second iteration while the group committed at the end of the first is in flight; ptxas "
                   "reports no wait there. Small kernels with the same shape agree with the model "
                   "(feed_read_in_one_trip_loop, exit_wait_*_c7509): the trigger is not isolated yet",
    "false C7514": "wait_skipped_on_a_path / no_wait mutants: a read after a loop that waited on some paths only; "
                   "ptxas places one more wait where the model serialises the function",
    "missed C7517": "fence_skipped_on_a_path mutants and one legal program: a wait ptxas adds after a re-armed stage "
                    "that the model does not place",
    "missed C7518": "bra.uni on a predicate of %tid.x >> 7 (warpgroup-uniform, so the model calls it uniform) "
                    "around waits: ptxas still reports a dependence on a divergent path",
}

KNOWN = {"C7511": "register pressure (C7511) other than a rewrite after a scale-d 0 wgmma or a read of an "
                  "uncommitted wgmma's constant accumulators is not modelled",
         "C7512": "C7512 between 224 and 600 accumulator registers (ptxas_pressure.C7512_MAY_FROM, C7512_FROM) "
                  "depends on the allocator's order and sizes: a \"may\" there",
         "C7513": "C7513 beyond an A register written in flight in a loop that brings it back to a wgmma is not pinned"}


def _rejects(diags: list[str]) -> bool:
    return any(d.startswith("error") for d in diags)


def reason(real: list[str], mine: list[str]) -> str:
    """Why model and ptxas disagree, in a few words (for the report's grouping)."""
    code = lambda d: d.split()[1] if d.startswith("info") else "error"  # noqa: E731
    rc, mc = {code(d) for d in real if d != "none"}, {code(d) for d in mine if d != "none"}
    for c in sorted(rc - mc):
        if c in KNOWN:
            return KNOWN[c]
    if rc - mc:
        return "missed " + ", ".join(sorted(rc - mc))
    if mc - rc:
        return "false " + ", ".join(sorted(mc - rc))
    diff = sorted({code(d) for d in set(real) ^ set(mine)})
    return "line placement of " + ", ".join(diff)


def behaviours_table(directory) -> list[str]:
    """The recorded experiments as a table: what each kernel does and what ptxas printed."""
    import pathlib

    from .experiments import header

    lines = ["## ptxas 13.0.88 behaviours established by experiment", "",
             "Each row is a file in `tests/data/checker/`; `tests/test_checker_ptxas.py` re-runs ptxas on it. "
             "Serialisation codes carry no line; C7517/C7519 lines are the file's lines.", "",
             "| experiment | kernel | ptxas printed |", "| --- | --- | --- |"]
    for p in sorted(pathlib.Path(directory).glob("*.ptx")):
        text = p.read_text()
        desc = (header(text, "EXPERIMENT") or [""])[0]
        rec = ", ".join(header(text, "PTXAS"))
        gap = header(text, "MODEL")
        lines.append(f"| `{p.stem}` | {desc} | {rec}{' (model: ' + gap[0] + ')' if gap else ''} |")
    return lines + [""]


def report_markdown(samples: list[tuple[str, str, Sample]], experiments_dir=None) -> str:
    lines = ["# Checker ptxas model vs real ptxas 13.0.88", "",
             "Generated by `PYTHONPATH=tests python -m support.differential` (see its `--help`).", ""]
    for title, how, s in samples:
        lines += _sample_section(title, how, s)
    if experiments_dir is not None:
        lines += behaviours_table(experiments_dir)
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=500, help="pipegen programs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--strategies", type=int, default=0, help="programs from the strategies package")
    ap.add_argument("--experiments", default="tests/data/checker")
    ap.add_argument("--out", default=None)
    ap.add_argument("--ptxas", default=None, metavar="SPEC",
                    help="also score the strategies sample against each ptxas release of SPEC (the model is "
                         "of 13.0.88; the table says how far each other release agrees with it)")
    a = ap.parse_args(argv)
    samples = []
    s = run_sample(a.n, a.seed)
    samples.append(("Generated pipelines (pipegen)", f"{a.n} programs `pipegen.program(seed)` for seed in "
                    f"{a.seed}..{a.seed + a.n - 1}: fence / wgmma / commit / wait sequences with random omissions, "
                    "insertions, uniform and divergent branches, loops and guards.", s))
    print(f"pipegen: agreement {s.agree}/{s.n} = {100 * s.rate:.1f}%")
    if a.strategies:
        t = run_strategies_sample(a.strategies)
        samples.append(("Programs from the strategies package", f"{t.n} programs drawn with Hypothesis "
                        "(derandomized) from `wgmma_programs() | illegal_programs()`: legal multi-unit wgmma "
                        "kernels and their named mutations.", t))
        print(f"strategies: agreement {t.agree}/{t.n} = {100 * t.rate:.1f}%")
    text = report_markdown(samples, a.experiments)
    if a.ptxas and a.strategies:
        from fuzzptx.oracles import toolchains

        rows = ["", "## Agreement by ptxas release", "",
                f"The model is of ptxas 13.0.88 (`CheckerJudge.MODELS`); against other releases its verdicts "
                f"are silent in runs (no `checker!=ptxas` finding), and this table says how far each release "
                f"agrees with it on the strategies sample ({a.strategies} programs; a program whose `.version` "
                "or target a release cannot read is left out of that release's count).", "",
                "| release | programs | exact agreement |", "| --- | --- | --- |"]
        for tc in toolchains.resolve(a.ptxas):
            r = run_strategies_sample(a.strategies, tc)
            rows.append(f"| {tc.release} | {r.n} | {r.agree}/{r.n} = {100 * r.rate:.1f}% |")
            print(f"strategies @ {tc.release}: agreement {r.agree}/{r.n} = {100 * r.rate:.1f}%")
        text = text.rstrip("\n") + "\n" + "\n".join(rows) + "\n"
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
