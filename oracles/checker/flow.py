"""Control flow for the checker: post-dominators, control dependence, a forward solver over
the shared CFG (``fuzzptx.ptx.cfg.build_cfg``)."""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Callable, Iterable, TypeVar

from fuzzptx.ptx.ir import Function
from fuzzptx.ptx.cfg import build_cfg as shared

S = TypeVar("S")


def build_cfg(fn: Function):
    return shared(fn)


# ------------------------------------------------------------------ graph algorithms


def rpo(succs: list[tuple[int, ...]], entry: int = 0) -> list[int]:
    seen = [False] * len(succs)
    order: list[int] = []
    stack: list[tuple[int, Iterable[int]]] = [(entry, iter(succs[entry]))]
    seen[entry] = True
    while stack:
        node, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            stack.pop()
            order.append(node)
        elif not seen[nxt]:
            seen[nxt] = True
            stack.append((nxt, iter(succs[nxt])))
    return order[::-1]


def idoms(succs: list[tuple[int, ...]], preds: list[tuple[int, ...]], entry: int) -> dict[int, int]:
    """Immediate dominators (Cooper, Harvey, Kennedy) of the nodes reachable from ``entry``."""
    order = rpo(succs, entry)
    pos = {n: i for i, n in enumerate(order)}
    idom = {entry: entry}

    def meet(a: int, b: int) -> int:
        while a != b:
            while pos[a] > pos[b]:
                a = idom[a]
            while pos[b] > pos[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for n in order[1:]:
            ps = [p for p in preds[n] if p in idom]
            if not ps:
                continue
            new = ps[0]
            for p in ps[1:]:
                new = meet(new, p)
            if idom.get(n) != new:
                idom[n] = new
                changed = True
    return idom


@dataclass(frozen=True)
class Graph:
    """A CFG with the derived facts the analyses share. Node ``n`` (== len(blocks)) is the virtual exit."""
    blocks: tuple
    succs: tuple[tuple[int, ...], ...]
    preds: tuple[tuple[int, ...], ...]
    order: tuple[int, ...]  # reverse postorder of reachable blocks
    ipdom: dict  # block -> immediate post-dominator (virtual exit = len(blocks))
    cdeps: tuple[frozenset, ...]  # block -> {(branch block, successor)} it is control dependent on

    @property
    def exit(self) -> int:
        return len(self.blocks)


def analyse(cfg) -> Graph:
    blocks = tuple(cfg.blocks)
    n = len(blocks)
    succs = [tuple(b.succs) for b in blocks]
    preds = [tuple(b.preds) for b in blocks]
    order = rpo(succs, 0) if n else []
    reach = set(order)
    # Post-dominators on the reversed graph; blocks that cannot reach an exit get an edge to it.
    rsucc: list[list[int]] = [[] for _ in range(n + 1)]
    rpred: list[list[int]] = [[] for _ in range(n + 1)]
    for b in range(n):
        outs = list(succs[b]) or [n]
        for s in outs:
            rsucc[s].append(b)
            rpred[b].append(s)
    can_exit = set(rpo([tuple(x) for x in rsucc], n))
    for b in range(n):
        if b not in can_exit:
            rsucc[n].append(b)
            rpred[b].append(n)
    ip = idoms([tuple(x) for x in rsucc], [tuple(x) for x in rpred], n)
    cd: list[set] = [set() for _ in range(n)]
    for x in range(n):
        if len(succs[x]) < 2 or x not in reach:
            continue
        stop = ip.get(x, n)
        for y in succs[x]:
            walker = y
            guard = 0
            while walker != stop and walker != n and guard <= n:
                cd[walker].add((x, y))
                walker = ip.get(walker, n)
                guard += 1
    return Graph(blocks, tuple(succs), tuple(preds), tuple(order), ip, tuple(frozenset(c) for c in cd))


def solve_forward(g: Graph, entry: S, transfer: Callable[[int, S], S], join: Callable[[list[S]], S],
                  max_rounds: int = 200, join_at: Callable[[int, list[S]], S] | None = None) -> dict[int, S]:
    """In-states of every reachable block at the fixed point (states must form a finite lattice).

    ``join_at(block, states)``, when given, replaces ``join`` for analyses whose merge depends on
    where it happens (a reconvergence point of a divergent branch).
    """
    pos = {b: i for i, b in enumerate(g.order)}
    ins: dict[int, S] = {}
    outs: dict[int, S] = {}
    if not g.order:
        return ins
    heap = [pos[b] for b in g.order]  # already sorted: a valid heap
    queued = set(g.order)
    rounds = 0
    while heap and rounds < max_rounds * max(1, len(g.order)):
        rounds += 1
        b = g.order[heapq.heappop(heap)]
        queued.discard(b)
        if b == g.order[0]:
            incoming = [entry] + [outs[p] for p in g.preds[b] if p in outs]
        else:
            incoming = [outs[p] for p in g.preds[b] if p in outs]
        if not incoming:
            continue
        if len(incoming) == 1:
            state = incoming[0]
        else:
            state = join_at(b, incoming) if join_at is not None else join(incoming)
        if b in ins and ins[b] == state and b in outs:
            continue
        ins[b] = state
        out = transfer(b, state)
        if outs.get(b) != out:
            outs[b] = out
            for s in g.succs[b]:
                if s in pos and s not in queued:
                    queued.add(s)
                    heapq.heappush(heap, pos[s])
    return ins


class BlockRecords:
    """What each block's transfer reported, kept with the in-state it started from, so that an
    analysis reports from the solver's last transfer of every block (the one from its final
    in-state) instead of stepping every block again after the fixed point (that second pass was
    ~40% of the checker's dataflow time).  ``key(block)``: anything else the transfer's report
    depends on, compared too."""

    def __init__(self, key: Callable[[int], object] | None = None) -> None:
        self.kept: dict[int, tuple] = {}
        self.key = key

    def keep(self, block: int, state_in, record) -> None:
        self.kept[block] = (state_in, self.key(block) if self.key else None, record)

    def final(self, g: Graph, ins: dict, transfer: Callable) -> Iterable[tuple[int, object]]:
        """``(block, record)`` in layout order for every reachable block; a block whose last
        transfer began from another state is stepped again (``transfer(block, ins[block])``,
        which must ``keep`` its record)."""
        for b in g.order:
            if b not in ins:
                continue
            kept = self.kept.get(b)
            if kept is None or kept[0] != ins[b] or kept[1] != (self.key(b) if self.key else None):
                transfer(b, ins[b])
            yield b, self.kept[b][2]
