"""Thread-block clusters in the one-CTA reference: the cluster special registers, ``mapa``,
``barrier.cluster`` and the multicast mask of bulk and tensor copies.

The reference runs one CTA, so it runs a cluster of ONE CTA: a kernel without cluster directives (on
sm_90 every CTA is then a cluster of its own, PTX ISA "Cluster of Cooperative Thread Arrays"), or one
whose ``.reqnctapercluster`` is 1,1,1 (compile-time dimensions: ``cuLaunchKernel`` launches it with no
launch attribute, checked on the H100: tests/hw_records/tma_cluster_h100.json).  In it:

- ``%cluster_ctarank`` 0, ``%cluster_nctarank`` 1, ``%cluster_ctaid.*`` 0, ``%cluster_nctaid.*`` 1,
  ``%clusterid.*`` 0, ``%nclusterid.*`` 1, ``%is_explicit_cluster`` 1 where the kernel states its
  cluster (``.reqnctapercluster`` or ``.explicitcluster``), else 0;
- ``mapa`` to rank 0 gives back the address it was given (the own CTA's shared memory is the part of
  the ``.shared::cluster`` window a ``.shared::cta`` address names); any other rank names no CTA of the
  cluster: the result is undefined;
- ``barrier.cluster.arrive(.release|.relaxed)(.aligned)`` / ``wait(.acquire)(.aligned)``: the wait
  completes once every live thread of the cluster (here: of the CTA) has arrived (phases counted: a
  thread that arrived in a completed phase passes its wait); arriving twice without a wait between, or
  waiting without an arrival, is undefined; a wait short of arrivals from threads running elsewhere
  suspends the waiters until the phase completes (as at a named barrier, ``mem_ops.h_bar``); ``.aligned`` executed by part of a warp is undefined.  Memory ordering
  (``.relaxed``, ``fence.mbarrier_init``) changes nothing in this sequentially consistent model;
- ``.multicast::cluster`` copies deliver to every CTA their 16-bit ``ctaMask`` names: with rank 0
  set, to this CTA, as the plain copy does; a mask of 0 delivers nowhere (no bytes, no complete_tx:
  a wait on the phase never completes).  A mask naming a rank outside the cluster stops the kernel
  on the H100 (a bulk copy with an unspecified launch failure, a tensor copy with an illegal
  instruction): ``BadAddress``.
- what the H100 gives for ``mapa`` (tests/hw_records/tma_cluster_h100.json): the ``.shared::cluster``
  address of CTA ``r`` is the ``.shared::cta`` address plus ``r << 24`` (in clusters of two CTAs, rank 1's
  mapa to itself too is ``a + (1 << 24)``, not ``a``), a generic ``mapa.u64`` likewise; in a cluster of
  one, rank 1 gives ``a + (1 << 24)`` and a load through it stops the kernel.  The reference leaves a
  rank outside the cluster undefined (the ISA gives no value).

A cluster of more than one CTA is refused at launch (``Unsupported``, ``check_launch``): its CTAs would
need shared memory, mbarriers and named barriers per CTA, and every shared access (``ld``/``st``,
mbarriers, bulk and tensor copies, wgmma descriptors, ldmatrix/stmatrix) to pick its CTA's window,
where this interpreter has one shared region for all its threads.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from fuzzptx.ptx.ir import Function

from .errors import BadAddress, MissingInput, StepLimit, Undefined, Unsupported
from .mem_ops import h_bar, release
from .values import Shadow

CLUSTER_BARRIER = -1  # the key of barrier.cluster among the suspended groups (named barriers are 0-15)
_CLUSTER = re.compile(r"\s*\.reqnctapercluster\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?")


@dataclass(frozen=True)
class Cluster:
    """The cluster a kernel's CTA runs in: its CTAs per dimension and whether the kernel states it."""

    dims: tuple[int, int, int] = (1, 1, 1)
    explicit: bool = False

    @property
    def size(self) -> int:
        return self.dims[0] * self.dims[1] * self.dims[2]

    def special(self, n: int) -> dict[str, np.ndarray]:
        """The cluster special registers of the one CTA (grid 1,1,1: cluster 0, rank 0)."""
        out = {"%cluster_ctarank": np.zeros(n, np.uint64), "%cluster_nctarank": np.full(n, self.size, np.uint64),
               "%is_explicit_cluster": np.full(n, int(self.explicit), np.uint64)}
        for k, d in zip("xyz", self.dims):
            out[f"%cluster_ctaid.{k}"] = np.zeros(n, np.uint64)
            out[f"%cluster_nctaid.{k}"] = np.full(n, d, np.uint64)
            out[f"%clusterid.{k}"] = np.zeros(n, np.uint64)
            out[f"%nclusterid.{k}"] = np.ones(n, np.uint64)
        return out


def cluster_of(fn: Function) -> Cluster:
    """The kernel's cluster: ``.reqnctapercluster X{,Y{,Z}}`` (missing dimensions 1), else one CTA;
    ``.explicitcluster`` alone leaves the shape to the launch, which a program header does not carry."""
    explicit = any(a.strip().startswith(".explicitcluster") for a in fn.attributes)
    for attr in fn.attributes:
        mt = _CLUSTER.match(attr)
        if mt:
            return Cluster((int(mt.group(1)), int(mt.group(2) or 1), int(mt.group(3) or 1)), True)
    if explicit:
        raise Unsupported(f"kernel {fn.name} has .explicitcluster without .reqnctapercluster: its cluster shape "
                          "is a launch attribute (cuLaunchKernelEx), which the program header does not carry")
    return Cluster()


def check_launch(fn: Function, grid: tuple[int, int, int]) -> Cluster:
    """The kernel's cluster, refused unless it is the one CTA the reference runs (a grid that is no
    multiple of the cluster is a bad launch, as the driver says)."""
    c = cluster_of(fn)
    if any(g % d for g, d in zip(grid, c.dims)):
        raise MissingInput(f"grid {','.join(map(str, grid))} is not a multiple of kernel {fn.name}'s cluster "
                           f"{','.join(map(str, c.dims))} (.reqnctapercluster): the driver refuses the launch "
                           "(CUDA_ERROR_INVALID_CLUSTER_SIZE)")
    if c.size > 1:
        shape = ",".join(map(str, c.dims))
        raise Unsupported(f"kernel {fn.name} runs in clusters of {c.size} CTAs (.reqnctapercluster {shape}): the "
                          "reference runs one CTA; several would need per-CTA shared memory, mbarriers and barriers "
                          "and shared accesses routed to each CTA's window (distributed shared memory), not modelled")
    return c


def _cluster(m) -> Cluster:
    return getattr(m, "cluster", None) or Cluster()


def h_mapa(m, f, ins, act):
    """mapa(.shared::cluster).u32|u64 d, a, rank: the address of ``a``'s variable in CTA ``rank``."""
    d, a, r = ins.operands[:3]
    t = "u64" if "u64" in ins.modifiers else "u32"
    bits, sh = m.read(f, a, t, ins)
    rank, rsh = m.read(f, r, "u32", ins)
    outside = (rank & np.uint64(0xFFFFFFFF)) >= np.uint64(_cluster(m).size)
    if rsh is not None:
        outside = outside | rsh.nonexact()
    if (outside & act).any():
        m.note(f"line {ins.loc.line if ins.loc else '?'}: mapa to a rank outside the cluster of "
               f"{_cluster(m).size} CTA(s): the address is undefined (the H100 gives a + (rank << 24), "
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


def _barrier_cluster(m, ins, act) -> None:
    mods = ins.modifiers
    where = f"line {ins.loc.line if ins.loc else '?'}"
    if "aligned" in mods:
        for w in range(0, m.n, 32):
            part = act[w:w + 32] & m.alive[w:w + 32]
            if part.any() and not np.array_equal(part, m.alive[w:w + 32]):
                raise Undefined(f"{where}: {ins.opcode} executed by part of warp {w // 32} (.aligned)")
    # per thread: the cluster barrier phase it arrived in (-1: not arrived since its last wait)
    arrived = getattr(m, "cluster_arrived", None)
    if arrived is None:
        arrived = m.cluster_arrived = np.full(m.n, -1, np.int64)
        m.cluster_phase = 0
    phase = m.cluster_phase
    if "arrive" in mods:
        if (act & (arrived >= 0)).any():
            raise Undefined(f"{where}: a thread arrives at the cluster barrier twice without a barrier.cluster.wait")
        arrived[act] = phase
        if not (m.alive & (arrived != phase)).any():  # every live thread is in: the phase completes
            m.cluster_phase = phase + 1
            for g in m.parked_at.get(CLUSTER_BARRIER, ()):
                arrived[g[3]] = -1  # the suspended waiters pass their wait
            release(m, CLUSTER_BARRIER)
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
    if not missing.any():
        raise StepLimit.at(ins, "hang: barrier.cluster.wait misses arrivals from threads that all wait at barriers")
    if m.depth:
        raise Unsupported.at(ins, "barrier.cluster.wait short of arrivals inside a called function (suspending "
                                  "threads there is not modelled)")
    m.parked = parked | waits
    m.parking = (CLUSTER_BARRIER, waits)


def exits_complete(m) -> bool:
    """Threads wait at ``barrier.cluster.wait`` and every other thread has ended without arriving: the
    wait is for the non-exited threads only, so the phase completes (True: the waiters resume)."""
    if m.depth or m.parked is None or CLUSTER_BARRIER not in m.parked_at:
        return False
    if (m.alive & (m.cluster_arrived != m.cluster_phase)).any():
        return False
    m.cluster_phase += 1
    for g in m.parked_at[CLUSTER_BARRIER]:
        m.cluster_arrived[g[3]] = -1
    release(m, CLUSTER_BARRIER)
    return True


def multicast(m, f, ins, mask_op, idx: np.ndarray) -> np.ndarray:
    """Which of the threads ``idx`` issuing a ``.multicast::cluster`` copy deliver it to this CTA, from
    their ``ctaMask``: rank 0 named, the copy lands here as a plain one does; an empty mask delivers
    nowhere (no bytes, no complete_tx: the H100 leaves the barrier's phase incomplete).  A mask naming a
    rank outside the cluster stops the kernel on the H100 (``BadAddress``)."""
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
    return (masks & np.uint64(1)).astype(bool)


__all__ = ["CLUSTER_BARRIER", "Cluster", "cluster_of", "check_launch", "exits_complete", "h_mapa", "h_barrier",
           "multicast"]
