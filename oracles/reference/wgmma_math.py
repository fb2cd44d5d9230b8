"""The arithmetic of one dense ``wgmma.mma_async``: D = A*B (+ C), independent of layouts.

Spec mode returns, per element of D, the set of results the PTX ISA allows
(seed 000, "Precision and rounding"), not one number:

* products "with at least single precision"; accumulation "with at least single
  precision" (.f32 D) or "at least half precision" (.f16 D); "the accumulation
  order, rounding and handling of subnormal inputs are unspecified"; .tf32 inputs
  drop their low 13 bits first.
* Model: every product and every addition is one operation ``fl(x) = x(1+d) + e``
  with ``|d| <= u`` and ``|e| <= eta``.  Rounding is unspecified, so u is one ulp
  (directed rounding allowed): u = 2^(1-p), p = 24 for f32, 11 for f16 accumulation
  (products use 2^-23 <= u).  eta = the smallest normal of the format (covers
  underflow and flush-to-zero of intermediates).  Any order means any summation
  tree: each term passes through its product, a possible conversion to the
  accumulator format and at most n-1 additions (n terms: K products, plus C when
  scale-d), so (Higham, Accuracy and Stability of Numerical Algorithms, 3.1 and 4.2)

      |D_computed - D_exact| <= gamma_{n+1} * (|C| + sum|a_i b_i|)
                                + (K eta_f32 + (K + n - 1) eta_acc) (1 + gamma_{n+1})
                                + sum of |a_i b_i| (and |C|) whose inputs are subnormal
      gamma_m = m u / (1 - m u)

  the last term because a subnormal input may be flushed to zero.  This also
  bounds a fused multi-term adder that aligns to the largest exponent and keeps
  at least p bits (each term then errs by <= 2^-p * 2 max|x| <= u sum|x|).  The
  float64 evaluation of the exact value adds a 2^-50 n sum|x| slack.  Finally D
  is stored in its format with unspecified rounding, so the interval widens to
  the neighbouring representable values.
* Infinities and NaN: NaN if any input term is NaN, Inf*0, or Infs of both signs;
  Inf*subnormal may be NaN (flushed) or Inf; finite partial sums whose magnitude
  bound passes the format's max may overflow to Inf of that sign (and NaN if
  both signs can), or saturate at max (round toward zero), which can lose up to
  the sum of that sign's terms: the opposite end of the interval widens by it.
  A NaN result matches any NaN bit pattern.

Integer forms are exact: int64 dot product plus C, then .satfinite clamps to
s32, otherwise wraps (the clamp is applied once to the exact sum: "on overflow,
the accumulated value is limited").  b1 ``.and.popc``: C + popcount(a AND b)
over K, wrapped.  imm-scale-a/b negate A/B (floats only).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

import fuzzptx.oracles.reference.formats as F
import fuzzptx.oracles.reference.hw_numerics as hw_numerics

M = 64
ACC_PRECISION = {"f32": 24, "f16": 11}  # significand bits the spec promises ("at least")
PRODUCT_U = 2.0 ** -23  # products: at least single precision, any rounding
PRODUCT_ETA = F.FLOATS["f32"].min_normal


@dataclass(frozen=True, eq=False)
class Result:
    """What one wgmma may store in each D element.

    ``bits``/``value``: the nominal result (round-to-nearest of ``exact_value``; canonical
    NaN/Inf where the class is forced).  Acceptance: a hardware value x passes when
    x is NaN and ``may_nan``, +Inf and ``may_pos_inf``, -Inf and ``may_neg_inf``, or finite
    with ``finite_ok`` and ``lo <= x <= hi``.  ``integer``: integer forms, bits must match.
    """

    dtype: str
    bits: np.ndarray  # uint32 [M, N]; f16 accumulators hold f16 bits
    value: np.ndarray  # float64 (floats) or int64 (integers) [M, N]
    exact_value: np.ndarray  # float64 C + sum a*b before storing (compensated sum of exact products)
    lo: np.ndarray
    hi: np.ndarray
    err: np.ndarray  # half-width of the interval before widening to the format (0 for integers)
    finite_ok: np.ndarray
    may_nan: np.ndarray
    may_pos_inf: np.ndarray
    may_neg_inf: np.ndarray
    integer: bool

    @property
    def must_nan(self) -> np.ndarray:
        return self.may_nan & ~self.finite_ok & ~self.may_pos_inf & ~self.may_neg_inf


def gamma(n: int | np.ndarray, u: float) -> np.ndarray:
    """Higham's gamma_n = n u / (1 - n u), the bound for n rounding errors in a product of (1+d)."""
    nu = np.asarray(n, dtype=np.float64) * u
    if np.any(nu >= 1):
        raise ValueError("n*u >= 1: the error bound is void")
    return nu / (1 - nu)


@functools.lru_cache(maxsize=None)
def _bound_consts(dtype: str, k: int, n_terms: int, precision: int) -> tuple[float, float, float, float]:
    """(g, eta, g + 2^-50 n, slack) of the error bound, per form: the same float64 operations as
    written inline before (Python floats and numpy float64 scalars round alike)."""
    acc = F.FLOATS[dtype]
    g = float(gamma(n_terms + 1, 2.0 ** (1 - precision)))  # product, conversion to the accumulator, <= n-1 additions
    eta = (k * PRODUCT_ETA + (k + n_terms - 1) * acc.min_normal) * (1 + g)
    return g, eta, g + 2.0 ** -50 * n_terms, (1 + g) * (1 + 2.0 ** -40)


@functools.lru_cache(maxsize=None)
def _max_finite(dtype: str) -> float:
    """``F.FLOATS[dtype].max_finite`` (a property that recomputes an ldexp per call)."""
    return F.FLOATS[dtype].max_finite


def _as_bits(type_: str, x: np.ndarray) -> np.ndarray:
    """Unsigned arrays are bits; signed ints or floats are values to encode (RNE)."""
    arr = np.asarray(x)
    return arr if arr.dtype.kind in "ub" else F.encode(type_, arr)


def _neumaier_sum(c: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """c + sum over axis 1 of terms [M,K,N], compensated (nominal value; the bound covers the rest)."""
    s = c.copy()
    comp = np.zeros_like(s)
    for k in range(terms.shape[1]):
        x = terms[:, k, :]
        t = s + x
        big = np.abs(s) >= np.abs(x)
        comp += np.where(big, (s - t) + x, (x - t) + s)
        s = t
    return np.where(comp == 0, s, s + comp)  # keeps the sign of an exact zero sum


_ACC_NP = {"f32": (np.float32, np.uint32), "f16": (np.float16, np.uint16)}


def encode_acc(dtype: str, x: np.ndarray) -> np.ndarray:
    """``F.encode(dtype, x).astype(np.uint32)`` for accumulator values: numpy's cast is the same RNE."""
    t = _ACC_NP.get(dtype)
    if t is None:
        return F.encode(dtype, x).astype(np.uint32)
    with np.errstate(invalid="ignore", over="ignore"):
        raw = x.astype(t[0]).view(t[1])
    return np.where(np.isnan(x), t[1](F.CANONICAL_NAN[dtype]), raw).astype(np.uint32)


def _round_out(x: np.ndarray, type_: str, down: bool) -> np.ndarray:
    """The nearest value of the accumulator format (f32/f16) on the outer side of x.

    An end past the format's range stops at its largest finite value: lo/hi bound the
    *finite* members (Inf membership is the may_*_inf flags).  Rounding out to -Inf/+Inf
    there made a chained wgmma read that end as C = Inf, so its set lost every finite
    value the hardware can give (tests/hw_records/dense_wgmma_special.json, k_steps=2).
    """
    np_t = F._NP_FLOAT[type_]
    with np.errstate(invalid="ignore", over="ignore"):
        # numpy's float64 -> float32/float16 casts round to nearest even, like round_to_format
        r = x.astype(np_t) if type_ in ("f32", "f16", "f64") else F.round_to_format(x, type_).astype(np_t)
        bad = (r > x) if down else (r < x)
        step = np.nextafter(r, np_t(-np.inf if down else np.inf))
    out = np.where(bad, step, r).astype(np.float64)
    big = F.FLOATS[type_].max_finite
    return np.maximum(out, -big) if down else np.minimum(out, big)


_INT_OF = {np.float16: np.int16, np.float32: np.int32, np.float64: np.int64}



def _bounds(value, err, over_pos, over_neg, pos_sum, neg_sum, slack, eta, dtype):
    """The interval [value - err, value + err] rounded outward to ``dtype``, each side widened by
    its whole sum where a partial sum may have saturated there (``over_pos`` / ``over_neg``)."""
    x2 = np.empty((2,) + value.shape)  # [lo end, -(hi end)] for _round_out_pair
    np.subtract(value, err, out=x2[0])
    if over_pos.any():
        x2[0] -= np.where(over_pos, pos_sum * slack + eta, 0.0)
    np.add(value, err, out=x2[1])
    if over_neg.any():
        x2[1] += np.where(over_neg, -neg_sum * slack + eta, 0.0)
    np.negative(x2[1], out=x2[1])
    return _round_out_pair(x2, dtype)


def _round_out_pair(x2: np.ndarray, type_: str) -> tuple[np.ndarray, np.ndarray]:
    """``(_round_out(x2[0], down=True), _round_out(-x2[1], down=False))`` in one pass over both.

    x2 is ``[2, ...]`` with the upper end negated: rounding out upwards is the negation of
    rounding the negated value out downwards (round-to-nearest and the clamp are symmetric,
    signed zeros and NaN signs included), so both ends take the same casts.  The step down
    from a cast value r > x is r's bits minus one (r > 0) or plus one (r < 0, -0 included):
    what ``np.nextafter(r, -inf)`` gives (+0 is never above x), without its per-element libm call.
    """
    np_t = F._NP_FLOAT[type_]
    int_t = _INT_OF.get(np_t)
    if int_t is None or type_ not in ("f32", "f16", "f64"):
        return _round_out(x2[0], type_, down=True), _round_out(-x2[1], type_, down=False)
    if type_ == "f16" and np.isfinite(x2).all():  # numpy's float16 casts are per-element software
        out = _round_down_f16(x2)
        return out[0], np.negative(out[1])
    with np.errstate(invalid="ignore", over="ignore"):
        r = x2.astype(np_t)  # numpy's casts round to nearest even, like round_to_format
        bad = r > x2
    rb = r.view(int_t)
    step = rb >> (8 * rb.itemsize - 1)  # -1 where the sign bit is set, else 0
    step |= 1
    step *= bad
    rb -= step
    out = r.astype(np.float64)
    np.maximum(out, -_max_finite(type_), out=out)
    return out[0], np.negative(out[1])


def _round_down_f16(x: np.ndarray) -> np.ndarray:
    """``max(RD(x), -max)`` for finite float64 x, RD = the largest f16 value <= x: what
    ``_round_out(x, "f16", down=True)`` computes (a cast to nearest, stepped down where above x).

    Clamped to +-max first (RD(x) is max above it, and below -max the clamp gives -max).  f16
    normal range: dropping the low 42 of float64's 52 fraction bits rounds the magnitude down,
    so positives truncate and negatives round their magnitude up (carrying into the exponent
    where it must).  Below the smallest normal the quantum is fixed: floor(x / 2^-24) · 2^-24.
    """
    big = _max_finite("f16")
    y = np.minimum(x, big)
    np.maximum(y, -big, out=y)
    b = y.view(np.int64)
    mask = (1 << 42) - 1
    t = b >> 63  # all ones for negatives
    t &= mask
    t += b
    t &= ~mask
    out = t.view(np.float64)
    tiny = np.abs(y) < 2.0 ** -14
    if tiny.any():
        out[tiny] = np.floor(y[tiny] * 2.0 ** 24) * 2.0 ** -24
    return out


def _encode_decode_f16(x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``_encode_decode("f16", x)`` from float64 bits, for x with every |x| < 65520 (else None:
    overflow, Inf and NaN take numpy's cast).  numpy's float64 -> float16 cast is per-element
    software; this is the same round to nearest even: the magnitude's 52 fraction bits rounded
    to 10 (a carry moves into the exponent), rebiased; below the smallest normal the quantum
    is 2^-24, so rint(|x|·2^24) are the bits and that times 2^-24 the value."""
    a = np.abs(x)
    if not (a < 65520.0).all():
        return None
    u = a.view(np.uint64)
    r = (u >> np.uint64(42)) & np.uint64(1)
    r += u
    r += np.uint64((1 << 41) - 1)
    r >>= np.uint64(42)  # f64 exponent and 10 fraction bits, rounded
    val = (r << np.uint64(42)).view(np.float64)
    r -= np.uint64((1023 - 15) << 10)  # rebias: f16 magnitude bits (normal range)
    tiny = a < 2.0 ** -14
    if tiny.any():
        q = np.rint(a[tiny] * 2.0 ** 24)
        r[tiny] = q.astype(np.uint64)
        val[tiny] = q * 2.0 ** -24
    r |= np.signbit(x).astype(np.uint64) << np.uint64(15)
    return r.astype(np.uint32), np.copysign(val, x)


def _encode_decode(dtype: str, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(encode_acc(dtype, x), F.decode(dtype, that))`` from one cast."""
    if dtype == "f16":
        fast = _encode_decode_f16(x)
        if fast is not None:
            return fast
    t = _ACC_NP.get(dtype)
    if t is None:
        bits = encode_acc(dtype, x)
        return bits, F.decode(dtype, bits)
    with np.errstate(invalid="ignore", over="ignore"):
        r = x.astype(t[0])
    raw = r.view(t[1])
    nan = np.isnan(r)  # a cast gives NaN exactly where x is NaN
    if nan.any():
        raw[nan] = F.CANONICAL_NAN[dtype]  # raw views r, a fresh array
        r = raw.view(t[0])
    return (raw if raw.dtype == np.uint32 else raw.astype(np.uint32)), r.astype(np.float64)


def _decode_input(type_: str, bits: np.ndarray, scale: int) -> np.ndarray:
    """``F.decode(type_, bits) * scale``.  Times 1 is skipped: it can change only a NaN's payload
    (quieting a signalling one), and every path reads NaN inputs through isnan/isfinite alone."""
    with np.errstate(invalid="ignore", over="ignore"):
        v = _decode(type_, bits)
        if scale != 1:
            v *= float(scale)
    return v


_LUT: dict = {}


def _decode(type_: str, bits: np.ndarray) -> np.ndarray:
    """``F.decode(type_, bits)``; 8- and 16-bit float formats from a table of every pattern's
    ``F.decode`` (one take instead of ml_dtypes' or numpy's per-element software casts)."""
    arr = np.asarray(bits)
    fmt = F.FLOATS.get(type_)
    if fmt is None or fmt.storage_bits > 16 or arr.dtype.kind != "u" or arr.ndim == 0:
        return F.decode(type_, bits)
    lut = _LUT.get(type_)
    if lut is None:
        with np.errstate(invalid="ignore"):
            lut = _LUT[type_] = F.decode(type_, np.arange(1 << fmt.storage_bits, dtype=np.uint32))
        lut.flags.writeable = False
    if arr.dtype.itemsize * 8 > fmt.storage_bits:
        arr = arr & arr.dtype.type((1 << fmt.storage_bits) - 1)
    return lut.take(arr)


@functools.lru_cache(maxsize=None)
def _min_normal(type_: str) -> float:
    return F.FLOATS[type_].min_normal


def _subnormal(type_: str, v: np.ndarray) -> np.ndarray | None:
    """``F.is_subnormal(type_, v)``, or None when it holds no True: zeros are the only values
    below the smallest normal that are not subnormal, so two counts decide."""
    a = np.abs(v)
    low = a < _min_normal(type_)
    n = np.count_nonzero(low)
    if n == 0 or n == np.count_nonzero(a == 0):
        return None
    return low & (a > 0)


def _plain(type_: str, v: np.ndarray) -> bool:
    """No NaN, Inf or subnormal element: the condition of ``_finite_result``."""
    with np.errstate(invalid="ignore"):
        if not np.abs(v).max(initial=0.0) < np.inf:  # a NaN maximum is NaN
            return False
    return _subnormal(type_, v) is None


def _float_result(atype: str, btype: str, dtype: str, a: np.ndarray, b: np.ndarray, c: np.ndarray,
                  scale_d: bool, scale_a: int, scale_b: int, precision: int, shared: dict | None = None,
                  sums_cache: dict | None = None) -> Result:
    """``shared``: a dict kept between calls with the same a, b, types and scales (``wgmma_dense_pair``).
    ``sums_cache``: one kept between calls with the same A whose B differ only where the
    general path zeroes them (``_reuse_sums``: sparse B variants with non-finite entries zeroed)."""
    if shared is not None and "av" in shared:
        av, bv, ab_plain = shared["av"], shared["bv"], shared["ab_plain"]
    else:
        av = _decode_input(atype, a, scale_a)  # tf32: decode already drops the low 13 bits
        bv = _decode_input(btype, b, scale_b)
        ab_plain = _plain(atype, av) and _plain(btype, bv)
        if shared is not None:
            shared.update(av=av, bv=bv, ab_plain=ab_plain)
    cv = _decode(dtype, c) if scale_d else np.zeros((M, bv.shape[1]))
    if ab_plain and np.isfinite(cv).all():
        fast = _finite_result(dtype, av, bv, cv, scale_d, precision, shared, sums_cache, (atype, btype))
        if fast is not None:
            return fast
    if "f64" not in (atype, btype):  # exact float64 products: no [M,K,N] tensor needed
        return _special_result(atype, btype, dtype, av, bv, cv, scale_d, precision, shared, sums_cache)
    with np.errstate(invalid="ignore", over="ignore"):
        p = av[:, :, None] * bv[None, :, :]  # exact in float64 for every wgmma input type
    flushable = F.is_subnormal(atype, av)[:, :, None] | F.is_subnormal(btype, bv)[None, :, :]
    c_flushable = F.is_subnormal(dtype, cv)

    nan_p, inf_p = np.isnan(p), np.isinf(p)
    pos_inf = (inf_p & (p > 0)).any(axis=1) | (cv == np.inf)
    neg_inf = (inf_p & (p < 0)).any(axis=1) | (cv == -np.inf)
    pos_inf_sure = (inf_p & (p > 0) & ~flushable).any(axis=1) | (cv == np.inf)
    neg_inf_sure = (inf_p & (p < 0) & ~flushable).any(axis=1) | (cv == -np.inf)
    nan_sure = nan_p.any(axis=1) | np.isnan(cv) | (pos_inf_sure & neg_inf_sure)
    nan_flush = (inf_p & flushable).any(axis=1)

    fin = np.where(np.isfinite(p), p, 0.0)
    cfin = np.where(np.isfinite(cv), cv, 0.0)
    k = av.shape[1]
    n_terms = k + (1 if scale_d else 0)
    g, eta, coef, slack = _bound_consts(dtype, k, n_terms, precision)
    absum = np.abs(fin).sum(axis=1) + np.abs(cfin)
    pos_sum = np.maximum(fin, 0).sum(axis=1) + np.maximum(cfin, 0)
    neg_sum = np.minimum(fin, 0).sum(axis=1) + np.minimum(cfin, 0)
    flush = np.where(flushable, np.abs(fin), 0).sum(axis=1) + np.where(c_flushable, np.abs(cfin), 0)
    err = coef * absum + eta + flush
    err = err * (1 + 2.0 ** -40)  # the float64 evaluation of the bound itself
    value = _neumaier_sum(cfin, fin)
    return _special_tail(dtype, value, err, eta, slack, pos_sum, neg_sum, pos_inf, neg_inf, nan_sure, nan_flush)


def _zero_sums(av: np.ndarray, bv: np.ndarray) -> np.ndarray | None:
    """A read-only +0 matrix [M, N] when A or B holds only zeros (often: unwritten shared memory),
    else None.

    Every product is then a signed zero, so every matrix product of them is a zero whose sign
    depends on the BLAS's order; no result reads that sign: with C non-zero each sum plus C is
    C, and with C zero the sums of magnitudes are zero, so the nominal value takes the
    all-terms-negative-zero rule and the bound is eta (x·coef + eta and ±0 + eta are eta)."""
    if av.any() and bv.any():
        return None
    z = np.zeros((av.shape[0], bv.shape[1]))
    z.flags.writeable = False
    return z


def _finite_ab(av: np.ndarray, bv: np.ndarray, types: tuple[str, str] | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The C-independent sums of ``_finite_result``: positive and negative products, and A·B
    (``types``: the input formats, for ``_exact_sums``)."""
    z = _zero_sums(av, bv)
    if z is not None:
        return z, z, z
    if types is not None and _exact_sums(types, av, bv):
        with np.errstate(over="ignore", invalid="ignore"):
            value = av @ bv
            return _split_sums(np.abs(av) @ np.abs(bv), value) + (value,)
    ap, an = np.maximum(av, 0), np.minimum(av, 0)
    bp, bn = np.maximum(bv, 0), np.minimum(bv, 0)
    with np.errstate(over="ignore", invalid="ignore"):
        return ap @ bp + an @ bn, ap @ bn + an @ bp, av @ bv


def _match_all_k(a_code: np.ndarray, b_code: np.ndarray, bits: int) -> np.ndarray:
    """bool [M, N]: ``a_code[m, k] == b_code[k, n]`` for every k (codes below 2**bits).

    Each row of A and column of B packed into 64-bit keys (64 // bits codes per key): one
    comparison per key instead of a matrix product of indicator counts.
    """
    k = a_code.shape[1]
    per = 64 // bits
    out = None
    for s in range(0, k, per):
        sh = np.arange(min(per, k - s), dtype=np.uint64) * np.uint64(bits)
        ka = (a_code[:, s:s + per].astype(np.uint64) << sh).sum(axis=1, dtype=np.uint64)
        kb = (b_code[s:s + per].astype(np.uint64) << sh[:, None]).sum(axis=0, dtype=np.uint64)
        eq = ka[:, None] == kb[None, :]
        out = eq if out is None else np.logical_and(out, eq, out=out)
    return out


def _finite_result(dtype: str, av: np.ndarray, bv: np.ndarray, cv: np.ndarray, scale_d: bool,
                   precision: int, shared: dict | None = None, sums_cache: dict | None = None,
                   types: tuple[str, str] | None = None) -> Result | None:
    """``_float_result`` for the common case (finite inputs, no subnormal A/B elements), with BLAS.

    Same bound as the general path.  Sums of products come from float64 matrix
    products instead of a compensated per-k loop; their own error (at most
    k·2^-53·Σ|a·b| each) is inside the bound's 2^-50·n term, so the sets stay sound.
    """
    k = av.shape[1]
    n_terms = k + (1 if scale_d else 0)
    g, eta, coef, slack = _bound_consts(dtype, k, n_terms, precision)
    big = _max_finite(dtype)
    ab = None if shared is None else shared.get("finite_ab")
    if ab is None:  # the A·B sums (C-independent)
        hit = _reuse_sums(sums_cache, av, bv)
        ab = _finite_ab(av, bv, types) if hit is None else (hit[1], hit[2], hit[4])
        if shared is not None:
            shared["finite_ab"] = ab
    with np.errstate(over="ignore", invalid="ignore"):
        pos_sum = np.maximum(cv, 0)
        np.add(ab[0], pos_sum, out=pos_sum)
        neg_sum = np.minimum(cv, 0)
        np.add(ab[1], neg_sum, out=neg_sum)
        absum = pos_sum - neg_sum
        value = ab[2] + cv
    zero = absum > 0
    np.logical_not(zero, out=zero)
    if zero.any():  # an all-zero sum is -0 only when every term and C are -0 (as _special_result)
        negz = _match_all_k(np.signbit(av), ~np.signbit(bv), 1)  # every product's sign bit set
        _zero_signs(value, zero, negz & np.signbit(cv))
    err = absum * coef
    err += eta
    c_sub = _subnormal(dtype, cv) if scale_d else None
    if c_sub is not None:  # else the flush term is 0.0, and err + 0.0 == err
        err += np.where(c_sub, np.abs(cv), 0.0)
    err *= 1 + 2.0 ** -40
    over_pos = pos_sum + err > big
    over_neg = err - neg_sum > big  # -neg_sum + err, the same rounding
    bits, decoded = _encode_decode(dtype, value)
    lo, hi = _bounds(value, err, over_pos, over_neg, pos_sum, neg_sum, slack, eta, dtype)
    return Result(dtype, bits, decoded, value, lo, hi, err, np.ones(value.shape, dtype=bool), over_pos & over_neg,
                  over_pos, over_neg, integer=False)


def _special_result(atype: str, btype: str, dtype: str, av: np.ndarray, bv: np.ndarray, cv: np.ndarray,
                    scale_d: bool, precision: int, shared: dict | None = None,
                    sums_cache: dict | None = None) -> Result:
    """``_float_result``'s general case (NaN/Inf/subnormal inputs, zero sums) without [M,K,N] products.

    Needs exact float64 products (every input type but f64).  Every per-element "any
    product over k" test is a count from a matrix product of 0/1 indicator matrices
    (exact: K is small), and every sum over k of finite products is a float64 matrix
    product of the inputs with their non-finite entries zeroed (a non-finite product
    has a non-finite factor, so that zeroes exactly the terms the general path drops).
    Its rounding is inside the bound's 2^-50·n term, as in ``_finite_result``.  Zero
    sums get the exact sign of their zero (-0 only when every term and C are -0).
    """
    k = av.shape[1]
    ab = None if shared is None else shared.get("special_ab")
    if ab is None:
        ab = _special_ab(atype, btype, av, bv, sums_cache)
        if shared is not None:
            shared["special_ab"] = ab
    (nan_p, pos_p, neg_p, pos_p_sure, neg_p_sure, nan_flush, ab_abs, ab_pos, ab_neg, ab_flush, ab_value,
     negz) = ab
    if np.isfinite(cv).all():  # C adds no class: the product's own (never written in place below)
        cfin = cv
        pos_inf, neg_inf = pos_p, neg_p
        nan_sure = nan_p | (pos_p_sure & neg_p_sure)
    else:
        c_pinf, c_ninf = cv == np.inf, cv == -np.inf
        pos_inf, neg_inf = pos_p | c_pinf, neg_p | c_ninf
        nan_sure = nan_p | np.isnan(cv) | ((pos_p_sure | c_pinf) & (neg_p_sure | c_ninf))
        cfin = np.where(np.isfinite(cv), cv, 0.0)
    n_terms = k + (1 if scale_d else 0)
    g, eta, coef, slack = _bound_consts(dtype, k, n_terms, precision)
    absum = ab_abs + np.abs(cfin)
    pos_sum = ab_pos + np.maximum(cfin, 0)
    neg_sum = ab_neg + np.minimum(cfin, 0)
    err = absum * coef
    err += eta
    # the flush term: A·B's (None: no subnormal factor, all zeros) plus C's; err > 0, so adding a zero changes nothing
    c_sub = _subnormal(dtype, cv) if scale_d else None
    if c_sub is not None:
        err += np.where(c_sub, np.abs(cfin), 0) if ab_flush is None else ab_flush + np.where(c_sub, np.abs(cfin), 0)
    elif ab_flush is not None:
        err += ab_flush
    err *= 1 + 2.0 ** -40  # the float64 evaluation of the bound itself
    value = ab_value + cfin
    zero = absum == 0
    if zero.any():  # a sum of zeros is -0 only when every term (and C) is -0 (round to nearest)
        _zero_signs(value, zero, negz() & np.signbit(cfin))
    return _special_tail(dtype, value, err, eta, slack, pos_sum, neg_sum, pos_inf, neg_inf, nan_sure, nan_flush)


_POW2 = 2.0 ** np.arange(52)  # bit weights of a 52-bit key: float64 sums of them are exact


def _zero_signs(value: np.ndarray, zero: np.ndarray, neg: np.ndarray) -> None:
    """In place: ``value = where(zero, where(neg, -0.0, 0.0), value)`` (value is the caller's own)."""
    value[zero] = 0.0
    value[zero & neg] = -0.0


def _exists_and(am: np.ndarray, bm: np.ndarray) -> np.ndarray:
    """bool [m, n]: some k with ``am[i, k] and bm[k, j]`` (bool [m, K], [K, n]).

    The k where either side is all false are dropped; the rest are packed 52 to a 64-bit key
    per row of ``am`` and per column of ``bm`` (dot products with powers of two: exact), so
    each chunk of k is one AND of keys instead of a matrix product over k."""
    live = am.any(axis=0) & bm.any(axis=1)
    if not live.any():
        return np.zeros((am.shape[0], bm.shape[1]), bool)
    am, bm = am[:, live], bm[live]
    acc = None
    for s in range(0, am.shape[1], 52):
        w = _POW2[:min(52, am.shape[1] - s)]
        ka = (am[:, s:s + 52].astype(np.float64) @ w).astype(np.uint64)
        kb = (w @ bm[s:s + 52].astype(np.float64)).astype(np.uint64)
        t = ka[:, None] & kb[None, :]
        acc = t if acc is None else np.bitwise_or(acc, t, out=acc)
    return acc != 0


def _counts(lhs: list, rhs: list) -> list:
    """Per output j, bool [m, n]: ``sum_i lhs[i] @ rhs[j][i] > 0`` for 0/1 indicators (bool arrays):
    the lhs indicators side by side along k against each output's rhs stacked along k."""
    am = np.concatenate(lhs, axis=1)
    return [_exists_and(am, np.concatenate(col, axis=0)) for col in rhs]


def _inf_tests(av: np.ndarray, bv: np.ndarray, a_inf: np.ndarray, b_inf: np.ndarray,
               a_sub: np.ndarray | None, b_sub: np.ndarray | None) -> tuple:
    """``_special_ab``'s "some product is ..." tests, bool [M, N]: (Inf times zero, +Inf, -Inf,
    +Inf and -Inf without a subnormal factor, Inf times subnormal).

    An Inf product has an Inf factor, so every count runs over the k where A has an Inf column
    entry (meeting B's rows there) or B an Inf row entry (meeting A's columns there): a few k,
    not K.  The counts are those of the full indicator products, exactly."""
    ka = np.flatnonzero(a_inf.any(axis=0))
    kb = np.flatnonzero(b_inf.any(axis=1))
    ai, bf = av[:, ka], bv[ka]  # A's Inf columns and the B rows they meet
    af, bi = av[:, kb], bv[kb]  # A's columns meeting B's Inf rows
    a_pinf, a_ninf, b_pinf, b_ninf = ai == np.inf, ai == -np.inf, bi == np.inf, bi == -np.inf
    b_pos, b_neg, a_pos, a_neg = bf > 0, bf < 0, af > 0, af < 0  # NaN is neither
    a_inf_k, b_inf_k = a_pinf | a_ninf, b_pinf | b_ninf
    nan_p, = _counts([a_inf_k, af == 0], [[bf == 0, b_inf_k]])
    pos_p, neg_p = _counts([a_pinf, a_ninf, a_pos, a_neg], [[b_pos, b_neg, b_pinf, b_ninf], [b_neg, b_pos, b_ninf, b_pinf]])
    if a_sub is None and b_sub is None:  # no Inf·subnormal product: every Inf product is sure
        return nan_p, pos_p, neg_p, pos_p, neg_p, np.zeros(pos_p.shape, bool)
    a_s = a_sub[:, kb] if a_sub is not None else np.zeros(af.shape, bool)
    b_s = b_sub[ka] if b_sub is not None else np.zeros(bf.shape, bool)
    a_pos_n, a_neg_n, b_pos_n, b_neg_n = a_pos & ~a_s, a_neg & ~a_s, b_pos & ~b_s, b_neg & ~b_s
    pos_sure, neg_sure = _counts([a_pinf, a_ninf, a_pos_n, a_neg_n],
                                 [[b_pos_n, b_neg_n, b_pinf, b_ninf], [b_neg_n, b_pos_n, b_ninf, b_pinf]])
    nan_flush, = _counts([a_inf_k, a_s], [[b_s, b_inf_k]])
    return nan_p, pos_p, neg_p, pos_sure, neg_sure, nan_flush


def _special_ab(atype: str, btype: str, av: np.ndarray, bv: np.ndarray, sums_cache: dict | None = None) -> tuple:
    """The C-independent part of ``_special_result``: "some product" tests and A·B sums.

    ``pos_p``... are bool (the only use of their counts was ``> 0``); ``ab_flush`` is None when
    no factor is subnormal (its sums are then all zero); ``negz()``: every product is -0."""
    m, n = av.shape[0], bv.shape[1]
    a_nan, b_nan = np.isnan(av), np.isnan(bv)
    a_fin, b_fin = np.isfinite(av), np.isfinite(bv)
    a_sub, b_sub = _subnormal(atype, av), _subnormal(btype, bv)
    nan_p = a_nan.any(axis=1)[:, None] | b_nan.any(axis=0)[None, :]
    a_inf, b_inf = ~(a_fin | a_nan), ~(b_fin | b_nan)
    if a_inf.any() or b_inf.any():
        nan_i, pos_p, neg_p, pos_p_sure, neg_p_sure, nan_flush = _inf_tests(av, bv, a_inf, b_inf, a_sub, b_sub)
        nan_p = nan_p | nan_i
    else:
        pos_p = neg_p = pos_p_sure = neg_p_sure = nan_flush = np.zeros((m, n), bool)

    a_all, b_all = bool(a_fin.all()), bool(b_fin.all())
    a0 = av if a_all else np.where(a_fin, av, 0.0)
    b0 = bv if b_all else np.where(b_fin, bv, 0.0)
    sums = _reuse_sums(sums_cache, a0, b0)
    if sums is None:
        sums = _special_sums(a0, b0, a_sub, b_sub, (atype, btype))
        if sums_cache is not None and "sums" not in sums_cache:
            sums_cache["sums"] = (a0, b0, sums)

    def negz() -> np.ndarray:  # per element: every term is -0 (only needed for zero sums)
        a_code = np.signbit(av).astype(np.uint8)
        b_code = (~np.signbit(bv)).astype(np.uint8)
        if not a_all:
            a_code[~a_fin] = 2  # a non-finite factor: no -0 term (matches no B code)
        if not b_all:
            b_code[~b_fin] = 3
        return _match_all_k(a_code, b_code, 2)

    return (nan_p, pos_p, neg_p, pos_p_sure, neg_p_sure, nan_flush) + sums + (negz,)


def _special_sums(a0: np.ndarray, b0: np.ndarray, a_sub: np.ndarray | None, b_sub: np.ndarray | None,
                  types: tuple[str, str] | None = None) -> tuple:
    """``_special_ab``'s sums of finite products: |a||b|, positive, negative, flushable (None:
    no subnormal factor, all zero), and A·B, from the inputs with non-finite entries zeroed.
    All zero when a side is (``_zero_sums``: their signs reach no result)."""
    z = _zero_sums(a0, b0)
    if z is not None:
        return z, z, z, None, z
    flush = None
    aa, ba = np.abs(a0), np.abs(b0)
    if a_sub is not None or b_sub is not None:
        a_s = a_sub if a_sub is not None else np.zeros(a0.shape, bool)
        b_s = b_sub if b_sub is not None else np.zeros(b0.shape, bool)
        flush = (aa * a_s) @ ba + (aa * ~a_s) @ (ba * b_s)
    if types is not None and _exact_sums(types, a0, b0):
        absum, value = aa @ ba, a0 @ b0
        pos, neg = _split_sums(absum, value)
        return absum, pos, neg, flush, value
    ap, an = np.maximum(a0, 0), np.minimum(a0, 0)
    bp, bn = np.maximum(b0, 0), np.minimum(b0, 0)
    return aa @ ba, ap @ bp + an @ bn, ap @ bn + an @ bp, flush, a0 @ b0


_NARROW = ("f16", "bf16", "tf32", "e4m3", "e5m2")  # at most 24 significant bits: exact float64 products


def _min_quantum(type_: str, x: np.ndarray) -> tuple[float, float] | None:
    """(a power of two every element of x is an integer multiple of, max |x|); None if x is all zero.

    A value v of a format with p significant bits is a multiple of 2^(floor(log2|v|) - p + 1)
    (subnormals of a finer one still), and a larger |v| of a multiple of that power."""
    a = np.abs(x)
    nz = a[a > 0]
    if not nz.size:
        return None
    return math.ldexp(1.0, math.frexp(float(nz.min()))[1] - 1 - F.FLOATS[type_].man_bits), float(nz.max())


def _exact_sums(types: tuple[str, str], a: np.ndarray, b: np.ndarray) -> bool:
    """Every sum of any products a[m,k]·b[k,n] over k (any order, any subset, doubled) is exact
    in float64: each product is a multiple of Q = qa·qb and each sum is at most K·max|a|·max|b|,
    so below 2^51·Q every partial sum, doubled, is a representable multiple of Q.  Then each matrix
    product is the exact sum whatever the BLAS's order (or +0 where terms cancel, as round to
    nearest gives x + (-x)), and so is (|A|·|B| ± A·B)/2 for the positive / negative sums:
    they differ from the separate products at most in the sign of a zero sum, which no
    result reads (see ``_zero_sums``)."""
    if types[0] not in _NARROW or types[1] not in _NARROW:
        return False
    qa, qb = _min_quantum(types[0], a), _min_quantum(types[1], b)
    if qa is None or qb is None:
        return False
    return a.shape[1] * qa[1] * qb[1] < 2.0 ** 51 * qa[0] * qb[0]  # doubled sums below 2^53·Q, rounding aside


def _split_sums(absum: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positive, negative) product sums from the exact |A|·|B| and A·B (``_exact_sums``)."""
    pos = absum + value
    pos *= 0.5
    neg = value - absum
    neg *= 0.5
    return pos, neg


def _same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    """Bit-for-bit equal float64 arrays (-0 differs from +0)."""
    return x is y or (x.shape == y.shape and bool((np.ascontiguousarray(x).view(np.int64)
                                                   == np.ascontiguousarray(y).view(np.int64)).all()))


def _reuse_sums(sums_cache: dict | None, a0: np.ndarray, b0: np.ndarray) -> tuple | None:
    """The ``_special_sums`` an earlier call stored in ``sums_cache``, when its finite-zeroed
    operands were bit for bit these: the same matrix products of the same operands.  Zeroing
    a non-finite B entry (a sparse row that never multiplies it) leaves the zeroed B the same,
    so such B variants share the products; -0 in place of +0 does not, and is checked.  (The
    subnormal masks, hence the flush sums, are those of the same zeroed operands.)"""
    hit = None if sums_cache is None else sums_cache.get("sums")
    if hit is None or not (_same_bits(hit[0], a0) and _same_bits(hit[1], b0)):
        return None
    return hit[2]


def _special_tail(dtype, value, err, eta, slack, pos_sum, neg_sum, pos_inf, neg_inf, nan_sure, nan_flush) -> Result:
    """Classes, nominal bits and the rounded-out interval of ``_special_result``."""
    big = _max_finite(dtype)
    over_pos = pos_sum + err > big
    over_neg = err - neg_sum > big  # -neg_sum + err, the same rounding

    not_nan = ~nan_sure
    infinite = (pos_inf | neg_inf) & not_nan
    finite_ok = not_nan & ~infinite
    may_pos = not_nan & (pos_inf | over_pos)  # an Inf term, or finite terms overflowing
    may_neg = not_nan & (neg_inf | over_neg)
    may_nan = nan_sure | nan_flush | (may_pos & may_neg)
    all_finite = bool(finite_ok.all())
    if all_finite:
        nominal = value
    else:
        nominal = value.copy()  # NaN where sure or Infs of both signs, else the Inf of its sign
        nominal[infinite & pos_inf] = np.inf
        nominal[infinite & ~pos_inf] = -np.inf
        nominal[nan_sure | (infinite & pos_inf & neg_inf)] = np.nan
    bits, decoded = _encode_decode(dtype, nominal)
    # A partial sum past the format's max may saturate (round toward zero) instead of
    # overflowing; each clamp loses at most the term just added, so the other side of
    # the interval moves out by that side's whole sum.  (Adding 0.0 where none does is exact.)
    lo, hi = _bounds(value, err, over_pos, over_neg, pos_sum, neg_sum, slack, eta, dtype)
    if not all_finite:
        gone = ~finite_ok
        lo[gone] = np.nan
        hi[gone] = np.nan
        err[gone] = np.nan  # err is this call's own array
    return Result(dtype, bits, decoded, nominal, lo, hi, err, finite_ok, may_nan, may_pos, may_neg, integer=False)


def wgmma_dense_pair(form, a: np.ndarray, b: np.ndarray, c1: np.ndarray, c2: np.ndarray,
                     scale_a: int = 1, scale_b: int = 1) -> tuple[Result, Result]:
    """``wgmma_dense`` in spec mode with scale-d true for two C's and the same A, B (C bits).

    The two ends of a C interval (``wgmma_exec.widen_for_c``): decoding and classifying A
    and B and every A·B matrix product do not depend on C, so they are done once.  Equal
    to two ``wgmma_dense`` calls.
    """
    if form.dtype == "s32":
        return (wgmma_dense(form, a, b, c1, True, scale_a, scale_b, mode="spec"),
                wgmma_dense(form, a, b, c2, True, scale_a, scale_b, mode="spec"))
    atype, btype, dtype = form.atype, form.btype, form.dtype
    k, n = form.shape.k, form.shape.n
    a_bits, b_bits = _as_bits(atype, a), _as_bits(btype, b)
    cs = [_as_bits(dtype, c) for c in (c1, c2)]
    for name, arr, shape in (("a", a_bits, (M, k)), ("b", b_bits, (k, n)), ("c", cs[0], (M, n)), ("c", cs[1], (M, n))):
        if arr.shape != shape:
            raise ValueError(f"{form.opcode}: {name} has shape {arr.shape}, expected {shape}")
    if scale_a not in (-1, 1) or scale_b not in (-1, 1):
        raise ValueError("imm-scale-a/b must be -1 or 1")
    shared: dict = {}
    prec = ACC_PRECISION[dtype]
    r1, r2 = (_float_result(atype, btype, dtype, a_bits, b_bits, c, True, scale_a, scale_b, prec, shared) for c in cs)
    return r1, r2


def _int_result(atype: str, btype: str, a: np.ndarray, b: np.ndarray, c: np.ndarray,
                scale_d: bool, satfinite: bool) -> Result:
    av = F.decode(atype, a)
    bv = F.decode(btype, b)
    cv = F.decode("s32", c) if scale_d else np.zeros((M, bv.shape[1]), dtype=np.int64)
    if atype == "b1":  # .and.popc: popcount(row AND column) on packed 64-bit words
        def words(bits01: np.ndarray) -> np.ndarray:
            packed = np.packbits(np.ascontiguousarray(bits01, dtype=np.uint8), axis=1, bitorder="little")
            return np.ascontiguousarray(packed).view(np.uint64)
        rows, cols = words(av), words(bv.T)
        both = rows[:, None, :] & cols[None, :, :]
        if hasattr(np, "bitwise_count"):  # numpy >= 2.0
            dots = np.bitwise_count(both).sum(axis=2, dtype=np.int64)
        else:
            dots = np.unpackbits(both.view(np.uint8), axis=2).sum(axis=2, dtype=np.int64)
    else:  # float64 BLAS is exact while every partial sum stays below 2^53 (8-bit inputs: K*255*255)
        big = float(np.abs(av).max(initial=0)) * float(np.abs(bv).max(initial=0)) * av.shape[1]
        dots = (av.astype(np.float64) @ bv.astype(np.float64)).astype(np.int64) if big < 2.0 ** 53 else av @ bv
    exact = dots + cv
    if satfinite:
        out = np.clip(exact, -(1 << 31), (1 << 31) - 1)
    else:
        out = ((exact + (1 << 31)) % (1 << 32)) - (1 << 31)
    bits = (out & 0xFFFFFFFF).astype(np.uint32)
    ones = np.ones(out.shape, dtype=bool)
    f = out.astype(np.float64)
    return Result("s32", bits, out, exact.astype(np.float64), f, f, np.zeros(out.shape), ones, ~ones, ~ones,
                  ~ones, integer=True)


def wgmma_dense(form, a: np.ndarray, b: np.ndarray, c: np.ndarray, scale_d: bool = True,
                scale_a: int = 1, scale_b: int = 1, mode: str = "spec",
                accum_precision: int | None = None, keep: np.ndarray | None = None,
                sums_cache: dict | None = None) -> Result:
    """D for one dense wgmma ``form`` (an ``isa.Form``): A [64,K], B [K,N], C [64,N].

    Arrays of unsigned dtype are element bits (C: accumulator bits, f16 in the low half);
    signed-integer or float arrays are values, encoded first (round to nearest even).
    ``accum_precision`` overrides the accumulator's significand bits for experiments
    (e.g. 14 for the e8m13 fp8 accumulation reported on H100); spec mode keeps the ISA's.
    ``mode="hardware"``: the H100's one result (``hw_numerics``); for ``wgmma.mma_async.sp``
    forms (A = the expanded dense A) pass ``keep``, the [64,K] mask of metadata-selected
    positions (see ``hardware_result``).  ``sums_cache``: see ``_float_result`` (spec mode).
    """
    if mode not in ("spec", "hardware"):
        raise ValueError(f"wgmma_math mode must be 'spec' or 'hardware', not {mode!r}")
    atype, btype, dtype = form.atype, form.btype, form.dtype
    k, n = form.shape.k, form.shape.n
    a_bits, b_bits = _as_bits(atype, a), _as_bits(btype, b)
    c_bits = _as_bits(dtype, c)
    for name, arr, shape in (("a", a_bits, (M, k)), ("b", b_bits, (k, n)), ("c", c_bits, (M, n))):
        if arr.shape != shape:
            raise ValueError(f"{form.opcode}: {name} has shape {arr.shape}, expected {shape}")
    if scale_a not in (-1, 1) or scale_b not in (-1, 1):
        raise ValueError("imm-scale-a/b must be -1 or 1")
    if dtype == "s32":
        if (scale_a, scale_b) != (1, 1):
            raise ValueError("integer wgmma has no imm-scale-a/b")
        return _int_result(atype, btype, a_bits, b_bits, c_bits, bool(scale_d), form.satfinite)
    if mode == "hardware":
        return hardware_result(atype, btype, dtype, a_bits, b_bits, c_bits, bool(scale_d), scale_a, scale_b,
                               sparse=".sp." in form.opcode, keep=keep)
    precision = accum_precision or ACC_PRECISION[dtype]
    return _float_result(atype, btype, dtype, a_bits, b_bits, c_bits, bool(scale_d), scale_a, scale_b, precision,
                         sums_cache=sums_cache)


def hardware_result(atype: str, btype: str, dtype: str, a: np.ndarray, b: np.ndarray, c: np.ndarray,
                    scale_d: bool, scale_a: int = 1, scale_b: int = 1, family: str = "wgmma",
                    params=None, sparse: bool = False, keep: np.ndarray | None = None) -> Result:
    """``mode="hardware"``: the H100's one result (``hw_numerics``) as a Result with lo == hi.

    ``bits`` are exact (NaN: the canonical pattern the H100 stores); ``within`` then accepts
    exactly that value (any NaN where the H100 gives NaN).  ``params``: a ``hw_numerics.Params``
    override (experiments); default ``hw_numerics.params_for(atype, dtype, family, sparse)``.
    ``sparse``: A is a sparse instruction's expanded A; ``keep`` [M,K] marks the positions its
    metadata selected (None: the non-zero bits of A, which differs from the truth only where a
    selected +0 meets an Inf/NaN of B).
    """
    if sparse and keep is None:
        keep = np.asarray(a) != 0
    params = params or hw_numerics.params_for(atype, dtype, family, sparse)
    bits = hw_numerics.mma(atype, btype, dtype, a, b, c, scale_d, scale_a, scale_b, family, params, keep)
    return exact_result(dtype, bits)


def exact_result(dtype: str, bits: np.ndarray) -> Result:
    """A Result holding one value per element (hardware mode): ``lo == hi``; NaN/Inf by their flags."""
    bits = np.asarray(bits).astype(np.uint32)
    v = F.decode(dtype, bits)
    fin = np.isfinite(v)
    return Result(dtype, bits, v, v, np.where(fin, v, np.nan), np.where(fin, v, np.nan), np.zeros(v.shape), fin,
                  np.isnan(v), v == np.inf, v == -np.inf, integer=False)


def within(result: Result, hw_bits: np.ndarray) -> np.ndarray:
    """Bool mask [M, N]: which hardware D elements (raw bits) the spec allows."""
    hw = np.asarray(hw_bits).astype(np.uint64) & np.uint64(0xFFFFFFFF)
    if result.integer:
        return hw.astype(np.uint32) == result.bits
    x = F.decode(result.dtype, hw)
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(x) & result.finite_ok & (x >= result.lo) & (x <= result.hi)
    return (np.isnan(x) & result.may_nan) | ((x == np.inf) & result.may_pos_inf) | \
        ((x == -np.inf) & result.may_neg_inf) | finite


def merge(first: Result, second: Result, mask: np.ndarray) -> Result:
    """Elementwise: ``second`` where ``mask``, else ``first`` (same dtype and shape)."""
    kw = {name: np.where(mask, getattr(second, name), getattr(first, name))
          for name in ("bits", "value", "exact_value", "lo", "hi", "err", "finite_ok", "may_nan", "may_pos_inf",
                       "may_neg_inf")}
    return Result(first.dtype, integer=first.integer, **kw)


def spec_with_keep(compute, b_bits: np.ndarray, b_nonfinite: np.ndarray, keep: np.ndarray) -> Result:
    """Spec-mode Result of a sparse product in which unselected A positions form no product.

    ``compute(b_bits) -> Result`` evaluates the product with the expanded A (zeros where the
    metadata selected nothing).  A zero there facing an Inf/NaN of B would make the set NaN,
    but the sparse instruction never multiplies those positions (docs/numerics.md; the ISA's
    A holds only the selected elements), so such B entries are zeroed for the rows that do
    not select them: zero products change neither the value nor the soundness of the bound.
    """
    res = compute(b_bits)
    nf = np.asarray(b_nonfinite, bool)
    if not nf.any():
        return res
    unsel = (~keep).astype(np.float64) @ nf.astype(np.float64) > 0  # [M, N]
    if not unsel.any():
        return res
    sel = keep.astype(np.float64) @ nf.astype(np.float64) > 0
    out = merge(res, compute(np.where(nf, 0, b_bits).astype(b_bits.dtype)), unsel & ~sel)
    mixed = unsel & sel
    if mixed.any():  # per pattern of selected rows of B that hold a non-finite entry
        krows = np.nonzero(nf.any(axis=1))[0]
        rows = np.nonzero(mixed.any(axis=1))[0]
        patterns: dict = {}
        for r in rows:
            patterns.setdefault(keep[r, krows].tobytes(), []).append(r)
        for group in patterns.values():
            zero = nf & ~keep[group[0]][:, None]
            mask = np.zeros(mixed.shape, bool)
            mask[group] = mixed[group]
            out = merge(out, compute(np.where(zero, 0, b_bits).astype(b_bits.dtype)), mask)
    return out
