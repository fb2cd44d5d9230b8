"""The reference's hardware numerics (``hw_numerics``, ``mode="hardware"``).

* the vectorised model equals its definition evaluated with exact rationals;
* it reproduces every H100 probe output in the committed record bit for bit
  (the record holds what the GPU stored, not what the model said);
* where spec and hardware modes differ, the spec set contains the hardware
  result, except fp8 inputs with f32 accumulation, where the H100 keeps 13
  fraction bits: that spec finding is checked to be exactly the e8m13 accumulator;
* the record's dense proof covers every catalogue type mix with >= 1,000,000 dot
  products and 0 mismatches.
"""
from __future__ import annotations

import json
import math
import pathlib
from fractions import Fraction

import numpy as np
import pytest

from fuzzptx import isa
from fuzzptx.oracles.reference import formats as F
from fuzzptx.oracles.reference import hw_numerics as H
from fuzzptx.oracles.reference import mma_math as MM
from fuzzptx.oracles.reference import wgmma_math as W

RECORD = pathlib.Path(__file__).parent / "hw_records" / "numerics.json"
FP8 = ("e4m3", "e5m2")


def _mixes() -> dict[str, object]:
    """One dense m64n8 wgmma form per float type mix (the catalogue is the source)."""
    out = {}
    for f in isa.forms():
        if (f.opcode.startswith("wgmma.mma_async.sync") and f.dtype in ("f32", "f16") and f.shape.n == 8
                and f.a_source == "desc"):
            out[f"{f.dtype}.{f.atype}.{f.btype}"] = f
    return out


MIXES = _mixes()


def _data(t: str, shape, rng, kind: str) -> np.ndarray:
    fmt = F.FLOATS[t]
    if kind == "raw":
        return rng.integers(0, 1 << F.bits_per_element(t), size=shape, dtype=np.uint64).astype(np.uint32)
    lo, hi = (fmt.emin - fmt.man_bits - 1, fmt.emax) if kind == "wide" else (-4, 4)
    v = np.where(rng.random(shape) < 0.5, -1.0, 1.0) * np.ldexp(1 + rng.random(shape), rng.integers(lo, hi + 1, shape))
    with np.errstate(over="ignore"):
        return F.encode(t, v).astype(np.uint32)


# ---------------------------------------------------------------- the definition, exactly


def _exp(t: str, x: Fraction) -> int:
    """floor(log2|x|) clamped at the format's smallest normal exponent (x != 0)."""
    e = math.floor(math.log2(abs(x)))
    while Fraction(2) ** e > abs(x):
        e -= 1
    while Fraction(2) ** (e + 1) <= abs(x):
        e += 1
    return max(e, F.FLOATS[t].emin)


def _trunc(x: Fraction) -> int:
    return math.floor(x) if x >= 0 else -math.floor(-x)


def _definition(at, bt, dt, a_bits, b_bits, c_bits) -> int:
    """One step of the model for one dot product, in exact rationals (finite inputs)."""
    prm = H.params_for(at, dt)
    av = [Fraction(float(x)) for x in F.decode(at, np.array(a_bits))]
    bv = [Fraction(float(x)) for x in F.decode(bt, np.array(b_bits))]
    c = Fraction(float(F.decode(dt, np.array([c_bits]))[0]))
    terms = [(x * y, (_exp(at, x) + _exp(bt, y)) if x * y != 0 else prm.e_zero) for x, y in zip(av, bv)]
    terms.append((c, _exp(dt, c) if c != 0 else prm.e_zero))
    e_max = max(e for _, e in terms)
    unit = Fraction(2) ** (e_max - prm.frac_bits)
    total = sum(_trunc(v / unit) for v, _ in terms) * unit
    if total == 0:
        return 0
    if prm.rounding == "rne-f16":  # float(total) is exact: an integer below 2^34 times a power of two
        with np.errstate(over="ignore"):
            r = np.array([float(total)]).astype(np.float16)
        return 0 if r[0] == 0 else int(r.view(np.uint16)[0])
    keep = 23 if prm.rounding == "rz-f32" else 13
    e = max(_exp("f32", total), -126)
    q = _trunc(total / Fraction(2) ** (e - keep)) * Fraction(2) ** (e - keep)
    if abs(q) >= Fraction(2) ** 128:
        return 0x7F800000 | (0x80000000 if q < 0 else 0)
    return int(np.array([float(q)], np.float32).view(np.uint32)[0])


@pytest.mark.parametrize("mix", sorted(MIXES))
def test_vectorised_model_equals_its_exact_definition(mix):
    f = MIXES[mix]
    rng = np.random.default_rng(abs(hash(mix)) % 2**32)
    for kind in ("moderate", "wide"):
        a = _data(f.atype, (4, f.shape.k), rng, kind)
        b = _data(f.btype, (f.shape.k, 3), rng, kind)
        c = _data(f.dtype, (4, 3), rng, kind)
        ok = np.isfinite(F.decode(f.atype, a)).all() and np.isfinite(F.decode(f.btype, b)).all() \
            and np.isfinite(F.decode(f.dtype, c)).all()
        if not ok:
            continue
        got = H.mma(f.atype, f.btype, f.dtype, a, b, c)
        for m in range(4):
            for n in range(3):
                want = _definition(f.atype, f.btype, f.dtype, a[m], b[:, n], c[m, n])
                assert got[m, n] == want, (kind, m, n, hex(got[m, n]), hex(want))


# ---------------------------------------------------------------- against the H100's record


def _record() -> dict:
    return json.loads(RECORD.read_text())


def test_every_probe_output_of_the_h100_is_reproduced():
    rec = _record()
    probes = rec["probes"]["list"]
    assert len(probes) > 1000
    bad = []
    for p in probes:
        dt, at, bt = p["mix"].split(".")
        f = MIXES[p["mix"]]
        a = np.zeros((1, f.shape.k), np.uint32)
        b = np.zeros((f.shape.k, 1), np.uint32)
        for k, x, y in p["terms"]:
            a[0, k], b[k, 0] = int(x, 16), int(y, 16)
        got = H.mma(at, bt, dt, a, b, np.array([[int(p["c"], 16)]], np.uint32))[0, 0]
        if got != int(p["hw"], 16):
            bad.append((p["mix"], p["probe"], hex(got), p["hw"]))
    assert not bad, bad[:10]


def test_probes_pin_the_published_parameters():
    """The probes that decide each parameter, read from the H100's outputs."""
    by = {(p["mix"], p["probe"]): int(p["hw"], 16) for p in _record()["probes"]["list"]}
    # alignment window 25 fraction bits (f16 -> f32): 2^-25 survives next to 1, 2^-26 does not
    assert by[("f32.f16.f16", "align_pos_j25")] == 0x33000000
    assert by[("f32.f16.f16", "align_pos_j26")] == 0
    # truncation of a negative aligned term is toward zero (sign-magnitude)
    assert by[("f32.f16.f16", "align_neg_j26")] == 0
    # the f32 result is truncated (1 + 2^-24 + 2^-26 -> 1), the f16 result rounded to nearest
    assert by[("f32.f16.f16", "round_above_half")] == 0x3F800000
    assert by[("f16.f16.f16", "round_above_half")] == 0x3C01
    # fp8 with f32 D: 13 fraction bits, even for C's own bits (C = 1 + 2^-14 comes back as 1)
    assert by[("f32.e4m3.e4m3", "c_lowbits_j14")] == 0x3F800000
    assert by[("f32.e4m3.e4m3", "c_lowbits_j13")] == 0x3F800400
    # one fused step per wgmma: a small product at k = 15 is aligned against the big one at k = 0
    assert by[("f32.f16.f16", "step_pos15")] == 0
    # NaN comes out canonical
    assert by[("f32.f16.f16", "inf_times_zero")] == 0x7FFFFFFF
    assert by[("f16.f16.f16", "inf_times_zero")] == 0x7FFF


def test_the_dense_proof_covers_every_mix_with_a_million_dots_and_no_mismatch():
    rec = _record()
    assert rec["dense_totals"]["mismatches"] == 0
    for run in rec["dense_proof"]:
        assert run["total_mismatches"] == 0
        assert run["device"]["name"].startswith("NVIDIA H100")
        assert set(run["per_mix"]) == set(MIXES), "a catalogue type mix is missing from the proof"
        for mix, c in run["per_mix"].items():
            assert c["dots"] >= 1_000_000 and c["mismatches"] == 0, mix
            assert all(c[f"dots.{d}"] > 0 for d in ("moderate", "wide", "cancel", "fewbits", "special", "raw"))


def test_mmasim_agreed_with_the_h100_on_its_sample():
    ms = _record()["dense_proof"][0]["mmasim"]
    assert set(ms["per_mix"]) == set(MIXES)
    for mix, c in ms["per_mix"].items():
        assert c["dots"] > 100_000 and c["mmasim_vs_hw_mismatches"] == 0, mix


# ---------------------------------------------------------------- spec mode contains hardware mode


@pytest.mark.parametrize("mix", sorted(MIXES))
def test_spec_set_contains_the_hardware_result(mix):
    f = MIXES[mix]
    rng = np.random.default_rng(7)
    outside = 0
    for kind in ("moderate", "wide", "raw"):
        for _ in range(3):
            a = _data(f.atype, (64, f.shape.k), rng, kind)
            b = _data(f.btype, (f.shape.k, 8), rng, kind)
            c = _data(f.dtype, (64, 8), rng, kind)
            spec = W.wgmma_dense(f, a, b, c)
            hw = W.wgmma_dense(f, a, b, c, mode="hardware")
            ok = W.within(spec, hw.bits)
            if f.atype in FP8 and f.dtype == "f32":
                # the spec finding: outside the ISA's "at least single precision" bound, but
                # always inside the bound for a 14-bit-significand (e8m13) accumulator
                outside += int((~ok).sum())
                e8m13 = W.wgmma_dense(f, a, b, c, accum_precision=14)
                assert W.within(e8m13, hw.bits).all()
            else:
                assert ok.all(), (kind, np.argwhere(~ok)[:3])
    if f.atype in FP8 and f.dtype == "f32":
        assert outside > 0, "the fp8 f32-accumulation finding no longer shows"


def test_hardware_mode_result_accepts_exactly_its_bits():
    f = MIXES["f32.bf16.bf16"]
    rng = np.random.default_rng(3)
    a, b, c = (_data(f.atype, (64, 16), rng, "raw"), _data(f.btype, (16, 8), rng, "raw"),
               _data(f.dtype, (64, 8), rng, "raw"))
    hw = W.wgmma_dense(f, a, b, c, mode="hardware")
    assert (hw.bits == H.mma(f.atype, f.btype, f.dtype, a, b, c)).all()
    assert W.within(hw, hw.bits).all()
    fin = np.isfinite(hw.value)
    other = np.where(fin, hw.bits ^ np.uint32(1), hw.bits)  # one ulp away
    assert not W.within(hw, other)[fin].any()


def test_scale_d_and_negation_in_hardware_mode():
    f = MIXES["f32.f16.f16"]
    rng = np.random.default_rng(5)
    a, b, c = (_data("f16", (64, 16), rng, "moderate"), _data("f16", (16, 8), rng, "moderate"),
               _data("f32", (64, 8), rng, "moderate"))
    no_c = W.wgmma_dense(f, a, b, c, scale_d=False, mode="hardware").bits
    assert (no_c == H.mma("f16", "f16", "f32", a, b, np.zeros_like(c))).all()
    neg = W.wgmma_dense(f, a, b, c, scale_a=-1, mode="hardware").bits
    assert (neg == H.mma("f16", "f16", "f32", a ^ np.uint32(0x8000), b, c)).all()


def test_sparse_unselected_positions_form_no_product():
    """An Inf in B where the metadata selected no A element leaves D finite."""
    f = next(x for x in isa.forms("wgmma.sp") if x.dtype == "f32" and x.atype == "f16" and x.shape.n == 8)
    a = np.zeros((64, f.shape.k), np.uint32)
    a[:, 0] = 0x3C00  # 1.0 selected at k = 0
    keep = np.zeros(a.shape, bool)
    keep[:, 0] = True
    b = np.full((f.shape.k, 8), 0x3C00, np.uint32)
    b[1] = 0x7C00  # +Inf facing an unselected position
    d = W.wgmma_dense(f, a, b, np.zeros((64, 8), np.uint32), mode="hardware", keep=keep)
    assert (d.bits == 0x3F800000).all()
    # all of the sparse K (32 f16 positions) is one fused step
    assert H.params_for("f16", "f32", sparse=True).fused == 32


def test_mma_math_hardware_mode_uses_the_warp_parameters():
    f = next(x for x in isa.forms("mma") if x.atype == "bf16" and x.dtype == "f32" and x.shape.k == 16)
    rng = np.random.default_rng(9)
    a, b, c = (_data("bf16", (16, 16), rng, "moderate"), _data("bf16", (16, 8), rng, "moderate"),
               _data("f32", (16, 8), rng, "moderate"))
    got = MM.mma_dense(f, a, b, c, mode="hardware")
    assert (got.bits == H.mma("bf16", "bf16", "f32", a, b, c, family="mma")).all()
    assert W.within(MM.mma_dense(f, a, b, c), got.bits).all()


def test_bad_mode_is_refused():
    f = MIXES["f32.f16.f16"]
    z = np.zeros((64, 16), np.uint32)
    with pytest.raises(ValueError, match="mode"):
        W.wgmma_dense(f, z, np.zeros((16, 8), np.uint32), np.zeros((64, 8), np.uint32), mode="exact")


def test_mmasim_judge_matches_the_model_where_installed():
    from fuzzptx.oracles import mmasim_judge as MS

    why = MS.available()
    if why:
        pytest.skip(why)
    f = MIXES["f32.e4m3.e5m2"]
    rng = np.random.default_rng(11)
    a, b, c = (_data(f.atype, (64, 64), rng, "wide"), _data(f.btype, (64, 8), rng, "wide"),
               _data(f.dtype, (64, 8), rng, "moderate"))
    sim = MS.wgmma(f.atype, f.btype, f.dtype, a, b, c, k_step=32)
    cur = c
    for s in (0, 32):
        cur = H.mma(f.atype, f.btype, f.dtype, a[:, s:s + 32], b[s:s + 32], cur)
    assert (sim == cur).all()
