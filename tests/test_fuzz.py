"""Fuzz tests over ``fuzzptx.strategies.programs()`` through the plugin (``pytest -n auto``-able).

CI (profile ``ci``): no judge may crash or time out on ``CI_CRASH_EXAMPLES`` legal programs (the
profile's 60 with ``--fuzzptx-examples 60``, a full run or the nightly), and the reference, the
checker, ptxas and the SASS verifier agree on every one of a fixed-seed sample (``CI_EXAMPLES``
programs, about half a minute on two cores; bugs of the ledger ``reports/known_bugs.toml`` excepted).
Nightly (``--fuzzptx-profile nightly --fuzzptx-judges reference,checker,ptxas,hardware``,
``pytest -n <gpus>``): every judge must agree on every program; a failure leaves a repro.
"""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
from hypothesis import given, seed

import fuzzptx.strategies as S
from fuzzptx.pytest_plugin import check_program

CRASHES = ("checker:crash", "reference:crash", "ptxas:timeout", "hardware:fault")
CI_JUDGES = ("reference", "checker", "ptxas", "sass")
CI_EXAMPLES = 24
CI_CRASH_EXAMPLES = 30  # fresh random programs each run; the agreement test's 24 fail on a crash too
CI_SEED = 42
KNOWN = Path(__file__).resolve().parents[1] / "reports" / "known_bugs.toml"


def test_no_judge_crashes_on_legal_programs(fuzzptx_config, fuzzptx_full, request):
    from hypothesis import settings

    asked = fuzzptx_full or fuzzptx_config.profile != "ci" or request.config.getoption("--fuzzptx-examples")
    examples = fuzzptx_config.examples if asked else CI_CRASH_EXAMPLES

    @settings(fuzzptx_config.settings(), max_examples=examples)
    @given(S.programs())
    def run(program):
        check_program(program, fuzzptx_config, fail_on=CRASHES)

    run()


def _agreement_config(fuzzptx_config):
    """The nightly's own configuration; in CI the four CPU judges on a small fixed sample, with
    the committed known-bug ledger (a known ptxas miscompile is no disagreement to fix here)."""
    if fuzzptx_config.profile == "nightly":
        return fuzzptx_config
    from fuzzptx.judges import registry
    from fuzzptx.triage.known import load_known

    config = copy.copy(fuzzptx_config)
    config.judges = registry.parse(",".join(CI_JUDGES), "CI_JUDGES")
    config.examples = CI_EXAMPLES
    config.fail_on = None
    config.known = fuzzptx_config.known or load_known(KNOWN)
    return config


def test_judges_agree_on_legal_programs(fuzzptx_config):
    config = _agreement_config(fuzzptx_config)
    judged = []

    def judge(program):
        judged.append(program)
        check_program(program, config)

    run = config.settings()(given(S.programs())(judge))
    if config is not fuzzptx_config:
        run = seed(CI_SEED)(run)  # CI: the same programs every run; the nightly draws its own
    run()
    assert len(judged) >= min(config.examples, 10), "Hypothesis judged fewer programs than asked"


# ----------------------------------------------------------------- the fuzz run's judging path


def _batch(b: int, seed: int, batch: int, n: int, illegal_share: float):
    """Batch ``b`` of a run: block ``b`` of the campaign with the same seed, cut at ``n`` programs."""
    from fuzzptx.engine.generate import block_seed, draw_direct

    return draw_direct(min(batch, n - b * batch), block_seed(seed, b), illegal_share)


def _drawn(n: int = 8, seed: int = 11):
    return _batch(0, seed, n, n, 0.5)  # half of them mutated (illegal, labelled)


def test_the_judge_runs_the_ptxas_model_once_for_the_checkers_two_verdicts():
    """``differ.judge`` takes the checker's findings and its ptxas prediction from one model run
    (``check_and_predict``); they must be what the two separate calls say."""
    from fuzzptx.judges import differ
    from fuzzptx.oracles.checker import check_module, predict_ptxas

    seen_rejected = False
    for p in _drawn(12, 4):
        judged, text = differ.as_judged(p)
        v = differ.judge(p, ("checker",), text=text, judged=judged)
        assert v.checker == check_module(judged.module)
        assert v.predicted == predict_ptxas(judged.module)
        seen_rejected |= not v.predicted.accepted
    assert seen_rejected, "no mutant the model rejects among the drawn programs: the error path went untested"


def test_pipelined_run_records_what_the_judges_say_one_by_one(tmp_path):
    """ptxas in the background and the reference only on what ptxas accepted: every record says
    what ``differ.judge`` says of the same program alone (minus the reference where ptxas rejected)."""
    import json

    from fuzzptx.engine.run import run
    from fuzzptx.judges import differ

    n, batch, seed = 6, 4, 2
    summ = run(n, seed, differ.CPU_JUDGES, tmp_path, batch=batch, progress=False, repros=False)
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [(r["block"], r["index"]) for r in records] == [divmod(i, batch) for i in range(n)]
    assert summ["programs"] == n
    programs = [p for b in range(2) for p in _batch(b, seed, batch, n, 0.25)]
    for rec, p in zip(records, programs):
        alone = differ.judge(p, differ.CPU_JUDGES).summary()
        if not alone["ptxas"].startswith("accepted"):
            alone.pop("reference", None)
        assert rec["verdicts"] == alone
        assert rec["family"] == differ.program_family(p)


def test_finalize_repro_with_a_header_hint_writes_the_same_file():
    from fuzzptx.judges import differ

    p = next(q for q in _drawn(8, 6) if differ.is_labelled(q))
    v = differ.judge(p, differ.CPU_JUDGES)
    sig = "test|hint|x"
    assert differ.finalize_repro(p, differ.CPU_JUDGES, sig, verdicts=v).to_ptx() == \
        differ.finalize_repro(p, differ.CPU_JUDGES, sig).to_ptx()


def test_finalize_repro_moves_verdicts_instead_of_judging_again(monkeypatch):
    """Given the text the verdicts were taken on, ptxas's and the checker's verdicts move with the
    header (no second compile, no second checker run; the reference runs again only where its
    verdict quotes a line) and the file is the one a full second round of judging writes."""
    from fuzzptx.judges import differ
    from fuzzptx.oracles.ptxas import compile_batch

    progs = [q for q in _drawn(8, 9)]  # 1 rejected, 5 accepted with diagnostics
    texts = [q.to_ptx() for q in progs]
    batch = compile_batch(texts)
    assert any(not r.accepted for r in batch) and any(r.accepted and r.diagnostics for r in batch)
    expected = [differ.finalize_repro(q, differ.CPU_JUDGES, "test|move|x").to_ptx() for q in progs]
    verdicts = [differ.judge(q, differ.CPU_JUDGES, ptxas_result=r, text=t) for q, t, r in zip(progs, texts, batch)]
    assert any(v.predicted.diagnostics for v in verdicts)
    calls = []
    from fuzzptx.judges import builtin  # where the judges call them

    for mod, name in ((builtin, "compile_ptx"), (builtin, "check_and_predict")):
        real = getattr(mod, name)
        monkeypatch.setattr(mod, name, lambda *a, _r=real, _n=name, **k: calls.append(_n) or _r(*a, **k))
    for q, t, v, want in zip(progs, texts, verdicts, expected):
        assert differ.finalize_repro(q, differ.CPU_JUDGES, "test|move|x", verdicts=v, text=t).to_ptx() == want
    assert not calls
    # a text that is not this program's body: every judge runs again
    differ.finalize_repro(progs[0], differ.CPU_JUDGES, "test|move|x", verdicts=verdicts[0], text=texts[1])
    assert set(calls) == {"compile_ptx", "check_and_predict"}


def test_moved_verdicts_take_again_only_what_quotes_a_line():
    """A reference verdict that names a line ('undefined at line N', an error) and a judge that did
    not speak are run again; ptxas, the checker and a finished reference run move or carry over."""
    from fuzzptx.judges import differ
    from fuzzptx.oracles.checker.findings import PredictedDiag, PredictedDiagnostics
    from fuzzptx.oracles.reference.result import RefResult

    pred = PredictedDiagnostics(True, (PredictedDiag("C7515", 30, "info", "k", "m"), PredictedDiag("C7520", None, "info", "k", "m")))
    ran = differ.Verdicts(checker=[], predicted=pred, reference=RefResult({}))
    out, rerun = differ.moved_verdicts(ran, ("ptxas", "checker", "reference"), 4)
    assert rerun == ["ptxas"] and out.reference is ran.reference
    assert out.predicted.pairs() == (("C7515", 34), ("C7520", None))
    undefined = differ.Verdicts(reference=RefResult({}, undefined="line 31: trap"))
    assert differ.moved_verdicts(undefined, ("reference",), 2)[1] == ["reference"]
    errored = differ.Verdicts(reference_error="line 12: bad address", checker_error="internal error: x")
    assert differ.moved_verdicts(errored, ("checker", "reference"), 2)[1] == ["checker", "reference"]


@pytest.mark.parametrize("mutation", ["imm_out_of_range", "sparse_selector"])
def test_a_label_naming_a_rule_family_holds_for_its_members(mutation):
    """``isa.imm`` (the label) is what the checker's ``isa.imm.scale-a`` / ``isa.imm.sp-sel`` say:
    every such mutant was an ``expect!=checker`` finding in the README's fuzz run."""
    from fuzzptx.judges import differ
    from fuzzptx.engine.generate import draw_direct
    from fuzzptx.strategies.mutations import apply

    mutants = [m for p in draw_direct(40, 5, illegal_share=0) if (m := apply(mutation, p)) is not None]
    assert mutants, f"no program of the sample takes {mutation}"
    for m in mutants[:5]:
        v = differ.judge(m, ("checker",))
        rules = {f.rule for f in v.checker}
        assert any(r.startswith("isa.imm.") for r in rules), rules
        assert not [f for f in differ.expectation_findings(m, v, "x") if f.signature.startswith("expect!=checker")]


def test_a_short_run_draws_illegal_programs_in_proportion(tmp_path):
    """A run smaller than one block (the README's main job has 100 programs, a smoke run fewer)
    still has its share of mutants: the block is drawn at the run's size."""
    from fuzzptx.engine.generate import BlockTask, block_programs
    from fuzzptx.judges import differ

    progs = [p for _, p, _ in block_programs(BlockTask(0, 3, 32, (), keep=8))]
    assert len(progs) == 8 and sum(differ.is_labelled(p) for p in progs) == 2
