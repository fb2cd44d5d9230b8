"""The ptxas model stays pinned to the real ptxas: every recorded experiment still draws exactly
the recorded diagnostics from ptxas 13.0.88, the model predicts them (or the file says where it
knowingly does not), and on a fixed-seed sample of generated pipelines the model agrees with
ptxas at least as often as when this test was written."""
from __future__ import annotations

import pathlib

import pytest

from fuzzptx.oracles.checker import predict_ptxas
from fuzzptx.oracles.checker.ptxas_compare import observed, predicted, without
from fuzzptx.ptx.parse import parse
from support.differential import _rejects, run_sample, run_strategies_sample
from support.experiments import EXPERIMENTS, header, recorded
from support.shared import once_per_run
from support.sampling import full_run, sample_of, sampled

DATA = pathlib.Path(__file__).parent / "data" / "checker"
FILES = sorted(DATA.glob("*.ptx"))


# ptxas on all ~440 probes is ~40 s of CPU per xdist worker: CI compiles every 5th (each family
# is spread over the sorted names), the nightly and FUZZPTX_FULL=1 all of them
PTXAS_EVERY = 5


@pytest.fixture(scope="module")
def ptxas_now(ptxas_results, request, tmp_path_factory):
    full = full_run(request.config)
    wanted = sample_of(FILES, PTXAS_EVERY, full)

    def compile_them(_):
        return {p.name: observed(r) for p, r in zip(wanted, ptxas_results([p.read_text() for p in wanted]))}

    return once_per_run(tmp_path_factory, f"checker-probes-ptxas{'-full' if full else ''}", compile_them)


def test_every_experiment_is_recorded():
    assert {p.stem for p in FILES} >= set(EXPERIMENTS)
    assert len(FILES) >= 140


@pytest.mark.parametrize("path", sampled(FILES, PTXAS_EVERY, ids=lambda p: p.stem))
def test_ptxas_still_says_what_was_recorded(path, ptxas_now):
    assert ptxas_now[path.name] == recorded(path)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_model_predicts_the_recording(path):
    text = path.read_text()
    pred = predict_ptxas(parse(text, str(path)))
    got, want = predicted(pred), without(recorded(path), pred.may)  # "may" codes: either way
    if header(text, "MODEL"):
        assert got != want, "the model now agrees: drop the MODEL: known-gap line"
    else:
        assert got == want


def _agreement_message(s) -> str:
    return f"{s.agree}/{s.n}: " + "; ".join(f"{seed}: {d} real={r} model={m}" for seed, d, r, m in s.mismatches[:8])


def test_differential_sample_against_real_ptxas():
    """Pipegen seeds 0..199: accept/reject always agrees; codes and lines at the measured floor
    (reports/checker_vs_ptxas.md has seeds 0..1999: 1904/2000)."""
    s = run_sample(200, seed=0)
    assert not [m for m in s.mismatches if _rejects(m[2]) != _rejects(m[3])]
    assert s.rate >= 0.93, f"agreement fell to {_agreement_message(s)}"


def test_differential_strategies_sample_small(strategy_sample):
    """CI's share of the bar below (which waits for the nightly): 60 programs from the strategies
    package (Hypothesis's derandomized draw of large programs is most of the time: 200 took 14 min
    under load 20), accept/reject always agrees, codes and lines on at least 95%."""
    s = run_strategies_sample(60, draw=strategy_sample(60))
    assert s.n == 60
    assert not [m for m in s.mismatches if _rejects(m[2]) != _rejects(m[3])]
    assert s.rate >= 0.95, f"agreement fell to {_agreement_message(s)}"


@pytest.mark.slow
def test_differential_strategies_sample():
    """The issue's bar on the report's own fixed sample: 2,000 programs from the strategies package
    (legal ones and their named illegal mutations, drawn derandomized), 100% accept/reject
    agreement and codes and lines on at least 99% (reports/checker_vs_ptxas.md lists the rest;
    benchmarks/README.md row 5a).  About two minutes on two cores: ptxas compiles the 2,000 in
    batches."""
    s = run_strategies_sample(2000)
    assert s.n == 2000
    assert not [m for m in s.mismatches if _rejects(m[2]) != _rejects(m[3])]
    assert s.rate >= 0.99, f"agreement fell to {_agreement_message(s)}"
