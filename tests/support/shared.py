"""Work a test run does once: ptxas results by text for the session (``PtxasResults``, the
``ptxas_results`` fixture of tests/conftest.py) and an expensive fixture computed by one xdist
worker for all of them (``once_per_run``)."""
from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from pathlib import Path
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
