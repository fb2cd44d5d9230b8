"""Defects planted in copies of the judges, to check that the fuzzer finds and shrinks them.

Each is a context manager that patches one function of a judge for its duration (the
original is restored after): ``benchmarks/bench_shrink.py`` and the planted-bug tests use
the same plants, so what the benchmark measures is what the tests check.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from unittest import mock

import numpy as np


@contextmanager
def swizzle_off_by_one():
    """The reference's swizzles XOR an address bit one position off."""
    from fuzzptx.oracles.reference import layouts
    from fuzzptx.oracles.reference.layouts import SWIZZLES, Swizzle

    from fuzzptx.oracles.reference import wgmma_exec

    planted = {name: Swizzle(s.bits, s.base, s.shift + 1) for name, s in SWIZZLES.items() if name != "none"}
    wgmma_exec._tile_addresses.cache_clear()  # tile addresses are cached per layout
    try:
        with mock.patch.dict(layouts.SWIZZLES, planted):
            yield
    finally:
        wgmma_exec._tile_addresses.cache_clear()


@contextmanager
def fragment_rows_swapped():
    """The reference's wgmma accumulator rows g and g+8 swapped past column 128."""
    from fuzzptx.oracles.reference import layouts

    real = layouts.accumulator_layout

    def planted(dtype: str, n: int):
        lay = real(dtype, n)
        row = lay.row.copy()
        far = lay.col >= 128
        row[far] = np.where(row[far] % 16 >= 8, row[far] - 8, row[far] + 8)
        return replace(lay, row=row)

    with mock.patch.object(layouts, "accumulator_layout", planted):
        yield


@contextmanager
def fence_any_path():
    """The checker's fence rule satisfied by a fence on *some* path instead of every path."""
    from fuzzptx.oracles.checker import spec_rules

    real_run = spec_rules._run

    def weak_run(ctx, sink, entry, step, join, end_of_block=None, block_step=None):
        if entry == (False, frozenset()):  # the fence analysis: fenced on *some* path is enough
            join = lambda a, b: (a[0] or b[0], a[1] | b[1])  # noqa: E731
        return real_run(ctx, sink, entry, step, join, end_of_block, block_step)

    with mock.patch.object(spec_rules, "_run", weak_run):
        yield
