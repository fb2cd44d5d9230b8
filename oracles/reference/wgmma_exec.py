"""wgmma.fence / mma_async / commit_group / wait_group on the interpreter's registers and shared memory.

Asynchrony model: a ``wgmma.mma_async`` computes its result at issue (from the
registers and shared memory as they are then) but the accumulator registers get it
only when a ``wgmma.wait_group`` covering its group executes.  Until then its D and
A registers are *in flight*: a generic read sees UNDEF, a generic write makes the
pending result UNDEF (seed 000, 9.7.15.7.3).  A later wgmma of the same shape that
accumulates into in-flight registers chains on the pending values (the spec orders
those).  Spec-mode undefined behaviour (no ``wgmma.fence`` before the first wgmma,
or a register access since the last fence; part of a warpgroup executing it; a
non-uniform descriptor or scale-d; shared bytes written by the generic proxy with
no ``fence.proxy.async`` since) makes the affected D elements UNDEF; a write into shared bytes
a wgmma in flight reads (``shared_written``) makes all its D elements UNDEF.
Arithmetic and layouts come from ``wgmma_math``, ``layouts`` and ``descriptors``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from fuzzptx import isa
from fuzzptx.ptx.ir import Imm, Vec

import fuzzptx.oracles.reference.layouts as L
import fuzzptx.oracles.reference.observed as observed
from .descriptors import MatrixDescriptor
from .errors import BadAddress, Undefined, Unsupported
from .values import EXACT, MAY_NAN, MAY_NEG_INF, MAY_POS_INF, SET, UNDEF, U64, Shadow, lanes_of, merge
from .wgmma_math import wgmma_dense
import fuzzptx.oracles.reference.formats as F
from .wgmma_math import encode_acc, wgmma_dense_pair
from .wgmma_math import _round_out_pair
import fuzzptx.oracles.reference.fp as fp
from .values import undef_where

WG = L.WARPGROUP


@dataclass(eq=False)
class Pending:
    frame: object
    group: int
    d_names: list[str]
    bits: np.ndarray  # uint32 [128, nregs]
    shadows: list[Shadow | None]  # per D register, 128 rows
    a_names: list[str]
    poisoned: bool = False
    _d_index: dict | None = None
    tile: tuple | None = None  # (acc layout, D bits, kind, lo, hi, flags [M,N], register has a shadow): see _c_matrix
    reads: tuple = ()  # (layout, mn, k, element bytes, lowest, highest address) per tile read from shared memory
    line: int | None = None  # the wgmma's source line (notes)

    def d_index(self) -> dict:
        """D register name -> its column (the first, as ``list.index`` gives)."""
        if self._d_index is None:
            idx: dict = {}
            for j, r in enumerate(self.d_names):
                idx.setdefault(r, j)
            self._d_index = idx
        return self._d_index


@dataclass(eq=False)
class GroupState:
    fenced: bool = False
    touched: set = field(default_factory=set)
    acc_shape: dict = field(default_factory=dict)
    uncommitted: list = field(default_factory=list)
    committed: list = field(default_factory=list)
    inflight: dict = field(default_factory=dict)  # reg name -> latest Pending touching it


class WarpgroupState:
    def __init__(self, n: int):
        self.n = n
        self.groups = [GroupState() for _ in range((n + WG - 1) // WG)]
        self.all_groups = list(range(len(self.groups)))

    @staticmethod
    def for_threads(n: int) -> "WarpgroupState":
        return WarpgroupState(n)

    def active_groups(self, act: np.ndarray) -> list[int]:
        return [g for g in range(len(self.groups)) if act[g * WG:(g + 1) * WG].any()]

    # hooks from Machine.read / Machine.write for registers some wgmma uses
    def on_read(self, m, f, name, bits, sh):
        out_sh = sh
        for g in (self.all_groups if m.cur_act is m.all else self.active_groups(m.cur_act)):
            st = self.groups[g]
            st.touched.add(name)
            p = st.inflight.get(name)
            if p is not None and p.frame is f:
                where = np.zeros(m.n, bool)
                where[g * WG:(g + 1) * WG] = True
                out_sh = undef_where(out_sh, where, m.n, f.widths.get(name, 32))
                m.note(f"register {name} read while a wgmma writing it is in flight (undefined)")
        return bits, out_sh

    def on_write(self, m, f, name, act):
        for g in (self.all_groups if act is m.all else self.active_groups(act)):
            st = self.groups[g]
            st.touched.add(name)
            p = st.inflight.get(name)
            if p is not None and p.frame is f:
                p.poisoned = True
                m.note(f"register {name} written while a wgmma using it is in flight (undefined)")

    def touch(self, m, f, name):
        for g in self.active_groups(m.cur_act):
            self.groups[g].touched.add(name)


def h_wgmma(m, f, ins, act):
    mods = ins.modifiers
    ws = m.wg
    groups = ws.active_groups(act)
    if "fence" in mods:
        for g in groups:
            st = ws.groups[g]
            st.fenced = True
            st.touched.clear()
            st.acc_shape.clear()
        return
    if "commit_group" in mods:
        for g in groups:
            st = ws.groups[g]
            st.committed.append(st.uncommitted)
            st.uncommitted = []
        return
    if "wait_group" in mods:
        op = ins.operands[0] if ins.operands else None
        if not isinstance(op, Imm):
            raise Unsupported.at(ins, "wait_group needs an immediate")
        keep = int(op.value)
        for g in groups:
            st = ws.groups[g]
            done = st.committed[: max(len(st.committed) - keep, 0)]
            st.committed = st.committed[len(done):]
            for grp in done:
                for p in grp:
                    _apply(m, p)
                    for r in p.d_names + p.a_names:
                        if st.inflight.get(r) is p:
                            del st.inflight[r]
        return
    if "mma_async" in mods:
        _mma(m, f, ins, act, groups)
        return
    raise Unsupported.at(ins, f"{ins.opcode} is not supported")


def shape_conflict(st: GroupState, d_names: list[str], shape) -> bool:
    """Some accumulator was last used by a wgmma of another shape since the fence
    (``st.acc_shape.get(r, shape) != shape`` for some r, comparing only other objects)."""
    get = st.acc_shape.get
    return any(s != shape for s in [get(r) for r in d_names] if s is not None and s is not shape)


def require_whole_warpgroup(m, ins, g: int) -> None:
    """A wgmma of warpgroup ``g`` in a block that does not hold all 128 of its threads (a block of
    32, or the last warpgroup of a block of 160) is undefined: raised, as the register files of
    threads that do not exist cannot be modelled (nor written back)."""
    if (g + 1) * WG > m.n:
        raise Undefined(f"line {ins.loc.line if ins.loc else '?'}: {ins.opcode.split('.sync')[0]} in a warpgroup of "
                        f"{m.n - g * WG} threads (the block has {m.n}; a wgmma needs all {WG} threads of its warpgroup)")


def _apply(m, p: Pending) -> None:
    f = p.frame
    rows = slice(p.group * WG, (p.group + 1) * WG)
    if m.n == WG:  # one warpgroup: the result replaces the registers outright
        cols = p.bits.T.astype(np.uint64)  # [nregs, 128]: each register a contiguous row (never written in place)
        for i, name in enumerate(p.d_names):
            f.regs[name] = cols[i]
            sh = Shadow.undef(WG, f.widths.get(name, 32)) if p.poisoned else p.shadows[i]
            if sh is None:
                f.shadows.pop(name, None)
            else:
                f.shadows[name] = sh
        return
    gm = np.zeros(m.n, bool)
    gm[rows] = True
    if not _apply_stacked(m, f, p, rows, gm):
        for i, name in enumerate(p.d_names):
            _apply_one(m, f, p, i, name, rows, gm)


def _apply_one(m, f, p: Pending, i: int, name: str, rows: slice, gm: np.ndarray) -> None:
    """Register ``name`` (D column i) of a larger block: the warpgroup's rows replaced."""
    w = f.widths.get(name, 32)
    old = f.regs.get(name)
    if old is None:
        old = np.zeros(m.n, np.uint64)
        old_sh = Shadow.undef(m.n, w)
    else:
        old_sh = f.shadows.get(name)
    new = old.copy()
    new[rows] = p.bits[:, i].astype(np.uint64)
    f.regs[name] = new
    sh = p.shadows[i]
    if p.poisoned:
        sh = Shadow.undef(WG, w)
    _apply_shadow(m, f, name, old_sh, sh, rows, gm, w)


def _apply_shadow(m, f, name: str, old_sh: Shadow | None, sh: Shadow | None, rows: slice, gm: np.ndarray,
                  w: int) -> None:
    """The shadow of a register whose warpgroup rows now hold ``sh`` (the others ``old_sh``)."""
    if old_sh is None and sh is None:
        f.shadows.pop(name, None)
        return
    if sh is not None and (old_sh is None or (old_sh.lane_bits == sh.lane_bits and old_sh.lanes == sh.lanes)):
        full = old_sh.copy() if old_sh is not None else Shadow(
            sh.lane_bits, np.zeros((m.n, sh.lanes), np.uint8), np.zeros((m.n, sh.lanes)),
            np.zeros((m.n, sh.lanes)), np.zeros((m.n, sh.lanes), np.uint8))
        full.kind[rows], full.lo[rows], full.hi[rows], full.flags[rows] = sh.kind, sh.lo, sh.hi, sh.flags
        f.shadows[name] = full
        return
    full = None
    if sh is not None:
        full = Shadow(sh.lane_bits, np.zeros((m.n, sh.lanes), np.uint8), np.zeros((m.n, sh.lanes)),
                      np.zeros((m.n, sh.lanes)), np.zeros((m.n, sh.lanes), np.uint8))
        full.kind[rows], full.lo[rows], full.hi[rows], full.flags[rows] = sh.kind, sh.lo, sh.hi, sh.flags
        res = merge(old_sh, full, gm, m.n, w)
    else:
        res = _exact_rows(old_sh, rows, m.n, w)
    if res is None:
        f.shadows.pop(name, None)
    else:
        f.shadows[name] = res


def _exact_rows(old_sh: Shadow, rows: slice, n: int, w: int) -> Shadow | None:
    """``values.merge(old_sh, None, rows, n, w)``: the rows now exact, the others as they were.
    For a shadow already on its own lanes (the usual case) that merge's np.where per field is
    a copy with the rows zeroed; anything else goes to merge itself."""
    if (old_sh.lanes != max(w // old_sh.lane_bits, 1) or old_sh.kind.shape[0] != n
            or (old_sh.kind.dtype, old_sh.lo.dtype, old_sh.hi.dtype, old_sh.flags.dtype) != _SHADOW_DTYPES):
        gm = np.zeros(n, bool)
        gm[rows] = True
        return merge(old_sh, None, gm, n, w)
    kind = old_sh.kind.copy()
    kind[rows] = EXACT
    if not kind.any():
        return None
    lo, hi, flags = old_sh.lo.copy(), old_sh.hi.copy(), old_sh.flags.copy()
    lo[rows] = 0.0
    hi[rows] = 0.0
    flags[rows] = 0
    return Shadow(old_sh.lane_bits, kind, lo, hi, flags)


_SHADOW_DTYPES = (np.dtype(np.uint8), np.dtype(np.float64), np.dtype(np.float64), np.dtype(np.uint8))


def _apply_stacked(m, f, p: Pending, rows: slice, gm: np.ndarray) -> bool:
    """``_apply_one`` for every D register, the register values as rows of one array (one
    copy and one row assignment for all), when the registers are distinct and all written
    before; shadows one register at a time, in the same order.  False (nothing done) else."""
    names = p.d_names
    if len(set(names)) != len(names):
        return False
    olds = [f.regs.get(n) for n in names]
    if any(o is None or o.shape != (m.n,) or o.dtype != np.uint64 for o in olds):
        return False
    regs = np.concatenate(olds).reshape(len(olds), m.n)  # (np.array of a list of arrays costs more)
    regs[:, rows] = p.bits.T
    for i, (name, new) in enumerate(zip(names, regs)):
        w = f.widths.get(name, 32)
        old_sh = f.shadows.get(name)
        f.regs[name] = new
        _apply_shadow(m, f, name, old_sh, Shadow.undef(WG, w) if p.poisoned else p.shadows[i], rows, gm, w)
    return True


@dataclass
class _Tile:
    bits: np.ndarray  # uint32 [rows, cols]
    bad: np.ndarray  # bool [rows, cols]: UNDEF or not exact
    reads: tuple | None = None  # (layout, mn, k, element bytes, lowest, highest address): see _read_bytes


# ------------------------------------------------------------------ writes under an in-flight read
#
# A wgmma reads its shared-memory operands at some time between its issue and the wait_group
# that retires it (PTX ISA 9.7.15.7.3: the async proxy's reads are ordered only by that wait).
# This model reads them at issue, so a write (generic store, stmatrix, or an async bulk copy)
# into bytes a wgmma still in flight reads is undefined: the wgmma may see old or new bytes.
# Each Pending keeps the byte offsets its descriptors read; shared memory's ``watch`` hook sees
# every write and poisons (all D UNDEF, with a note) each in-flight wgmma whose bytes it meets.


def _watch_writes(m) -> None:
    """Install the shared-memory write hook (once per run)."""
    region = m.mem.shared
    if region is not None and region.watch is None:
        region.watch = lambda off, nbytes, order=None: shared_written(m, off, nbytes, order)


def shared_written(m, off: np.ndarray, nbytes: int, order: np.ndarray | None = None) -> None:
    """Bytes ``off[i] .. off[i] + nbytes - 1`` of shared memory were just written: poison every
    wgmma in flight that reads one of them.  ``order`` (``Region.write``): the offsets are several
    writes, numbered; the wgmmas are poisoned (and noted) in the order those writes would meet them
    one call at a time."""
    if not off.size:
        return
    lo, hi = int(off.min()), int(off.max()) + nbytes
    written = None
    met: list = []  # (the first write that meets it, its place in the walk, the wgmma)
    for st in m.wg.groups:
        for p in [q for grp in st.committed for q in grp] + st.uncommitted:
            # a tile's span first (most writes are elsewhere), its exact bytes only when they may meet
            near = [r for r in p.reads if hi > r[4] and lo <= r[5] + r[3] - 1]
            if p.poisoned or not near:
                continue
            if written is None:
                written = (off.astype(np.int64)[:, None] + np.arange(nbytes)).ravel()
            if order is None:
                if any(np.isin(written, _read_bytes(*r[:4])).any() for r in near):
                    met.append((0, len(met), p))
                continue
            first = None
            for r in near:
                hit = np.isin(written, _read_bytes(*r[:4]))
                if hit.any():
                    k = int(order[int(hit.argmax()) // nbytes])
                    first = k if first is None else min(first, k)
            if first is not None:
                met.append((first, len(met), p))
    for _, _, p in sorted(met, key=lambda x: x[:2]):
        p.poisoned = True
        m.note(f"shared memory read by the wgmma.mma_async at line {p.line if p.line is not None else '?'} "
               "was written before the wgmma.wait_group that retires it (undefined: the wgmma may read "
               "old or new bytes)")


def _reg_matrix(m, f, st, names: list[str], rows: slice, w: int):
    """Current (or pending) values of registers for one warpgroup: bits [128, n] and shadow kinds/lo/hi."""
    whole = m.n == WG and rows == slice(0, WG)
    if whole and names and st.inflight.keys().isdisjoint(names):
        fast = _reg_matrix_settled(f, names)
        if fast is not None:
            return fast
    cols: list[np.ndarray] = []
    shs: list[Shadow | None] = []
    inflight, regs, shadows = st.inflight, f.regs, f.shadows
    for name in names:
        p = inflight.get(name)
        j = None if p is None else p.d_index().get(name)
        if j is not None and p.frame is f:
            cols.append(p.bits[:, j])
            sh = Shadow.undef(WG, w) if p.poisoned else p.shadows[j]
        else:
            v = regs.get(name)
            if v is None:
                cols.append(_ZERO_COL)
                sh = Shadow.undef(WG, w)
            else:
                cols.append(v[rows])
                full = shadows.get(name)
                if full is None or whole:
                    sh = full  # read only here: the register's own shadow when it is exactly these rows
                else:
                    sh = Shadow(full.lane_bits, full.kind[rows], full.lo[rows], full.hi[rows], full.flags[rows])
        shs.append(None if sh is None or sh.is_trivial() else sh)
    return _columns(cols), shs


def _reg_matrix_settled(f, names: list[str]):
    """``_reg_matrix`` of a one-warpgroup block whose registers are all written and none in
    flight: the register arrays and shadows as they are (None when one is missing)."""
    cols = [f.regs.get(n) for n in names]
    if any(v is None or v.shape != (WG,) for v in cols):
        return None
    get = f.shadows.get
    shs = [None if sh is None or sh.is_trivial() else sh for sh in map(get, names)]
    return _columns(cols), shs


def _columns(cols: list[np.ndarray]) -> np.ndarray:
    """uint64 [128, n] with the given [128] columns (np.concatenate: np.array of a list costs more)."""
    if not cols:
        return np.zeros((WG, 0), np.uint64)
    return np.ascontiguousarray(np.concatenate(cols).astype(np.uint64, copy=False).reshape(len(cols), WG).T)


_ZERO_COL = np.zeros(WG, np.uint64)
_ZERO_COL.flags.writeable = False


def _pending_tile(f, st, d_names, acc, M, N):
    """``_c_matrix`` of accumulators that are exactly the in-flight D of one earlier wgmma, from its tile.

    The same arrays the register round trip gives: the bits masked to the element width, the
    kinds, and lo/hi/flags zero in registers with no shadow (``_slot_info`` zero-fills those)."""
    p = st.inflight.get(d_names[0]) if d_names else None
    if (p is None or p.tile is None or p.poisoned or p.frame is not f or p.tile[0] is not acc
            or p.d_names != d_names or len(set(d_names)) != len(d_names)
            or any(st.inflight.get(r) is not p for r in d_names)):
        return None
    _, bits, kind, lo, hi, flags, has_shadow = p.tile
    if bits.shape != (M, N):
        return None
    eb = acc.element_bits
    c_tile = bits.astype(np.uint32) & np.uint32((1 << eb) - 1 if eb < 32 else 0xFFFFFFFF)
    if all(has_shadow) and L._inverse_index(acc) is not None:  # every slot kept its lo/hi/flags: copies
        return c_tile, kind.copy(), lo.copy(), hi.copy(), flags.astype(np.uint8)
    slots = np.repeat(np.array(has_shadow, bool), acc.elements_per_register)
    keep = L.scatter_slots(acc, np.broadcast_to(slots[None, :], (WG, slots.size)))
    return (c_tile, kind.copy(), np.where(keep, lo, 0.0), np.where(keep, hi, 0.0),
            np.where(keep, flags, np.uint8(0)).astype(np.uint8))


def _c_matrix(m, f, st, d_names, rows, acc, M, N):
    fast = _pending_tile(f, st, d_names, acc, M, N)
    if fast is not None:
        return fast
    cbits, cshs = _reg_matrix(m, f, st, d_names, rows, 32)
    c_tile = L.scatter(acc, cbits.astype(np.uint32))
    if any(s is not None for s in cshs):
        ck, clo, chi, cfl = _slot_info(cshs, acc.element_bits, acc.elements_per_register)
        return (c_tile, L.scatter_slots(acc, ck), L.scatter_slots(acc, clo), L.scatter_slots(acc, chi),
                L.scatter_slots(acc, cfl))
    return c_tile, np.zeros((M, N), np.uint8), np.zeros((M, N)), np.zeros((M, N)), np.zeros((M, N), np.uint8)


def _slot_info(shs: list[Shadow | None], ebits: int, per: int):
    """Shadow per element slot [128, nregs*per]: kind, lo, hi, flags."""
    if all(sh is None or (sh.lane_bits == ebits and sh.lanes == per) for sh in shs):
        # every shadow already on element lanes: their [128, per] blocks side by side (what the loop
        # below copies slot by slot; np.concatenate, as np.stack costs ~1 us per array)
        z8, zf = np.zeros((WG, per), np.uint8), np.zeros((WG, per))
        return tuple(np.concatenate([zero if sh is None else getattr(sh, fld) for sh in shs], axis=1)
                     for fld, zero in (("kind", z8), ("lo", zf), ("hi", zf), ("flags", z8)))
    return _slot_info_loop(shs, ebits, per)


def _a_bad(layout, shs: list[Shadow | None]) -> np.ndarray:
    """bool [M, K]: A-fragment elements whose register slot is not exact (``_slot_info``'s kinds)."""
    if all(sh is None for sh in shs):
        return np.zeros((layout.rows, layout.cols), bool)
    ak, _, _, _ = _slot_info(shs, layout.element_bits, layout.elements_per_register)
    return L.scatter_slots(layout, ak != EXACT)


def _slot_info_loop(shs: list[Shadow | None], ebits: int, per: int):
    """``_slot_info`` for shadows on other lanes than the elements': slot by slot."""
    nregs = len(shs)
    kind = np.zeros((WG, nregs * per), np.uint8)
    lo = np.zeros((WG, nregs * per))
    hi = np.zeros((WG, nregs * per))
    fl = np.zeros((WG, nregs * per), np.uint8)
    for i, sh in enumerate(shs):
        if sh is None:
            continue
        s = lanes_of(sh, WG, 32, ebits) if sh.lane_bits >= ebits else lanes_of(sh, WG, 32, sh.lane_bits)
        if s.lane_bits != ebits:  # finer than an element: any non-exact piece spoils it
            k = s.kind.reshape(WG, per, -1)
            kind[:, i * per:(i + 1) * per] = np.where(k.any(axis=2), UNDEF, EXACT)
            continue
        kind[:, i * per:(i + 1) * per] = s.kind[:, :per]
        lo[:, i * per:(i + 1) * per] = s.lo[:, :per]
        hi[:, i * per:(i + 1) * per] = s.hi[:, :per]
        fl[:, i * per:(i + 1) * per] = s.flags[:, :per]
    return kind, lo, hi, fl


def _uniform(m, f, reg, rows, ins, what: str):
    """The one value a register holds across a warpgroup, or None when it differs / is undefined."""
    if isinstance(reg, Imm):
        return int(reg.value)
    v = f.regs.get(reg.name)
    if v is None:
        return None
    sh = f.shadows.get(reg.name)
    if sh is not None and sh.nonexact()[rows].any():
        return None
    vals = v[rows]
    if not np.all(vals == vals[0]):
        m.note(f"{what} differs across the warpgroup (undefined)")
        return None
    return int(vals[0])


def _tile_offsets(major: str, swizzle: str, element_bits: int, lbo: int, sbo: int, mn_ext: int, k_ext: int):
    """(unswizzled byte offset from the start, bit in byte or None) of a tile's elements:
    ``SmemLayout.bit_offset`` does not depend on the start address or the base offset, and
    ``L.tile_byte_offsets`` caches all of it but the LBO/SBO multiply-adds."""
    byte, sub = L.tile_byte_offsets(major, swizzle, element_bits, lbo, sbo, mn_ext, k_ext)
    return byte, (sub.astype(np.uint64) if element_bits < 8 else None)


@functools.lru_cache(maxsize=1024)
def _tile_addresses(layout: L.SmemLayout, mn_ext: int, k_ext: int):
    """Byte addresses of a tile's elements (and bit in byte, sub-byte types; their lowest and
    highest address), read-only, per layout: ``layout.address``.

    The swizzle reads and flips only address bits below its atom (``Swizzle.atom_bytes``), so
    the start's multiple of the atom adds on afterwards: the swizzled addresses relative to it
    are cached by the start's remainder alone (``_tile_relative``)."""
    swz = L.SWIZZLES[layout.swizzle]
    atom = swz.atom_bytes
    rest = layout.start % atom
    rel, bit, lo, hi = _tile_relative(swz, layout.major, layout.swizzle, layout.element_bits, layout.lbo,
                                      layout.sbo, mn_ext, k_ext, rest,
                                      0 if layout.swizzle == "none" else layout.base_offset)
    base = layout.start - rest
    addr = rel + base
    addr.flags.writeable = False
    return addr, bit, lo + base, hi + base


@functools.lru_cache(maxsize=512)
def _tile_relative(swz: L.Swizzle, major: str, swizzle: str, element_bits: int, lbo: int, sbo: int,
                   mn_ext: int, k_ext: int, start: int, base_offset: int):
    """``swz(start + offset, base_offset)`` of a tile's elements for a start inside one atom,
    with bit in byte and lowest/highest address (keyed by the Swizzle value itself, so a
    patched ``layouts.SWIZZLES`` entry gets its own)."""
    byte, bit = _tile_offsets(major, swizzle, element_bits, lbo, sbo, mn_ext, k_ext)
    rel = swz(start + byte, base_offset)
    rel.flags.writeable = False
    lo, hi = (int(rel.min()), int(rel.max())) if rel.size else (0, 0)
    return rel, bit, lo, hi


def descriptor_reasons(m, desc: MatrixDescriptor, which: str) -> list[str]:
    """Why the spec leaves a wgmma reading through ``desc`` undefined: a swizzled pattern whose
    base offset does not match its start (PTX ISA 9.7.15.5.1.2.2 says it "must").  The hardware
    mode computes what the H100 does with it (the phase formula checked in
    tests/hw_records/dense_wgmma_base_offset_explore.json)."""
    if m.mode != "spec" or desc.swizzle == "none":
        return []
    return [f"{which} descriptor: {issue.split(': ', 1)[1]}" for issue in desc.pattern_issues()]


def _smem_tile(m, ins, layout: L.SmemLayout, mn_ext: int, k_ext: int) -> _Tile:
    region = m.mem.shared
    if region is not None:
        region.flush()
    addr, bit, amin, amax = _tile_addresses(layout, mn_ext, k_ext)
    eb = layout.element_bits
    nbytes = max(1, eb // 8)
    size = region.size if region is not None else 0
    if addr.size and (amin < 0 or amax + nbytes > size):
        bad = int(addr[(addr < 0) | (addr + nbytes > size)].ravel()[0])
        raise BadAddress.at(ins, f"wgmma operand tile reaches shared offset {bad:#x}, outside the {size} bytes of shared memory")
    skind = region.skind if region.skind is not None and region.skind.any() else None  # EXACT is 0
    # -1: not written by the generic proxy (a maximum instead of a [size] comparison)
    written = region.dirty if region.dirty is not None and region.dirty.size and region.dirty.max() >= 0 else None
    bad = dirty = None
    if nbytes == 1:  # one byte per element: one take each
        val = region.data.take(addr)
        if skind is not None:
            bad = skind.take(addr) != EXACT
        if written is not None:
            dirty = written.take(addr) >= 0
        if eb < 8:
            val = (val.astype(np.uint64) >> bit) & U64((1 << eb) - 1)
    elif nbytes in (2, 4) and not (addr & (nbytes - 1)).any():  # aligned elements: one gather each
        idx = addr >> (nbytes.bit_length() - 1)
        val = region.view(nbytes).take(idx)
        if skind is not None:  # an element with any byte not exact is a non-zero word of the kinds
            bad = skind.view(region.view(nbytes).dtype).take(idx) != 0
        if written is not None:
            dirty = (written[addr[..., None] + np.arange(nbytes)] >= 0).any(axis=-1)
    else:
        val = np.zeros(addr.shape, np.uint64)
        bad = np.zeros(addr.shape, bool) if skind is not None else None
        dirty = np.zeros(addr.shape, bool) if written is not None else None
        for i in range(nbytes):
            val |= region.data[addr + i].astype(np.uint64) << U64(8 * i)
            if skind is not None:
                bad |= skind[addr + i] != EXACT
            if written is not None:
                dirty |= written[addr + i] >= 0
    if dirty is not None and dirty.any():
        m.note("wgmma reads shared memory written by the generic proxy with no fence.proxy.async since (undefined)")
    flags = bad if dirty is None else (dirty if bad is None else bad | dirty)
    return _Tile(val.astype(np.uint32), np.zeros(addr.shape, bool) if flags is None else flags,
                 (layout, mn_ext, k_ext, nbytes, amin, amax))


@functools.lru_cache(maxsize=1024)
def _read_bytes(layout: L.SmemLayout, mn_ext: int, k_ext: int, nbytes: int) -> np.ndarray:
    """Sorted distinct shared byte offsets a tile's elements occupy (read-only, per layout)."""
    addr, _, _, _ = _tile_addresses(layout, mn_ext, k_ext)
    out = np.unique((addr.astype(np.int64).ravel()[:, None] + np.arange(nbytes)).ravel())
    out.flags.writeable = False
    return out



def operands(m, ins, form: isa.Form) -> tuple[dict, list[str], list[str]]:
    """The operands of a dense or sparse wgmma by role, its accumulator and A-fragment register
    names; ``Unsupported`` for a numerics mode, operand count or accumulator the models cannot run."""
    if m.mode not in ("spec", "hardware"):
        raise Unsupported.at(ins, f"wgmma numerics in mode {m.mode!r} are not modelled")
    if len(ins.operands) != len(form.operands):
        raise Unsupported.at(ins, f"{len(ins.operands)} operands, the form has {len(form.operands)}")
    ops = {spec.role: op for spec, op in zip(form.operands, ins.operands)}
    d = ops["d"]
    if not isinstance(d, Vec) or len(d.items) != form.operand("d").count:
        raise Unsupported.at(ins, "accumulator is not a vector of the form's register count")
    return ops, [r.name for r in d.items], [r.name for r in ops["a"].items] if "a" in ops else []

def _mma(m, f, ins, act, groups):
    form = isa.form_for(ins)
    if form is None or form.family != "wgmma":
        raise Unsupported.at(ins, "not a dense wgmma.mma_async form of the catalogue" + (" (sparse wgmma is not modelled)" if ".sp." in ins.opcode else ""))
    ops, d_names, a_names = operands(m, ins, form)
    shape = form.shape
    M, N, K = shape.m, shape.n, shape.k
    acc = L.accumulator_layout(form.dtype, N)
    for g in groups:
        require_whole_warpgroup(m, ins, g)
        st = m.wg.groups[g]
        rows = slice(g * WG, (g + 1) * WG)
        reasons: list[str] = []
        if not act[rows].all():
            reasons.append("executed by part of a warpgroup")
        if not st.fenced:
            reasons.append("no wgmma.fence before the first wgmma")
        used = set(d_names) | set(a_names)
        if st.touched & used:
            reasons.append(f"register {sorted(st.touched & used)[0]} accessed since the last wgmma.fence")
        if shape_conflict(st, d_names, shape):
            reasons.append("accumulators shared with a wgmma of another shape without a fence")
        # scale-d
        scale_d, sa, sb, ta, tb = operand_scalars(m, f, ops, rows, ins, reasons)
        # C (ignored when scale-d is false, so never read then)
        c_tile, CK, CLO, CHI, CFL = c_operand(m, f, st, scale_d, d_names, rows, acc, M, N)
        reads: list[tuple] = []
        # A
        if "a" in ops:
            al = L.a_fragment_layout(form.atype)
            abits, ashs = _reg_matrix(m, f, st, a_names, rows, 32)
            a_tile = L.scatter(al, abits.astype(np.uint32))
            a_bad = _a_bad(al, ashs)
        else:
            dv = _uniform(m, f, ops["a_desc"], rows, ins, "A descriptor")
            if dv is None:
                reasons.append("A descriptor is undefined or not uniform")
                dv = 0
            desc = MatrixDescriptor.decode(dv)
            reasons += descriptor_reasons(m, desc, "A")
            lay = desc.smem_layout("MN" if ta else "K", isa.ELEMENT_BITS[form.atype])
            t = _smem_tile(m, ins, lay, M, K)
            a_tile, a_bad = t.bits, t.bad
            reads.append(t.reads)
        dv = _uniform(m, f, ops["b_desc"], rows, ins, "B descriptor")
        if dv is None:
            reasons.append("B descriptor is undefined or not uniform")
            dv = 0
        desc = MatrixDescriptor.decode(dv)
        reasons += descriptor_reasons(m, desc, "B")
        lay = desc.smem_layout("MN" if tb else "K", isa.ELEMENT_BITS[form.btype])
        bt = _smem_tile(m, ins, lay, N, K)
        b_tile, b_bad = bt.bits.T.copy(), bt.bad.T
        reads.append(bt.reads)
        # arithmetic
        cset = (CK == SET) if scale_d else None
        if cset is not None and cset.any() and form.dtype != "s32":
            # C is itself a set: D's set is the union over C in [clo, chi] (see _widen_for_c)
            res, lo, hi, flags = widen_for_c(form, a_tile, b_tile, c_tile, CLO, CHI, cset, sa, sb)
            kind = np.full((M, N), SET, np.uint8)
            # C's own NaN/Inf members: D may be them (and NaN, when an Inf meets an opposite Inf product)
            nofin = cset & np.isnan(CLO)
            lo = np.where(nofin, np.nan, lo)
            hi = np.where(nofin, np.nan, hi)
            cinf = cset & ((CFL & (MAY_POS_INF | MAY_NEG_INF)) != 0)
            flags = (flags | np.where(cset, CFL, 0) | np.where(cinf, MAY_NAN, 0)).astype(np.uint8)
            out_tile = res.bits
            if m.mode == "hardware":
                # Hardware-mode wgmma results are exact, so a set C came from elsewhere (a scalar
                # op the reference cannot pin down, e.g. a mul/add ptxas may contract).  No one
                # H100 result exists for a set of C's: those elements keep the spec-mode
                # widening above; the others get the H100's one result.
                m.note(f"line {ins.loc.line if ins.loc else '?'}: wgmma in hardware mode with {int(cset.sum())} "
                       "accumulator element(s) already a value set: spec-mode widening used for them")
                hw = wgmma_dense(form, a_tile, b_tile, c_tile, True, sa, sb, mode="hardware")
                out_tile = np.where(cset, res.bits, hw.bits).astype(np.uint32)
                kind = np.where(cset, SET, EXACT).astype(np.uint8)
                lo, hi = np.where(cset, lo, hw.lo), np.where(cset, hi, hw.hi)
                flags = np.where(cset, flags, 0).astype(np.uint8)
        else:
            # hardware mode: the H100's one result (docs/numerics.md), exact by construction
            res = observed.dense_observed(f.info, ins, acc, d_names, form, a_tile, b_tile, c_tile, bool(scale_d),
                                          sa, sb, m.mode)  # only the columns of D anything reads
            kind = np.full((M, N), EXACT if _is_int(res) or m.mode == "hardware" else SET, np.uint8)
            lo, hi = res.lo, res.hi
            flags = ((res.may_nan * MAY_NAN) | (res.may_pos_inf * MAY_POS_INF) | (res.may_neg_inf * MAY_NEG_INF)).astype(np.uint8)
            out_tile = res.bits
        if scale_d:
            kind[CK == UNDEF] = UNDEF
            if _is_int(res):
                kind[CK == SET] = UNDEF
        kind[a_bad.any(axis=1), :] = UNDEF
        kind[:, b_bad.any(axis=0)] = UNDEF
        if reasons:
            kind[:] = UNDEF
            for r in reasons:
                m.note(f"line {ins.loc.line if ins.loc else '?'}: wgmma {r} (undefined)")
        out_bits = L.gather(acc, out_tile)
        shadows = _reg_shadows(acc, kind, lo, hi, flags)
        p = Pending(f, g, d_names, out_bits, shadows, a_names)
        p.tile = (acc, out_tile, kind, lo, hi, flags, [s is not None for s in shadows])
        p.reads = tuple(reads)
        p.line = ins.loc.line if ins.loc else None
        _watch_writes(m)
        st.uncommitted.append(p)
        st.inflight.update(dict.fromkeys(d_names + a_names, p))
        st.acc_shape.update(dict.fromkeys(d_names, shape))


def operand_scalars(m, f, ops: dict, rows, ins, reasons: list[str]) -> tuple[int, int, int, int, int]:
    """scale-d, imm-scale-a/b and imm-trans-a/b of a wgmma (dense or sparse); a predicate scale-d
    that is undefined or not warpgroup-uniform counts as 1 and adds a reason (results UNDEF)."""
    sd = ops["scale_d"]
    if isinstance(sd, Imm):
        scale_d = int(sd.value)
    else:
        u = _uniform(m, f, sd, rows, ins, "scale-d")
        if u is None:
            reasons.append("scale-d predicate is undefined or not uniform")
            scale_d = 1
        else:
            scale_d = u & 1
    imm = lambda role, default: int(ops[role].value) if role in ops else default  # noqa: E731
    sa, sb, ta, tb = imm("imm_scale_a", 1), imm("imm_scale_b", 1), imm("imm_trans_a", 0), imm("imm_trans_b", 0)
    # the ISA allows only these; ptxas rejects others, and the reference says nothing of them
    if sa not in (-1, 1) or sb not in (-1, 1):
        raise Unsupported.at(ins, f"imm-scale-a/b {sa}, {sb}: the ISA allows only -1 and 1")
    if ta not in (0, 1) or tb not in (0, 1):
        raise Unsupported.at(ins, f"imm-trans-a/b {ta}, {tb}: the ISA allows only 0 and 1")
    return scale_d, sa, sb, ta, tb


def c_operand(m, f, st, scale_d: int, d_names, rows, acc, M: int, N: int):
    """C as (bits, kinds, lo, hi, flags) [M, N]; zeros when scale-d is false (C is never read then)."""
    if not scale_d:
        zero_k = np.zeros((M, N), np.uint8)
        zero_v = np.zeros((M, N))
        return np.zeros((M, N), np.uint32), zero_k, zero_v, zero_v, zero_k
    return _c_matrix(m, f, st, d_names, rows, acc, M, N)


def _widen_for_c(form, a, b, c, clo, chi, cset, sa, sb, res=None, lo=None, hi=None, flags=None):
    """Compatibility shim (warp_exec calls the 13-argument form): (lo, hi, flags) of ``widen_for_c``.

    With the old arguments the nominal ``res`` and its lo/hi/flags are kept outside ``cset``.
    """
    r1, nlo, nhi, nflags = widen_for_c(form, a, b, c, clo, chi, cset, sa, sb)
    if res is None:
        return r1, nlo, nhi, nflags
    return (np.where(cset, nlo, lo), np.where(cset, nhi, hi), np.where(cset, nflags, flags).astype(np.uint8))


def widen_for_c(form, a, b, c, clo, chi, cset, sa, sb):
    """D's set when C itself is a set [clo, chi]: D is monotone in C and its error bound convex in |C|.

    Two evaluations, at C = clo and C = chi (elements whose C is exact get their own C in
    both); the exact values bound every C between, and the larger error bound covers
    every C between (the bound grows with |C|).  The nominal bits are those of C = clo,
    a member of the set.
    """
    dt = form.dtype
    big = F.FLOATS[dt].max_finite
    # [clo, chi] bounds C's finite members (its Infs are flags): an end of +-Inf means
    # "unbounded finite", i.e. the format's largest finite value, never C = Inf itself.
    clo = np.clip(clo, -big, big)
    chi = np.clip(chi, -big, big)
    c_lo = np.where(cset, encode_acc(dt, np.where(np.isnan(clo), 0.0, clo)), c)
    c_hi = np.where(cset, encode_acc(dt, np.where(np.isnan(chi), 0.0, chi)), c)
    r1, r2 = wgmma_dense_pair(form, a, b, c_lo.astype(np.uint32), c_hi.astype(np.uint32), sa, sb)
    err = np.fmax(r1.err, r2.err)
    v1, v2 = _exact_value(r1), _exact_value(r2)
    vlo = np.fmin(v1, v2)
    vhi = np.fmax(v1, v2)
    nlo, nhi = _round_ends(vlo - err, vhi + err, dt, big)  # finite members only (Inf: flags)
    fin = r1.finite_ok & r2.finite_ok
    lo = np.where(cset, np.where(fin, nlo, np.nan), r1.lo)
    hi = np.where(cset, np.where(fin, nhi, np.nan), r1.hi)
    flags = ((r1.may_nan | r2.may_nan) * MAY_NAN | (r1.may_pos_inf | r2.may_pos_inf) * MAY_POS_INF |
             (r1.may_neg_inf | r2.may_neg_inf) * MAY_NEG_INF).astype(np.uint8)
    return r1, lo, hi, flags


def _round_ends(lo: np.ndarray, hi: np.ndarray, dt: str, big: float) -> tuple[np.ndarray, np.ndarray]:
    """``max(fp.fround(lo, dt, "rm"), -big)`` and ``min(fp.fround(hi, dt, "rp"), big)``.

    For f32/f16 those are ``wgmma_math._round_out``'s steps (round to nearest by numpy's cast,
    then one step out where that passed the value; non-finite values pass through), so both
    ends go through its one-pass pair."""
    if dt not in ("f32", "f16"):
        return np.maximum(fp.fround(lo, dt, "rm"), -big), np.minimum(fp.fround(hi, dt, "rp"), big)
    x2 = np.empty((2,) + lo.shape)
    x2[0] = lo
    np.negative(hi, out=x2[1])
    return _round_out_pair(x2, dt)


def _is_int(res) -> bool:
    """Integer forms: bits must match (the attribute's name followed wgmma_math's revisions)."""
    return bool(getattr(res, "integer", getattr(res, "exact", False)))


def _exact_value(res) -> np.ndarray:
    return getattr(res, "exact_value", res.value)


def _reg_shadows(acc, kind, lo, hi, flags) -> list[Shadow | None]:
    """Per D register, its shadow [128, per] (None when exact): one gather per field, then views."""
    nregs = acc.nregs
    flat = _reg_major_index(acc)
    ks = kind.ravel().take(flat)  # [nregs, 128, per], fresh and contiguous: each register's rows are a view
    if not ks.any():
        return [None] * nregs
    los, his, fls = lo.ravel().take(flat), hi.ravel().take(flat), flags.ravel().take(flat)
    nonexact = ks.reshape(nregs, -1).any(axis=1).tolist()
    eb = acc.element_bits
    # iterating an array yields the same views as indexing it per register, without the per-index calls
    return [Shadow(eb, k, lo_, hi_, f) if ne else None
            for ne, k, lo_, hi_, f in zip(nonexact, ks, los, his, fls)]


_REG_MAJOR: dict = {}


def _reg_major_index(acc):
    """Flat tile index (``row * cols + col``) of ``acc``'s slots reordered to [register, thread,
    element] (cached per layout)."""
    key = id(acc)
    hit = _REG_MAJOR.get(key)
    if hit is not None and hit[0] is acc:
        return hit[1]
    per, nregs = acc.elements_per_register, acc.nregs
    shp = (acc.row.shape[0], nregs, per)
    flat = np.ascontiguousarray(L.flat_index(acc).reshape(shp).transpose(1, 0, 2))
    _REG_MAJOR[key] = (acc, flat)
    return flat
