"""The reuse pass (Reuse): a source fragment register replaced by another of the fragment, the moves that fed it dropped."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Reuse
from support.shrink_cases import every, minimal, opcodes, ptxas_accepts, reduced


def mma():
    return minimal(lambda f: f.key == "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")


def test_fragment_registers_reuse_one_another_and_their_moves_go():
    p = mma()
    out = reduced(Reuse(), p, ptxas_accepts)
    assert opcodes(out).count("mov.b32") < opcodes(p).count("mov.b32") and _size(out) < _size(p), opcodes(out)


def test_fragments_stay_when_the_predicate_needs_their_moves():
    p = mma()
    n = opcodes(p).count("mov.b32")
    assert reduced(Reuse(), p, every(lambda q: opcodes(q).count("mov.b32") == n)) is p
