"""The counts pass (Counts): buffers cut to 1, 1/16, 1/4 or 1/2 of their elements."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Counts
from support.shrink_cases import every, program, reduced


def test_a_buffer_is_cut_to_what_the_predicate_allows():
    p = program("\tst.global.u32 [%g], 1;")
    out = reduced(Counts(), p, every(lambda q: q.buffers[0].count >= 16))
    assert out.buffers[0].count == 16 and _size(out) < _size(p)


def test_a_one_element_buffer_has_nothing_to_cut():
    p = program("\tst.global.u32 [%g], 1;")
    one = reduced(Counts(), p, every(lambda q: True))
    assert one.buffers[0].count == 1 and Counts().candidates(one) == []
