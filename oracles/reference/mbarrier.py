"""mbarrier objects, bulk async copies, elect.sync and setmaxnreg in the sequential reference.

An mbarrier (PTX ISA 9.7.13.15) lives in 8 bytes of shared memory; the reference keeps its state
beside memory, keyed by the shared byte address: the expected arrival count, the arrivals and
transaction bytes still pending in the current phase, and the number of completed phases.  A
phase completes when both pending counts reach zero; the next then starts with the expected count.

In this model every thread runs in lockstep and an async copy completes when it is issued
(``cp.async.bulk`` global -> shared copies its bytes, then performs complete_tx on its barrier),
except that its bytes read as undefined until a wait observes the completion of the barrier
phase it completes on (a reader the phase does not order may see old or new bytes: a read
before the wait, or a missing expect_tx that completes the phase early, sees undefined data); so a wait that fails while every live thread is waiting can never succeed: the reference reports
it as a hang (``StepLimit``, what a run past the step budget reports), naming the barrier's
pending arrivals and bytes.  A wait that fails while other threads are elsewhere returns false,
as on hardware, and its threads are suspended after it (``m.parking``, as at a named barrier)
until that barrier completes a phase (``wake``), so the others run: in lockstep a warp-specialised
kernel's spin around the wait never yielded to the warp that would complete the phase.  A failing parity wait once the barrier has completed a phase is different: run
before that completion (nothing in this model orders it after), it returns at once and its reads
race the copy, so the run's outcome is undefined rather than a certain hang.

Tensor copies, bulk stores and their groups are ``tma``'s, ``cp.async`` is ``cp_async``'s; the
cluster, ``.shared::cluster`` addresses of other CTAs and multicast masks are ``cluster``'s (a wait
that fails while another CTA of the cluster may still complete its phase suspends, as above, and
the CTA hands over to the others: ``cluster.pause``).  Not modelled (``Unsupported``): mbarrier
state read as data.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fuzzptx.ptx.ir import Addr, Imm, Reg, Sym

import fuzzptx.oracles.reference.cluster as cluster
from .errors import BadAddress, StepLimit, Undefined, Unsupported
from .mem_ops import _address, release
from .values import U64, Shadow


@dataclass
class Barrier:
    expected: int
    pending: int
    tx: int = 0
    phases: int = 0  # completed phases; the current phase's parity is phases & 1
    landing: list = field(default_factory=list)  # (region, offsets, words) of copies this phase orders
    async_tx: int = 0  # bytes async copies completed in this phase (they may land later on hardware)
    observable: list = field(default_factory=list)  # landed copies of completed phases no wait observed yet

    def observe(self) -> None:
        """A wait saw a completed phase: the bytes it orders are now defined (for every thread: this
        model has no per-thread visibility, so a read after another thread's wait, ordered by a
        CTA barrier, sees them too)."""
        seen, i = self.observable, 0
        while i < len(seen):
            # a run of exact copies into one region (a cp.async's per-thread landings): one write
            # where they do not overlap (their order cannot matter then), else one at a time
            region, j = seen[i][0], i + 1
            while j < len(seen) and seen[j][0] is region and _exact(seen[j][2]) and _exact(seen[i][2]):
                j += 1
            off = np.concatenate([o[1] for o in seen[i:j]]) if j - i > 1 else None
            if off is not None and np.unique(off).size == off.size:
                _quietly(region, off, [(np.concatenate([o[2][0][0] for o in seen[i:j]]), None)])
            else:
                for _, o, words in seen[i:j]:
                    _quietly(region, o, words)
            i = j
        self.observable = []

    def settle(self) -> None:
        """Complete the phase when nothing is pending: the copies it orders become visible to the
        first wait that observes the completion (``observe``)."""
        if self.pending == 0 and self.tx == 0:
            self.observable += self.landing
            self.landing = []
            self.async_tx = 0
            self.phases += 1
            self.pending = self.expected


def _exact(words: list) -> bool:
    return len(words) == 1 and words[0][1] is None


def _quietly(region, off: np.ndarray, words: list) -> None:
    """Write words the copy already wrote when it landed (and was watched then): this only makes
    them defined, so the write hook of in-flight wgmma reads is not called again."""
    watch, region.watch = region.watch, None
    try:
        region.write(off, 4, words)
    finally:
        region.watch = watch


def _table(m) -> dict[int, Barrier]:
    t = getattr(m, "mbarriers", None)
    if t is None:
        t = m.mbarriers = {}
    return t


def _addrs(m, f, ins, op, act) -> tuple[np.ndarray, np.ndarray]:
    """(active thread indices, their shared byte addresses) of an mbarrier operand (8-aligned)."""
    if not isinstance(op, Addr):
        raise Unsupported.at(ins, "an mbarrier operand must be an address")
    idx, addr, pvar = _address(m, f, ins, op, act)
    if pvar is not None or addr is None:
        raise Unsupported.at(ins, "an mbarrier in a .param variable")
    addr = addr.astype(np.uint64) & U64(0xFFFFFFFF)
    if (addr & U64(7)).any():
        raise BadAddress.at(ins, f"mbarrier at shared address {int(addr[(addr & U64(7)) != 0][0]):#x} is not 8-byte aligned")
    return idx, addr


def _one_barrier(m, ins, addr: np.ndarray) -> Barrier | None:
    """The barrier every thread names, where they name one (None: several, or no thread)."""
    if not addr.size or (addr != addr[0]).any():
        return None
    return _get(m, ins, int(addr[0]))


def _value(m, f, ins, op, t: str, idx) -> np.ndarray:
    bits, sh = m.read(f, op, t, ins)
    if sh is not None and sh.kind[idx].any():
        raise Unsupported.at(ins, f"an undefined {t} operand of {ins.base}")
    return bits[idx]


def _get(m, ins, a: int) -> Barrier:
    """The mbarrier at ``.shared::cluster`` address ``a``: ``m``'s own, or another CTA's of its cluster."""
    m, a = cluster.owner(m, a, ins)
    b = _table(m).get(a)
    if b is None:
        raise Unsupported.at(ins, f"mbarrier at shared address {a:#x} used before mbarrier.init (its state is undefined)")
    return b


def h_mbarrier(m, f, ins, act):
    mods = ins.modifiers
    op = mods[0] if mods else ""
    ops = ins.operands
    if op == "init":
        idx, addr = _addrs(m, f, ins, ops[0], act)
        counts = _value(m, f, ins, ops[1], "u32", idx)
        for a, c in zip(addr.tolist(), counts.tolist()):
            if not 1 <= c <= (1 << 20) - 1:
                raise BadAddress.at(ins, f"mbarrier.init count {c} is outside [1, 2^20 - 1]")
            _table(m)[a] = Barrier(c, c)
        return
    if op == "inval":
        idx, addr = _addrs(m, f, ins, ops[0], act)
        for a in addr.tolist():
            _table(m).pop(a, None)
        return
    if op in ("expect_tx", "complete_tx"):
        idx, addr = _addrs(m, f, ins, ops[0], act)
        n = _value(m, f, ins, ops[1], "u32", idx)
        for a, v in zip(addr.tolist(), n.tolist()):
            b = _get(m, ins, a)
            b.tx += v if op == "expect_tx" else -v
            if op == "complete_tx":
                b.settle()
        return
    if op == "arrive":
        _arrive(m, f, ins, act, "expect_tx" in mods)
        return
    if op in ("try_wait", "test_wait"):
        _wait(m, f, ins, act, "parity" in mods)
        return
    raise Unsupported.at(ins, f"{ins.opcode} is not supported by the reference")


def _arrive(m, f, ins, act, expect: bool) -> None:
    ops = ins.operands
    dest = ops[0]
    idx, addr = _addrs(m, f, ins, ops[1], act)
    tx = _value(m, f, ins, ops[2], "u32", idx) if expect and len(ops) > 2 else None
    count = _value(m, f, ins, ops[2], "u32", idx) if not expect and len(ops) > 2 else None
    tokens = np.zeros(m.n, np.uint64)
    b = _one_barrier(m, ins, addr)
    if b is not None and tx is None and count is None and b.pending >= addr.size:
        # every thread arrives on one barrier and no arrival but the last can complete its phase:
        # the loop's state after its single settle() that may complete it
        tokens[idx] = b.phases
        b.pending -= addr.size
        b.settle()
        addr = addr[:0]
    for j, a in enumerate(addr.tolist()):  # thread order: arrivals are counted one by one
        b = _get(m, ins, a)
        tokens[idx[j]] = b.phases
        if tx is not None:
            b.tx += int(tx[j])
        b.pending -= 1 if count is None else int(count[j])
        if b.pending < 0:
            raise BadAddress.at(ins, f"more arrivals than mbarrier at {a:#x} expects in one phase (undefined)")
        b.settle()
    if not (isinstance(dest, Sym) and dest.name == "_"):
        m.write(f, dest, tokens, None, act, ins)


def _wait(m, f, ins, act, parity: bool) -> None:
    ops = ins.operands
    idx, addr = _addrs(m, f, ins, ops[1], act)
    want = _value(m, f, ins, ops[2], "u32" if parity else "u64", idx)
    done = np.zeros(m.n, np.uint64)
    one = _one_barrier(m, ins, addr)
    if one is not None and want.size and not (want != want[0]).any():  # one barrier, one phase: one answer
        w = int(want[0])
        # parity: the phase of that parity has completed when the current phase's parity differs;
        # a state token: the phase it was taken in has completed
        ok = (one.phases & 1) != (w & 1) if parity else one.phases > w
        done[idx] = ok
        if ok:
            one.observe()
        stuck = [] if ok else addr.tolist()
    else:
        for j, a in enumerate(addr.tolist()):
            b = _get(m, ins, a)
            w = int(want[j])
            done[idx[j]] = (b.phases & 1) != (w & 1) if parity else b.phases > w
            if done[idx[j]]:
                b.observe()
        stuck = [a for j, a in enumerate(addr.tolist()) if not done[idx[j]]]
    others = m.alive & ~act  # threads that could still arrive: neither here nor suspended at a named barrier
    if m.parked is not None:
        others &= ~m.parked
    if stuck and m.depth == 0 and (others.any() or m.mbar_waits or cluster.several(m)):
        # the phase needs what other threads still do (a producer warp's copies, a consumer's release):
        # these threads' wait returns false and they are suspended after it until the phase completes
        # (``wake``), so that the others run: in lockstep the spin around the wait would never yield
        _suspend(m, act, stuck[0], _get(m, ins, stuck[0]).phases)
        m.write(f, ops[0], done, None, act, ins)
        return
    if stuck and not others.any():
        b = _table(m)[stuck[0]]
        where = f"line {ins.loc.line if ins.loc else '?'}"
        if b.pending == 0 and b.tx + b.async_tx == 0:
            raise Undefined(f"{where}: the mbarrier at shared {stuck[0]:#x} had every arrival and its expected bytes "
                            "before the copies' complete_tx, which may land after the phase completes: a race")
        if parity and b.phases >= 1:
            # the phase it names is the one after the last completed: run before that completion
            # (nothing here orders it after), the wait returns at once and what follows races
            raise Undefined(f"{where}: try_wait.parity waits on the current phase of the mbarrier at shared "
                            f"{stuck[0]:#x}: it hangs, or returns at once if it runs before phase {b.phases - 1} completes")
        raise StepLimit.at(ins, f"hang: every live thread waits on the mbarrier at shared {stuck[0]:#x}, whose phase "
                                f"{b.phases} still needs {b.pending} arrival(s) and {b.tx} transaction byte(s) "
                                "that nothing left can supply")
    m.write(f, ops[0], done, None, act, ins)


def _suspend(m, act: np.ndarray, addr: int, phases: int) -> None:
    """Suspend the threads ``act`` after their failed wait on the mbarrier at ``addr`` (in phase
    ``phases``): ``control.run_function`` takes them off its masks (``m.parking``, as at a named
    barrier) and ``wake`` resumes them once that barrier completes a phase."""
    key = (MBARRIER_WAIT, addr)
    m.mbar_waits[key] = phases
    parked = m.parked if m.parked is not None else np.zeros(m.n, bool)
    m.parked = parked | act
    m.parking = (key, act.copy())


def wake(m, stalled: bool) -> None:
    """Resume the threads suspended at a wait whose mbarrier has completed a phase since; ``stalled``
    (nothing else can run): with none such, every thread waits on a phase nothing left can complete."""
    table = _table(m)
    bars = {k: ph for k, ph in m.mbar_waits.items() if k[0] == MBARRIER_WAIT}
    done = [k for k, ph in bars.items() if k[1] not in table or table[k[1]].phases != ph]
    if not done and stalled and cluster.pause(m):
        return  # another CTA of the cluster ran (its copies and remote arrives): look again
    if not done and stalled:
        if not bars:
            raise Undefined("elect.sync: lanes its membermask names never execute it (they ended or wait "
                            "elsewhere): undefined")
        (_, a), ph = next(iter(bars.items()))
        b = table[a]
        raise StepLimit(f"hang: every live thread waits on an mbarrier (the one at shared {a:#x}: phase {ph} still "
                        f"needs {b.pending} arrival(s) and {b.tx} transaction byte(s)) or at a barrier that "
                        "nothing left can complete")
    for k in done:
        del m.mbar_waits[k]
        release(m, k)


MBARRIER_WAIT = "mbarrier"  # the key of threads suspended at an mbarrier wait: (MBARRIER_WAIT, address)


def h_cp(m, f, ins, act):
    """cp.async.bulk global -> shared::cluster with mbarrier::complete_tx::bytes (the CTA its
    destination names); the bytes land at once, then complete_tx on the barrier.  ``.multicast::cluster``
    (operand ``ctaMask`` after the barrier) delivers to every CTA the mask names, at the same offsets
    (``cluster.destinations``); ``.L2::cache_hint``'s policy operand is a hint with no visible effect."""
    op = ins.opcode
    mods = ins.modifiers
    nops = 4 + ("multicast::cluster" in mods) + ("L2::cache_hint" in mods)
    if not op.startswith("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes") or \
            len(ins.operands) != nops:
        raise Unsupported.at(ins, f"{op} is not supported by the reference")
    dst, src, size, bar = ins.operands[:4]
    idx, daddr, _ = _address(m, f, ins, dst, act)
    masks = cluster.multicast(m, f, ins, ins.operands[4], idx) if "multicast::cluster" in mods else None
    _, saddr, _ = _address(m, f, ins, src, act)
    n = _value(m, f, ins, size, "u32", idx)
    _, baddr = _addrs(m, f, ins, bar, act)
    for j in range(idx.size):
        _get(m, ins, int(baddr[j]) & 0xFFFFFFFF)  # initialised (its own, or the CTA the address names)
        nb = int(n[j])
        if nb % 16 or int(daddr[j]) % 16 or int(saddr[j]) % 16:
            raise BadAddress.at(ins, "cp.async.bulk needs 16-byte aligned addresses and a size that is a multiple of 16")
        # each CTA the copy lands in (a ctaMask naming none: nothing lands, nothing completes)
        for mt, d, bo in cluster.destinations(m, int(daddr[j]) & 0xFFFFFFFF, int(baddr[j]) & 0xFFFFFFFF,
                                              None if masks is None else int(masks[j]), ins):
            b = _get(mt, ins, bo)
            _land_words(mt, ins, b, int(saddr[j]), d, nb)
            b.tx -= nb
            b.async_tx += nb
            b.settle()


def _land_words(m, ins, b: Barrier, src: int, dst: int, nbytes: int) -> None:
    """Copy ``nbytes`` (a multiple of 16) global -> shared as 4-byte words, all at once: the
    destination reads as undefined until a wait observes the barrier's phase (``b.landing``)."""
    words = np.arange(0, nbytes, 4, dtype=np.uint64)
    (dreg, _, doff), = m.mem.resolve("shared", U64(dst) + words, 4, ins, "store")  # one region
    for region, pos, off in m.mem.resolve("global", U64(src) + words, 4, ins, "load"):
        (bits, sh), = region.read(off, 4, 1)
        d = doff[pos] if pos.size != doff.size else doff  # the source's words, in order
        dreg.write(d, 4, [(bits, Shadow.undef(bits.size, 32))])
        b.landing.append((dreg, d, [(bits, sh)]))


def h_elect(m, f, ins, act):
    """elect.sync d|p, membermask: one leader per warp (the lowest lane of the mask).  ``.sync``: a
    thread waits until every live thread the mask names has executed this elect (PTX ISA, elect.sync),
    so lanes that arrive apart (a warp whose elected lane ran a producer loop the others skipped,
    CUTLASS's TMA warp) are suspended until the last comes (``m.parking``) and all get one answer; a
    lane that never comes leaves the wait undefined (``wake``)."""
    dest = ins.operands[0]
    if not isinstance(dest, Reg):
        raise Unsupported.at(ins, "elect.sync needs a destination")
    names = dest.name.split("|")
    mask_bits, _ = m.read(f, ins.operands[1], "u32", ins)
    lane = (np.arange(m.n) % 32).astype(np.uint64)
    named = ((mask_bits >> lane) & U64(1)).astype(bool)
    leader = np.zeros(m.n, bool)
    lane_of = np.full(m.n, 0, np.uint64)
    waits = np.zeros(m.n, bool)
    done: list = []
    for w in range(0, m.n, 32):
        here = act[w:w + 32]
        if not here.any():
            continue
        first = w + int(np.flatnonzero(here)[0])
        want = ((int(mask_bits[first]) >> np.arange(32)) & 1).astype(bool) & m.alive[w:w + 32]
        key = (ELECT_WAIT, w, id(ins))
        earlier = m.mbar_waits.get(key)
        came = here | (earlier[0] if earlier is not None else False)
        if m.depth == 0 and (want & ~came).any():
            # lanes of the mask still to come: wait for them here
            m.mbar_waits[key] = (came, (earlier[1] if earlier is not None else []) + [(f, here)])
            waits[w:w + 32] = here
            continue
        lanes = np.flatnonzero(want & came) if (want & came).any() else np.flatnonzero(here & named[w:w + 32])
        if lanes.size:
            leader[w + lanes[0]] = True
            lane_of[w:w + 32] = lanes[0]
        if earlier is not None:
            del m.mbar_waits[key]
            done.append((key, earlier[1]))
    for key, groups in done:  # the lanes that waited get the answer, then resume after the elect
        for g, here in groups:
            who = np.zeros(m.n, bool)
            w = key[1]
            who[w:w + 32] = here
            _elect_result(m, g, ins, names, lane_of, leader, who)
        release(m, key)
    run = act & ~waits
    _elect_result(m, f, ins, names, lane_of, leader, run)
    if waits.any():
        parked = m.parked if m.parked is not None else np.zeros(m.n, bool)
        m.parked = parked | waits
        m.parking = (next(k for k in m.mbar_waits if k[0] == ELECT_WAIT and waits[k[1]:k[1] + 32].any()), waits)


def _elect_result(m, f, ins, names: list[str], lane_of: np.ndarray, leader: np.ndarray, who: np.ndarray) -> None:
    if not who.any():
        return
    if names[0] != "_":
        m.write(f, Reg(names[0]), lane_of, None, who, ins)
    if len(names) > 1:
        m.write(f, Reg(names[1]), leader.astype(np.uint64), None, who, ins)


ELECT_WAIT = "elect"  # the key of lanes waiting at an elect.sync for the rest of its mask: (ELECT_WAIT, warp, instruction)


def h_setmaxnreg(m, f, ins, act):
    """setmaxnreg: a check only (the register budget is not modelled); the count must be a multiple
    of 8 in [24, 256] and every thread of the warpgroup must execute it (.sync.aligned)."""
    (cnt,) = ins.operands
    if not isinstance(cnt, Imm) or not 24 <= int(cnt.value) <= 256 or int(cnt.value) % 8:
        raise BadAddress.at(ins, f"setmaxnreg count {cnt} must be a multiple of 8 in [24, 256]")
    for w in range(0, m.n, 128):
        part = act[w:w + 128] & m.alive[w:w + 128]
        if part.any() and not part.all():
            raise BadAddress.at(ins, f"setmaxnreg executed by part of warpgroup {w // 128} (.aligned)")
