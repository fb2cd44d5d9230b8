"""The fragment-store pass (FragmentStore): a fragment stored whole becomes one register's plain store."""
from __future__ import annotations

from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import FragmentStore
from support.shrink_cases import minimal, opcodes, ptxas_accepts, reduced


def test_a_wmma_store_becomes_a_store_of_one_register():
    p = minimal(lambda f: f.opcode.startswith("wmma.store.d") and "shared" not in f.opcode and f.opcode.endswith(".f32"))
    cands = FragmentStore().candidates(p)
    assert len(cands) == 8  # one per register of the fragment
    out = reduced(FragmentStore(), p, ptxas_accepts)
    ops = opcodes(out)
    assert not any(o.startswith("wmma") for o in ops) and "st.b32" in ops, ops
    assert ops.count("mov.b32") == 1 and _size(out) < _size(p)  # the other seven registers' moves went


def test_a_shared_wmma_store_keeps_its_state_space():
    p = minimal(lambda f: f.opcode.startswith("wmma.store.d") and ".shared" in f.opcode and f.opcode.endswith(".f32"))
    assert all("st.shared.b32" in opcodes(c) for c in FragmentStore().candidates(p))
