"""The ``slow`` marker: the long parametrisations and property runs wait for the nightly.

Also ``ptxas_results``: ptxas results for the session, by text (``support.shared``, beside
``once_per_run``: an expensive fixture computed by one xdist worker for all of them), and
``strategy_sample``: the strategies package's derandomized draw with ptxas's results, once per run.

The README's test command (``pytest -n auto -q``, what CI runs) skips tests marked ``slow``; a
smaller sample of each slow parametrisation runs unmarked (``support.sampling``).  They all run
with ``FUZZPTX_FULL=1`` or ``--fuzzptx-profile nightly``.
"""
from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

# Bytecode, cached outside the checkout: where PYTHONDONTWRITEBYTECODE is set (these machines set
# it), every test worker and every fuzzptx process a test starts (the CLI, campaign pools) would
# compile the package from source again, about a third of each start.  The cache goes under the
# temporary directory (``sys.pycache_prefix``), so nothing is written into the tree.
_PYC = Path(tempfile.gettempdir()) / f"fuzzptx-test-pycache-{os.getuid()}"
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ["PYTHONPYCACHEPREFIX"] = str(_PYC)
sys.dont_write_bytecode = False
sys.pycache_prefix = str(_PYC)

from support.sampling import full_run
from support.shared import PtxasResults, StrategyDraw, strategy_draw


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if full_run(config):
        return
    skip = pytest.mark.skip(reason="slow: runs with FUZZPTX_FULL=1 or --fuzzptx-profile nightly")
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def ptxas_results() -> PtxasResults:
    return PtxasResults()


@pytest.fixture(scope="session")
def fuzzptx_full(request: pytest.FixtureRequest) -> bool:
    """Whether this is a full run (FUZZPTX_FULL=1 or the nightly profile): a test that draws N
    programs draws its full N then, a third of them by default."""
    return full_run(request.config)


@pytest.fixture(scope="session")
def strategy_sample(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], StrategyDraw]:
    """``strategy_sample(n)``: the strategies package's ``n``-program derandomized draw and real
    ptxas's results on it, computed once per test run (``support.shared.strategy_draw``)."""
    return lambda n: strategy_draw(tmp_path_factory, n)
