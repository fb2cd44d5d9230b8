"""Register values: raw bits for every thread at once, plus an optional shadow.

A value is ``bits`` (uint64 [T]) and ``shadow`` (None when every thread's value is
exactly ``bits``).  A shadow splits the register into lanes of ``lane_bits`` and says,
per thread and lane, what the spec allows there:

* ``EXACT``: the bits themselves;
* ``SET``: a set of values -- finite ones in ``[lo, hi]`` (lo/hi NaN: no finite value),
  plus NaN / +Inf / -Inf where ``flags`` has ``MAY_NAN`` / ``MAY_POS_INF`` / ``MAY_NEG_INF``
  (wgmma float results in spec mode);
* ``UNDEF``: anything (values the spec leaves free, never invented).

Shadows are rare: the fast path never builds one.
"""
from __future__ import annotations

import numpy as np

try:  # the C function itself: ``ndarray.any()``/``.all()`` go through a Python wrapper and a
    # reduction, ~1.3 µs on these small arrays; counting is ~0.2 µs, with the same answer for
    # every dtype (NaN counts, empty arrays give 0)
    from numpy._core.multiarray import count_nonzero
except ImportError:  # pragma: no cover - other numpy layouts
    count_nonzero = np.count_nonzero

EXACT, SET, UNDEF = 0, 1, 3
MAY_NAN, MAY_POS_INF, MAY_NEG_INF = 1, 2, 4
# A SET lane's float format follows from its width (8 bytes f64, 4 f32, 2 f16, 1 e4m3) unless
# ALT_FORMAT is in its flags (2 bytes bf16, 1 e5m2): a kernel may store float results through an
# integer-typed buffer, and the comparison then reads the bits in the format the bounds are in.
ALT_FORMAT = 8
ALT_FORMATS = ("bf16", "bf16x2", "e5m2", "e5m2x2")


def set_format(lane_bytes: int, flags: int) -> str:
    """The float format of a SET lane of ``lane_bytes`` with ``flags``."""
    if lane_bytes == 2:
        return "bf16" if flags & ALT_FORMAT else "f16"
    if lane_bytes == 1:
        return "e5m2" if flags & ALT_FORMAT else "e4m3"
    return {4: "f32", 8: "f64"}[lane_bytes]

U64 = np.uint64
_U8_UNDEF, _U8_EXACT = np.uint8(UNDEF), np.uint8(EXACT)
MASKS = {w: U64((1 << w) - 1) if w < 64 else U64(0xFFFFFFFFFFFFFFFF) for w in (1, 8, 16, 32, 64)}

# PTX type -> (bits, kind); kind: s signed, u unsigned, b bits, f float, p predicate, x packed float,
# y packed integer.
TYPES: dict[str, tuple[int, str]] = {
    "pred": (1, "p"),
    "s8": (8, "s"), "s16": (16, "s"), "s32": (32, "s"), "s64": (64, "s"),
    "u8": (8, "u"), "u16": (16, "u"), "u32": (32, "u"), "u64": (64, "u"),
    "b8": (8, "b"), "b16": (16, "b"), "b32": (32, "b"), "b64": (64, "b"), "b128": (128, "b"),
    "f16": (16, "f"), "bf16": (16, "f"), "f32": (32, "f"), "f64": (64, "f"), "tf32": (32, "f"),
    "f16x2": (32, "x"), "bf16x2": (32, "x"), "e4m3x2": (16, "x"), "e5m2x2": (16, "x"),
    "e4m3": (8, "f"), "e5m2": (8, "f"),
    "u16x2": (32, "y"), "s16x2": (32, "y"),  # packed integer halves (intx.h_packed16)
}


def type_bits(t: str) -> int:
    return TYPES[t][0]


def mask(width: int) -> np.uint64:
    return MASKS[width] if width in MASKS else U64((1 << width) - 1)


def sign_extend(bits: np.ndarray, width: int) -> np.ndarray:
    """Low ``width`` bits as int64 two's complement."""
    if width == 64:
        return bits.view(np.int64)
    b = (bits & mask(width)).astype(np.int64)
    top = np.int64(1 << (width - 1))
    return (b ^ top) - top


class Shadow:
    """Per-thread, per-lane description of non-exact register contents (see module doc)."""

    __slots__ = ("lane_bits", "kind", "lo", "hi", "flags")

    def __init__(self, lane_bits: int, kind: np.ndarray, lo: np.ndarray | None = None,
                 hi: np.ndarray | None = None, flags: np.ndarray | None = None):
        self.lane_bits = lane_bits
        self.kind = kind  # uint8 [T, L]
        shape = kind.shape
        self.lo = lo if lo is not None else np.zeros(shape)
        self.hi = hi if hi is not None else np.zeros(shape)
        self.flags = flags if flags is not None else np.zeros(shape, np.uint8)

    @staticmethod
    def undef(nthreads: int, width: int, where: np.ndarray | None = None) -> "Shadow":
        """UNDEF for every thread, or for those in ``where`` (the others EXACT).  Built once per
        first write under a partial mask: a bool mask times UNDEF is the np.where, at half the cost."""
        if where is None:
            kind = np.empty((nthreads, 1), np.uint8)
            kind.fill(UNDEF)
        elif type(where) is np.ndarray and where.dtype == np.bool_:
            kind = np.multiply(where, _U8_UNDEF)[:, None]
        else:
            kind = np.where(where, _U8_UNDEF, _U8_EXACT)[:, None]
        return Shadow(max(width, 1), kind)

    @property
    def lanes(self) -> int:
        return self.kind.shape[1]

    def nonexact(self) -> np.ndarray:
        """bool [T]: threads whose value is not simply its bits."""
        if self.kind.shape[1] == 1:
            return self.kind[:, 0] != EXACT
        return (self.kind != EXACT).any(axis=1)

    def is_trivial(self) -> bool:
        return not count_nonzero(self.kind)

    def split(self, lane_bits: int) -> "Shadow":
        """The same shadow on finer lanes; a SET lane cut in pieces becomes UNDEF (bits alone say nothing)."""
        if lane_bits == self.lane_bits:
            return self
        f = self.lane_bits // lane_bits
        kind = np.repeat(self.kind, f, axis=1)
        kind[kind == SET] = UNDEF
        return Shadow(lane_bits, kind)

    def copy(self) -> "Shadow":
        return Shadow(self.lane_bits, self.kind.copy(), self.lo.copy(), self.hi.copy(), self.flags.copy())


def lanes_of(sh: Shadow | None, nthreads: int, width: int, lane_bits: int) -> Shadow:
    """``sh`` (or an all-exact shadow) on lanes of ``lane_bits`` covering ``width`` bits."""
    n = max(width // lane_bits, 1)
    if sh is None:
        return Shadow(lane_bits, np.zeros((nthreads, n), np.uint8))
    if sh.lane_bits > lane_bits:
        sh = sh.split(lane_bits)
    if sh.lane_bits < lane_bits:  # coarser lanes: keep SET only where a lane is one whole record
        f = lane_bits // sh.lane_bits
        k = sh.kind[:, : n * f].reshape(nthreads, n, f)
        kind = np.where(k.any(axis=2), UNDEF, EXACT).astype(np.uint8)
        return Shadow(lane_bits, kind)
    if sh.lanes != n:
        kind = np.zeros((nthreads, n), np.uint8)
        m = min(n, sh.lanes)
        out = Shadow(lane_bits, kind)
        out.kind[:, :m] = sh.kind[:, :m]
        out.lo[:, :m] = sh.lo[:, :m]
        out.hi[:, :m] = sh.hi[:, :m]
        out.flags[:, :m] = sh.flags[:, :m]
        return out
    return sh


def merge(old: Shadow | None, new: Shadow | None, active: np.ndarray, nthreads: int, width: int) -> Shadow | None:
    """The shadow after a write to the ``active`` threads only."""
    if old is None and new is None:
        return None
    lb = new.lane_bits if old is None else old.lane_bits if new is None else min(old.lane_bits, new.lane_bits)
    n = max(width // lb, 1)
    a = None if old is None else lanes_of(old, nthreads, width, lb)
    b = None if new is None else lanes_of(new, nthreads, width, lb)
    if (a is None or a.lanes == n) and (b is None or b.lanes == n):
        # one np.where per field (the same values as copying ``a`` and assigning the active rows)
        act = active[:, None]
        if b is None:
            kind = np.where(act, _U8_EXACT, a.kind)
            if not count_nonzero(kind):
                return None
            return Shadow(lb, kind, np.where(act, 0.0, a.lo), np.where(act, 0.0, a.hi),
                          np.where(act, _U8_EXACT, a.flags))
        if a is None:
            kind = np.where(act, b.kind, _U8_EXACT)
            if not count_nonzero(kind):
                return None
            return Shadow(lb, kind, np.where(act, b.lo, 0.0), np.where(act, b.hi, 0.0),
                          np.where(act, b.flags, _U8_EXACT))
        kind = np.where(act, b.kind, a.kind)
        if not count_nonzero(kind):
            return None
        return Shadow(lb, kind, np.where(act, b.lo, a.lo), np.where(act, b.hi, a.hi), np.where(act, b.flags, a.flags))
    a = lanes_of(old, nthreads, width, lb).copy()
    b = lanes_of(new, nthreads, width, lb)
    a.kind[active] = b.kind[active]
    a.lo[active] = b.lo[active]
    a.hi[active] = b.hi[active]
    a.flags[active] = b.flags[active]
    return None if a.is_trivial() else a


def undef_where(sh: Shadow | None, where: np.ndarray, nthreads: int, width: int) -> Shadow | None:
    """``sh`` with the threads in ``where`` made UNDEF."""
    if not count_nonzero(where):
        return sh
    u = Shadow.undef(nthreads, width, where)
    return merge(sh, u, where, nthreads, width)


def combine_undef(shadows, nthreads: int, width: int) -> Shadow | None:
    """A result that is UNDEF wherever any input is not exact (the conservative rule)."""
    bad = None
    for s in shadows:
        if s is not None:
            nb = s.nonexact()
            bad = nb if bad is None else (bad | nb)
    if bad is None or not count_nonzero(bad):
        return None
    return Shadow.undef(nthreads, width, bad)
