"""Tensor copies through tensor maps (TMA), bulk stores and their bulk groups, in the reference.

A tensor map is the header's ``TENSORMAP:`` description (``fuzzptx.program.TensorMap``), found
through the kernel parameter the ``[tmap, {coords}]`` operand names (the parameter symbol, or a
register holding its address, ``cvta.param`` or not): the reference never reads the driver's
opaque 128-byte encoding (those parameter bytes read as undefined).

Loads (``cp.async.bulk.tensor.Nd.shared::cluster|cta.global[.tile].mbarrier::complete_tx::bytes``,
one CTA): the box at the coordinates (signed 32-bit, innermost first), traversed with the element
strides, lands in shared memory densely (innermost dimension fastest), each byte address then
swizzled by the map's mode with ``fuzzptx.isa.layouts.SWIZZLES`` (the one table wgmma's
descriptors read) on the absolute shared address.  Elements outside the tensor are filled with
zero, or with a NaN for ``oob=nan`` (``NAN_FILL``).  The barrier receives complete_tx of the
whole box (out-of-bounds elements included); the bytes stay undefined until a wait observes the
phase, exactly as ``mbarrier.h_cp``'s bulk copies (``Barrier.landing``).

Stores (``cp.async.bulk.tensor.Nd.global.shared::cta[.tile].bulk_group``, ``cp.reduce.async.bulk
.tensor`` with add/min/max/and/or/xor on integer maps, and ``cp.async.bulk.global.shared::cta
.bulk_group``): the async proxy reads shared memory some time between the issue and the
``cp.async.bulk.wait_group.read`` that covers the store's bulk group, and writes global memory
by the covering ``cp.async.bulk.wait_group``.  So: the bytes are taken at the issue; a byte the
generic proxy wrote with no ``fence.proxy.async`` since (the same per-byte record wgmma's
operand reads use) makes its element undefined, and so does a byte that changed between the issue
and the read's completion (the async read may see either).  Until the covering
``wait_group`` the global bytes read as undefined; out-of-bounds elements are not written.  At the
kernel's end every group completes; one whose shared-memory read no ``wait_group.read`` covered
leaves its elements undefined (the CTA's shared memory may be gone before the read).

``.multicast::cluster`` loads land in every CTA of the cluster their ``ctaMask`` names (``cluster``); a ``ctaMask``
naming rank 0 delivers the box to this CTA as the plain load does, a mask of 0 nowhere; a rank outside
the cluster stops the kernel (``cluster.multicast``, as the H100 does).

Not modelled (``Unsupported``): ``.im2col``, interleaved maps, an element stride other than 1 in the
innermost dimension, float reductions.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fuzzptx.isa.layouts import ROW_BYTES, SWIZZLES
from fuzzptx.program import TensorMap
from fuzzptx.ptx.ir import Imm, Sym, TensorAddr

import fuzzptx.oracles.reference.cluster as cluster
import fuzzptx.oracles.reference.cp_async as cp_async
import fuzzptx.oracles.reference.mbarrier as mbarrier
import fuzzptx.oracles.reference.tensormap as tensormap
from .errors import BadAddress, Undefined, Unsupported
from .mem_ops import _address
from .memory import _VIEW
from .values import U64, UNDEF, Shadow, sign_extend, undef_where

# What an out-of-bounds element of an ``oob=nan`` map holds: 0x7FF7 in every 16 bits, as an H100
# filled f64 boxes (tests/hw_records/tma_tensor_h100.json); a NaN at every float width (the judges
# compare any NaN equal to a NaN in float outputs).
NAN_FILL = {2: 0x7FF7, 4: 0x7FF77FF7, 8: 0x7FF77FF77FF77FF7}
ALIGN_SHARED = 128  # shared-memory box address alignment of tensor copies (PTX ISA, cp.async.bulk.tensor)
SWIZZLE_ALIGN = {"none": 128, "32B": 256, "64B": 512, "128B": 1024}  # a pattern's repeat (TMA's smem alignment)
REDUCE_INT = ("add", "min", "max", "and", "or", "xor")


# ------------------------------------------------------------------ the box geometry


@dataclass(frozen=True)
class Box:
    """Where the elements of one copy live: per element, its global byte offset (in the buffer),
    whether it lies inside the tensor, and its shared byte offset from the box start (swizzled
    later, on absolute addresses)."""

    gofs: np.ndarray  # int64 [E]
    inside: np.ndarray  # bool [E]
    sofs: np.ndarray  # int64 [E]: dense offset in shared memory from the box start
    eb: int
    # outside only past dims[0], in the 16-byte run of a row that ends the tensor's last in-bounds
    # element: a store may write these (STORE_SPILL)
    spill: np.ndarray | None = None


def box_of(tm: TensorMap, coords: tuple[int, ...]) -> Box:
    """The elements a copy at ``coords`` moves (innermost dimension fastest, as they land)."""
    if tm.interleave != "none":
        raise ValueError("interleaved tensor maps are not modelled")
    es = tm.element_strides
    if es[0] != 1:
        raise ValueError("an element stride other than 1 in the innermost dimension is not modelled")
    counts = [-(-b // e) for b, e in zip(tm.box, es)]
    grids = np.meshgrid(*[np.arange(n, dtype=np.int64) for n in reversed(counts)], indexing="ij")
    idx = [g.ravel() for g in reversed(grids)]  # idx[k]: box index in dimension k, dimension 0 fastest
    eb = tm.element_bytes
    strides = tm.byte_strides()
    gofs = np.full(idx[0].shape, tm.offset, np.int64)
    inside = np.ones(idx[0].shape, bool)
    rows_in = np.ones(idx[0].shape, bool)
    for k in range(tm.rank):
        x = coords[k] + idx[k] * es[k]
        inside &= (x >= 0) & (x < tm.dims[k])
        if k:
            rows_in &= (x >= 0) & (x < tm.dims[k])
        else:
            x0 = x
        gofs += x * strides[k]
    row_end = -(-tm.dims[0] * eb // 16) * 16  # the row's last 16-byte run, rounded up
    spill = rows_in & (x0 >= tm.dims[0]) & (x0 * eb < row_end)
    # rows (the outer dimensions, dimension 1 fastest) one ``smem_row_bytes`` apart: dense, or
    # padded to the swizzle span
    row = np.arange(idx[0].size, dtype=np.int64) // counts[0]
    sofs = row * tm.smem_row_bytes + idx[0] * eb
    return Box(gofs, inside, sofs, eb, spill)


def swizzled(tm: TensorMap, start: int, sofs: np.ndarray) -> np.ndarray:
    """Absolute shared byte addresses of the box's bytes at dense offsets ``sofs`` from ``start``."""
    return np.asarray(SWIZZLES[tm.swizzle](start + sofs), np.int64)


def element_bytes_of(box: Box, base: np.ndarray) -> np.ndarray:
    """[E, eb] byte positions from per-element starts ``base``."""
    return base[:, None] + np.arange(box.eb, dtype=np.int64)


# ------------------------------------------------------------------ operands


def _tmaps(m) -> dict[int, TensorMap]:
    """Parameter address -> tensor map, once per machine."""
    t = getattr(m, "tensormaps", None)
    if t is None:
        t = m.tensormaps = {}
        for tm in getattr(m.program, "tensormaps", ()):
            space, addr = m.symbols.get(tm.name, (None, None))
            if space == "param":
                t[addr + tm.at] = tm
    return t


def _tensor_operand(m, f, ins, op, idx) -> tuple[list[TensorMap], np.ndarray]:
    """(the map each issuing thread names, its coordinates int64 [threads, rank])."""
    if not isinstance(op, TensorAddr):
        raise Unsupported.at(ins, "the tensor operand must be [tmap, {coords}]")
    table = _tmaps(m)
    if isinstance(op.base, Sym):
        space, addr = m.symbol(op.base.name, ins)
        addrs = np.full(idx.size, addr, np.uint64)
    else:
        bits, sh = m.read(f, op.base, "u64", ins)
        if sh is not None and sh.nonexact()[idx].any():
            raise Undefined(f"line {ins.loc.line if ins.loc else '?'}: a tensor copy through an undefined tensor-map address")
        addrs = bits[idx]
    maps = []
    for a in addrs.tolist():
        tm = table.get(int(a))
        if tm is None:  # a map the kernel built and copied to global memory (tensormap.replace)
            tm = tensormap.device_map(m, ins, int(a))
        if tm is None:
            raise Unsupported.at(ins, f"the tensor map at {int(a):#x} is no TENSORMAP parameter of the header "
                                      "(the reference reads tensor maps from the header's description only)")
        maps.append(tm)
    rank = len(op.coords)
    coords = np.zeros((idx.size, rank), np.int64)
    for k, c in enumerate(op.coords):
        bits, sh = m.read(f, c, "s32", ins)
        if sh is not None and sh.nonexact()[idx].any():
            raise Undefined(f"line {ins.loc.line if ins.loc else '?'}: a tensor copy at an undefined coordinate")
        coords[:, k] = sign_extend(bits[idx] & U64(0xFFFFFFFF), 32).astype(np.int64)
    for tm in maps:
        if tm.rank != rank:
            raise BadAddress.at(ins, f"a {rank}d tensor copy through the rank-{tm.rank} tensor map {tm.name}")
    log = getattr(m, "tma_log", None)  # fuzzptx.launch's probe: which map each copy used, where
    if log is not None:
        for tm, c in zip(maps, coords.tolist()):
            log.append((tm.name, tm.at, tuple(c)))
    return maps, coords


def _note_start(m, tm: TensorMap, start: int) -> None:
    """fuzzptx.launch's probe: the shared address each copy through a map used (a pipeline's stages
    lie one box apart)."""
    log = getattr(m, "tma_smem_log", None)
    if log is not None:
        log.append((tm.name, tm.at, start))


def _dimension(ins) -> int:
    for mod in ins.modifiers:
        if len(mod) == 2 and mod[1] == "d" and mod[0] in "12345":
            return int(mod[0])
    raise Unsupported.at(ins, "a tensor copy without .1d-.5d")


def _check_shared(ins, tm: TensorMap, start: int) -> None:
    if start % ALIGN_SHARED:
        raise BadAddress.at(ins, f"tensor copy shared address {start:#x} is not {ALIGN_SHARED}-byte aligned")
    if start % SWIZZLE_ALIGN[tm.swizzle]:
        raise Unsupported.at(ins, f"a {tm.swizzle}-swizzled box at shared {start:#x}, not on a "
                                  f"{SWIZZLE_ALIGN[tm.swizzle]}-byte pattern boundary, is not modelled")


def _check_start(ins, tm: TensorMap, coords) -> None:
    """The box's first byte in global memory must be 16-byte aligned: on an H100 a tensor copy (load,
    store or reduction) whose innermost coordinate times the element size is not a multiple of 16
    stops the kernel with an illegal instruction, in bounds or not (180 of 180 runs,
    tests/hw_records/tma_tensor_h100.json)."""
    off = int(coords[0]) * tm.element_bytes
    if off % 16:
        raise BadAddress.at(ins, f"tensor map {tm.name}: innermost coordinate {int(coords[0])} starts the box "
                                 f"{off} bytes into a row, not on 16 bytes (the H100 faults: illegal instruction)")


def _check_map(ins, tm: TensorMap) -> None:
    if tm.interleave != "none":
        raise Unsupported.at(ins, f"interleaved tensor map {tm.name} (interleave={tm.interleave}) is not modelled")
    if tm.element_strides[0] != 1:
        raise Unsupported.at(ins, f"tensor map {tm.name}: an innermost element stride other than 1 is not modelled")
    inner = tm.box[0] * tm.element_bytes
    if tm.swizzle != "none" and inner > ROW_BYTES[tm.swizzle]:
        raise BadAddress.at(ins, f"tensor map {tm.name}: inner box row of {inner} bytes exceeds the {tm.swizzle} span")


# ------------------------------------------------------------------ loads


def h_cp(m, f, ins, act):
    """Every ``cp`` instruction: tensor copies, bulk stores and groups here, ``cp.async`` in
    ``cp_async``, bulk loads in ``mbarrier``."""
    op = ins.opcode
    mods = ins.modifiers
    if op.startswith("cp.async.bulk.tensor") or op.startswith("cp.reduce.async.bulk.tensor"):
        if "im2col" in mods or any(x.startswith("im2col") for x in mods):
            raise Unsupported.at(ins, "im2col tensor copies are not modelled")
        if mods[0] == "reduce" or mods[4] == "global":
            return _tensor_store(m, f, ins, act)
        return _tensor_load(m, f, ins, act)
    if op == "cp.async.bulk.commit_group":
        return _commit(m, act)
    if op.startswith("cp.async.bulk.wait_group"):
        return _wait_group(m, f, ins, act, "read" in mods)
    if op.startswith("cp.async.bulk.global.shared::cta.bulk_group"):
        return _bulk_store(m, f, ins, act)
    if op.startswith("cp.async.") and not op.startswith("cp.async.bulk"):
        return cp_async.h_cp_async(m, f, ins, act)
    return mbarrier.h_cp(m, f, ins, act)


def _tensor_load(m, f, ins, act):
    if "mbarrier::complete_tx::bytes" not in ins.modifiers:
        raise Unsupported.at(ins, f"{ins.opcode} is not supported by the reference")
    ops = ins.operands
    dst, src, bar = ops[0], ops[1], ops[2]
    idx, daddr, _ = _address(m, f, ins, dst, act)
    masks = cluster.multicast(m, f, ins, ops[3], idx) if "multicast::cluster" in ins.modifiers else None
    maps, coords = _tensor_operand(m, f, ins, src, idx)
    _, baddr = mbarrier._addrs(m, f, ins, bar, act)
    if _dimension(ins) != coords.shape[1]:
        raise BadAddress.at(ins, f"{ins.opcode} with {coords.shape[1]} coordinates")
    for j in range(idx.size):
        tm = maps[j]
        _check_map(ins, tm)
        places = cluster.destinations(m, int(daddr[j]) & 0xFFFFFFFF, int(baddr[j]) & 0xFFFFFFFF,
                                      None if masks is None else int(masks[j]), ins)
        fan = getattr(m, "tma_fan_log", None)  # fuzzptx.launch's probe: how many CTAs each map's copies reach
        if fan is not None:
            fan[(tm.name, tm.at)] = max(fan.get((tm.name, tm.at), 1), len(places))
        start = cluster.owner(m, int(daddr[j]) & 0xFFFFFFFF, ins)[1]  # CTA-relative
        _note_start(m, tm, start)
        _check_shared(ins, tm, start)
        _check_start(ins, tm, coords[j])
        if not places:  # a ctaMask naming no CTA: nothing lands, nothing completes
            continue
        bars = [mbarrier._get(mt, ins, bo) for mt, _, bo in places]
        box = box_of(tm, tuple(int(c) for c in coords[j]))
        data, undef = _gather(m, ins, tm, box)
        words = data.view(np.uint32).astype(np.uint64)
        wundef = undef.reshape(-1, 4).any(axis=1)
        eb = box.eb
        for (mt, at, _), b in zip(places, bars):  # each CTA the copy lands in, at the same offsets
            _land_box(mt, ins, tm, box, at, b, words, wundef, eb)


def _land_box(m, ins, tm: TensorMap, box: Box, start: int, b, words: np.ndarray, wundef: np.ndarray, eb: int) -> None:
    """The box's words land in ``m``'s shared memory at ``start`` (swizzled), then complete_tx on
    ``b``: they read as undefined until a wait observes the phase (``mbarrier.Barrier.landing``)."""
    woff = swizzled(tm, start, box.sofs.reshape(-1, 4 // eb)[:, 0] if eb <= 4 else
                    (box.sofs[:, None] + np.arange(0, eb, 4)).ravel())
    (region, _pos, off), = m.mem.resolve("shared", woff.astype(np.uint64), 4, ins, "store")
    region.write(off, 4, [(words, Shadow.undef(words.size, 32))])
    nb = tm.box_bytes
    if b.pending == 0 and 0 < b.tx < nb:
        # every arrival is in and the phase expects fewer bytes than the box brings: it completes
        # once that many have landed, before the rest, so its waiters see the box undefined; the
        # remaining bytes count against the next phase
        m.note(f"a tensor copy of {nb} bytes lands on a phase expecting {b.tx}: the phase completes early or never "
               "(an H200 hangs on it) (undefined)")
        b.landing.append((region, off, [(words, Shadow.undef(words.size, 32))]))
        rest = nb - b.tx
        b.async_tx += b.tx
        b.tx = 0
        b.settle()
        b.tx -= rest
        return
    b.landing.append((region, off, [(words, Shadow.undef(words.size, 32, wundef) if wundef.any() else None)]))
    b.tx -= nb
    b.async_tx += nb
    b.settle()


def _gather(m, ins, tm: TensorMap, box: Box) -> tuple[np.ndarray, np.ndarray]:
    """The box's bytes in element order (dense, uint8; ``Box.sofs`` places them) and which are undefined."""
    region = m.buffers.get(tm.buffer)
    if region is None:
        raise Unsupported.at(ins, f"tensor map {tm.name}: buffer {tm.buffer} is not a buffer of the run")
    eb = box.eb
    fill = NAN_FILL[eb] if tm.oob == "nan" else 0
    data = np.frombuffer(int(fill).to_bytes(eb, "little") * box.inside.size, np.uint8).copy()
    undef = np.zeros(data.size, bool)
    inside = np.flatnonzero(box.inside)
    if inside.size:
        gbytes = element_bytes_of(box, box.gofs[inside]).ravel()
        if gbytes.min() < 0 or gbytes.max() >= region.size:
            bad = int(gbytes[(gbytes < 0) | (gbytes >= region.size)][0])
            raise BadAddress.at(ins, f"tensor map {tm.name} reaches byte {bad} of buffer {tm.buffer} "
                                     f"({region.size} bytes)")
        ((bits, sh),) = region.read(gbytes.astype(np.int64), 1, 1)
        sbytes = element_bytes_of(box, inside.astype(np.int64) * eb).ravel()  # dense: element order
        data[sbytes] = bits.astype(np.uint8)
        if sh is not None:
            undef[sbytes] = sh.nonexact()
    return data, undef


# ------------------------------------------------------------------ stores and bulk groups


@dataclass(eq=False)
class Store:
    """One bulk store in flight: the shared bytes it reads (taken at the issue) and where they go."""

    sbytes: np.ndarray  # int64 [E, eb] shared byte offsets read, per element
    taken: np.ndarray  # uint8 [E, eb] their values at the issue
    bad: np.ndarray  # bool [E]: element undefined (unfenced generic write, undefined bytes)
    region: object  # the global region written
    gbytes: np.ndarray  # int64 [E, eb] its byte offsets
    reduce: str | None = None
    rtype: str = ""
    old: np.ndarray | None = None  # uint8 [E, eb]: a reduction's global bytes before the issue
    old_bad: np.ndarray | None = None  # bool [E]: ... undefined there
    read_done: bool = False
    values: np.ndarray | None = None  # uint8 [E, eb] once the read completed
    # the elements' value sets as read at the issue (whole aligned elements of 2 to 8 bytes, no
    # reduction): a bound a wgmma result carries (spec mode) lands in global memory with the bytes,
    # where a byte-wise read could only call it undefined (every CUTLASS D went out so)
    carried: Shadow | None = None


@dataclass
class Groups:
    """Per thread: bulk stores not yet committed, and committed groups oldest first."""

    open: dict = field(default_factory=dict)  # tid -> [Store]
    committed: dict = field(default_factory=dict)  # tid -> [[Store]]


def _groups(m) -> Groups:
    g = getattr(m, "bulk_groups", None)
    if g is None:
        g = m.bulk_groups = Groups()
    return g


def _issue(m, ins, tid: int, start: int, tm: TensorMap | None, box: Box, region, reduce: str | None = None,
           rtype: str = "") -> None:
    spill = box.spill if box.spill is not None else np.zeros_like(box.inside)
    past = spill & (box.gofs + box.eb > region.size)
    if past.any():  # beyond the buffer: on the GPU the allocation's slack, here nowhere to put them
        m.note("a bulk tensor store spills out-of-bounds elements past the end of its buffer (the H100 writes them)")
        spill = spill & ~past
    keep = np.flatnonzero(box.inside | spill)
    spilt = spill[keep]
    if spilt.any():
        m.note("a bulk tensor store's box ends inside a 16-byte run past the tensor's first dimension: "
               "the H100 writes those out-of-bounds elements too (undefined)")
    sh_region = m.mem.shared
    sofs = swizzled(tm, start, box.sofs[keep]) if tm is not None else start + box.sofs[keep]
    sbytes = element_bytes_of(box, sofs)
    if sbytes.size and (sbytes.min() < 0 or sbytes.max() >= sh_region.size):
        raise BadAddress.at(ins, f"bulk store reads shared offset {int(sbytes.max()):#x}, outside the "
                                 f"{sh_region.size} bytes of shared memory")
    gbytes = element_bytes_of(box, box.gofs[keep])
    if gbytes.size and (gbytes.min() < 0 or gbytes.max() >= region.size):
        raise BadAddress.at(ins, f"bulk store writes byte {int(gbytes.max())} of {region.name} ({region.size} bytes)")
    flat = sbytes.ravel()
    carried = None
    if flat.size:
        ((bits, sh),) = sh_region.read(flat, 1, 1)
        taken = bits.astype(np.uint8).reshape(sbytes.shape)
        bad = (sh.nonexact() if sh is not None else np.zeros(flat.size, bool)).reshape(sbytes.shape).any(axis=1)
        if sh is not None and reduce is None and box.eb in (2, 4, 8) and not (sbytes[:, 0] % box.eb).any() \
                and not (gbytes[:, 0] % box.eb).any():
            ((_, carried),) = sh_region.read(sbytes[:, 0], box.eb, 1)
            if carried is not None:
                bad = (carried.kind == UNDEF).any(axis=1)
        dirty = (sh_region.dirty[flat] >= 0).reshape(sbytes.shape).any(axis=1) if sh_region.dirty is not None \
            else np.zeros(len(sbytes), bool)
        if dirty.any():
            m.note("a bulk store reads shared memory written by the generic proxy with no fence.proxy.async "
                   "since (undefined)")
        bad = bad | dirty | spilt
        # until the covering wait_group, global memory holds old or new bytes
        gflat = gbytes.ravel()
        ((gbits, gsh),) = region.read(gflat, 1, 1)
        old = gbits.astype(np.uint8).reshape(gbytes.shape)
        old_bad = (gsh.nonexact() if gsh is not None else np.zeros(gflat.size, bool)).reshape(gbytes.shape).any(axis=1)
        region.write(gflat, 1, [(gbits, Shadow.undef(gflat.size, 8))])
    else:
        taken = old = np.zeros((0, box.eb), np.uint8)
        bad = old_bad = np.zeros(0, bool)
    _groups(m).open.setdefault(tid, []).append(Store(sbytes, taken, bad, region, gbytes, reduce, rtype, old, old_bad,
                                                     carried=carried))


def _tensor_store(m, f, ins, act):
    mods = ins.modifiers
    if "bulk_group" not in mods:
        raise Unsupported.at(ins, f"{ins.opcode} is not supported by the reference")
    reduce = None
    if mods[0] == "reduce":
        reduce = next((x for x in mods if x in REDUCE_INT + ("inc", "dec")), None)
        if reduce is None or reduce not in REDUCE_INT:
            raise Unsupported.at(ins, f"{ins.opcode}: only the integer reductions {', '.join(REDUCE_INT)} are modelled")
    dst, src = ins.operands[0], ins.operands[1]
    idx, saddr, _ = _address(m, f, ins, src, act)
    maps, coords = _tensor_operand(m, f, ins, dst, idx)
    if _dimension(ins) != coords.shape[1]:
        raise BadAddress.at(ins, f"{ins.opcode} with {coords.shape[1]} coordinates")
    for j in range(idx.size):
        tm = maps[j]
        _check_map(ins, tm)
        if reduce is not None and tm.type[0] not in "us":
            raise Unsupported.at(ins, f"a {reduce} reduction into a {tm.type} tensor is not modelled (integer maps only)")
        start = int(saddr[j]) & 0xFFFFFFFF
        _note_start(m, tm, start)
        _check_shared(ins, tm, start)
        _check_start(ins, tm, coords[j])
        if (coords[j] < 0).any():
            raise BadAddress.at(ins, f"tensor map {tm.name}: a bulk tensor store or reduction at the negative coordinates "
                                     f"{tuple(int(c) for c in coords[j])} (the H100 faults: illegal instruction)")
        box = box_of(tm, tuple(int(c) for c in coords[j]))
        _issue(m, ins, int(idx[j]), start, tm, box, m.buffers[tm.buffer], reduce, tm.type)


def _bulk_store(m, f, ins, act):
    """cp.async.bulk.global.shared::cta.bulk_group [g], [s], size: a flat run of bytes."""
    dst, src, size = ins.operands[:3]
    idx, gaddr, _ = _address(m, f, ins, dst, act)
    _, saddr, _ = _address(m, f, ins, src, act)
    n, _ = m.read(f, size, "u32", ins)
    for j in range(idx.size):
        nb, g, s = int(n[idx[j]]), int(gaddr[j]), int(saddr[j]) & 0xFFFFFFFF
        if nb % 16 or g % 16 or s % 16:
            raise BadAddress.at(ins, "cp.async.bulk needs 16-byte aligned addresses and a size that is a multiple of 16")
        if nb == 0:
            continue
        ((region, _pos, goff),) = m.mem.resolve("global", np.array([g], np.uint64), 1, ins, "store")
        box = Box(int(goff[0]) + np.arange(nb, dtype=np.int64), np.ones(nb, bool), np.arange(nb, dtype=np.int64), 1)
        _issue(m, ins, int(idx[j]), s, None, box, region)


def _commit(m, act) -> None:
    g = _groups(m)
    for t in np.flatnonzero(act).tolist():
        stores = g.open.pop(t, [])
        g.committed.setdefault(t, []).append(stores)


def _complete_read(m, s: Store) -> None:
    """The async read is done: bytes that changed since the issue may have been read either way."""
    if s.read_done:
        return
    now = m.mem.shared.data[s.sbytes] if s.sbytes.size else s.taken
    s.bad = s.bad | (now != s.taken).any(axis=1)
    s.values = s.taken
    s.read_done = True


def _complete_write(m, s: Store) -> None:
    _complete_read(m, s)
    if not s.gbytes.size:
        return
    flat = s.gbytes.ravel()
    vals = s.values
    if s.reduce is not None:
        vals = _reduce(m, s, flat)
    if s.carried is not None:  # whole elements with their value sets; UNDEF where the store went bad
        eb = s.gbytes.shape[1]
        elems = np.ascontiguousarray(vals).view(_VIEW[eb]).ravel().astype(np.uint64)
        s.region.write(s.gbytes[:, 0], eb, [(elems, undef_where(s.carried, s.bad, s.bad.size, 8 * eb))])
        return
    where = np.repeat(s.bad, s.gbytes.shape[1])
    s.region.write(flat, 1, [(vals.ravel().astype(np.uint64), Shadow.undef(flat.size, 8, where) if where.any() else None)])



_NP = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "s32": np.int32, "u64": np.uint64, "s64": np.int64}


def _reduce(m, s: Store, flat: np.ndarray) -> np.ndarray:
    """The reduction of the shared elements into the global elements as they were at the issue."""
    dt = np.dtype(_NP[s.rtype])
    s.bad = s.bad | s.old_bad
    a = s.old.copy().view(dt).ravel()
    b = s.values.copy().view(dt).ravel()
    op = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
          "xor": np.bitwise_xor}[s.reduce]
    with np.errstate(over="ignore"):
        r = op(a, b).astype(dt)
    return r.view(np.uint8).reshape(s.gbytes.shape)


def _wait_group(m, f, ins, act, read_only: bool) -> None:
    (n_op,) = ins.operands
    if not isinstance(n_op, Imm):
        raise Unsupported.at(ins, "cp.async.bulk.wait_group needs an immediate count")
    keep = int(n_op.value)
    g = _groups(m)
    for t in np.flatnonzero(act).tolist():
        groups = g.committed.get(t, [])
        done = groups[:max(len(groups) - keep, 0)]
        for stores in done:
            for s in stores:
                (_complete_read if read_only else _complete_write)(m, s)
        if not read_only:
            g.committed[t] = groups[len(done):]


def finish(m) -> None:
    """The kernel ended: every bulk store completes; one whose read no wait_group.read covered
    leaves its elements undefined (the CTA's shared memory may be released before the read)."""
    g = getattr(m, "bulk_groups", None)
    if g is None:
        return
    unread = False
    for per in (g.committed, {t: [s] for t, s in g.open.items()}):
        for groups in per.values():
            for stores in groups:
                for s in stores:
                    if not s.read_done:
                        unread = True
                        s.bad = np.ones_like(s.bad)
                    _complete_write(m, s)
    if unread:
        m.note("the kernel ended with a bulk store whose shared-memory read no cp.async.bulk.wait_group.read "
               "waited for (its bytes are undefined)")
    m.bulk_groups = Groups()


def h_prefetch(m, f, ins, act):
    """prefetch.tensor (a box of a tensor map), prefetch{.const,.param}.tensormap (the map itself)
    and plain prefetches: no visible effect."""
    if "tensor" in ins.modifiers and not isinstance(ins.operands[0], TensorAddr):
        raise Unsupported.at(ins, "prefetch.tensor needs [tmap, {coords}]")
    return None


__all__ = ["Box", "box_of", "swizzled", "h_cp", "h_prefetch", "finish", "NAN_FILL", "SWIZZLE_ALIGN"]
