"""The optional MMA-Sim judge in the differ: skipped cleanly without the extra, three-way findings."""
from __future__ import annotations

import pytest

from fuzzptx.judges import differ, registry
from fuzzptx.builders import wgmma_program
from fuzzptx.oracles import mmasim_judge
from fuzzptx.oracles.hardware import HwResult
from fuzzptx.oracles.reference import run_program


def _program():
    return wgmma_program("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16|a=desc")


def test_judge_without_mmasim_says_why_and_finds_nothing():
    if mmasim_judge.available() is None:
        pytest.skip("MMA-Sim is installed here")
    p = _program()
    v = differ.judge(p, ("mmasim",))
    assert v.mmasim is None and "mmasim unavailable" in v.mmasim_skipped
    assert not [f for f in differ.compare(p, v) if f.signature.startswith("mmasim")]


def test_three_way_findings_name_the_judge_that_differs():
    """MMA-Sim's result stands in as a hardware-mode reference run; one flipped bit on one side."""
    p = _program()
    ref = run_program(p, mode="hardware")
    good = {b: ref.bytes(b) for b in ref.outputs}
    name = next(iter(good))
    bad = dict(good)
    flipped = bytearray(good[name])
    flipped[0] ^= 1
    bad[name] = bytes(flipped)
    v = differ.Verdicts(reference=ref, mmasim=ref, hardware=HwResult(good, None))
    assert not registry.get("mmasim").findings(p, v, "wgmma.f32.f16")
    v = differ.Verdicts(reference=ref, mmasim=ref, hardware=HwResult(bad, None))
    sigs = [f.signature for f in registry.get("mmasim").findings(p, v, "wgmma.f32.f16")]
    assert sigs == ["mmasim!=hardware|mismatch|wgmma.f32.f16"]


@pytest.mark.skipif(mmasim_judge.available() is not None, reason="needs the mmasim extra (torch)")
def test_mmasim_judge_agrees_with_the_hardware_mode_on_a_dense_wgmma():
    p = _program()
    res, modelled = mmasim_judge.run_program(p)
    assert modelled == 1
    ref = run_program(p, mode="hardware")
    assert all(res.bytes(b) == ref.bytes(b) for b in ref.outputs)


def test_the_judges_wrapper_passes_the_references_own_options_through():
    """MMA-Sim's judge swaps ``wgmma_math.wgmma_dense`` for a wrapper; the reference calls it with
    options of its own (``sums_cache`` from an integer sparse wgmma, which takes the spec path even
    in hardware mode).  The wrapper once refused them: a TypeError for every such program."""
    from fuzzptx import isa
    from fuzzptx.kernels import minimal_kernel
    from fuzzptx.program import Buffer, Launch, Program

    form = isa.by_key("wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.s8.s8|a=desc")
    p = Program(minimal_kernel(form), Launch("k", (1, 1, 1), (128, 1, 1)),
                (Buffer("out", "b32", 1024, "random", 1, output=True),))
    res, _ = mmasim_judge.run_program(p)
    assert res.bytes("out") == run_program(p, mode="hardware").bytes("out")
