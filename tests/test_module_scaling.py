"""Whole-module analyses run once per module, not once per function (issue 29): the work of
checking a module of N kernels grows like N, counted in calls (speed figures live in
benchmarks/bench_scaling.py, never in a timed test)."""
from __future__ import annotations

import sys
from pathlib import Path

from fuzzptx.oracles.checker import check_and_predict
from fuzzptx.ptx import smem
from fuzzptx.ptx.parse import parse
from fuzzptx.ptx.smem import shared_layout

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_scaling import module_text  # noqa: E402


def _counted(monkeypatch, module, name: str) -> list[int]:
    calls = [0]
    real = getattr(module, name)

    def counting(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(module, name, counting)
    return calls


def test_checking_n_kernels_walks_each_function_a_bounded_number_of_times(monkeypatch):
    walks = _counted(monkeypatch, smem, "_body_vars")
    per = {}
    for n in (10, 40):
        walks[0] = 0
        findings, pred = check_and_predict(parse(module_text(n)))
        assert sum(f.rule == "ptxas.C7510" for f in findings) == n  # every kernel was checked
        per[n] = walks[0]
    assert per[40] <= 4 * per[10] + 4, per  # linear: four times the kernels, four times the walks (N^2 gave 16x)


def test_another_kernels_shared_memory_is_not_in_this_kernels_window():
    one = parse(module_text(1))
    two = parse(module_text(2))
    k1 = next(f for f in one.functions() if f.name == "k")
    k2 = next(f for f in two.functions() if f.name == "k")
    k2b = next(f for f in two.functions() if f.name == "k_1")
    assert shared_layout(two, k2) == shared_layout(one, k1)
    assert shared_layout(two, k2b) == shared_layout(one, k1)  # the same kernel body, the same window


def test_the_batch_scanner_finds_every_kernel_where_it_starts():
    """``ptxas_merge.scan`` (how compile_batch cuts a merged module's output back per input) counts a
    function's first line back from its opening brace, not from the top of the module (which made it
    quadratic in the kernels): every span starts at its own ``.entry``/``.func`` line and ends at its
    closing brace."""
    from fuzzptx.oracles.ptxas_merge import scan

    text = module_text(12)
    lines = text.splitlines()
    shape = scan(text)
    assert [name for name, _, _ in shape.spans if name.startswith("k")] == ["k"] + [f"k_{i}" for i in range(1, 12)]
    for name, first, last in shape.spans:
        assert name in lines[first - 1] and (".entry" in lines[first - 1] or ".func" in lines[first - 1]), (name, first)
        assert lines[last - 1].strip().endswith("}"), (name, last)
    assert len(set(shape.symbols)) == len(shape.symbols)
