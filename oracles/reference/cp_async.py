"""``cp.async`` (the non-bulk asynchronous copy, sm_80 on): global -> shared per thread, in groups.

``cp.async.ca|cg.shared{::cta}.global [dst], [src], cp-size{, src-size}`` copies ``cp-size`` bytes
(4, 8 or 16; ``.cg`` only 16), of which the first ``src-size`` come from global memory and the rest
are zero.  The copy belongs to the issuing thread's open group; ``cp.async.commit_group`` closes
it; ``cp.async.wait_group N`` waits until at most the thread's ``N`` newest committed groups are
pending, ``cp.async.wait_all`` until none (the open group committed first).  Until the wait that
covers it, the destination reads as undefined (PTX ISA 9.7.9.25: the writes are not ordered with
any access before the wait): the reference takes the source bytes at the issue, marks the
destination undefined, and writes them at the covering wait.  The writes are the generic proxy's,
written by the issuing thread: a wgmma reading them needs that thread's ``fence.proxy.async``
after the wait (``Region.dirty``, the record wgmma's operand reads consult).

``cp.async.mbarrier.arrive{.noinc}.shared{::cta}.b64 [bar]`` (PTX ISA 9.7.9.25.4): an arrive-on
operation on ``bar`` that fires once every cp.async the thread issued before it has completed;
``.noinc`` counts it against the phase's expected arrivals, without ``.noinc`` the pending count is
first raised by one, so the phase only waits for the copies.  The thread's pending copies (open and
committed groups) leave its groups (a later wait_group finds them complete) and join the barrier's
current phase as bulk copies do (``mbarrier.Barrier.landing``): they read as undefined until a wait
observes that phase.  Not modelled there: the proxy of those bytes (a wgmma after the wait reads
them as defined, fence or not).

Not modelled (``Unsupported``): a ``src-size`` that is not a multiple of 4, the ``.ignore-src``
predicate form.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fuzzptx.ptx.ir import Imm

from .errors import BadAddress, ReferenceError_, Unsupported
from .mbarrier import _addrs, _get
from .mem_ops import _address
from .values import U64, Shadow


@dataclass
class Pending:
    """One thread's copy in flight: where it lands and the source words it took at the issue."""

    region: object
    offsets: np.ndarray
    words: list


@dataclass
class Groups:
    """Per thread: the open group's copies and the committed groups, oldest first."""

    open: dict = field(default_factory=dict)
    committed: dict = field(default_factory=dict)


def _groups(m) -> Groups:
    g = getattr(m, "cp_async_groups", None)
    if g is None:
        g = m.cp_async_groups = Groups()
    return g


def h_cp_async(m, f, ins, act) -> None:
    """Every ``cp.async`` instruction that is not a bulk copy."""
    op = ins.opcode
    if op == "cp.async.commit_group":
        _commit(m, act)
        return
    if op.startswith("cp.async.wait_group"):
        (n,) = ins.operands
        if not isinstance(n, Imm):
            raise Unsupported.at(ins, "cp.async.wait_group needs an immediate count")
        _wait(m, act, int(n.value))
        return
    if op.startswith("cp.async.wait_all"):  # commit_group, then wait_group 0
        _commit(m, act)
        _wait(m, act, 0)
        return
    if op.startswith("cp.async.mbarrier.arrive"):
        _arrive_on_completion(m, f, ins, act)
        return
    if op.startswith("cp.async.mbarrier"):
        raise Unsupported.at(ins, f"{op} is not supported by the reference")
    _copy(m, f, ins, act)


def _copy(m, f, ins, act) -> None:
    mods = ins.modifiers[1:]  # after "async"
    if not (mods and mods[0] in ("ca", "cg")) or "global" not in mods or not any(x.startswith("shared") for x in mods):
        raise Unsupported.at(ins, f"{ins.opcode} is not supported by the reference")
    ops = ins.operands
    if len(ops) < 3 or not isinstance(ops[2], Imm):
        raise Unsupported.at(ins, f"{ins.opcode}: the copy size must be an immediate")
    size = int(ops[2].value)
    if size not in (4, 8, 16) or (mods[0] == "cg" and size != 16):
        raise BadAddress.at(ins, f"{ins.opcode}: cp-size {size} (4, 8 or 16 bytes; .cg only 16)")
    idx, daddr, _ = _address(m, f, ins, ops[0], act)
    _, saddr, _ = _address(m, f, ins, ops[1], act)
    if len(ops) > 3 and not isinstance(ops[3], Imm):
        srcsize, _ = m.read(f, ops[3], "u32", ins)
        src_n = srcsize[idx].astype(np.int64)
    elif len(ops) > 3:
        src_n = np.full(idx.size, int(ops[3].value), np.int64)
    else:
        src_n = np.full(idx.size, size, np.int64)
    g = _groups(m)
    every = _copy_all(m, ins, idx, daddr, saddr, src_n, size)
    if every is not None:
        for t, pending in zip(idx.tolist(), every):
            g.open.setdefault(t, []).append(pending)
        return
    words = _WORDS[size]
    for j in range(idx.size):  # one thread at a time: the first thread's error is the one reported
        d, s, n = int(daddr[j]), int(saddr[j]), int(src_n[j])
        if d % size or s % size:
            raise BadAddress.at(ins, f"{ins.opcode}: addresses must be aligned to the copy size ({size} bytes)")
        if n > size or n < 0 or n % 4:
            raise Unsupported.at(ins, f"{ins.opcode}: src-size {n} (the reference takes multiples of 4 up to {size})")
        (dreg, _, doff), = m.mem.resolve("shared", U64(d) + words, 4, ins, "store")
        taken = []
        if n:
            nw = n // 4
            for region, pos, off in m.mem.resolve("global", U64(s) + words[:nw], 4, ins, "load"):
                (bits, sh), = region.read(off, 4, 1)
                taken.append((doff[pos] if pos.size != nw else doff[:nw], bits, sh))
        if n < size:  # the rest is zero-filled
            rest = doff[n // 4:]
            taken.append((rest, np.zeros(rest.size, np.uint64), None))
        for d_off, bits, _sh in taken:
            dreg.write(d_off, 4, [(bits, Shadow.undef(bits.size, 32))])
        g.open.setdefault(int(idx[j]), []).append(Pending(dreg, doff, taken))


_WORDS = {size: np.arange(0, size, 4, dtype=np.uint64) for size in (4, 8, 16)}


def _copy_all(m, ins, idx, daddr, saddr, src_n, size) -> list[Pending] | None:
    """The copies of every active thread at once (one resolve, one read, one write), with the
    state the thread-by-thread loop leaves; None, before changing anything, where that loop must
    run instead: a thread whose copy is an error (reported for the first such thread), a source
    with a shadow or in two buffers, or destinations that overlap (the order of the writes decides)."""
    nt = idx.size
    if daddr is None or saddr is None or not nt:
        return None
    k = size // 4
    if ((daddr | saddr) % U64(size)).any() or (src_n > size).any() or (src_n < 0).any() or (src_n % 4).any():
        return None
    nw = src_n // 4
    try:
        (dreg, _, doff), = m.mem.resolve("shared", (daddr[:, None] + _WORDS[size]).ravel(), 4, ins, "store")
        if np.unique(doff).size != doff.size:
            return None
        took = np.arange(k) < nw[:, None]  # [thread, word]: the words that come from global memory
        bits = np.zeros((nt, k), np.uint64)
        if took.any():
            (region, _, off), *more = m.mem.resolve("global", (saddr[:, None] + _WORDS[size])[took], 4, ins, "load")
            if more:
                return None
            (got, sh), = region.read(off, 4, 1)
            if sh is not None:
                return None
            bits[took] = got
    except ReferenceError_:
        return None
    # the same writes as the loop's, in one call: per thread its source words, then the zeros;
    # ``order`` numbers them so a write hook sees what the loop's calls would, in their order
    chunk = 2 * np.arange(nt)[:, None] + ~took
    dreg.write(doff, 4, [(bits.ravel(), Shadow.undef(doff.size, 32))], order=chunk.ravel())
    doffs, rows = doff.reshape(nt, k), bits
    out = []
    for j, n in enumerate(nw.tolist()):
        d, b = doffs[j], rows[j]
        taken = [(d, b, None)] if n == k else [(d[n:], b[n:], None)] if not n else [(d[:n], b[:n], None), (d[n:], b[n:], None)]
        out.append(Pending(dreg, d, taken))
    return out


def _commit(m, act) -> None:
    """Each active thread's open group joins its committed ones (an empty group too)."""
    g = _groups(m)
    for t in np.flatnonzero(act).tolist():
        g.committed.setdefault(t, []).append(g.open.pop(t, []))


def _wait(m, act, keep: int) -> None:
    g = _groups(m)
    landed = []  # (thread, copy), in the order the copies land
    for t in np.flatnonzero(act).tolist():
        groups = g.committed.get(t, [])
        done, g.committed[t] = (groups[:len(groups) - keep], groups[len(groups) - keep:]) if keep else (groups, [])
        landed += [(t, p) for copies in done for p in copies]
    _land(landed)


def _land(landed: list) -> None:
    """Write the copies' words, each as the issuing thread's generic-proxy write (a wgmma reading
    them needs that thread's fence.proxy.async): in one call where they all go to one region,
    carry no shadow and do not overlap (then their order cannot matter), else one by one."""
    chunks = [(t, p.region, d_off, bits, sh) for t, p in landed for d_off, bits, sh in p.words]
    if not chunks:
        return
    region = chunks[0][1]
    if len(chunks) > 1 and all(c[1] is region and c[4] is None for c in chunks):
        off = np.concatenate([c[2] for c in chunks])
        if np.unique(off).size == off.size:
            sizes = [c[2].size for c in chunks]
            writers = (np.repeat(np.array([c[0] for c in chunks], np.int32), sizes)
                       if region.dirty is not None else None)
            region.write(off, 4, [(np.concatenate([c[3] for c in chunks]), None)], writers=writers,
                         order=np.repeat(np.arange(len(chunks)), sizes))
            return
    for t, region, d_off, bits, sh in chunks:
        writers = np.full(d_off.size, t, np.int32) if region.dirty is not None else None
        region.write(d_off, 4, [(bits, sh)], writers=writers)


def _arrive_on_completion(m, f, ins, act) -> None:
    """``cp.async.mbarrier.arrive{.noinc}``: each active thread's pending copies join the barrier's
    current phase (undefined until a wait observes it), then the arrival (``.noinc``) or none (the
    increment and the arrive-on cancel out), in thread order."""
    mods = ins.modifiers
    if "b64" not in mods or not any(x.startswith("shared") for x in mods) or len(ins.operands) != 1:
        raise Unsupported.at(ins, f"{ins.opcode} is not supported by the reference")
    noinc = "noinc" in mods
    idx, addr = _addrs(m, f, ins, ins.operands[0], act)
    g = _groups(m)
    for t, a in zip(idx.tolist(), addr.tolist()):
        b = _get(m, ins, a)
        copies = g.open.pop(t, [])
        for group in g.committed.get(t, []):
            copies += group
            group.clear()  # complete: the group still counts for wait_group, empty
        for p in copies:
            b.landing += [(p.region, d_off, [(bits, sh)]) for d_off, bits, sh in p.words]
        if noinc:
            b.pending -= 1
            if b.pending < 0:
                raise BadAddress.at(ins, f"more arrivals than mbarrier at {a:#x} expects in one phase (undefined)")
            b.settle()
