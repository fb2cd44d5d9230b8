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


# ---------------------------------------------------------------- sparse wgmma, mma, mma.sp, wmma (proved on the H100: hw_records/sparse_mma_proof_seed*.json)


def _proof_script():
    """The sparse mma proof (tests/support/hw_sparse_mma_proof.py: its program builders and direct model)."""
    from support import hw_sparse_mma_proof

    return hw_sparse_mma_proof


def _op(opcode: str):
    return isa.by_opcode(opcode)[0]


def test_sparse_wgmma_hardware_mode_through_the_interpreter_uses_the_true_keep_mask():
    """An Inf in B facing an unselected A position (even a selected +0 elsewhere) has no effect.

    The old approximation (keep = "A bits != 0") differs exactly where a *selected* +0 meets
    an Inf: that product is Inf*0 = NaN on the H100 model; an unselected one forms nothing.
    """
    from fuzzptx.isa import sparse as S

    P = _proof_script()
    f = next(x for x in isa.forms("wgmma.sp") if x.dtype == "f32" and x.atype == "f16" and x.shape.n == 8
             and x.a_source == "reg")
    k = P.SpKernel(f.key, 1, sel=1)
    x = P.gen_sp(k, "moderate", 3)
    spec = S.spec_for(f)
    keep = S.keep_mask(spec, x["fields"][0])
    col = int(np.argmin(keep[0]))  # a position row 0 does not select
    x["b"][col, :] = 0x7C00  # +Inf in B there
    sel0 = int(np.argmax(keep[1]))  # a position row 1 selects: make it +0 in the packed A
    packed_pos = int(keep[1, :sel0].sum())
    x["packed"][0][1, packed_pos] = 0
    x["b"][sel0, :] = 0x7C00
    prog = k.program()
    got = P.decode_sp(k, P.interp_bytes(k, prog, P.encode_sp(k, prog, x)))
    want = P.model_sp(k, x)
    assert (got == want).all()
    rows_unselected = ~keep[:, col] & ~keep[:, sel0]
    assert np.isfinite(F.decode("f32", got[rows_unselected])).all()
    assert (got[1] == 0x7FFFFFFF).all()  # the selected +0 times Inf: canonical NaN
    approx = W.hardware_result("f16", "f16", "f32", *(_dense(spec, x)), x["c"], True, sparse=True)  # keep=None
    assert (approx.bits[1] != 0x7FFFFFFF).any(), "the old approximation would have missed row 1"


def _dense(spec, x):
    from fuzzptx.isa import sparse as S

    dense, _ = S.expand(spec, x["packed"][0], x["fields"][0])
    return dense.astype(np.uint32), x["b"]


def _m884(ctype: str, dtype: str, a, b, c):
    from fuzzptx.oracles.reference import mma_emulation as E

    return E.mma(isa.by_opcode(f"mma.sync.aligned.m8n8k4.row.col.{dtype}.f16.f16.{ctype}")[0], a, b, c)


def test_m8n8k4_follows_the_ffma_chain_ptxas_emits():
    """mma.m8n8k4 on sm_90 is ptxas's FMUL/FFMA/FADD routine: C enters last, each op rounds to nearest."""
    one, tiny = 0x3C00, 0x0C00  # 1.0, 2^-12 in f16
    a = np.array([[one, tiny, tiny, 0]] * 8, np.uint32)
    b = np.array([[one] * 8, [tiny] * 8, [tiny] * 8, [0] * 8], np.uint32)
    z32 = np.zeros((8, 8), np.uint32)
    # 1 + 2^-24 + 2^-24: each FFMA ties back to 1; the fused tensor-core step would keep 1 + 2^-23
    assert (_m884("f32", "f32", a, b, z32) == 0x3F800000).all()
    assert (H.mma("f16", "f16", "f32", a, b, z32) == 0x3F800001).all()
    # C last: 2^-24 + 2^-24 = 2^-23 first, then + C = 1 gives 1 + 2^-23 (C first would give 1)
    a2 = np.array([[tiny, tiny, 0, 0]] * 8, np.uint32)
    c1 = np.full((8, 8), 0x3F800000, np.uint32)
    assert (_m884("f32", "f32", a2, b[[1, 2, 0, 3]], c1) == 0x3F800001).all()
    # signed zeros: f32 D starts the chain from +0 (FFMA .., RZ); f16 D starts from a FMUL (-0 kept)
    neg0 = np.full((8, 4), 0x8000, np.uint32)
    ones = np.full((4, 8), one, np.uint32)
    assert (_m884("f32", "f32", neg0, ones, np.full((8, 8), 0x80000000, np.uint32)) == 0).all()
    assert (_m884("f16", "f16", neg0, ones, np.full((8, 8), 0x8000, np.uint32)) == 0x8000).all()
    # Inf * 0 gives the canonical NaN
    inf = a.copy()
    inf[:, 3] = 0x7C00
    assert (_m884("f32", "f32", inf, b, z32) == 0x7FFFFFFF).all()
    assert (_m884("f16", "f16", inf, b, np.zeros((8, 8), np.uint32)) == 0x7FFF).all()


def test_fma_f32_is_correctly_rounded():
    rng = np.random.default_rng(1)
    n = 3000
    sign = lambda: np.where(rng.random(n) < 0.5, -1.0, 1.0)  # noqa: E731
    a = (sign() * np.ldexp(1 + rng.integers(0, 1024, n) / 1024, rng.integers(-24, 15, n))).astype(np.float16)
    b = (sign() * np.ldexp(1 + rng.integers(0, 1024, n) / 1024, rng.integers(-14, 15, n))).astype(np.float16)
    t = (sign() * np.ldexp(1 + rng.integers(0, 1 << 23, n) / 2 ** 23, rng.integers(-149, 60, n))).astype(np.float32)
    a, b, t = a.astype(np.float64), b.astype(np.float64), t.astype(np.float64)
    t[::5] = -(a * b)[::5].astype(np.float32) * (1 + 2.0 ** -23)
    from fuzzptx.oracles.reference import mma_emulation as E

    got = E.rn_f32_add(a * b, t).astype(np.float64)  # a*b: exact in float64 for f16 values
    for i in range(n):
        ex = Fraction(a[i]) * Fraction(b[i]) + Fraction(t[i])
        f = np.float32(float(ex))
        cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
        best = min(cands, key=lambda c: (abs(Fraction(float(c)) - ex), int(np.array([c]).view(np.uint32)[0]) & 1))
        assert best == np.float32(got[i]) or (best == 0 and got[i] == 0), (i, a[i], b[i], t[i])


def test_wmma_follows_its_hmma_sequence():
    """wmma .f16.f32 runs an F32 HMMA and rounds D once to f16; tf32 k8 is two HMMA.1684 steps."""
    c = np.full((16, 16), 0x3F801000, np.uint32)  # f32 C = 1 + 2^-11 (an f16 tie)
    a = np.zeros((16, 16), np.uint32)
    a[:, 0] = 0x1400  # 2^-10
    b = np.zeros((16, 16), np.uint32)
    b[0] = 0x1400  # product 2^-20
    d = H.wmma("f16", "f16", "f32", "f16", a, b, c)
    assert (d == 0x3C01).all()  # f32 1 + 2^-11 + 2^-20 -> f16 rounds up (C rounded to f16 first: 0x3C00)
    f = _op("wmma.mma.sync.aligned.row.row.m16n16k16.f16.f32")
    assert (MM.mma_dense(f, a, b, c, mode="hardware").bits == 0x3C01).all()
    # tf32 m16n16k8: a big product cancelled by C in k = 0..3, a small one at k = 5 survives
    at = np.zeros((16, 8), np.uint32)
    bt = np.zeros((8, 16), np.uint32)
    at[:, 0], bt[0] = 0x44800000, 0x3F800000  # 2^10 * 1
    at[:, 5], bt[5] = 0x37000000, 0x3F800000  # 2^-17 * 1
    ct = np.full((16, 16), 0xC4800000, np.uint32)  # -2^10
    assert (H.wmma("tf32", "tf32", "f32", "f32", at, bt, ct) == 0x37000000).all()
    one_step = H.mma("tf32", "tf32", "f32", at, bt, ct, family="mma")  # mma m16n8k8: one HMMA.1688
    assert (one_step == 0).all()


def test_fp8_warp_level_mma_and_mma_sp_follow_the_emulation():
    """fp8 mma and mma.sp are ptxas's emulation (mma_emulation, proved on the H100)."""
    from fuzzptx.oracles import reference

    with pytest.raises(H.Unmodelled):
        H.params_for("e4m3", "f32", "mma")
    _proof_script()  # puts benchmarks/ on the path
    from support import hw_warp_forms as WF
    dense = WF.mma_program(_op("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32"), seed=3, warps=1)
    hw = reference.run_program(dense, mode="hardware")
    assert hw.undefined is None
    spec = reference.run_program(dense)
    assert hw.bytes("d") != bytes(len(hw.bytes("d")))  # random data: a real result, not zeros
    assert len(hw.bytes("d")) == len(spec.bytes("d"))
    sparse = WF.mma_program(_op("mma.sp.sync.aligned.m16n8k64.row.col.f32.e4m3.e4m3.f32"), seed=3, warps=1)
    assert reference.run_program(sparse).undefined is None  # spec mode runs it
    hw_sp = reference.run_program(sparse, mode="hardware")
    assert hw_sp.undefined is None and hw_sp.bytes("d") != bytes(len(hw_sp.bytes("d")))
    kind = _op("mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.f32.e4m3.e3m2.f32")
    from fuzzptx.oracles.reference import mma_math as MM

    with pytest.raises(H.Unmodelled):  # an sm_120a form: nothing of the H100's to model
        MM.hardware_family(kind)


@pytest.mark.parametrize("op", [
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16",
    "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32", "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f16",
    "mma.sync.aligned.m8n8k4.row.row.f16.f16.f16.f16", "mma.sp.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32",
    "wmma.mma.sync.aligned.row.col.m16n16k16.f16.f32", "wmma.mma.sync.aligned.row.row.m16n16k8.f32.tf32.tf32.f32"])
def test_spec_set_contains_the_hardware_result_of_warp_forms(op):
    from fuzzptx.isa import sparse as S

    f = _op(op)
    s = f.shape
    m, n = (8, 8) if (s.m, s.n, s.k) == (8, 8, 4) else (s.m, s.n)
    rng = np.random.default_rng(17)
    spec = S.spec_for(f) if f.family == "mma.sp" else None
    for kind in ("moderate", "wide", "raw"):
        for _ in range(3):
            a = _data(f.atype, (m, s.k), rng, kind)
            b = _data(f.btype, (s.k, n), rng, kind)
            c = _data(f.ctype, (m, n), rng, kind)
            keep = None
            if spec is not None:
                fields = S.random_fields(spec, rng)
                a = S.expand(spec, a[:, : s.k // 2], fields)[0].astype(np.uint32)
                keep = S.keep_mask(spec, fields)
                nf = ~np.isfinite(F.decode(f.btype, b))
                sp = W.spec_with_keep(lambda bb: MM.mma_dense(f, a, bb, c), b, nf, keep)
            else:
                sp = MM.mma_dense(f, a, b, c)
            hw = MM.mma_dense(f, a, b, c, mode="hardware", keep=keep)
            ok = MM.within(sp, hw.bits)
            assert ok.all(), (kind, np.argwhere(~ok)[:3])


SPARSE_MIXES = {f"{f.dtype}.{f.atype}.{f.btype}": f for f in isa.forms("wgmma.sp")
                if f.dtype in ("f32", "f16") and f.shape.n == 8 and f.a_source == "desc"}


@pytest.mark.parametrize("mix", sorted(SPARSE_MIXES))
def test_spec_set_contains_the_hardware_result_of_sparse_wgmma(mix):
    """Sparse wgmma: unselected positions form no product in both modes (spec: ``spec_with_keep``)."""
    from fuzzptx.isa import sparse as S

    f = SPARSE_MIXES[mix]
    spec = S.spec_for(f)
    rng = np.random.default_rng(23)
    fp8_f32 = f.atype in FP8 and f.dtype == "f32"
    for kind in ("moderate", "wide", "raw"):
        for _ in range(3):
            fields = S.random_fields(spec, rng, ordered=False)
            a = S.expand(spec, _data(f.atype, (64, f.shape.k // 2), rng, kind), fields)[0].astype(np.uint32)
            keep = S.keep_mask(spec, fields)
            b = _data(f.btype, (f.shape.k, 8), rng, kind)
            c = _data(f.dtype, (64, 8), rng, kind)
            nf = ~np.isfinite(F.decode(f.btype, b))
            prec = 14 if fp8_f32 else None  # the e8m13 accumulator finding (dense test above)
            sp = W.spec_with_keep(lambda bb: W.wgmma_dense(f, a, bb, c, accum_precision=prec), b, nf, keep)
            hw = W.wgmma_dense(f, a, b, c, mode="hardware", keep=keep)
            ok = W.within(sp, hw.bits)
            assert ok.all(), (kind, np.argwhere(~ok)[:3])


def test_sparse_and_mma_proof_script_dry_run(tmp_path):
    """The proof script end to end without a GPU: every kernel's first launch through the interpreter."""
    P = _proof_script()
    out = tmp_path / "dry.json"
    rc = P.main(["--dry-run", "--dots", "1", "--interp", "100", "--jobs", "2", "--out", str(out), "--mix",
                 "wgmma.sp f32.tf32", "wgmma.sp f16.e5m2.e4m3", "mma.sp f32.f16", "mma.m8n8k4 f16",
                 "mma f32.bf16", "wmma f16.f16.f16.f32"])
    rec = json.loads(out.read_text())
    assert rc == 0 and rec["total_mismatches"] == 0
    assert set(rec["interp_checked"]) == {"wgmma.sp", "mma", "mma.sp", "wmma"}
    assert len(rec["per_mix"]) == 6
    for c in rec["per_mix"].values():
        assert all(c[f"dots.{d}"] > 0 for d in ("moderate", "wide", "cancel", "fewbits", "special", "raw"))


def test_sparse_and_mma_proof_script_catches_a_wrong_bit_and_dumps_it(tmp_path):
    """A flipped D bit is counted and dumped, and the dump regenerates the launch's inputs."""
    P = _proof_script()
    out, dump = tmp_path / "plant.json", tmp_path / "bad.npz"
    P.main(["--dry-run", "--plant", "--dots", "1", "--jobs", "2", "--out", str(out), "--dump", str(dump),
            "--mix", "mma.sp f16", "wmma f32.tf32", "wgmma.sp f32.e4m3.e5m2"])
    rec = json.loads(out.read_text())
    assert rec["planted"] and rec["total_mismatches"] == sum(rec["planted"].values())
    for mix, n in rec["planted"].items():
        assert rec["per_mix"][mix]["mismatches"] == n
    npz = np.load(dump)
    for entry in rec["dumped"]:
        k = P.kernel_from(entry["kernel"])
        hw = npz[entry["npz_key"]]
        ref = P.model(k, P.gen(k, entry["dist"], entry["seed"]))
        assert (hw != ref).sum() == 1 and hw[0, 0] == ref[0, 0] ^ 1


def test_exploration_data_of_the_h100_is_reproduced_by_the_wired_models():
    """The exploration run's H100 data (record: warp_exploration), regenerated from its seeds.

    The 100 sampled sparse wgmma outputs are reproduced bit for bit (true keep mask), and for
    m8n8k4 (the FFMA chain read from the SASS) and fp8 mma (the SASS hypothesis, not wired) the
    number of elements where the exploration's shipped model differs from ours equals the
    number where it differed from the H100, exactly (the C-first chain missed: 23 vs 21).
    """
    P = _proof_script()
    rec = P.recheck_exploration(str(RECORD), jobs=2, mixes=["mma f16.f16", "mma f32.e5m2.e5m2"])
    assert rec["sampled_outputs_reproduced"] == "100 of 100"
    assert set(rec["per_mix"]) == {"mma f16.f16.f16", "mma f32.e5m2.e5m2"}
    for mix, c in rec["per_mix"].items():
        assert c["equal"] and c["predicted_b32_vs_ours"] > 0, (mix, c)
