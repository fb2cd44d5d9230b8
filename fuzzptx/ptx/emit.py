"""IR -> PTX text.  ``parse(emit(m)) == m`` for every module the framework builds."""
from __future__ import annotations

from dataclasses import replace

from .ir import (
    Addr,
    CallArgs,
    Directive,
    Function,
    Instr,
    Label,
    Module,
    Operand,
    Param,
    Reg,
    RegDecl,
    Scope,
    SrcLoc,
    Statement,
    TensorAddr,
    VarDecl,
    Vec,
)

INDENT = "\t"


def emit_operand(op: Operand) -> str:
    """One operand as PTX.  A negative address offset is written ``[%r1+-8]``, as nvcc
    writes it: ptxas 13.0 rejects ``[%r1-8]`` ("Parsing error near '-'")."""
    t = type(op)
    if t is Reg:  # most operands: the fast way first
        return op.name
    if t is Vec and all(type(i) is Reg for i in op.items):  # accumulator and fragment vectors
        return "{" + ", ".join([i.name for i in op.items]) + "}"
    if isinstance(op, Addr):
        if op.base is None or op.offset == 0:
            return str(op)
        return f"[{op.base}+{op.offset}]"
    if isinstance(op, TensorAddr):
        return f"[{op.base}, {{" + ", ".join(emit_operand(c) for c in op.coords) + "}]"
    if isinstance(op, (Vec, CallArgs)):
        inner = ", ".join(emit_operand(i) for i in op.items)
        return "{" + inner + "}" if isinstance(op, Vec) else "(" + inner + ")"
    return str(op)


def emit_instr(instr: Instr) -> str:
    guard = f"{instr.guard} " if instr.guard else ""
    if not instr.operands:
        return f"{guard}{instr.opcode};"
    return f"{guard}{instr.opcode} " + ", ".join([emit_operand(o) for o in instr.operands]) + ";"


def _dims(dims: tuple[int | None, ...]) -> str:
    return "".join(f"[{'' if d is None else d}]" for d in dims)


def emit_var(v: VarDecl) -> str:
    parts = [p for p in (v.linkage, v.space) if p]
    if v.align is not None:
        parts.append(f".align {v.align}")
    if v.vector:
        parts.append(v.vector)
    parts.append(v.type)
    text = " ".join(parts) + f" {v.name}{_dims(v.dims)}"
    if v.init is not None:
        text += f" = {v.init}"
    return text + ";"


def emit_regdecl(d: RegDecl) -> str:
    head = ".reg " + (f"{d.vector} " if d.vector else "") + d.type
    if d.count is not None:
        return f"{head} {d.names[0]}<{d.count}>;"
    return f"{head} " + ", ".join(d.names) + ";"


def emit_param(p: Param) -> str:
    # PTX order: .param [.align N] .type [.ptr[.space][.align N]] name  (the .ptr part follows the type)
    parts = [p.space]
    if p.align is not None:
        parts.append(f".align {p.align}")
    parts.append(p.type)
    if p.ptr:
        parts.append(p.ptr)
    return " ".join(parts) + f" {p.name}{_dims(p.dims)}"


def _statement_lines(stmt: Statement, depth: int) -> list[str]:
    pad = INDENT * depth
    if isinstance(stmt, Instr):
        return [pad + emit_instr(stmt)]
    if isinstance(stmt, Label):
        return [f"{stmt.name}:"]
    if isinstance(stmt, RegDecl):
        return [pad + emit_regdecl(stmt)]
    if isinstance(stmt, VarDecl):
        return [pad + emit_var(stmt)]
    if isinstance(stmt, Directive):
        return [pad + stmt.text]
    if isinstance(stmt, Scope):
        lines = [pad + "{"]
        for s in stmt.body:
            lines += _statement_lines(s, depth + 1)
        return lines + [pad + "}"]
    raise TypeError(f"not a statement: {stmt!r}")


def emit_function(f: Function) -> list[str]:
    head = " ".join(p for p in (f.linkage, "." + f.kind) if p)
    rets = ""
    if f.returns:
        rets = " (" + ", ".join(emit_param(p) for p in f.returns) + ")"
    sig = f"{head}{rets} {f.name}"
    lines: list[str] = []
    if f.params or f.kind == "func":
        if f.params:
            lines.append(sig + "(")
            for i, p in enumerate(f.params):
                lines.append(INDENT + emit_param(p) + ("," if i + 1 < len(f.params) else ""))
            lines.append(")")
        else:
            lines.append(sig + "()")
    else:
        lines.append(sig + "()")
    lines += list(f.attributes)
    if f.body is None:
        lines[-1] += ";"
        return lines
    lines.append("{")
    for s in f.body:
        lines += _statement_lines(s, 1)
    lines.append("}")
    return lines


def _head(module: Module) -> list[str]:
    """Preamble comments, then .version, .target and .address_size (none where the input had none:
    ptxas then takes the host's 64 bits, where a written 32 is refused for sm_90)."""
    lines = [f"// {p}" if p else "//" for p in module.preamble]
    size = [] if module.address_size is None else [f".address_size {module.address_size}"]
    return lines + [f".version {module.version}", f".target {module.target}", *size, ""]


def emit(module: Module) -> str:
    """The module as PTX text, preamble comments first."""
    lines = _head(module)
    for item in module.items:
        if isinstance(item, Function):
            lines += emit_function(item)
            lines.append("")
        elif isinstance(item, VarDecl):
            lines.append(emit_var(item))
        elif isinstance(item, Directive):
            lines.append(item.text)
        else:
            raise TypeError(f"not a module item: {item!r}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- emission with source locations

_new = object.__new__


def _at(stmt, loc: SrcLoc):
    """A copy of a frozen IR node with ``loc`` set (its memoised answers come along: they depend
    on the compared fields only); the original may be shared (cached strategy sections)."""
    o = _new(type(stmt))
    o.__dict__.update(stmt.__dict__)
    o.__dict__["loc"] = loc
    return o


def _located_body(body, depth: int, file: str, lines: list[str]) -> tuple:
    """``_statement_lines`` over a body, appending to ``lines`` (a statement's line number is the
    length of ``lines`` once it is in), and returning the statements located where they land."""
    out = []
    for stmt in body:
        if isinstance(stmt, Scope):
            lines.append(INDENT * depth + "{")
            loc = SrcLoc(file, len(lines), depth + 1)
            inner = _located_body(stmt.body, depth + 1, file, lines)
            lines.append(INDENT * depth + "}")
            out.append(_at(replace(stmt, body=inner), loc))
            continue
        if type(stmt) is Instr:
            text = emit_instr(stmt)
            lines.append(INDENT * depth + text)
            out.append(_at_instr(stmt, text, SrcLoc(file, len(lines), depth + 1)))
            continue
        lines.append(_statement_lines(stmt, depth)[0])
        out.append(_at(stmt, SrcLoc(file, len(lines), 1 if isinstance(stmt, Label) else depth + 1)))
    return tuple(out)


# Instruction text -> the first located instruction emitted with it (this process).  The judges
# memoise value-only answers in an instruction's ``__dict__`` (its defs/uses, wgmma roles, base
# name); a campaign process emits the same instruction text in program after program, so a new
# instruction starts with the answers already worked out for its text (~10% of the checker).
_BY_TEXT: dict[str, Instr] = {}


def _at_instr(stmt: Instr, text: str, loc: SrcLoc) -> Instr:
    """``_at`` for an instruction, seeded with the memoised answers of earlier instructions of the
    same text (its own fields win: the same text is the same value, but that is not relied on)."""
    o = _new(Instr)
    d = o.__dict__
    first = _BY_TEXT.get(text)
    if first is None:
        if len(_BY_TEXT) >= 50_000:
            _BY_TEXT.clear()
        _BY_TEXT[text] = o
    else:
        d.update(first.__dict__)
    d.update(stmt.__dict__)
    d["loc"] = loc
    d["_text"] = text  # a cheap by-value key for memo tables (``oracles.checker.regs``)
    return o


def emit_located(module: Module, file: str = "<program>") -> tuple[str, Module]:
    """``emit(module)`` and the module as ``parse`` would read it back from that text (every
    statement's and function's ``loc`` its line there), without parsing: the campaign's judges
    need the located program, and parsing it back cost 5 ms of every program's ~30 ms of
    Python judging.  ``tests/test_emit_located.py`` holds it to ``parse`` on generated programs."""
    lines = _head(module)
    items = []
    for item in module.items:
        if isinstance(item, Function):
            head = emit_function(replace(item, body=None if item.body is None else ()))
            start = len(lines) + 1
            if item.body is None:
                lines += head
                items.append(_at(item, SrcLoc(file, start, 1)))
            else:
                lines += head[:-1]  # up to and with "{"; the closing "}" comes after the body
                body = _located_body(item.body, 1, file, lines)
                lines.append("}")
                items.append(_at(replace(item, body=body), SrcLoc(file, start, 1)))
            lines.append("")
        elif isinstance(item, (VarDecl, Directive)):
            lines.append(emit_var(item) if isinstance(item, VarDecl) else item.text)
            items.append(_at(item, SrcLoc(file, len(lines), 1)))
        else:
            raise TypeError(f"not a module item: {item!r}")
    return "\n".join(lines) + "\n", replace(module, items=tuple(items))
