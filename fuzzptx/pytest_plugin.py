"""pytest plugin (entry point ``pytest11``): the ``gpu`` marker and fuzz options.

Registered through the package's entry point so that any project with fuzzptx
installed gets a ``gpu`` marker that skips cleanly on machines without an
sm_90a GPU and CuPy, instead of failing at import or launch time.
"""
from __future__ import annotations

import functools

import pytest


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason() -> str | None:
    """Why hardware tests cannot run here, or None when a usable GPU exists."""
    try:
        import cupy  # noqa: F401
    except Exception as exc:  # ImportError, or CUDA libs missing
        return f"CuPy not importable ({type(exc).__name__}: {exc})"
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"no CUDA device ({type(exc).__name__})"
    if count == 0:
        return "no CUDA device"
    cc = cupy.cuda.Device(0).compute_capability
    if cc != "90":
        return f"device is sm_{cc}, wgmma needs sm_90a"
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "gpu: needs an NVIDIA sm_90a GPU and CuPy; skipped cleanly without one"
    )
    _pin_worker_gpu(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"gpu test: {reason}")
    for item in gpu_items:
        item.add_marker(skip)


# ------------------------------------------------------------ fuzz options

PROFILES = {"ci": 60, "nightly": 2000}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fuzzptx")
    group.addoption("--fuzzptx-judges", default="reference,checker,ptxas",
                    help="comma-separated judges for fuzz tests: reference, checker, ptxas, hardware")
    group.addoption("--fuzzptx-profile", default="ci", choices=sorted(PROFILES),
                    help="example budget profile: ci (fast) or nightly (long)")
    group.addoption("--fuzzptx-examples", type=int, default=None,
                    help="examples per fuzz test (overrides the profile)")
    group.addoption("--fuzzptx-repro-dir", default="reports/repros",
                    help="where a failing fuzz test writes its repro file")


def _visible_gpu_count() -> int:
    import glob
    import re

    return len([p for p in glob.glob("/dev/nvidia*") if re.fullmatch(r"/dev/nvidia\d+", p)])


def _pin_worker_gpu(config: pytest.Config) -> None:
    """One xdist worker per GPU: worker gwN sees GPU N mod count (before CUDA starts)."""
    import os

    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or "CUDA_VISIBLE_DEVICES" in os.environ:
        return
    if "hardware" not in config.getoption("--fuzzptx-judges"):
        return
    count = _visible_gpu_count()
    if count:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(int(worker[2:]) % count)


class FuzzConfig:
    """What a fuzz test needs from the command line (the ``fuzzptx_config`` fixture)."""

    def __init__(self, config: pytest.Config):
        self.judges = tuple(j.strip() for j in config.getoption("--fuzzptx-judges").split(",") if j.strip())
        self.profile = config.getoption("--fuzzptx-profile")
        self.examples = config.getoption("--fuzzptx-examples") or PROFILES[self.profile]
        self.repro_dir = config.getoption("--fuzzptx-repro-dir")

    def settings(self):
        from hypothesis import HealthCheck, settings

        return settings(max_examples=self.examples, deadline=None, database=None,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                               HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])


@pytest.fixture(scope="session")
def fuzzptx_config(pytestconfig: pytest.Config) -> FuzzConfig:
    return FuzzConfig(pytestconfig)


def check_program(program, config: FuzzConfig) -> None:
    """Judge one program; on any finding write its repro and fail with the path.

    Hypothesis calls this again on every shrink step; each write replaces the
    file for that signature, so the file left is the smallest failing program.
    """
    import re
    from dataclasses import replace
    from pathlib import Path

    from fuzzptx import differ

    judges = config.judges
    if "hardware" in judges and gpu_unavailable_reason() is not None:
        judges = tuple(j for j in judges if j != "hardware")
    verdicts = differ.judge(program, judges)
    findings = differ.compare(program, verdicts)
    if not findings:
        return
    first = findings[0]
    out = Path(config.repro_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / (re.sub(r"[^A-Za-z0-9]+", "_", first.signature).strip("_")[:100] + ".ptx")
    repro = differ.finalize_repro(program, tuple(j for j in judges if j != "hardware"), first.signature)
    path.write_text(repro.to_ptx())
    raise AssertionError(f"{first.signature}: {first.message}\nrepro: {path.resolve()}")
