"""The GMMA pipeline rules, checked on every path of the SASS a ptxas emitted.

What the SASS shows (ptxas 12.4-13.5 for sm_90a, read off the kernels in ``tests/test_sass_rules.py``):

- ``WARPGROUP.ARRIVE`` is ``wgmma.fence``: register writes before it are visible to the GMMAs after it.
- ``HGMMA``/``IGMMA``/``QGMMA``/``BGMMA.64xNxK...`` is one ``wgmma.mma_async``:
  ``R<d>, [R<a>,] gdesc[UR..][.tnspA/B], R<d>|RZ[, !UPT][, gsb0]`` -- ``R<d>`` starts the accumulator
  (N/2 registers, N/4 for an f16 accumulator), ``R<a>`` the four A registers when A is in registers,
  ``RZ`` as the input means scale-d 0 (the accumulator is not read).  The GMMA reads A and the
  accumulator and writes the accumulator *asynchronously*.
- ``gsb0`` marks the last GMMA of a commit group (``wgmma.commit_group``); GMMAs of an open group are
  in flight as well.
- ``WARPGROUP.DEPBAR.LE gsb0, N`` is ``wgmma.wait_group N``: every group but the N newest is done
  (with N = 0, every GMMA issued so far).
- Calls (``CALL.REL``) run their callee with the caller's GMMAs still in flight; ``MOV R, <address>``
  before a call and the callee's own code are ordinary register writes.

Rules (each a ``Hazard.rule``):

- ``inflight-write``: an instruction other than a GMMA writes a register of a GMMA in flight
  (its accumulator or its A operand) -- the GMMA's result lands on it, or reads it half-changed;
- ``inflight-read``: an instruction other than a GMMA reads an accumulator register of a GMMA in
  flight -- it sees an old or partial value;
- ``read-after-arrive``: a GMMA reads (A, or its accumulator input) a register that an instruction
  other than a GMMA wrote after the last ``WARPGROUP.ARRIVE`` -- the write may not be visible to it.

The state is a forward dataflow over the function's control flow (branches, predicated exits,
loops), entered again for each call with the caller's state; at a join, a GMMA in flight on any
incoming path is in flight.  Predicated ``ARRIVE``/``DEPBAR`` close nothing (they may not run).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .listing import Listing, SassFunction

RULES = ("inflight-write", "inflight-read", "read-after-arrive", "gmma-dropped", "gmma-duplicated")
_AGE_CAP = 8  # groups older than this are treated alike (a loop that never waits still converges)
_DEPTH = 8  # call nesting followed


@dataclass(frozen=True)
class Hazard:
    rule: str
    function: str
    addr: int
    instruction: str  # the offending instruction as disassembled
    gmma: str  # the GMMA in flight (or the GMMA that reads), as disassembled
    registers: tuple[int, ...]
    excerpt: tuple[str, ...]  # a few lines around the instruction

    def line(self) -> str:
        regs = ", ".join(f"R{r}" for r in self.registers[:4])
        return f"{self.rule}: {self.function} {self.addr:04x}: {_bare(self.instruction)} ({regs} of {_bare(self.gmma)})"


def _bare(text: str) -> str:
    return re.sub(r"^/\*[0-9a-f]+\*/\s*", "", text).rstrip(" ;")


# a pending GMMA: (function, index, age) with age -1 for the open group, 0 for the newest closed one
State = tuple[frozenset[tuple[str, int, int]], frozenset[int]]
EMPTY: State = (frozenset(), frozenset())


def _join(a: State, b: State) -> State:
    return (a[0] | b[0], a[1] | b[1])


class _Verifier:
    def __init__(self, listing: Listing, interest: frozenset[int]) -> None:
        self.listing = listing
        self.interest = interest  # the registers any GMMA of the analysed code holds: no other write matters
        self.hazards: dict[tuple[str, str, int, str], Hazard] = {}
        self.memo: dict[tuple[str, State], State] = {}
        # per function, per instruction (None: not yet known): whether ``step`` there leaves the
        # state as it is and reports nothing -- with no GMMA in flight (``still``), and with some
        # (``still_inflight``, which reads the registers the instruction reads)
        self.still: dict[str, list[bool | None]] = {}
        self.still_inflight: dict[str, list[bool | None]] = {}

    def is_still(self, f: SassFunction, i: int, inflight: bool) -> bool:
        """Whether ``step`` at instruction ``i`` changes nothing: no GMMA, no ARRIVE/DEPBAR, no
        call, no register of ``interest`` written, and, with a GMMA in flight, none read.  Most
        instructions are such; the walk skips them."""
        marks = self.still.get(f.name)
        if marks is None:
            marks = self.still[f.name] = [None] * len(f.instrs)
            self.still_inflight[f.name] = [None] * len(f.instrs)
        q = marks[i]
        if q is None:
            ins = f.instrs[i]
            q = marks[i] = (ins.gmma is None and ins.opcode != "WARPGROUP.ARRIVE"
                            and not ins.opcode.startswith("WARPGROUP.DEPBAR") and i not in f.calls
                            and self.interest.isdisjoint(ins.writes))
        if not q or not inflight:
            return q
        marks = self.still_inflight[f.name]
        q = marks[i]
        if q is None:
            q = marks[i] = self.interest.isdisjoint(f.instrs[i].reads)
        return q

    def report(self, rule: str, f: SassFunction, i: int, key: tuple[str, int], regs: set[int]) -> None:
        g_ins = self.listing.functions[key[0]].instrs[key[1]]
        ins = f.instrs[i]
        k = (rule, f.name, ins.addr, g_ins.text)
        if k not in self.hazards:
            self.hazards[k] = Hazard(rule, f.name, ins.addr, ins.text, g_ins.text, tuple(sorted(regs)), f.excerpt(i))

    def step(self, f: SassFunction, i: int, state: State, depth: int) -> State:
        ins = f.instrs[i]
        pending, since = state
        g = ins.gmma
        if g is not None:
            inputs = set(g.a) | (set(g.acc) if g.reads_acc else set())
            late = inputs & since
            if late:
                self.report("read-after-arrive", f, i, (f.name, i), late)
            pending = pending | {(f.name, i, -1)}
            if g.closes_group:
                pending = frozenset((fn, j, 0 if age == -1 else min(age + 1, _AGE_CAP)) for fn, j, age in pending)
            return (frozenset(pending), since)
        if ins.opcode == "WARPGROUP.ARRIVE":
            return (pending, since if ins.guard else frozenset())
        if ins.opcode.startswith("WARPGROUP.DEPBAR"):
            m = re.search(r"gsb0\s*,\s*(0x[0-9a-f]+|\d+)", ins.operands)
            if ins.guard or m is None:
                return state
            n = int(m.group(1), 0)
            return (frozenset(e for e in pending if (e[2] != -1 or n > 0) and -1 <= e[2] < n), since)
        writes = ins.writes & self.interest
        callee = f.calls.get(i)
        if not pending:
            if writes:
                since = since | writes
            return self.call(f, callee, (pending, since), depth)
        reads = ins.reads & self.interest
        for fn, j, _age in pending:
            gi = self.listing.functions[fn].instrs[j].gmma
            hit = writes & (gi.acc | gi.a)
            if hit:
                self.report("inflight-write", f, i, (fn, j), set(hit))
            hit = reads & gi.acc
            if hit:
                self.report("inflight-read", f, i, (fn, j), set(hit))
        if writes:
            since = since | writes
        return self.call(f, callee, (pending, since), depth)

    def call(self, f: SassFunction, callee: str | None, state: State, depth: int) -> State:
        """The state after a call: its callee's returns (a call through a register: any subroutine
        of the section, joined); no call, or one nested too deep, leaves the state as it is."""
        if callee is None or depth >= _DEPTH:
            return state
        names = [callee] if callee else list(f.subroutines)
        out = None
        for name in names:
            if name in self.listing.functions:
                st = self.run(self.listing.functions[name], state, depth + 1)
                out = st if out is None else _join(out, st)
        return state if out is None else out

    def run(self, f: SassFunction, entry: State, depth: int = 0) -> State:
        """Fixpoint over ``f`` from ``entry``; the join of the states at its returns."""
        key = (f.name, entry)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = entry  # a recursive call sees the entry state (no deeper unrolling)
        n = len(f.instrs)
        in_states: list[State | None] = [None] * n
        if n == 0:
            return entry
        in_states[0] = entry
        work = [0]
        out = EMPTY
        returned = False
        succ = f.successor_table
        while work:
            i = work.pop()
            st = in_states[i]
            if not self.is_still(f, i, bool(st[0])):
                st = self.step(f, i, st, depth)
            ins = f.instrs[i]
            if ins.base == "RET":
                out, returned = _join(out, st), True
            for s in succ[i]:
                old = in_states[s]
                new = st if old is None else _join(old, st)
                if new != old:
                    in_states[s] = new
                    work.append(s)
        result = out if returned else EMPTY
        self.memo[key] = result
        return result


def verify(listing: Listing, function: str) -> list[Hazard]:
    """Every hazard on any path of ``function`` (a kernel of the listing) and the calls it makes."""
    f = listing.function(function)
    if f is None:
        return []
    reach, todo = {function}, [function]
    while todo:  # the kernel and everything it calls
        fn = listing.functions[todo.pop()]
        for callee in fn.calls.values():
            for name in ([callee] if callee else fn.subroutines):
                if name in listing.functions and name not in reach:
                    reach.add(name)
                    todo.append(name)
    interest: set[int] = set()
    for name in reach:
        for ins in listing.functions[name].instrs:
            g = ins.gmma
            if g is not None:
                interest |= g.acc | g.a
    if not interest:
        return []
    v = _Verifier(listing, frozenset(interest))
    v.run(f, EMPTY)
    # the GMMA breaks ties (two GMMAs in flight at one instruction): the order never depends on
    # the iteration order of a set, so the first hazard -- the one a summary names -- is the same in every process
    return sorted(v.hazards.values(), key=lambda h: (h.function != function, h.addr, h.rule, h.gmma))
