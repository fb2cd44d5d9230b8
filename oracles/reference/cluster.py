"""Thread-block clusters in the reference: the cluster special registers, ``mapa``, distributed
shared memory, ``barrier.cluster`` and the multicast mask of bulk and tensor copies.

The reference runs ONE cluster: a grid of one CTA, or a grid equal to the cluster shape (the
launch's ``cluster=`` or the kernel's ``.reqnctapercluster``).  A kernel without cluster directives
and no launch cluster runs in a cluster of one CTA (on sm_90 every CTA is then a cluster of its own,
PTX ISA "Cluster of Cooperative Thread Arrays"; ``.reqnctapercluster 1,1,1`` is launched by
``cuLaunchKernel`` with no attribute, checked on the H100: tests/hw_records/tma_cluster_h100.json).

A cluster of several CTAs runs as one ``Machine`` per CTA, each with its own shared memory,
mbarriers, named barriers and registers, sharing the global buffers and parameters.  They run one
at a time (``Group``): a CTA runs until every thread it has left waits on something only another
CTA can supply (an mbarrier phase that a peer's copy or remote arrive completes, the cluster
barrier), then hands over to the next; a hand-over after which no CTA ran an instruction is a hang.
This is one sequentially consistent interleaving of the CTAs (each CTA's own threads as in the
one-CTA reference).  A CTA hands over only where its threads wait at an mbarrier or a barrier: a
loop polling a plain ``.shared::cluster`` word that another CTA writes runs into the step limit
(``StepLimit``) instead.  In a cluster:

- ``%cluster_ctarank`` is the CTA's rank (x fastest), ``%cluster_ctaid.*`` its position,
  ``%cluster_nctarank``/``%cluster_nctaid.*`` the shape; ``%ctaid.*``/``%nctaid.*`` the same (the grid
  is the one cluster), ``%clusterid.*`` 0, ``%nclusterid.*`` 1, ``%is_explicit_cluster`` 1 where the
  kernel or the launch states its cluster, else 0;
- ``.shared::cluster`` addresses: a CTA's own ``.shared::cta`` address (below ``1 << 24``) names its
  own shared memory (PTX ISA: the ``.shared::cta`` window is inside the ``.shared::cluster`` window);
  ``mapa`` to rank ``r`` gives ``((r + 1) << 24) | offset`` (generic: the shared window plus that) in
  clusters of several CTAs.  The ISA gives these addresses no value; the H100 gives ``a + (r << 24)``
  (tests/hw_records/tma_cluster_h100.json), an encoding in which rank 0's addresses and a CTA's own
  coincide, so the reference keeps its own.  In a cluster of one CTA, ``mapa`` to rank 0 gives back
  the address it was given and any other rank is undefined (the H100 gives ``a + (1 << 24)`` and a
  load through it stops the kernel);
- ``ld``/``st``/``atom`` on ``.shared::cluster`` and ``mbarrier.arrive.shared::cluster`` reach the CTA
  the address names;
- ``barrier.cluster.arrive(.release|.relaxed)(.aligned)`` / ``wait(.acquire)(.aligned)``: the wait
  completes once every live thread of the cluster has arrived (phases counted: a thread that arrived
  in a completed phase passes its wait); arriving twice without a wait between, or waiting without an
  arrival, is undefined; a wait short of arrivals suspends the waiters until the phase completes (as
  at a named barrier, ``mem_ops.h_bar``); ``.aligned`` executed by part of a warp is undefined.
  Memory ordering (``.relaxed``, ``fence.mbarrier_init``) changes nothing in this sequentially
  consistent model;
- ``.multicast::cluster`` copies deliver to every CTA their 16-bit ``ctaMask`` names, at the same
  CTA-relative offsets of the destination and the mbarrier (PTX ISA, cp.async.bulk.tensor): the
  bytes land in each such CTA's shared memory and complete_tx runs on each one's mbarrier.  A mask
  of 0 delivers nowhere (no bytes, no complete_tx: a wait on the phase never completes).  A mask
  naming a rank outside the cluster stops the kernel on the H100 (a bulk copy with an unspecified
  launch failure, a tensor copy with an illegal instruction): ``BadAddress``.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import numpy as np

from fuzzptx.ptx.ir import Function

from .errors import BadAddress, MissingInput, StepLimit, Undefined, Unsupported
from .mem_ops import h_bar, release
from .memory import CLUSTER_SHIFT, SHARED_WINDOW
from .values import Shadow

CLUSTER_BARRIER = -1  # the key of barrier.cluster among the suspended groups (named barriers are 0-15)
_CLUSTER = re.compile(r"\s*\.reqnctapercluster\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?")
_OFFSET = (1 << CLUSTER_SHIFT) - 1


@dataclass(frozen=True)
class Cluster:
    """The cluster a CTA runs in: its CTAs per dimension, whether the kernel or launch states it,
    and the CTA's rank in it."""

    dims: tuple[int, int, int] = (1, 1, 1)
    explicit: bool = False
    rank: int = 0

    @property
    def size(self) -> int:
        return self.dims[0] * self.dims[1] * self.dims[2]

    @property
    def position(self) -> tuple[int, int, int]:
        """``%cluster_ctaid`` of this CTA: its rank with x fastest."""
        x, y = self.dims[0], self.dims[1]
        return self.rank % x, (self.rank // x) % y, self.rank // (x * y)

    def special(self, n: int) -> dict[str, np.ndarray]:
        """The cluster special registers of this CTA, and ``%ctaid``/``%nctaid`` (the grid is the
        one cluster)."""
        out = {"%cluster_ctarank": np.full(n, self.rank, np.uint64),
               "%cluster_nctarank": np.full(n, self.size, np.uint64),
               "%is_explicit_cluster": np.full(n, int(self.explicit), np.uint64)}
        for k, d, p in zip("xyz", self.dims, self.position):
            out[f"%cluster_ctaid.{k}"] = np.full(n, p, np.uint64)
            out[f"%cluster_nctaid.{k}"] = np.full(n, d, np.uint64)
            out[f"%ctaid.{k}"] = np.full(n, p, np.uint64)
            out[f"%nctaid.{k}"] = np.full(n, d, np.uint64)
            out[f"%clusterid.{k}"] = np.zeros(n, np.uint64)
            out[f"%nclusterid.{k}"] = np.ones(n, np.uint64)
        return out


def cluster_of(fn: Function, launched: tuple[int, int, int] = (1, 1, 1)) -> Cluster:
    """The kernel's cluster: ``.reqnctapercluster X{,Y{,Z}}`` (missing dimensions 1), else the
    launch's (``launched``: cuLaunchKernelEx's attribute), else one CTA.  ``.explicitcluster`` with
    neither leaves the shape unknown; a launch shape other than the kernel's is refused."""
    explicit = any(a.strip().startswith(".explicitcluster") for a in fn.attributes)
    launched = tuple(launched)
    for attr in fn.attributes:
        mt = _CLUSTER.match(attr)
        if mt:
            dims = (int(mt.group(1)), int(mt.group(2) or 1), int(mt.group(3) or 1))
            if launched != (1, 1, 1) and launched != dims:
                raise MissingInput(f"launch cluster {','.join(map(str, launched))} differs from kernel {fn.name}'s "
                                   f".reqnctapercluster {','.join(map(str, dims))} (the driver refuses the launch)")
            return Cluster(dims, True)
    if launched != (1, 1, 1):
        return Cluster(launched, True)  # type: ignore[arg-type]
    if explicit:
        raise Unsupported(f"kernel {fn.name} has .explicitcluster without .reqnctapercluster: its cluster shape "
                          "is a launch attribute (cuLaunchKernelEx): give it as cluster= on the LAUNCH line")
    return Cluster()


def check_launch(fn: Function, grid: tuple[int, int, int], launched: tuple[int, int, int] = (1, 1, 1)) -> Cluster:
    """The kernel's cluster for a launch of ``grid`` (a grid that is no multiple of the cluster is a
    bad launch, as the driver says); the reference runs one cluster: the grid must be its shape."""
    c = cluster_of(fn, launched)
    shape = ",".join(map(str, c.dims))
    if any(g % d for g, d in zip(grid, c.dims)):
        raise MissingInput(f"grid {','.join(map(str, grid))} is not a multiple of kernel {fn.name}'s cluster "
                           f"{shape}: the driver refuses the launch (CUDA_ERROR_INVALID_CLUSTER_SIZE)")
    if c.size > 16:
        raise MissingInput(f"a cluster of {c.size} CTAs ({shape}): at most 16 (the H100's non-portable limit)")
    if tuple(grid) != c.dims:
        raise MissingInput(f"the reference runs one cluster: grid={','.join(map(str, grid))} must be {shape}")
    return c


def _cluster(m) -> Cluster:
    return getattr(m, "cluster", None) or Cluster()


def _members(m) -> tuple:
    """The CTAs of ``m``'s cluster, by rank (``m`` alone in a cluster of one)."""
    return getattr(m, "peers", None) or (m,)


def owner(m, addr: int, ins=None) -> tuple:
    """(machine, CTA-relative offset) of a ``.shared::cluster`` address (32 bits) used by a thread
    of ``m``: below ``1 << CLUSTER_SHIFT`` its own CTA; else, in a cluster of several CTAs, rank
    ``(addr >> CLUSTER_SHIFT) - 1`` (what ``mapa`` gives).  In a cluster of one the address is
    ``m``'s as it is (its bounds are checked where it is used)."""
    peers = getattr(m, "peers", None)
    if not peers or addr < (1 << CLUSTER_SHIFT):
        return m, addr
    r = (addr >> CLUSTER_SHIFT) - 1
    if r >= len(peers):
        raise BadAddress.at(ins, f"shared::cluster address {addr:#x} names CTA rank {r}, outside the cluster of "
                                 f"{len(peers)} CTA(s)")
    return peers[r], addr & _OFFSET


def destinations(m, dst: int, bar: int, mask: int | None, ins) -> list[tuple]:
    """(machine, destination offset, mbarrier offset) of each CTA a copy issued by ``m`` lands in:
    the CTA its ``.shared::cluster`` destination names, or with a ``ctaMask`` every CTA it names at
    the same CTA-relative offsets (a cluster of one: ``m`` at the addresses as given)."""
    if mask is None:
        md, d = owner(m, dst, ins)
        mb, b = owner(m, bar, ins)
        if mb is not md:
            raise BadAddress.at(ins, "the copy's destination and its mbarrier are in different CTAs (undefined)")
        return [(md, d, b)]
    members = _members(m)
    if len(members) == 1:
        return [(m, dst, bar)] if mask & 1 else []
    d, b = owner(m, dst, ins)[1], owner(m, bar, ins)[1]
    return [(members[r], d, b) for r in range(len(members)) if (mask >> r) & 1]


def h_mapa(m, f, ins, act):
    """mapa(.shared::cluster).u32|u64 d, a, rank: the address of ``a``'s variable in CTA ``rank``."""
    d, a, r = ins.operands[:3]
    t = "u64" if "u64" in ins.modifiers else "u32"
    bits, sh = m.read(f, a, t, ins)
    rank, rsh = m.read(f, r, "u32", ins)
    rank = rank & np.uint64(0xFFFFFFFF)
    size = _cluster(m).size
    outside = rank >= np.uint64(size)
    if rsh is not None:
        outside = outside | rsh.nonexact()
    if size > 1:
        generic = "shared::cluster" not in ins.modifiers
        base = np.uint64(SHARED_WINDOW if generic else 0)
        off = (bits - base) & np.uint64(_OFFSET)
        bits = np.where(outside, bits, base + (((rank + np.uint64(1)) << np.uint64(CLUSTER_SHIFT)) | off))
    if (outside & act).any():
        m.note(f"line {ins.loc.line if ins.loc else '?'}: mapa to a rank outside the cluster of "
               f"{size} CTA(s): the address is undefined (the H100 gives a + (rank << 24), "
               "and a load through it stops the kernel)")
        width = 64 if t == "u64" else 32
        bad = Shadow.undef(m.n, width, outside)
        sh = bad if sh is None else Shadow.undef(m.n, width, outside | sh.nonexact())
    m.write(f, d, bits, sh, act, ins)


def h_barrier(m, f, ins, act):
    """``barrier`` instructions: ``barrier.cluster.*`` here, the CTA's barriers in ``mem_ops``."""
    if "cluster" in ins.modifiers:
        return _barrier_cluster(m, ins, act)
    return h_bar(m, f, ins, act)


def _arrivals(m) -> np.ndarray:
    """Per thread of ``m``: the cluster barrier phase it arrived in (-1: not since its last wait)."""
    arrived = getattr(m, "cluster_arrived", None)
    if arrived is None:
        arrived = m.cluster_arrived = np.full(m.n, -1, np.int64)
        m.cluster_phase = getattr(m, "cluster_phase", 0)
    return arrived


def _complete(members, phase: int) -> None:
    """The cluster barrier's phase ``phase`` completed: every CTA's suspended waiters pass their wait."""
    for mm in members:
        mm.cluster_phase = phase + 1
        for g in mm.parked_at.get(CLUSTER_BARRIER, ()):
            mm.cluster_arrived[g[3]] = -1
        release(mm, CLUSTER_BARRIER)


def _barrier_cluster(m, ins, act) -> None:
    mods = ins.modifiers
    where = f"line {ins.loc.line if ins.loc else '?'}"
    if "aligned" in mods:
        for w in range(0, m.n, 32):
            part = act[w:w + 32] & m.alive[w:w + 32]
            if part.any() and not np.array_equal(part, m.alive[w:w + 32]):
                raise Undefined(f"{where}: {ins.opcode} executed by part of warp {w // 32} (.aligned)")
    members = _members(m)
    for mm in members:
        _arrivals(mm)
    arrived = m.cluster_arrived
    phase = m.cluster_phase
    if "arrive" in mods:
        if (act & (arrived >= 0)).any():
            raise Undefined(f"{where}: a thread arrives at the cluster barrier twice without a barrier.cluster.wait")
        arrived[act] = phase
        if not any((mm.alive & (mm.cluster_arrived != phase)).any() for mm in members):
            _complete(members, phase)  # every live thread of the cluster is in
        return
    if "wait" not in mods:
        raise Unsupported.at(ins, f"{ins.opcode} is not supported by the reference")
    if (act & (arrived < 0)).any():
        raise Undefined(f"{where}: barrier.cluster.wait by a thread that has not arrived (undefined)")
    ready = act & (arrived < phase)
    arrived[ready] = -1
    waits = act & ~ready
    if not waits.any():
        return
    # the phase still misses arrivals: these threads wait (suspended as at a named barrier, mem_ops.h_bar)
    parked = m.parked if m.parked is not None else np.zeros(m.n, bool)
    missing = m.alive & (arrived != phase) & ~parked
    elsewhere = any((mm.alive & (mm.cluster_arrived != phase)).any() for mm in members if mm is not m)
    if not missing.any() and not elsewhere:
        raise StepLimit.at(ins, "hang: barrier.cluster.wait misses arrivals from threads that all wait at barriers")
    if m.depth:
        raise Unsupported.at(ins, "barrier.cluster.wait short of arrivals inside a called function (suspending "
                                  "threads there is not modelled)")
    m.parked = parked | waits
    m.parking = (CLUSTER_BARRIER, waits)


def exits_complete(m) -> bool:
    """Threads wait at ``barrier.cluster.wait`` and every other thread of the cluster has arrived or
    ended: the wait is for the non-exited threads only, so the phase completes (True: the waiters
    resume)."""
    if m.depth or m.parked is None or CLUSTER_BARRIER not in m.parked_at:
        return False
    members = _members(m)
    for mm in members:
        _arrivals(mm)
    if any((mm.alive & (mm.cluster_arrived != m.cluster_phase)).any() for mm in members):
        return False
    _complete(members, m.cluster_phase)
    return True


def multicast(m, f, ins, mask_op, idx: np.ndarray) -> np.ndarray:
    """The ``ctaMask`` of each of the threads ``idx`` issuing a ``.multicast::cluster`` copy (the
    CTAs it lands in: ``destinations``).  An empty mask delivers nowhere (no bytes, no complete_tx:
    the H100 leaves the barrier's phase incomplete).  A mask naming a rank outside the cluster stops
    the kernel on the H100 (``BadAddress``)."""
    bits, sh = m.read(f, mask_op, "u16", ins)
    if sh is not None and sh.nonexact()[idx].any():
        raise Undefined(f"line {ins.loc.line if ins.loc else '?'}: {ins.base} with an undefined ctaMask")
    size = _cluster(m).size
    inside = (1 << size) - 1
    masks = bits[idx] & np.uint64(0xFFFF)
    for v in masks.tolist():
        if v & ~inside:
            what = "illegal instruction" if "tensor" in ins.modifiers else "unspecified launch failure"
            raise BadAddress.at(ins, f"ctaMask {v:#06x} names CTA rank(s) outside the cluster of {size} CTA(s): the "
                                     f"H100 stops the kernel ({what})")
    if (masks == 0).any():
        m.note(f"line {ins.loc.line if ins.loc else '?'}: a multicast copy with ctaMask 0 delivers to no CTA "
               "(no bytes, no complete_tx)")
    return masks


# ------------------------------------------------------------------ running the CTAs of a cluster


class _Stopped(Exception):
    """Unwinds a CTA's run when another CTA of its cluster ended the run with an error."""


class Group:
    """The CTAs of one cluster run one at a time, each in a thread of its own that holds the turn:
    a CTA gives the turn away only when nothing it has left can run (``pause``) or when it ends."""

    def __init__(self, machines) -> None:
        self.machines = tuple(machines)
        self.cv = threading.Condition()
        self.turn = 0
        self.done = [False] * len(self.machines)
        self.error: BaseException | None = None
        self.seen: dict[int, int] = {}  # rank -> instructions run by the cluster at its last pause
        for m in self.machines:
            m.peers = self.machines
            m.group = self

    def _progress(self) -> int:
        return sum(m.steps for m in self.machines)

    def _next(self, rank: int) -> int | None:
        k = len(self.machines)
        return next(((rank + i) % k for i in range(1, k) if not self.done[(rank + i) % k]), None)

    def pause(self, m) -> bool:
        """``m`` cannot go on until another CTA does something: give the turn to the next CTA and
        wait for it back.  True: some CTA ran since ``m``'s last pause (look again); False: none did,
        or none is left (a hang: the caller says what it waits for)."""
        r = m.cluster.rank
        now = self._progress()
        if self.seen.get(r) == now:
            return False
        self.seen[r] = now
        nxt = self._next(r)
        if nxt is None:
            return False
        with self.cv:
            self.turn = nxt
            self.cv.notify_all()
            self.cv.wait_for(lambda: self.turn == r or self.error is not None)
            if self.error is not None:
                raise _Stopped()
        return True

    def run(self, body) -> None:
        """Run ``body(machine)`` for every CTA, rank 0 first; the first error any raises is raised here."""
        def work(m) -> None:
            r = m.cluster.rank
            with self.cv:
                self.cv.wait_for(lambda: self.turn == r or self.error is not None)
                if self.error is not None:
                    return
            old = np.seterr(all="ignore")  # numpy's error state is per thread
            try:
                body(m)
            except _Stopped:
                return
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread, raised there
                with self.cv:
                    if self.error is None:
                        self.error = e
                    self.cv.notify_all()
                return
            finally:
                np.seterr(**old)
            with self.cv:
                self.done[r] = True
                nxt = self._next(r)
                if nxt is not None:
                    self.turn = nxt
                self.cv.notify_all()

        threads = [threading.Thread(target=work, args=(m,), name=f"cta{m.cluster.rank}", daemon=True)
                   for m in self.machines]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.error is not None:
            raise self.error


def pause(m) -> bool:
    """``Group.pause`` for a CTA of a cluster of several; False (nothing else can run) for one CTA."""
    g = getattr(m, "group", None)
    return g is not None and g.pause(m)


def several(m) -> bool:
    """Whether ``m`` runs in a cluster of several CTAs (another CTA may still complete its waits)."""
    g = getattr(m, "group", None)
    return g is not None and not all(d for i, d in enumerate(g.done) if i != m.cluster.rank)


__all__ = ["CLUSTER_BARRIER", "Cluster", "Group", "cluster_of", "check_launch", "destinations", "exits_complete",
           "h_mapa", "h_barrier", "multicast", "owner", "pause", "several"]
