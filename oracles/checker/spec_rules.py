"""Spec layer: undefined behaviour of the wgmma pipeline per the PTX ISA (9.7.15), as dataflow.

Each analysis is a forward problem over the CFG, joined conservatively at merges (a fact that
holds on *some* path reaches the check), iterated to a fixed point, then replayed once per
block to report.  Rules:

- ``spec.fence.missing``: a wgmma.mma_async with no wgmma.fence before it on some path.
- ``spec.fence.register-access``: a register access to a wgmma's accumulator or A fragment after
  the last wgmma.fence (accumulator accesses by wgmmas of the same shape excepted).
- ``spec.async.access-in-flight``: an access to the accumulator or A fragment of a wgmma that may
  still be in flight (no wgmma.wait_group covering its group on some path).
- ``spec.commit.missing``: a wgmma.wait_group reached by uncommitted wgmmas (it does not wait for them).
- ``spec.exit.uncommitted`` / ``spec.exit.unwaited``: a path leaves the function with wgmmas in flight.
- ``spec.aligned.divergent``: a ``.aligned`` tensor-core instruction (or setmaxnreg) under control
  that is not uniform over the threads it must run on (warpgroup for wgmma.* and setmaxnreg,
  warp for the rest).
- ``spec.proxy.fence-missing``: generic-proxy shared-memory writes reach an async-proxy read of
  bytes they may have written (a wgmma's descriptors, a bulk/tensor copy or reduction to global) with no
  fence.proxy.async in between.  Ranges come from bounded address arithmetic (a write's guard
  narrows it; a pipeline stage's address in loop counters is bounded where it is read:
  ``values.interval_at``); where nothing bounds an address it meets everything.
- ``spec.proxy.tensormap-acquire-missing``: a tensor copy through a tensor map the function
  modified in global memory with no ``fence.proxy.tensormap::generic.acquire`` on it since
  (``tensormap_proxy_analysis``).
- ``spec.mbarrier.no-init`` / ``spec.mbarrier.no-expect-tx``: an mbarrier no init can reach; a
  bulk copy completing bytes on a barrier no expect_tx raises (``mbarrier_analysis``).
- ``spec.mbarrier.release-in-flight``: an mbarrier arrive while a wgmma may be in flight, on a
  barrier waited on before a write into bytes that wgmma reads (``release_analysis``).
- ``spec.mbarrier.read-before-wait``: a read of bytes a bulk or tensor copy fills with no wait on
  the copy's mbarrier since the copy on some path (``mbarrier_rules.early_read_analysis``).
- ``spec.desc.base-offset`` / ``spec.desc.reserved``: a constant matrix descriptor the spec rejects.
- ``spec.smem.out-of-bounds``: a descriptor whose start address (known from constants and shared
  symbols, laid out as ptxas does: ``fuzzptx.ptx.smem``) lies at or past the end of the kernel's
  shared memory.  A tile that starts inside and runs past the end is the reference's to find
  (its extent needs the whole layout algebra).
"""
from __future__ import annotations

from fuzzptx.isa.encoding import (BASE_OFFSET_FIELD, K_STEP_BYTES, LBO_FIELD, PATTERN_ALIGN, RESERVED_MASK, SBO_FIELD,
                                  START_FIELD, SWIZZLE_CODES, SWIZZLE_FIELD, descriptor_field)
from fuzzptx.isa.encoding import SWIZZLE_NAMES as SWIZZLE_MODE_OF
from fuzzptx import isa
from fuzzptx.isa import ELEMENT_BITS
from fuzzptx.isa.layouts import SWIZZLES, tile_byte_offsets
from fuzzptx.perf import per_object
from fuzzptx.ptx.ir import Addr, Function, Imm, Instr, Reg, Sym, TensorAddr
from fuzzptx.ptx.smem import SHARED_RESERVED, shared_layout, type_bytes

from .bits import known_bits
from .context import FnCtx, Site, defined_functions, sites
from .findings import Sink
from .flow import BlockRecords, solve_forward
from .regs import defs_uses, is_commit, is_fence, is_wait, is_wgmma, wait_n, wgmma_regs, wgmma_shape
from .uniformity import (CTA, LEVEL_NAMES, WARP, WARPGROUP, address_interval, block_dims, branch_reg, shared_interval,
                         shared_write, single_defs)

DEPTH_CAP = 8  # wait_group N completes groups with depth >= N; deeper groups collapse here


def _line(ins: Instr) -> int | None:
    return ins.loc.line if ins.loc else None


def _lt(line) -> str:
    return f"line {line}" if line is not None else "an earlier line"


def _accessed(ins: Instr) -> frozenset[str]:
    d, u = defs_uses(ins)
    guard = {ins.guard.reg.name} if ins.guard else set()
    return (d | u) - guard


# ------------------------------------------------------------------ fence ordering


def fence_analysis(ctx: FnCtx, sink: Sink) -> None:
    """State: (fenced on every path, {(registers, shape-or-'', line)} accessed since the last
    fence).  An access is kept as one entry for all the registers one instruction touched (a
    wgmma's 64-128 accumulators are one entry, not one per register)."""

    def check(ins: Instr, fenced: bool, dirty, acc: frozenset, a: frozenset, shape: str) -> None:
        if not fenced:
            sink.add("spec.fence.missing", "error", _line(ins),
                     "wgmma.mma_async is reached by a path with no wgmma.fence before it "
                     "(PTX ISA 9.7.15.7.1: a fence is required before the first wgmma.mma_async)")
        # "after the last fence" means nothing without one (reported above)
        seen = dirty if fenced else ()
        hits = [(regs & acc if t != shape else (), regs & a if not t else (), t, ln) for regs, t, ln in seen]
        if not any(x or y for x, y, _, _ in hits):
            return
        bad_acc = sorted({(r, t) for x, _, t, _ in hits for r in x})
        bad_a = sorted({r for _, y, _, _ in hits for r in y})
        lines = sorted({ln for x, y, _, ln in hits if ln and (x or y)})
        what = []
        if bad_acc:
            regs = ", ".join(dict.fromkeys(r for r, _ in bad_acc))
            shapes = sorted({t for _, t in bad_acc if t})
            who = "non-wgmma instructions" if any(not t for _, t in bad_acc) else ""
            if shapes:
                who = (who + " and " if who else "") + f"a wgmma of shape {', '.join(shapes)}"
            what.append(f"accumulator register(s) {regs} were accessed by {who}")
        if bad_a:
            what.append(f"A-fragment register(s) {', '.join(bad_a)} were accessed")
        where = ", ".join(str(x) for x in lines[:6]) + (" ..." if len(lines) > 6 else "")
        sink.add("spec.fence.register-access", "error", _line(ins),
                 f"{'; '.join(what)} (line {where}) after the last wgmma.fence; insert "
                 "wgmma.fence between those accesses and this wgmma.mma_async (PTX ISA 9.7.15.7.1)")

    def block_step(block: int, st):
        fenced, dirty = st[0], set(st[1])
        for _site, ins in sites(ctx, block, hot_only=True):
            if is_fence(ins):
                fenced = True
                dirty.clear()
            elif is_wgmma(ins):
                acc, a, _ = wgmma_regs(ins)
                shape = wgmma_shape(ins)
                check(ins, fenced, dirty, acc, a, shape)
                kept = set()
                for e in dirty:
                    if e[0].isdisjoint(acc):
                        kept.add(e)
                    elif not e[0] <= acc:
                        kept.add((e[0] - acc, e[1], e[2]))
                kept.add((acc, shape, _line(ins)))
                dirty = kept
            else:
                touched = _accessed(ins) & ctx.relevant
                if touched:
                    dirty.add((touched, "", _line(ins)))
        return fenced, frozenset(dirty)

    _run(ctx, sink, (False, frozenset()), None, lambda a, b: (a[0] and b[0], a[1] | b[1]), block_step=block_step)


# ------------------------------------------------------------------ in-flight wgmmas


def _norm(entries) -> frozenset:
    best: dict = {}
    for site, depth in entries:
        best[site] = min(depth, best.get(site, depth))
    return frozenset(best.items())


def inflight_analysis(ctx: FnCtx, sink: Sink) -> None:
    """State: {(wgmma site, depth)}; depth -1 = uncommitted, d = groups committed after its own."""
    module_funcs = defined_functions(ctx.module)

    def describe(site: Site, depth: int) -> str:
        state = "never committed" if depth < 0 else "committed, but no wgmma.wait_group covers its group"
        return f"the wgmma.mma_async at {_lt(ctx.line(site))} ({state} on some path)"

    def apply_commit(st):
        return frozenset((s, 0 if d < 0 else min(d + 1, DEPTH_CAP)) for s, d in st)

    def apply_wait(st, n):
        return frozenset((s, d) for s, d in st if d < 0 or d < n)

    def step(site: Site, ins: Instr, st):
        if is_wgmma(ins):
            acc, a, _ = wgmma_regs(ins)
            shape = wgmma_shape(ins)
            for other, depth in sorted(st, key=lambda x: (x[0].block, x[0].pos)):
                oins = ctx.wgmmas[other]
                oacc, oa, _ = wgmma_regs(oins)
                clash = (a & oacc) | (acc & oa)
                if wgmma_shape(oins) != shape:
                    clash |= acc & oacc
                if clash:
                    sink.add("spec.async.access-in-flight", "error", _line(ins),
                             f"wgmma.mma_async uses {', '.join(sorted(clash))} of {describe(other, depth)}")
            return _norm(st | {(site, -1)})
        if is_commit(ins):
            return apply_commit(st)
        if is_wait(ins):
            n = wait_n(ins)
            if any(d < 0 for _, d in st):
                pend = min((s for s, d in st if d < 0), key=lambda s: (s.block, s.pos))
                sink.add("spec.commit.missing", "warning", _line(ins),
                         f"wgmma.wait_group does not wait for the wgmma.mma_async at {_lt(ctx.line(pend))}: "
                         "it is not committed on some path (add wgmma.commit_group before the wait)")
            return apply_wait(st, n if n is not None else 0)
        if ins.base == "call":
            callee = next((o.name for o in ins.operands if isinstance(o, Sym) and o.name in module_funcs), None)
            if callee is not None:
                for cins in module_funcs[callee].instructions():
                    if is_commit(cins):
                        st = apply_commit(st)
                    elif is_wait(cins):
                        st = apply_wait(st, wait_n(cins) or 0)
        if st:
            touched = _accessed(ins)
            for other, depth in sorted(st, key=lambda x: (x[0].block, x[0].pos)):
                oacc, oa, _ = wgmma_regs(ctx.wgmmas[other])
                for regs, what in ((touched & oacc, "accumulator"), (touched & oa, "A-fragment register")):
                    if regs:
                        sink.add("spec.async.access-in-flight", "error", _line(ins),
                                 f"{ins.opcode} accesses {what} {', '.join(sorted(regs))} of {describe(other, depth)} "
                                 "(PTX ISA 9.7.15.7.3: undefined behaviour before the wait)")
        if ins.base in ("ret", "exit") and st:
            _exit_report(ctx, ins, st, sink)
        return st

    def end_of_block(block: int, st):
        b = ctx.g.blocks[block]
        last = b.instrs[-1] if b.instrs else None
        if st and not b.succs and (last is None or last.base not in ("ret", "exit", "trap")):
            _exit_report(ctx, last, st, sink)

    _run(ctx, sink, frozenset(), step, lambda a, b: _norm(a | b), end_of_block)


def _exit_report(ctx: FnCtx, ins: Instr | None, st, sink: Sink) -> None:
    line = _line(ins) if ins is not None else None
    unc = sorted((s for s, d in st if d < 0), key=lambda s: (s.block, s.pos))
    com = sorted((s for s, d in st if d >= 0), key=lambda s: (s.block, s.pos))
    if unc:
        sink.add("spec.exit.uncommitted", "warning", line,
                 f"a path leaves {ctx.fn.name} with the wgmma.mma_async at {_lt(ctx.line(unc[0]))} never committed "
                 "nor waited for")
    if com:
        sink.add("spec.exit.unwaited", "warning", line,
                 f"a path leaves {ctx.fn.name} with the wgmma.mma_async at {_lt(ctx.line(com[0]))} committed but "
                 "not waited for (wgmma.wait_group 0 missing)")


# ------------------------------------------------------------------ async proxy


def _generic_shared_write(ins: Instr) -> bool:
    op = ins.opcode
    if ins.base in ("st", "atom", "red") and ".shared" in op and ".async" not in op:
        return True
    if ins.base == "stmatrix" or (op.startswith("wmma.store") and ".shared" in op):
        return True
    return op.startswith(("cp.async.ca", "cp.async.cg"))


def _async_store(ins: Instr) -> bool:
    """A bulk or tensor copy (or reduction: ``cp.reduce.async.bulk``) from shared memory to global:
    it reads its shared source through the async proxy."""
    op = ins.opcode
    return op.startswith(("cp.async.bulk", "cp.reduce.async.bulk")) and ".global.shared" in op


_ANY = (None, None, None)  # a range nothing bounds: meets every other
_PROXY_CAP = 32


def _meets(a, b) -> bool:
    """Whether two byte ranges ``(symbol, lo, end)`` (``end`` None: unbounded) may share a byte."""
    if a[0] is None or b[0] is None:
        return True
    if a[0] != b[0]:
        return False  # two variables never overlap
    return (a[2] is None or b[1] < a[2]) and (b[2] is None or a[1] < b[2])


def _range(addr, width, defs, tid_max, fn: Function | None = None, at: Instr | None = None):
    """The bytes a shared access may touch: its address bounded by ``uniformity.shared_interval``
    or, given the function and the accessing instruction, by ``uniformity.address_interval``."""
    if not isinstance(addr, Addr) or addr.base is None:
        return _ANY
    iv = shared_interval(addr.base, defs, tid_max) if fn is None or at is None \
        else address_interval(fn, at, addr.base, defs, tid_max)
    if iv is None or iv[0] is None:
        return _ANY
    return (iv[0], iv[1] + addr.offset, None if width is None else iv[2] + addr.offset + width)


def _desc_start(op, defs, depth: int = 0, fn: Function | None = None):
    """(symbol, lo, hi) bounding the start address a matrix descriptor register encodes:
    ``or`` with a constant that leaves the start field clear, ``cvt``, ``add`` of whole 16-byte
    steps, and ``bfe.u32 x, addr, 4, n`` or ``shr.u32 x, addr, 4`` (the start field is ``addr >> 4``).
    Given ``fn``, the address is bounded where the ``bfe``/``shr`` reads it (``address_interval``:
    a pipeline stage's buffer, advanced by loop counters)."""
    if not isinstance(op, Reg) or depth > 16:
        return None
    ins = defs.get(op.name)
    if ins is None or len(ins.operands) < 2:
        return None
    srcs = ins.operands[1:]
    lo, width = START_FIELD
    if ins.base == "cvt" and len(srcs) == 1:
        return _desc_start(srcs[0], defs, depth + 1, fn)
    if ins.base == "or" and len(srcs) == 2 and isinstance(srcs[1], Imm) and isinstance(srcs[1].value, int) \
            and not (srcs[1].value >> lo) & ((1 << width) - 1):
        return _desc_start(srcs[0], defs, depth + 1, fn)
    if ins.base == "add" and len(srcs) == 2 and isinstance(srcs[1], Imm) and isinstance(srcs[1].value, int):
        inner = _desc_start(srcs[0], defs, depth + 1, fn)
        return None if inner is None else (inner[0], inner[1] + 16 * srcs[1].value, inner[2] + 16 * srcs[1].value)
    if ins.base == "bfe" and ".u" in ins.opcode and len(srcs) == 3 and srcs[1] == Imm(4, "4"):
        return _start_address(srcs[0], defs, fn, ins)
    if ins.base == "shr" and ".u" in ins.opcode and len(srcs) == 2 and isinstance(srcs[1], Imm) \
            and srcs[1].value == 4 and _width(ins) == 32:
        # a 32-bit shared-window address is below 2^18: its shift by 4 is the 14-bit start field
        return _start_address(srcs[0], defs, fn, ins)
    return None


def _start_address(op, defs, fn: Function | None, at: Instr):
    return shared_interval(op, defs, None) if fn is None else address_interval(fn, at, op, defs, None)


def _width(ins: Instr) -> int | None:
    """The bit width of an instruction's type suffix (``shr.u32`` -> 32)."""
    for m in reversed(ins.modifiers):
        if m[:1] in "busf" and m[1:].isdigit():
            return int(m[1:])
    return None


def _desc_fields(op, defs) -> tuple[int, int, str] | None:
    """(LBO bytes, SBO bytes, swizzle mode) from the constant a descriptor register is ``or``-ed with."""
    ins = defs.get(op.name) if isinstance(op, Reg) else None
    while ins is not None and ins.base == "add" and isinstance(ins.operands[1], Reg):
        ins = defs.get(ins.operands[1].name)  # k-steps add to the start field only
    if ins is None or ins.base != "or" or not isinstance(ins.operands[2], Imm) \
            or not isinstance(ins.operands[2].value, int):
        return None
    c = ins.operands[2].value
    lbo, sbo = (descriptor_field(c, f) << 4 for f in (LBO_FIELD, SBO_FIELD))
    return lbo, sbo, SWIZZLE_MODE_OF[descriptor_field(c, SWIZZLE_FIELD)]


def _k_major_end(start_hi: int, rows: int, kbytes: int, lbo: int, sbo: int, swizzle: str) -> int:
    """One past the last byte a K-major canonical layout starting at most at ``start_hi`` reads
    (PTX ISA 9.7.15.5.1): 8-row groups SBO apart, rows of a group one swizzle width apart (16
    bytes without swizzle, where K's 16-byte chunks sit LBO apart).  A swizzle permutes 16-byte
    chunks within their aligned row, so the last row read ends the range."""
    if swizzle == "none":
        return start_hi + 7 * 16 + (rows // 8 - 1) * sbo + (kbytes // 16 - 1) * lbo + 16
    width = int(swizzle[:-1])
    last = start_hi + 7 * width + (rows // 8 - 1) * sbo + kbytes - 1
    return last - last % width + width


def _wgmma_reads(ins: Instr, defs, fn: Function | None = None) -> list:
    """Byte ranges a wgmma's descriptors may read: the start's bounds widened to whole swizzle rows,
    plus the K-major extent; an operand whose start or fields are not known, or that is
    transposed (MN-major), may read anything."""
    shape = wgmma_shape(ins)
    try:
        n = int(shape.split("n")[1].split("k")[0])
    except (IndexError, ValueError):
        return [_ANY]
    kbytes = 2 * K_STEP_BYTES if ".sp" in ins.opcode else K_STEP_BYTES
    ops = ins.operands
    trans_imms = [o for o in ops[4:] if isinstance(o, Imm)] if any(t in ins.modifiers for t in ("f16", "bf16")) else []
    a_desc = len(ops) > 1 and isinstance(ops[1], Reg)
    trans = {"a": bool(a_desc and len(trans_imms) >= 4 and trans_imms[2].value),
             "b": bool(trans_imms and len(trans_imms) >= 3 and trans_imms[-1].value)}
    out = []
    for which, op, rows in (("a", ops[1] if len(ops) > 1 else None, 64), ("b", ops[2] if len(ops) > 2 else None, n)):
        if not isinstance(op, Reg):
            continue  # A from registers
        start, fields = _desc_start(op, defs, 0, fn), _desc_fields(op, defs)
        if start is None or start[0] is None or fields is None:
            out.append(_ANY)
            continue
        lbo, sbo, swizzle = fields
        if trans[which]:
            out.append(_mn_major_range(ins, which, rows, start, lbo, sbo, swizzle))
            continue
        row = 16 if swizzle == "none" else int(swizzle[:-1])
        lo = start[1] - start[1] % row
        out.append((start[0], lo, _k_major_end(start[2], rows, kbytes, lbo, sbo, swizzle)))
    return out


def _mn_major_range(ins: Instr, which: str, rows: int, start, lbo: int, sbo: int, swizzle: str):
    """The bytes an MN-major (transposed) operand may read: the canonical layout's unswizzled
    extent (``fuzzptx.isa.layouts``, the one table) from the start's bounds, widened to whole
    swizzle atoms (a swizzle permutes bytes within its atom)."""
    form = isa.form_for(ins)
    if form is None or form.shape is None:
        return _ANY
    elem = form.atype if which == "a" else form.btype
    k = form.shape.k // 2 if which == "a" and form.family == "wgmma.sp" else form.shape.k
    try:
        byte, _ = tile_byte_offsets("MN", swizzle, ELEMENT_BITS[elem], lbo, sbo, rows, k)
    except ValueError:
        return _ANY
    atom = SWIZZLES[swizzle].atom_bytes
    end = start[2] + int(byte.max()) + max(1, ELEMENT_BITS[elem] // 8)
    return (start[0], start[1] - start[1] % atom, -(-end // atom) * atom)


def proxy_analysis(ctx: FnCtx, sink: Sink) -> None:
    """State: generic-proxy shared-memory writes not yet followed by fence.proxy.async, as
    (line, byte range).  An async-proxy read (wgmma through its descriptors, a bulk or tensor
    copy or reduction from shared memory to global) of a range one of them may meet is reported.  Writes by
    TMA/bulk copies and cp.async are not generic-proxy writes to fence (the async proxy's own,
    ordered through mbarrier or wait_group)."""
    defs = single_defs(ctx.fn)
    dims = block_dims(ctx.fn, ctx.module.preamble)
    tid_max = dims[0] - 1 if dims and dims[1] == dims[2] == 1 else None

    def report(ins: Instr, reads, st, what: str) -> None:
        lines = sorted({ln for ln, r in st if any(_meets(r, x) for x in reads)})
        if lines:
            shown = ", ".join(str(x) for x in lines[:4] if x)
            sink.add("spec.proxy.fence-missing", "error", _line(ins),
                     f"shared memory written through the generic proxy (line {shown}) may be read by this "
                     f"{what} (async proxy) with no fence.proxy.async in between (PTX ISA 9.7.15.4)")

    def step(site: Site, ins: Instr, st):
        op = ins.opcode
        if op.startswith("fence.proxy.async"):
            return frozenset()
        if _generic_shared_write(ins):
            w = shared_write(ins)
            rng = _range(w[0], w[1], defs, tid_max, ctx.fn, ins) if w is not None else _ANY
            st = st | {(_line(ins) or 0, rng)}
            return st if len(st) <= _PROXY_CAP else frozenset({(min(ln for ln, _ in st), _ANY)})
        if st and is_wgmma(ins):
            report(ins, _wgmma_reads(ins, defs, ctx.fn), st, "wgmma.mma_async")
        elif st and _async_store(ins) and len(ins.operands) > 1:
            report(ins, [_range(ins.operands[1], None, defs, tid_max, ctx.fn, ins)], st, op.split(".global")[0])
        return st

    def join(a, b):
        u = a | b
        return u if len(u) <= _PROXY_CAP else frozenset({(min(ln for ln, _ in u), _ANY)})

    _run(ctx, sink, frozenset(), step, join)


def _map_root(op, defs, depth: int = 0):
    """A key for the value of a tensor-map address: through ``mov``/``cvta``/``cvt``, and for other
    one-definition registers the operation and its operands' keys (an address computed twice the
    same way is one map); a symbol's or an immediate's own, else the register's name."""
    if isinstance(op, (Addr, TensorAddr)):
        off = op.offset if isinstance(op, Addr) else 0
        base = _map_root(op.base, defs, depth)
        return base if not off else ("+", base, off)
    if isinstance(op, Sym):
        return op.name
    if isinstance(op, Imm):
        return ("imm", op.value)
    if not isinstance(op, Reg):
        return None
    ins = defs.get(op.name)
    if ins is None or depth >= 16 or len(ins.operands) < 2:
        return op.name
    if ins.base in ("mov", "cvta", "cvt") and len(ins.operands) == 2:
        return _map_root(ins.operands[1], defs, depth + 1) or op.name
    if ins.base in ("ld", "ldu") and ".param" not in ins.opcode:
        return op.name  # memory may change: a load is its own value
    return (ins.opcode,) + tuple(_map_root(o, defs, depth + 1) for o in ins.operands[1:])


def _modifies_map(ins: Instr):
    """The global tensor-map address an instruction writes (``tensormap.cp_fenceproxy``'s copy out
    of shared memory, ``tensormap.replace`` on a ``.global`` map), else None."""
    op = ins.opcode
    if op.startswith("tensormap.cp_fenceproxy") or (op.startswith("tensormap.replace") and ".global" in op):
        return ins.operands[0] if ins.operands else None
    return None


def tensormap_proxy_analysis(ctx: FnCtx, sink: Sink) -> None:
    """``spec.proxy.tensormap-acquire-missing``: a tensor copy (``cp.async.bulk.tensor``,
    ``cp.reduce.async.bulk.tensor``, ``prefetch.tensor``) through a tensor map this function
    modified in global memory with no ``fence.proxy.tensormap::generic.acquire`` on it since.

    The copy reads its map through the tensor-map proxy; a map written through the generic proxy
    (``tensormap.replace`` on global memory, or ``tensormap.cp_fenceproxy``, whose fused fence is
    only the release half) is seen there only after the acquire half, ``fence.proxy.tensormap::
    generic.acquire`` on its address (PTX ISA 9.7.13.4 membar/fence, 9.7.13.16
    tensormap.cp_fenceproxy; the CUDA guide's "usage of a modified tensor map": release by the
    writer, acquire by a thread of the block that uses it, then a block barrier).  Shared-memory
    writes that build the map (zeroing its 128-byte scratch area, ``tensormap.replace`` on
    ``.shared::cta``) are the release's business, not the async proxy's.  Maps are told apart by
    the register or symbol their address comes from (``_map_root``); an acquire whose address has
    no root settles them all, and a copy reports only a map it names by the same root."""
    defs = single_defs(ctx.fn)

    def block_step(block: int, st):
        for _site, ins in sites(ctx, block):
            written = _modifies_map(ins)
            if written is not None:
                root = _map_root(written, defs)
                if root is not None:
                    st = st | {(_line(ins) or 0, root)}
                continue
            op = ins.opcode
            if op.startswith("fence.proxy.tensormap") and "acquire" in ins.modifiers:
                root = _map_root(ins.operands[0], defs) if ins.operands else None
                st = frozenset(e for e in st if root is not None and e[1] != root)
                continue
            if st and op.startswith(("cp.async.bulk.tensor", "cp.reduce.async.bulk.tensor", "prefetch.tensor")):
                t = next((o for o in ins.operands if isinstance(o, TensorAddr)), None)
                root = _map_root(t, defs) if t is not None else None
                hit = sorted(ln for ln, r in st if r == root)
                if hit:
                    sink.add("spec.proxy.tensormap-acquire-missing", "error", _line(ins),
                             f"this tensor copy uses the tensor map modified at line {hit[0]} with no "
                             "fence.proxy.tensormap::generic.acquire on it since: the copy reads the map through the "
                             "tensor-map proxy and may see it stale (PTX ISA 9.7.13.4, 9.7.13.16)")
        return st

    _run(ctx, sink, frozenset(), None, lambda a, b: a | b, block_step=block_step)


def _barrier_range(ins: Instr, op, defs, tid_max):
    return _range(op, 8, defs, tid_max) if isinstance(op, Addr) else _ANY


def mbarrier_analysis(ctx: FnCtx, sink: Sink) -> None:
    """``spec.mbarrier.no-init``: an mbarrier operation on bytes no ``mbarrier.init`` of the function
    may have initialised (its state is undefined).  ``spec.mbarrier.no-expect-tx``: a bulk copy that
    completes transaction bytes on a barrier no ``expect_tx`` of the function may raise: its phase
    completes on the arrivals alone, before or after the bytes land (a race, or a hang).  Barrier
    identities are byte ranges (``_range``); one nothing bounds meets every other, so both rules only
    fire where no candidate can match."""
    defs = single_defs(ctx.fn)
    dims = block_dims(ctx.fn, ctx.module.preamble)
    tid_max = dims[0] - 1 if dims and dims[1] == dims[2] == 1 else None
    inits, expects, uses, copies = [], [], [], []
    for ins in ctx.fn.instructions():
        op = ins.opcode
        if ins.base == "mbarrier":
            addr = next((o for o in ins.operands if isinstance(o, Addr)), None)
            rng = _barrier_range(ins, addr, defs, tid_max)
            if op.startswith("mbarrier.init"):
                inits.append(rng)
            else:
                uses.append((ins, rng))
                if "expect_tx" in ins.modifiers:
                    expects.append(rng)
        elif op.startswith("cp.async.bulk") and "mbarrier::complete_tx::bytes" in op and ins.operands:
            rng = _barrier_range(ins, ins.operands[-1] if isinstance(ins.operands[-1], Addr) else
                                 next((o for o in reversed(ins.operands) if isinstance(o, Addr)), None), defs, tid_max)
            copies.append((ins, rng))
            uses.append((ins, rng))
    for ins, rng in uses:
        if not any(_meets(rng, r) for r in inits):
            sink.add("spec.mbarrier.no-init", "error", _line(ins),
                     f"{ins.opcode.split('.shared')[0]} on an mbarrier no mbarrier.init of {ctx.fn.name} initialises "
                     "(its state is undefined)")
    for ins, rng in copies:
        if not any(_meets(rng, r) for r in expects):
            sink.add("spec.mbarrier.no-expect-tx", "warning", _line(ins),
                     "this copy completes transaction bytes on an mbarrier no expect_tx raises: the phase completes "
                     "on its arrivals alone, before or after the bytes land")


# ------------------------------------------------------------------ releasing a stage an in-flight wgmma reads


def _barrier_of(ins: Instr):
    return next((o for o in ins.operands if isinstance(o, Addr)), None)


def _stage_write(ins: Instr, defs, tid_max):
    """The shared byte range a write may cover (a bulk copy's size when it is an immediate), or
    None for an instruction that writes no shared memory (mbarrier state is not data)."""
    if ins.base == "mbarrier":
        return None
    op = ins.opcode
    if op.startswith("cp.async.bulk") and ".shared" in op.split(".global")[0] and ins.operands:
        size = ins.operands[2] if len(ins.operands) > 2 and not op.startswith("cp.async.bulk.tensor") else None
        width = size.value if isinstance(size, Imm) and isinstance(size.value, int) else None
        return _range(ins.operands[0], width, defs, tid_max)
    w = shared_write(ins)
    return None if w is None else _range(w[0], w[1], defs, tid_max)


def _bounded(r) -> bool:
    return r[0] is not None


def tensor_map_param(op, defs, depth: int = 0) -> str | None:
    """The kernel parameter a tensor-map operand names: the parameter symbol itself, or a register
    holding its address (``mov.u64 r, tm`` and ``cvta.param.u64``, as ptxas needs it)."""
    if isinstance(op, Sym):
        return op.name
    if not isinstance(op, Reg) or depth > 8:
        return None
    ins = defs.get(op.name)
    if ins is None or len(ins.operands) != 2:
        return None
    if ins.base == "mov" or (ins.base == "cvta" and "param" in ins.modifiers):
        return tensor_map_param(ins.operands[1], defs, depth + 1)
    return None


def copy_destination(ctx: FnCtx, ins: Instr, defs, tid_max):
    """The shared bytes a copy into shared memory writes: a bulk copy's ``[dst, dst + size)``, a
    tensor copy's box footprint (``TensorMap.smem_bytes``, rows padded to the swizzle span) when the
    program's header describes its map; None where unknown.  (Without the map, the 16 bytes every
    box covers would be known, but the kernels of tests/data/triton guard their prologue copies by
    a predicate that also skips the loop whose waits settle them: a path-insensitive read of the
    epilogue's staging bytes would be a false alarm.)"""
    if ".tensor" not in ins.opcode:
        return _stage_write(ins, defs, tid_max)
    if not ins.operands or not isinstance(ins.operands[0], Addr) or "multicast" in ins.opcode \
            or len(ins.operands) < 2 or not isinstance(ins.operands[1], TensorAddr) or "im2col" in ins.opcode:
        return None
    name = tensor_map_param(ins.operands[1].base, defs)
    tm = ctx.tensormaps.get(name) if name is not None else None
    return None if tm is None else _range(ins.operands[0], tm.smem_bytes, defs, tid_max)


def release_analysis(ctx: FnCtx, sink: Sink) -> None:
    """``spec.mbarrier.release-in-flight``: an mbarrier arrive while a wgmma that reads shared
    memory through its descriptors may be in flight (not yet retired by a wgmma.wait_group), on
    a barrier that some thread waits on before writing bytes that wgmma reads.  The arrive may
    complete the phase that wait needs, so the write (a producer refilling a pipeline stage) can
    land while the wgmma still reads the stage: its result is undefined (PTX ISA 9.7.15.7.3:
    only the wait orders the wgmma's reads).  The consumer must arrive after its wait_group.

    Two forward problems: which barrier's wait guards each shared write (the last wait before it
    on each path: a producer waits on the stage's empty barrier, then copies), then the
    in-flight wgmmas at each arrive.  Only bounded ranges (a known variable) are compared: a barrier, stage or
    descriptor nothing bounds says nothing here, so the rule never guesses."""
    defs = single_defs(ctx.fn)
    dims = block_dims(ctx.fn, ctx.module.preamble)
    tid_max = dims[0] - 1 if dims and dims[1] == dims[2] == 1 else None
    guarded: dict[int, tuple] = {}  # line of a write -> (its range, the barrier ranges guarding it)

    def guard_step(site: Site, ins: Instr, st):
        if ins.base == "mbarrier" and ("try_wait" in ins.modifiers or "test_wait" in ins.modifiers):
            return frozenset({_barrier_range(ins, _barrier_of(ins), defs, tid_max)})
        # a tensor copy's box where the header describes its map (else nothing: no guess)
        w = copy_destination(ctx, ins, defs, tid_max) if ".tensor" in ins.opcode else _stage_write(ins, defs, tid_max)
        if w is not None and st:
            key = (site.block, site.pos)
            guarded[key] = (w, guarded.get(key, (w, frozenset()))[1] | st)
        return st

    _run(ctx, _Recording(Sink(None, None, "spec")), frozenset(), guard_step, lambda a, b: a | b)
    writes = [(w, frozenset(g for g in gs if _bounded(g))) for w, gs in guarded.values() if _bounded(w)]
    writes = [(w, gs) for w, gs in writes if gs]
    if not writes:
        return

    def reads_of(site: Site) -> list:
        return [r for r in _wgmma_reads(ctx.wgmmas[site], defs) if _bounded(r)]

    def step(site: Site, ins: Instr, st):
        if is_wgmma(ins):
            return _norm(st | {(site, -1)})
        if is_commit(ins):
            return frozenset((s, 0 if d < 0 else min(d + 1, DEPTH_CAP)) for s, d in st)
        if is_wait(ins):
            n = wait_n(ins) or 0
            return frozenset((s, d) for s, d in st if d < 0 or d < n)
        if st and ins.base == "mbarrier" and "arrive" in ins.modifiers:
            bar = _barrier_range(ins, _barrier_of(ins), defs, tid_max)
            if not _bounded(bar):
                return st
            for other, _depth in sorted(st, key=lambda x: (x[0].block, x[0].pos)):
                hit = [w for w, gs in writes if any(_meets(bar, g) for g in gs)
                       and any(_meets(w, r) for r in reads_of(other))]
                if hit:
                    sink.add("spec.mbarrier.release-in-flight", "error", _line(ins),
                             f"this arrive may release the wgmma.mma_async at {_lt(ctx.line(other))} while it is in "
                             f"flight: a thread waits on this mbarrier before writing shared memory that wgmma reads "
                             f"(bytes {hit[0][1]}..{'?' if hit[0][2] is None else hit[0][2] - 1} of {hit[0][0]}); "
                             "arrive after the wgmma.wait_group that retires it (PTX ISA 9.7.15.7.3)")
                    break
        return st

    _run(ctx, sink, frozenset(), step, lambda a, b: _norm(a | b))


# ------------------------------------------------------------------ reading a stage before its barrier


def _shared_read(ins: Instr, defs, tid_max) -> list:
    """Byte ranges a generic shared load (``ld.shared``, ``ldmatrix``) or a wgmma (through its
    descriptors) may read; [] for any other instruction."""
    op = ins.opcode
    if ins.base == "ld" and ".shared" in op and len(ins.operands) > 1:
        vec = next((m for m in ins.modifiers if m in ("v2", "v4", "v8")), None)
        width = type_bytes(ins.modifiers[-1]) * (int(vec[1:]) if vec else 1)
        return [_range(ins.operands[1], width, defs, tid_max)]
    if ins.base == "ldmatrix" and len(ins.operands) > 1:
        return [_range(ins.operands[1], 16, defs, tid_max)]  # each thread's address is one 16-byte row
    if is_wgmma(ins):
        return _wgmma_reads(ins, defs)
    return []


# ------------------------------------------------------------------ .aligned under divergence


def _required_level(ins: Instr) -> int | None:
    base = ins.base
    if base in ("wgmma", "setmaxnreg"):
        need = WARPGROUP
    elif base in ("mma", "wmma", "ldmatrix", "stmatrix"):
        need = WARP
    else:
        return None
    return need if "aligned" in ins.modifiers else None


def _callee_levels(ctx: FnCtx) -> dict[str, int]:
    """Per defined .func: the uniformity its .aligned tensor-core instructions need (a call summary)."""
    return _module_callee_levels(ctx.module)


@per_object(64)
def _module_callee_levels(module) -> dict[str, int]:
    """``_callee_levels`` once per module (per function, a module of N kernels cost N^2)."""
    out: dict[str, int] = {}
    for f in module.functions():
        if f.body is not None and f.kind == "func":
            levels = [lv for i in f.instructions() if (lv := _required_level(i)) is not None]
            if levels:
                out[f.name] = max(levels)
    return out


def aligned_analysis(ctx: FnCtx, sink: Sink) -> None:
    callees = _callee_levels(ctx)
    for b in ctx.g.order:
        for site, ins in sites(ctx, b):
            need = _required_level(ins)
            if need is None and ins.base == "call" and callees:
                names = [o.name for o in ins.operands if isinstance(o, Sym) and o.name in callees]
                need = max((callees[n] for n in names), default=None)
            if need is None:
                continue
            scope = LEVEL_NAMES[need]
            for dep in sorted(ctx.ctrl_deps(site), key=str):
                lvl = _dep_level(ctx, dep)
                if lvl < need:
                    what = ins.opcode.split('.sync')[0] if ins.base != "call" else "a call to a .func with .aligned tensor-core instructions"
                    sink.add("spec.aligned.divergent", "error", _line(ins),
                             f"{what} is .aligned but runs under the {ctx.dep_text(dep)}, "
                             f"which is not {scope}-uniform; every thread of the {scope} must execute it")
                    break


def _dep_level(ctx: FnCtx, dep) -> int:
    """How uniform a control dependence is: its guard's level, or its branch's -- no more than the
    level of the block the branch ends (a uniform condition tested by only some threads)."""
    if dep[0] == "guard":
        return ctx.uni.level(Reg(dep[1]))
    r = branch_reg(ctx.g.blocks[dep[0]])
    return 0 if r is None else min(ctx.uni.level(r), ctx.uni.block_level.get(dep[0], CTA))


# ------------------------------------------------------------------ descriptors


def const_values(ctx: FnCtx, names=None) -> dict[str, int]:
    """Registers with one definition whose value folds to a constant (mov/add/or/shl/cvt of constants);
    only ``names`` (and what they depend on) are evaluated when given."""
    defs: dict[str, list[Instr]] = {}
    for b in ctx.g.blocks:
        for ins in b.instrs:
            for d in defs_uses(ins)[0]:
                defs.setdefault(d, []).append(ins)
    memo: dict[str, int | None] = {}

    def value(op, depth=0):
        if isinstance(op, Imm) and isinstance(op.value, int):
            return op.value
        if isinstance(op, Reg) and depth < 8:
            if op.name in memo:
                return memo[op.name]
            ds = defs.get(op.name, [])
            v = fold(ds[0], depth + 1) if len(ds) == 1 and ds[0].guard is None else None
            memo[op.name] = v
            return v
        return None

    def fold(ins: Instr, depth):
        if ins.base not in ("mov", "cvt", "add", "or", "shl"):
            return None
        args = [value(o, depth) for o in ins.operands[1:]]
        if any(a is None for a in args) or not args:
            return None
        mask = (1 << 64) - 1
        if ins.base in ("mov", "cvt") and len(args) == 1:
            return args[0] & mask
        if ins.base == "add" and len(args) == 2:
            return (args[0] + args[1]) & mask
        if ins.base == "or" and len(args) == 2:
            return args[0] | args[1]
        if ins.base == "shl" and len(args) == 2:
            return (args[0] << args[1]) & mask
        return None

    vals: dict[str, int] = {}
    for name in (defs if names is None else names):
        v = value(Reg(name))
        if v is not None:
            vals[name] = v
    return vals


SWIZZLE_BYTES = {code: PATTERN_ALIGN[name] for name, code in SWIZZLE_CODES.items() if name != "none"}
SWIZZLE_NAMES = {code: "no swizzle" if name == "none" else f"{name} swizzle" for name, code in SWIZZLE_CODES.items()}


def descriptor_analysis(ctx: FnCtx, sink: Sink) -> None:
    """Decode descriptors whose fields are known (constants, or built from aligned shared symbols)."""
    uses = [(site.block, site.pos, d) for site, ins in ctx.wgmmas.items() for d in sorted(wgmma_regs(ins)[2])]
    if not uses:
        return
    known = known_bits(ctx.module, ctx.fn, ctx.g.blocks, uses)
    end = None  # one past the kernel's shared memory, where no launch setting changes it
    if ctx.fn.kind == "entry":
        lay = shared_layout(ctx.module, ctx.fn)
        end = lay.static_end if lay.dynamic_start is None else None
    for block, pos, name in sorted(uses):
        mask, v = known[(block, pos, name)]
        if mask:
            _check_descriptor(name, mask, v, ctx.g.blocks[block].instrs[pos], sink, end)


def _field(mask: int, v: int, lo: int, width: int) -> int | None:
    m = ((1 << width) - 1) << lo
    return (v & m) >> lo if mask & m == m else None


def _check_descriptor(name: str, mask: int, v: int, ins: Instr, sink: Sink, end: int | None = None) -> None:
    line = _line(ins)
    shown = f"{v:#x}" if mask == (1 << 64) - 1 else "(built at run time)"
    start14 = _field(mask, v, *START_FIELD)  # start >> 4: the whole start address, where known
    if end is not None and start14 is not None and start14 << 4 >= end:
        sink.add("spec.smem.out-of-bounds", "error", line,
                 f"descriptor {name} = {shown}: the matrix starts at shared offset {start14 << 4:#x}, past the end of "
                 f"the kernel's shared memory ({end:#x}; its variables start at {SHARED_RESERVED:#x})")
    reserved = v & mask & RESERVED_MASK
    if reserved:
        sink.add("spec.desc.reserved", "warning", line, f"descriptor {name} = {shown} sets reserved bits {reserved:#x}")
    swz, base = _field(mask, v, *SWIZZLE_FIELD), _field(mask, v, *BASE_OFFSET_FIELD)
    if swz == 0 and base:
        sink.add("spec.desc.base-offset", "warning", line,
                 f"descriptor {name} = {shown}: base offset {base} has no meaning with no swizzle (PTX ISA 9.7.15.5.1.2.2)")
    low = _field(mask, v, 0, 6)  # start >> 4, bits 0..5: the start address modulo 1024
    if swz and base is not None and low is not None:
        period = SWIZZLE_BYTES[swz]
        start = low << 4
        want = (start >> 7) & 7
        # Only the pattern's own line bits matter: the swizzle phase is ((address >> 7) - base)
        # mod (period / 128) (checked on the H100: tests/hw_records/dense_wgmma_base_offset_explore.json),
        # so for 64B and 32B modes base offsets equal modulo 4 and 2 describe the same layout
        # (e.g. a K-slice start 32 bytes into line 4 of a 64B pattern with base offset 0).
        lines = max(1, period // 128)
        if (base - want) % lines:
            where = f"{start14 << 4:#x}" if start14 is not None else f"{start:#x} (mod 1024)"
            sink.add("spec.desc.base-offset", "error", line,
                     f"descriptor {name} = {shown}: matrix start {where} with {SWIZZLE_NAMES[swz]} needs base offset "
                     f"(start >> 7) & 7 = {want}, but the descriptor has {base} (PTX ISA 9.7.15.5.1.2.2)")


# ------------------------------------------------------------------ driver


class _Recording:
    """Stands in for a function's ``Sink`` in the dataflow analyses: while ``_run`` steps a block,
    what the block reports goes to that block's record; outside, straight to the sink."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.buf: list | None = None

    def add(self, *args) -> None:
        if self.buf is None:
            self.sink.add(*args)
        else:
            self.buf.append(args)


def _run(ctx: FnCtx, sink: _Recording, entry, step, join, end_of_block=None, block_step=None) -> None:
    """Solve an analysis to its fixed point and report from each block's final in-state.

    Every transfer records what the block reports; the report pass replays, block by block in
    layout order, the record of the solver's last transfer of the block (which starts from the
    block's final in-state) instead of stepping the block again.  ``block_step(block, state)``,
    when given, replaces stepping ``step`` through the block's hot sites one by one."""
    records = BlockRecords()

    def transfer(block: int, st_in):
        buf = sink.buf = []
        try:
            if block_step is not None:
                st = block_step(block, st_in)
            else:
                st = st_in
                for site, ins in sites(ctx, block, hot_only=True):
                    st = step(site, ins, st)
            if end_of_block is not None:
                end_of_block(block, st)
        finally:
            sink.buf = None
        records.keep(block, st_in, buf)
        return st

    ins = solve_forward(ctx.g, entry, transfer, lambda states: _fold(join, states))
    for _, buf in records.final(ctx.g, ins, transfer):
        for args in buf:
            sink.sink.add(*args)


def _fold(join, states):
    acc = states[0]
    for s in states[1:]:
        acc = join(acc, s)
    return acc


def check_function(ctx: FnCtx, sink: Sink) -> None:
    if ctx.wgmmas or any(i.base == "wgmma" for i in ctx.fn.instructions()):
        rec = _Recording(sink)
        fence_analysis(ctx, rec)
        inflight_analysis(ctx, rec)
        proxy_analysis(ctx, rec)
        if any(i.base == "mbarrier" for i in ctx.fn.instructions()):
            release_analysis(ctx, rec)
        descriptor_analysis(ctx, sink)
    elif any(_async_store(i) for i in ctx.fn.instructions()):
        proxy_analysis(ctx, _Recording(sink))  # a TMA store reads through the async proxy too
    if any(_modifies_map(i) is not None for i in ctx.fn.instructions()):
        tensormap_proxy_analysis(ctx, _Recording(sink))
    if any(i.base == "mbarrier" or (i.base == "cp" and "complete_tx" in i.opcode) for i in ctx.fn.instructions()):
        mbarrier_analysis(ctx, sink)
    aligned_analysis(ctx, sink)
