"""The symbols pass (Symbols): a .shared variable's address taken by mov becomes 0."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Symbols
from support.shrink_cases import copy_kernel, opcodes, ptxas_accepts, reduced


def test_shared_addresses_become_0():
    p = copy_kernel()
    out = reduced(Symbols(), p, ptxas_accepts)
    movs = [i for i in out.module.function("k").instructions() if i.base == "mov" and str(i.operands[0]) in ("%r1", "%r7")]
    assert [str(i.operands[1]) for i in movs] == ["0", "0"] and _size(out) < _size(p)


def test_an_address_the_predicate_needs_stays():
    p = copy_kernel()
    keep = lambda ps: ["mov.u32 %r1, sa;" in q.to_ptx() for q in ps]
    out = reduced(Symbols(), p, keep)
    assert "mov.u32 %r1, sa;" in out.to_ptx() and "mov.u32 %r7, 0;" in out.to_ptx() and "mov.u32" in " ".join(opcodes(out))
