"""Mutants of real kernels: programs that start from what Triton, CUTLASS and nvcc emit (the
kernels of ``tests/data``, or a user's directory) rather than from scratch.

A mutant is its parent's module with one to three semantics-aware edits, each one small class
(cvise-style), each keeping the kernel's signature -- so the parent's launch (grid, block,
buffers and scalars: ``fuzzptx.launch`` resolves it once per file) still fits, and each keeping
the program well-formed (types of the registers it touches read off their declarations):

- ``Immediate``: an integer immediate operand of an arithmetic or compare instruction takes
  another value of the kind such operands hold (0, 1, a small number, a power of two, the
  value +-1, for a shift a shift amount) -- address offsets, masks, strides, loop bounds;
- ``Reorder``: two adjacent register-only instructions with no dependence either way swap places
  (the order the compiler's scheduler chose for a tile's arithmetic is not the only one);
- ``Epilogue``: after an f32 instruction, code an epilogue puts on its result (scale, bias,
  ReLU ``max``, ``ex2.approx``, ``rcp.approx``, a round trip through f16/bf16).

Where a mutant reads memory outside its buffers (a bound moved), the reference says so: such a
program still goes to ptxas, the SASS judge and the checker.  No edit writes a register a
wgmma has in flight: only an instruction's own destination is touched, right after it wrote it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable

from hypothesis import strategies as st

from fuzzptx.program import Program
from fuzzptx.ptx.dataflow import defs_uses, is_special
from fuzzptx.ptx.ir import Function, Imm, Instr, Reg, RegDecl, walk

# register-only arithmetic (no memory, no control, no synchronisation): safe to reorder
_ALU = frozenset({"add", "sub", "mul", "mad", "fma", "and", "or", "xor", "not", "shl", "shr", "shf", "min", "max",
                  "neg", "abs", "selp", "setp", "cvt", "mov", "bfe", "bfi", "prmt", "lop3", "cnot", "popc", "clz",
                  "rem", "div", "sad", "slct", "set"})
_IMM_OPS = frozenset({"add", "sub", "mul", "mad", "and", "or", "xor", "shl", "shr", "min", "max", "setp", "shf",
                      "bfe", "bfi", "rem", "div", "selp"})
_BITS = re.compile(r"^[bsu](\d+)$")


def _kernel_body(p: Program) -> tuple[Function, list]:
    f = next(f for f in p.module.functions() if f.name == p.launch.kernel and f.body is not None)
    return f, list(f.body)


def _with_body(p: Program, f: Function, body: list) -> Program:
    items = tuple(replace(f, body=tuple(body)) if it is f else it for it in p.module.items)
    return replace(p, module=replace(p.module, items=items), source=None)


def _top_instrs(body: list) -> list[int]:
    """Indices of the body's top-level instructions (those inside a ``{ }`` scope stay as they are)."""
    return [i for i, s in enumerate(body) if isinstance(s, Instr)]


def _int_type(ins: Instr) -> int | None:
    for m in reversed(ins.modifiers):
        b = _BITS.match(m)
        if b:
            return int(b.group(1))
    return None


@dataclass(frozen=True)
class Edit:
    """One way to change a real kernel: ``apply(program, draw)`` gives the mutant, or None where the
    kernel has no place for it."""

    name: str
    apply: Callable


def _immediate(p: Program, draw) -> Program | None:
    f, body = _kernel_body(p)
    sites = [(i, k) for i in _top_instrs(body) if body[i].base in _IMM_OPS and _int_type(body[i])
             for k, op in enumerate(body[i].operands) if k > 0 and isinstance(op, Imm) and isinstance(op.value, int)]
    if not sites:
        return None
    i, k = draw(st.sampled_from(sites))
    ins = body[i]
    bits = _int_type(ins) or 32
    old = ins.operands[k].value
    if ins.base in ("shl", "shr", "shf"):
        new = draw(st.integers(0, bits - 1))
    else:
        new = draw(st.sampled_from((0, 1, 2, 3, 7, 8, 16, 31, 32, 64, 127, 128, 255, 1024, old + 1, max(0, old - 1),
                                    old * 2)))
    signed = "s" + str(bits) in ins.modifiers
    new = max(-(1 << (bits - 1)), min(new, (1 << (bits - 1)) - 1)) if signed else new % (1 << bits)
    if new == old:
        return None
    ops = list(ins.operands)
    ops[k] = Imm(new, str(new))
    body[i] = replace(ins, operands=tuple(ops))
    return _with_body(p, f, body)


def _reorder(p: Program, draw) -> Program | None:
    f, body = _kernel_body(p)
    pairs = []
    for i in range(len(body) - 1):
        a, b = body[i], body[i + 1]
        if not (isinstance(a, Instr) and isinstance(b, Instr)) or a.base not in _ALU or b.base not in _ALU:
            continue
        if any(isinstance(op, Reg) and is_special(op) for op in a.operands + b.operands):
            continue  # special registers (%tid, %clock, ...): keep where they are
        (da, ua), (db, ub) = defs_uses(a), defs_uses(b)
        if set(da) & (set(ub) | set(db)) or set(db) & set(ua):
            continue
        pairs.append(i)
    if not pairs:
        return None
    i = draw(st.sampled_from(pairs))
    body[i], body[i + 1] = body[i + 1], body[i]
    return _with_body(p, f, body)


_F32_RESULT = frozenset({"add", "sub", "mul", "fma", "mad", "max", "min", "mov", "ld", "cvt", "div", "neg", "abs"})


def _epilogue(p: Program, draw) -> Program | None:
    f, body = _kernel_body(p)
    f32 = {n for d in walk(f.body) if isinstance(d, RegDecl) and d.type in (".f32",) for n in d.names}
    b16 = next((n for d in walk(f.body) if isinstance(d, RegDecl) and d.type in (".b16", ".f16") for n in d.names), None)
    sites = [i for i in _top_instrs(body) if body[i].opcode.endswith(".f32") and body[i].base in _F32_RESULT
             and body[i].operands and isinstance(body[i].operands[0], Reg) and body[i].guard is None
             and re.sub(r"\d+$", "", body[i].operands[0].name) in f32]
    if not sites:
        return None
    i = draw(st.sampled_from(sites))
    d = body[i].operands[0]
    c = lambda x: Imm(x, "0f%08X" % x)  # noqa: E731 - an f32 immediate by its bits
    kind = draw(st.sampled_from(("scale", "bias", "relu", "ex2", "rcp", "f16", "bf16")))
    if kind in ("f16", "bf16") and b16 is None:
        kind = "relu"
    new = {
        "scale": [Instr("mul.rn.f32", (d, d, c(0x3F000000)))],
        "bias": [Instr("fma.rn.f32", (d, d, c(0x3FC00000), c(0xBF800000)))],
        "relu": [Instr("max.f32", (d, d, c(0)))],
        "ex2": [Instr("ex2.approx.ftz.f32", (d, d))],
        "rcp": [Instr("rcp.approx.ftz.f32", (d, d))],
    }.get(kind)
    if new is None:  # a round trip through a 16-bit float, its own scratch register declared
        t = Reg("%fzmut16")
        decl = RegDecl(".b16", ("%fzmut16",))
        new = [Instr(f"cvt.rn.{kind}.f32", (t, d)), Instr(f"cvt.f32.{kind}", (d, t))]
        body.insert(0, decl)
        i += 1
    body[i + 1:i + 1] = new
    return _with_body(p, f, body)


EDITS: tuple[Edit, ...] = (Edit("immediate", _immediate), Edit("reorder", _reorder), Edit("epilogue", _epilogue))


@st.composite
def mutants_of(draw, parent: Program, max_edits: int = 3) -> Program:
    """``parent`` with one to ``max_edits`` edits (each drawn among those that find a place)."""
    p, done = parent, []
    for _ in range(draw(st.integers(1, max_edits))):
        edit = draw(st.sampled_from(EDITS))
        got = edit.apply(p, draw)
        if got is not None:
            p, done = got, done + [edit.name]
    if not done:  # no edit found a place: the one edit every kernel with an f32 or integer op has
        for edit in EDITS:
            got = edit.apply(p, draw)
            if got is not None:
                p, done = got, [edit.name]
                break
    origin = parent.source or "?"
    return replace(p, notes=tuple(p.notes) + (f"real-kernel mutant of {origin}: {', '.join(done) or 'unchanged'}",),
                   source=None)


def real_kernel_mutants(parents: tuple[Program, ...], max_edits: int = 3) -> st.SearchStrategy[Program]:
    """Mutants of the real kernels ``parents`` (programs with their launches resolved)."""
    return st.sampled_from(parents).flatmap(lambda p: mutants_of(p, max_edits))


__all__ = ["EDITS", "Edit", "mutants_of", "real_kernel_mutants"]
