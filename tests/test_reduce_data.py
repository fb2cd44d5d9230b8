"""The data pass (Data): drawn input data replaced by zeros or small integers."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Data
from support.shrink_cases import every, program, reduced


def test_random_data_becomes_zeros():
    p = program("\tst.global.u32 [%g], 1;")
    assert p.buffers[0].init == "random"
    out = reduced(Data(), p, every(lambda q: True))
    assert out.buffers[0].init == "zeros" and _size(out) < _size(p)


def test_data_stays_when_the_predicate_needs_it():
    p = program("\tst.global.u32 [%g], 1;")
    assert reduced(Data(), p, every(lambda q: q.buffers[0].init == "random")) is p
