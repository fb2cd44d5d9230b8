"""ISA layer: each tensor-core instruction against the catalogue (``fuzzptx.isa``).

Rule ids: ``isa.<family>.shape|types|qualifier`` (no form has this opcode),
``isa.operands.count``, ``isa.operands.vector-size``, ``isa.operands.kind``, ``isa.reg.type``,
``isa.reg.undeclared``, ``isa.imm.<role>`` (``isa.imm.scale-d``), ``isa.pred.type``,
``isa.target``, ``isa.version``.
"""
from __future__ import annotations

import functools
import re

from fuzzptx import isa
from fuzzptx.isa import ELEMENT_BITS, Form, OperandSpec
from fuzzptx.ptx.ir import Addr, Function, Imm, Instr, Module, Reg, Vec, registers_in

from .findings import Sink, line_of
from .regs import declared_types, special_type

TENSOR_PREFIXES = ("wgmma", "mma", "wmma", "ldmatrix", "stmatrix")
_TYPE_TOKENS = frozenset(ELEMENT_BITS) | {"f16x2", "bf16x2", "f64"}
_SHAPE_RE = re.compile(r"m\d+n\d+(k\d+)?$")


def is_tensor(instr: Instr) -> bool:
    return instr.base in TENSOR_PREFIXES


def family_of(opcode: str) -> str:
    for prefix, fam in (("wgmma.mma_async.sp", "wgmma.sp"), ("wgmma.mma_async", "wgmma"),
                        ("wgmma.fence", "wgmma.fence"), ("wgmma.commit_group", "wgmma.commit_group"),
                        ("wgmma.wait_group", "wgmma.wait_group"), ("mma.sp", "mma.sp"),
                        ("wmma.load", "wmma.load"), ("wmma.store", "wmma.store"), ("wmma.mma", "wmma.mma")):
        if opcode.startswith(prefix):
            return fam
    return opcode.split(".", 1)[0]


def _rule_family(fam: str) -> str:
    return fam.split(".", 1)[0]


@functools.lru_cache(maxsize=None)
def _split(opcode: str) -> tuple[str, tuple[str, ...], frozenset[str]]:
    """(shape, type tokens in order, other qualifiers) of an opcode's modifiers."""
    shape, types, quals = "", [], set()
    for m in opcode.split(".")[1:]:
        if _SHAPE_RE.match(m):
            shape = m
        elif m in _TYPE_TOKENS:
            types.append(m)
        else:
            quals.add(m)
    return shape, tuple(types), frozenset(quals)


def _ptx_name(fam: str) -> str:
    return {"wgmma": "wgmma.mma_async", "wgmma.sp": "wgmma.mma_async.sp"}.get(fam, fam)


def diagnose_opcode(instr: Instr, sink: Sink) -> None:
    """Say which part of an opcode no catalogue form has: shape, type mix or qualifiers."""
    rule, message = _diagnosis(instr.opcode)
    sink.add(rule, "error", line_of(instr), message)


@functools.lru_cache(maxsize=4096)
def _diagnosis(opcode: str) -> tuple[str, str]:
    fam = family_of(opcode)
    cands = isa.forms(fam) if fam in isa.families() else ()
    rf = _rule_family(fam)
    if not cands:
        return f"isa.{rf}.opcode", f"'{opcode}' is not a tensor-core instruction the catalogue knows"
    shape, types, quals = _split(opcode)
    split = [(f, *_split(f.opcode)) for f in cands]
    name = _ptx_name(fam)
    if any(s for _, s, _, _ in split) and not any(s == shape for _, s, _, _ in split):
        typed = sorted({s for _, s, t, _ in split if t == types}, key=_shape_key)
        if not shape:
            msg = f"{name} needs a shape qualifier (.mMnNkK)"
        else:
            msg = f"no {name} form has shape .{shape}"
        if typed:
            msg += f"; with .{'.'.join(types)} the shapes are {_shape_summary(typed)}"
        return f"isa.{rf}.shape", msg
    same_shape = [(f, t, q) for f, s, t, q in split if s == shape]
    if not any(t == types for _, t, _ in same_shape):
        legal = sorted({"." + ".".join(t) for _, t, _ in same_shape})
        shown = ", ".join(legal[:12]) + (", ..." if len(legal) > 12 else "")
        return f"isa.{rf}.types", f"{name}.{shape} has no form with types .{'.'.join(types)}; legal type lists: {shown}"
    best = min((q for _, t, q in same_shape if t == types), key=lambda q: len(q ^ quals))
    missing, extra = sorted(best - quals), sorted(quals - best)
    parts = []
    if missing:
        parts.append("missing " + ", ".join("." + m for m in missing))
    if extra:
        parts.append("unexpected " + ", ".join("." + m for m in extra))
    return f"isa.{rf}.qualifier", f"{name}.{shape}.{'.'.join(types)}: qualifiers do not match any form ({'; '.join(parts)})"


def _shape_key(s: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", s))


def _shape_summary(shapes: list[str]) -> str:
    if len(shapes) <= 6:
        return ", ".join("." + s for s in shapes)
    return f".{shapes[0]}, .{shapes[1]}, ... .{shapes[-1]} ({len(shapes)} shapes)"


def _role_name(role: str) -> str:
    return role.removeprefix("imm_").replace("_", "-")


def _reg_type(name: str, types: dict[str, str]) -> str | None:
    return types.get(name) or special_type(name)


def check_operands(instr: Instr, form: Form, types: dict[str, str], sink: Sink) -> None:
    line = line_of(instr)
    ops = instr.operands
    required = [s for s in form.operands if not s.optional]
    if not len(required) <= len(ops) <= len(form.operands):
        want = str(len(required)) if len(required) == len(form.operands) else f"{len(required)}-{len(form.operands)}"
        roles = ", ".join(s.role for s in form.operands)
        sink.add("isa.operands.count", "error", line,
                 f"{instr.opcode} takes {want} operands ({roles}), found {len(ops)}")
        return
    for spec, op in zip(form.operands, ops):
        _check_operand(instr, spec, op, types, sink)


def _check_reg(instr: Instr, spec: OperandSpec, reg, what: str, types: dict[str, str], sink: Sink) -> None:
    line = line_of(instr)
    if not isinstance(reg, Reg):
        sink.add("isa.operands.kind", "error", line, f"{what} must be a register, found '{reg}'")
        return
    t = _reg_type(reg.name, types)
    if t is None:
        sink.add("isa.reg.undeclared", "error", line, f"{what} {reg.name} is not a declared register")
    elif spec.reg_types and t not in spec.reg_types:
        sink.add("isa.reg.type", "error", line,
                 f"{what} {reg.name} is declared {t}; this operand takes {' or '.join(spec.reg_types)}")


def _check_operand(instr: Instr, spec: OperandSpec, op, types: dict[str, str], sink: Sink) -> None:
    line = line_of(instr)
    role = _role_name(spec.role)
    if spec.kind == "vec":
        items = op.items if isinstance(op, Vec) else (op,) if spec.count == 1 and isinstance(op, Reg) else None
        if items is None:
            sink.add("isa.operands.kind", "error", line, f"operand {role} must be a vector {{...}} of {spec.count} registers")
            return
        if len(items) != spec.count:
            sink.add("isa.operands.vector-size", "error", line,
                     f"operand {role} of {instr.opcode} needs {spec.count} registers, found {len(items)}")
            return
        allowed = spec.reg_types
        if allowed and all(type(item) is Reg and types.get(item.name) in allowed for item in items):
            return  # the usual case, without a call per register (wgmma fragments: up to 128)
        for k, item in enumerate(items):
            _check_reg(instr, spec, item, f"{role}[{k}]", types, sink)
    elif spec.kind == "reg":
        _check_reg(instr, spec, op, f"operand {role}", types, sink)
    elif spec.kind in ("imm", "pred_or_imm"):
        if isinstance(op, Reg) and spec.kind == "pred_or_imm":
            _check_reg(instr, spec, op, f"operand {role}", types, sink)
        elif isinstance(op, Imm):
            if spec.values and op.value not in spec.values:
                vals = " or ".join(str(v) for v in spec.values) if len(spec.values) <= 4 else \
                    f"{min(spec.values)}..{max(spec.values)}"
                sink.add(f"isa.imm.{role}", "error", line, f"{role} is {op.text}; it must be {vals}")
        else:
            kind = "a .pred register or an immediate" if spec.kind == "pred_or_imm" else "an immediate"
            sink.add("isa.operands.kind", "error", line, f"operand {role} must be {kind}, found '{op}'")
    elif spec.kind == "addr":
        if not isinstance(op, Addr):
            sink.add("isa.operands.kind", "error", line, f"operand {role} must be an address [..], found '{op}'")
        elif isinstance(op.base, Reg):
            t = _reg_type(op.base.name, types)
            if t is None:
                sink.add("isa.reg.undeclared", "error", line, f"address register {op.base.name} is not declared")


def _version(text: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _target_rank(target: str) -> tuple[int, int]:
    digits = "".join(ch for ch in target if ch.isdigit())
    return (int(digits) if digits else 0), 1 if target.endswith("a") else 0


def _target_ok(module_target: str, need: str) -> bool:
    have = module_target.split(",")[0].strip()
    if need.endswith("a"):
        return have == need
    return _target_rank(have) >= _target_rank(need)


def check_instr(module: Module, instr: Instr, types: dict[str, str], sink: Sink) -> None:
    line = line_of(instr)
    if instr.guard is not None:
        t = _reg_type(instr.guard.reg.name, types)
        if t is not None and t != ".pred":
            sink.add("isa.pred.type", "error", line, f"guard {instr.guard.reg.name} is declared {t}, not .pred")
    form = isa.form_for(instr)
    if form is None:
        diagnose_opcode(instr, sink)
        return
    check_operands(instr, form, types, sink)
    if not _target_ok(module.target, form.target):
        sink.add("isa.target", "error", line,
                 f"{instr.opcode.split('.sync')[0]} requires .target {form.target}; the module declares {module.target}")
    if _version(module.version) < form.min_ptx:
        need = ".".join(str(v) for v in form.min_ptx)
        sink.add("isa.version", "error", line,
                 f"{instr.opcode.split('.sync')[0]} requires .version {need} or later; the module declares {module.version}")


# Minimum PTX version per target (PTX ISA release notes; sm_90a/sm_90 checked against ptxas 13.0.88).
TARGET_MIN_PTX = {"sm_70": (6, 0), "sm_72": (6, 1), "sm_75": (6, 3), "sm_80": (7, 0), "sm_86": (7, 1),
                  "sm_87": (7, 4), "sm_89": (7, 8), "sm_90": (7, 8), "sm_90a": (8, 0)}
# Non-tensor instructions the pipeline uses, with the PTX version ptxas 13.0.88 asks for (measured).
OTHER_MIN_PTX = {"fence.proxy.async": (8, 0)}


def target_line(module: Module) -> int | None:
    """Line of ``.target`` in a module written the usual way (preamble, .version, .target)."""
    path = next((getattr(i, "loc", None) for i in module.items if getattr(i, "loc", None)), None)
    return len(module.preamble) + 2 if path is not None else None


def check_module_header(module: Module, sink: Sink) -> None:
    target = module.target.split(",")[0].strip()
    need = TARGET_MIN_PTX.get(target)
    if need is not None and _version(module.version) < need:
        sink.add("isa.version", "error", target_line(module),
                 f"PTX .version {module.version} does not support .target {target} "
                 f"(needs {need[0]}.{need[1]} or later)")


def _check_selectors(instr: Instr, types: dict[str, str], sink: Sink) -> None:
    """``%name.x`` where ``%name`` is a declared scalar register (a register named like a special
    register, e.g. ``%tid``, shadows it): ptxas reads ``.x`` as a video selector and rejects it."""
    for op in instr.operands:
        for reg in registers_in(op):
            stem, dot, sel = reg.name.partition(".")
            if dot and stem in types and not types[stem].startswith(".v") and reg.name not in types:
                sink.add("isa.reg.selector", "error", line_of(instr),
                         f"Unknown video selector '.{sel}': {stem} is declared as a scalar {types[stem]} "
                         f"register here, so {reg.name} is not the special register")


def check_function(module: Module, fn: Function, sink: Sink) -> None:
    types = declared_types(fn)
    have = _version(module.version)
    shadow = any(special_type(n) is not None for n in types)
    for instr in fn.instructions():
        if shadow:
            _check_selectors(instr, types, sink)
        if is_tensor(instr):
            check_instr(module, instr, types, sink)
            continue
        for prefix, need in OTHER_MIN_PTX.items():
            if instr.opcode.startswith(prefix) and have < need:
                sink.add("isa.version", "error", line_of(instr),
                         f"{prefix} requires .version {need[0]}.{need[1]} or later; the module declares {module.version}")
