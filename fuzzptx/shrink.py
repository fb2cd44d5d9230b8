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
(``fuzzptx.shrink_values``) shrink what the program computes: loads become moves
of ``%tid.x``, shared addresses 0, constant arithmetic folds (a descriptor chain
to one immediate), mul+add fuse into mad, immediates lose bits, fragments reuse
a register, the launch and the final ``ret`` go.  Each candidate is judged by the
caller's predicate; candidates of one pass are judged in batches (ptxas's batch
mode where the predicate allows it).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from fuzzptx.errors import FuzzptxError
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Function, Imm, Instr, Label, RegDecl, Scope, Statement, Sym, VarDecl, Vec, walk, registers_in
from fuzzptx.shrink_tensor import _candidates_dense, _candidates_reuse
from fuzzptx.shrink_values import (_candidates_bits, _candidates_cse, _candidates_decls, _candidates_fold, _candidates_fuse,
                                   _candidates_launch, _candidates_loads, _candidates_symbols, _candidates_tail, imm_bits)
from fuzzptx.shrink_passes import (_SIMPLE_TYPES, _candidates_blocks, _candidates_bypass, _candidates_copyprop,  # noqa: F401
                                   _candidates_counts, _candidates_data, _candidates_funcs, _candidates_narrow,
                                   _candidates_simplify, _candidates_types)
from fuzzptx.shrink_edit import _EFFECTS, _delete, _statements  # noqa: F401 (corpus.py imports _statements, _delete)

Predicate = Callable[[Sequence[Program]], list[bool]]


def instruction_count(program: Program) -> int:
    """Instructions in the program (declarations, labels and directives do not count)."""
    return sum(len(f.instructions()) for f in program.module.functions() if f.body is not None)


# ------------------------------------------------------------------ passes


def _removable(program: Program) -> list[tuple[str, int]]:
    """(function, statement id) of every instruction or label a deletion may take."""
    out = []
    for fn in program.module.functions():
        if fn.body is None:
            continue
        for i, st in _statements(fn).items():
            if isinstance(st, (Instr, Label)) and not (isinstance(st, Instr) and st.base in ("ret", "exit")):
                out.append((fn.name, i))
    return out


def dead_code(program: Program, keep: frozenset[int] = frozenset()) -> Program:
    """Instructions with no effect but their register results, none of which is read (to a fixed point);
    ``keep``: ids of instruction objects to leave (dead already where a signature needs them)."""
    from fuzzptx.ptx.dataflow import defs_uses

    while True:
        used: set[str] = set()
        for fn in program.module.functions():
            for ins in fn.instructions():
                used |= {r.name for r in defs_uses(ins)[1]}
        victims = []
        for fn in program.module.functions():
            if fn.body is None:
                continue
            for i, st in _statements(fn).items():
                if isinstance(st, Instr) and st.base not in _EFFECTS and not st.opcode.startswith("wmma") and id(st) not in keep:
                    defs = defs_uses(st)[0]
                    if defs and not any(d.name in used for d in defs):
                        victims.append((fn.name, i))
        if not victims:
            return program
        program = _delete(program, victims)


def _dead_ids(program: Program) -> frozenset[int]:
    """Ids of the instructions ``dead_code`` would remove from ``program``."""
    left = {id(i) for f in dead_code(program).module.functions() for i in f.instructions()}
    return frozenset(id(i) for f in program.module.functions() for i in f.instructions() if id(i) not in left)


def _used_names(fn: Function) -> set[str]:
    names: set[str] = set()
    for s in walk(fn.body or ()):
        if isinstance(s, Instr):
            for op in s.operands:
                for r in registers_in(op):
                    names.add(r.name)
                _collect_syms(op, names)
            if s.guard:
                names.add(s.guard.reg.name)
    return names


def _collect_syms(op, names: set[str]) -> None:
    from fuzzptx.ptx.ir import Addr, CallArgs

    if isinstance(op, Sym):
        names.add(op.name)
    elif isinstance(op, Addr) and isinstance(op.base, Sym):
        names.add(op.base.name)
    elif isinstance(op, (Vec, CallArgs)):
        for it in op.items:
            _collect_syms(it, names)


def cleanup(program: Program, *, variables: bool = True) -> Program:
    """Remove what nothing refers to: params with their buffers, .funcs, register declarations and
    (``variables``) state-space variables (an unused one may still back an out-of-range access)."""
    module = program.module
    kernel = module.function(program.launch.kernel)
    used = _used_names(kernel)
    keep_params = tuple(p for p in kernel.params if p.name in used)
    buffers = tuple(b for b in program.buffers if b.name in {p.name for p in keep_params})
    scalars = tuple((n, v) for n, v in program.scalars if n in {p.name for p in keep_params})
    called: set[str] = set()
    for fn in module.functions():
        if fn.body is not None:
            called |= _used_names(fn)
    items = []
    for item in module.items:
        if isinstance(item, Function):
            if item.name == kernel.name:
                item = replace(item, params=keep_params)
            elif item.kind == "func" and item.name not in called:
                continue
            if item.body is not None:
                names = _used_names(item) | {p.name for p in item.params} | {p.name for p in item.returns}
                item = replace(item, body=_prune_decls(item.body, names, variables))
        elif isinstance(item, VarDecl) and variables and item.name not in called:
            continue
        items.append(item)
    return replace(program, module=replace(module, items=tuple(items)), buffers=buffers, scalars=scalars)


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
    from fuzzptx.data import buffer_bytes

    bufs = []
    for b in program.buffers:
        if not b.output and not b.init.startswith("hex:") and b.nbytes <= limit and b.init not in ("zeros",):
            b = replace(b, init="hex:" + buffer_bytes(b).tobytes().hex(), seed=0)
        bufs.append(b)
    return replace(program, buffers=tuple(bufs))


PASSES = (("blocks", _candidates_blocks), ("funcs", _candidates_funcs), ("simplify", _candidates_simplify),
          ("bypass", _candidates_bypass), ("copy-propagate", _candidates_copyprop), ("narrow", _candidates_narrow),
          ("types", _candidates_types), ("data", _candidates_data), ("counts", _candidates_counts),
          ("dense", _candidates_dense), ("loads", _candidates_loads), ("symbols", _candidates_symbols),
          ("fold", _candidates_fold), ("fuse", _candidates_fuse), ("cse", _candidates_cse), ("reuse", _candidates_reuse),
          ("bits", _candidates_bits), ("launch", _candidates_launch), ("tail", _candidates_tail), ("decls", _candidates_decls))

PRE = (("launch", _candidates_launch),)
"""Run to a fixed point before the first deletions: they make each judgement cheaper."""


# -------------------------------------------------------------------- driver


@dataclass(frozen=True)
class ShrinkResult:
    program: Program
    before: int
    after: int
    seconds: float
    evaluations: int


def shrink(program: Program, holds: Predicate, *, budget_s: float = 60.0, log: Callable[[str], None] | None = None) -> ShrinkResult:
    """Reduce ``program`` while ``holds`` stays true; stops at a fixed point or after ``budget_s``.

    Deletion is ddmin by levels: try the chunks of the current size in order (judged in
    batches), drop the first that holds and go on from there at that size, else halve
    the size.  Other passes likewise go on after their last hit; a round that changed
    anything is followed by another, so a candidate skipped once is tried again.
    """
    t0 = time.perf_counter()
    before = instruction_count(program)
    evaluations = 0

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

    current = without_dead_code(program)
    if log and current is not program:
        log(f"  dead code: {instruction_count(current)} instructions")
    for name, make in PRE:  # fewer threads first: every later judgement is cheaper
        while not out_of_time():
            hit = first_holding(make(current), 0, _size(current))
            if hit is None:
                break
            current = without_dead_code(hit[0])
            if log:
                log(f"  {name}: {instruction_count(current)} instructions")
    changed = True
    while changed and not out_of_time():
        changed = False
        items = _removable(current)
        size, start = max(1, len(items) // 2), 0
        while items and not out_of_time():
            chunks = [items[i:i + size] for i in range(0, len(items), size)]
            # each chunk goes with the code that only fed it (one judgement, not one per dead instruction);
            # what was dead already stays (the signature kept it)
            hit = first_holding(chunks, start, prep=lambda ch, cur=current, old=_dead_ids(current): dead_code(_delete(cur, ch), old))
            if hit is not None:  # go on at the same size from the chunk after the one that went
                current, start, changed = hit[0], hit[1], True
                if log:
                    log(f"  delete: {instruction_count(current)} instructions")
                items = _removable(current)
                if size > max(1, len(items) // 2):
                    size, start = max(1, len(items) // 2), 0
                continue
            if size == 1:
                break
            size, start = size // 2, 0
        for name, make in PASSES:
            start = 0
            while not out_of_time():
                hit = first_holding(make(current), start, _size(current))
                if hit is None:
                    break
                current, start, changed = without_dead_code(hit[0]), hit[1], True
                if log:
                    log(f"  {name}: {instruction_count(current)} instructions")
    for tidy in (cleanup(current), cleanup(current, variables=False)):
        if tidy != current and holds([tidy])[0]:
            current = tidy
            break
    inlined = inline_small_data(current)
    if inlined is not current and holds([inlined])[0]:
        current = inlined
    return ShrinkResult(current, before, instruction_count(current), time.perf_counter() - t0, evaluations)


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
    stmts = sum(len(_statements(f)) for f in p.module.functions() if f.body is not None)
    return (instruction_count(p), stmts + atoms, simple, sum(b.nbytes for b in p.buffers),
            imm_bits(p) + p.launch.threads * p.launch.grid[0] * p.launch.grid[1] * p.launch.grid[2])


def _atoms(op) -> int:
    return sum(_atoms(x) for x in op.items) if isinstance(op, Vec) else 1


def signature_predicate(signature: str, program: Program | None = None) -> Predicate:
    """Judge candidates for ``--keep SIGNATURE``, batching ptxas when only ptxas is needed.

    A corpus signature (``spec!=ptxas|...``, ``notes!=ptxas|...``, the hardware ones) keeps what
    its ``fuzzptx.corpus`` entry keeps (given the ``program`` to keep it for)."""
    from fuzzptx.judges import differ

    if program is not None:
        from fuzzptx.corpus import entry_for, guarded

        entry = entry_for(signature)
        if entry is not None:
            return guarded(entry, program)

    from fuzzptx.judges import metamorphic

    if metamorphic.is_metamorphic(signature):
        return metamorphic_predicate(signature)
    keep = differ.keep_predicate(signature)
    needed = differ.judges_for(signature)

    def holds(programs: Sequence[Program]) -> list[bool]:
        results = None
        texts = [p.to_ptx() for p in programs]
        if "ptxas" in needed and "hardware" not in needed:
            from fuzzptx.oracles.ptxas import compile_batch

            results = compile_batch(texts)
        out = [False] * len(programs)
        for i, p in enumerate(programs):
            v = differ.judge(p, needed, ptxas_result=results[i] if results is not None else None, text=texts[i])
            if keep(differ.compare(p, v), v):
                out[i] = True
                break  # the reducer takes the first candidate that holds: judging the rest is waste
        return out

    return holds


def metamorphic_predicate(signature: str) -> Predicate:
    """``--keep hardware:pipelined!=serialised|...`` and the other metamorphic signatures: both
    sides on the GPU (one worker for the whole shrink); ``reference:...`` ones on the CPU."""
    from fuzzptx.judges import metamorphic

    if signature.startswith("reference:"):
        return metamorphic.keeps(signature, metamorphic.ReferenceJudge())
    from fuzzptx.oracles.hardware import HardwareWorker, gpu_available

    why = gpu_available()
    if why:
        raise FuzzptxError(f"{signature.split('|')[0]} needs a GPU: {why}")
    worker = HardwareWorker()
    worker.start()
    return metamorphic.keeps(signature, metamorphic.HardwareJudge(worker))


def rejudged(program: Program, signature: str) -> Program:
    """The program with EXPECT lines (and signature) saying what the CPU judges say of it now."""
    from fuzzptx.judges import differ

    judges = tuple(j for j in differ.JUDGES if j != "hardware" or "hardware" in signature)
    v = differ.judge(program, judges)
    findings = differ.compare(program, v)
    sig = next((f.signature for f in findings if f.signature.startswith(signature)), program.signature or signature)
    return differ.finalize_repro(program, judges, sig)


def main_shrink(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fuzzptx shrink", description="Reduce a repro file while it keeps a signature.")
    ap.add_argument("file")
    ap.add_argument("--keep", required=True, help="ptxas:C7519, ptxas:error, checker!=ptxas, reference!=hardware, or a finding signature prefix")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds (default 60)")
    args = ap.parse_args(argv)
    program = Program.from_file(args.file)
    print(f"shrinking {args.file}: {instruction_count(program)} instructions, keep {args.keep}")
    try:
        res = shrink(program, signature_predicate(args.keep, program), budget_s=args.budget, log=print)
    except FuzzptxError as exc:
        if exc.file is None:
            raise FuzzptxError(f"{args.keep}: {exc.message}", file=args.file) from None
        raise
    noted = replace(res.program, notes=res.program.notes + (f"shrunk from {res.before} to {res.after} instructions in {res.seconds:.1f} s",))
    from fuzzptx.corpus import entry_for, finalize

    entry = entry_for(args.keep)
    out = finalize(entry, noted) if entry is not None else rejudged(noted, args.keep)
    with open(args.output, "w") as fh:
        fh.write(out.to_ptx())
    print(f"done: {res.before} -> {res.after} instructions in {res.seconds:.1f} s ({res.evaluations} candidates); wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main_shrink(sys.argv[1:]))
