"""Dropped and duplicated tensor-core operations: the PTX wgmmas that must execute against the
GMMAs on each path of the SASS.

PTX side (``must_execute_wgmmas``): a wgmma must execute when it is unguarded, outside every loop,
in a block on every path from the entry to the exit (it post-dominates the entry), and live --
not deleted as dead code the way ptxas deletes it (``oracles/checker/ptxas_dce.py``: its results
are read, not made redundant by a later scale-d 0 wgmma or simply unused).  The rule does not apply
(None) to a kernel with a wgmma in a loop or in a called function: static counts say nothing there.

SASS side (not counted: the GMMAs -O0 adds after each wgmma -- ``HGMMA.64x8x16.F16 R, gdesc, R, !UPT``
-- and the null GMMA ``HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ, !UPT, gsb0`` that -O3 leaves to close a
commit group whose wgmma it dropped): the fewest GMMAs on any path from the kernel's entry to an ``EXIT`` (a shortest path with
the GMMAs as weights; loops without a GMMA are fine), and the most where no GMMA lies on a cycle.

``gmma-dropped``: some SASS path holds fewer GMMAs than the wgmmas that must execute (ptxas 12.4-13.5
-O3 collapse repeated wgmmas: reports/findings/ptxas_O3_repeated_wgmma_campaign.ptx);
``gmma-duplicated``: some SASS path holds more GMMAs than the kernel has wgmmas.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

from fuzzptx.ptx.cfg import build_cfg, call_targets
from fuzzptx.ptx.ir import Function, Module

from ..checker.context import Site
from ..checker.flow import analyse
from ..checker.ptxas_dce import dead_code
from ..checker.regs import is_wgmma
from .listing import Listing, SassFunction


@dataclass(frozen=True)
class CountHazard:
    kind: str  # "dropped" | "duplicated"
    function: str
    ptx: int  # wgmmas that must execute (dropped) or in the kernel (duplicated)
    sass: int  # GMMAs on the SASS path
    excerpt: tuple[str, ...]  # the function's GMMAs as disassembled

    @property
    def rule(self) -> str:
        return f"gmma-{self.kind}"

    def line(self) -> str:
        if self.kind == "dropped":
            return (f"gmma-dropped: {self.function}: {self.ptx} wgmma(s) must execute, a SASS path holds "
                    f"{self.sass} GMMA(s)")
        return f"gmma-duplicated: {self.function}: {self.ptx} wgmma(s) in the PTX, a SASS path holds {self.sass} GMMA(s)"


def _has_wgmma(fn: Function) -> bool:
    return any(is_wgmma(i) for i in fn.instructions())


def must_execute_wgmmas(module: Module, kernel: str) -> tuple[int, int] | None:
    """``(must, total)`` wgmmas of ``kernel`` (see the module doc), or None where counts say nothing."""
    try:
        fn = module.function(kernel)
    except KeyError:
        return None
    if fn.body is None:
        return None
    funcs = {f.name: f for f in module.functions() if f.body is not None}
    seen, todo = set(), list(call_targets(fn))
    while todo:  # a wgmma in anything the kernel calls: counts would need the call graph
        name = todo.pop()
        if name in seen or name not in funcs:
            continue
        seen.add(name)
        if _has_wgmma(funcs[name]):
            return None
        todo.extend(call_targets(funcs[name]))
    cfg = build_cfg(fn)
    in_loop = {b for loop in cfg.loops() for b in loop.body}
    g = analyse(cfg)
    ends = {b.index for b in cfg.blocks
            if not b.succs or (b.instrs and b.instrs[-1].base in ("ret", "exit", "trap"))}

    def on_every_path(block: int) -> bool:
        """No way from the entry to an end (a ret, an exit -- guarded ones too -- or a dead end) avoids it."""
        if block == 0:
            return True
        seen, stack = {0}, [0]
        while stack:
            b = stack.pop()
            if b in ends:
                return False
            for s in cfg.blocks[b].succs:
                if s != block and s not in seen:
                    seen.add(s)
                    stack.append(s)
        return True

    returns = frozenset(p.name for p in fn.returns if p.space == ".reg")
    dead, _ = dead_code(g, returns)
    must = total = 0
    for bi, block in enumerate(g.blocks):
        for k, ins in enumerate(block.instrs):
            if not is_wgmma(ins):
                continue
            if bi in in_loop:
                return None
            total += 1
            if ins.guard is None and Site(bi, k) not in dead and on_every_path(bi):
                must += 1
    return must, total


def _path_counts(f: SassFunction) -> tuple[int | None, int | None]:
    """(fewest, most) GMMAs on a path from the entry to an EXIT; most is None where a GMMA is on a cycle."""
    n = len(f.instrs)
    w = [1 if ins.gmma is not None and not ins.gmma.auxiliary else 0 for ins in f.instrs]
    succ = [f.successors(i) for i in range(n)]
    exits = {i for i, ins in enumerate(f.instrs) if ins.base == "EXIT"}
    best = [None] * n  # Dijkstra, node weights
    heap = [(w[0], 0)] if n else []
    while heap:
        d, i = heapq.heappop(heap)
        if best[i] is not None:
            continue
        best[i] = d
        for s in succ[i]:
            if best[s] is None:
                heapq.heappush(heap, (d + w[s], s))
    reached = [best[i] for i in exits if best[i] is not None]
    fewest = min(reached) if reached else None
    # a GMMA on a cycle: no most
    for i in range(n):
        if w[i] and best[i] is not None:
            stack, seen = list(succ[i]), set()
            while stack:
                j = stack.pop()
                if j == i:
                    return fewest, None
                if j not in seen:
                    seen.add(j)
                    stack.extend(succ[j])
    most = [-1] * n
    if n:
        most[0] = w[0]
    work = [0] if n else []
    while work:  # longest path: cycles carry no weight, so values stop growing
        i = work.pop()
        for s in succ[i]:
            if most[i] + w[s] > most[s]:
                most[s] = most[i] + w[s]
                work.append(s)
    reached = [most[i] for i in exits if most[i] >= 0]
    return fewest, (max(reached) if reached else None)


def gmma_count_hazards(module: Module, kernel: str, listing: Listing, sass_name: str) -> list[CountHazard]:
    """The ``gmma-count`` findings of ``kernel`` (its name in the listing: ``sass_name``)."""
    f = listing.function(sass_name)
    if f is None:
        return []
    if any(callee not in listing.functions or any(x.gmma is not None for x in listing.functions[callee].instrs)
           for callee in f.calls.values()):
        return []
    fewest, most = _path_counts(f)
    try:
        fn = module.function(kernel)
    except KeyError:
        return []
    total = sum(1 for ins in fn.instructions() if is_wgmma(ins)) if fn.body is not None else 0
    if (fewest is None or fewest >= total) and (most is None or most <= total):
        return []  # neither fewer than could be needed nor more than there are
    counts = must_execute_wgmmas(module, kernel)
    if counts is None:
        return []
    must, total = counts
    gmmas = tuple(ins.text for ins in f.instrs if ins.gmma is not None)
    out = []
    if fewest is not None and fewest < must:
        out.append(CountHazard("dropped", sass_name, must, fewest, gmmas))
    if most is not None and most > total:
        out.append(CountHazard("duplicated", sass_name, total, most, gmmas))
    return out
