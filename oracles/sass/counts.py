"""Dropped and duplicated tensor-core operations: the PTX wgmmas that must execute against the
GMMAs on each path of the SASS.

PTX side (``must_execute_wgmmas``): a wgmma must execute when it is unguarded, outside every loop,
in a block on every path from the entry to the exit (it post-dominates the entry), and live --
not deleted as dead code the way ptxas deletes it (``oracles/checker/ptxas_dce.py``: its results
are read, not made redundant by a later scale-d 0 wgmma or simply unused).  A wgmma in a loop is
never "must" (it runs any number of times), and the SASS side does not count GMMAs on a cycle:
the rule compares the code outside loops.  It does not apply to a kernel with a wgmma in a called
function.

SASS side (not counted: the GMMAs -O0 adds after each wgmma -- ``HGMMA.64x8x16.F16 R, gdesc, R, !UPT``
-- and the null GMMA ``HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ, !UPT, gsb0`` that -O3 leaves to close a
commit group whose wgmma it dropped): the fewest GMMAs on any path from the kernel's entry to an ``EXIT`` (a shortest path with
the GMMAs as weights; loops without a GMMA are fine), and the most where no GMMA lies on a cycle.

Both sides count shape by shape (N and K of m64nNkK, the SASS ``64xNxK``).
``gmma-dropped``: some SASS path holds fewer GMMAs of a shape than the wgmmas of that shape that must
execute (ptxas 12.4-13.5 -O3 collapse repeated wgmmas: reports/findings/ptxas_O3_repeated_wgmma_campaign.ptx);
``gmma-duplicated``: some SASS path holds more GMMAs of a shape than the kernel has wgmmas of it.
"""
from __future__ import annotations

import heapq
import re
from dataclasses import dataclass

from fuzzptx.perf import per_object
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
    shape: tuple[int, int]  # (N, K) of the wgmmas counted
    ptx: int  # wgmmas that must execute (dropped) or in the kernel (duplicated)
    sass: int  # GMMAs on the SASS path
    excerpt: tuple[str, ...]  # the function's GMMAs as disassembled

    @property
    def rule(self) -> str:
        return f"gmma-{self.kind}"

    def line(self) -> str:
        if self.kind == "dropped":
            return (f"gmma-dropped: {self.function}: {self.ptx} m64n{self.shape[0]}k{self.shape[1]} wgmma(s) must "
                    f"execute, a SASS path holds {self.sass} such GMMA(s)")
        return (f"gmma-duplicated: {self.function}: {self.ptx} m64n{self.shape[0]}k{self.shape[1]} wgmma(s) in the "
                f"PTX, a SASS path holds {self.sass} such GMMA(s)")


def _has_wgmma(fn: Function) -> bool:
    return any(is_wgmma(i) for i in fn.instructions())


def ptx_shape(opcode: str) -> tuple[int, int] | None:
    """(N, K) of a ``wgmma.mma_async...m64nNkK...`` opcode."""
    m = re.search(r"\.m64n(\d+)k(\d+)", opcode)
    return (int(m.group(1)), int(m.group(2))) if m else None


def must_execute_wgmmas(module: Module, kernel: str) -> tuple[int, int] | None:
    """``(must, total)`` wgmmas of ``kernel`` (see the module doc), or None where counts say nothing."""
    by_shape = must_execute_by_shape(module, kernel)
    if by_shape is None or any(t < 0 for _, t in by_shape.values()):
        return None
    return sum(m for m, _ in by_shape.values()), sum(t for _, t in by_shape.values())


def must_execute_by_shape(module: Module, kernel: str, *, live_only: bool = True
                          ) -> dict[tuple[int, int], tuple[int, int]] | None:
    """``(must, total)`` per wgmma shape (N, K): ptxas keeps each wgmma's shape, so a drop hidden in
    the total by GMMAs of another shape shows in its own.  A loop's wgmmas are never "must" (the
    SASS side does not count GMMAs on a cycle either), and make ``total`` -1 (no upper bound).
    ``live_only=False`` counts dead wgmmas as "must" too: an upper bound of ``must`` without the
    dead-code analysis, which costs most of the work."""
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

    dead: frozenset | set = frozenset()
    blocks = cfg.blocks
    if live_only:
        g = analyse(cfg)
        blocks = g.blocks
        dead, _ = dead_code(g, frozenset(p.name for p in fn.returns if p.space == ".reg"))
    counts: dict[tuple[int, int], list[int]] = {}
    for bi, block in enumerate(blocks):
        for k, ins in enumerate(block.instrs):
            if not is_wgmma(ins):
                continue
            shape = ptx_shape(ins.opcode)
            if shape is None:
                return None
            c = counts.setdefault(shape, [0, 0])
            c[1] += 1
            if bi in in_loop:  # a loop's wgmmas run any number of times: no count covers them
                c.append(1)
                continue
            if ins.guard is None and Site(bi, k) not in dead and on_every_path(bi):
                c[0] += 1
    return {shape: (c[0], c[1] if len(c) == 2 else -1) for shape, c in counts.items()}


@per_object(256)
def _flow(f: SassFunction) -> tuple[tuple[tuple[int, ...], ...], frozenset[int]]:
    """Each instruction's successors, and the GMMAs that lie on a cycle: neither depends on the
    shape counted, so a function works them out once for all its shapes."""
    succ = f.successor_table
    cyclic = set()
    for i, ins in enumerate(f.instrs):
        if ins.gmma is None:
            continue
        stack, seen = list(succ[i]), set()
        while stack:
            j = stack.pop()
            if j == i:
                cyclic.add(i)
                break
            if j not in seen:
                seen.add(j)
                stack.extend(succ[j])
    return succ, frozenset(cyclic)


def _path_counts(f: SassFunction, shape: tuple[int, int] | None = None) -> tuple[int | None, int | None]:
    """(fewest, most) GMMAs (of ``shape``, or all) on a path from the entry to an EXIT.  GMMAs on a
    cycle (a loop's) do not count towards fewest -- they stand for the PTX's wgmmas in loops, which
    no count covers -- and make most None."""
    n = len(f.instrs)
    succ, on_cycle = _flow(f)
    w = [1 if ins.gmma is not None and not ins.gmma.auxiliary and (shape is None or ins.gmma.nk == shape) else 0
         for ins in f.instrs]
    cyclic = any(w[i] for i in on_cycle)
    for i in on_cycle:
        w[i] = 0
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
    if cyclic:
        return fewest, None
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
    """The ``gmma-dropped``/``gmma-duplicated`` findings of ``kernel`` (its name in the listing:
    ``sass_name``), shape by shape: ptxas keeps each wgmma's shape, so a drop that GMMAs of another
    shape would hide in the total shows in its own."""
    f = listing.function(sass_name)
    if f is None:
        return []
    if any(callee not in listing.functions or any(x.gmma is not None for x in listing.functions[callee].instrs)
           for callee in f.calls.values()):
        return []
    try:
        fn = module.function(kernel)
    except KeyError:
        return []
    if fn.body is None:
        return []
    totals: dict[tuple[int, int], int] = {}
    for ins in fn.instructions():
        shape = ptx_shape(ins.opcode) if is_wgmma(ins) else None
        if shape is not None:
            totals[shape] = totals.get(shape, 0) + 1
    paths = {shape: _path_counts(f, shape) for shape in totals}
    if all((fewest is None or fewest >= totals[sh]) and (most is None or most <= totals[sh])
           for sh, (fewest, most) in paths.items()):
        return []  # no shape has fewer GMMAs on a path than could be needed, nor more than there are
    by_shape = must_execute_by_shape(module, kernel, live_only=False)
    if by_shape is None:
        return []
    if any(paths.get(sh, (None, None))[0] is not None and paths[sh][0] < must for sh, (must, _) in by_shape.items()):
        # a path may hold fewer GMMAs than the wgmmas that must run: which are live decides
        by_shape = must_execute_by_shape(module, kernel)
        if by_shape is None:
            return []
    out = []
    for shape, (must, total) in sorted(by_shape.items()):
        fewest, most = paths.get(shape, (None, None))
        gmmas = tuple(ins.text for ins in f.instrs if ins.gmma is not None and ins.gmma.nk == shape)
        if fewest is not None and fewest < must:
            out.append(CountHazard("dropped", sass_name, shape, must, fewest, gmmas))
        if most is not None and total >= 0 and most > total:
            out.append(CountHazard("duplicated", sass_name, shape, total, most, gmmas))
    return out
