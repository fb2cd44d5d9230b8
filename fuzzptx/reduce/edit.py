"""IR edits the reducer's driver and passes share: statements numbered in order (scopes flattened),
a function rebuilt with some dropped or substituted, the type an instruction writes, what a
deletion may take, dead code, and the names a function uses."""
from __future__ import annotations

from dataclasses import replace

from fuzzptx.program import Program
from fuzzptx.ptx.ir import Function, Instr, Label, Scope, Statement, Sym, Vec, registers_in, walk
from fuzzptx.kernels import default_immediate
from fuzzptx.ptx.ir import Imm
from fuzzptx.ptx.dataflow import defs_uses
from fuzzptx.ptx.ir import Addr, CallArgs


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


def edit_function(program: Program, fname: str, drop: set[int] = frozenset(), subst: dict[int, Statement] | None = None) -> Program:
    items = []
    for item in program.module.items:
        if isinstance(item, Function) and item.name == fname and item.body is not None:
            item = replace(item, body=_rebuild(item.body, [0], set(drop), subst or {}))
        items.append(item)
    return replace(program, module=replace(program.module, items=tuple(items)))


def statements(fn: Function) -> dict[int, Statement]:
    out: dict[int, Statement] = {}
    _number(fn.body or (), [0], out)
    return out


def delete(program: Program, victims: list[tuple[str, int]]) -> Program:
    by_fn: dict[str, set[int]] = {}
    for fname, i in victims:
        by_fn.setdefault(fname, set()).add(i)
    for fname, ids in by_fn.items():
        program = edit_function(program, fname, ids)
    return program


EFFECTS = ("st", "stmatrix", "wmma", "wgmma", "bar", "barrier", "membar", "fence", "bra", "brx", "call", "ret",
            "exit", "trap", "atom", "red", "cp", "mbarrier", "setmaxnreg", "griddepcontrol")


_TYPES = frozenset("b8 b16 b32 b64 u8 u16 u32 u64 s8 s16 s32 s64 f16 f32 f64 pred".split())


def type_of(ins: Instr) -> str | None:
    """The instruction's last type modifier (``add.u64`` -> ``u64``), the type of its result."""
    for m in reversed(ins.modifiers):
        if m in _TYPES:
            return m
    return None


def as_form(ins: Instr, by_role: dict, form) -> Instr | None:
    """``ins`` rewritten as catalogue ``form``: operands of the same role carried over, immediates
    the form adds set to their defaults; None where the form needs an operand ``ins`` lacks."""
    ops = []
    for spec in form.operands:
        if spec.role in by_role:
            ops.append(by_role[spec.role])
        elif spec.kind in ("imm", "pred_or_imm"):
            ops.append(Imm.of(default_immediate(spec)))
        else:
            return None
    return replace(ins, opcode=form.opcode, operands=tuple(ops))


def write_counts(sts: dict[int, Statement]) -> dict[str, int]:
    """How many instructions write each register (a register written once can be substituted)."""
    writes: dict[str, int] = {}
    for st in sts.values():
        if isinstance(st, Instr):
            for d in defs_uses(st)[0]:
                writes[d.name] = writes.get(d.name, 0) + 1
    return writes


def removable(program: Program) -> list[tuple[str, int]]:
    """(function, statement id) of every instruction or label a deletion may take."""
    out = []
    for fn in program.module.functions():
        if fn.body is None:
            continue
        for i, st in statements(fn).items():
            if isinstance(st, (Instr, Label)) and not (isinstance(st, Instr) and st.base in ("ret", "exit")):
                out.append((fn.name, i))
    return out


def dead_code(program: Program, keep: frozenset[int] = frozenset()) -> Program:
    """Instructions with no effect but their register results, none of which is read (to a fixed point);
    ``keep``: ids of instruction objects to leave (dead already where a signature needs them)."""
    while True:
        used: set[str] = set()
        for fn in program.module.functions():
            for ins in fn.instructions():
                used |= {r.name for r in defs_uses(ins)[1]}
        victims = []
        for fn in program.module.functions():
            if fn.body is None:
                continue
            for i, st in statements(fn).items():
                if isinstance(st, Instr) and st.base not in EFFECTS and not st.opcode.startswith("wmma") and id(st) not in keep:
                    defs = defs_uses(st)[0]
                    if defs and not any(d.name in used for d in defs):
                        victims.append((fn.name, i))
        if not victims:
            return program
        program = delete(program, victims)


def dead_ids(program: Program) -> frozenset[int]:
    """Ids of the instructions ``dead_code`` would remove from ``program``."""
    left = {id(i) for f in dead_code(program).module.functions() for i in f.instructions()}
    return frozenset(id(i) for f in program.module.functions() for i in f.instructions() if id(i) not in left)


def used_names(fn: Function) -> set[str]:
    """Registers and symbols the function's instructions name (what ``cleanup`` and ``Decls`` keep)."""
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
    if isinstance(op, Sym):
        names.add(op.name)
    elif isinstance(op, Addr) and isinstance(op.base, Sym):
        names.add(op.base.name)
    elif isinstance(op, (Vec, CallArgs)):
        for it in op.items:
            _collect_syms(it, names)
