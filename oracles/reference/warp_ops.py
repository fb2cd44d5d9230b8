"""Warp-synchronous scalar instructions: shfl.sync, vote.sync, match.sync, redux.sync, activemask.

The interpreter runs every thread of a block in lockstep, so the threads of one warp that reach
a ``.sync`` instruction together are those of the running mask.  The ISA's conditions
(PTX ISA 9.7.9 "Parallel Synchronization and Communication"):

* "The behavior of <op>.sync is undefined if the executing thread is not in the membermask":
  the run's outcome is undefined (``Undefined``), as for a branch on an undefined value.
* Every non-exited thread of membermask must execute the instruction with the same membermask;
  one that does not reach it with the others (it runs on another path, or the masks differ)
  is not modelled: ``Unsupported`` (the reference would have to pair up executions the hardware
  may pair across paths).
* shfl: "Value of SourceA[lane] is unpredictable for inactive/predicated-off threads": a
  source lane that does not execute the instruction (guarded off, exited, or absent in a
  partial warp) gives UNDEF.
"""
from __future__ import annotations

import numpy as np

from fuzzptx.ptx.ir import Reg

import fuzzptx.oracles.reference.mem_ops as mem_ops
from .alu import _pred
from .errors import Undefined, Unsupported
from .ops import the_type
from .values import TYPES, U64, Shadow, combine_undef, mask, sign_extend

WARP = 32


def _lane_bits(m) -> tuple[np.ndarray, np.ndarray]:
    """(lane id, first thread of the warp) per thread."""
    lane = (m.tid % U64(WARP)).astype(np.int64)
    return lane, m.tid.astype(np.int64) - lane


class Members:
    """The membermask of each thread and what became of its lanes."""

    def __init__(self, mk: np.ndarray, eff: np.ndarray, partial: np.ndarray, gone: np.ndarray):
        self.mk = mk  # uint64 per thread: the membermask as given
        self.eff = eff  # the members that execute the instruction (non-exited, guard true)
        self.partial = partial  # bool per thread: some member reached it with its guard false
        self.gone = gone  # bool per thread: some member has exited or does not exist


def _members(m, f, ins, op, act) -> Members:
    """The membermask, checked against who executes the instruction (module doc)."""
    mk, sh = m.read(f, op, "b32", ins)
    mk = mk & mask(32)
    line = ins.loc.line if ins.loc else "?"
    if sh is not None and (sh.nonexact() & act).any():
        raise Undefined(f"line {line}: {ins.base}.sync with an undefined membermask")
    lane, first = _lane_bits(m)
    idx = np.flatnonzero(act)
    if ((mk[idx] >> lane[idx].astype(np.uint64)) & U64(1) == U64(0)).any():
        raise Undefined(f"line {line}: {ins.opcode} executed by a thread outside its membermask (undefined)")
    reach = getattr(m, "cur_reach", act)
    n = m.n
    act_word = _per_warp(m, act, np.ones(n, bool))
    # every (thread, lane) pair at once: lane j of thread i's warp named by i's membermask
    lanes = np.arange(WARP)
    named = ((mk[:, None] >> lanes.astype(np.uint64)) & U64(1)).astype(bool) & act[:, None]
    j = first[:, None] + lanes
    exists = j < n
    jc = np.where(exists, j, 0)
    live = exists & m.alive[jc]
    elsewhere = named & live & (~reach[jc] | (mk[jc] != mk[:, None]))
    if elsewhere.any():
        i, ln = map(int, np.argwhere(elsewhere)[0])
        base = int(first[i])
        raise Unsupported.at(ins, f"membermask {int(mk[i]):#010x} names lane {ln} of warp {base // WARP}, which does "
                                  "not execute this instruction together with lane "
                                  f"{i - base} with the same membermask (the reference runs paths in turn)")
    gone = (named & ~live).any(axis=1)  # exited or absent: the ISA waits for non-exited threads only
    partial = (named & live & ~act[jc]).any(axis=1)  # reached it with the guard false
    return Members(mk, mk & act_word, partial, gone)


# ------------------------------------------------------------------ shfl.sync


def shfl_source(mode: str, lane: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(source lane j, pval) per thread, the ISA's pseudocode for shfl.sync."""
    bval = (b & U64(0x1F)).astype(np.int64)
    cval = (c & U64(0x1F)).astype(np.int64)
    seg = ((c >> U64(8)) & U64(0x1F)).astype(np.int64)
    max_lane = (lane & seg) | (cval & ~seg)
    min_lane = lane & seg
    if mode == "up":
        j = lane - bval
        pval = j >= max_lane
    elif mode == "down":
        j = lane + bval
        pval = j <= max_lane
    elif mode == "bfly":
        j = lane ^ bval
        pval = j <= max_lane
    elif mode == "idx":
        j = min_lane | (bval & ~seg)
        pval = j <= max_lane
    else:
        raise ValueError(mode)
    j = np.where(pval, j, lane)
    return j, pval


def h_shfl(m, f, ins, act):
    mods = ins.modifiers
    if "sync" not in mods:
        raise Unsupported.at(ins, "shfl without .sync is not in PTX for sm_70 and later")
    mode = next((x for x in mods if x in ("up", "down", "bfly", "idx")), None)
    if mode is None or the_type(ins) != "b32":
        raise Unsupported.at(ins, "shfl.sync needs a mode and .b32")
    ops = ins.operands
    if len(ops) != 5:
        raise Unsupported.at(ins, f"shfl.sync with {len(ops)} operands")
    _members(m, f, ins, ops[4], act)
    a, sa = m.read(f, ops[1], "b32", ins)
    (b, sb), (c, sc) = m.read(f, ops[2], "b32", ins), m.read(f, ops[3], "b32", ins)
    lane, first = _lane_bits(m)
    j, pval = shfl_source(mode, lane, b, c)
    src = first + j
    ok = (src < m.n)
    srcc = np.where(ok, src, 0)
    ok &= act[srcc]
    n = m.n
    d = np.where(ok, a[srcc], U64(0)) & mask(32)
    bad = ~ok
    if sa is not None:
        bad |= sa.nonexact()[srcc]
    for s in (sb, sc):
        if s is not None:
            bad |= s.nonexact()
    sh = Shadow.undef(n, 32, bad) if bad.any() else None
    names = ops[0].name.split("|") if isinstance(ops[0], Reg) else []
    if len(names) > 1:
        m.write(f, Reg(names[0]), d, sh, act, ins)
        m.write(f, Reg(names[1]), pval.astype(np.uint64), combine_undef([sb, sc], n, 1), act, ins)
    else:
        m.write(f, ops[0], d, sh, act, ins)


# ------------------------------------------------------------------ vote.sync


def _per_warp(m, values: np.ndarray, who: np.ndarray) -> np.ndarray:
    """Per thread: the 32-bit word of ``values`` (bool) over lanes of its warp in ``who``."""
    lane, first = _lane_bits(m)
    n = m.n
    words = np.zeros((n + WARP - 1) // WARP, np.uint64)
    bits = np.where(values & who, U64(1) << lane.astype(np.uint64), U64(0))
    np.add.at(words, np.arange(n) // WARP, bits)
    return words[np.arange(n) // WARP]


def h_vote(m, f, ins, act):
    mods = ins.modifiers
    if "sync" not in mods:
        raise Unsupported.at(ins, "vote without .sync is not in PTX for sm_70 and later")
    mode = next((x for x in mods if x in ("all", "any", "uni", "ballot")), None)
    if mode is None:
        raise Unsupported.at(ins, "vote.sync needs .all, .any, .uni or .ballot")
    ops = ins.operands
    mem = _members(m, f, ins, ops[2], act)
    p, sp = _pred(m, f, ops[1], ins)
    n = m.n
    eff = mem.eff
    mine = _per_warp(m, p.astype(bool), act) & eff
    bad_src = sp.nonexact() & act if sp is not None else np.zeros(n, bool)
    bad = ((_per_warp(m, bad_src, act) & eff) != U64(0)) | mem.partial
    if mode == "ballot":  # a bit per non-exited member whose predicate is true
        res, w = mine, 32
    elif mode == "all":
        res, w = (mine == eff).astype(np.uint64), 1
    elif mode == "any":
        res, w = (mine != U64(0)).astype(np.uint64), 1
    else:
        res, w = ((mine == eff) | (mine == U64(0))).astype(np.uint64), 1
    m.write(f, ops[0], res, Shadow.undef(n, w, bad) if bad.any() else None, act, ins)


# ------------------------------------------------------------------ match.sync


def h_match(m, f, ins, act):
    mods = ins.modifiers
    mode = next((x for x in mods if x in ("any", "all")), None)
    t = the_type(ins)
    if mode is None or "sync" not in mods or t not in ("b32", "b64"):
        raise Unsupported.at(ins, "match needs .any/.all, .sync and .b32/.b64")
    ops = ins.operands
    mem = _members(m, f, ins, ops[2], act)
    mk = mem.mk
    a, sa = m.read(f, ops[1], t, ins)
    a = a & mask(TYPES[t][0])
    n = m.n
    lane, first = _lane_bits(m)
    same = np.zeros(n, np.uint64)
    bad_src = sa.nonexact() & act if sa is not None else np.zeros(n, bool)
    idx = np.flatnonzero(act)
    for i in idx:
        base = int(first[i])
        hi = min(base + WARP, n)
        eq = (a[base:hi] == a[i]) & act[base:hi]
        same[i] = sum(1 << k for k in np.flatnonzero(eq))
    same &= mem.eff
    # a member that exited or was guarded off: which value it "has" the ISA does not say
    bad = ((_per_warp(m, bad_src, act) & mk) != U64(0)) | mem.partial | mem.gone
    names = ops[0].name.split("|")
    if mode == "any":
        m.write(f, ops[0], same, Shadow.undef(n, 32, bad) if bad.any() else None, act, ins)
        return
    allsame = same == mk
    d = np.where(allsame, mk, U64(0))
    sh = Shadow.undef(n, 32, bad) if bad.any() else None
    m.write(f, Reg(names[0]), d, sh, act, ins)
    if len(names) > 1:
        m.write(f, Reg(names[1]), allsame.astype(np.uint64), Shadow.undef(n, 1, bad) if bad.any() else None, act, ins)


# ------------------------------------------------------------------ redux.sync


def h_redux(m, f, ins, act):
    mods = ins.modifiers
    op = next((x for x in mods if x in ("add", "min", "max", "and", "or", "xor")), None)
    t = the_type(ins)
    if op is None or "sync" not in mods:
        raise Unsupported.at(ins, "redux needs .sync and an operation")
    if t not in ("u32", "s32", "b32"):
        raise Unsupported.at(ins, f"redux.sync.{op}.{t} (floating-point redux is sm_100a)")
    ops = ins.operands
    mem = _members(m, f, ins, ops[2], act)
    mk = mem.eff
    a, sa = m.read(f, ops[1], t, ins)
    n = m.n
    lane, first = _lane_bits(m)
    vals = sign_extend(a, 32) if t == "s32" else (a & mask(32)).astype(np.int64)
    res = np.zeros(n, np.uint64)
    done: dict[tuple[int, int], int] = {}
    for i in np.flatnonzero(act):
        key = (int(first[i]), int(mk[i]))
        r = done.get(key)
        if r is None:
            base, bits = key
            who = [base + k for k in range(WARP) if bits >> k & 1 and base + k < n and act[base + k]]
            r = done[key] = _reduce(op, vals[who])
        res[i] = r
    bad_src = sa.nonexact() & act if sa is not None else np.zeros(n, bool)
    bad = ((_per_warp(m, bad_src, act) & mk) != U64(0)) | mem.partial
    m.write(f, ops[0], res, Shadow.undef(n, 32, bad) if bad.any() else None, act, ins)


def _reduce(op: str, v: np.ndarray) -> int:
    if op == "add":
        return int(v.sum()) & 0xFFFFFFFF
    if op == "min":
        return int(v.min()) & 0xFFFFFFFF
    if op == "max":
        return int(v.max()) & 0xFFFFFFFF
    r = 0xFFFFFFFF if op == "and" else 0
    for x in v:
        x = int(x) & 0xFFFFFFFF
        r = (r & x) if op == "and" else (r | x) if op == "or" else (r ^ x)
    return r


def h_bar(m, f, ins, act):
    """bar.warp.sync membermask: the threads of the mask wait for each other ("The behavior of
    bar.warp.sync is undefined if the executing thread is not in the membermask"); in lockstep the
    wait itself changes nothing.  Other bar forms: ``mem_ops.h_bar``."""
    if "warp" not in ins.modifiers:
        return mem_ops.h_bar(m, f, ins, act)
    if len(ins.operands) != 1:
        raise Unsupported.at(ins, "bar.warp.sync takes one membermask")
    _members(m, f, ins, ins.operands[0], act)


def h_activemask(m, f, ins, act):
    """activemask.b32: the ISA does not guarantee which threads run together (convergence is not
    promised), so the value is UNDEF; a branch on it makes the run undefined."""
    m.write(f, ins.operands[0], np.zeros(m.n, np.uint64), Shadow.undef(m.n, 32), act, ins)


