"""PTX-level reducer: make a repro smaller while it keeps its signature.

Hypothesis shrinks programs it generates; this reducer works on any repro file
(found by a campaign, written by hand, or from a compiler).  Passes, repeated to
a fixed point or a time budget: delete chunks of statements (ddmin), drop
guards, simplify immediates, drop unused parameters/buffers, functions and
declarations, then simplify input data (random -> small integers -> inline hex).
Each candidate is judged by the caller's predicate; candidates of one pass are
judged in a batch where the predicate allows it (ptxas's batch mode).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from fuzzptx.errors import FuzzptxError
from fuzzptx.program import Buffer, Program
from fuzzptx.ptx.ir import Function, Imm, Instr, Label, RegDecl, Scope, Statement, Sym, VarDecl, Vec, walk, registers_in

Predicate = Callable[[Sequence[Program]], list[bool]]


def instruction_count(program: Program) -> int:
    """Instructions in the program (declarations, labels and directives do not count)."""
    return sum(len(f.instructions()) for f in program.module.functions() if f.body is not None)


# ---------------------------------------------------------------- IR edits


def _number(body: tuple[Statement, ...], counter: list[int], out: dict[int, Statement]) -> None:
    for s in body:
        if isinstance(s, Scope):
            _number(s.body, counter, out)
        else:
            out[counter[0]] = s
            counter[0] += 1


def _rebuild(body: tuple[Statement, ...], counter: list[int], drop: set[int], subst: dict[int, Statement]) -> tuple[Statement, ...]:
    out: list[Statement] = []
    for s in body:
        if isinstance(s, Scope):
            inner = _rebuild(s.body, counter, drop, subst)
            out.append(replace(s, body=inner))
        else:
            i = counter[0]
            counter[0] += 1
            if i in drop:
                continue
            out.append(subst.get(i, s))
    return tuple(out)


def _edit_function(program: Program, fname: str, drop: set[int] = frozenset(), subst: dict[int, Statement] | None = None) -> Program:
    items = []
    for item in program.module.items:
        if isinstance(item, Function) and item.name == fname and item.body is not None:
            item = replace(item, body=_rebuild(item.body, [0], set(drop), subst or {}))
        items.append(item)
    return replace(program, module=replace(program.module, items=tuple(items)))


def _statements(fn: Function) -> dict[int, Statement]:
    out: dict[int, Statement] = {}
    _number(fn.body or (), [0], out)
    return out


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


def _delete(program: Program, victims: list[tuple[str, int]]) -> Program:
    by_fn: dict[str, set[int]] = {}
    for fname, i in victims:
        by_fn.setdefault(fname, set()).add(i)
    for fname, ids in by_fn.items():
        program = _edit_function(program, fname, ids)
    return program


_EFFECTS = ("st", "stmatrix", "wmma", "wgmma", "bar", "barrier", "membar", "fence", "bra", "brx", "call", "ret",
            "exit", "trap", "atom", "red", "cp", "mbarrier", "setmaxnreg", "griddepcontrol")


def dead_code(program: Program) -> Program:
    """Instructions with no effect but their register results, none of which is read (to a fixed point)."""
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
                if isinstance(st, Instr) and st.base not in _EFFECTS and not st.opcode.startswith("wmma"):
                    defs = defs_uses(st)[0]
                    if defs and not any(d.name in used for d in defs):
                        victims.append((fn.name, i))
        if not victims:
            return program
        program = _delete(program, victims)


def _candidates_simplify(program: Program) -> list[Program]:
    """Drop guards, make conditional branches unconditional, prefer simple immediates."""
    cands: list[Program] = []
    for fn in program.module.functions():
        if fn.body is None:
            continue
        for i, s in _statements(fn).items():
            if not isinstance(s, Instr):
                continue
            if s.guard is not None:
                cands.append(_edit_function(program, fn.name, subst={i: replace(s, guard=None)}))
            for j, op in enumerate(s.operands):
                if isinstance(op, Imm) and isinstance(op.value, int) and op.value not in (0, 1):
                    for simpler in (1, 0):
                        ops = s.operands[:j] + (Imm.of(simpler),) + s.operands[j + 1:]
                        cands.append(_edit_function(program, fn.name, subst={i: replace(s, operands=ops)}))
    return cands


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


def cleanup(program: Program) -> Program:
    """Remove what nothing refers to: params with their buffers, .funcs, register declarations."""
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
                item = replace(item, body=_prune_decls(item.body, names))
        items.append(item)
    return replace(program, module=replace(module, items=tuple(items)), buffers=buffers, scalars=scalars)


def _prune_decls(body: tuple[Statement, ...], used: set[str]) -> tuple[Statement, ...]:
    out: list[Statement] = []
    for s in body:
        if isinstance(s, Scope):
            out.append(replace(s, body=_prune_decls(s.body, used)))
        elif isinstance(s, RegDecl) and s.count is None:
            names = tuple(n for n in s.names if n in used)
            if names:
                out.append(replace(s, names=names))
        elif isinstance(s, RegDecl):
            if any(n in used for n in s.expand()):
                out.append(s)
        elif isinstance(s, VarDecl):
            if s.name in used:
                out.append(s)
        else:
            out.append(s)
    return tuple(out)


def _candidates_data(program: Program) -> list[Program]:
    cands = []
    for i, b in enumerate(program.buffers):
        for init in ("zeros", "small_int"):
            if b.init in (init, "zeros") or b.init.startswith("hex:"):
                continue
            bufs = program.buffers[:i] + (replace(b, init=init),) + program.buffers[i + 1:]
            cands.append(replace(program, buffers=bufs))
    return cands


def inline_small_data(program: Program, limit: int = 512) -> Program:
    """Buffers of at most ``limit`` bytes get their contents inline as hex (self-contained repro)."""
    from fuzzptx.data import buffer_bytes

    bufs = []
    for b in program.buffers:
        if not b.output and not b.init.startswith("hex:") and b.nbytes <= limit and b.init not in ("zeros",):
            b = replace(b, init="hex:" + buffer_bytes(b).tobytes().hex(), seed=0)
        bufs.append(b)
    return replace(program, buffers=tuple(bufs))


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

    Deletion is ddmin by levels: try every chunk of the current size (judged in one
    batch), keep the first that holds and retry at that size, else halve the size.
    """
    t0 = time.perf_counter()
    before = instruction_count(program)
    evaluations = 0

    def out_of_time() -> bool:
        return time.perf_counter() - t0 >= budget_s

    def first_holding(cands: list[Program]) -> Program | None:
        nonlocal evaluations
        for lo in range(0, len(cands), 32):
            if out_of_time():
                return None
            part = cands[lo:lo + 32]
            evaluations += len(part)
            for c, ok in zip(part, holds(part)):
                if ok:
                    return c
        return None

    if not holds([program])[0]:
        raise FuzzptxError("the signature does not hold on the input: nothing to keep")
    evaluations += 1
    current = program
    dce = dead_code(current)
    if dce is not current and first_holding([dce]) is not None:
        current = dce
        if log:
            log(f"  dead code: {instruction_count(current)} instructions")
    changed = True
    while changed and not out_of_time():
        changed = False
        items = _removable(current)
        size = max(1, len(items) // 2)
        while items and not out_of_time():
            chunks = [items[i:i + size] for i in range(0, len(items), size)]
            hit = first_holding([_delete(current, ch) for ch in chunks])
            if hit is not None:
                current, changed = hit, True
                if log:
                    log(f"  delete: {instruction_count(current)} instructions")
                items = _removable(current)
                size = min(size, max(1, len(items) // 2))
                continue
            if size == 1:
                break
            size //= 2
        for name, make in (("simplify", _candidates_simplify), ("data", _candidates_data)):
            while not out_of_time():
                cands = [c for c in make(current) if _size(c) < _size(current)]
                hit = first_holding(cands) if cands else None
                if hit is None:
                    break
                current, changed = hit, True
                if log:
                    log(f"  {name}: {instruction_count(current)} instructions")
    tidy = cleanup(current)
    if holds([tidy])[0]:
        current = tidy
    inlined = inline_small_data(current)
    if inlined is not current and holds([inlined])[0]:
        current = inlined
    return ShrinkResult(current, before, instruction_count(current), time.perf_counter() - t0, evaluations)


def _size(p: Program) -> tuple[int, int, int]:
    simple = sum(0 if b.init in ("zeros", "small_int") or b.init.startswith("hex:") else 1 for b in p.buffers)
    imms = 0
    for f in p.module.functions():
        for ins in f.instructions():
            imms += sum(1 for o in ins.operands if isinstance(o, Imm) and isinstance(o.value, int) and o.value not in (0, 1))
            imms += ins.guard is not None
    stmts = sum(len(_statements(f)) for f in p.module.functions() if f.body is not None)
    return (instruction_count(p), stmts + imms, simple)


def signature_predicate(signature: str) -> Predicate:
    """Judge candidates for ``--keep SIGNATURE``, batching ptxas when only ptxas is needed."""
    from fuzzptx import differ

    keep = differ.keep_predicate(signature)
    needed = differ.judges_for(signature)

    def holds(programs: Sequence[Program]) -> list[bool]:
        results = None
        texts = [p.to_ptx() for p in programs]
        if "ptxas" in needed and "hardware" not in needed:
            from fuzzptx.oracles.ptxas import compile_batch

            results = compile_batch(texts)
        out = []
        for i, p in enumerate(programs):
            v = differ.judge(p, needed, ptxas_result=results[i] if results is not None else None, text=texts[i])
            out.append(keep(differ.compare(p, v), v))
        return out

    return holds


def rejudged(program: Program, signature: str) -> Program:
    """The program with EXPECT lines (and signature) saying what the CPU judges say of it now."""
    from fuzzptx import differ

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
    res = shrink(program, signature_predicate(args.keep), budget_s=args.budget, log=print)
    noted = replace(res.program, notes=res.program.notes + (f"shrunk from {res.before} to {res.after} instructions in {res.seconds:.1f} s",))
    out = rejudged(noted, args.keep)
    with open(args.output, "w") as fh:
        fh.write(out.to_ptx())
    print(f"done: {res.before} -> {res.after} instructions in {res.seconds:.1f} s ({res.evaluations} candidates); wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main_shrink(sys.argv[1:]))
