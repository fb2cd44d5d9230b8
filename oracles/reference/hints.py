"""Instructions that only hint, wait or classify: createpolicy, nanosleep, pmevent, applypriority,
discard, isspacep (PTX ISA 9.7.9 "Data Movement and Conversion", 9.7.19 "Miscellaneous").

* ``createpolicy`` writes an opaque 64-bit cache policy (its encoding is the hardware's): UNDEF
  bits; the loads and stores that take it as a ``.L2::cache_hint`` operand ignore it, as the ISA
  says a cache policy "does not change the memory consistency behavior of the program".
* ``nanosleep``, ``pmevent`` and ``applypriority`` change no value a program can read.
* ``discard.global.L2 [a], 128``: "the cache line ... is discarded ... behaves like a weak write of
  an unstable indeterminate value": the 128 bytes become UNDEF.
* ``isspacep.space p, a``: whether the generic address a falls in the window of that space
  (global buffers and variables, shared, local); an address in no known region is UNDEF.
"""
from __future__ import annotations

import numpy as np

from fuzzptx.ptx.ir import Addr

from .errors import BadAddress, Unsupported
from .memory import LOCAL_WINDOW, SHARED_WINDOW
from .mem_ops import _address
from .values import U64, Shadow


def h_createpolicy(m, f, ins, act):
    m.write(f, ins.operands[0], np.zeros(m.n, np.uint64), Shadow.undef(m.n, 64), act, ins)


def h_nothing(m, f, ins, act):
    """nanosleep, pmevent, applypriority: no visible effect."""
    return None


def h_discard(m, f, ins, act):
    ops = ins.operands
    if not ops or not isinstance(ops[0], Addr) or "global" not in ins.modifiers:
        raise Unsupported.at(ins, "discard needs .global and an address")
    idx, addr, _ = _address(m, f, ins, ops[0], act)
    if not idx.size:
        return
    if (addr % U64(128)).any():
        raise BadAddress.at(ins, "discard.global.L2 address not aligned to 128 bytes")
    for region, _pos, off in m.mem.resolve("global", addr, 128, ins, "discard", idx):
        rows = np.unique(off)
        zeros = np.zeros(rows.size, np.uint64)
        region.write(rows, 8, [(zeros, Shadow.undef(rows.size, 64))] * 16)


def h_isspacep(m, f, ins, act):
    space = next((x for x in ins.modifiers if x.split("::")[0] in ("global", "shared", "local", "const", "param")), None)
    if space is None:
        raise Unsupported.at(ins, "isspacep needs a state space")
    a, sa = m.read(f, ins.operands[1], "u64", ins)
    space = space.split("::")[0]
    in_shared = (a >= U64(SHARED_WINDOW)) & (a < U64(SHARED_WINDOW + (1 << 32)))
    in_local = (a >= U64(LOCAL_WINDOW)) & (a < U64(LOCAL_WINDOW + (1 << 32)))
    in_global = np.zeros(m.n, bool)
    in_const = np.zeros(m.n, bool)
    for r in m.mem.globals:
        hit = (a >= U64(r.base)) & (a < U64(r.base + max(r.size, 1)))
        if r.space == "const":
            in_const |= hit
        else:
            in_global |= hit
    known = in_shared | in_local | in_global | in_const
    res = {"shared": in_shared, "local": in_local, "global": in_global, "const": in_const,
           "param": np.zeros(m.n, bool)}[space]
    bad = ~known
    if sa is not None:
        bad |= sa.nonexact()
    m.write(f, ins.operands[0], res.astype(np.uint64), Shadow.undef(m.n, 1, bad) if bad.any() else None, act, ins)
