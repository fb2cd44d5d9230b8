"""The dense pass (Dense): a sparse wgmma rewritten as the dense form of the same types, M and N."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Dense
from support.shrink_cases import every, minimal, opcodes, ptxas_accepts, reduced


def sparse():
    return minimal(lambda f: f.family == "wgmma.sp" and f.atype == "f16" and f.dtype == "f16" and f.shape.n == 8)


def test_a_sparse_wgmma_becomes_dense_while_ptxas_accepts():
    p = sparse()
    out = reduced(Dense(), p, ptxas_accepts)
    (mma,) = [o for o in opcodes(out) if "mma_async" in o]
    assert ".sp." not in mma and _size(out) < _size(p), mma


def test_sparse_stays_when_the_predicate_needs_it():
    p = sparse()
    assert reduced(Dense(), p, every(lambda q: any(".sp." in o for o in opcodes(q)))) is p
