"""The types pass (Types): wgmma rewritten with simpler types (f16 first), operands carried over by role."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Types
from support.shrink_cases import every, minimal, opcodes, ptxas_accepts, reduced


def e4m3():
    return minimal(lambda f: f.family == "wgmma" and f.atype == "e4m3" and f.btype == "e4m3" and f.dtype == "f32"
                   and f.shape.n == 8 and getattr(f, "a_source", None) == "desc")


def test_e4m3_becomes_f16_while_ptxas_accepts():
    p = e4m3()
    out = reduced(Types(), p, ptxas_accepts)
    (mma,) = [o for o in opcodes(out) if "mma_async" in o]
    assert ".f16.f16" in mma and "e4m3" not in mma, mma
    assert _size(out) < _size(p)


def test_f16_has_nothing_simpler():
    p = minimal(lambda f: f.family == "wgmma" and f.atype == "f16" and f.shape.n == 8)
    assert Types().candidates(p) == []
    assert reduced(Types(), e4m3(), every(lambda q: any("e4m3" in o for o in opcodes(q)))).to_ptx() == e4m3().to_ptx()
