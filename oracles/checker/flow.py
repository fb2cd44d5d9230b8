"""Control flow for the checker: the CFG, (post-)dominators, control dependence, a forward solver.

The CFG comes from ``fuzzptx.ptx.cfg.build_cfg`` (the shared one); a private builder with
the same interface stands in while that module is missing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, TypeVar

from fuzzptx.ptx.ir import Function, Instr, Label, Sym, walk

S = TypeVar("S")


@dataclass(frozen=True)
class Block:
    index: int
    label: str | None
    instrs: tuple[Instr, ...]
    succs: tuple[int, ...]
    preds: tuple[int, ...]


@dataclass(frozen=True)
class _CFG:
    blocks: tuple[Block, ...]


def _ends_block(i: Instr) -> bool:
    return i.base in ("bra", "brx", "ret", "exit", "trap")


def _fallback_build_cfg(fn: Function) -> _CFG:
    """Blocks split at labels and after branches/returns; guarded ones fall through too."""
    raw: list[tuple[str | None, list[Instr]]] = [(None, [])]
    for stmt in walk(fn.body or ()):
        if isinstance(stmt, Label):
            if raw[-1][1] or raw[-1][0] is not None:
                raw.append((stmt.name, []))
            else:
                raw[-1] = (stmt.name, [])
        elif isinstance(stmt, Instr):
            raw[-1][1].append(stmt)
            if _ends_block(stmt):
                raw.append((None, []))
    if len(raw) > 1 and raw[-1][0] is None and not raw[-1][1]:
        raw.pop()
    labels = {lab: k for k, (lab, _) in enumerate(raw) if lab is not None}
    succs: list[list[int]] = []
    for k, (_, instrs) in enumerate(raw):
        last = instrs[-1] if instrs else None
        out: list[int] = []
        falls = True
        if last is not None and last.base == "bra":
            target = last.operands[-1] if last.operands else None
            if isinstance(target, Sym) and target.name in labels:
                out.append(labels[target.name])
            falls = last.guard is not None
        elif last is not None and last.base == "brx":
            out.extend(sorted(set(labels.values())))
            falls = False
        elif last is not None and last.base in ("ret", "exit", "trap"):
            falls = last.guard is not None
        if falls and k + 1 < len(raw):
            out.append(k + 1)
        succs.append(list(dict.fromkeys(out)))
    preds: list[list[int]] = [[] for _ in raw]
    for k, ss in enumerate(succs):
        for s in ss:
            preds[s].append(k)
    return _CFG(tuple(Block(k, lab, tuple(ins), tuple(succs[k]), tuple(preds[k]))
                      for k, (lab, ins) in enumerate(raw)))


def build_cfg(fn: Function):
    try:
        from fuzzptx.ptx.cfg import build_cfg as shared  # type: ignore
    except ImportError:
        return _fallback_build_cfg(fn)
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
    work = set(g.order)
    rounds = 0
    while work and rounds < max_rounds * max(1, len(g.order)):
        rounds += 1
        b = min(work, key=pos.__getitem__)
        work.discard(b)
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
            work.update(s for s in g.succs[b] if s in pos)
    return ins
