"""Simulated memory for one CTA: global buffers, shared memory, kernel parameters.

Every buffer is its own ``Region`` with a fake base address, so a pointer is just the
kernel parameter's value and any access outside a region, or misaligned for its size,
is an error naming the instruction.  Each region can carry a byte-level shadow
(see ``values``): uninitialised shared memory is UNDEF, and stores of inexact values
(wgmma results in spec mode) keep their value sets so loads get them back.
Shared memory also remembers, per byte, which thread last wrote it through the
generic proxy and has not yet run ``fence.proxy.async``: wgmma reading such bytes
is undefined behaviour (seed 000, 9.7.15.4).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from .errors import BadAddress
from fuzzptx.ptx.smem import SHARED_RESERVED  # noqa: F401 - re-exported for readers of this module

from .values import EXACT, SET, UNDEF, Shadow, lanes_of

GLOBAL_BASE = 0x7F0000000000  # first global buffer (each at its own 4 GiB slot)
GLOBAL_SLOT = 1 << 32
SHARED_WINDOW = 0x7E0000000000  # generic address of shared offset 0
# Shared memory is laid out as on the H100 (fuzzptx.ptx.smem): the first variable at
# SHARED_RESERVED.  No variable covers the bytes below it, yet on the H100 they are plain shared
# memory (a store and a load at offset 0 round-trip without a fault): here too, uninitialised
# (UNDEF) at launch.
CONST_BASE = 0x10000  # param/const windows, small like the hardware's
CLUSTER_SHIFT = 24  # a .shared::cluster address of another CTA: ((rank + 1) << CLUSTER_SHIFT) | offset (cluster.py)
LOCAL_WINDOW = 0x7D0000000000  # generic address of local offset 0 (each thread sees its own)
_VIEW = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SHIFT = {1: 0, 2: 1, 4: 2, 8: 3}


@dataclass(eq=False)
class Region:
    name: str
    space: str  # global | shared | const | param
    base: int
    size: int
    data: np.ndarray  # uint8, padded to a multiple of 16
    writable: bool = True
    skind: np.ndarray | None = None  # uint8 per byte (values.EXACT/SET/UNDEF)
    slw: np.ndarray | None = None  # lane width in bytes of the record covering each byte
    slo: np.ndarray | None = None
    shi: np.ndarray | None = None
    sflags: np.ndarray | None = None
    dirty: np.ndarray | None = None  # int32 writer thread (shared only), -1 clean
    pending: list = field(default_factory=list)  # shadow records of stores not yet applied (see flush)
    views: dict = field(default_factory=dict)
    watch: object = None  # called as watch(offsets, nbytes[, order]) by each write (wgmma_exec: reads in flight)

    @staticmethod
    def make(name: str, space: str, base: int, content: np.ndarray | int, writable: bool = True) -> "Region":
        size = content if isinstance(content, int) else int(content.size)
        data = np.zeros((size + 15) // 16 * 16 or 16, np.uint8)
        if not isinstance(content, int):
            data[:size] = content
        return Region(name, space, base, size, data, writable)

    def view(self, nbytes: int) -> np.ndarray:
        v = self.views.get(nbytes)
        if v is None:
            v = self.views[nbytes] = self.data.view(_VIEW[nbytes])
        return v

    def ensure_shadow(self) -> None:
        if self.skind is None:
            n = self.data.size
            self.skind = np.zeros(n, np.uint8)
            self.slw = np.ones(n, np.uint8)
            self.slo = np.zeros(n)
            self.shi = np.zeros(n)
            self.sflags = np.zeros(n, np.uint8)

    def mark_uninitialised(self) -> None:
        self.ensure_shadow()
        self.skind[:] = UNDEF

    # -------------------------------------------------------------- element access

    def read(self, off: np.ndarray, eb: int, count: int) -> list[tuple[np.ndarray, Shadow | None]]:
        """``count`` consecutive elements of ``eb`` bytes at byte offsets ``off`` (aligned)."""
        if eb == 16:
            raise AssertionError("16-byte elements are split by the caller")
        out = []
        n = off.size
        view, shift = self.view(eb), _SHIFT[eb]
        shadowed = self.skind is not None or bool(self.pending)
        for j in range(count):
            o = off + j * eb if j else off
            bits = view[o >> shift].astype(np.uint64)  # o is aligned: o // eb
            out.append((bits, self._read_shadow(o, eb, n) if shadowed else None))
        return out

    def flush(self) -> None:
        """Apply the shadow records of stores, in order, batching runs of the same shape."""
        if not self.pending:
            return
        self.ensure_shadow()
        recs, self.pending = self.pending, []
        i = 0
        while i < len(recs):
            o, eb, s = recs[i]
            key = (eb, None if s is None else (s.lane_bits, s.lanes))
            j = i + 1
            while j < len(recs) and (recs[j][1], None if recs[j][2] is None else (recs[j][2].lane_bits, recs[j][2].lanes)) == key:
                j += 1
            run = recs[i:j]
            o = np.concatenate([r[0] for r in run])
            if s is None:
                self.skind[(o[:, None] + np.arange(eb)).ravel()] = EXACT
            else:
                lw, lanes = s.lane_bits // 8, s.lanes
                kind = np.concatenate([r[2].kind for r in run])
                idx = o[:, None] + np.arange(lanes * lw)
                self.skind[idx] = np.repeat(kind, lw, axis=1)
                self.slw[idx] = lw
                start = o[:, None] + np.arange(lanes) * lw
                self.slo[start] = np.concatenate([r[2].lo for r in run])
                self.shi[start] = np.concatenate([r[2].hi for r in run])
                self.sflags[start] = np.concatenate([r[2].flags for r in run])
            i = j

    def add_record(self, off: np.ndarray, eb: int, sh: Shadow) -> None:
        """The shadow record a store of shadowed ``eb``-byte elements at ``off`` leaves (``write``
        with values that carry ``sh``, already on ``write``'s lanes), applied at the next flush."""
        self.pending.append((off, eb, sh))

    def _read_shadow(self, o: np.ndarray, eb: int, n: int) -> Shadow | None:
        self.flush()
        if self.skind is None:
            return None
        idx = o[:, None] + _positions(eb)
        k = self.skind[idx]
        if not k.any():
            return None
        lw = int(self.slw[idx][k != EXACT].min())
        lw = max(1, min(lw, eb))
        while eb % lw:
            lw -= 1
        lanes = eb // lw
        kr = k.reshape(n, lanes, lw)
        first = idx[:, ::lw]
        kind = np.where((kr == UNDEF).any(axis=2), UNDEF,
                        np.where((kr == EXACT).all(axis=2), EXACT,
                                 np.where((kr == SET).all(axis=2) & (self.slw[first] == lw), SET, UNDEF))).astype(np.uint8)
        sh = Shadow(lw * 8, kind, self.slo[first].copy(), self.shi[first].copy(), self.sflags[first].copy())
        return None if sh.is_trivial() else sh

    def write(self, off: np.ndarray, eb: int, values: list[tuple[np.ndarray, Shadow | None]],
              writers: np.ndarray | None = None, order: np.ndarray | None = None) -> None:
        """Store elements (bits, shadow) at ``off + j*eb``; ``writers`` are thread ids (shared only);
        ``order``: where one call makes several writes that do not overlap, the number of the
        write each offset belongs to (nondecreasing), for the ``watch`` hook."""
        n = off.size
        if self.watch is not None:
            if order is None:
                self.watch(off, eb * len(values))
            else:
                self.watch(off, eb * len(values), order)
        for j, (bits, sh) in enumerate(values):
            o = off + j * eb
            v = self.view(eb)
            v[o >> _SHIFT[eb]] = bits.astype(_VIEW[eb])  # o is aligned: o // eb
            if sh is None:
                if self.skind is not None or self.pending:
                    self.pending.append((o, eb, None))
            else:
                lb = max(8, min(sh.lane_bits, eb * 8))
                self.pending.append((o, eb, lanes_of(sh, n, eb * 8, lb)))
            if self.dirty is not None and writers is not None:
                if eb == 4 and self.dirty.size % 4 == 0:  # one int32x4 row per element (o is 4-aligned)
                    self.dirty.reshape(-1, 4)[o >> 2] = writers[:, None]
                else:
                    self.dirty[o[:, None] + _positions(eb)] = writers[:, None]


_POS: dict[int, np.ndarray] = {}


def _positions(n: int) -> np.ndarray:
    """``np.arange(n)``, shared and read-only (every access of all threads uses it)."""
    p = _POS.get(n)
    if p is None:
        p = _POS[n] = np.arange(n)
        p.flags.writeable = False
    return p


class Memory:
    """Regions by state space; resolves addresses to (region, offsets) with bounds and alignment checks."""

    def __init__(self) -> None:
        self.globals: list[Region] = []
        self.shared: Region | None = None
        self.params: Region | None = None
        self.consts: list[Region] = []
        self.local: Region | None = None  # every thread's .local window, one after the other
        self.local_size = 0  # bytes per thread
        self._gbases = np.zeros(0, np.uint64)
        self._gbase_list: list[int] = []
        self._last: Region | None = None
        # in a cluster of several CTAs: every CTA's shared memory by rank (``.shared::cluster``
        # addresses of other CTAs resolve there); None: one CTA
        self.cluster_shared: tuple[Region, ...] | None = None

    def add_global(self, name: str, content: np.ndarray | int, writable: bool = True, space: str = "global") -> Region:
        base = GLOBAL_BASE + len(self.globals) * GLOBAL_SLOT
        r = Region.make(name, space, base, content, writable)
        self.globals.append(r)
        self._gbases = np.array([g.base for g in self.globals], np.uint64)
        self._gbase_list = [g.base for g in self.globals]
        return r

    def set_shared(self, size: int) -> Region:
        r = Region.make("shared memory", "shared", 0, max(size, 0))
        r.mark_uninitialised()
        r.dirty = np.full(r.data.size, -1, np.int32)
        self.shared = r
        return r

    def set_local(self, per_thread: int, threads: int) -> Region:
        """Per-thread local memory: thread t's local offset o is byte t * per_thread + o;
        uninitialised (UNDEF) at launch."""
        self.local_size = (per_thread + 15) // 16 * 16
        r = Region.make("local memory", "local", 0, self.local_size * threads)
        r.mark_uninitialised()
        self.local = r
        return r

    def _local(self, addr: np.ndarray, tids: np.ndarray | None, nbytes: int, instr, what: str):
        size = self.local_size
        if tids is None or not size or (addr.size and int(addr.max()) > size - nbytes):
            bad = int(addr.max()) if addr.size else 0
            raise BadAddress.at(instr, f"out-of-bounds {what} of {nbytes} bytes at local offset {bad:#x} "
                                       f"(each thread holds {size} bytes of local memory)")
        off = addr + tids.astype(np.uint64) * np.uint64(size)
        return (self.local, _positions(addr.size), off.view(np.int64))

    def set_params(self, content: np.ndarray) -> Region:
        self.params = Region.make("kernel parameters", "param", CONST_BASE, content, writable=False)
        return self.params

    # -------------------------------------------------------------- resolution

    def resolve(self, space: str, addr: np.ndarray, nbytes: int, instr, what: str,
                tids: np.ndarray | None = None) -> list[tuple[Region, np.ndarray, np.ndarray]]:
        """Groups ``(region, thread positions, byte offsets)`` for the addresses of one access;
        ``tids`` (the threads of the addresses) place local accesses in each thread's window."""
        if addr.dtype != np.uint64:
            addr = addr.astype(np.uint64)
        if nbytes > 1 and int(np.bitwise_or.reduce(addr)) & (nbytes - 1):  # one address misaligned
            bad = int(addr[(addr & np.uint64(nbytes - 1)) != 0][0])
            raise BadAddress.at(instr, f"misaligned {what} of {nbytes} bytes at {space} address {bad:#x}")
        if space == "shared":
            if self.cluster_shared is not None and addr.size and int(addr.max()) >> CLUSTER_SHIFT:
                return self._cluster_groups(addr, addr, nbytes, instr, what)
            return [self._within(self.shared, addr, addr, nbytes, instr, what, space)]
        if space == "param":
            return [self._within(self.params, addr, addr - np.uint64(CONST_BASE), nbytes, instr, what, space)]
        if space == "local":
            return [self._local(addr, tids, nbytes, instr, what)]
        if space == "generic" and self.local is not None:
            lw = (addr >= np.uint64(LOCAL_WINDOW)) & (addr < np.uint64(LOCAL_WINDOW + (1 << 32)))
            if lw.any():
                pos = np.flatnonzero(lw)
                g = self._local(addr[pos] - np.uint64(LOCAL_WINDOW), None if tids is None else tids[pos], nbytes,
                                instr, what)
                out = [(g[0], pos, g[2])]
                rest = np.flatnonzero(~lw)
                if rest.size:
                    for reg, p, o in self.resolve("generic", addr[rest], nbytes, instr, what,
                                                  None if tids is None else tids[rest]):
                        out.append((reg, rest[p], o))
                return out
        if space == "generic":
            shw = (addr >= np.uint64(SHARED_WINDOW)) & (addr < np.uint64(SHARED_WINDOW + (1 << 32)))
            if self.cluster_shared is not None and shw.any():
                pos = np.flatnonzero(shw)
                out = [(reg, pos[p], o) for reg, p, o in self._cluster_groups(
                    addr[pos], addr[pos] - np.uint64(SHARED_WINDOW), nbytes, instr, what)]
                rest = np.flatnonzero(~shw)
                if rest.size:
                    out += [(reg, rest[p], o) for reg, p, o in self._global_groups(addr[rest], nbytes, instr, what)]
                return out
            if shw.all():
                return [self._within(self.shared, addr, addr - np.uint64(SHARED_WINDOW), nbytes, instr, what, "shared")]
            if shw.any():
                pos = np.flatnonzero(shw)
                g1 = self._within(self.shared, addr[pos], addr[pos] - np.uint64(SHARED_WINDOW), nbytes, instr, what, "shared")
                rest = np.flatnonzero(~shw)
                out = [(g1[0], pos, g1[2])]
                for reg, p, o in self._global_groups(addr[rest], nbytes, instr, what):
                    out.append((reg, rest[p], o))
                return out
        return self._global_groups(addr, nbytes, instr, what)

    def _cluster_groups(self, addr: np.ndarray, off: np.ndarray, nbytes: int, instr, what: str):
        """Groups of ``.shared::cluster`` offsets: below ``1 << CLUSTER_SHIFT`` this CTA's shared
        memory, else rank ``(off >> CLUSTER_SHIFT) - 1``'s."""
        rank = (off >> np.uint64(CLUSTER_SHIFT)).astype(np.int64)
        out = []
        for r in np.unique(rank).tolist():
            pos = np.flatnonzero(rank == r)
            if r == 0:
                region = self.shared
            elif r - 1 < len(self.cluster_shared or ()):
                region = self.cluster_shared[r - 1]
            else:
                raise BadAddress.at(instr, f"{what} at shared::cluster address {int(off[pos[0]]):#x}: rank {r - 1} is "
                                           f"outside the cluster of {len(self.cluster_shared or ())} CTA(s)")
            local = off[pos] & np.uint64((1 << CLUSTER_SHIFT) - 1)
            g = self._within(region, local, local, nbytes, instr, what, "shared")
            out.append((g[0], pos, g[2]))
        return out

    def _within(self, region: Region | None, addr: np.ndarray, off: np.ndarray, nbytes: int, instr, what: str, space: str):
        # unsigned offsets: one below the base wrapped around, so the upper bound catches it too
        if region is None or (off.size and (region.size < nbytes or off.max() > np.uint64(region.size - nbytes) or (
                region.base and addr.min() < np.uint64(region.base if space != "generic" else 0)))):
            size = 0 if region is None else region.size
            bad = off[(off + np.uint64(nbytes)) > np.uint64(size)]
            where = int(bad[0]) if bad.size else int(off[0])
            raise BadAddress.at(instr, f"out-of-bounds {what} of {nbytes} bytes at {space} offset {where:#x} "
                                       f"({'no ' + space + ' memory' if region is None else region.name + f' holds {size} bytes'})")
        return (region, _positions(addr.size), off.view(np.int64))

    def _global_groups(self, addr: np.ndarray, nbytes: int, instr, what: str):
        last = self._last
        if last is not None:  # fast path: every address inside the region used last time
            off = addr - np.uint64(last.base)
            if off.max() <= np.uint64(last.size - nbytes) if last.size >= nbytes else False:
                return [(last, _positions(addr.size), off.view(np.int64))]
        if self.globals and addr.size:  # next: every address inside the region of the first one
            i = bisect.bisect_right(self._gbase_list, int(addr[0])) - 1
            if i >= 0:
                cand = self.globals[i]
                off = addr - np.uint64(cand.base)  # below the base wraps around: caught by the bound
                if cand.size >= nbytes and off.max() <= np.uint64(cand.size - nbytes):
                    self._last = cand
                    return [(cand, _positions(addr.size), off.view(np.int64))]
        groups = self._global_groups_slow(addr, nbytes, instr, what)
        if len(groups) == 1:
            self._last = groups[0][0]
        return groups

    def _global_groups_slow(self, addr: np.ndarray, nbytes: int, instr, what: str):
        if not self.globals:
            raise BadAddress.at(instr, f"{what} at global address {int(addr[0]):#x}: no global buffers")
        i = np.searchsorted(self._gbases, addr, side="right").astype(np.int64) - 1
        ok = i >= 0
        ic = np.clip(i, 0, None)
        bases = self._gbases[ic]
        sizes = np.array([g.size for g in self.globals], np.uint64)[ic]
        off = addr - bases
        ok &= (addr >= bases) & (off + np.uint64(nbytes) <= sizes)
        if not ok.all():
            j = int(np.flatnonzero(~ok)[0])
            a = int(addr[j])
            near = self.globals[int(ic[j])]
            raise BadAddress.at(instr, f"out-of-bounds {what} of {nbytes} bytes at global address {a:#x} "
                                       f"(nearest buffer {near.name!r}: {near.base:#x}..{near.base + near.size:#x})")
        groups = []
        first = int(ic[0])
        if np.all(ic == first):
            return [(self.globals[first], np.arange(addr.size), off.astype(np.int64))]
        for g in np.unique(ic):
            pos = np.flatnonzero(ic == g)
            groups.append((self.globals[int(g)], pos, off[pos].astype(np.int64)))
        return groups
