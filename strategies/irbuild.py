"""IR for the strategies that write a whole kernel statement by statement (``mainloops``,
``tensor_copies``): the kernel is built as ``fuzzptx.ptx`` IR objects, never as text parsed back.

``Body`` collects statements: ``b(opcode, *operands, g="%p3")`` appends an instruction (Python
ints become immediates, ``"%x"`` strings registers, other strings symbols, as
``fuzzptx.builders.KernelBuilder.emit`` takes them; ``g`` a guard, ``"!%p4"`` negated),
``b.label(name)`` a label.  ``at``, ``vec`` and ``tensor`` make the address, vector and tensor
operands; ``kernel`` the one-entry module around a body.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from fuzzptx.builders import _operand as operand
from fuzzptx.ptx.ir import (Addr, Function, Guard, Instr, Label, Module, Operand, Param, Reg, RegDecl, Statement, Sym,
                            TensorAddr, VarDecl, Vec)

Op = Operand | int | str


def _op(x: Op) -> Operand:
    return operand(x) if isinstance(x, (int, str)) else x


def guard(g: str | None) -> Guard | None:
    """``"%p3"`` -> ``@%p3``, ``"!%p3"`` -> ``@!%p3``."""
    if g is None:
        return None
    return Guard(Reg(g.lstrip("!")), g.startswith("!"))


def at(base: str, offset: int = 0) -> Addr:
    """``[base+offset]``: a register (``%...``) or a symbol."""
    return Addr(Reg(base) if base.startswith("%") else Sym(base), offset)


def vec(items: Iterable[Op]) -> Vec:
    """``{a, b, ...}``."""
    return Vec(tuple(_op(x) for x in items))


def tensor(base: str, coords: Iterable[Op]) -> TensorAddr:
    """``[map, {c0, c1, ...}]``: a tensor map's address and a box's coordinates."""
    return TensorAddr(Reg(base) if base.startswith("%") else Sym(base), tuple(_op(x) for x in coords))


class Body:
    """The statements of one kernel body, in order."""

    def __init__(self) -> None:
        self.stmts: list[Statement] = []

    def __call__(self, opcode: str, *operands: Op, g: str | None = None) -> None:
        self.stmts.append(Instr(opcode, tuple(_op(x) for x in operands), guard(g)))

    def label(self, name: str) -> None:
        self.stmts.append(Label(name))

    def extend(self, other: "Body") -> None:
        self.stmts += other.stmts


def regs(rtype: str, stem: str, count: int) -> RegDecl:
    """``.reg .T %stem<count>;``."""
    return RegDecl(rtype, (stem,), count=count)


def shared(rtype: str, name: str, align: int, count: int | None = None) -> VarDecl:
    """``.shared .align A .T name[count];`` (``count`` None: a scalar)."""
    return VarDecl(".shared", rtype, name, align=align, dims=() if count is None else (count,))


def param(rtype: str, name: str, align: int | None = None, count: int | None = None) -> Param:
    return Param(".param", rtype, name, align=align, dims=() if count is None else (count,))


def kernel(params: Sequence[Param], attributes: Sequence[str], decls: Sequence[Statement], body: Body,
           name: str = "k", version: str = "8.4", target: str = "sm_90a") -> Module:
    """The module of one ``.visible .entry`` kernel."""
    fn = Function("entry", name, tuple(params), body=tuple(decls) + tuple(body.stmts), linkage=".visible",
                  attributes=tuple(attributes))
    return Module(version, target, 64, (fn,))
