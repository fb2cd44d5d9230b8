"""The ISA catalogue: every tensor-core instruction form the seeds describe.

``forms()`` is the single table; ``form_for(instr)`` maps an IR instruction back
to its form (or None: the instruction is outside the catalogue, or illegal).
"""
from __future__ import annotations

import functools
from collections import defaultdict

from .model import ELEMENT_BITS, FLOAT_TYPES, INTEGER_TYPES, Form, OperandSpec, Shape
from . import warp, wgmma

__all__ = [
    "ELEMENT_BITS", "FLOAT_TYPES", "INTEGER_TYPES", "Form", "OperandSpec", "Shape",
    "forms", "families", "by_opcode", "form_for", "by_key", "catalogue_opcode", "order_free_key",
]


@functools.lru_cache(maxsize=None)
def _all() -> tuple[Form, ...]:
    return wgmma.mma_async_forms() + wgmma.sync_forms() + warp.warp_forms()


def forms(family: str | None = None) -> tuple[Form, ...]:
    """All forms, or those of one family (``wgmma``, ``wgmma.sp``, ``mma``, ...)."""
    if family is None:
        return _all()
    return tuple(f for f in _all() if f.family == family)


def families() -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for f in _all():
        seen.setdefault(f.family, None)
    return tuple(seen)


@functools.lru_cache(maxsize=None)
def _index() -> dict[str, tuple[Form, ...]]:
    idx: dict[str, list[Form]] = defaultdict(list)
    for f in _all():
        idx[f.opcode].append(f)
    return {k: tuple(v) for k, v in idx.items()}


@functools.lru_cache(maxsize=None)
def _keys() -> dict[str, Form]:
    return {f.key: f for f in _all()}


def by_opcode(opcode: str) -> tuple[Form, ...]:
    """Forms written with exactly this opcode (wgmma has two: A from registers or descriptor)."""
    return _index().get(opcode, ())


def by_key(key: str) -> Form:
    return _keys()[key]


_ORDERED = frozenset(ELEMENT_BITS) | {"f16x2", "bf16x2", "row", "col"}


def order_free_key(opcode: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """An opcode's name (the tokens before ``.sync``/``.aligned``), its types and layouts in order,
    and its other qualifiers as a sorted multiset.  ptxas 13.0.88 reads the qualifiers after the
    name in any order but keeps the types' and the layouts' order among themselves (d, a, b, c;
    A then B): CUTLASS writes ``ldmatrix.sync.aligned.x4.trans.m8n8.shared.b16``."""
    toks = opcode.split(".")
    i = next((j for j, t in enumerate(toks) if t in ("sync", "aligned")), len(toks))
    rest = toks[i:]
    return (tuple(toks[:i]), tuple(t for t in rest if t in _ORDERED),
            tuple(sorted(t for t in rest if t not in _ORDERED)))


@functools.lru_cache(maxsize=None)
def _order_free() -> dict[tuple, str]:
    """order_free_key -> the catalogue's opcode (each catalogue opcode has its own key)."""
    return {order_free_key(op): op for op in _index()}


@functools.lru_cache(maxsize=4096)
def catalogue_opcode(opcode: str) -> str | None:
    """The catalogue's spelling of ``opcode``: itself, the same qualifiers in the catalogue's
    order, or None (no form has these qualifiers)."""
    if opcode in _index():
        return opcode
    return _order_free().get(order_free_key(opcode))


def form_for(instr) -> Form | None:
    """The catalogue form of an IR instruction, or None if none matches its opcode and operand kinds.

    Every judge asks this of every instruction, so the common cases return first."""
    cands = _index().get(instr.opcode, ())
    if not cands and (op := catalogue_opcode(instr.opcode)) is not None:
        cands = _index()[op]  # the qualifiers in another order than the catalogue's
    if len(cands) <= 1:
        return cands[0] if cands else None
    # wgmma: operand 1 is a vector (A in registers) or a register (A descriptor).
    if len(instr.operands) > 1:
        # (a brace vector -- the IR's ``Vec``, read by its items: the catalogue sits below the IR)
        src = "reg" if hasattr(instr.operands[1], "items") else "desc"
        for f in cands:
            if f.a_source == src:
                return f
    return cands[0]
