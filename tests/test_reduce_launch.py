"""The launch pass (Launch): one block, then half the threads (not below a warp)."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Launch
from support.shrink_cases import every, program, reduced


from dataclasses import replace


def big():
    p = program("\tst.global.u32 [%g], 1;")
    return replace(p, launch=replace(p.launch, grid=(2, 1, 1), block=(256, 1, 1)))


def test_one_block_and_fewer_threads():
    p = big()
    out = reduced(Launch(), p, every(lambda q: True))
    assert out.launch.grid == (1, 1, 1) and out.launch.block == (32, 1, 1) and _size(out) < _size(p)


def test_threads_stay_where_the_predicate_needs_them_and_never_below_a_warp():
    p = big()
    kept = reduced(Launch(), p, every(lambda q: q.launch.block[0] >= 128))
    assert kept.launch.block == (128, 1, 1)
    warp = replace(p, launch=replace(p.launch, grid=(1, 1, 1), block=(32, 1, 1)))
    assert Launch().candidates(warp) == []
