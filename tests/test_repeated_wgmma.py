"""ptxas 13.0.88 -O3 collapses a repeated wgmma (an H100 finding), and a model of what it did.

The record ``benchmarks/results/probe_dup_wgmma_h100.json`` (``benchmarks/probe_dup_wgmma.py`` on
the H100) holds, per kernel, the GPU's first element that differs from the reference at -O3 and
-O0.  The kernels are rebuilt here from the same builders and seeds, and ``collapsed`` (the
reference run with each repeat of the wgmma before it dropped) must give the GPU's values for
every kernel with up to three copies.  It is no general model: four copies of a 32-register
f32 accumulator kept two, and an m64n8k32 kernel kept both of its two copies
(``benchmarks/results/probe_dup_wgmma_m64n8_h100.json``)."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from fuzzptx.builders import repeated_wgmma, wgmma_program
from fuzzptx.oracles.hardware import HwResult
from fuzzptx.ptx.ir import Instr
from fuzzptx.oracles.reference import compare, run_program

RECORD = json.loads((Path(__file__).resolve().parent.parent / "benchmarks/results/probe_dup_wgmma_h100.json").read_text())
ROWS = RECORD["variants"]


def collapsed(p) -> HwResult:
    """The reference's run of ``p`` with every wgmma that repeats the wgmma before it (only commits
    between) dropped (``differ.without_repeated_wgmmas``: the model the differ diagnoses with)."""
    from fuzzptx.judges.differ import without_repeated_wgmmas

    q = without_repeated_wgmmas(p) or p
    ref = run_program(q, mode="hardware")
    return HwResult(outputs={b.name: ref.bytes(b.name) for b in p.outputs()})


def _kernel(row):
    base = wgmma_program(row["form"], seed=7, scale_d=not row["first_scale_d_0"])
    return replace(repeated_wgmma(base, row["copies"], row["commit_between"], row["first_scale_d_0"]), numerics="hardware")


def test_the_record_shows_O3_losing_products_and_O0_keeping_them():
    assert len(ROWS) == 49 and all(r["accepted_O3"] and r["accepted_O0"] for r in ROWS)
    assert all(r["gpu_O0"] == "matches the reference" for r in ROWS)
    lost = [r for r in ROWS if r["gpu_O3"] != "matches the reference"]
    # every kernel with two identical wgmmas in a row (or around a commit) loses a product at -O3
    assert {(r["copies"], r["commit_between"], r["first_scale_d_0"]) for r in lost} == {
        (2, False, False), (3, False, False), (4, False, False), (2, True, False), (3, False, True)}
    assert all(r["gmma_O3"] < r["gmma_O0"] for r in ROWS if r["copies"] > 1)


@pytest.mark.parametrize("row", [r for r in ROWS if r["copies"] <= 3], ids=lambda r: r["file"])
def test_the_collapse_model_gives_the_gpus_values(row):
    p = _kernel(row)
    mism = compare(p, run_program(p, mode="hardware"), collapsed(p).outputs)
    if row["gpu_O3"] == "matches the reference":
        assert not mism
    else:
        first = re.search(r"first: (\w+)\[(\d+)\]: expected \S+ \S+, observed (\S+)", row["gpu_O3"])
        assert mism and (mism[0].buffer, str(mism[0].index)) == first.group(1, 2)
        assert mism[0].observed.split()[0] == first.group(3)


def test_four_copies_of_an_f32_accumulator_kept_two():
    """What the model leaves out, pinned: the GPU's value is C + 2AB, the two-copy kernel's expected one."""
    for row in (r for r in ROWS if r["copies"] == 4 and ".f32." in r["form"]):
        two = next(r for r in ROWS if r["form"] == row["form"] and r["copies"] == 2 and not r["commit_between"])
        observed = re.search(r"observed (\S+)", row["gpu_O3"]).group(1)
        assert re.search(r"expected (\S+)", two["gpu_O3"]).group(1) == observed


def test_the_builder_repeats_the_same_instruction():
    p = repeated_wgmma(wgmma_program("wgmma.mma_async.sync.aligned.m64n32k32.s32.u8.u8|a=reg", seed=7), 3, True)
    ops = [s for s in p.module.function("k").body if isinstance(s, Instr) and s.opcode.startswith("wgmma.")]
    names = [s.opcode.split(".")[1] for s in ops]
    assert names[:6] == ["fence", "mma_async", "commit_group", "mma_async", "commit_group", "mma_async"]
    assert ops[1] == ops[3] == ops[5]


def test_the_differ_names_a_mismatch_the_collapse_explains():
    from fuzzptx.judges import differ

    row = next(r for r in ROWS if r["copies"] == 2 and not r["commit_between"] and not r["first_scale_d_0"])
    p = _kernel(row)
    v = differ.judge(p, ("reference",))
    v.hardware = collapsed(p)  # what the H100 gave for it at -O3
    sigs = [f.signature for f in differ.compare(p, v)]
    assert [s for s in sigs if s.startswith("reference!=hardware")] == [f"reference!=hardware|mismatch-repeated-wgmma|{differ.program_family(p)}"]
    v.hardware = HwResult(outputs={name: bytes(len(data)) for name, data in collapsed(p).outputs.items()})
    sigs = [f.signature for f in differ.compare(p, v)]  # zeros: not what the collapse gives
    assert [s for s in sigs if s.startswith("reference!=hardware")] == [f"reference!=hardware|mismatch|{differ.program_family(p)}"]
    assert differ.without_repeated_wgmmas(_kernel(next(r for r in ROWS if r["copies"] == 1))) is None


def test_a_campaigns_shipped_program_is_diagnosed_from_the_full_one():
    from fuzzptx.judges import differ
    from fuzzptx.engine.block import shipped

    row = next(r for r in ROWS if r["copies"] == 3 and not r["commit_between"] and not r["first_scale_d_0"])
    p = _kernel(row)
    v = differ.judge(p, ("reference",))
    v.hardware = collapsed(p)
    light = shipped(p)  # what the campaign's main process holds: no kernel body
    mism = lambda fs: [f.signature.split("|")[1] for f in fs if f.signature.startswith("reference!=hardware")]  # noqa: E731
    assert mism(differ.compare(light, v, full=lambda: p)) == ["mismatch-repeated-wgmma"]
    assert mism(differ.compare(light, v)) == ["mismatch"]  # without the body there is nothing to test the collapse on


def test_a_repeat_with_another_scale_d_between_is_diagnosed_too():
    """The seed-26 campaign kernel: scale-d 1, then a runtime 0, then 1 on the same D, A and B;
    the H100 gave the first wgmma's result alone (repeated_wgmma_diagnosis_h100.json)."""
    from fuzzptx.judges import differ
    from fuzzptx.ptx.ir import Imm

    row = next(r for r in ROWS if r["copies"] == 3 and not r["commit_between"] and not r["first_scale_d_0"])
    p = _kernel(row)
    fn = p.module.function(p.launch.kernel)
    body = list(fn.body)
    w = [i for i, s in enumerate(body) if isinstance(s, Instr) and s.opcode.startswith("wgmma.mma_async")]
    body[w[1]] = replace(body[w[1]], operands=body[w[1]].operands[:3] + (Imm.of(0),) + body[w[1]].operands[4:])
    p = p.with_kernel_body(body)
    first_only = p.with_kernel_body([s for i, s in enumerate(body) if i not in w[1:]])
    ref = run_program(first_only, mode="hardware")
    v = differ.judge(p, ("reference",))
    v.hardware = HwResult(outputs={b.name: ref.bytes(b.name) for b in p.outputs()})
    assert differ.without_repeated_wgmmas(p) is None and differ.without_repeated_wgmmas(p, exact=False) is not None
    assert [f.signature.split("|")[1] for f in differ.compare(p, v) if f.signature.startswith("reference!=hardware")] == \
        ["mismatch-repeated-wgmma"]
