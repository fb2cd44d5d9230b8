"""A campaign whose pool process dies says how it ended before restarting the pool."""
import concurrent.futures as cf
import multiprocessing
import os
import signal

import pytest

from fuzzptx.engine.campaign import _dead_workers


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def test_dead_worker_named_by_its_signal():
    pool = cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    try:
        with pytest.raises(cf.process.BrokenProcessPool):
            pool.submit(_die).result(timeout=60)
        assert _dead_workers(pool) == " (killed by SIGKILL)"
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def test_live_pool_names_nothing():
    pool = cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    try:
        assert pool.submit(abs, -3).result(timeout=60) == 3
        assert _dead_workers(pool) == ""
    finally:
        pool.shutdown(wait=True)
