"""Number formats of tensor-core operands: bits <-> values, vectorised.

Every PTX element type the catalogue names (``fuzzptx.isa.ELEMENT_BITS``) is
decoded from its raw bits (an unsigned integer array) to float64 (floats) or
int64 (integers), and encoded back with round-to-nearest-even.  Float formats
are described by one small value (``FloatFormat``) so rounding, special values
and classification share one definition instead of one branch per type.

PTX facts used (seed 000, 9.7.15.5.2 and the PTX ISA's type chapter):
- ``.tf32`` is an f32 bit pattern whose low 13 bits wgmma ignores ("truncate
  lower 13 bits of the 32-bit input data before multiplication").
- ``.e4m3`` is OCP FP8 E4M3 "fn": no infinities, NaN only at S.1111.111
  (0x7F/0xFF), max finite 448 -> ``ml_dtypes.float8_e4m3fn``.
- ``.e5m2`` is IEEE-like with infinities -> ``ml_dtypes.float8_e5m2``.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from fuzzptx.isa import ELEMENT_BITS


@dataclass(frozen=True)
class FloatFormat:
    """A binary float format: sign, ``exp_bits`` exponent, ``man_bits`` stored fraction bits.

    ``storage_bits`` is the register width it lives in (tf32 is stored in 32 bits,
    with ``pad_bits`` low bits ignored).  ``has_inf=False`` means the all-ones
    exponent is finite except the single all-ones mantissa NaN (OCP "fn" formats).
    """

    name: str
    exp_bits: int
    man_bits: int
    has_inf: bool = True
    pad_bits: int = 0

    @property
    def storage_bits(self) -> int:
        return 1 + self.exp_bits + self.man_bits + self.pad_bits

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        top = (1 << self.exp_bits) - 1
        return (top - 1 if self.has_inf else top) - self.bias

    @property
    def precision(self) -> int:
        """Significand bits including the implicit one."""
        return self.man_bits + 1

    @property
    def max_finite(self) -> float:
        frac_ulps = (1 << self.precision) - (1 if self.has_inf else 2)
        return float(np.ldexp(float(frac_ulps), self.emax - self.man_bits))

    @property
    def min_normal(self) -> float:
        return float(np.ldexp(1.0, self.emin))

    @property
    def min_subnormal(self) -> float:
        return float(np.ldexp(1.0, self.emin - self.man_bits))

    def field_bits(self, sign: int, exp: int, man: int) -> int:
        """Assemble a bit pattern from its fields (pad bits zero)."""
        return ((sign << (self.exp_bits + self.man_bits)) | (exp << self.man_bits) | man) << self.pad_bits


FLOATS: dict[str, FloatFormat] = {
    "f64": FloatFormat("f64", 11, 52),
    "f32": FloatFormat("f32", 8, 23),
    "tf32": FloatFormat("tf32", 8, 10, pad_bits=13),
    "f16": FloatFormat("f16", 5, 10),
    "bf16": FloatFormat("bf16", 8, 7),
    "e4m3": FloatFormat("e4m3", 4, 3, has_inf=False),
    "e5m2": FloatFormat("e5m2", 5, 2),
}

# numpy dtypes that hold each float format exactly (tf32 lives in float32).
_NP_FLOAT = {
    "f64": np.float64, "f32": np.float32, "tf32": np.float32, "f16": np.float16,
    "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
}
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_SIGNED_INTS = {"s4": 4, "s8": 8, "s32": 32}
_UNSIGNED_INTS = {"u4": 4, "u8": 8, "u32": 32, "b1": 1, "b8": 8, "b16": 16, "b32": 32}

# PTX's canonical NaN patterns (what cvt and arithmetic produce).
CANONICAL_NAN = {
    "f64": 0x7FFFFFFFFFFFFFFF, "f32": 0x7FFFFFFF, "tf32": 0x7FFFE000, "f16": 0x7FFF,
    "bf16": 0x7FFF, "e4m3": 0x7F, "e5m2": 0x7F,
}


def bits_per_element(type_: str) -> int:
    """Element width in bits, from the ISA catalogue (the single source of truth)."""
    return ELEMENT_BITS[type_.lstrip(".")]


def is_float(type_: str) -> bool:
    return type_.lstrip(".") in FLOATS


def _name(type_: str) -> str:
    t = type_.lstrip(".")
    if t not in FLOATS and t not in _SIGNED_INTS and t not in _UNSIGNED_INTS:
        raise ValueError(f"unknown element type {type_!r}")
    return t


def _as_uint(bits: np.ndarray | int, width: int) -> np.ndarray:
    """Raw bits as unsigned integers of the storage width, masked to ``width`` bits."""
    arr = np.asarray(bits)
    store = _UINT[max(8, 1 << (max(width, 1) - 1).bit_length())]
    mask = (1 << width) - 1
    return (arr.astype(np.uint64) & np.uint64(mask)).astype(store)


def decode(type_: str, bits: np.ndarray | int) -> np.ndarray:
    """Bits -> float64 (float types) or int64 (integer/bit types). tf32 drops its low 13 bits."""
    t = _name(type_)
    if t in FLOATS:
        fmt = FLOATS[t]
        raw = _as_uint(bits, fmt.storage_bits)
        if fmt.pad_bits:
            raw = raw & raw.dtype.type(~((1 << fmt.pad_bits) - 1) & ((1 << fmt.storage_bits) - 1))
        with np.errstate(invalid="ignore"):
            return raw.view(_NP_FLOAT[t]).astype(np.float64)
    if t in _SIGNED_INTS:
        w = _SIGNED_INTS[t]
        raw = _as_uint(bits, w).astype(np.int64)
        return np.where(raw >= (1 << (w - 1)), raw - (1 << w), raw)
    return _as_uint(bits, _UNSIGNED_INTS[t]).astype(np.int64)


def round_to_format(values: np.ndarray | float, type_: str, *, saturate: bool = False) -> np.ndarray:
    """Round float64 values to the nearest-even value of a float format (as float64).

    Exact: scaling by a power of two is exact in float64 and ``np.round`` rounds
    half to even, so this is one correctly rounded step (no double rounding).
    Overflow gives +-Inf, or NaN for formats without Inf, or +-max with ``saturate``.
    """
    fmt = FLOATS[_name(type_)]
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        _, e = np.frexp(x)
        expo = np.maximum(e.astype(np.int64) - 1, fmt.emin)
        quantum_exp = expo - fmt.man_bits
        r = np.ldexp(np.round(np.ldexp(x, -quantum_exp)), quantum_exp)
        big = np.isfinite(x) & (np.abs(r) > fmt.max_finite)
        if saturate:
            over = np.copysign(fmt.max_finite, x)
        elif fmt.has_inf:
            over = np.copysign(np.inf, x)
        else:
            over = np.nan
        r = np.where(big, over, r)
        if not fmt.has_inf and not saturate:
            r = np.where(np.isinf(x), np.nan, r)
        elif not fmt.has_inf:
            r = np.where(np.isinf(x), np.copysign(fmt.max_finite, x), r)
    return r


def encode(type_: str, values: np.ndarray | float | int, *, saturate: bool = False) -> np.ndarray:
    """Values -> bits (unsigned array of the storage width), round-to-nearest-even for floats.

    NaN encodes to PTX's canonical NaN.  Integers must be in range (ValueError otherwise):
    encoding is for building test data, where a silent wrap would hide a generator bug.
    """
    t = _name(type_)
    if t in FLOATS:
        fmt = FLOATS[t]
        r = round_to_format(values, t, saturate=saturate)
        store = _UINT[fmt.storage_bits]
        with np.errstate(invalid="ignore", over="ignore"):
            raw = np.asarray(r.astype(_NP_FLOAT[t])).view(store)
        return np.where(np.isnan(r), store(CANONICAL_NAN[t]), raw).astype(store)
    v = np.asarray(values)
    if v.dtype.kind == "f" and np.any(v != np.round(v)):
        raise ValueError(f"non-integer value for {t}")
    v = v.astype(np.int64)
    lo, hi = int_range(t)
    if np.any((v < lo) | (v > hi)):
        raise ValueError(f"value out of range [{lo}, {hi}] for {t}")
    w = bits_per_element(t)
    store = _UINT[max(8, 1 << (max(w, 1) - 1).bit_length())]
    return (v & ((1 << w) - 1)).astype(store)


def int_range(type_: str) -> tuple[int, int]:
    """Inclusive value range of an integer/bit type."""
    t = _name(type_)
    if t in _SIGNED_INTS:
        w = _SIGNED_INTS[t]
        return -(1 << (w - 1)), (1 << (w - 1)) - 1
    return 0, (1 << _UNSIGNED_INTS[t]) - 1


def is_subnormal(type_: str, values: np.ndarray) -> np.ndarray:
    """Nonzero values below the format's smallest normal (what FTZ would flush)."""
    fmt = FLOATS[_name(type_)]
    a = np.abs(np.asarray(values, dtype=np.float64))
    return (a > 0) & (a < fmt.min_normal)


def special_values(type_: str) -> dict[str, int]:
    """Named bit patterns of interesting values, for strategies and tests.

    Floats: +0, -0, min/max subnormal, min normal, max normal (+-), one, +-Inf (when the
    format has them), canonical NaN and a second NaN pattern.  Integers: 0, 1, -1 (signed),
    min, max.
    """
    t = _name(type_)
    if t not in FLOATS:
        lo, hi = int_range(t)
        vals = {"zero": 0, "one": 1, "min": lo, "max": hi}
        if lo < 0:
            vals["minus_one"] = -1
        w = bits_per_element(t)
        return {k: v & ((1 << w) - 1) for k, v in vals.items()}
    fmt = FLOATS[t]
    top = (1 << fmt.exp_bits) - 1
    full_man = (1 << fmt.man_bits) - 1
    max_man = full_man if fmt.has_inf else full_man - 1
    max_exp = top - 1 if fmt.has_inf else top
    out = {
        "+0": fmt.field_bits(0, 0, 0),
        "-0": fmt.field_bits(1, 0, 0),
        "min_subnormal": fmt.field_bits(0, 0, 1),
        "max_subnormal": fmt.field_bits(0, 0, full_man),
        "min_normal": fmt.field_bits(0, 1, 0),
        "one": fmt.field_bits(0, fmt.bias, 0),
        "max_normal": fmt.field_bits(0, max_exp, max_man),
        "-max_normal": fmt.field_bits(1, max_exp, max_man),
        "nan": CANONICAL_NAN[t],
    }
    if fmt.has_inf:
        out["+inf"] = fmt.field_bits(0, top, 0)
        out["-inf"] = fmt.field_bits(1, top, 0)
        out["nan_other"] = fmt.field_bits(1, top, 1)  # negative NaN, smallest payload
    else:
        out["nan_other"] = fmt.field_bits(1, top, full_man)
    return out
