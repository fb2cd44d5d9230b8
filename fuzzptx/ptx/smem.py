"""Where a kernel's ``.shared`` variables live in the CTA's shared window, as ptxas lays them out.

Checked on the H100 (``tests/hw_records/shared_layout.json``, ``benchmarks/hw_shared_layout.py``):
the first variable lands at 0x400 (the hardware reserves the first 1 KB); the kernel's own
variables come first, then those of the ``.func`` functions (another kernel's live in its own
window), then the module's, each in declaration order at its alignment; a variable no instruction mentions takes no space; dynamic (``[]``) shared
memory comes last.  One table for every reader: the reference interpreter places its shared
memory with it, and the checker knows descriptor start addresses and the end of shared memory
from it.
"""
from __future__ import annotations

from dataclasses import dataclass

from fuzzptx.perf import kept_on_node, per_object
from fuzzptx.ptx.ir import Addr, CallArgs, Function, Module, Scope, Sym, VarDecl, Vec

SHARED_RESERVED = 0x400

_BITS = {"pred": 1, "b128": 128, "f16x2": 32, "bf16x2": 32, "e4m3x2": 16, "e5m2x2": 16, "e4m3": 8, "e5m2": 8, "tf32": 32}


def type_bytes(type_: str) -> int:
    """Bytes of one element of a PTX type (``.b8`` 1, ``.f16x2`` 4; 1 for anything unknown)."""
    t = type_.lstrip(".")
    bits = _BITS.get(t)
    if bits is None:
        digits = t.lstrip("bsuf")
        bits = int(digits) if digits.isdigit() and t[:1] in "bsuf" else 8
    return max(bits // 8, 1)


def var_bytes(type_: str, dims) -> int:
    """Bytes of a variable of ``type_`` with array extents ``dims`` (an open ``[]`` counts 0)."""
    count = 1
    for d in dims:
        count *= d or 0
    return type_bytes(type_) * count


@dataclass(frozen=True)
class SharedLayout:
    offsets: dict  # variable name -> offset in the shared window (dynamic ones included)
    static_end: int  # one past the last static variable, before the dynamic part's alignment
    dynamic_start: int | None  # where dynamic shared memory begins; None: the kernel uses none

    def end(self, dynamic_bytes: int = 0) -> int:
        """One past the last byte of shared memory the kernel has, with ``dynamic_bytes`` at launch."""
        return self.static_end if self.dynamic_start is None else self.dynamic_start + dynamic_bytes


@per_object(256)
def mentioned_symbols(fn: Function) -> frozenset[str]:
    """Names that the function's instructions mention (``mov %r, smem``, ``[smem+8]``, ``call f``)."""
    out = set()
    for ins in fn.instructions():
        names = _instr_symbols(ins)
        if names:
            out.update(names)
    return frozenset(out)


@kept_on_node("_symbols")
def _instr_symbols(ins) -> tuple[str, ...]:
    """The symbols one instruction mentions, kept on it (emission seeds it on later instructions
    of the same text, so a campaign process rarely works it out again)."""
    out: list[str] = []
    for o in ins.operands:
        t = type(o)
        if t is Sym:
            out.append(o.name)
        elif t is Addr:
            if type(o.base) is Sym:
                out.append(o.base.name)
        elif t is Vec or t is CallArgs:
            out.extend(i.name for i in o.items if type(i) is Sym)
    return tuple(out)


def _body_vars(body) -> list[VarDecl]:
    out = []
    for s in body or ():
        if type(s) is VarDecl:
            out.append(s)
        elif isinstance(s, Scope):
            out += _body_vars(s.body)
    return out


def shared_layout(module: Module, kernel: Function) -> SharedLayout:
    """The layout of ``kernel``'s shared memory (see the module doc); kept per module object."""
    cache = _layouts(module)
    hit = cache.get(kernel.name)
    if hit is None:
        hit = cache[kernel.name] = _layout(module, kernel)
    return hit


@per_object(256)
def _layouts(module: Module) -> dict:
    return {}


def _shared_of(body) -> tuple[VarDecl, ...]:
    return tuple(v for v in _body_vars(body) if v.space.lstrip(".") == "shared")


@per_object(256)
def _module_shared(module: Module) -> tuple[tuple[VarDecl, ...], frozenset[str]]:
    """What every kernel's layout reads of the whole module, gathered once per module (gathered per
    kernel, a module of N kernels cost N^2): the shared variables of its ``.func`` bodies and of
    module scope, in order, and the names any function mentions.  Another kernel's body variables
    live in that kernel's own window, never in this one's."""
    funcs = tuple(v for fn in module.functions() if fn.kind != "entry" for v in _shared_of(fn.body))
    top = tuple(i for i in module.items if isinstance(i, VarDecl) and i.space.lstrip(".") == "shared")
    mentioned = frozenset().union(*(mentioned_symbols(fn) for fn in module.functions()))
    return funcs + top, mentioned


def _layout(module: Module, kernel: Function) -> SharedLayout:
    shared_elsewhere, mentioned = _module_shared(module)
    own = _shared_of(kernel.body)
    shared = list(own) + [v for v in shared_elsewhere if not any(v is o for o in own)]
    offsets: dict[str, int] = {}
    if not shared:
        return SharedLayout(offsets, SHARED_RESERVED, None)
    off, dyn = SHARED_RESERVED, []
    for v in shared:
        if v.name not in mentioned:
            continue
        if v.dims and v.dims[-1] is None:
            dyn.append(v)
            continue
        al = v.align or type_bytes(v.type)
        off = (off + al - 1) // al * al
        offsets[v.name] = off
        off += var_bytes(v.type, v.dims)
    start = None
    if dyn:
        al = max(v.align or 16 for v in dyn)
        start = (off + al - 1) // al * al
        for v in dyn:
            offsets[v.name] = start
    return SharedLayout(offsets, off, start)
