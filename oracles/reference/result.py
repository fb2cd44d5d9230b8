"""What the reference says a run's output buffers may hold, and the element-wise comparison.

Per output element: ``EXACT`` (bits must match; any NaN matches a NaN), ``SET``
(finite values in [lo, hi], plus NaN/+Inf/-Inf where the flags allow), or
``UNDEF`` (the spec leaves it free: skipped).  Integers are always exact; a SET element of an
integer-typed buffer (a float result stored through it) is read in its bounds' float format.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fuzzptx.data import element_bytes, numpy_dtype

import fuzzptx.oracles.reference.formats as F
from .values import ALT_FORMAT, EXACT, MAY_NAN, MAY_NEG_INF, MAY_POS_INF, SET, UNDEF, count_nonzero, set_format

_FLOAT = {"f64", "f32", "tf32", "f16", "bf16", "e4m3", "e5m2"}


@dataclass(frozen=True, eq=False)
class OutputBuffer:
    name: str
    type: str
    data: bytes
    kind: np.ndarray  # uint8 [count]
    lo: np.ndarray  # float64 [count] (SET only)
    hi: np.ndarray
    flags: np.ndarray  # uint8 [count]

    @property
    def count(self) -> int:
        return self.kind.size

    def values(self) -> np.ndarray:
        return np.frombuffer(self.data, dtype=numpy_dtype(self.type))

    def __getstate__(self) -> tuple:
        """Kinds, bounds and flags travel only where they are not zero (a campaign's pool sends every
        verdict to the main process, and a 16,384-element buffer's dense bounds are 256 KB, nearly
        always zeros); the round trip is bit-exact."""
        lo, hi = self.lo.view(np.uint64), self.hi.view(np.uint64)
        k_at = np.flatnonzero(self.kind).astype(np.int32)
        b_at = np.flatnonzero((lo != 0) | (hi != 0) | (self.flags != 0)).astype(np.int32)
        return (self.name, self.type, self.data, self.kind.size, k_at, self.kind[k_at], b_at, self.lo[b_at],
                self.hi[b_at], self.flags[b_at])

    def __setstate__(self, state: tuple) -> None:
        name, type_, data, n, k_at, kind_at, b_at, lo_at, hi_at, flags_at = state
        kind, lo, hi, flags = np.zeros(n, np.uint8), np.zeros(n), np.zeros(n), np.zeros(n, np.uint8)
        kind[k_at] = kind_at
        lo[b_at], hi[b_at], flags[b_at] = lo_at, hi_at, flags_at
        for key, value in (("name", name), ("type", type_), ("data", data), ("kind", kind), ("lo", lo),
                           ("hi", hi), ("flags", flags)):
            object.__setattr__(self, key, value)


@dataclass(frozen=True, eq=False)
class RefResult:
    """The reference's verdict on one run (``undefined``: the whole outcome is left free, with why)."""

    outputs: dict[str, OutputBuffer]
    undefined: str | None = None
    notes: tuple[str, ...] = ()
    steps: int = 0
    # source lines of the branches some thread took: which paths the run went down (a mutation
    # that makes one path undefined is only seen where the run took it)
    branches_taken: frozenset[int] = frozenset()
    # (first line, last line) of each block some thread ran: which instructions the run reached
    blocks_run: frozenset[tuple[int, int]] = frozenset()

    def ran(self, line: int) -> bool:
        """Some thread ran the instruction at source ``line`` (as far as block boundaries tell)."""
        return any(lo <= line <= hi for lo, hi in self.blocks_run)

    def bytes(self, name: str) -> bytes:
        return self.outputs[name].data

    def summary(self) -> str:
        if self.undefined:
            return f"undefined: {self.undefined}"
        parts = []
        for o in self.outputs.values():
            u = int((o.kind == UNDEF).sum())
            s = int((o.kind == SET).sum())
            parts.append(f"{o.name}: {o.count} elements" + (f", {s} within bounds" if s else "") + (f", {u} undefined" if u else ""))
        return "ran (" + "; ".join(parts) + ")" if parts else "ran (no outputs)"


@dataclass(frozen=True)
class Mismatch:
    buffer: str
    index: int
    expected: str
    observed: str

    def __str__(self) -> str:
        return f"{self.buffer}[{self.index}]: expected {self.expected}, observed {self.observed}"


def output_from_region(buf, region, undefined: bool) -> OutputBuffer:
    """Element view of a buffer's final bytes and byte shadow."""
    eb = element_bytes(buf.type)
    n = buf.count
    if not undefined:  # an undefined run's kinds are all UNDEF whatever the shadow says
        region.flush()
    data = region.data[: n * eb].tobytes()
    lo = np.zeros(n)
    hi = np.zeros(n)
    flags = np.zeros(n, np.uint8)
    if undefined:
        kind = np.full(n, UNDEF, np.uint8)
    elif region.skind is None:
        kind = np.zeros(n, np.uint8)
    else:
        kind = _element_kinds(region, n, eb)
        if kind is None:
            kind = np.zeros(n, np.uint8)
        else:
            is_set = kind == SET
            if count_nonzero(is_set):
                lo = np.where(is_set, region.slo[: n * eb: eb], 0.0)
                hi = np.where(is_set, region.shi[: n * eb: eb], 0.0)
                flags = np.where(is_set, region.sflags[: n * eb: eb], 0).astype(np.uint8)
    return OutputBuffer(buf.name, buf.type, data, kind, lo, hi, flags)


_WORD = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _element_kinds(region, n: int, eb: int) -> np.ndarray | None:
    """Per element: EXACT where all its bytes are, SET where all are SET and its first byte's record
    spans the element, else UNDEF; None where every byte is EXACT.  The bytes of an element are
    compared as one word (EXACT is 0, SET 1 in every byte), not reduced along a short axis."""
    k = region.skind[: n * eb]
    if not count_nonzero(k):
        return None
    words = k.view(_WORD[eb])
    all_set = (words == _WORD[eb](int.from_bytes(bytes([SET]) * eb, "little"))) & (region.slw[: n * eb: eb] == eb)
    return np.where(words == EXACT, EXACT, np.where(all_set, SET, UNDEF)).astype(np.uint8)


def _decode(type_: str, raw: bytes, n: int) -> np.ndarray:
    eb = element_bytes(type_)
    u = np.frombuffer(raw[: n * eb], dtype={1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[eb]).astype(np.uint64)
    return u


def compare(program, ref: RefResult, observed: dict[str, bytes], limit: int = 100) -> list[Mismatch]:
    """Elements of ``observed`` (buffer name -> bytes) the reference does not allow (at most ``limit``)."""
    out: list[Mismatch] = []
    if ref.undefined:
        return out
    for name, ob in ref.outputs.items():
        if name not in observed:
            out.append(Mismatch(name, -1, "an output buffer", "none"))
            continue
        raw = observed[name]
        eb = element_bytes(ob.type)
        if len(raw) < ob.count * eb:
            out.append(Mismatch(name, -1, f"{ob.count * eb} bytes", f"{len(raw)} bytes"))
            continue
        hw = _decode(ob.type, raw, ob.count)
        ref_bits = _decode(ob.type, ob.data, ob.count)
        check = ob.kind != UNDEF
        if ob.type in _FLOAT:
            x = F.decode(ob.type, hw)
            r = F.decode(ob.type, ref_bits)
            exact_ok = (hw == ref_bits) | (np.isnan(x) & np.isnan(r))
            ok = np.where(ob.kind == SET, _in_set(x, ob), exact_ok)
        else:
            ok = hw == ref_bits
            is_set = ob.kind == SET
            if count_nonzero(is_set):  # float results stored through an integer-typed buffer
                ok = np.where(is_set, _in_set(_set_values(ob, hw, eb), ob), ok)
        bad = np.flatnonzero(check & ~ok)
        for i in bad[: max(limit - len(out), 0)]:
            out.append(Mismatch(name, int(i), _describe(ob, int(i), ref_bits), _observed(ob, int(i), int(hw[i]), eb)))
        if len(out) >= limit:
            break
    return out


def _in_set(x: np.ndarray, ob: OutputBuffer) -> np.ndarray:
    """Values ``x`` inside each element's SET: finite in [lo, hi], or a NaN/Inf its flags allow."""
    with np.errstate(invalid="ignore"):
        return (np.isfinite(x) & (x >= ob.lo) & (x <= ob.hi)) | \
            (np.isnan(x) & ((ob.flags & MAY_NAN) != 0)) | \
            ((x == np.inf) & ((ob.flags & MAY_POS_INF) != 0)) | \
            ((x == -np.inf) & ((ob.flags & MAY_NEG_INF) != 0))


def _set_values(ob: OutputBuffer, hw: np.ndarray, eb: int) -> np.ndarray:
    """The observed bits of an integer-typed buffer read in the float format of each SET element's
    bounds (``values.set_format``: the width, and bf16/e5m2 where the flags say so)."""
    x = np.zeros(hw.size)
    alt = (ob.flags & ALT_FORMAT) != 0
    for fmt, where in ((set_format(eb, 0), ~alt), (set_format(eb, ALT_FORMAT), alt)):
        if count_nonzero(where):
            x = np.where(where, F.decode(fmt, hw), x)
    return x


def _observed(ob: OutputBuffer, i: int, bits: int, eb: int) -> str:
    """The observed element; a SET element of an integer-typed buffer also as the float it is read as."""
    shown = _show(ob.type, bits)
    if ob.type in _FLOAT or ob.kind[i] != SET:
        return shown
    fmt = set_format(eb, int(ob.flags[i]))
    return f"{shown} = {fmt} {float(F.decode(fmt, np.array([bits], np.uint64))[0])!r}"


def _show(type_: str, bits: int) -> str:
    eb = element_bytes(type_)
    if type_ in _FLOAT:
        v = float(F.decode(type_, np.array([bits], np.uint64))[0])
        return f"{v!r} (0x{bits:0{2 * eb}x})"
    return f"{int(np.array([bits], np.uint64).astype(numpy_dtype(type_))[0])} (0x{bits:0{2 * eb}x})"


def _describe(ob: OutputBuffer, i: int, ref_bits: np.ndarray) -> str:
    if ob.kind[i] == SET:
        extra = [n for b, n in ((MAY_NAN, "NaN"), (MAY_POS_INF, "+Inf"), (MAY_NEG_INF, "-Inf")) if ob.flags[i] & b]
        rng = f"[{ob.lo[i]!r}, {ob.hi[i]!r}]" if not np.isnan(ob.lo[i]) else "no finite value"
        return rng + (" or " + "/".join(extra) if extra else "")
    return _show(ob.type, int(ref_bits[i]))
