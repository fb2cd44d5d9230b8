"""Control-flow graph of one function: basic blocks, dominators, back edges, natural loops.

Scopes are flattened, but labels stay scoped the way PTX scopes them: a branch
resolves its target in the innermost enclosing ``{ }`` that defines the label, so
inline-asm blocks that each define ``LAB_WAIT:`` do not collide.  A block ends at a
label and after ``bra``/``brx``/``ret``/``exit``/``trap``; ``call`` does not end one.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from fuzzptx.errors import FuzzptxError
from fuzzptx.perf import per_object

from .ir import CallArgs, Directive, Function, Instr, Label, Module, Reg, Scope, Sym

TERMINATORS = frozenset(("bra", "brx", "ret", "exit", "trap"))


class CfgError(FuzzptxError):
    """A branch to a label the function does not define."""


@dataclass(frozen=True)
class Block:
    index: int
    label: str | None
    instrs: tuple[Instr, ...]
    succs: tuple[int, ...]  # branch target(s) first, then the fall-through block
    preds: tuple[int, ...]


@dataclass(frozen=True)
class Loop:
    """A natural loop: ``header`` dominates every block of ``body`` (header included)."""

    header: int
    body: tuple[int, ...]
    latches: tuple[int, ...]  # sources of the back edges into the header


@dataclass(frozen=True)
class CFG:
    blocks: tuple[Block, ...]

    @functools.cached_property
    def _reachable(self) -> frozenset[int]:
        seen = {0} if self.blocks else set()
        stack = list(seen)
        while stack:
            for s in self.blocks[stack.pop()].succs:
                if s not in seen:
                    seen.add(s)
                    stack.append(s)
        return frozenset(seen)

    def reachable(self) -> frozenset[int]:
        """Blocks reachable from the entry (block 0)."""
        return self._reachable

    @functools.cached_property
    def _dominators(self) -> tuple[frozenset[int], ...]:
        n = len(self.blocks)
        reach = self._reachable
        full = (1 << n) - 1
        dom = [full] * n
        if n:
            dom[0] = 1
        changed = True
        while changed:
            changed = False
            for b in range(1, n):
                if b not in reach:
                    continue
                new = full
                for p in self.blocks[b].preds:
                    if p in reach:
                        new &= dom[p]
                new |= 1 << b
                if new != dom[b]:
                    dom[b] = new
                    changed = True
        return tuple(
            frozenset(i for i in range(n) if d >> i & 1) if b in reach else frozenset() for b, d in enumerate(dom)
        )

    def dominators(self, index: int) -> frozenset[int]:
        """Blocks that dominate ``index`` (itself included); empty for an unreachable block."""
        return self._dominators[index]

    def back_edges(self) -> tuple[tuple[int, int], ...]:
        """Edges ``(src, header)`` whose target dominates their source."""
        out = []
        for b in self.blocks:
            if b.index in self._reachable:
                for s in b.succs:
                    if s in self._dominators[b.index]:
                        out.append((b.index, s))
        return tuple(out)

    def loops(self) -> tuple[Loop, ...]:
        """Natural loops, one per header (back edges to one header merged), ordered by header."""
        latches: dict[int, list[int]] = {}
        for src, hdr in self.back_edges():
            latches.setdefault(hdr, []).append(src)
        out = []
        for hdr in sorted(latches):
            body = {hdr}
            stack = [l for l in latches[hdr] if l != hdr]
            body.update(stack)
            while stack:
                for p in self.blocks[stack.pop()].preds:
                    if p not in body and p in self._reachable:
                        body.add(p)
                        stack.append(p)
            out.append(Loop(hdr, tuple(sorted(body)), tuple(sorted(latches[hdr]))))
        return tuple(out)

    def loop_depth(self, index: int) -> int:
        """How many natural loops contain block ``index``."""
        return sum(index in lp.body for lp in self.loops())

    def instructions(self) -> tuple[Instr, ...]:
        return tuple(i for b in self.blocks for i in b.instrs)


# ------------------------------------------------------------------ building


def _flatten(body, path: tuple[int, ...], out: list, counter: list[int]) -> None:
    for stmt in body:
        if type(stmt) is Instr:  # nearly every statement: the isinstance chain below, short-cut
            out.append((stmt, path))
        elif isinstance(stmt, Scope):
            counter[0] += 1
            _flatten(stmt.body, path + (counter[0],), out, counter)
        elif isinstance(stmt, (Instr, Label, Directive)):
            out.append((stmt, path))


def base_of(ins: Instr) -> str:
    """``ins.base``, filling the cached_property's slot in the instance dict directly (where the
    property keeps it): its first lookup through the descriptor (a lock, then the split) cost
    about a microsecond per instruction, most of building the CFG of a fuzz program."""
    d = ins.__dict__
    b = d.get("base")
    if b is None:
        b = d["base"] = ins.opcode.partition(".")[0]  # == split(".", 1)[0], at half the cost
    return b


def _target_name(instr: Instr) -> str | None:
    for op in instr.operands:
        if isinstance(op, Sym):
            return op.name
    return None


@per_object(64)
def build_cfg(fn: Function) -> CFG:
    """Basic blocks of ``fn`` (a declaration gives an empty CFG).

    Kept per function object (both are immutable), so the checker and the reference judging
    one parsed program build it once (~3 ms for a fuzz program of ~500 instructions)."""
    return _build_cfg(fn)


def _build_cfg(fn: Function) -> CFG:
    if fn.body is None:
        return CFG(())
    flat: list = []
    _flatten(fn.body, (0,), flat, [0])

    labels: list[str | None] = []
    instrs: list[list[Instr]] = []
    where: dict[tuple[int, str], int] = {}  # (scope id, label) -> block
    tables: dict[tuple[int, str], list[str]] = {}  # .branchtargets lists, by their label
    jumps: list[tuple[int, Instr, tuple[int, ...]]] = []  # (block, terminator, scope path)
    open_block = False
    last_label: tuple[tuple[int, str], int] | None = None
    block: list[Instr] = []  # the open block's instructions (when open_block)
    for stmt, path in flat:
        if type(stmt) is Instr:  # nearly every statement: this loop runs once per instruction
            last_label = None
            if not open_block:
                labels.append(None)
                block = []
                instrs.append(block)
                open_block = True
            block.append(stmt)
            d = stmt.__dict__  # base_of(stmt), inlined
            base = d.get("base")
            if base is None:
                base = d["base"] = stmt.opcode.partition(".")[0]
            if base in TERMINATORS:
                jumps.append((len(labels) - 1, stmt, path))
                open_block = False
            continue
        if isinstance(stmt, Label):  # every label starts a block (consecutive labels: empty blocks)
            labels.append(stmt.name)
            block = []
            instrs.append(block)
            open_block = True
            key = (path[-1], stmt.name)
            if key in where:
                raise CfgError(f"label {stmt.name!r} defined twice", *_loc(stmt))
            where[key] = len(labels) - 1
            last_label = (key, len(labels) - 1)
            continue
        if isinstance(stmt, Directive):
            if stmt.text.startswith(".branchtargets") and last_label is not None:
                names = stmt.text[len(".branchtargets") :].rstrip(";").split(",")
                tables[last_label[0]] = [n.strip() for n in names if n.strip()]
            continue
        last_label = None  # an instance of an Instr subclass: as above
        if not open_block:
            labels.append(None)
            block = []
            instrs.append(block)
            open_block = True
        block.append(stmt)
        if base_of(stmt) in TERMINATORS:
            jumps.append((len(labels) - 1, stmt, path))
            open_block = False
    if not labels:
        labels.append(None)
        instrs.append([])

    n = len(labels)
    succs: list[list[int]] = [[] for _ in range(n)]
    ends = {b: (ins, path) for b, ins, path in jumps}

    def resolve(name: str | None, ins: Instr, path: tuple[int, ...], table: bool = False) -> int | list[str]:
        for sid in reversed(path):
            key = (sid, name)
            if table and key in tables:
                return tables[key]
            if not table and key in where:
                return where[key]
        what = ".branchtargets table" if table else "label"
        raise CfgError(f"{ins.opcode}: {what} {name!r} is not defined in {fn.name!r}", *_loc(ins))

    for b in range(n):
        fall = [b + 1] if b + 1 < n else []
        end = ends.get(b)
        if end is None or instrs[b][-1] is not end[0]:
            succs[b] = fall
            continue
        ins, path = end
        base = ins.base
        if base == "bra":
            targets = [resolve(_target_name(ins), ins, path)]
        elif base == "brx":
            names = resolve(_target_name(ins), ins, path, table=True)
            targets = [resolve(nm, ins, path) for nm in names]
        else:  # ret / exit / trap
            targets = []
        if ins.guard is not None:
            targets += fall
        succs[b] = list(dict.fromkeys(targets))

    preds: list[list[int]] = [[] for _ in range(n)]
    for b, ss in enumerate(succs):
        for s in ss:
            if b not in preds[s]:
                preds[s].append(b)
    return CFG(
        tuple(Block(b, labels[b], tuple(instrs[b]), tuple(succs[b]), tuple(preds[b])) for b in range(n))
    )


def _loc(stmt) -> tuple:
    loc = getattr(stmt, "loc", None)
    return (loc.file, loc.line, loc.col) if loc is not None else ()


# ------------------------------------------------------------------ calls


def call_targets(fn: Function) -> tuple[str, ...]:
    """Names of the functions ``fn`` calls directly, in first-call order (indirect calls are skipped)."""
    out: dict[str, None] = {}
    for ins in fn.instructions():
        if ins.base != "call":
            continue
        ops = ins.operands
        k = 1 if ops and isinstance(ops[0], CallArgs) else 0
        if k < len(ops) and isinstance(ops[k], Sym):
            out.setdefault(ops[k].name, None)
    return tuple(out)


def has_indirect_call(fn: Function) -> bool:
    """True if ``fn`` calls through a register (``call (r), %rd1, (a), proto;``)."""
    for ins in fn.instructions():
        if ins.base == "call":
            ops = ins.operands
            k = 1 if ops and isinstance(ops[0], CallArgs) else 0
            if k < len(ops) and isinstance(ops[k], Reg):
                return True
    return False


def call_graph(module: Module) -> dict[str, tuple[str, ...]]:
    """Direct call edges of every defined function in ``module``."""
    return {f.name: call_targets(f) for f in module.functions() if f.body is not None}
