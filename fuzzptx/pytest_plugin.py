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
