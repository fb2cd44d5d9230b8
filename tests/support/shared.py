"""Work a test run does once: ptxas results by text for the session (``PtxasResults``, the
``ptxas_results`` fixture of tests/conftest.py), an expensive fixture computed by one xdist
worker for all of them (``once_per_run``), and the strategies package's derandomized sample with
ptxas's results on it (``strategy_draw``, the ``strategy_sample`` fixture)."""
from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar

import pytest

T = TypeVar("T")


class PtxasResults:
    """``compile_batch``'s results for the session (one per xdist worker), by text and options:
    a probe compiled by one test module is not compiled again by the next.  A result is what
    ``compile_ptx`` of that text alone gives (``compile_batch``'s contract), so which batch
    compiled it does not matter."""

    def __init__(self) -> None:
        self._done: dict[tuple, object] = {}

    def __call__(self, texts: list[str], **options) -> list:
        key = tuple(sorted(options.items()))
        missing = list(dict.fromkeys(t for t in texts if (t, key) not in self._done))
        if missing:
            from fuzzptx.oracles.ptxas import compile_batch

            self._done.update(((t, key), r) for t, r in zip(missing, compile_batch(missing, **options)))
        return [self._done[(t, key)] for t in texts]


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], T]) -> T:
    """``make(directory)`` once for the whole test run, whichever xdist worker asks first; the others
    wait for it and load its pickled value (a module fixture runs once per worker that runs one of
    the module's tests: twice on two cores).  ``directory`` is shared, so paths into it stay valid."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's directory, above each worker's own
    where, done = root / f"shared-{name}", root / f"shared-{name}.pickle"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            where.mkdir(exist_ok=True)
            done.write_bytes(pickle.dumps(make(where)))
        return pickle.loads(done.read_bytes())


@dataclass(frozen=True)
class StrategyDraw:
    """``support.differential.strategy_programs(n)`` and real ptxas's result on each program's text."""

    programs: list
    results: dict  # PTX text -> PtxasResult (compile_batch's)

    def compile(self, texts: list[str]) -> list:
        """``compile_batch(texts)``, from the results at hand where it has them."""
        missing = [t for t in dict.fromkeys(texts) if t not in self.results]
        if missing:
            from fuzzptx.oracles.ptxas import compile_batch

            return StrategyDraw(self.programs, {**self.results, **dict(zip(missing, compile_batch(missing)))}).compile(texts)
        return [self.results[t] for t in texts]

    def __reduce__(self):
        # (a result's kernel_names is a read-only mapping, which pickle cannot take: a dict travels)
        return _draw, (self.programs, {t: replace(r, kernel_names=dict(r.kernel_names)) for t, r in self.results.items()})


def _draw(programs: list, results: dict) -> StrategyDraw:
    return StrategyDraw(programs, {t: replace(r, kernel_names=MappingProxyType(r.kernel_names)) for t, r in results.items()})


STRATEGY_DRAW = 120  # the largest draw the default run scores (test_checker_strategies); smaller ones are in it


def strategy_draw(tmp_path_factory: pytest.TempPathFactory, n: int) -> StrategyDraw:
    """``strategy_programs(n)`` drawn and compiled once per test run: test_checker_strategies,
    test_checker_ptxas and test_agreement score the same derandomized draws, and the 60-program draw's
    texts are all in the 120-program draw, whose one ptxas batch serves both (a text missing from it
    is compiled)."""
    def make(_where: Path) -> StrategyDraw:
        from .differential import strategy_programs

        programs = strategy_programs(n)
        base = strategy_draw(tmp_path_factory, STRATEGY_DRAW) if n < STRATEGY_DRAW else StrategyDraw([], {})
        texts = [p.to_ptx() for p in programs]
        return StrategyDraw(programs, dict(zip(texts, base.compile(texts))))

    return once_per_run(tmp_path_factory, f"strategies-{n}", make)
