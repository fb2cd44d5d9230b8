"""Which accumulator registers of a wgmma can ever be read, so the rest need no values.

A fuzz kernel that sweeps wgmma forms stores one register of each form's accumulator and
then zeroes the registers for the next form: two thirds of the campaign's wgmmas have at
most two of their 4..128 D registers read again.  Their products are computed for the
columns those registers hold only (``wgmma_exec``); the others get zeros nobody sees.

The rule is deliberately narrow, so that "not observed" is certain:

* the wgmma's results must land at an unguarded ``wgmma.wait_group 0`` in its own block
  (every pending group lands there; a later wait could land them after a kill);
* a D register named by any instruction between the wgmma and that wait is observed;
* after the wait, a register's first mention decides: an unguarded ``mov reg, imm`` kills
  it, anything else (a read, a partial write, a call argument) observes it;
* a register never mentioned again is observed unless the block ends the function (an
  unguarded ``ret``/``exit`` with no successor): across blocks nothing is assumed.
"""
from __future__ import annotations

import bisect
import functools

import numpy as np

from fuzzptx.ptx.ir import Addr, Imm, Instr, Reg, Vec
from .wgmma_math import wgmma_dense


def observed_d(info, ins: Instr) -> frozenset[str] | None:
    """The D registers of wgmma ``ins`` (in function ``info``) that may be read; None: all."""
    table = info.__dict__.get("_observed")
    if table is None:
        table = info.__dict__["_observed"] = _observed_table(info.blocks)
    return table.get(id(ins))


def columns(layout, d_names: list[str], observed: frozenset[str]) -> np.ndarray | None:
    """The tile columns holding the observed registers' elements, padded with the next
    columns to a multiple of 8 (a shape wgmma has: MMA-Sim's judge models the narrow product
    too), sorted; None where that is more than half the tile (no saving worth it)."""
    return _columns(layout, tuple(r for r, name in enumerate(d_names) if name in observed))


@functools.lru_cache(maxsize=4096)
def _columns(layout, regs: tuple[int, ...]) -> np.ndarray | None:
    per = layout.elements_per_register
    slots = [r * per + e for r in regs for e in range(per)]
    cols = np.unique(layout.col[:, slots]) if slots else np.zeros(0, np.int64)
    if cols.size % 8 or not cols.size:  # a real wgmma width (multiple of 8), as other models of it expect
        rest = np.setdiff1d(np.arange(layout.cols), cols)
        cols = np.sort(np.concatenate([cols, rest[: 8 - cols.size % 8]]))
    if 2 * cols.size > layout.cols:
        return None
    cols.flags.writeable = False  # shared by every call with these registers
    return cols


def _observed_table(blocks) -> dict[int, frozenset[str]]:
    out: dict[int, frozenset[str]] = {}
    for b in blocks:
        instrs = b.instrs
        if not any(i.base == "wgmma" for i in instrs):
            continue
        events = None
        ends = _ends_function(b)
        wanted = {r.name for ins in instrs if ins.base == "wgmma" and ins.operands and type(ins.operands[0]) is Vec
                  for r in ins.operands[0].items if type(r) is Reg}
        for i, ins in enumerate(instrs):
            if ins.base != "wgmma" or "mma_async" not in ins.modifiers or not ins.operands \
                    or type(ins.operands[0]) is not Vec:
                continue
            j = next((k for k in range(i + 1, len(instrs)) if _is_wait0(instrs[k])), None)
            if j is None:
                continue
            d = {r.name for r in ins.operands[0].items if type(r) is Reg}
            seen = {n for k in range(i + 1, j + 1) for n in _names(instrs[k])} & d
            if events is None:
                events = _events(instrs, wanted)
            for name in d - seen:
                ev = events.get(name)
                k = bisect.bisect_right(ev[0], j) if ev else 0
                if ev and k < len(ev[0]):
                    if not ev[1][k]:  # read (or written in part) before any kill
                        seen.add(name)
                elif not ends:
                    seen.add(name)
            out[id(ins)] = frozenset(seen)
    return out


def _events(instrs, wanted: set[str]) -> dict[str, tuple[list[int], list[bool]]]:
    """Register of ``wanted`` -> (positions of the instructions naming it, whether each kills it).
    One walk over the block, inlined: it runs once per program and function with a wgmma."""
    ev: dict[str, tuple[list[int], list[bool]]] = {}
    for k, ins in enumerate(instrs):
        ops = ins.operands
        if (ins.base == "mov" and ins.guard is None and len(ops) == 2 and type(ops[1]) is Imm
                and type(ops[0]) is Reg and "|" not in ops[0].name):  # half of a sweep: one name, a kill
            name = ops[0].name
            if name in wanted:
                e = ev.get(name)
                if e is None:
                    e = ev[name] = ([], [])
                e[0].append(k)
                e[1].append(True)
            continue
        for name in _names(ins):
            if name in wanted:
                e = ev.get(name)
                if e is None:
                    e = ev[name] = ([], [])
                if not e[0] or e[0][-1] != k:
                    e[0].append(k)
                    e[1].append(False)
    return ev


def _names(ins: Instr) -> list[str]:
    """Every register name an instruction mentions (guard, operands, address bases, call args)."""
    out: list[str] = [] if ins.guard is None else [ins.guard.reg.name]
    for op in ins.operands:
        t = type(op)
        if t is Reg:
            out.extend(op.name.split("|"))
        elif t is Vec:
            for x in op.items:
                if type(x) is Reg:
                    out.extend(x.name.split("|"))
        elif t is Addr:
            if type(op.base) is Reg:
                out.append(op.base.name)
        elif hasattr(op, "reg"):
            out.append(op.reg.name)
        elif hasattr(op, "items"):  # call arguments
            out.extend(x.name for x in op.items if type(x) is Reg)
    return out


def _is_wait0(ins: Instr) -> bool:
    return (ins.base == "wgmma" and "wait_group" in ins.modifiers and ins.guard is None
            and len(ins.operands) == 1 and type(ins.operands[0]) is Imm and ins.operands[0].value == 0)


def _ends_function(block) -> bool:
    last = block.instrs[-1] if block.instrs else None
    return not block.succs and last is not None and last.guard is None and last.base in ("ret", "exit")


def dense_observed(info, ins: Instr, layout, d_names: list[str], form, a: np.ndarray, b: np.ndarray,
                   c: np.ndarray, scale_d: bool, scale_a: int, scale_b: int, mode: str, **kw):
    """``wgmma_math.wgmma_dense`` of ``ins`` for the columns its observed D registers hold
    (every D element depends on its own row of A, column of B and element of C only), the
    other columns zero; the whole product where that is not a saving."""
    from dataclasses import replace


    obs = observed_d(info, ins)
    cols = None if obs is None else columns(layout, d_names, obs)
    if cols is None:
        return wgmma_dense(form, a, b, c, scale_d, scale_a, scale_b, mode=mode, **kw)
    narrow = replace(form, shape=replace(form.shape, n=int(cols.size)))
    part = wgmma_dense(narrow, a, b[:, cols], c[:, cols], scale_d, scale_a, scale_b, mode=mode, **kw)
    return embed(part, cols, form.shape.n)


def embed(res, cols: np.ndarray, n: int):
    """A Result of some columns as one of all ``n``: the others zero, exact, finite."""
    out = {}
    for name in ("bits", "value", "exact_value", "lo", "hi", "err", "finite_ok", "may_nan", "may_pos_inf",
                 "may_neg_inf"):
        part = getattr(res, name)
        full = np.ones((part.shape[0], n), part.dtype) if name == "finite_ok" else np.zeros((part.shape[0], n), part.dtype)
        full[:, cols] = part
        out[name] = full
    return type(res)(res.dtype, integer=res.integer, **out)
