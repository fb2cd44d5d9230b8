"""Buffer contents from (type, count, init, seed): the same bytes for every judge.

The reference and the hardware judge both call ``buffer_bytes``, so a program's
inputs are a pure function of its header.  Distributions:
``random`` (finite values spread over a moderate exponent range; integers
uniform over the type), ``small_int`` (integers in [-4, 4], exact in every
format, so float products are exact too), ``special`` (a mix drawn from the
format's special values: ±0, smallest/largest subnormal, largest normal, ±Inf,
NaN — and ordinary values). Never all zeros unless asked for.
"""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from fuzzptx.program import Buffer, element_bytes  # noqa: F401 - element_bytes re-exported: data readers take it here

FLOAT_NUMPY = {
    "f64": np.dtype(np.float64),
    "f32": np.dtype(np.float32),
    "tf32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "e5m2": np.dtype(ml_dtypes.float8_e5m2),
}
INT_NUMPY = {
    "s8": np.int8, "u8": np.uint8, "b8": np.uint8, "s16": np.int16, "u16": np.uint16, "b16": np.uint16,
    "s32": np.int32, "u32": np.uint32, "b32": np.uint32, "s64": np.int64, "u64": np.uint64, "b64": np.uint64,
}


def numpy_dtype(type_: str) -> np.dtype:
    """The numpy dtype whose values a buffer of this PTX type holds."""
    if type_ in FLOAT_NUMPY:
        return FLOAT_NUMPY[type_]
    return np.dtype(INT_NUMPY[type_])


@functools.lru_cache(maxsize=None)
def special_values(type_: str) -> np.ndarray:
    """The format's special values (as numpy values of its dtype), for adversarial inputs."""
    dt = numpy_dtype(type_)
    if type_ in FLOAT_NUMPY:
        fi = ml_dtypes.finfo(dt) if type_ in ("bf16", "e4m3", "e5m2") else np.finfo(dt)
        vals = [0.0, -0.0, float(fi.smallest_subnormal), -float(fi.smallest_subnormal),
                float(fi.smallest_normal) - float(fi.smallest_subnormal), float(fi.smallest_normal),
                float(fi.max), -float(fi.max), 1.0, -1.0, float(fi.eps), 0.5]
        arr = np.array(vals, dtype=np.float64).astype(dt)
        extra = [np.nan]
        if type_ != "e4m3":  # OCP E4M3 'fn' has no infinities
            extra += [np.inf, -np.inf]
        return np.concatenate([arr, np.array(extra, dtype=np.float64).astype(dt)])
    info = np.iinfo(dt)
    return np.array([0, 1, int(info.max), int(info.min), int(info.max) // 2, -1 if info.min < 0 else 2], dtype=dt)


_NO_RNG = frozenset(("zeros", "ones", "iota"))  # the inits ``_values`` fills without its generator


def _values(type_: str, count: int, init: str, rng: np.random.Generator | None) -> np.ndarray:
    dt = numpy_dtype(type_)
    is_float = type_ in FLOAT_NUMPY
    if init == "zeros":
        return np.zeros(count, dt)
    if init == "ones":
        return np.ones(count, dt)
    if init == "iota":
        return (np.arange(count) % 64).astype(dt) if is_float else np.arange(count).astype(dt)
    if init == "small_int":
        v = rng.integers(-4, 5, count)
        if not is_float and np.iinfo(dt).min == 0:
            v = np.abs(v)
        return v.astype(dt)
    if init == "special":
        specials = special_values(type_)
        pick = rng.integers(0, len(specials), count)
        base = _values(type_, count, "random", rng)
        use = rng.random(count) < 0.5
        return np.where(use, specials[pick], base).astype(dt)
    if init == "random":
        if is_float:
            # Moderate exponent spread, both signs, values that every format represents
            # without overflow in a dot product of a few hundred terms.
            hi = {"e4m3": 3, "e5m2": 4, "f16": 4, "bf16": 6}.get(type_, 8)
            mag = np.exp2(rng.uniform(-hi, hi, count))
            sign = np.where(rng.random(count) < 0.5, -1.0, 1.0)
            return (sign * mag).astype(dt)
        info = np.iinfo(dt)
        return rng.integers(int(info.min), int(info.max), count, endpoint=True, dtype=dt)
    raise ValueError(f"unknown init {init!r}")


def buffer_bytes(buf: Buffer) -> np.ndarray:
    """The buffer's initial contents as a flat uint8 array of ``buf.nbytes`` bytes."""
    size = buf.count * element_bytes(buf.type)
    if buf.init.startswith("hex:"):
        raw = np.frombuffer(bytes.fromhex(buf.init[4:]), dtype=np.uint8)
        out = np.zeros(size, np.uint8)
        n = min(size, raw.size)
        out[:n] = raw[:n]
        return out
    # zeros/ones/iota draw nothing: no generator for them (making one costs ~30 µs, and nearly
    # half of a fuzz program's buffers are zero-filled outputs); a seed the generator would
    # refuse still makes one, so that it fails as before
    if buf.init in _NO_RNG and type(buf.seed) is int and buf.seed >= 0:
        rng = None
    else:
        rng = np.random.default_rng([buf.seed, sum(map(ord, buf.name))])
    vals = _values(buf.type, buf.count, buf.init, rng)
    return np.ascontiguousarray(vals).view(np.uint8).copy()
