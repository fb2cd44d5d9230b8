"""ld / st / barriers / fences: address resolution and per-thread parameter variables."""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from fuzzptx.ptx.ir import Addr, Imm, Instr, Reg, Sym, Vec

from .errors import BadAddress, StepLimit, Undefined, Unsupported
from .ops import _types
from .memory import _VIEW, _positions as _positions_of
from .values import TYPES, U64, Shadow, lanes_of, mask

SPACES = {"global": "global", "shared": "shared", "shared::cta": "shared", "param": "param",
          "param::entry": "param", "param::func": "param", "const": "global", "local": "local",
          "shared::cluster": "shared"}
_SHIFT = {1: 0, 2: 1, 4: 2, 8: 3}


def _space(ins) -> str:
    return _space_of(ins.opcode)


@functools.lru_cache(maxsize=4096)
def _space_of(opcode: str) -> str:
    for x in opcode.split(".")[1:]:
        if x in SPACES:
            return SPACES[x]
    return "generic"


def _shape(ins):
    got = _shape_of(ins.opcode)
    if isinstance(got, str):
        raise Unsupported.at(ins, got)
    return got


@functools.lru_cache(maxsize=4096)
def _shape_of(opcode: str):
    """(element type, bytes, count) of an ld/st opcode, or the reason it is not supported."""
    ts = _types(opcode)
    t = ts[-1] if ts else None
    if t is None:
        return "no type"
    count = 1
    for x in opcode.split(".")[1:]:
        if x in ("v2", "v4", "v8"):
            count = int(x[1:])
    w = TYPES[t][0]
    if w == 128:
        t, w, count = "b64", 64, count * 2
    if w < 8:
        return f"{opcode.split('.', 1)[0]} of .{t}"
    return t, w // 8, count


def _address(m, f, ins, a: Addr, act: np.ndarray):
    """(addresses of the active threads, per-thread param variable name or None)."""
    full = act is m.all
    idx = m.active_idx(act)
    if isinstance(a.base, Sym):
        if a.base.name in f.info.pvars:
            return idx, None, a.base.name
        space, base = m.symbol(a.base.name, ins)
        addr = np.full(idx.size, (base + a.offset) & ((1 << 64) - 1), np.uint64)
        return idx, addr, None
    if a.base is None:
        return idx, np.full(idx.size, a.offset & ((1 << 64) - 1), np.uint64), None
    bits, sh = m.read(f, a.base, "u64", ins)
    if sh is not None and (sh.kind.any() if full else sh.kind[idx].any()):  # EXACT is 0
        raise Undefined(f"line {ins.loc.line if ins.loc else '?'}: {ins.base} through an undefined address")
    w = f.widths.get(a.base.name, 64)
    addr = bits if full else bits[idx]  # never written in place below
    if w < 64:
        addr = addr & mask(w)
    off = a.offset & ((1 << 64) - 1)
    return idx, (addr + U64(off) if off else addr), None


def _take(sh: Shadow | None, rows: np.ndarray) -> Shadow | None:
    if sh is None:
        return None
    if rows.size == sh.kind.shape[0] and rows[-1] == rows.size - 1:
        return sh  # every thread, in order
    out = Shadow(sh.lane_bits, sh.kind[rows], sh.lo[rows], sh.hi[rows], sh.flags[rows])
    return None if out.is_trivial() else out


def _put(n: int, rows: np.ndarray, sh: Shadow | None, full: Shadow | None, width: int) -> Shadow | None:
    """Place the shadow of some rows into a full-size shadow (others exact)."""
    if sh is None:
        return full
    if full is None:
        full = Shadow(sh.lane_bits, np.zeros((n, sh.lanes), np.uint8), np.zeros((n, sh.lanes)),
                      np.zeros((n, sh.lanes)), np.zeros((n, sh.lanes), np.uint8))
    if full.lane_bits != sh.lane_bits:
        lb = min(full.lane_bits, sh.lane_bits)
        full = lanes_of(full, n, width, lb).copy()
        sh = lanes_of(sh, rows.size, width, lb)
    full.kind[rows] = sh.kind
    full.lo[rows] = sh.lo
    full.hi[rows] = sh.hi
    full.flags[rows] = sh.flags
    return full


def h_ld(m, f, ins, act):
    t, eb, count = _shape(ins)
    d = ins.operands[0]
    dests = list(d.items) if isinstance(d, Vec) else [d]
    if len(dests) != count:
        raise Unsupported.at(ins, f"{len(dests)} destinations for a {count}-element load")
    a = ins.operands[1]
    if not isinstance(a, Addr):
        raise Unsupported.at(ins, "load source is not an address")
    idx, addr, pvar = _address(m, f, ins, a, act)
    n = m.n
    outs = [np.zeros(n, np.uint64) for _ in range(count)] if pvar is None and idx.size != n else [None] * count
    shs: list[Shadow | None] = [None] * count
    if pvar is not None:
        data = f.pdata[pvar]
        off = a.offset
        if off < 0 or off + eb * count > data.shape[1] or off % eb:
            raise BadAddress.at(ins, f"param {pvar!r} access at offset {off} of {eb * count} bytes is out of bounds")
        view = data.view(_VIEW[eb])
        und = f.pundef[pvar]
        for j in range(count):
            outs[j] = view[:, off // eb + j].astype(np.uint64)
            if und.any():
                shs[j] = Shadow.undef(n, eb * 8, und)
    elif idx.size:
        space = _space(ins)
        outs, shs = _load(m, idx, m.mem.resolve(space, addr, eb * count, ins, "load", idx), eb, count, outs)
    _write_dests(m, f, ins, dests, outs, shs, act, t)


def _load(m, idx: np.ndarray, groups, eb: int, count: int, outs: list) -> tuple[list, list]:
    """The loaded elements (full-width arrays, shadows) from resolved groups (``outs``: zeros or None)."""
    n = m.n
    shs: list[Shadow | None] = [None] * count
    if len(groups) == 1 and idx.size == n:  # every thread, in order: the loaded arrays as they are
        region, pos, off = groups[0]
        for j, (bits, sh) in enumerate(region.read(off, eb, count)):
            outs[j] = bits
            shs[j] = sh
        return outs, shs
    if outs[0] is None:
        outs = [np.zeros(n, np.uint64) for _ in range(count)]
    for region, pos, off in groups:
        vals = region.read(off, eb, count)
        rows = idx if pos.size == idx.size else idx[pos]
        for j, (bits, sh) in enumerate(vals):
            outs[j][rows] = bits
            shs[j] = _put(n, rows, sh, shs[j], eb * 8)
    return outs, shs


def _write_dests(m, f, ins, dests, outs, shs, act, t: str) -> None:
    for j, dst in enumerate(dests):
        if isinstance(dst, Sym) and dst.name == "_":
            continue
        m.write(f, dst, outs[j], shs[j], act, ins, ext=t)


def h_st(m, f, ins, act):
    t, eb, count = _shape(ins)
    a, src = ins.operands[0], ins.operands[1]
    srcs = list(src.items) if isinstance(src, Vec) else [src]
    if len(srcs) != count:
        raise Unsupported.at(ins, f"{len(srcs)} sources for a {count}-element store")
    vals = [m.read(f, s, t if count == 1 or TYPES[t][0] // 8 == eb else f"b{eb * 8}", ins) for s in srcs]
    # (no masking to eb bytes: every store below converts to the eb-byte unsigned type)
    idx, addr, pvar = _address(m, f, ins, a, act)
    if pvar is not None:
        data = f.pdata[pvar]
        off = a.offset
        if off < 0 or off + eb * count > data.shape[1] or off % eb:
            raise BadAddress.at(ins, f"param {pvar!r} access at offset {off} of {eb * count} bytes is out of bounds")
        view = data.view(_VIEW[eb])
        und = np.zeros(m.n, bool)
        for j, (bits, sh) in enumerate(vals):
            view[idx, off // eb + j] = bits[idx].astype(_VIEW[eb])
            if sh is not None:
                und |= sh.nonexact()
        # a store defines the variable for the storing threads (byte-exact tracking is not kept)
        f.pundef[pvar] = np.where(act, und, f.pundef[pvar])
        return
    if not idx.size:
        return
    space = _space(ins)
    _store(m, ins, idx, m.mem.resolve(space, addr, eb * count, ins, "store", idx), eb, vals)


def _store(m, ins, idx: np.ndarray, groups, eb: int, vals: list) -> None:
    """Write (bits, shadow) elements of full-width arrays to resolved groups, in order."""
    for region, pos, off in groups:
        if not region.writable:
            raise BadAddress.at(ins, f"store to read-only {region.space} memory ({region.name})")
        if pos.size == m.n:  # every thread, in order
            region.write(off, eb, vals, writers=m.tid32 if region.dirty is not None else None)
            _undefine_races(m, ins, region, off, eb, [b for b, _ in vals])
            continue
        rows = idx if pos.size == idx.size else idx[pos]
        region.write(off, eb, [(b[rows], _take(sh, rows)) for b, sh in vals],
                     writers=m.tid32[rows] if region.dirty is not None else None)
        _undefine_races(m, ins, region, off, eb, [b[rows] for b, _ in vals])


def _undefine_races(m, ins, region, off: np.ndarray, eb: int, bits: list) -> None:
    """Threads of one store writing different values to one element: the hardware keeps one of
    them, which one the PTX memory model does not say; the element is then undefined (it was the
    value of the last thread in thread order, and the differ reported the H100's choice as a
    mismatch: found when a shrinker made every thread store to one address)."""
    if off.size < 2:
        return
    slot = off >> _SHIFT[eb]
    if (slot[1:] > slot[:-1]).all():  # the usual store: each thread its own, ascending
        return
    order = np.argsort(slot, kind="stable")
    same = slot[order][1:] == slot[order][:-1]
    if not same.any():
        return
    for j, b in enumerate(bits):
        v = b[order] & mask(8 * eb)
        clash = same & (v[1:] != v[:-1])
        if clash.any():
            o = np.unique(off[order][1:][clash]) + j * eb
            region.pending.append((o, eb, Shadow.undef(o.size, 8 * eb)))
            m.note(f"line {ins.loc.line if ins.loc else '?'}: threads store different values to one "
                   f"{region.space} address; the element is undefined")


def h_bar(m, f, ins, act):
    """bar.sync / bar.arrive / barrier.sync a{, b}: named barrier ``a`` completes once ``b`` threads
    (without ``b``: every live thread of the CTA, at this instruction for ``bar``/``.aligned``, at any
    for ``barrier.sync``) have arrived.  Threads run in lockstep here, so the
    threads at a ``bar.sync`` arrive together, joined by earlier ``bar.arrive`` threads of the same
    barrier (a producer warpgroup signalling consumers).  ``b`` not a multiple of 32, or more threads
    than ``b``, is undefined; a barrier short of ``b`` while every live thread is at it or waits at a
    barrier is a hang; short while others run elsewhere, the threads at the ``bar.sync`` are suspended
    (``m.parking``: the runner takes them off its masks) until later arrivals fill the count, then
    resume after it (consumers that reach their ``bar.sync`` before the producers' ``bar.arrive``)."""
    ops = ins.operands
    n = int(act.sum())
    first = int(np.flatnonzero(act)[0]) if n else 0
    if len(ops) < 2:
        if "arrive" in ins.modifiers:
            raise Unsupported.at(ins, "bar.arrive needs a thread count")
        if np.array_equal(act, m.alive):
            return
        if ins.base == "bar" or "aligned" in ins.modifiers:  # .aligned: every thread at this instruction
            raise Unsupported.at(ins, f"barrier reached by {n} of {int(m.alive.sum())} live threads "
                                      "(divergent barriers are not modelled)")
        # barrier.sync without .aligned: the CTA's live threads may arrive at different instructions
        # (Triton's warp-specialised partitions meet at ``barrier.sync 1`` each in its own code)
        cnt = int(m.alive.sum())
    else:
        cnt = int(m.read(f, ops[1], "u32", ins)[0][first])
    bid = int(m.read(f, ops[0], "u32", ins)[0][first])
    where = f"line {ins.loc.line if ins.loc else '?'}"
    if cnt == 0 or cnt % 32:
        raise Undefined(f"{where}: barrier {bid} with thread count {cnt}, not a positive multiple of 32")
    table = getattr(m, "named_barriers", None)
    if table is None:
        table = m.named_barriers = {}
    prev_cnt, arrived, waiting = table.get(bid, (cnt, 0, False))
    if prev_cnt != cnt:
        raise Undefined(f"{where}: barrier {bid} used with counts {prev_cnt} and {cnt} in one phase")
    total = arrived + n
    if total > cnt:
        raise Undefined(f"{where}: {total} threads arrive at barrier {bid}, whose count is {cnt}")
    if total == cnt:
        table.pop(bid, None)
        release(m, bid)
        return
    if "arrive" in ins.modifiers:
        table[bid] = (cnt, total, waiting)
        return
    parked = m.parked if m.parked is not None else np.zeros(m.n, bool)
    if not (m.alive & ~act & ~parked).any() and not m.mbar_waits:  # (threads at an mbarrier wait may still come)
        raise StepLimit.at(ins, f"hang: barrier {bid} waits for {cnt} threads; {total} can ever arrive")
    if m.depth:
        raise Unsupported.at(ins, f"barrier {bid} (count {cnt}) reached by {n} threads inside a called function while "
                                  "other live threads run elsewhere (suspending them there is not modelled)")
    # short of the count while other threads run elsewhere: these threads wait (control.run_function
    # suspends them here and resumes them after the barrier once later arrivals fill the count)
    table[bid] = (cnt, total, True)
    who = act.copy()
    m.parked = parked | who
    m.parking = (bid, who)


def release(m, bid: int) -> None:
    """Barrier ``bid`` completed: the threads suspended at it resume (``control._resume``)."""
    groups = m.parked_at.pop(bid, ())
    for g in groups:
        m.parked &= ~g[3]
        m.resume.append(g)
    if m.parked is not None and not m.parked.any():
        m.parked = None


def h_fence(m, f, ins, act):
    """Memory fences are no-ops in a sequential model, except fence.proxy.async (generic -> async proxy)."""
    if ins.base == "fence" and "proxy" in ins.modifiers and "async" in ins.modifiers:
        sh = m.mem.shared
        if sh is not None and sh.dirty is not None:
            d = sh.dirty
            dirty = d >= 0
            if dirty.any():
                writers = np.clip(d, 0, m.n - 1)
                d[dirty & act[writers]] = -1


def h_griddepcontrol(m, f, ins, act):
    """``griddepcontrol.wait`` / ``.launch_dependents`` (programmatic dependent launch): the
    reference runs one grid alone, launched plainly, so there is no prerequisite grid to wait for
    and no dependent grid to release; both are no-ops (PTX ISA, griddepcontrol)."""
    if ins.operands or tuple(ins.modifiers) not in (("wait",), ("launch_dependents",)):
        raise Unsupported.at(ins, "griddepcontrol takes .wait or .launch_dependents and no operands")


def h_nop(m, f, ins, act):
    return None


# ------------------------------------------------------------------ runs of plain ld / st

@dataclass(frozen=True)
class Access:
    """One unguarded scalar ld/st of global or shared memory at ``[base register + offset]``."""
    ins: Instr
    load: bool
    space: str
    t: str
    eb: int
    reg: Reg | Imm  # loaded into (a register) or stored (a register or an immediate)
    base: str
    offset: int


def access_of(ins: Instr) -> Access | None:
    """The instruction as an ``Access`` if a ``MemRun`` may hold it, else None."""
    if ins.guard is not None or ins.base not in ("ld", "st") or len(ins.operands) != 2:
        return None
    shape, space = _shape_of(ins.opcode), _space_of(ins.opcode)
    if isinstance(shape, str) or shape[2] != 1 or space not in ("global", "shared"):
        return None
    load = ins.base == "ld"
    reg, a = ins.operands if load else ins.operands[::-1]
    if type(a) is not Addr or type(a.base) is not Reg or "|" in a.base.name:
        return None
    if not (type(reg) is Reg and "|" not in reg.name) and not (not load and type(reg) is Imm):
        return None
    return Access(ins, load, space, shape[0], shape[1], reg, a.base.name, a.offset)


class MemRun:
    """Consecutive ``Access``es of one block in which no load writes a later access's base
    register: the copy loops, fragment loads and result stores that are a third of a fuzz
    program's instructions.  Their addresses are formed and checked in one batch per space;
    each access then reads or writes memory and registers in program order, as alone."""
    __slots__ = ("instrs", "accesses", "bases")
    base = "ld"

    def __init__(self, accesses: tuple[Access, ...]) -> None:
        self.accesses = accesses
        self.instrs = tuple(a.ins for a in accesses)
        self.bases = tuple(dict.fromkeys(a.base for a in accesses))


def mem_runs(accesses: list[Access]) -> list:
    """Split consecutive accesses where a load has written a base register that follows."""
    out: list = []
    run: list[Access] = []
    written: set[str] = set()
    for a in accesses:
        if a.base in written:
            out.append(run[0].ins if len(run) == 1 else MemRun(tuple(run)))
            run, written = [], set()
        run.append(a)
        if a.load:
            written.add(a.reg.name)
    if run:
        out.append(run[0].ins if len(run) == 1 else MemRun(tuple(run)))
    return out


def exec_mem_run(m, f, run: MemRun, act: np.ndarray) -> bool:
    """Run ``run`` as its instructions would run one by one; False (nothing done) where an
    address is undefined, out of bounds, misaligned, read-only or spans buffers: the caller
    then runs the instructions alone, and the failing one says what is wrong.

    Stores to a region that no load of the run reads, all of one size, are gathered and
    written together at the end (``_store_together``): nothing in the run can see them
    earlier, and a register's array is replaced, never changed in place, so each store keeps
    the value its source held at its place in the run."""
    plans = _plan(m, f, run, act)
    if plans is None:
        return False
    m.cur_act = act
    idx, n = m.active_idx(act), m.n
    later = _deferrable(run, plans)
    deferred: dict[int, list] = {}
    for a, groups in zip(run.accesses, plans):
        if a.load:
            outs, shs = _load(m, idx, groups, a.eb, 1, [None] if idx.size == n else [np.zeros(n, np.uint64)])
            _write_dests(m, f, a.ins, [a.reg], outs, shs, act, a.t)
        elif id(groups[0][0]) in later:
            deferred.setdefault(id(groups[0][0]), []).append((a, groups, m.read(f, a.reg, a.t, a.ins)))
        else:
            _store(m, a.ins, idx, groups, a.eb, [m.read(f, a.reg, a.t, a.ins)])
    for stores in deferred.values():
        _store_together(m, idx, stores)
    return True


def _deferrable(run: MemRun, plans: list) -> set[int]:
    """Regions (ids) the run stores to, never loads from, with one element size."""
    loaded = {id(g[0][0]) for a, g in zip(run.accesses, plans) if a.load}
    sizes: dict[int, set[int]] = {}
    for a, g in zip(run.accesses, plans):
        if not a.load and id(g[0][0]) not in loaded:
            sizes.setdefault(id(g[0][0]), set()).add(a.eb)
    return {r for r, s in sizes.items() if len(s) == 1}


def _store_together(m, idx: np.ndarray, stores: list) -> None:
    """The gathered stores to one region as one write when no two elements share a byte (else
    one by one, in order).  Value sets and undefined elements go as one shadow record per lane
    shape, each the concatenation of the records the stores alone would leave: every byte is
    in one record, so the records' order does not matter."""
    offs = [g[0][2] for _, g, _ in stores]
    o = np.concatenate(offs) if len(offs) > 1 else offs[0]
    region, eb = stores[0][1][0][0], stores[0][0].eb
    if np.bincount(o >> _SHIFT[eb]).max() > 1:  # aligned elements: one count per element slot
        for a, groups, val in stores:
            _store(m, a.ins, idx, groups, a.eb, [val])
        return
    full = idx.size == m.n
    bits = np.concatenate([b if full else b[idx] for _, _, (b, _) in stores])
    writers = None
    if region.dirty is not None:
        writers = np.tile(m.tid32 if full else m.tid32[idx], len(stores))
    region.write(o, eb, [(bits, None)], writers=writers)
    records: dict[tuple[int, int], tuple[list, list]] = {}
    for off, (_, _, (_, sh)) in zip(offs, stores):
        if sh is not None and not full:
            sh = _take(sh, idx)
        if sh is None:
            continue
        rec = lanes_of(sh, off.size, eb * 8, max(8, min(sh.lane_bits, eb * 8)))
        group = records.setdefault((rec.lane_bits, rec.lanes), ([], []))
        group[0].append(off)
        group[1].append(rec)
    for (lane_bits, _), (where, recs) in records.items():
        region.add_record(np.concatenate(where), eb, Shadow(lane_bits, *(np.concatenate([getattr(r, a) for r in recs])
                                                                        for a in ("kind", "lo", "hi", "flags"))))


def _plan(m, f, run: MemRun, act: np.ndarray) -> list | None:
    """Each access's resolved group ``[(region, positions, offsets)]``, or None (see exec_mem_run)."""
    idx = m.active_idx(act)
    if not idx.size:
        return None
    full = act is m.all
    base_addr: dict[str, np.ndarray] = {}
    for name in run.bases:  # what _address reads, before any access of the run has run
        bits = f.regs.get(name)
        if bits is None or name in f.info.wg_regs:
            return None
        sh = f.shadows.get(name)
        if sh is not None and (sh.kind.any() if full else sh.kind[idx].any()):
            return None
        w = f.widths.get(name, 64)
        addr = bits if full else bits[idx]
        base_addr[name] = addr & mask(w) if w < 64 else addr
    by_key: dict[tuple[str, int, str], list[int]] = {}  # one resolve per base register, space and size
    for i, a in enumerate(run.accesses):
        by_key.setdefault((a.space, a.eb, a.base), []).append(i)
    plans: list = [None] * len(run.accesses)
    pos = _positions_of(idx.size)
    for (space, eb, base), members in by_key.items():
        accs = [run.accesses[i] for i in members]
        offs = np.array([a.offset & _MASK64 for a in accs], np.uint64)
        addrs = base_addr[base][None, :] + offs[:, None]
        try:
            groups = m.mem.resolve(space, addrs.ravel(), eb, accs[0].ins, "load")
        except BadAddress:
            return None
        if len(groups) != 1:
            return None
        region, _, off = groups[0]
        if not region.writable and not all(a.load for a in accs):
            return None
        rows = off.reshape(len(accs), idx.size)
        for r, i in enumerate(members):
            plans[i] = [(region, pos, rows[r])]
    return plans


_MASK64 = (1 << 64) - 1
