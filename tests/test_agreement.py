"""The ptxas model against the real ptxas 13.0.88 on a small, fast sample of each of the three
distributions (issue 28): exact on at least 99% outside the "may" codes.  The full figures are in
reports/checker_vs_ptxas.md (``PYTHONPATH=$PWD:tests python3 -m support.agreement``); a "may"
(allocator-dependent) code never counts as a disagreement, either way."""
from __future__ import annotations

from fuzzptx.judges.base import CheckerVerdict, Verdicts
from fuzzptx.judges.builtin import CheckerJudge
from fuzzptx.oracles.checker.findings import PredictedDiag, PredictedDiagnostics
from fuzzptx.oracles.checker.ptxas_compare import agreement
from fuzzptx.oracles.ptxas import PtxasResult
from fuzzptx.oracles.ptxas_diag import Diagnostic
from support.agreement import campaign_items, real_items, score, strategies_items

FLOOR = 0.99


def _message(t) -> str:
    return f"{t.name}: {t.exact}/{t.n}; " + "; ".join(f"{i}: ptxas {r} model {m}" for i, r, m in t.mismatches[:6])


def test_strategies_sample():
    t = score("strategies", "", strategies_items(60))
    assert t.n == 60 and t.rate >= FLOOR, _message(t)


#: The campaign distribution meets the target (998/1000 in reports/checker_vs_ptxas.md, benchmarks/README.md
#: row 5b) and this block scores 99/100: its one miss is seed1#84 (an exit's wait beside C7510, recorded as
#: tests/data/checker/exit_wait_fence_then_branch_over_indirect_call_and_empty_group.ptx).
CAMPAIGN_FLOOR = 0.99


def test_campaign_programs():
    """The report's first campaign block (seed 1), drawn as ``fuzzptx run`` draws it, the illegal
    quarter included."""
    t = score("campaign", "", campaign_items([1], 100))
    assert t.n == 100 and t.rate >= CAMPAIGN_FLOOR, _message(t)


def test_real_compiler_generated_kernels():
    """Every nvcc kernel and the first Triton ones; the kernels the parser cannot read yet (TMA
    operands) are listed by the score, never counted as agreement."""
    items = real_items(("tests/data/nvcc",)) + real_items(("tests/data/triton",), limit=16)
    t = score("real", "", items)
    assert t.n + len(t.unreadable) == len(items) and t.n >= 16
    assert t.rate >= FLOOR, _message(t)
    assert t.may_predicted >= 8  # big real kernels are where the allocator codes are a "may"


# ------------------------------------------------------------ a "may" never counts either way


def _ptxas(*codes: str, accepted: bool = True, message: str = "") -> PtxasResult:
    diags = tuple(Diagnostic("info", c, None, f"{c} message", "k") for c in codes)
    if not accepted:
        diags += (Diagnostic("error", None, None, message, "k"),)
    return PtxasResult(accepted, diags, None, 0.0, 0 if accepted else 255, False)


def _model(*codes: str, may: tuple[str, ...] = ()) -> PredictedDiagnostics:
    return PredictedDiagnostics(True, tuple(PredictedDiag(c, None, "info", "k", c) for c in codes), may)


def test_may_codes_never_disagree():
    assert agreement(_ptxas("C7512"), _model(may=("C7512",))).exact
    assert agreement(_ptxas("C7512"), _model(may=("C7512",))).may_printed == ("C7512",)
    assert agreement(_ptxas(), _model(may=("C7512", "C7511"))).exact
    assert not agreement(_ptxas("C7512"), _model()).exact  # not a "may": a miss
    assert not agreement(_ptxas("C7514", "C7512"), _model(may=("C7512",))).exact  # other codes stay exact
    alloc = _ptxas(accepted=False, message="Register allocation failed with register count of '255'")
    assert agreement(alloc, _model(may=("C7512",))).exact and not agreement(alloc, _model()).exact


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
