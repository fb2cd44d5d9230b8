"""The whole-kernel strategies (mainloops, tensor copies) build their kernels as IR objects, never
as text parsed back, and draw the programs the text builders drew."""
from __future__ import annotations

import hashlib

import pytest

import fuzzptx.ptx.parse
import fuzzptx.strategies.mainloops as ml
import fuzzptx.strategies.tensor_copies as tc
from fuzzptx.strategies.direct import draw, reproducible

KINDS = {"copy": (tc.copy_plans, tc.render, tc.FAULTS), "loop": (ml.mainloop_plans, ml.render, ml.FAULTS),
         "wgmma": (ml.wgmma_loop_plans, ml.render_wgmma, ml.WGMMA_FAULTS)}
# sha256 of the emitted text of 8 draws per fault (and the legal plans), in order, as the text
# builders of 149fd81 drew them (the IR builders must draw the same programs byte for byte)
TEXT_BUILDERS = {"copy": "ddfd0d3652091677630f31b966d177421fded07b1fbb47315b6e335a08737106",
                 "loop": "b78ce8bb0267d08a80932747b55d668be1ed31def34c0014a0f0586a04187223",
                 "wgmma": "bd7526076b5a0ea169e656f023df099a97c9311fa83f4ce200023f64adde57cd"}


def _drawn(kind: str, n: int = 8):
    plans, render, faults = KINDS[kind]
    with reproducible():
        for fault in (None,) + tuple(faults):
            for i in range(n):
                yield render(draw(plans(fault=fault), f"{kind}:{fault}:{i}"))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kernels_are_built_as_ir_not_parsed_back(kind, monkeypatch):
    def refused(*a, **k):
        raise AssertionError("a whole-kernel strategy parsed PTX text")

    monkeypatch.setattr(fuzzptx.ptx.parse, "parse", refused)
    for module in (ml, tc):
        monkeypatch.setattr(module, "parse", refused, raising=False)
    for p in _drawn(kind, 2):
        assert p.module.functions()[0].name == "k"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_same_programs_as_the_text_builders(kind):
    h = hashlib.sha256()
    for p in _drawn(kind):
        h.update(p.to_ptx().encode())
    assert h.hexdigest() == TEXT_BUILDERS[kind]
