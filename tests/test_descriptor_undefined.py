"""A swizzled descriptor whose base offset does not match its start: the spec says the base offset
"must" be ``(start >> 7) & 7`` there, so the spec-mode reference leaves the wgmma's results
undefined (as the ``descriptor_misaligned`` mutation's label says); the hardware mode computes
what the H100 does (its phase formula, tests/hw_records/dense_wgmma_base_offset_explore.json)."""
from __future__ import annotations

import numpy as np
import pytest

from fuzzptx.campaign import draw_direct
from fuzzptx.oracles.reference import run_program
from fuzzptx.oracles.reference.descriptors import MatrixDescriptor
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.strategies.mutations import apply, mutation_of


def _undefined(ref) -> int:
    return sum(int((np.asarray(o.kind) == UNDEF).sum()) for o in ref.outputs.values())


@pytest.mark.parametrize("start, base, bad", [(0x400, 0, False), (0x480, 0, True), (0x480, 1, False),
                                              (0x420, 0, False), (0x500, 2, False), (0x500, 3, True)])
def test_pattern_issues_follow_the_phase(start, base, bad):
    d = MatrixDescriptor.decode((start >> 4) | (1 << 16) | (64 << 32) | (base << 49) | (1 << 62))
    assert bool(d.pattern_issues()) == bad


def _mutants(n: int = 3):
    out = []
    for p in draw_direct(80, 5):
        if mutation_of(p) is None and p.module.target.startswith("sm_90a"):
            m = apply("descriptor_misaligned", p, 0)
            if m is not None and run_program(p).undefined is None:
                out.append((p, m))
        if len(out) == n:
            break
    return out


def test_a_misaligned_pattern_is_undefined_in_spec_mode_and_computed_in_hardware_mode():
    pairs = _mutants()
    assert pairs
    for legal, mutant in pairs:
        spec = run_program(mutant)
        assert spec.undefined is not None or _undefined(spec) > _undefined(run_program(legal))
        assert any("base offset" in n for n in spec.notes)
        hw = run_program(mutant, mode="hardware")
        assert not any("base offset" in n for n in hw.notes)
