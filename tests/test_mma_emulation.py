"""The emulated warp-level mma forms (fp8 inputs, m8n8k4 f16) against the H100's own outputs.

``tests/hw_records/mma_emulation_sample.npz`` holds inputs and D as the H100 returned them
(``benchmarks/numerics_mma_probe.py``, 8 mmas per form; the full run's counts are in
``mma_emulation.json``).  The model must reproduce every bit of them."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from fuzzptx import isa
from fuzzptx.oracles.reference import formats as F
from fuzzptx.oracles.reference import hw_numerics as H
from fuzzptx.oracles.reference import mma_emulation as E

HERE = pathlib.Path(__file__).resolve().parent
RECORDS = HERE / "hw_records"


def _forms():
    return [f for f in isa.forms("mma") if E.emulated(f)]


def test_emulated_forms_are_the_fp8_and_m8n8k4_f16_ones():
    forms = _forms()
    assert {f.atype for f in forms} == {"e4m3", "e5m2", "f16"}
    assert all(f.atype != "f16" or (f.shape.m, f.shape.k) == (8, 4) for f in forms)
    assert not E.emulated(isa.by_key("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"))


def test_record_is_a_real_h100_run_with_no_mismatch():
    rec = json.loads((RECORDS / "mma_emulation.json").read_text())
    assert rec["device"]["name"].startswith("NVIDIA H100") and not rec["dry_run"]
    assert rec["total_mismatches"] == 0
    for mix, agg in rec["per_mix"].items():
        assert agg["dots"] >= 1_000_000, mix
    # the SASS shows the lowering the model encodes
    fp8 = [r for r in rec["per_form"] if ".e4m3." in r["form"] or ".e5m2." in r["form"]]
    assert fp8 and all(any(op.startswith("HMMA") for op in r["sass"]) for r in fp8)
    assert all(not any(op.startswith("HMMA") for op in r["sass"]) for r in rec["per_form"] if ".m8n8k4." in r["form"])


def _probed():
    from support import numerics_mma_probe as P

    return P.probe_forms()


@pytest.mark.parametrize("form", _probed(), ids=lambda f: f.key)
def test_model_reproduces_the_h100_sample(form):
    from support import numerics_mma_probe as P

    z = np.load(RECORDS / "mma_emulation_sample.npz")
    tag = form.key.replace(".", "_").replace(":", "_")
    job = (form.key, *(z[f"{tag}__{x}"] for x in ("a", "b", "c", "d", "dist")))
    assert len(job[1]) > 0
    assert P.judge(job)["mismatches"] == 0


def _bits(t, values):
    return F.encode(t, np.asarray(values, float)).astype(np.uint32)


def test_fp8_split_is_not_the_fused_adder():
    """Products at k % 4 in {0,1} are summed (and truncated) before those at {2,3} join."""
    f = isa.by_key("mma.sync.aligned.m16n8k16.row.col.f32.e4m3.e4m3.f32")
    a = np.zeros((16, 16)); b = np.zeros((16, 8)); c = np.zeros((16, 8))
    a[0, 0], b[0, 0] = 2.0 ** 8, 2.0 ** 8      # 2^16 and -2^16 cancel in the first HMMA (k = 0, 1)
    a[0, 1], b[1, 0] = -(2.0 ** 8), 2.0 ** 8
    a[0, 2], b[2, 0] = 2.0 ** -9, 2.0 ** -8    # 2^-17 alone in the second HMMA (k = 2): kept exactly
    d = E.mma(f, _bits("e4m3", a), _bits("e4m3", b), _bits("f32", c))
    assert F.decode("f32", d)[0, 0] == 2.0 ** -17
    fused = H.mma("f16", "f16", "f32", _bits("f16", a), _bits("f16", b), _bits("f32", c), family="mma")
    assert F.decode("f32", fused)[0, 0] == 0.0  # one fused step aligns 2^-17 to 2^16 and truncates it away


def test_m8n8k4_f16_keeps_negative_zero_from_underflow():
    """(C + p01) + p23 in f32, then one rounding to f16: a tiny negative sum gives -0."""
    f = isa.by_key("mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f16")
    a = np.zeros((8, 4)); b = np.zeros((4, 8)); c = np.zeros((8, 8))
    a[0, 0], b[0, 0] = -(2.0 ** -14), 2.0 ** -14  # -2^-28: below f16's smallest subnormal / 2
    d = E.mma(f, _bits("f16", a), _bits("f16", b), _bits("f16", c))
    assert d[0, 0] == 0x8000 and d[0, 1] == 0


def test_m8n8k4_f32_rounds_each_fma():
    f = isa.by_key("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32")
    a = np.zeros((8, 4)); b = np.zeros((4, 8)); c = np.zeros((8, 8))
    a[0, :3] = [1.0, 2.0 ** -12, 2.0 ** -12]
    b[:3, 0] = [1.0, 2.0 ** -12, 2.0 ** -12]   # 1 + 2^-24 + 2^-24: each FMA rounds the 2^-24 away (ties to even)
    d = E.mma(f, _bits("f16", a), _bits("f16", b), _bits("f32", c))
    assert F.decode("f32", d)[0, 0] == 1.0


@pytest.mark.parametrize("form", _probed(), ids=lambda f: f.key)
def test_spec_set_contains_the_h100_results(form):
    """The spec mode's allowed set holds what the H100 returned for the emulated forms too."""
    from fuzzptx.oracles.reference import mma_math as MM

    z = np.load(RECORDS / "mma_emulation_sample.npz")
    tag = form.key.replace(".", "_").replace(":", "_")
    a, b, c, d = (z[f"{tag}__{x}"] for x in "abcd")
    for i in range(len(a)):
        res = MM.mma_dense(form, a[i], b[i], c[i])
        assert MM.within(res, d[i].astype(np.uint32)).all(), (form.key, i)


@pytest.mark.parametrize("name", ["sparse_mma_proof_seed1.json", "sparse_mma_proof_seed2.json",
                                  "sparse_mma_proof_seed4.json"])
def test_sparse_and_warp_proof_records_show_no_mismatch(name):
    """The H100 proof runs of benchmarks/hw_sparse_mma_proof.py: every mix >= 1 M dots, 0 mismatches."""
    rec = json.loads((RECORDS / name).read_text())
    assert rec["device"]["name"].startswith("NVIDIA H100") and not rec["dry_run"]
    assert rec["versions"]["ptxas"] == "13.0.88"
    assert rec["total_mismatches"] == 0
    fams = {m.split()[0] for m in rec["per_mix"]}
    assert {"wgmma.sp", "mma", "mma.sp", "mma.m8n8k4", "wmma"} <= fams
    sparse_mixes = [m for m in rec["per_mix"] if m.startswith("wgmma.sp")]
    assert len(sparse_mixes) == 12  # every float mix of sparse wgmma
    for mix, c in rec["per_mix"].items():
        assert c["dots"] >= 1_000_000 and c["mismatches"] == 0, mix
    if name.endswith("seed4.json"):  # every float form of sm_90a, fp8 mma.sp included
        assert len(rec["per_mix"]) == 41
        assert sum(m.startswith("mma.sp f32.e") for m in rec["per_mix"]) == 4


def test_mmasim_three_way_record_agrees_where_mmasim_models_the_form():
    rec = json.loads((RECORDS / "mma_mmasim_threeway.json").read_text())
    assert rec["device"]["name"].startswith("NVIDIA H100") and rec["total_mismatches"] == 0
    per = rec["mmasim"]["per_mix"]
    assert {"mma f32.f16.f16", "mma f16.f16.f16", "mma f32.bf16.bf16", "mma f32.tf32.tf32"} <= set(per)
    for mix, c in per.items():
        assert c["dots"] > 0 and c["mmasim_vs_h100"] == 0 and c["mmasim_vs_ours"] == 0, mix
