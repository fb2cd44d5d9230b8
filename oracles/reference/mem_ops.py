"""ld / st / barriers / fences: address resolution and per-thread parameter variables."""
from __future__ import annotations

import functools

import numpy as np

from fuzzptx.ptx.ir import Addr, Sym, Vec

from .errors import BadAddress, Undefined, Unsupported
from .ops import _types
from .values import TYPES, U64, Shadow, mask

SPACES = {"global": "global", "shared": "shared", "shared::cta": "shared", "param": "param",
          "param::entry": "param", "param::func": "param", "const": "global", "local": "local",
          "shared::cluster": "shared"}
_VIEW = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _space(ins) -> str:
    return _space_of(ins.opcode)


@functools.lru_cache(maxsize=4096)
def _space_of(opcode: str) -> str:
    for x in opcode.split(".")[1:]:
        if x in SPACES:
            return SPACES[x]
    return "generic"


def _shape(ins):
    got = _shape_of(ins.opcode)
    if isinstance(got, str):
        raise Unsupported.at(ins, got)
    return got


@functools.lru_cache(maxsize=4096)
def _shape_of(opcode: str):
    """(element type, bytes, count) of an ld/st opcode, or the reason it is not supported."""
    ts = _types(opcode)
    t = ts[-1] if ts else None
    if t is None:
        return "no type"
    count = 1
    for x in opcode.split(".")[1:]:
        if x in ("v2", "v4", "v8"):
            count = int(x[1:])
    w = TYPES[t][0]
    if w == 128:
        t, w, count = "b64", 64, count * 2
    if w < 8:
        return f"{opcode.split('.', 1)[0]} of .{t}"
    return t, w // 8, count


def _address(m, f, ins, a: Addr, act: np.ndarray):
    """(addresses of the active threads, per-thread param variable name or None)."""
    full = act is m.all
    idx = m.active_idx(act)
    if isinstance(a.base, Sym):
        if a.base.name in f.info.pvars:
            return idx, None, a.base.name
        space, base = m.symbol(a.base.name, ins)
        addr = np.full(idx.size, (base + a.offset) & ((1 << 64) - 1), np.uint64)
        return idx, addr, None
    if a.base is None:
        return idx, np.full(idx.size, a.offset & ((1 << 64) - 1), np.uint64), None
    bits, sh = m.read(f, a.base, "u64", ins)
    if sh is not None and (sh.kind.any() if full else sh.kind[idx].any()):  # EXACT is 0
        raise Undefined(f"line {ins.loc.line if ins.loc else '?'}: {ins.base} through an undefined address")
    w = f.widths.get(a.base.name, 64)
    addr = bits if full else bits[idx]  # never written in place below
    if w < 64:
        addr = addr & mask(w)
    off = a.offset & ((1 << 64) - 1)
    return idx, (addr + U64(off) if off else addr), None


def _take(sh: Shadow | None, rows: np.ndarray) -> Shadow | None:
    if sh is None:
        return None
    if rows.size == sh.kind.shape[0] and rows[-1] == rows.size - 1:
        return sh  # every thread, in order
    out = Shadow(sh.lane_bits, sh.kind[rows], sh.lo[rows], sh.hi[rows], sh.flags[rows])
    return None if out.is_trivial() else out


def _put(n: int, rows: np.ndarray, sh: Shadow | None, full: Shadow | None, width: int) -> Shadow | None:
    """Place the shadow of some rows into a full-size shadow (others exact)."""
    if sh is None:
        return full
    if full is None:
        full = Shadow(sh.lane_bits, np.zeros((n, sh.lanes), np.uint8), np.zeros((n, sh.lanes)),
                      np.zeros((n, sh.lanes)), np.zeros((n, sh.lanes), np.uint8))
    if full.lane_bits != sh.lane_bits:
        from .values import lanes_of
        lb = min(full.lane_bits, sh.lane_bits)
        full = lanes_of(full, n, width, lb).copy()
        sh = lanes_of(sh, rows.size, width, lb)
    full.kind[rows] = sh.kind
    full.lo[rows] = sh.lo
    full.hi[rows] = sh.hi
    full.flags[rows] = sh.flags
    return full


def h_ld(m, f, ins, act):
    t, eb, count = _shape(ins)
    d = ins.operands[0]
    dests = list(d.items) if isinstance(d, Vec) else [d]
    if len(dests) != count:
        raise Unsupported.at(ins, f"{len(dests)} destinations for a {count}-element load")
    a = ins.operands[1]
    if not isinstance(a, Addr):
        raise Unsupported.at(ins, "load source is not an address")
    idx, addr, pvar = _address(m, f, ins, a, act)
    n = m.n
    outs = [np.zeros(n, np.uint64) for _ in range(count)] if pvar is None and idx.size != n else [None] * count
    shs: list[Shadow | None] = [None] * count
    if pvar is not None:
        data = f.pdata[pvar]
        off = a.offset
        if off < 0 or off + eb * count > data.shape[1] or off % eb:
            raise BadAddress.at(ins, f"param {pvar!r} access at offset {off} of {eb * count} bytes is out of bounds")
        view = data.view(_VIEW[eb])
        und = f.pundef[pvar]
        for j in range(count):
            outs[j] = view[:, off // eb + j].astype(np.uint64)
            if und.any():
                shs[j] = Shadow.undef(n, eb * 8, und)
    elif idx.size:
        space = _space(ins)
        if space == "local":
            raise Unsupported.at(ins, ".local memory is not supported")
        groups = m.mem.resolve(space, addr, eb * count, ins, "load")
        if len(groups) == 1 and idx.size == n:  # every thread, in order: the loaded arrays as they are
            region, pos, off = groups[0]
            for j, (bits, sh) in enumerate(region.read(off, eb, count)):
                outs[j] = bits
                shs[j] = sh
        else:
            if outs[0] is None:
                outs = [np.zeros(n, np.uint64) for _ in range(count)]
            for region, pos, off in groups:
                vals = region.read(off, eb, count)
                rows = idx if pos.size == idx.size else idx[pos]
                for j, (bits, sh) in enumerate(vals):
                    outs[j][rows] = bits
                    shs[j] = _put(n, rows, sh, shs[j], eb * 8)
    for j, dst in enumerate(dests):
        if isinstance(dst, Sym) and dst.name == "_":
            continue
        m.write(f, dst, outs[j], shs[j], act, ins, ext=t)


def h_st(m, f, ins, act):
    t, eb, count = _shape(ins)
    a, src = ins.operands[0], ins.operands[1]
    srcs = list(src.items) if isinstance(src, Vec) else [src]
    if len(srcs) != count:
        raise Unsupported.at(ins, f"{len(srcs)} sources for a {count}-element store")
    vals = [m.read(f, s, t if count == 1 or TYPES[t][0] // 8 == eb else f"b{eb * 8}", ins) for s in srcs]
    # (no masking to eb bytes: every store below converts to the eb-byte unsigned type)
    idx, addr, pvar = _address(m, f, ins, a, act)
    if pvar is not None:
        data = f.pdata[pvar]
        off = a.offset
        if off < 0 or off + eb * count > data.shape[1] or off % eb:
            raise BadAddress.at(ins, f"param {pvar!r} access at offset {off} of {eb * count} bytes is out of bounds")
        view = data.view(_VIEW[eb])
        und = np.zeros(m.n, bool)
        for j, (bits, sh) in enumerate(vals):
            view[idx, off // eb + j] = bits[idx].astype(_VIEW[eb])
            if sh is not None:
                und |= sh.nonexact()
        # a store defines the variable for the storing threads (byte-exact tracking is not kept)
        f.pundef[pvar] = np.where(act, und, f.pundef[pvar])
        return
    if not idx.size:
        return
    space = _space(ins)
    if space in ("local",):
        raise Unsupported.at(ins, ".local memory is not supported")
    for region, pos, off in m.mem.resolve(space, addr, eb * count, ins, "store"):
        if not region.writable:
            raise BadAddress.at(ins, f"store to read-only {region.space} memory ({region.name})")
        if pos.size == m.n:  # every thread, in order
            region.write(off, eb, vals, writers=m.tid32 if region.dirty is not None else None)
            continue
        rows = idx if pos.size == idx.size else idx[pos]
        region.write(off, eb, [(b[rows], _take(sh, rows)) for b, sh in vals],
                     writers=m.tid32[rows] if region.dirty is not None else None)


def h_bar(m, f, ins, act):
    """bar.sync / barrier.sync: every live thread of the CTA (or the given count) must arrive together."""
    ops = ins.operands
    live = m.alive & (f.live if f.live is not None else m.alive)
    if "arrive" in ins.modifiers:
        return
    if len(ops) >= 2:
        cnt, _ = m.read(f, ops[1], "u32", ins)
        if int(act.sum()) != int(cnt[0]):
            raise Unsupported.at(ins, f"barrier with count {int(cnt[0])} reached by {int(act.sum())} threads together")
        return
    if not np.array_equal(act, m.alive):
        raise Unsupported.at(ins, f"barrier reached by {int(act.sum())} of {int(m.alive.sum())} live threads "
                                  "(divergent barriers are not modelled)")
    del live


def h_fence(m, f, ins, act):
    """Memory fences are no-ops in a sequential model, except fence.proxy.async (generic -> async proxy)."""
    if ins.base == "fence" and "proxy" in ins.modifiers and "async" in ins.modifiers:
        sh = m.mem.shared
        if sh is not None and sh.dirty is not None:
            d = sh.dirty
            dirty = d >= 0
            if dirty.any():
                writers = np.clip(d, 0, m.n - 1)
                d[dirty & act[writers]] = -1


def h_nop(m, f, ins, act):
    return None
