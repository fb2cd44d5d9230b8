"""Warp-level register fragments as values: ``mma.sync`` / ``mma.sp`` A, B, C/D and ``ldmatrix``.

Same idea as ``layouts.FragmentLayout`` but for one warp (32 lanes) and registers
of 32 or 64 bits (``.f64``).  Lane l: g = l // 4 (groupID), q = l % 4
(threadID_in_group).  Facts (PTX ISA mma fragment figures, also CuTe's SM80
MMA traits; proved on an H100: tests/hw_records/warp_forms.json):

* m16n8kK (every type but Volta f16): a register holds P = 32 / element_bits
  consecutive K elements (f64: one element per 64-bit register);
    A  register r: row = g + 8 (r % 2),  col = P q + b + 4P (r // 2)
    B  register r: k = P q + b + 4P r,   n = g
    C/D element i: row = g + 8 ((i // 2) % 2), col = 2 q + (i % 2)
  (the wgmma quad pattern restricted to one warp, ``layouts.quad_fragment``).
* m8n8kK (f64 k4, s8 k16, s4 k32, b1 k128): one warp, M = 8:
    A  row = g, col = P q + b;  B  k = P q + b, n = g;  C/D row = g, col = 2 q + i.
* m8n8k4 .f16 (Volta): four independent 8x8x4 products, one per quad pair
  p = (l >> 2) & 3 (lanes 4p..4p+3 and 16+4p..16+4p+3); inside a pair the logical
  thread is t = l % 4 + 4 ((l >> 4) & 1).  ``batch`` holds p.  From CuTe's SM70
  traits: A .row: row = t, col = v; A .col: row = v + 4 (t // 4), col = t % 4;
  B .col: n = t, k = v; B .row: k = t % 4, n = v + 4 (t // 4); D/C .f16: row = t,
  col = v; .f32: row = t0 + 2 v1 + 4 t2, col = v0 + 2 t1 + 4 v2 (bits of t, v).
* Sparse (mma.sp): A holds the packed M x K/2 matrix with the dense m16n8(K/2)
  fragment (see ``sparse``).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from fuzzptx.isa import ELEMENT_BITS, Shape

WARP = 32


@dataclass(frozen=True, eq=False)
class WarpFragment:
    """Tile coordinate ``(batch, row, col)`` of element slot s of lane l: ``row[l, s]`` etc.

    Slot s sits in register ``s // per_register`` at bit ``(s % per_register) * element_bits``.
    ``batch`` separates independent products computed by one instruction (Volta quad pairs).
    """

    name: str
    rows: int
    cols: int
    element_bits: int
    reg_bits: int
    row: np.ndarray
    col: np.ndarray
    batch: np.ndarray
    batches: int = 1

    @property
    def slots(self) -> int:
        return self.row.shape[1]

    @property
    def per_register(self) -> int:
        return max(self.reg_bits // self.element_bits, 1)

    @property
    def nregs(self) -> int:
        return self.slots // self.per_register

    @property
    def lanes(self) -> int:
        return self.row.shape[0]

    def flat(self) -> np.ndarray:
        """Linear tile index ``(batch * rows + row) * cols + col`` of every (lane, slot)."""
        return (self.batch * self.rows + self.row) * self.cols + self.col


def _frozen(*arrs: np.ndarray) -> tuple[np.ndarray, ...]:
    out = []
    for a in arrs:
        a = np.ascontiguousarray(a, dtype=np.int64)
        a.flags.writeable = False
        out.append(a)
    return tuple(out)


def _lane_grid(slots: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    lane = np.arange(WARP)[:, None]
    s = np.arange(slots)[None, :]
    return lane // 4, lane % 4, s, lane


def _make(name, rows, cols, eb, rb, row, col, batch=None, batches=1) -> WarpFragment:
    slots = row.shape[1] if np.ndim(row) == 2 else np.broadcast_shapes(np.shape(row), np.shape(col))[1]
    shape = (WARP, slots)
    row = np.broadcast_to(row, shape)
    col = np.broadcast_to(col, shape)
    batch = np.zeros(shape, np.int64) if batch is None else np.broadcast_to(batch, shape)
    r, c, b = _frozen(row, col, batch)
    return WarpFragment(name, rows, cols, eb, rb, r, c, b, batches)


def _volta(shape: Shape, atype: str) -> bool:
    return (shape.m, shape.n, shape.k) == (8, 8, 4) and atype == "f16"


def _per_reg(elem: str) -> tuple[int, int, int]:
    """(element bits, register bits, elements per register)."""
    eb = ELEMENT_BITS[elem]
    rb = 64 if elem == "f64" else 32
    return eb, rb, max(rb // eb, 1)


@functools.lru_cache(maxsize=None)
def mma_a_layout(shape: Shape, atype: str, layout: str = "row", sparse: bool = False) -> WarpFragment:
    """A operand of ``mma`` (``sparse``: the packed M x K/2 matrix of ``mma.sp``)."""
    k = shape.k // 2 if sparse else shape.k
    eb, rb, P = _per_reg(atype)
    if _volta(shape, atype):
        g, q, s, lane = _lane_grid(4)
        t = q + 4 * ((lane >> 4) & 1)
        p = (lane >> 2) & 3
        if layout == "row":
            return _make("mma.A.m8n8k4.f16.row", 8, 4, eb, rb, t + 0 * s, s + 0 * t, p, 4)
        return _make("mma.A.m8n8k4.f16.col", 8, 4, eb, rb, s + 4 * (t // 4), (t % 4) + 0 * s, p, 4)
    nregs = shape.m * k * eb // (WARP * rb)
    g, q, s, _ = _lane_grid(nregs * P)
    r, b = s // P, s % P
    if shape.m == 16:
        row = g + 8 * (r % 2)
        col = P * q + b + 4 * P * (r // 2)
    elif shape.m == 8:
        row = g + 0 * s
        col = P * q + b + 4 * P * r
    else:
        raise ValueError(f"no mma A fragment for {shape}")
    return _make(f"mma.A.{shape}.{atype}{'.sp' if sparse else ''}", shape.m, k, eb, rb, row, col)


@functools.lru_cache(maxsize=None)
def mma_b_layout(shape: Shape, btype: str, layout: str = "col") -> WarpFragment:
    """B operand of ``mma`` as a K x N tile (``row`` = k, ``col`` = n)."""
    eb, rb, P = _per_reg(btype)
    if _volta(shape, btype):
        g, q, s, lane = _lane_grid(4)
        t = q + 4 * ((lane >> 4) & 1)
        p = (lane >> 2) & 3
        if layout == "col":
            return _make("mma.B.m8n8k4.f16.col", 4, 8, eb, rb, s + 0 * t, t + 0 * s, p, 4)
        return _make("mma.B.m8n8k4.f16.row", 4, 8, eb, rb, (t % 4) + 0 * s, s + 4 * (t // 4), p, 4)
    nregs = shape.k * shape.n * eb // (WARP * rb)
    g, q, s, _ = _lane_grid(nregs * P)
    r, b = s // P, s % P
    return _make(f"mma.B.{shape}.{btype}", shape.k, shape.n, eb, rb, P * q + b + 4 * P * r, g + 0 * s)


@functools.lru_cache(maxsize=None)
def mma_c_layout(shape: Shape, ctype: str, atype: str = "") -> WarpFragment:
    """C/D accumulator of ``mma`` (``atype`` picks the Volta m8n8k4 .f16 layouts)."""
    eb, rb, P = _per_reg(ctype)
    if _volta(shape, atype or "f16") and atype == "f16":
        g, q, s, lane = _lane_grid(8)
        t = q + 4 * ((lane >> 4) & 1)
        p = (lane >> 2) & 3
        if ctype == "f16":
            return _make("mma.C.m8n8k4.f16", 8, 8, eb, rb, t + 0 * s, s + 0 * t, p, 4)
        t0, t1, t2 = t % 2, (t // 2) % 2, t // 4
        v0, v1, v2 = s % 2, (s // 2) % 2, s // 4
        return _make("mma.C.m8n8k4.f32", 8, 8, eb, rb, t0 + 2 * v1 + 4 * t2, v0 + 2 * t1 + 4 * v2, p, 4)
    slots = shape.m * shape.n // WARP
    g, q, s, _ = _lane_grid(slots)
    if shape.m == 16:
        row = g + 8 * ((s // 2) % 2)
    elif shape.m == 8:
        row = g + 0 * s
    else:
        raise ValueError(f"no mma C fragment for {shape}")
    return _make(f"mma.C.{shape}.{ctype}", shape.m, shape.n, eb, rb, row, 2 * q + (s % 2) + 8 * (s // 4))


# ------------------------------------------------------------------ moving data through a fragment


def gather(frag: WarpFragment, tile: np.ndarray) -> np.ndarray:
    """Tile of element bits ``[batches*rows, cols]`` (or ``[rows, cols]``) -> registers ``uint64[32, nregs]``."""
    t = np.asarray(tile).astype(np.uint64).reshape(-1)
    if t.size != frag.batches * frag.rows * frag.cols:
        raise ValueError(f"{frag.name}: tile of {t.size} elements, expected {frag.batches * frag.rows * frag.cols}")
    eb, per = frag.element_bits, frag.per_register
    m = np.uint64((1 << eb) - 1) if eb < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    elems = t[frag.flat()] & m
    shifts = np.arange(per, dtype=np.uint64) * np.uint64(eb % 64)
    return (elems.reshape(WARP, frag.nregs, per) << shifts).sum(axis=2, dtype=np.uint64)


def scatter(frag: WarpFragment, regs: np.ndarray) -> np.ndarray:
    """Registers ``[32, nregs]`` -> tile ``uint64[batches*rows, cols]`` (inverse of ``gather``)."""
    r = np.asarray(regs).astype(np.uint64)
    if r.shape != (WARP, frag.nregs):
        raise ValueError(f"{frag.name}: registers {r.shape}, expected {(WARP, frag.nregs)}")
    eb, per = frag.element_bits, frag.per_register
    m = np.uint64((1 << eb) - 1) if eb < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    shifts = np.arange(per, dtype=np.uint64) * np.uint64(eb % 64)
    elems = (r[:, :, None] >> shifts) & m
    out = np.zeros(frag.batches * frag.rows * frag.cols, np.uint64)
    out[frag.flat().reshape(-1)] = elems.reshape(-1)
    return out.reshape(frag.batches * frag.rows, frag.cols)


def is_bijection(frag: WarpFragment) -> bool:
    """Every tile element held by exactly one (lane, slot)."""
    f = frag.flat().reshape(-1)
    return f.size == frag.batches * frag.rows * frag.cols and np.unique(f).size == f.size


# ------------------------------------------------------------------ ldmatrix / stmatrix (m8n8 .b16)


def ldmatrix_row_owner(num: int) -> tuple[np.ndarray, np.ndarray]:
    """(matrix, row) whose 16-byte row address lane l supplies; -1 for lanes whose address is ignored."""
    lane = np.arange(WARP)
    used = lane < 8 * num
    return np.where(used, lane // 8, -1), np.where(used, lane % 8, -1)


@functools.lru_cache(maxsize=None)
def ldmatrix_layout(num: int, trans: bool) -> WarpFragment:
    """Destination fragment of ``ldmatrix.m8n8.xN.b16``: register j = matrix j (batch), two b16 per register.

    Not transposed: lane l holds row l // 4, columns 2 (l % 4) + {0, 1};
    ``.trans``: lane l holds column l // 4, rows 2 (l % 4) + {0, 1} (element (row, col) of the stored matrix).
    """
    g, q, s, _ = _lane_grid(2 * num)
    j, b = s // 2, s % 2
    if trans:
        row, col = 2 * q + b, g + 0 * s
    else:
        row, col = g + 0 * s, 2 * q + b
    return _make(f"ldmatrix.m8n8.x{num}{'.trans' if trans else ''}", 8, 8, 16, 32, row, col, j + 0 * g, num)
