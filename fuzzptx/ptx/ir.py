"""Program IR: plain frozen dataclasses mirroring PTX's own structure.

A kernel body is a flat sequence of statements (with ``{ }`` scopes nested),
exactly as PTX writes it, so ``emit`` and ``parse`` are straightforward
inverses.  Control flow is recovered by ``fuzzptx.ptx.cfg`` from labels and
branches.  Source locations ride along (``loc``) but never take part in
equality, so a parsed program equals the program it was emitted from.
"""
from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Union


@dataclass(frozen=True)
class SrcLoc:
    """Where a construct came from, for error messages and diagnostics."""

    file: str
    line: int
    col: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


# ---------------------------------------------------------------- operands


@dataclass(frozen=True)
class Reg:
    """A register (``%r1``, ``%rd<3>`` element ``%rd2``) or a special register (``%tid.x``)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Imm:
    """An immediate. ``text`` keeps the spelling (``0f3F800000``, ``0x10``) for exact re-emission."""

    value: int | float
    text: str

    @staticmethod
    def of(value: int | float) -> "Imm":
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, float):
            import struct

            bits = struct.unpack("<I", struct.pack("<f", value))[0]
            # Keep the f32 value the text denotes, so parse(emit(x)) == x.
            return Imm(struct.unpack("<f", struct.pack("<I", bits))[0], "0f%08X" % bits)
        return Imm(value, str(value))

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Sym:
    """A symbol: label, variable, function or parameter name."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Addr:
    """A memory operand ``[base+offset]``; base is a register or a symbol (or None for ``[imm]``)."""

    base: Reg | Sym | None
    offset: int = 0

    def __str__(self) -> str:
        if self.base is None:
            return f"[{self.offset}]"
        if self.offset == 0:
            return f"[{self.base}]"
        # ptxas 13.0 rejects "[%r-8]"; "[%r+-8]" is the spelling it accepts.
        return f"[{self.base}+{self.offset}]"


@dataclass(frozen=True)
class TensorAddr:
    """A tensor operand ``[tmap, {c0, c1}]`` of ``cp.async.bulk.tensor``/``prefetch.tensor``:
    the tensor map (a ``.param``/``.global``/``.const`` symbol or a register holding its
    generic address) and the box's starting coordinates (one per dimension, innermost first).
    Kept apart from ``Addr``: it names no byte address the memory model can follow."""

    base: Reg | Sym
    coords: tuple["Operand", ...]

    def __str__(self) -> str:
        return f"[{self.base}, {{" + ", ".join(str(c) for c in self.coords) + "}]"


@dataclass(frozen=True)
class Vec:
    """A brace vector ``{a, b, c}`` (wgmma/mma fragments, ld.v4 targets)."""

    items: tuple["Operand", ...]

    def __str__(self) -> str:
        return "{" + ", ".join(str(i) for i in self.items) + "}"


@dataclass(frozen=True)
class Neg:
    """A negated predicate operand ``!%p`` (``selp``/``@!p`` style uses are in Guard)."""

    reg: Reg

    def __str__(self) -> str:
        return f"!{self.reg}"


@dataclass(frozen=True)
class CallArgs:
    """Parenthesised argument list of ``call`` (``(%r1, %r2)``); empty tuple prints ``()``."""

    items: tuple["Operand", ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(i) for i in self.items) + ")"


Operand = Union[Reg, Imm, Sym, Addr, TensorAddr, Vec, Neg, CallArgs]


def registers_in(op: Operand) -> tuple[Reg, ...]:
    """Every register an operand mentions (address bases and vector items included)."""
    if isinstance(op, Reg):
        return (op,)
    if isinstance(op, Neg):
        return (op.reg,)
    if isinstance(op, Addr):
        return (op.base,) if isinstance(op.base, Reg) else ()
    if isinstance(op, TensorAddr):
        out = [op.base] if isinstance(op.base, Reg) else []
        for item in op.coords:
            out.extend(registers_in(item))
        return tuple(out)
    if isinstance(op, (Vec, CallArgs)):
        out: list[Reg] = []
        for item in op.items:
            out.extend(registers_in(item))
        return tuple(out)
    return ()


# -------------------------------------------------------------- statements


@dataclass(frozen=True)
class Guard:
    """Predicate guard ``@%p`` / ``@!%p``."""

    reg: Reg
    negated: bool = False

    def __str__(self) -> str:
        return f"@{'!' if self.negated else ''}{self.reg}"


class cached_once:
    """``functools.cached_property`` without its lock (Python 3.11 takes an RLock on every first
    lookup: ~1 µs, paid once per instruction of every judged program).  The value lands in the
    instance ``__dict__``, which later lookups find first (this is a non-data descriptor).  The
    SASS listing's per-instruction fields use it too (``fuzzptx.oracles.sass.listing``)."""

    def __init__(self, f):
        self.f = f
        self.name = f.__name__
        self.__doc__ = f.__doc__

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        v = obj.__dict__[self.name] = self.f(obj)
        return v


@dataclass(frozen=True)
class Instr:
    """One instruction. ``opcode`` is the full dotted mnemonic as written.

    ``opcode.split('.')[0]`` is the base name; the rest are modifiers.  Which
    operands an instruction defines and uses is decided by ``fuzzptx.ptx.dataflow``
    (from the catalogue for tensor-core forms, by PTX convention otherwise), so
    instructions outside the catalogue stay usable as opaque instructions.
    """

    opcode: str
    operands: tuple[Operand, ...] = ()
    guard: Guard | None = None
    loc: SrcLoc | None = field(default=None, compare=False, repr=False)

    @cached_once
    def base(self) -> str:
        return self.opcode.partition(".")[0]

    @cached_once
    def modifiers(self) -> tuple[str, ...]:
        return tuple(self.opcode.split(".")[1:])


@dataclass(frozen=True)
class Label:
    name: str
    loc: SrcLoc | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class RegDecl:
    """``.reg .f32 %f<4>;`` (count set) or ``.reg .b32 a, b;`` (names listed).

    ``vector`` is ``""`` or ``".v2"``/``".v4"`` for vector registers.
    """

    type: str
    names: tuple[str, ...]
    count: int | None = None
    vector: str = ""
    loc: SrcLoc | None = field(default=None, compare=False, repr=False)

    def expand(self) -> tuple[str, ...]:
        """Every register name this declaration introduces."""
        if self.count is None:
            return self.names
        (stem,) = self.names
        return tuple(f"{stem}{i}" for i in range(self.count))


@dataclass(frozen=True)
class VarDecl:
    """A state-space variable: ``.shared .align 1024 .b8 smem[4096];`` or ``.global .u32 g = 5;``.

    ``dims`` holds array extents (``None`` for ``[]``); ``init`` the initialiser text, if any;
    ``linkage`` is ``.visible``/``.extern``/``.weak``/``.common`` or ``""``.
    """

    space: str
    type: str
    name: str
    align: int | None = None
    dims: tuple[int | None, ...] = ()
    init: str | None = None
    linkage: str = ""
    vector: str = ""
    loc: SrcLoc | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Directive:
    """A directive kept as text (``.loc``, ``.file``, ``.pragma``, ``.section``...)."""

    text: str
    loc: SrcLoc | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Scope:
    """A ``{ ... }`` block inside a function body."""

    body: tuple["Statement", ...]
    loc: SrcLoc | None = field(default=None, compare=False, repr=False)


Statement = Union[Instr, Label, RegDecl, VarDecl, Directive, Scope]


@dataclass(frozen=True)
class Param:
    """A kernel or function parameter (``.param .u64 p``; ``.reg .b32 r`` for .func register params)."""

    space: str
    type: str
    name: str
    align: int | None = None
    dims: tuple[int | None, ...] = ()
    ptr: str = ""  # e.g. ".ptr.global.align 16" as written (kept verbatim)


_NTID = re.compile(r"\s*\.(reqntid|maxntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?")


@dataclass(frozen=True)
class Function:
    """A ``.entry`` kernel or ``.func``; ``body`` is None for a declaration (prototype).

    ``attributes`` holds performance directives and ``.noreturn``/``.noinline`` text
    that appear between the signature and the body, in order.
    """

    kind: str  # "entry" | "func"
    name: str
    params: tuple[Param, ...] = ()
    returns: tuple[Param, ...] = ()
    body: tuple[Statement, ...] | None = ()
    linkage: str = ""  # ".visible" | ".extern" | ".weak" | ""
    attributes: tuple[str, ...] = ()
    loc: SrcLoc | None = field(default=None, compare=False, repr=False)

    def ntid(self, directive: str) -> tuple[int, int, int] | None:
        """The block shape a launch-bound directive (``"reqntid"`` or ``"maxntid"``) states, missing
        dimensions 1; None without it.  One reader for the checker's uniformity and the inferred
        header's launch."""
        for attr in self.attributes:
            m = _NTID.match(attr)
            if m and m.group(1) == directive:
                return int(m.group(2)), int(m.group(3) or 1), int(m.group(4) or 1)
        return None

    def instructions(self) -> tuple[Instr, ...]:
        """All instructions in textual order, scopes flattened (kept on the function: the
        checker's layers each ask, and a frozen function's body never changes)."""
        d = self.__dict__
        out = d.get("_instructions")
        if out is None:
            out = d["_instructions"] = tuple(s for s in walk(self.body or ()) if isinstance(s, Instr))
        return out


TopLevel = Union[Function, VarDecl, Directive]


@dataclass(frozen=True)
class Module:
    """A PTX module: header directives plus functions and module-scope variables in order.

    ``preamble`` holds leading comment lines (a repro file's self-describing header)
    without their ``//`` markers, so emit and parse keep them.
    """

    version: str = "8.0"
    target: str = "sm_90a"
    address_size: int | None = 64  # None: the source wrote no .address_size
    items: tuple[TopLevel, ...] = ()
    preamble: tuple[str, ...] = ()

    def functions(self) -> tuple[Function, ...]:
        """The module's functions, worked out once (every function's analyses ask: per call, a
        module of N kernels cost N^2).  Kept in the instance dict: a frozen module's items never change."""
        got = self.__dict__.get("_functions")
        if got is None:
            got = self.__dict__["_functions"] = tuple(i for i in self.items if isinstance(i, Function))
        return got

    def kernels(self) -> tuple[Function, ...]:
        return tuple(f for f in self.functions() if f.kind == "entry" and f.body is not None)

    def function(self, name: str) -> Function:
        for f in self.functions():
            if f.name == name and f.body is not None:
                return f
        for f in self.functions():
            if f.name == name:
                return f
        raise KeyError(name)


def walk(body: tuple[Statement, ...]):
    """Yield statements in textual order, descending into scopes (the Scope itself is not yielded)."""
    for stmt in body:
        if isinstance(stmt, Scope):
            yield from walk(stmt.body)
        else:
            yield stmt
