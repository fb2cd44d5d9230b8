"""Spec layer, mbarrier phases (issue 27): what a producer announces on a barrier, and which phase a
consumer waits for.

Rules (PTX ISA 9.1 text they enforce, quoted in each function):

- ``spec.mbarrier.arrive-no-expect-tx``: a thread arrives on a barrier and issues copies that
  complete transaction bytes on it, with no expect-tx for them (``fill_analysis``).
- ``spec.mbarrier.expect-tx-short``: the bytes a thread's expect-tx announces fall short of the
  bytes its copies bring (a bulk copy's size operand; a tensor copy's whole box, out-of-bounds
  elements included, from the program's ``TENSORMAP:`` header) (``fill_analysis``).
- ``spec.mbarrier.read-before-wait``: a read of bytes a bulk or tensor copy fills, with no wait on
  the copy's barrier since (``early_read_analysis``).
- ``spec.mbarrier.wrong-parity``: a parity wait for the phase the thread already saw complete,
  although it arrived or issued copies on the barrier since: the wait returns at once and the
  reads after it race the copies (``parity_analysis``).

Barriers are byte ranges (``spec_rules._barrier_range``); these rules look only at barriers whose
address is one known 8-byte slot, and never guess about the rest.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from fuzzptx.ptx.ir import Addr, Imm, Instr, Reg, TensorAddr

from .context import FnCtx, Site, sites
from .findings import Sink
from .regs import defs_uses
from .spec_rules import (_PROXY_CAP, _Recording, _barrier_of, _barrier_range, _bounded, _line, _meets, _run,
                         _shared_read, copy_destination, tensor_map_param)
from .uniformity import CTA, block_dims, single_defs

_WAITS = ("try_wait", "test_wait")
_ARRIVES = frozenset({"arrive", "arrive_drop", "expect_tx"})  # a thread's part in the current phase


def _tid_max(ctx: FnCtx) -> int | None:
    dims = block_dims(ctx.fn, ctx.module.preamble)
    return dims[0] - 1 if dims and dims[1] == dims[2] == 1 else None


def _slot(rng) -> tuple | None:
    """A barrier range that is one known 8-byte mbarrier (else None: these rules say nothing)."""
    if rng[0] is None or rng[2] is None or rng[2] - rng[1] != 8:
        return None
    return rng


def _is_copy(ins: Instr) -> bool:
    """A copy into shared memory that completes transaction bytes on an mbarrier (bulk or tensor)."""
    op = ins.opcode
    return ins.base == "cp" and "complete_tx" in op and ".shared" in op.split(".global")[0]


def _copy_barrier(ins: Instr):
    return next((o for o in reversed(ins.operands) if isinstance(o, Addr)), None)


def copy_bytes(ctx: FnCtx, ins: Instr, defs) -> int | None:
    """Transaction bytes one copy completes on its barrier: a bulk copy's size operand, a tensor
    copy's box (``TensorMap.box_bytes``: every element of the box, out-of-bounds ones included);
    None where unknown (a register size, a map the header does not describe, im2col, multicast)."""
    op = ins.opcode
    if "multicast" in op:
        return None  # the bytes land in (and complete on) every CTA of the mask
    if ".tensor" in op:
        if "im2col" in op or len(ins.operands) < 2 or not isinstance(ins.operands[1], TensorAddr):
            return None  # (an im2col box is not the map's box)
        name = tensor_map_param(ins.operands[1].base, defs)
        tm = ctx.tensormaps.get(name) if name is not None else None
        return None if tm is None else tm.box_bytes
    size = ins.operands[2] if len(ins.operands) > 2 else None
    return size.value if isinstance(size, Imm) and isinstance(size.value, int) else None


def _expect_bytes(ins: Instr) -> int | None:
    imm = next((o for o in reversed(ins.operands) if isinstance(o, Imm)), None)
    return imm.value if imm is not None and isinstance(imm.value, int) else None


# ------------------------------------------------------------------ what a fill announces


def _exclusive(a, b, ctx: FnCtx) -> bool:
    """Whether no thread runs both of two guards, and no other thread runs the second while one
    runs the first: the same CTA-uniform predicate, opposite senses (a thread-varying predicate's
    other sense is another thread's, which may still announce the bytes)."""
    return (a is not None and b is not None and a.reg == b.reg and a.negated != b.negated
            and ctx.uni.level(a.reg) >= CTA)


def _together(a, b) -> bool:
    """Whether the threads that run guard ``a`` also run guard ``b`` (same guard, or ``b`` none)."""
    return b is None or a == b


def fill_analysis(ctx: FnCtx, sink: Sink) -> None:
    """``spec.mbarrier.arrive-no-expect-tx`` and ``spec.mbarrier.expect-tx-short``, per fill: the
    arrive(s), expect-tx and copies on one barrier in one basic block (a producer's fill is
    straight-line code; across blocks nothing is claimed).

    PTX ISA 9.7.13.15.5: "The tx-count of an mbarrier object must be set to the total amount of
    asynchronous memory operations, in units as specified by the asynchronous operations, to be
    tracked by the current phase"; only the expect-tx operation raises it (9.7.13.15.5.1), and each
    copy with ``.mbarrier::complete_tx::bytes`` performs a complete-tx of its bytes (9.7.13.15.5.2).
    9.7.13.15.6: "An mbarrier object completes the current phase when all of the following
    conditions are met: the count of the pending arrivals has reached zero; the tx-count has
    reached zero."  An arrive with no expect-tx for the bytes its own thread's copies bring can
    complete the phase before those bytes land (the tx-count is still zero); an expect-tx short of
    them lets the first copies bring the tx-count to zero with the rest in flight.  Either way a
    thread that waits on the phase may read bytes not yet written (9.7.9.25.1.2: the completed
    phase is what makes the copies' results visible).

    Only a thread's own copies are weighed against its arrive (a copy under the other sense of
    a thread-varying guard is another thread's); an expect-tx counts as announcing them unless no
    thread can run it in the same phase (the other sense of a CTA-uniform predicate).  Sums are
    compared only when every copy and expect-tx of the fill has a known size and the same guard
    (the same threads run each, so per-instruction sums scale alike)."""
    defs = single_defs(ctx.fn)
    tid_max = _tid_max(ctx)
    for b in ctx.g.order:
        fills: dict[tuple, list] = {}
        for _site, ins in sites(ctx, b):
            if ins.base == "mbarrier" and _ARRIVES & set(ins.modifiers):
                kind = "expect" if "expect_tx" in ins.modifiers else "arrive"
                bar = _slot(_barrier_range(ins, _barrier_of(ins), defs, tid_max))
            elif _is_copy(ins):
                kind, bar = "copy", _slot(_barrier_range(ins, _copy_barrier(ins), defs, tid_max))
            elif ins.base == "mbarrier" and any(w in ins.modifiers for w in _WAITS):
                bar = _barrier_range(ins, _barrier_of(ins), defs, tid_max)
                for key in [k for k in fills if _meets(k, bar)]:
                    _judge_fill(ctx, fills.pop(key), defs, sink)
                continue
            else:
                continue
            if bar is not None:
                fills.setdefault(bar, []).append((kind, ins))
        for events in fills.values():
            _judge_fill(ctx, events, defs, sink)


def _judge_fill(ctx: FnCtx, events: list, defs, sink: Sink) -> None:
    copies = [i for k, i in events if k == "copy"]
    if not copies:
        return
    expects = [i for k, i in events if k == "expect"]
    for kind, ins in events:
        if kind != "arrive":
            continue
        own = [c for c in copies if _together(ins.guard, c.guard)]
        cover = [e for e in expects if not _exclusive(ins.guard, e.guard, ctx)]
        if own and not cover:
            sink.add("spec.mbarrier.arrive-no-expect-tx", "error", _line(ins),
                     f"this arrive has no expect-tx for the bytes of the copy at line {_line(own[0])} that completes "
                     "on the same mbarrier: the phase can complete on the arrival alone, before the bytes land, and "
                     "a thread waiting on it may read them unwritten (PTX ISA 9.7.13.15.6: a phase completes when "
                     "the pending arrivals and the tx-count reach zero)")
    guards = {i.guard for k, i in events if k != "arrive"}
    if not expects or len(guards) != 1:
        return
    got = [copy_bytes(ctx, c, defs) for c in copies]
    want = [_expect_bytes(e) for e in expects]
    if None in got or None in want or sum(want) >= sum(got):
        return
    sink.add("spec.mbarrier.expect-tx-short", "error", _line(expects[0]),
             f"expect-tx announces {sum(want)} bytes, but the copies completing on this mbarrier bring {sum(got)} "
             f"(line {', '.join(str(_line(c)) for c in copies[:4])}; a tensor copy's whole box counts, out-of-bounds "
             "elements included): the tx-count reaches zero, and the phase completes, with bytes still in flight "
             "(PTX ISA 9.7.13.15.5: the tx-count must be set to the total the phase tracks)")


# ------------------------------------------------------------------ reading a stage before its barrier

def _block_local(ctx: FnCtx, site: Site, op, depth: int = 0, out: dict | None = None):
    """``op`` renamed so that ``shared_interval`` follows the definitions that reach ``site`` in its
    block (a register defined several times, as in unrolled word loops, has no single definition):
    returns (operand, extra definitions).  A guarded definition in between leaves it unknown."""
    out = {} if out is None else out
    if not isinstance(op, Reg) or depth > 16:
        return op, out
    instrs = ctx.g.blocks[site.block].instrs
    for j in range(site.pos - 1, -1, -1):
        ins = instrs[j]
        if op.name not in defs_uses(ins)[0]:
            continue
        name = f"{op.name}@{site.block}.{j}"
        if ins.guard is not None or not ins.operands:
            return Reg(name), out  # no definition recorded: unknown
        srcs = tuple(_block_local(ctx, Site(site.block, j), o, depth + 1, out)[0] for o in ins.operands[1:])
        out[name] = replace(ins, operands=(Reg(name),) + srcs)
        return Reg(name), out
    return op, out


def _read_ranges(ctx: FnCtx, site: Site, ins: Instr, defs, tid_max) -> list:
    """``_shared_read``'s ranges; an ``ld.shared``/``ldmatrix`` address unbounded by single
    definitions is bounded again by the definitions reaching it in its block."""
    out = _shared_read(ins, defs, tid_max)
    if ins.base in ("ld", "ldmatrix") and out and not _bounded(out[0]) and len(ins.operands) > 1 \
            and isinstance(ins.operands[1], Addr) and isinstance(ins.operands[1].base, Reg):
        base, extra = _block_local(ctx, site, ins.operands[1].base)
        if extra:
            local = dict(defs)
            local.update(extra)
            out = _shared_read(replace(ins, operands=(ins.operands[0], replace(ins.operands[1], base=base))
                                       + tuple(ins.operands[2:])), local, tid_max)
    return out


def early_read_analysis(ctx: FnCtx, sink: Sink) -> None:
    """``spec.mbarrier.read-before-wait``: shared memory a bulk or tensor copy fills, read
    (ld.shared, ldmatrix, a wgmma's descriptors) on a path with no wait on the copy's mbarrier
    since the copy.

    PTX ISA 9.7.9.25.1.2 (mbarrier-based completion): "When the current phase of the mbarrier
    object is complete, it implies that all asynchronous operations tracked by this phase are
    complete, and all threads participating in that mbarrier object can access the result of the
    asynchronous operations" -- the pattern is to wait for the phase with ``mbarrier.test_wait`` /
    ``try_wait`` and only then access the results.  A read before that wait may see old or partly
    written bytes.

    State: the (line, destination, barrier) of each copy not yet waited for; a wait on a barrier
    settles the copies it may complete (a barrier nothing bounds settles them all).  Only ranges
    bounded at both ends are compared (a tensor copy's box: the header's map), so the rule never
    guesses."""
    defs = single_defs(ctx.fn)
    tid_max = _tid_max(ctx)

    def step(site: Site, ins: Instr, st):
        if _is_copy(ins):
            dst = copy_destination(ctx, ins, defs, tid_max)
            bar = _barrier_range(ins, _copy_barrier(ins), defs, tid_max)
            if dst is not None and _bounded(dst) and dst[2] is not None and _bounded(bar):
                st = st | {(_line(ins) or 0, dst, bar)}
                if len(st) > _PROXY_CAP:  # beyond the cap, forget (never report what is not tracked)
                    st = frozenset(sorted(st, key=lambda e: e[0])[-_PROXY_CAP:])
            return st
        if ins.base == "mbarrier" and any(w in ins.modifiers for w in _WAITS):
            bar = _barrier_range(ins, _barrier_of(ins), defs, tid_max)
            return frozenset() if not _bounded(bar) else frozenset(e for e in st if not _meets(e[2], bar))
        if st:
            for r in _read_ranges(ctx, site, ins, defs, tid_max):
                hit = sorted(e for e in st if _bounded(r) and r[2] is not None and _meets(e[1], r))
                if hit:
                    sink.add("spec.mbarrier.read-before-wait", "error", _line(ins),
                             f"{ins.opcode.split('.sync')[0]} may read shared memory the copy at line {hit[0][0]} "
                             "fills, with no wait on that copy's mbarrier since: the bytes may not have landed "
                             "(wait on the barrier's phase first, PTX ISA 9.7.9.25.1.2 and 9.7.13.15.16)")
                    break
        return st

    _run(ctx, _Recording(sink), frozenset(), step, lambda a, b: a | b)


# ------------------------------------------------------------------ which phase a wait waits for


class _Parity:
    """Symbolic parities through the flip registers.  A value is ``("c", v)`` (a constant) or
    ``("r", root, k)``: the current value of register ``root``, xor ``k``.  The table maps a
    tracked register to ``("r", root, k)`` (it holds a root's value, xor k) or to ``("k", v)``
    (it is a root, known to hold v); a register with no entry is a root of unknown value.  Kept
    relative to roots, a phase survives loops whose trip count changes the constants."""

    def __init__(self, regs: frozenset[str]) -> None:
        self.regs = regs  # registers whose values reach some parity operand

    @staticmethod
    def value(table: dict, op):
        if isinstance(op, Imm) and op.value in (0, 1):
            return ("c", op.value)
        if isinstance(op, Reg):
            e = table.get(op.name)
            return e if e is not None and e[0] == "r" else ("r", op.name, 0)
        return None

    @staticmethod
    def const(table: dict, v) -> int | None:
        if v is None:
            return None
        if v[0] == "c":
            return v[1]
        e = table.get(v[1])
        return e[1] ^ v[2] if e is not None and e[0] == "k" else None

    @staticmethod
    def flip(v):
        if v is None:
            return None
        return ("c", 1 - v[1]) if v[0] == "c" else ("r", v[1], 1 - v[2])

    def define(self, table: dict, last: dict, ins: Instr) -> None:
        """Apply one instruction's definitions of tracked registers to ``table`` and ``last``."""
        d, _ = defs_uses(ins)
        for name in d & self.regs:
            ops = ins.operands
            one = Imm(1, "1")
            src = None
            if ins.guard is None and ins.base == "xor" and len(ops) == 3 and one in ops[1:]:
                src = ops[1] if ops[2] == one else ops[2]
                if src == Reg(name) and (table.get(name) is None or table[name][0] == "k"):
                    self._toggle(table, last, name)  # r = r ^ 1 on a root: what refers to it flips
                    continue
                new = self.flip(self.value(table, src))
            elif ins.guard is None and ins.base == "mov" and len(ops) == 2:
                new = self.value(table, ops[1])
            else:
                new = None
            if new is not None and new[0] == "r" and new[1] == name:
                new = None  # refers to the old value of the register it redefines
            self._retire(table, last, name)
            if new is None:
                table.pop(name, None)
            elif new[0] == "c":
                table[name] = ("k", new[1])
            else:
                table[name] = new

    @staticmethod
    def _toggle(table: dict, last: dict, name: str) -> None:
        for k, v in list(table.items()):
            if v[0] == "r" and v[1] == name:
                table[k] = ("r", name, 1 - v[2])
        if name in table:
            table[name] = ("k", 1 - table[name][1])
        for k, seen in list(last.items()):
            last[k] = frozenset((("r", name, 1 - v[2]) if v[0] == "r" and v[1] == name else v, s, f)
                                for v, s, f in seen)

    @classmethod
    def _retire(cls, table: dict, last: dict, name: str) -> None:
        """``name`` is about to be redefined: values that referred to it keep their constant where
        it is known, and otherwise become unknown roots (such a ``last`` entry is dropped)."""
        c = table.get(name)
        c = c[1] if c is not None and c[0] == "k" else None
        for k, v in list(table.items()):
            if v[0] == "r" and v[1] == name:
                if c is None:
                    del table[k]
                else:
                    table[k] = ("k", c ^ v[2])
        for k, seen in list(last.items()):
            kept = frozenset(((("c", c ^ v[2]) if c is not None else None) if v[0] == "r" and v[1] == name else v, s, f)
                             for v, s, f in seen)
            kept = frozenset(e for e in kept if e[0] is not None)
            if kept:
                last[k] = kept
            else:
                del last[k]


def _same(table: dict, a, b) -> bool:
    """Whether two parities are provably equal (same root and flip, or equal known constants)."""
    if a is None or b is None:
        return False
    if a[0] == "r" and b[0] == "r" and a[1] == b[1]:
        return a[2] == b[2]
    ca, cb = _Parity.const(table, a), _Parity.const(table, b)
    return ca is not None and ca == cb


def _pred_of_wait(ins: Instr) -> str | None:
    return ins.operands[0].name if ins.operands and isinstance(ins.operands[0], Reg) else None


def parity_analysis(ctx: FnCtx, sink: Sink) -> None:
    """``spec.mbarrier.wrong-parity``: a ``.parity`` wait on a barrier for the phase this thread
    already saw complete, when since that wait the thread arrived on the barrier or issued copies
    completing on it (work of the *next* phase).

    PTX ISA 9.7.13.15.16: "The .parity variant of the instructions test for the completion of the
    phase indicated by the operand phaseParity, which is the integer parity of either the current
    phase or the immediately preceding phase of the mbarrier object.  An even phase has integer
    parity 0 and an odd phase has integer parity of 1", and they "are valid only for: the current
    incomplete phase, for which waitComplete returns False; the immediately preceding phase, for
    which waitComplete returns True."  Once the thread's new work belongs to the current phase,
    the parity of the phase it already saw complete names the immediately preceding phase: the
    wait returns at once, before the phase
    the thread's own copies (or arrival) belong to completes, and the reads after it race those
    copies (9.7.9.25.1.2).  A fresh barrier's phase 0 is current, so its preceding phase has
    parity 1 (the producer's first wait on an empty barrier uses that on purpose: no arrival of
    its own precedes it, and no check applies).

    The parity is tracked through the unrolled code and the flip registers (``mov r, 0|1``,
    ``xor r, r, 1``, ``xor d, s, 1``, ``mov d, s``), relative to the registers that hold it, so a
    loop's back edge keeps it; a wait's effect holds on the edge where it succeeded (the spin
    loop's retry edge keeps the state before it).  Per barrier the state keeps what each path may
    have seen complete last, and whether the thread arrived or copied since: a report needs one
    path on which both hold.  A wait whose parity is unknown learns, and checks nothing."""
    waits = [i for i in ctx.fn.instructions() if i.base == "mbarrier" and "parity" in i.modifiers
             and any(w in i.modifiers for w in _WAITS)]
    if not waits:
        return
    defs = single_defs(ctx.fn)
    tid_max = _tid_max(ctx)
    # registers whose values reach a parity operand (through mov / xor)
    all_defs: dict[str, list[Instr]] = {}
    for ins in ctx.fn.instructions():
        for d in defs_uses(ins)[0]:
            all_defs.setdefault(d, []).append(ins)
    regs: set[str] = set()
    todo = [o.name for w in waits for o in w.operands[2:3] if isinstance(o, Reg)]
    while todo:
        r = todo.pop()
        if r in regs:
            continue
        regs.add(r)
        for ins in all_defs.get(r, ()):
            if ins.base in ("mov", "xor"):
                todo += [o.name for o in ins.operands[1:] if isinstance(o, Reg)]
    P = _Parity(frozenset(regs))

    def bar_of(ins: Instr):
        op = _copy_barrier(ins) if _is_copy(ins) else _barrier_of(ins)
        return _barrier_range(ins, op, defs, tid_max)

    def step_block(b: int, st, report: Callable | None):
        """Out-states per successor: the state after the block, except that a wait whose predicate
        the block's last branch tests holds only on the edge where it succeeded."""
        table, last = dict(st[0]), dict(st[1])
        before = None  # (state before the last wait, its predicate) while no later def of the predicate
        for site, ins in sites(ctx, b):
            if ins.base == "mbarrier":
                rng = bar_of(ins)
                slot = _slot(rng)
                if ins.opcode.startswith("mbarrier.init"):
                    if slot is not None:  # phase 0 current: the preceding phase has parity 1
                        last[slot] = frozenset({(("c", 1), None, False)})
                    continue
                if any(w in ins.modifiers for w in _WAITS):
                    snap = (dict(table), dict(last))
                    if slot is None:
                        for k in [k for k in last if _meets(k, rng)]:
                            del last[k]  # some barrier's phase moved on: which, unknown
                    elif "parity" not in ins.modifiers:
                        last.pop(slot, None)  # a state-token wait: its phase is the token's
                    else:
                        pv = P.value(table, ins.operands[2] if len(ins.operands) > 2 else None)
                        stale = [e for e in sorted(last.get(slot, ()), key=repr) if e[2] and _same(table, pv, e[0])]
                        if stale:
                            if report is not None:
                                report(ins, stale[0][1], slot)
                            pv = P.flip(pv)  # the phase it meant (kept relative to its registers)
                        if pv is None:
                            last.pop(slot, None)
                        else:
                            last[slot] = frozenset({(pv, site, False)})
                    before = (snap, _pred_of_wait(ins))
                    continue
                if _ARRIVES & set(ins.modifiers) and slot is not None and slot in last:
                    last[slot] = frozenset((v, s_, True) for v, s_, _ in last[slot])
                P.define(table, last, ins)
                continue
            if _is_copy(ins):
                slot = _slot(bar_of(ins))
                if slot is not None and slot in last:
                    last[slot] = frozenset((v, s_, True) for v, s_, _ in last[slot])
                continue
            if before is not None and before[1] in defs_uses(ins)[0] and ins.base != "bra":
                before = None
            P.define(table, last, ins)
        after = (frozenset(table.items()), frozenset(last.items()))
        blk = ctx.g.blocks[b]
        outs = {s: after for s in blk.succs}
        br = blk.instrs[-1] if blk.instrs else None
        if before is not None and br is not None and br.base == "bra" and br.guard is not None \
                and br.guard.reg.name == before[1] and len(blk.succs) == 2:
            t, l_ = before[0]
            failed = (frozenset(t.items()), frozenset(l_.items()))
            target, through = blk.succs
            # @!p bra L: L is the retry (the wait failed); @p bra L: the fall-through is
            outs[target if br.guard.negated else through] = failed
        return outs

    def join(a, b):
        ta, tb = dict(a[0]), dict(b[0])
        table = {k: v for k, v in ta.items() if tb.get(k) == v}
        la, lb = dict(a[1]), dict(b[1])
        last = {}
        for k in la.keys() | lb.keys():
            # what either path may have seen last (a may-set: a report needs one path where it holds);
            # values stay relative to roots, and a root of either side is a root after the join
            merged = la.get(k, frozenset()) | lb.get(k, frozenset())
            if len(merged) > _SEEN_CAP:
                continue  # too many possibilities: no claim
            last[k] = merged
        return (frozenset(table.items()), frozenset(last.items()))

    entry = (frozenset(), frozenset())
    ins_states = _solve_edges(ctx, entry, lambda b, s: step_block(b, s, None), join)

    def report(ins: Instr, prev_site, slot) -> None:
        where = f"line {ctx.line(prev_site)}" if prev_site is not None else "its mbarrier.init"
        sink.add("spec.mbarrier.wrong-parity", "error", _line(ins),
                 f"this wait's parity names the phase of {slot[0]}+{slot[1]} already seen complete ({where}), although "
                 "this thread arrived or issued copies on the barrier since: the wait returns at once, before the "
                 "phase those belong to completes (PTX ISA 9.7.13.15.16: phaseParity names the current or the "
                 "immediately preceding phase)")

    for b in ctx.g.order:
        if b in ins_states:
            step_block(b, ins_states[b], report)


_SEEN_CAP = 8


def _solve_edges(ctx: FnCtx, entry, transfer, join, max_rounds: int = 64) -> dict:
    """A forward fixed point whose transfer gives one out-state per successor (``{succ: state}``)."""
    g = ctx.g
    if not g.order:
        return {}
    pos = {b: i for i, b in enumerate(g.order)}
    outs: dict[tuple[int, int], object] = {}
    ins: dict[int, object] = {}
    work = list(g.order)
    queued = set(work)
    rounds = 0
    while work and rounds < max_rounds * len(g.order):
        rounds += 1
        work.sort(key=pos.__getitem__, reverse=True)
        b = work.pop()
        queued.discard(b)
        incoming = ([entry] if b == g.order[0] else []) + [outs[(p, b)] for p in g.preds[b] if (p, b) in outs]
        if not incoming:
            continue
        st = incoming[0]
        for s in incoming[1:]:
            st = join(st, s)
        if ins.get(b) == st and any((b, s) in outs for s in g.succs[b]):
            continue
        ins[b] = st
        for s, o in transfer(b, st).items():
            if outs.get((b, s)) != o:
                outs[(b, s)] = o
                if s in pos and s not in queued:
                    queued.add(s)
                    work.append(s)
    return ins


def check_function(ctx: FnCtx, sink: Sink) -> None:
    """Run the mbarrier phase rules where the function has mbarriers and copies or parity waits."""
    instrs = list(ctx.fn.instructions())
    if not any(i.base == "mbarrier" for i in instrs):
        return
    if any(_is_copy(i) for i in instrs):
        fill_analysis(ctx, sink)
        early_read_analysis(ctx, sink)
    parity_analysis(ctx, sink)
