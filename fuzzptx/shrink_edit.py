"""IR edits the reducer's passes share: statements numbered in order (scopes flattened),
a function rebuilt with some dropped or substituted, and the type an instruction writes."""
from __future__ import annotations

from dataclasses import replace

from fuzzptx.program import Program
from fuzzptx.ptx.ir import Function, Instr, Scope, Statement


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


def _delete(program: Program, victims: list[tuple[str, int]]) -> Program:
    by_fn: dict[str, set[int]] = {}
    for fname, i in victims:
        by_fn.setdefault(fname, set()).add(i)
    for fname, ids in by_fn.items():
        program = _edit_function(program, fname, ids)
    return program


_EFFECTS = ("st", "stmatrix", "wmma", "wgmma", "bar", "barrier", "membar", "fence", "bra", "brx", "call", "ret",
            "exit", "trap", "atom", "red", "cp", "mbarrier", "setmaxnreg", "griddepcontrol")


_TYPES = frozenset("b8 b16 b32 b64 u8 u16 u32 u64 s8 s16 s32 s64 f16 f32 f64 pred".split())


def _type_of(ins: Instr) -> str | None:
    """The instruction's last type modifier (``add.u64`` -> ``u64``), the type of its result."""
    for m in reversed(ins.modifiers):
        if m in _TYPES:
            return m
    return None


def _as_form(ins: Instr, by_role: dict, form) -> Instr | None:
    """``ins`` rewritten as catalogue ``form``: operands of the same role carried over, immediates
    the form adds set to their defaults; None where the form needs an operand ``ins`` lacks."""
    from fuzzptx.kernels import default_immediate
    from fuzzptx.ptx.ir import Imm

    ops = []
    for spec in form.operands:
        if spec.role in by_role:
            ops.append(by_role[spec.role])
        elif spec.kind in ("imm", "pred_or_imm"):
            ops.append(Imm.of(default_immediate(spec)))
        else:
            return None
    return replace(ins, opcode=form.opcode, operands=tuple(ops))


def _write_counts(sts: dict[int, Statement]) -> dict[str, int]:
    """How many instructions write each register (a register written once can be substituted)."""
    from fuzzptx.ptx.dataflow import defs_uses

    writes: dict[str, int] = {}
    for st in sts.values():
        if isinstance(st, Instr):
            for d in defs_uses(st)[0]:
                writes[d.name] = writes.get(d.name, 0) + 1
    return writes
