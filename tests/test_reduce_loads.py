"""The loads pass (Loads): a scalar load replaced by a move of a per-thread register of its width."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Loads
from support.shrink_cases import copy_kernel, opcodes, ptxas_accepts, reduced


def test_loads_become_moves_of_the_thread_index():
    p = copy_kernel()
    out = reduced(Loads(), p, ptxas_accepts)
    assert "ld.global.b32" not in opcodes(out) and opcodes(out).count("mov.b32") == 5, opcodes(out)
    assert _size(out) < _size(p)


def test_ld_param_is_left_alone():
    p = copy_kernel()
    for c in Loads().candidates(p):
        assert opcodes(c).count("ld.param.u64") == 3
