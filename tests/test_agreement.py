"""The ptxas model against the real ptxas 13.0.88 on a small, fast sample of each of the three
distributions (issues 28, 42): exact on at least 99% of the programs with no "may" code, and a "may"
code on at most 10% of them (``support.agreement.TARGET``, ``MAY_CEILING``).  The full figures are in
reports/checker_vs_ptxas.md (``PYTHONPATH=$PWD:tests python3 -m support.agreement``).  A program with a
"may" (allocator-dependent) code is counted apart, never as agreement; a rejection never agrees with a
predicted acceptance."""
from __future__ import annotations

from fuzzptx.judges.base import CheckerVerdict, Verdicts
from fuzzptx.judges.builtin import CheckerJudge
from fuzzptx.oracles.checker.findings import PredictedDiag, PredictedDiagnostics
from fuzzptx.oracles.checker.ptxas_compare import agreement
from fuzzptx.oracles.ptxas import PtxasResult
from fuzzptx.oracles.ptxas_diag import Diagnostic
from support.agreement import MAY_CEILING, TARGET, campaign_items, code_table, real_items, score, strategies_items


def _message(t) -> str:
    return f"{t.name}: {t.figure()}; " + "; ".join(f"{i}: ptxas {r} model {m}" for i, r, m in t.mismatches[:6])


def test_strategies_sample(strategy_sample):
    draw = strategy_sample(60)
    t = score("strategies", "", strategies_items(60, draw.programs), draw.compile)
    assert t.n == 60 and t.rate >= TARGET and t.may_rate <= MAY_CEILING, _message(t)


def test_campaign_programs():
    """The report's first campaign block (seed 1), drawn as ``fuzzptx run`` draws it, the illegal
    quarter included: at least 99% exact (the record's misses, seed4#35, seed4#85 and seed5#90, came
    from the draws before the code around the tensor cores joined the generator; since then seed 1's
    #85 is a miss, an extra C7519 one line below ptxas's: reports/checker_vs_ptxas.md, row 5b)."""
    t = score("campaign", "", campaign_items([1], 100))
    assert t.n == 100 and t.rate >= TARGET and t.may_rate <= MAY_CEILING, _message(t)


def test_real_compiler_generated_kernels():
    """Every nvcc kernel and the first Triton ones; the kernels the parser cannot read yet (TMA
    operands) are listed by the score, never counted as agreement.  Their accumulators take fewer
    registers than any C7512 needs: no "may" code (the model says no, and ptxas agrees)."""
    items = real_items(("tests/data/nvcc",)) + real_items(("tests/data/triton",), limit=16)
    t = score("real", "", items)
    assert t.n + len(t.unreadable) == len(items) and t.n >= 16
    assert t.rate >= TARGET and t.may_predicted == 0, _message(t)


def test_the_recorded_misses_agree_now():
    """Four strategies programs the 8bfa4ad record lists as misses (tests/data/agreement_misses/
    README.md says what ptxas printed and why), against real ptxas: exact, no "may"."""
    items = real_items(("tests/data/agreement_misses",))
    t = score("misses", "", items)
    assert t.n == len(items) == 4 and t.exact == 4 and t.may_predicted == 0, _message(t)


# ------------------------------------------------------------ a "may" is counted apart


def _ptxas(*codes: str, accepted: bool = True, message: str = "") -> PtxasResult:
    diags = tuple(Diagnostic("info", c, None, f"{c} message", "k") for c in codes)
    if not accepted:
        diags += (Diagnostic("error", None, None, message, "k"),)
    return PtxasResult(accepted, diags, None, 0.0, 0 if accepted else 255, False)


def _model(*codes: str, may: tuple[str, ...] = ()) -> PredictedDiagnostics:
    return PredictedDiagnostics(True, tuple(PredictedDiag(c, None, "info", "k", c) for c in codes), may)


def test_a_may_program_is_counted_apart():
    a = agreement(_ptxas("C7512"), _model(may=("C7512",)))
    assert a.exact and a.may and not a.certain and a.may_printed == ("C7512",)
    assert not agreement(_ptxas(), _model(may=("C7512", "C7511"))).certain
    assert agreement(_ptxas("C7512"), _model("C7512")).certain
    assert not agreement(_ptxas("C7512"), _model()).exact  # not a "may": a miss
    assert not agreement(_ptxas("C7514", "C7512"), _model(may=("C7512",))).exact  # other codes stay exact


def test_a_register_allocation_failure_never_agrees_with_an_acceptance():
    alloc = _ptxas(accepted=False, message="Register allocation failed with register count of '255'")
    assert not agreement(alloc, _model(may=("C7512",))).exact
    assert not agreement(alloc, _model()).exact


def test_the_score_counts_may_programs_apart_and_per_code(monkeypatch):
    """Three programs: one exact, one with a "may" code (whatever ptxas printed), one miss: 1/2 exact
    on the "may"-free programs, "may" on 1/3; per code, the model's yes/no/"may" beside ptxas's."""
    import support.agreement as ag

    got = {"a": (_ptxas("C7512"), _model("C7512")), "b": (_ptxas("C7512"), _model(may=("C7511", "C7512"))),
           "c": (_ptxas("C7510"), _model())}
    monkeypatch.setattr(ag, "parse", lambda text, ident: text)
    monkeypatch.setattr(ag, "predict_module", lambda key: got[key][1])
    monkeypatch.setattr(ag, "compile_batch", lambda texts: [got[k][0] for k in texts])
    t = score("x", "", [(k, k) for k in got])
    assert (t.n, t.exact, t.may_predicted, t.may_free, t.outside_may) == (3, 1, 1, 2, 2)
    assert t.rate == 0.5 and not t.on_target and "1/2 = 50.00%" in t.figure() and "1/3 = 33.3%" in t.figure()
    assert t.codes["C7512"] == {("yes", True): 1, ("may", True): 1, ("no", False): 1}
    assert "| C7512 | x | 1 (1) | 1 (0) | 1 (1) |" in code_table([t])


def test_checker_judge_reports_no_finding_for_a_may_code():
    judge = CheckerJudge()

    def findings(real, pred):
        v = Verdicts()
        v["ptxas"] = real
        v["checker"] = CheckerVerdict([], pred)
        return [f.signature for f in judge.findings(None, v, "wgmma")]

    assert findings(_ptxas("C7512"), _model(may=("C7512",))) == []
    assert findings(_ptxas(), _model(may=("C7511",))) == []
    assert findings(_ptxas("C7512"), _model()) == ["checker!=ptxas|missed:C7512|wgmma"]
    assert findings(_ptxas("C7514", "C7512"), _model(may=("C7512",))) == ["checker!=ptxas|missed:C7514|wgmma"]


def test_a_sampled_run_scores_the_subset_a_full_run_holds(monkeypatch):
    """``--sample`` scores every SAMPLE_EVERY-th program alone; the full run's ``sample`` holds the same
    counts for those programs (what ``benchmarks/reproduce.py 5a --sample`` compares)."""
    import support.agreement as ag

    kinds = [(_ptxas("C7512"), _model("C7512")), (_ptxas("C7512"), _model(may=("C7512",))), (_ptxas("C7510"), _model())]
    got = {f"p{k}": kinds[{0: 0, 3: 1, 6: 2, 9: 0}.get(k, k % 3)] for k in range(12)}  # sample: exact, may, miss, exact
    monkeypatch.setattr(ag, "SAMPLE_EVERY", 3)
    monkeypatch.setattr(ag, "parse", lambda text, ident: text)
    monkeypatch.setattr(ag, "predict_module", lambda key: got[key][1])
    monkeypatch.setattr(ag, "compile_batch", lambda texts: [got[k][0] for k in texts])
    full, sub = score("x", "", [(k, k) for k in got]), score("x", "", [(k, k) for k in got], every=3)
    assert (full.n, sub.n, sub.sample, full.sample.n) == (12, 4, None, 4)  # p0, p3, p6, p9
    assert [m[0] for m in sub.mismatches] == [m[0] for m in full.sample.mismatches] == ["p6"]
    assert (sub.exact, sub.may_predicted) == (full.sample.exact, full.sample.may_predicted) == (2, 1)
    assert full.as_json()["sample"]["exact"] == 2 and sub.as_json()["sampled_every"] == 3
