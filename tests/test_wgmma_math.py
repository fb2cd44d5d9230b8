"""wgmma arithmetic: loop oracles, integer edge cases, specials, and the spec error bound
containing every simulated accumulation order and rounding."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fuzzptx import isa
from fuzzptx.oracles.reference import formats as F
from fuzzptx.oracles.reference import wgmma_math as W


def form(atype, dtype, n=8, btype=None, sat=False):
    for f in isa.forms("wgmma"):
        if (f.atype, f.btype, f.dtype, f.shape.n, f.satfinite, f.a_source) == (
                atype, btype or atype, dtype, n, sat, "reg"):
            return f
    raise LookupError((atype, dtype, n))


def loop_matmul(a, b, c):
    """Plain float64 triple loop: C + sum_k a[m,k] b[k,n]."""
    out = np.array(c, dtype=np.float64, copy=True)
    for m in range(a.shape[0]):
        for n in range(b.shape[1]):
            for k in range(a.shape[1]):
                out[m, n] += a[m, k] * b[k, n]
    return out


def small_ints(rng, type_, shape, lim=4):
    return F.encode(type_, rng.integers(-lim, lim + 1, shape).astype(np.float64))


FLOAT_FORMS = [("f16", "f32"), ("f16", "f16"), ("bf16", "f32"), ("tf32", "f32"), ("e4m3", "f32"),
               ("e5m2", "f16"), ("e4m3", "f16")]


@pytest.mark.parametrize("atype,dtype", FLOAT_FORMS)
def test_nominal_value_matches_loop_on_exact_data(atype, dtype):
    f = form(atype, dtype, 16)
    rng = np.random.default_rng(0)
    a, b = small_ints(rng, atype, (64, f.shape.k)), small_ints(rng, atype, (f.shape.k, 16))
    c = small_ints(rng, dtype, (64, 16), 50).astype(np.uint32)
    r = W.wgmma_dense(f, a, b, c)
    want = loop_matmul(F.decode(atype, a), F.decode(atype, b), F.decode(dtype, c))
    assert np.array_equal(r.value, want)
    assert np.array_equal(r.bits, F.encode(dtype, want).astype(np.uint32))
    assert W.within(r, r.bits).all() and r.finite_ok.all() and not r.may_nan.any()


def test_values_are_accepted_in_place_of_bits_and_scale_d_drops_c():
    f = form("f16", "f32")
    rng = np.random.default_rng(1)
    av, bv = rng.integers(-3, 4, (64, 16)).astype(float), rng.integers(-3, 4, (16, 8)).astype(float)
    c_nan = np.full((64, 8), np.nan)
    r = W.wgmma_dense(f, av, bv, c_nan, scale_d=False)
    assert np.array_equal(r.value, av @ bv) and not r.may_nan.any()


def test_all_negative_zero_terms_give_negative_zero():
    f = form("f16", "f32")
    a, b = np.full((64, 16), -0.0), np.full((16, 8), 1.0)
    r = W.wgmma_dense(f, a, b, np.full((64, 8), -0.0))
    assert np.all(r.bits == 0x80000000)
    assert W.within(r, np.zeros((64, 8), np.uint32)).all()  # zero's sign is not promised


def test_imm_scale_negates_and_tf32_truncates():
    f = form("tf32", "f32")
    rng = np.random.default_rng(2)
    a = (small_ints(rng, "tf32", (64, 8)) | np.uint32(0x1FFF))  # garbage in the dropped bits
    b = small_ints(rng, "tf32", (8, 8))
    c = np.zeros((64, 8), dtype=np.uint32)
    base = W.wgmma_dense(f, a, b, c)
    want = F.decode("tf32", a & np.uint32(0xFFFFE000)) @ F.decode("tf32", b)
    assert np.array_equal(base.value, want)
    assert np.array_equal(W.wgmma_dense(f, a, b, c, scale_a=-1).value, -want)
    assert np.array_equal(W.wgmma_dense(f, a, b, c, scale_a=-1, scale_b=-1).value, want)


@pytest.mark.parametrize("atype,btype", [("s8", "s8"), ("u8", "u8"), ("s8", "u8"), ("u8", "s8")])
def test_integer_forms_match_loop(atype, btype):
    f = form(atype, "s32", 16, btype)
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (64, 32), dtype=np.uint64).astype(np.uint8)
    b = rng.integers(0, 256, (32, 16), dtype=np.uint64).astype(np.uint8)
    c = rng.integers(0, 1 << 32, (64, 16), dtype=np.uint64).astype(np.uint32) >> np.uint32(8)
    r = W.wgmma_dense(f, a, b, c)
    want = loop_matmul(F.decode(atype, a), F.decode(btype, b), F.decode("s32", c)).astype(np.int64)
    assert np.array_equal(r.value, want) and r.integer
    assert W.within(r, r.bits).all() and not W.within(r, r.bits + np.uint32(1)).any()


def test_satfinite_clamps_and_plain_wraps():
    a = np.full((64, 32), 127, dtype=np.int64)  # values, encoded as s8
    b = np.full((32, 8), 127, dtype=np.int64)
    prods = 32 * 127 * 127
    cmax = np.full((64, 8), (1 << 31) - 1 - prods + 1, dtype=np.int64)  # overflows by exactly 1
    wrap = W.wgmma_dense(form("s8", "s32"), a, b, cmax)
    sat = W.wgmma_dense(form("s8", "s32", sat=True), a, b, cmax)
    assert np.all(sat.value == (1 << 31) - 1)
    assert np.all(wrap.value == -(1 << 31)) and np.all(wrap.bits == 0x80000000)
    assert np.all(wrap.exact_value == (1 << 31))
    cmin = np.full((64, 8), -(1 << 31), dtype=np.int64)
    neg_b = np.full((32, 8), -128, dtype=np.int64)
    assert np.all(W.wgmma_dense(form("s8", "s32", sat=True), a, neg_b, cmin).value == -(1 << 31))
    assert np.all(W.wgmma_dense(form("s8", "s32"), a, neg_b, cmin).value == (1 << 31) - 32 * 127 * 128)
    # No overflow: satfinite changes nothing.
    c0 = np.zeros((64, 8), dtype=np.int64)
    assert np.all(W.wgmma_dense(form("s8", "s32", sat=True), a, b, c0).value == prods)


def test_b1_and_popc_matches_packed_popcount():
    f = form("b1", "s32", 16)
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2, (64, 256)).astype(np.uint8)
    b = rng.integers(0, 2, (256, 16)).astype(np.uint8)
    c = rng.integers(0, 1000, (64, 16)).astype(np.uint32)
    r = W.wgmma_dense(f, a, b, c)
    pack = lambda bits: int("".join(str(int(x)) for x in bits), 2)  # noqa: E731
    rows = [pack(a[m]) for m in range(64)]
    cols = [pack(b[:, n]) for n in range(16)]
    want = np.array([[int(c[m, n]) + bin(rows[m] & cols[n]).count("1") for n in range(16)] for m in range(64)])
    assert np.array_equal(r.value, want)


def test_integer_forms_reject_negation():
    with pytest.raises(ValueError):
        W.wgmma_dense(form("s8", "s32"), np.zeros((64, 32), np.uint8), np.zeros((32, 8), np.uint8),
                      np.zeros((64, 8), np.uint32), scale_a=-1)


# ---------------------------------------------------------------- NaN / Inf


def special_case(atype="f16", dtype="f32"):
    f = form(atype, dtype)
    a = np.ones((64, f.shape.k))
    b = np.ones((f.shape.k, 8))
    c = np.zeros((64, 8))
    return f, a, b, c


def test_nan_propagates_and_matches_any_nan_pattern():
    f, a, b, c = special_case()
    a[3, 5] = np.nan
    r = W.wgmma_dense(f, a, b, c)
    assert r.must_nan[3].all() and not r.may_nan[[0, 4]].any()
    hw = r.bits.copy()
    hw[3] = [0x7FC00000, 0xFFFFFFFF, 0x7F800001, 0xFFC00000, 0x7FFFFFFF, 0x7FC00001, 0xFF800001, 0x7FBFFFFF]
    ok = W.within(r, hw)
    assert ok.all()
    hw[3, 0] = 0x7F800000  # +Inf is not NaN
    assert not W.within(r, hw)[3, 0]


def test_inf_times_zero_and_opposite_infs_give_nan():
    f, a, b, c = special_case()
    a[0, 0], b[0, :] = np.inf, 0.0
    a[1, 1], a[1, 2] = np.inf, -np.inf
    a[2, 1] = np.inf
    r = W.wgmma_dense(f, a, b, c)
    assert r.must_nan[0].all() and r.must_nan[1].all()
    assert (r.may_pos_inf[2] & ~r.may_neg_inf[2] & ~r.may_nan[2] & ~r.finite_ok[2]).all()
    assert np.all(r.bits[2] == 0x7F800000)


def test_inf_times_subnormal_may_be_nan_or_inf():
    f, a, b, c = special_case()
    a[0, 0] = np.inf
    b[0, :] = F.FLOATS["f16"].min_subnormal
    r = W.wgmma_dense(f, a, b, c)
    assert (r.may_nan[0] & r.may_pos_inf[0] & ~r.finite_ok[0]).all()


def test_c_inf_with_scale_d_and_overflow_in_f16_accumulation():
    f, a, b, c = special_case()
    c[0, 0] = -np.inf
    r = W.wgmma_dense(f, a, b, c)
    assert r.may_neg_inf[0, 0] and not r.finite_ok[0, 0]
    assert not W.wgmma_dense(f, a, b, c, scale_d=False).may_neg_inf[0, 0]
    f16, a, b, c = special_case("f16", "f16")
    a[0, :] = 300.0
    b[:, :] = 300.0  # 16 * 90000 overflows f16 (and each product alone exceeds f16 max)
    r = W.wgmma_dense(f16, a, b, c)
    assert r.may_pos_inf[0].all() and not r.may_neg_inf[0].any() and not r.may_nan[0].any()
    assert W.within(r, np.full((64, 8), 0x7C00, np.uint32))[0].all()


def test_bound_is_tight_enough_to_reject_wrong_answers():
    f = form("f16", "f32")
    rng = np.random.default_rng(5)
    a, b = F.encode("f16", rng.uniform(0.5, 1, (64, 16))), F.encode("f16", rng.uniform(0.5, 1, (16, 8)))
    c = np.zeros((64, 8))
    r = W.wgmma_dense(f, a, b, c)
    assert np.all(r.err <= 18 * 2.0 ** -23 * 16 * 1.01)  # gamma_18 * sum|ab| with sum|ab| <= 16
    off = F.encode("f32", r.value * (1 + 2.0 ** -16)).astype(np.uint32)
    assert not W.within(r, off).any()
    assert not W.within(r, np.full((64, 8), 0x7FC00000, np.uint32)).any()


# ---------------------------------------------------------------- the bound contains simulations


def round_step(x, np_t, mode, ftz):
    """Round float64 x to np_t (float32/float16) with RN or RZ, optionally flushing subnormals."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = x.astype(np_t)
        if mode == "rz":
            too_far = np.abs(r.astype(np.float64)) > np.abs(x)
            r = np.where(too_far, np.nextafter(r, np_t(0)), r)
    if ftz:
        r = np.where(np.abs(r) < np.finfo(np_t).tiny, np.copysign(np_t(0), r), r)
    return r.astype(np_t)


def simulate(av, bv, cv, np_t, order, mode, ftz, fused, types, convert=False):
    """One legal machine: products in f32, then C + products added in ``order``, each step rounded.

    ``ftz`` also flushes subnormal inputs (in their own formats) to zero."""
    if ftz:
        av, bv, cv = (np.where(F.is_subnormal(t, x), np.copysign(0.0, x), x) for t, x in zip(types, (av, bv, cv)))
    with np.errstate(invalid="ignore"):
        p = av[:, :, None] * bv[None, :, :]
    p = round_step(p, np.float32, mode, ftz).astype(np.float64)
    if convert:  # products converted to the accumulator format before adding
        p = round_step(p, np_t, mode, ftz).astype(np.float64)
    if fused:  # exact sum of a block of products, rounded once (a multi-term adder)
        blocks = [order[i:i + 4] for i in range(0, len(order), 4)]
        with np.errstate(invalid="ignore"):
            terms = [p[:, blk, :].sum(axis=1) for blk in blocks]
    else:
        terms = [p[:, k, :] for k in order]
    acc = round_step(cv, np_t, mode, ftz)
    for t in terms:
        with np.errstate(over="ignore", invalid="ignore"):
            acc = round_step(acc.astype(np.float64) + t, np_t, mode, ftz)
    return acc


@st.composite
def wgmma_case(draw):
    atype, dtype = draw(st.sampled_from(FLOAT_FORMS + [("e5m2", "f32"), ("bf16", "f32")]))
    f = form(atype, dtype)
    seed = draw(st.integers(0, 2**32 - 1))
    spread = draw(st.sampled_from([0, 4, 12, 30]))  # exponent range of the data
    return (f, seed, spread, draw(st.sampled_from(["rn", "rz"])), draw(st.booleans()), draw(st.booleans()),
            draw(st.sampled_from([0, 0, 2, 20])))


@settings(max_examples=60, deadline=None)
@given(wgmma_case())
def test_spec_bound_contains_every_simulated_machine(case):
    f, seed, spread, mode, ftz, fused, n_special = case
    rng = np.random.default_rng(seed)
    k = f.shape.k
    fmt_in = F.FLOATS[f.atype]
    lim = min(spread, fmt_in.emax - 2)

    def data(shape, t):
        x = rng.standard_normal(shape) * np.exp2(rng.integers(-lim, lim + 1, shape))
        bits = F.encode(t, x, saturate=True)
        specials = np.array(list(F.special_values(t).values()), dtype=bits.dtype)
        idx = rng.integers(0, bits.size, n_special)
        bits.flat[idx] = rng.choice(specials, n_special)
        return bits

    a, b = data((64, k), f.atype), data((k, 8), f.btype)
    c = data((64, 8), f.dtype).astype(np.uint32)
    r = W.wgmma_dense(f, a, b, c)
    av, bv, cv = F.decode(f.atype, a), F.decode(f.btype, b), F.decode(f.dtype, c)
    np_t = np.float16 if f.dtype == "f16" else np.float32
    bits_t = np.uint16 if f.dtype == "f16" else np.uint32
    for _ in range(3):
        order = rng.permutation(k)
        sim = simulate(av, bv, cv, np_t, order, mode, ftz, fused, (f.atype, f.btype, f.dtype),
                       convert=bool(rng.integers(2)))
        hw = sim.view(bits_t).astype(np.uint32)
        ok = W.within(r, hw)
        assert ok.all(), (f.opcode, np.argwhere(~ok)[:3], sim[~ok][:3], r.lo[~ok][:3], r.hi[~ok][:3])


def test_interval_past_the_format_range_stops_at_max_finite():
    """lo/hi bound the finite members: an end past f16's range is +-65504, never +-Inf.

    Regression (H100, tests/hw_records/dense_wgmma_special.json): -Inf as lo made a
    chained wgmma read C = -Inf and allow no finite value; the H100 gave -65152.
    """
    f16, a, b, c = special_case("f16", "f16")
    a[0, :] = -255.0
    b[:, :] = 255.0  # 16 * -65025: far past f16's max, each product alone within it
    c[0, :] = 0.0
    r = W.wgmma_dense(f16, a, b, c)
    big = F.FLOATS["f16"].max_finite
    assert r.finite_ok[0].all() and r.may_neg_inf[0].all()
    assert (r.lo[0] == -big).all() and np.isfinite(r.hi[0]).all()
    assert W.within(r, np.full((64, 8), 0xFBFF, np.uint32))[0].all()  # -65504 (saturated) is allowed
    assert W.within(r, np.full((64, 8), 0xFC00, np.uint32))[0].all()  # and so is -Inf


def test_widen_for_c_reads_an_infinite_end_as_the_largest_finite_c():
    """C = [-Inf as lo, hi] is a set of finite values (Inf is a flag): D keeps finite members."""
    from fuzzptx.oracles.reference.wgmma_exec import widen_for_c

    f16, a, b, c = special_case("f16", "f16")
    a[:, :], b[:, :] = 0.0, 0.0
    a[:, 0], b[0, :] = 1.0, 2.0  # A*B = 2 everywhere
    cset = np.ones((64, 8), bool)
    clo, chi = np.full((64, 8), -np.inf), np.full((64, 8), 100.0)
    c_bits = F.encode("f16", np.zeros((64, 8))).astype(np.uint32)
    a_bits, b_bits = F.encode("f16", a).astype(np.uint32), F.encode("f16", b).astype(np.uint32)
    _, lo, hi, _ = widen_for_c(f16, a_bits, b_bits, c_bits, clo, chi, cset, 1, 1)
    big = F.FLOATS["f16"].max_finite
    assert (lo == -big).all() and (hi >= 102.0).all() and (hi < big).all()  # err grows with |C| up to 65504


def test_the_blas_path_and_the_general_path_agree_on_zero_sums():
    """``_finite_result`` keeps the BLAS path when some D elements sum only zeros (it used to hand
    the whole tile to ``_special_result``): the sign of each zero sum (-0 only when every term and
    C are -0) and every other field must match the general path's exactly."""
    rng = np.random.default_rng(0)
    vals, p = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -3.0, 0.5]), [.35, .35, .06, .06, .06, .06, .06]
    zero_sums = 0
    for t in range(120):
        k, n, scale_d = int(rng.choice([8, 16, 32])), int(rng.choice([8, 16, 24])), bool(t % 2)
        av, bv = rng.choice(vals, size=(64, k), p=p), rng.choice(vals, size=(k, n), p=p)
        cv = rng.choice(vals, size=(64, n)) if scale_d else np.zeros((64, n))
        for dtype, precision in (("f32", 24), ("f16", 11)):
            fast = W._finite_result(dtype, av, bv, cv, scale_d, precision)
            slow = W._special_result("f16", "f16", dtype, av, bv, cv, scale_d, precision)
            assert fast is not None
            zero_sums += int((fast.value == 0).sum())
            for f in ("bits", "value", "lo", "hi", "finite_ok", "may_nan", "may_pos_inf", "may_neg_inf"):
                assert np.array_equal(getattr(fast, f), getattr(slow, f), equal_nan=True), (t, dtype, f)
            assert np.array_equal(np.signbit(fast.value), np.signbit(slow.value))
    assert zero_sums > 1000  # the case this is about did occur
