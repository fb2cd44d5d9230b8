"""PTX-level reducer: make a repro smaller while it keeps its signature.

Hypothesis shrinks programs it generates; this reducer works on any repro file
(found by a campaign, written by hand, or from a compiler).  Passes, repeated to
a fixed point or a time budget: dead code; delete chunks of statements (ddmin by
levels); delete whole blocks and loops; empty .func bodies; drop guards and
simplify immediates; replace computations by moves of a source and propagate
moves away; narrow wgmma N (fewer accumulators) and simplify its types (f16); simplify input data (random ->
zeros / small integers) and cut buffers to the elements used; finally drop
unused parameters, buffers, functions and declarations (register ranges cut to
the highest register used) and inline small data as hex.  Value-level passes
(``fuzzptx.reduce.passes.values``) shrink what the program computes: loads become moves
of ``%tid.x``, shared addresses 0, constant arithmetic folds (a descriptor chain
to one immediate), mul+add fuse into mad, immediates lose bits, fragments reuse
a register, the launch and the final ``ret`` go.  Memory passes (``fuzzptx.reduce.passes.memory``)
shrink a repro's data plumbing: a uniform input load becomes its value, scaled per-thread
stores become byte stores, address arithmetic becomes offsets, a fragment store becomes one
register's store, A and B share a tile, and wgmma tiles move into the first kilobyte with
smaller strides (their stores follow); a consumer warpgroup runs as the only one.  Each candidate is judged by the
caller's predicate (``fuzzptx.engine.predicate``: the engine's executor); candidates of one
pass are judged in batches (one block of the executor: ptxas's batch mode).  The passes and their order are ``fuzzptx.reduce.passes``;
each run counts, per pass, the candidates it judged, those it kept, its seconds and the
instructions it removed (``ShrinkResult.passes``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from fuzzptx.errors import FuzzptxError
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Function, Imm, RegDecl, Scope, Statement, VarDecl, Vec
from fuzzptx.reduce.edit import dead_code, dead_ids, delete, removable, statements, used_names
from fuzzptx.reduce.passes import PASSES, PRE
from fuzzptx.reduce.passes.structure import _SIMPLE_TYPES
from fuzzptx.reduce.passes.values import imm_bits
from fuzzptx.data import buffer_bytes

Predicate = Callable[[Sequence[Program]], list[bool]]


def instruction_count(program: Program) -> int:
    """Instructions in the program (declarations, labels and directives do not count)."""
    return sum(len(f.instructions()) for f in program.module.functions() if f.body is not None)


# ------------------------------------------------------------------ passes


def cleanup(program: Program, *, variables: bool = True) -> Program:
    """Remove what nothing refers to: params with their buffers, .funcs, register declarations and
    (``variables``) state-space variables (an unused one may still back an out-of-range access)."""
    module = program.module
    kernel = module.function(program.launch.kernel)
    used = used_names(kernel)
    # a buffer a kept tensor map points into stays, used by the instructions or not
    used |= {t.buffer for t in program.tensormaps if t.name in used}
    keep_params = tuple(p for p in kernel.params if p.name in used)
    tensormaps = tuple(t for t in program.tensormaps if t.name in used)
    kept = {p.name for p in keep_params}
    # a buffer no parameter names stays while its struct (in=) or a kept map (buffer=) does
    buffers = tuple(b for b in program.buffers if b.name in kept or (b.param and b.param in kept)
                    or b.name in {t.buffer for t in tensormaps})
    scalars = tuple((n, v) for n, v in program.scalars if n in {p.name for p in keep_params})
    called: set[str] = set()
    for fn in module.functions():
        if fn.body is not None:
            called |= used_names(fn)
    items = []
    for item in module.items:
        if isinstance(item, Function):
            if item.name == kernel.name:
                item = replace(item, params=keep_params)
            elif item.kind == "func" and item.name not in called:
                continue
            if item.body is not None:
                names = used_names(item) | {p.name for p in item.params} | {p.name for p in item.returns}
                item = replace(item, body=_prune_decls(item.body, names, variables))
        elif isinstance(item, VarDecl) and variables and item.name not in called:
            continue
        items.append(item)
    return replace(program, module=replace(module, items=tuple(items)), buffers=buffers, scalars=scalars,
                   tensormaps=tensormaps)


def _prune_decls(body: tuple[Statement, ...], used: set[str], variables: bool = True) -> tuple[Statement, ...]:
    out: list[Statement] = []
    for s in body:
        if isinstance(s, Scope):
            out.append(replace(s, body=_prune_decls(s.body, used, variables)))
        elif isinstance(s, RegDecl) and s.count is None:
            names = tuple(n for n in s.names if n in used)
            if names:
                out.append(replace(s, names=names))
        elif isinstance(s, RegDecl):
            live = [k for k, n in enumerate(s.expand()) if n in used]
            if live:  # %r<53> with only %r0..%r11 used becomes %r<12>
                out.append(replace(s, count=live[-1] + 1))
        elif isinstance(s, VarDecl):
            if s.name in used or not variables:
                out.append(s)
        else:
            out.append(s)
    return tuple(out)


def inline_small_data(program: Program, limit: int = 512) -> Program:
    """Buffers of at most ``limit`` bytes get their contents inline as hex (self-contained repro)."""
    bufs = []
    for b in program.buffers:
        if not b.output and not b.init.startswith("hex:") and b.nbytes <= limit and b.init not in ("zeros",):
            b = replace(b, init="hex:" + buffer_bytes(b).tobytes().hex(), seed=0)
        bufs.append(b)
    return replace(program, buffers=tuple(bufs))


# -------------------------------------------------------------------- driver


@dataclass(frozen=True)
class PassStats:
    """What one pass (or driver step: dead code, delete, cleanup, inline) did in one shrink: candidates
    judged, candidates kept, seconds spent (making and judging candidates) and instructions removed."""

    name: str
    tried: int = 0
    kept: int = 0
    seconds: float = 0.0
    removed: int = 0

    def added(self, tried: int, kept: int, seconds: float, removed: int) -> PassStats:
        return replace(self, tried=self.tried + tried, kept=self.kept + kept, seconds=self.seconds + seconds,
                       removed=self.removed + removed)

    def line(self) -> str:
        return f"  {self.name:<15} tried {self.tried:5d}  kept {self.kept:4d}  removed {self.removed:4d} instructions  {self.seconds:7.2f} s"


@dataclass(frozen=True)
class ShrinkResult:
    program: Program
    before: int
    after: int
    seconds: float
    evaluations: int
    passes: tuple[PassStats, ...] = ()  # one per pass or driver step, in the order each first ran
    cut_short: bool = False  # the budget ran out in the middle of a judgement (``OutOfBudget``)
    interrupted: bool = False  # Ctrl-C ended the passes (``shrink(..., interruptible=True)``)


class OutOfBudget(Exception):
    """Raised into a shrink (by the caller's wall-clock timer, e.g. ``fuzzptx shrink --budget``) when
    the budget runs out in the middle of one judgement: a batch of ptxas runs on a huge module
    can outlast any check between judgements.  ``shrink`` then keeps the smallest program that
    held so far (``current`` is only ever assigned a candidate that held)."""


def shrink(program: Program, holds: Predicate, *, budget_s: float = 60.0, log: Callable[[str], None] | None = None,
           interruptible: bool = False) -> ShrinkResult:
    """Reduce ``program`` while ``holds`` stays true; stops at a fixed point or after ``budget_s``.
    ``interruptible``: Ctrl-C in the passes ends them with the smallest program that held so far
    (``fuzzptx shrink`` writes it); elsewhere (a campaign's shrinks) it stops the caller as usual.

    Deletion is ddmin by levels: try the chunks of the current size in order (judged in
    batches), drop the first that holds and go on from there at that size, else halve
    the size.  Other passes likewise go on after their last hit; a round that changed
    anything is followed by another, so a candidate skipped once is tried again.
    """
    t0 = time.perf_counter()
    before = instruction_count(program)
    evaluations = 0
    stats: dict[str, PassStats] = {}

    def record(name: str, since: tuple[float, int, Program], kept: int, now: Program, tried: int | None = None) -> None:
        """Add to ``name``'s statistics what happened since ``since`` (time, evaluations, program)."""
        t, e, p = since
        got = stats.get(name, PassStats(name))
        stats[name] = got.added(evaluations - e if tried is None else tried, kept, time.perf_counter() - t,
                                instruction_count(p) - instruction_count(now))

    def mark(p: Program) -> tuple[float, int, Program]:
        return time.perf_counter(), evaluations, p

    def out_of_time() -> bool:
        return time.perf_counter() - t0 >= budget_s

    def first_holding(cands: list, start: int = 0, below: tuple | None = None, prep=None) -> tuple[Program, int] | None:
        """The first candidate (from ``start``; with ``below``, only those of a smaller ``_size``, sized
        as they come up; with ``prep``, each made by ``prep`` as it comes up) that holds, and its index.
        Batches grow 4, 8, 16, 32: a predicate judged one program at a time wastes little past the hit,
        a batched one (ptxas) still gets large batches."""
        nonlocal evaluations
        lo, step = start, 4
        while lo < len(cands):
            if out_of_time():
                return None
            idx = []
            while lo < len(cands) and len(idx) < step:
                if below is None or _size(cands[lo]) < below:
                    idx.append(lo)
                lo += 1
            if not idx:
                break
            part = [prep(cands[k]) if prep else cands[k] for k in idx]
            evaluations += len(part)
            for k, (c, ok) in zip(idx, zip(part, holds(part))):
                if ok:
                    return c, k
            step = min(2 * step, 32)
        return None

    if not holds([program])[0]:
        raise FuzzptxError("the signature does not hold on the input: nothing to keep")
    evaluations += 1
    current = program
    def without_dead_code(p: Program) -> Program:
        dce = dead_code(p)
        return dce if dce is not p and first_holding([dce]) is not None else p

    cut_short = interrupted = False
    try:
        since = mark(program)
        current = without_dead_code(program)
        record("dead code", since, int(current is not program), current)
        if log and current is not program:
            log(f"  dead code: {instruction_count(current)} instructions")
        for pas in PRE:  # fewer threads first: every later judgement is cheaper
            since, kept = mark(current), 0
            while not out_of_time():
                hit = first_holding(pas.candidates(current), 0, _size(current))
                if hit is None:
                    break
                current, kept = without_dead_code(hit[0]), kept + 1
                if log:
                    log(f"  {pas.name}: {instruction_count(current)} instructions")
            record(pas.name, since, kept, current)
        changed = True
        while changed and not out_of_time():
            changed = False
            since, kept = mark(current), 0
            items = removable(current)
            size, start = max(1, len(items) // 2), 0
            while items and not out_of_time():
                chunks = [items[i:i + size] for i in range(0, len(items), size)]
                # each chunk goes with the code that only fed it (one judgement, not one per dead instruction);
                # what was dead already stays (the signature kept it)
                hit = first_holding(chunks, start, prep=lambda ch, cur=current, old=dead_ids(current): dead_code(delete(cur, ch), old))
                if hit is not None:  # go on at the same size from the chunk after the one that went
                    current, start, changed, kept = hit[0], hit[1], True, kept + 1
                    if log:
                        log(f"  delete: {instruction_count(current)} instructions")
                    items = removable(current)
                    if size > max(1, len(items) // 2):
                        size, start = max(1, len(items) // 2), 0
                    continue
                if size == 1:
                    break
                size, start = size // 2, 0
            record("delete", since, kept, current)
            for pas in PASSES:
                start, since, kept = 0, mark(current), 0
                while not out_of_time():
                    hit = first_holding(pas.candidates(current), start, _size(current))
                    if hit is None:
                        break
                    current, start, changed, kept = without_dead_code(hit[0]), hit[1], True, kept + 1
                    if log:
                        log(f"  {pas.name}: {instruction_count(current)} instructions")
                record(pas.name, since, kept, current)
        since, tried, kept = mark(current), 0, 0
        for tidy in (cleanup(current), cleanup(current, variables=False)):
            if tidy != current and not out_of_time():
                tried += 1
                if holds([tidy])[0]:
                    current, kept = tidy, 1
                    break
        record("cleanup", since, kept, current, tried)
        since = mark(current)
        inlined = inline_small_data(current)
        if inlined is not current and not out_of_time() and holds([inlined])[0]:
            current = inlined
        record("inline", since, int(inlined is not since[2] and current is inlined), current, int(inlined is not since[2]))
    except OutOfBudget:
        cut_short = True
        if log:
            log(f"  budget ran out during a judgement: keeping {instruction_count(current)} instructions")
    except KeyboardInterrupt:
        if not interruptible:
            raise
        interrupted = True
        if log:
            log(f"  interrupted: keeping {instruction_count(current)} instructions")
    return ShrinkResult(current, before, instruction_count(current), time.perf_counter() - t0, evaluations,
                        tuple(stats.values()), cut_short, interrupted)


def _size(p: Program) -> tuple[int, int, int, int, int]:
    """What the passes minimise, in order: instructions; statements, operands, non-0/1 immediates and
    guards; buffers with drawn (not simple) data; buffer bytes; set bits of immediates, address
    offsets and threads launched."""
    simple = sum(0 if b.init in ("zeros", "small_int") or b.init.startswith("hex:") else 1 for b in p.buffers)
    atoms = 0
    for f in p.module.functions():
        for ins in f.instructions():
            atoms += sum(1 for o in ins.operands if isinstance(o, Imm) and isinstance(o.value, int) and o.value not in (0, 1))
            atoms += (ins.guard is not None) + sum(_atoms(o) for o in ins.operands) + (ins.base != "mov")
            atoms += 4 * sum(ins.opcode.count(f".{t}") for t in _SIMPLE_TYPES[1:]) if ins.base == "wgmma" else 0
    stmts = sum(len(statements(f)) for f in p.module.functions() if f.body is not None)
    return (instruction_count(p), stmts + atoms, simple, sum(b.nbytes for b in p.buffers),
            imm_bits(p) + p.launch.threads * p.launch.grid[0] * p.launch.grid[1] * p.launch.grid[2])


def _atoms(op) -> int:
    return sum(_atoms(x) for x in op.items) if isinstance(op, Vec) else 1
