"""Whole mainloop kernels (issue 27), two shapes (docs/tma.md, "Drawing").

``MainloopPlan``: an S-stage ring of shared-memory buffers filled over K tiles by bulk async
copies (``cp.async.bulk`` global -> shared, ``mbarrier::complete_tx::bytes``), each stage guarded
by an mbarrier whose waits flip parity every S tiles, consumed by every thread.  Drawn: threads
(1-3 warpgroups), stages S (1-4), tiles K (1-8), whether the expect_tx comes before or after the
copy, whether one elected producer or every thread arrives (count 1 or the block), whether the
warpgroups re-balance registers with setmaxnreg first.  Outputs: per thread the sum of its word
over all tiles, and the lane ``elect.sync`` chose.

``WgmmaLoopPlan``: wgmma consumers of full/empty barrier pairs, A by descriptor or in registers
(ld.shared / ldmatrix), one or two consumer warpgroups, a producer warpgroup (setmaxnreg on or
off) or warp 0's elected lane, wait_group depth 0 or 1, a persistent tile loop, and an epilogue
through st.global or stmatrix (see the class).  Its stages are filled (``fill``, ``FILLS``) by
non-tensor ``cp.async.bulk`` (one elected thread), by TMA tensor boxes from two tensor maps (the
tiles laid out as a box lays them: ``tma_tile``), or by every producer thread with
``cp.async.cg|ca`` chunks (wait_group / wait_all then ``fence.proxy.async`` and an arrive, or
``cp.async.mbarrier.arrive.noinc`` with the consumers fencing after their wait) or with
``ld.global`` + ``st.shared`` (then the fence and the arrive).

Illegal twins, labelled as ``mutations`` labels them (``Program.expect``, ``mutation:`` notes):
  missing_expect_tx   one fill arrives without expect_tx: the phase completes before the bytes
                      land, so what the consumers read is undefined
  wrong_parity        one wait uses the other parity: it returns at once (the phase before it)
                      or hangs; the read races the copy and is undefined
  early_read          one K-step reads its stage (or issues its wgmma) before waiting
  producer_overwrite  (wgmma consumers) the consumer releases a stage before the wait_group that
                      retires the wgmma reading it; the producer refills it under that wgmma
  unfenced_fill       (wgmma consumers, cp.async / ld.st fills) no fence.proxy.async between the
                      producers' generic-proxy writes and the wgmma reading them
All are accepted by ptxas and leave the reference's outputs undefined; the checker flags each
(``TWIN_RULES``: ``spec.mbarrier.arrive-no-expect-tx``, ``spec.mbarrier.wrong-parity``,
``spec.mbarrier.read-before-wait``, ``spec.mbarrier.release-in-flight``,
``spec.proxy.fence-missing``).  Each twin is drawn only with the fills it applies to (``FAULT_FILLS``).

Not drawn yet: clusters, a producer warpgroup with wait_group depth 1 (``wgmma_loop_plans`` says
why), MN-major tiles under a tensor fill.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import event, strategies as st

from fuzzptx import isa
from fuzzptx.data import element_bytes
from fuzzptx.isa import ELEMENT_BITS, Form
from fuzzptx.program import Buffer, Launch, Program, TensorMap
from fuzzptx.ptx.emit import emit
from fuzzptx.ptx.ir import Addr, Imm, Module, RegDecl

from fuzzptx.isa.layouts import PATTERN_ALIGN

from . import irbuild
from .descriptors import SmemTile, canonical_layout, descriptors
from .instructions import ordered_forms
from .irbuild import Body, at, param, regs, shared, tensor, vec
from .operands import buffer_type, choice, ints, sampled
from .pipelines import M

FAULTS = ("missing_expect_tx", "wrong_parity", "early_read")


@dataclass(frozen=True)
class MainloopPlan:
    ntid: int
    stages: int
    tiles: int
    copy_first: bool
    all_arrive: bool
    setmaxnreg: bool
    seed: int
    fault: str | None = None
    fault_tile: int = 0

    @property
    def tile_bytes(self) -> int:
        return 4 * self.ntid  # one word per thread: a multiple of 16, as bulk copies need


@st.composite
def mainloop_plans(draw, *, fault: str | None = None) -> MainloopPlan:
    ntid = draw(st.sampled_from((128, 256, 384)))
    stages = draw(st.integers(1, 4))
    tiles = draw(st.integers(1, 8))
    return MainloopPlan(
        ntid=ntid, stages=stages, tiles=tiles, copy_first=draw(st.booleans()), all_arrive=draw(st.booleans()),
        setmaxnreg=ntid >= 256 and draw(st.booleans()), seed=draw(st.integers(0, 2**31 - 1)),
        fault=fault, fault_tile=draw(st.integers(0, tiles - 1)) if fault else 0)


def kernel(plan: MainloopPlan) -> Module:
    """The IR of a plan (one kernel ``k(a, o, o2)``)."""
    S, B = plan.stages, plan.tile_bytes
    params = (param(".u64", "a"), param(".u64", "o"), param(".u64", "o2"))
    # setmaxnreg needs the register count at entry fixed (else ptxas ignores it: C7508)
    attributes = (f".reqntid {plan.ntid}", *([".maxnreg 168"] if plan.setmaxnreg else []))
    decls = (regs(".pred", "%p", 8), regs(".b32", "%r", 24), regs(".b64", "%rd", 10),
             shared(".b8", "buf", 128, S * B), shared(".b64", "bar", 8, S))
    b = Body()
    b("ld.param.u64", "%rd1", at("a"))
    b("ld.param.u64", "%rd2", at("o"))
    b("ld.param.u64", "%rd3", at("o2"))
    b("mov.u32", "%r1", "%tid.x")
    b("mov.u32", "%r2", "buf")
    b("mov.u32", "%r3", "bar")
    b("shr.u32", "%r4", "%r1", 5)
    b("setp.eq.u32", "%p1", "%r4", 0)
    b("elect.sync", "%r5|%p2", -1)
    b("and.pred", "%p3", "%p1", "%p2")
    b("shl.b32", "%r6", "%r1", 2)
    b("add.s32", "%r7", "%r2", "%r6")
    b("mov.u32", "%r20", 0)
    if plan.setmaxnreg:
        b("shr.u32", "%r12", "%r1", 7)
        b("setp.eq.u32", "%p7", "%r12", 0)
        b("bra", "HI", g="!%p7")
        b("setmaxnreg.dec.sync.aligned.u32", 40)
        b("bra.uni", "GO")
        b.label("HI")
        b("setmaxnreg.inc.sync.aligned.u32", 232)
        b.label("GO")
    count = plan.ntid if plan.all_arrive else 1
    for s in range(S):
        b("mbarrier.init.shared::cta.b64", at("bar", 8 * s), count, g="%p3")
    b("fence.mbarrier_init.release.cluster")
    b("bar.sync", 0)
    for i in range(plan.tiles):
        s, parity = i % S, (i // S) % 2
        bar = at("bar", 8 * s)
        fault_here = plan.fault is not None and plan.fault_tile == i

        def expect() -> None:
            if fault_here and plan.fault == "missing_expect_tx":
                b("mbarrier.arrive.shared::cta.b64", "_", bar, g="%p3")
            else:
                b("mbarrier.arrive.expect_tx.shared::cta.b64", "_", bar, B, g="%p3")

        def copy() -> None:
            b("add.s64", "%rd4", "%rd1", B * i)
            b("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", at("buf", B * s), at("%rd4"), B, bar,
              g="%p3")

        for part in ((copy, expect) if plan.copy_first else (expect, copy)):
            part()
        if plan.all_arrive:
            b("mbarrier.arrive.shared::cta.b64", "_", bar, g="!%p3")
        if fault_here and plan.fault == "wrong_parity":
            parity ^= 1

        def wait() -> None:
            b.label(f"W{i}")
            b("mbarrier.try_wait.parity.shared::cta.b64", "%p4", bar, parity)
            b("bra", f"W{i}", g="!%p4")

        def read() -> None:
            b("ld.shared.u32", "%r8", at("%r7", B * s))
            b("add.s32", "%r20", "%r20", "%r8")

        for part in ((read, wait) if fault_here and plan.fault == "early_read" else (wait, read)):
            part()
        b("bar.sync", 0)
    b("cvt.u64.u32", "%rd5", "%r6")
    b("add.s64", "%rd6", "%rd2", "%rd5")
    b("st.global.u32", at("%rd6"), "%r20")
    b("add.s64", "%rd7", "%rd3", "%rd5")
    b("st.global.u32", at("%rd7"), "%r5")
    for s in range(S):
        b("mbarrier.inval.shared::cta.b64", at("bar", 8 * s), g="%p3")
    b("ret")
    return irbuild.kernel(params, attributes, decls, b)


def kernel_text(plan: MainloopPlan) -> str:
    """The PTX of a plan (its IR, emitted)."""
    return emit(kernel(plan))


def render(plan: MainloopPlan) -> Program:
    module = kernel(plan)
    buffers = (Buffer("a", "u32", plan.tiles * plan.ntid, "random", plan.seed),
               Buffer("o", "u32", plan.ntid, "zeros", output=True),
               Buffer("o2", "u32", plan.ntid, "zeros", output=True))
    expect: tuple = ()
    notes: tuple = ()
    if plan.fault is not None:
        expect = _twin_expect(plan.fault)
        notes = (_twin_note(plan.fault), f"mainloop fault: {plan.fault} at tile {plan.fault_tile}")
    return Program(module, Launch("k", (1, 1, 1), (plan.ntid, 1, 1)), buffers, (), expect, notes=notes)




# ==================================================================== wgmma consumers

#: Faults of the wgmma-consumer shape (``WgmmaLoopPlan.fault``): the three above plus
#: ``producer_overwrite`` (the consumer releases a stage on its empty barrier right after
#: committing the wgmma that reads it, before the wgmma.wait_group that retires it; the producer
#: then refills the stage while that wgmma may still read it).
WGMMA_FAULTS = FAULTS + ("producer_overwrite", "unfenced_fill")
#: Twins whose hardware outcome may be a hang (a wrong parity waits for a phase nobody completes
#: when the copy already landed): never run on the GPU (tests/support/hw_mainloops.py).
MAY_HANG = frozenset({"wrong_parity"})
_EPI_STMATRIX = ("st.global", "stmatrix")
#: How a stage is filled (``WgmmaLoopPlan.fill``), the first the original shape: ``bulk``
#: (non-tensor ``cp.async.bulk``), ``cp.async`` (16/8/4-byte chunks per producer thread, the shape
#: of CUTLASS's MainloopSm90CpAsyncGmma* collectives), ``tensor`` (TMA tensor-map boxes laid out
#: as the canonical layout the descriptors read) and ``ld.st`` (ld.global + st.shared).
FILLS = ("bulk", "cp.async", "tensor", "ld.st")
#: Fills whose copies complete bytes on the full barrier (one elected producer, expect_tx).
COMPLETE_TX_FILLS = frozenset({"bulk", "tensor"})
#: The fills each fault is drawn with: a missing expect_tx needs a complete_tx fill; a wrong parity or
#: an early read must race a copy the sequential reference lands at the wait (a generic-proxy fill
#: by the consumers themselves has landed long before), and the checker compares only bulk copies'
#: ranges for an early read; an unfenced fill needs a generic-proxy fill that fences.
FAULT_FILLS: dict[str, tuple[str, ...]] = {
    "missing_expect_tx": ("bulk", "tensor"), "wrong_parity": ("bulk", "tensor"), "early_read": ("bulk",),
    "producer_overwrite": ("bulk", "cp.async", "tensor", "ld.st"), "unfenced_fill": ("cp.async", "ld.st")}


@dataclass(frozen=True)
class WgmmaLoopPlan:
    """A warp-specialised wgmma mainloop over ``tiles`` persistent output tiles of ``ktiles``
    K-steps each, through an ``stages``-deep ring of shared-memory stages.

    Each stage holds, per consumer warpgroup, its A tile (canonical wgmma layout when A comes
    by descriptor, else the register image ``a_load`` reads) and the one B tile they share;
    the producer (one elected thread: of warp 0 of the producer warpgroup, or of warp 0 when
    no warpgroup is set aside) fills a stage with ``cp.async.bulk`` or tensor boxes after waiting
    on its empty barrier, or (``cp.async`` / ``ld.st`` fills) every thread of the producer
    warpgroup, else every consumer thread, waits and copies its chunks; consumers wait on its full barrier, run wgmma, and release it (``arrive`` on the
    empty barrier) once the wgmma reading it has retired (``depth`` 1 keeps one in flight and
    releases the previous stage).  Phases live in registers, flipped at each use, so they
    carry across the persistent tile loop.
    """

    form_key: str
    b_tile: SmemTile
    a_tile: SmemTile | None  # None: A from registers
    a_load: str  # "desc", "ldmatrix" (16-bit A) or "ld.shared" (fragment image)
    consumers: int  # consumer warpgroups (1 or 2)
    producer_wg: bool  # a warpgroup set aside as producer (else warp 0 of warpgroup 0 produces)
    setmaxnreg: bool  # producer .dec / consumers .inc (with a producer warpgroup)
    depth: int  # wgmma.wait_group depth: 0, or 1 (needs stages >= 2)
    stages: int
    ktiles: int
    tiles: int  # persistent tiles (blockIdx-strided: tile = %ctaid.x + t * %nctaid.x)
    all_release: bool  # every consumer thread arrives on the empty barrier (else one per warpgroup)
    epilogue: str  # "st.global" (raw accumulator registers) or "stmatrix" (f16 rows via shared)
    seed: int
    init: str = "small_int"
    fault: str | None = None
    fault_k: int = 0  # the K-step the fault is at (in the last tile for missing_expect_tx)
    fill: str = "bulk"  # how a stage is filled: one of FILLS (module doc)
    chunk: int = 16  # bytes one producer thread moves per instruction (cp.async, ld.st): 4, 8, 16
    cp_op: str = "cg"  # cp.async cache operator: "cg" (16-byte chunks only) or "ca"
    cp_done: str = "wait_group"  # cp.async completion: "wait_group" (commit + wait_group 0), "wait_all",
    #                              or "noinc" (cp.async.mbarrier.arrive.noinc on the full barrier)
    wait_hint: int = 0  # try_wait's suspendTimeHint in ns (CUTLASS passes one: NANOSLEEP.SYNCS), 0: none
    prefetch: bool = False  # a tensor fill prefetches its maps first (prefetch.tensormap: UTMACCTL.PF)

    @property
    def form(self) -> Form:
        return isa.by_key(self.form_key)

    @property
    def threads(self) -> int:
        return 128 * (self.consumers + self.producer_wg)

    @property
    def a_bytes(self) -> int:
        """Bytes of one warpgroup's A tile in a stage (a multiple of 1024: swizzle atoms stay aligned)."""
        return _image_bytes(self.a_tile)

    @property
    def b_bytes(self) -> int:
        return _image_bytes(self.b_tile)

    @property
    def stage_bytes(self) -> int:
        return self.consumers * self.a_bytes + self.b_bytes

    @property
    def fill_bytes(self) -> int:
        """Bytes one fill copies: each consumer's A image and B (what expect_tx announces; for
        tensor copies the boxes, whose padded swizzle rows are not copied)."""
        if self.fill == "tensor":
            return self.consumers * (2048 if self.a_tile is None else _box_bytes(self.a_tile)) + \
                _box_bytes(self.b_tile)
        return self.consumers * self._a_copy + self._b_copy

    @property
    def producers(self) -> int:
        """Threads that fill a stage and arrive on its full barrier (the barrier's count): one elected
        thread for complete_tx fills; the producer warpgroup, else every consumer thread, for the
        generic-proxy fills."""
        if self.fill in COMPLETE_TX_FILLS:
            return 1
        return 128 if self.producer_wg else 128 * self.consumers

    @property
    def _a_copy(self) -> int:
        return self.a_tile.footprint() if self.a_tile is not None else 2048

    @property
    def _b_copy(self) -> int:
        return self.b_tile.footprint()


def _box_bytes(tile: SmemTile) -> int:
    """Bytes a tile's TMA boxes move: mn rows of its K extent (the footprint less padded rows)."""
    return tile.mn * tile.k * ELEMENT_BITS[tile.elem] // 8


def tma_tile(tile: SmemTile) -> SmemTile:
    """The drawn tile as TMA boxes lay it out, never larger: K-major (an MN-major draw becomes K-major
    without swizzle), no padding, on its swizzle pattern's boundary (the line past it cleared).  A
    swizzled row holds the tile's whole K extent (rows one span apart, the rest of a wider span
    padded, never written: one box); without swizzle each 16-byte K column of every row is one box,
    the columns one after another (LBO = mn * 16, SBO = 128: the "mn_inner" canonical order)."""
    lay = tile.layout
    start = lay.start - lay.start % PATTERN_ALIGN.get(lay.swizzle, 128)
    swizzle = lay.swizzle if tile.major == "K" else "none"
    layout = canonical_layout(tile.elem, tile.mn, tile.k, "K", swizzle, "mn_inner" if swizzle == "none" else "k_inner")
    return SmemTile(tile.elem, tile.mn, tile.k, replace(layout, start=start))


def _image_bytes(tile: SmemTile | None) -> int:
    """Bytes a tile takes in a stage (1024-aligned; A from registers: its 2048-byte image)."""
    return -(-(tile.footprint() if tile is not None else 2048) // 1024) * 1024


def _dense_forms() -> tuple[Form, ...]:
    # dense catalogue forms ptxas accepts, N <= 64 (<= 32 accumulator registers: small programs)
    return tuple(f for f in ordered_forms(("wgmma",), 32) if f.shape.n <= 64)


@st.composite
def wgmma_loop_plans(draw, *, fault: str | None = None) -> WgmmaLoopPlan:
    """A ``WgmmaLoopPlan`` (legal, or with ``fault`` at one K-step)."""
    form = draw(choice(_dense_forms()))
    shape = form.shape
    b_tile = draw(descriptors(form.btype, shape.n, shape.k, allow_mn_major=form.has_operand("imm_trans_b")))
    a_tile = None
    if form.a_source == "desc":
        a_tile = draw(descriptors(form.atype, M, shape.k, allow_mn_major=form.has_operand("imm_trans_a")))
        a_load = "desc"
    else:
        a_load = draw(sampled(("ld.shared", "ldmatrix")))
        if ELEMENT_BITS[form.atype] != 16:
            a_load = "ld.shared"
    consumers = draw(ints(1, 2))
    producer_wg = draw(st.booleans())
    if fault in ("wrong_parity", "producer_overwrite"):
        producer_wg = False  # see MAY_HANG; the sequential reference needs every thread waiting
    depth = draw(ints(0, 1))
    if producer_wg:
        # consumer blocks behind a warpgroup branch must retire their wgmma inside the block:
        # across the join with the producer's path, ptxas (C7517/C7518) and the checker's
        # path-insensitive in-flight analysis both see a wgmma that may still be in flight
        depth = 0
    stages = draw(ints(1, 4))
    if fault == "producer_overwrite":
        depth, stages = 1, max(stages, 2)
    if depth:
        stages = max(stages, 2)
    # at most 64 KiB of stages (programs small enough for campaign rates; padded layouts are large)
    stage_bytes = consumers * _image_bytes(a_tile) + _image_bytes(b_tile)
    stages = max(1, min(stages, 65536 // stage_bytes))
    if stages < 2:
        depth = 0
    if fault == "producer_overwrite" and stages < 2:
        b_tile = replace(b_tile, layout=canonical_layout(form.btype, shape.n, shape.k, "K", "none"))
        if a_tile is not None:
            a_tile = replace(a_tile, layout=canonical_layout(form.atype, M, shape.k, "K", "none"))
        stages, depth = 2, 1
    lo = stages + 1 if fault == "producer_overwrite" else 1
    ktiles = draw(ints(lo, max(lo, 5)))
    epilogue = draw(sampled(_EPI_STMATRIX))
    if form.dtype == "s32":
        epilogue = "st.global"
    fault_k = 0
    if fault == "unfenced_fill":
        pass  # every fill goes unfenced (a later fenced fill by the same thread would cover one)
    elif fault == "producer_overwrite":
        fault_k = draw(ints(0, ktiles - stages - 1))  # its stage is refilled in the same tile
    elif fault == "missing_expect_tx":
        fault_k = draw(ints(max(0, ktiles - stages), ktiles - 1))  # the stage's last fill of the kernel
    elif fault is not None:
        fault_k = draw(ints(0, ktiles - 1))
    event(f"mainloop: consumers={consumers} producer_wg={producer_wg} depth={depth} a={a_load} epi={epilogue}")
    plan = WgmmaLoopPlan(
        form.key, b_tile, a_tile, a_load, consumers, producer_wg,
        setmaxnreg=producer_wg and draw(st.booleans()), depth=depth, stages=stages, ktiles=ktiles,
        tiles=draw(ints(1, 3)), all_release=draw(st.booleans()), epilogue=epilogue,
        seed=draw(ints(0, 2**31 - 1)), fault=fault, fault_k=fault_k)
    # the fill last, so every draw above is the one it was before the axis (bulk first: the simplest);
    # after it the wait hint and the prefetch, for the same reason
    plan = draw(_fills(plan))
    return replace(plan, wait_hint=draw(sampled((0, 0x989680, 1000))), prefetch=draw(st.booleans()))


@st.composite
def _fills(draw, plan: WgmmaLoopPlan) -> WgmmaLoopPlan:
    """The plan with a drawn fill (of ``FAULT_FILLS`` for a twin) and its options; a tensor fill lays
    its tiles out as TMA boxes do (``tma_tile``: never larger, so the stage budget still holds)."""
    fill = draw(sampled(FAULT_FILLS[plan.fault] if plan.fault else FILLS))
    event(f"mainloop fill={fill}")
    if fill in COMPLETE_TX_FILLS:
        return with_fill(plan, fill)
    chunk = draw(sampled((16, 8, 4)))
    if fill == "ld.st":
        return with_fill(plan, fill, chunk)
    cp_op = draw(sampled(("cg", "ca"))) if chunk == 16 else "ca"
    # noinc's producers do not fence (the consumers do, after their wait): an unfenced twin of it
    # would have nothing to remove
    cp_done = draw(sampled(("wait_group", "wait_all") if plan.fault == "unfenced_fill" else
                           ("wait_group", "wait_all", "noinc")))
    return with_fill(plan, fill, chunk, cp_op, cp_done)


def with_fill(plan: WgmmaLoopPlan, fill: str, chunk: int = 16, cp_op: str = "cg",
              cp_done: str = "wait_group") -> WgmmaLoopPlan:
    """The plan filled another way (``FILLS``; the options as ``WgmmaLoopPlan`` names them).  A
    tensor fill lays the tiles out as TMA boxes do (``tma_tile``)."""
    if fill == "tensor":
        return replace(plan, fill=fill, b_tile=tma_tile(plan.b_tile),
                       a_tile=None if plan.a_tile is None else tma_tile(plan.a_tile))
    if fill == "cp.async" and (chunk not in (4, 8, 16) or cp_op not in ("cg", "ca") or (cp_op == "cg" and chunk != 16)
                               or cp_done not in ("wait_group", "wait_all", "noinc")):
        raise ValueError(f"cp.async fill: chunk {chunk}, .{cp_op}, {cp_done}")
    return replace(plan, fill=fill, chunk=chunk, cp_op=cp_op, cp_done=cp_done)


class _Build(Body):
    """A kernel body with fresh registers and labels (declared by ``decls``)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}
        self.labels = 0

    def reg(self, t: str) -> str:
        stem = _STEM[t]
        i = self.counts.get(t, 0)
        self.counts[t] = i + 1
        return f"{stem}{i}"

    def regs(self, t: str, n: int) -> list[str]:
        return [self.reg(t) for _ in range(n)]

    def new_label(self, stem: str) -> str:
        self.labels += 1
        return f"{stem}{self.labels}"

    def decls(self) -> list[RegDecl]:
        return [regs(t, _STEM[t], n) for t, n in self.counts.items()]


_STEM = {".pred": "%p", ".b32": "%r", ".b64": "%rd", ".f32": "%f", ".f16x2": "%h", ".s32": "%s", ".u32": "%u"}


def _spin(b: _Build, bar: Addr, parity: str, hint: int = 0) -> None:
    """Wait until the phase of ``parity`` of the mbarrier at ``bar`` completed (try_wait loop;
    ``hint``: the suspend-time hint in ns, 0 for none)."""
    top, p = b.new_label("W"), b.reg(".pred")
    b.label(top)
    b("mbarrier.try_wait.parity.shared::cta.b64", p, bar, parity, *([hint] if hint else []))
    b("bra", top, g="!" + p)


def wgmma_kernel(plan: WgmmaLoopPlan) -> Module:
    """The IR of a plan (one kernel ``k(a, b, d)``)."""
    form, S, K = plan.form, plan.stages, plan.ktiles
    CW, NT = plan.consumers, plan.threads
    dtype_reg = form.operand("d").reg_types[0]
    nd = form.operand("d").count
    b = _Build()
    pa, pb, pd = b.reg(".b64"), b.reg(".b64"), b.reg(".b64")
    b("ld.param.u64", pa, at("a"))
    b("ld.param.u64", pb, at("b"))
    b("ld.param.u64", pd, at("d"))
    for r in (pa, pb, pd):
        b("cvta.to.global.u64", r, r)
    tid, warp, wg, ltid, lane = (b.reg(".b32") for _ in range(5))
    b("mov.u32", tid, "%tid.x")
    b("shr.u32", warp, tid, 5)
    b("shr.u32", wg, tid, 7)
    b("and.b32", ltid, tid, 127)
    b("and.b32", lane, tid, 31)
    elect, p_el = b.reg(".b32"), b.reg(".pred")
    b("elect.sync", f"{elect}|{p_el}", -1)
    pwg = CW if plan.producer_wg else 0  # the producer's warpgroup
    p_w, p_lead = b.reg(".pred"), b.reg(".pred")
    b("setp.eq.u32", p_w, warp, 4 * pwg)
    b("and.pred", p_lead, p_w, p_el)
    p_cons = b.reg(".pred")  # consumer warpgroups: 0 .. CW-1
    b("setp.lt.u32", p_cons, wg, CW)
    p_w0, p_init = b.reg(".pred"), b.reg(".pred")
    b("setp.eq.u32", p_w0, warp, 0)
    b("and.pred", p_init, p_w0, p_el)
    # one arrival per consumer thread, or per consumer warpgroup (its warp 0's elected lane)
    p_rel = None
    if not plan.all_release:
        wq, p_wq = b.reg(".b32"), b.reg(".pred")
        p_rel = b.reg(".pred")
        b("and.b32", wq, warp, 3)
        b("setp.eq.u32", p_wq, wq, 0)
        b("and.pred", p_rel, p_wq, p_el)
    empty_count = CW * 128 if plan.all_release else CW
    for s in range(S):
        b("mbarrier.init.shared::cta.b64", at("full", 8 * s), plan.producers, g=p_init)
        b("mbarrier.init.shared::cta.b64", at("empty", 8 * s), empty_count, g=p_init)
    b("fence.mbarrier_init.release.cluster")
    b("bar.sync", 0)
    if plan.setmaxnreg:
        hi, go = b.new_label("HI"), b.new_label("GO")
        # from .maxnreg 168: the producer gives up 56 registers a thread, the consumers share
        # them out (multiples of 8); the producer's path is the kernel's whole code, so it keeps
        # enough for it (with 40, ptxas ignores the instruction: C7507)
        inc = 224 if CW == 1 else 192
        b("bra", hi, g=p_cons)
        b("setmaxnreg.dec.sync.aligned.u32", 112)
        b("bra.uni", go)
        b.label(hi)
        b("setmaxnreg.inc.sync.aligned.u32", inc)
        b.label(go)
    # stage addresses (shared window, 32-bit) and descriptors, one per stage (K is unrolled)
    # the consumer warpgroup index, masked to the consumers' range (CW is 1 or 2): the producer
    # warpgroup's (unused) is then in range too, so address bounds stay inside the stage
    cwg = b.reg(".b32")
    b("and.b32", cwg, wg, CW - 1)
    a_off = None  # one consumer: its A tiles at constant offsets (the descriptors are constants)
    if CW > 1:
        a_off = b.reg(".b32")
        b("mul.lo.u32", a_off, cwg, plan.a_bytes)
    b_base = CW * plan.a_bytes
    adesc, bdesc, a_addr = [], [], []
    a_lane = None
    for s in range(S):
        base = s * plan.stage_bytes
        bdesc.append(_desc(b, "stg", base + b_base + plan.b_tile.start, None, plan.b_tile))
        if plan.a_tile is not None:
            adesc.append(_desc(b, "stg", base + plan.a_tile.start, a_off, plan.a_tile))
        else:
            if a_lane is None:  # this thread's byte offset in a warpgroup's A image
                a_lane = b.reg(".b32")
                if plan.a_load == "ld.shared":  # thread t's four registers at 16 t
                    b("shl.b32", a_lane, ltid, 4)
                else:  # ldmatrix.x4: lane l gives row (l & 15) of its warp's 16 rows, k-half l >> 4
                    wl, r16, row, kh = (b.reg(".b32") for _ in range(4))
                    b("shr.u32", wl, ltid, 5)
                    b("and.b32", r16, lane, 15)
                    b("shr.u32", kh, lane, 4)
                    b("mad.lo.u32", row, wl, 16, r16)
                    b("shl.b32", kh, kh, 4)
                    b("mad.lo.u32", a_lane, row, 32, kh)
            r0 = b.reg(".b32")
            b("mov.u32", r0, "stg")
            if a_off is not None:
                r1 = b.reg(".b32")
                b("add.u32", r1, r0, a_off)
                r0 = r1
            r = b.reg(".b32")
            b("add.u32", r, r0, a_lane)
            if base:
                rb = b.reg(".b32")
                b("add.u32", rb, r, base)
                r = rb
            a_addr.append(r)
    gen = plan.fill not in COMPLETE_TX_FILLS
    p_fill = p_lead
    if gen:  # every producer thread: the producer warpgroup, else every consumer thread
        p_fill = p_cons
        if plan.producer_wg:
            p_fill = b.reg(".pred")
            b("setp.eq.u32", p_fill, wg, CW)
        # this thread's place among the producers, bounded (P is 128 or 256) so its copies' shared
        # addresses are bounded too; its byte offset in a fill's chunk run, shared and global
        P = plan.producers
        ptid, poff, pdst, pstg = (b.reg(".b32") for _ in range(4))
        poff64 = b.reg(".b64")
        b("and.b32", ptid, tid, P - 1)
        b("shl.b32", poff, ptid, plan.chunk.bit_length() - 1)
        b("mov.u32", pstg, "stg")
        b("add.u32", pdst, pstg, poff)
        b("cvt.u64.u32", poff64, poff)
        data = b.regs(".b32", plan.chunk // 4) if plan.fill == "ld.st" else []
        # a last round of fewer chunks than producers goes in power-of-two parts: part 2^a is done by
        # the threads below 2^a (a guard), through their index masked to a bits, so the checker bounds
        # each part's shared bytes exactly (a guard alone does not narrow an address range)
        parts: dict[int, tuple[str, str]] = {}  # a -> (guard, shared address)

        def part(a: int) -> tuple[str, str]:
            if a not in parts:
                g, m, o, d = b.reg(".pred"), b.reg(".b32"), b.reg(".b32"), b.reg(".b32")
                b("setp.lt.u32", g, ptid, 1 << a)
                b("and.b32", m, ptid, (1 << a) - 1)
                b("shl.b32", o, m, plan.chunk.bit_length() - 1)
                b("add.u32", d, pstg, o)
                parts[a] = (g, d)
            return parts[a]
    tmaps = {}
    if plan.fill == "tensor":  # the maps as generic addresses (ptxas refuses the parameter symbol)
        for name in ("ta", "tb"):
            r0, r1 = b.reg(".b64"), b.reg(".b64")
            b("mov.u64", r0, name)
            b("cvta.param.u64", r1, r0)
            if plan.prefetch:
                b("prefetch.tensormap", at(r1))
            tmaps[name] = r1
    # phases: consumers' full-barrier parity, the producer's empty-barrier parity (1: a fresh
    # barrier's phase before phase 0 counts as complete, so first fills do not wait)
    fph = b.regs(".b32", S)
    eph = b.regs(".b32", S)
    for s in range(S):
        b("mov.u32", fph[s], 0)
        b("mov.u32", eph[s], 1)
    acc = b.regs(dtype_reg, nd)
    a_sets = [b.regs(".b32", 4) for _ in range(2)] if plan.a_tile is None else []
    # persistent tile loop
    it, tile = b.reg(".b32"), b.reg(".b32")
    nct, cta = b.reg(".b32"), b.reg(".b32")
    b("mov.u32", nct, "%nctaid.x")
    b("mov.u32", cta, "%ctaid.x")
    b("mov.u32", it, 0)
    top = b.new_label("TILE")
    b.label(top)
    b("mad.lo.u32", tile, it, nct, cta)
    p_last = None
    if plan.fault == "missing_expect_tx":
        p_last = b.reg(".pred")
        b("setp.eq.u32", p_last, it, plan.tiles - 1)
    # global sources of this tile: A at ((tile * K + k) * CW + cwg) * a_copy, B at k * b_copy
    a_src = b.reg(".b64")
    b("mul.wide.u32", a_src, tile, K * CW * plan._a_copy)
    b("add.s64", a_src, pa, a_src)

    def fill(k: int, s: int) -> None:
        skip = b.new_label("P")
        b("bra", skip, g="!" + p_fill)
        _spin(b, at("empty", 8 * s), eph[s], plan.wait_hint)
        b("xor.b32", eph[s], eph[s], 1)
        bar = at("full", 8 * s)
        if gen:
            generic_fill(k, s, bar)
            b.label(skip)
            return
        if plan.fault == "missing_expect_tx" and k == plan.fault_k:
            b("mbarrier.arrive.shared::cta.b64", "_", bar, g=p_last)
            b("mbarrier.arrive.expect_tx.shared::cta.b64", "_", bar, plan.fill_bytes, g="!" + p_last)
        else:
            b("mbarrier.arrive.expect_tx.shared::cta.b64", "_", bar, plan.fill_bytes)
        if plan.fill == "tensor":
            tensor_fill(k, s, bar)
            b.label(skip)
            return
        src = b.reg(".b64")
        for c in range(CW):
            dst = s * plan.stage_bytes + c * plan.a_bytes
            b("add.s64", src, a_src, (k * CW + c) * plan._a_copy)
            b("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", at("stg", dst), at(src),
              plan._a_copy, bar)
        b("add.s64", src, pb, k * plan._b_copy)
        b("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", at("stg", s * plan.stage_bytes + b_base),
          at(src), plan._b_copy, bar)
        b.label(skip)

    def generic_fill(k: int, s: int, bar: Addr) -> None:
        """Each producer thread copies its chunks (cp.async or ld.global + st.shared), then the copies
        complete (wait_group / wait_all / the barrier's own arrive-on), fence.proxy.async, arrive."""
        runs = [(a_src, (k * CW + c) * plan._a_copy, s * plan.stage_bytes + c * plan.a_bytes, plan._a_copy)
                for c in range(CW)] + [(pb, k * plan._b_copy, s * plan.stage_bytes + b_base, plan._b_copy)]
        ch = plan.chunk
        for base, goff, soff, nbytes in runs:
            src, src2 = b.reg(".b64"), b.reg(".b64")
            b("add.s64", src, base, goff)
            b("add.s64", src2, src, poff64)
            n = nbytes // ch
            rounds = [(None, pdst, j0) for j0 in range(0, n - n % P, P)]
            j0 = n - n % P
            for a in reversed(range((n % P).bit_length())):
                if (n % P) >> a & 1:
                    g, d = part(a)
                    rounds.append((g, d, j0))
                    j0 += 1 << a
            for guard, dreg, j0 in rounds:
                sa, ga = at(dreg, soff + j0 * ch), at(src2, j0 * ch)
                if plan.fill == "cp.async":
                    b(f"cp.async.{plan.cp_op}.shared.global", sa, ga, ch, g=guard)
                else:
                    vec_ = {16: ".v4", 8: ".v2", 4: ""}[ch]
                    words = vec(data) if len(data) > 1 else data[0]
                    b(f"ld.global{vec_}.b32", words, ga, g=guard)
                    b(f"st.shared{vec_}.b32", sa, words, g=guard)
        if plan.fill == "cp.async" and plan.cp_done == "noinc":
            # the arrive-on fires once this thread's copies completed; the consumers fence after
            # their wait (this thread cannot: it does not wait for its copies)
            b("cp.async.mbarrier.arrive.noinc.shared::cta.b64", bar)
            return
        if plan.fill == "cp.async":
            if plan.cp_done == "wait_all":
                b("cp.async.wait_all")
            else:
                b("cp.async.commit_group")
                b("cp.async.wait_group", 0)
        if plan.fault != "unfenced_fill":
            # the copies are generic-proxy writes and wgmma reads through the async proxy
            b("fence.proxy.async.shared::cta")
        b("mbarrier.arrive.shared::cta.b64", "_", bar)

    def tensor_fill(k: int, s: int, bar: Addr) -> None:
        """Tensor-map boxes: per consumer its A tile (or its register image, 16 rows of 128 bytes)
        and the B tile, at coordinates {k column, row} of the A (M x K) and B (N x K) matrices."""
        row = b.reg(".b32")
        b("mul.lo.u32", row, tile, CW * (64 if plan.a_tile is not None else 16 * K))
        for c in range(CW):
            dst = s * plan.stage_bytes + c * plan.a_bytes
            if plan.a_tile is None:
                boxes(tmaps["ta"], dst, [(0, (k * CW + c) * 16)], row, bar)
            else:
                boxes(tmaps["ta"], dst + plan.a_tile.start, _columns(plan.a_tile, k, 64 * c), row, bar,
                      step=64 * 16)
        boxes(tmaps["tb"], s * plan.stage_bytes + b_base + plan.b_tile.start, _columns(plan.b_tile, k, 0), None,
              bar, step=plan.b_tile.mn * 16)

    def boxes(tm: str, dst: int, coords: list[tuple[int, int]], row: str | None, bar: Addr, step: int = 0) -> None:
        # one box per coordinate pair, the j-th at dst + j * step (16-byte K columns of an unswizzled
        # tile: mn * 16 bytes each); the row coordinate offset by the tile's rows when ``row`` is set
        for j, (x, y) in enumerate(coords):
            cx, cy = b.reg(".b32"), b.reg(".b32")
            b("mov.b32", cx, x)
            if row:
                b("add.u32", cy, row, y)
            else:
                b("mov.b32", cy, y)
            b("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes", at("stg", dst + j * step),
              tensor(tm, (cx, cy)), bar)

    def release(s: int) -> None:
        b("mbarrier.arrive.shared::cta.b64", "_", at("empty", 8 * s), g=p_rel)

    for k in range(min(S, K)):
        fill(k, k)
    for k in range(K):
        s = k % S
        skip = b.new_label("C")
        if plan.producer_wg:
            b("bra", skip, g="!" + p_cons)
        fault_here = plan.fault is not None and plan.fault_k == k
        parity = fph[s]
        if fault_here and plan.fault == "wrong_parity":
            parity = b.reg(".b32")
            b("xor.b32", parity, fph[s], 1)
        mark = len(b.stmts)
        _spin(b, at("full", 8 * s), parity, plan.wait_hint)
        if plan.fill == "cp.async" and plan.cp_done == "noinc":
            b("fence.proxy.async.shared::cta")  # the producers' generic writes, before wgmma reads them
        wait_stmts = b.stmts[mark:]
        del b.stmts[mark:]
        a_ops = None
        if plan.a_tile is None:
            a_ops = a_sets[k % 2]
            if plan.a_load == "ld.shared":
                b("ld.shared.v4.b32", vec(a_ops), at(a_addr[s]))
            else:
                b("ldmatrix.sync.aligned.m8n8.x4.shared.b16", vec(a_ops), at(a_addr[s]))
        b("wgmma.fence.sync.aligned")
        b(form.opcode, *_wgmma(plan, form, acc, a_ops, adesc[s] if adesc else None, bdesc[s], k))
        b("wgmma.commit_group.sync.aligned")
        if fault_here and plan.fault == "early_read":
            b.stmts += wait_stmts  # after the wgmma that reads the stage
        else:
            b.stmts[mark:mark] = wait_stmts
        b("xor.b32", fph[s], fph[s], 1)
        early = fault_here and plan.fault == "producer_overwrite"
        if early:
            release(s)  # before the wait_group that retires the wgmma reading stage s
        b("wgmma.wait_group.sync.aligned", plan.depth)
        done = k - plan.depth  # the K-step whose wgmma has retired now
        released_early = plan.fault == "producer_overwrite" and done == plan.fault_k
        if done >= 0 and not released_early:
            release(done % S)
        if plan.producer_wg:
            b.label(skip)
        if done >= 0 and done + S < K and not released_early:
            fill(done + S, done % S)
        if early:
            fill(k + S, s)  # the stage the in-flight wgmma of K-step k still reads
    skip = b.new_label("E")
    if plan.producer_wg:
        b("bra", skip, g="!" + p_cons)
    if plan.depth:
        b("wgmma.wait_group.sync.aligned", 0)
        release((K - 1) % S)
    _epilogue(b, plan, form, acc, pd, tile, cwg, ltid, lane)
    b.label(skip)
    b("add.u32", it, it, 1)
    p_more = b.reg(".pred")
    b("setp.lt.u32", p_more, it, plan.tiles)
    b("bra.uni", top, g=p_more)
    b("ret")
    params = [param(".u64", "a"), param(".u64", "b"), param(".u64", "d")]
    if plan.fill == "tensor":
        params += [param(".b8", "ta", 64, 128), param(".b8", "tb", 64, 128)]
    attributes = (f".reqntid {NT}", *([".maxnreg 168"] if plan.setmaxnreg else []))
    smem = [shared(".b8", "stg", 1024, S * plan.stage_bytes), shared(".b64", "full", 8, S),
            shared(".b64", "empty", 8, S)]
    if plan.epilogue == "stmatrix":
        smem.append(shared(".b8", "epi", 128, CW * 64 * form.shape.n * 2))
    return irbuild.kernel(params, attributes, b.decls() + smem, b)


def wgmma_kernel_text(plan: WgmmaLoopPlan) -> str:
    """The PTX of a plan (its IR, emitted)."""
    return emit(wgmma_kernel(plan))


def _columns(tile: SmemTile, k: int, row: int) -> list[tuple[int, int]]:
    """The {column, row} coordinates (in elements of the map's type, ``_map_type``) of K-step
    ``k``'s boxes of a ``tma_tile``: one, or one per 16-byte K column without swizzle."""
    kbytes = tile.k * ELEMENT_BITS[tile.elem] // 8
    eb = _map_bytes(tile.elem)
    if tile.swizzle != "none":
        return [(k * kbytes // eb, row)]
    return [((k * kbytes + 16 * j) // eb, row) for j in range(kbytes // 16)]


def _map_bytes(elem: str) -> int:
    """Bytes of the tensor map's element type for a catalogue type (sub-byte images: bytes)."""
    return max(1, ELEMENT_BITS[elem] // 8)


def _map_type(elem: str) -> str:
    return {1: "u8", 2: "u16", 4: "u32"}[_map_bytes(elem)]


def tensor_maps(plan: WgmmaLoopPlan) -> tuple[TensorMap, TensorMap]:
    """The plan's two maps: ``ta`` over buffer a (the M x K matrix of every tile, or the register
    images as rows of 128 bytes) and ``tb`` over buffer b (N x K), row-major, boxes as ``tma_tile``."""
    form, K = plan.form, plan.ktiles
    out = []
    for name, buf, tile, rows in (("ta", "a", plan.a_tile, plan.tiles * plan.consumers * 64),
                                  ("tb", "b", plan.b_tile, form.shape.n)):
        elem = form.atype if name == "ta" else form.btype
        eb = _map_bytes(elem)
        if tile is None:  # register-A images, 2048 bytes per (tile, K-step, consumer)
            inner = 128 // eb
            dims, box, swz = (inner, plan.tiles * K * plan.consumers * 16), (inner, 16), "none"
        else:
            kb = tile.k * ELEMENT_BITS[tile.elem] // 8
            dims = (K * kb // eb, rows)
            box, swz = ((kb if tile.swizzle != "none" else 16) // eb, tile.mn), tile.swizzle
        out.append(TensorMap(name, buf, _map_type(elem), dims, (dims[0] * eb,), box, swizzle=swz))
    return out[0], out[1]


def _desc(b: _Build, sym: str, offset: int, extra: str | None, tile: SmemTile) -> str:
    """A matrix descriptor register: start = bits 4..17 of the shared address, the
    other fields one constant from the tile's ``MatrixDescriptor`` (fuzzptx.isa.layouts)."""
    # every register defined once: the checker bounds the start through single definitions
    r0, r1, f, d = b.reg(".b32"), b.reg(".b32"), b.reg(".b32"), b.reg(".b64")
    b("mov.u32", r0, sym)
    b("add.u32", r1, r0, offset)
    if extra is not None:
        r2 = b.reg(".b32")
        b("add.u32", r2, r1, extra)
        r1 = r2
    const = int(replace(tile.descriptor(), start=0).encode())
    # start = bits 4..17 of the address: a shared-window address is below 2^18, so a shift does it
    b("shr.u32", f, r1, 4)
    b("cvt.u64.u32", d, f)
    if not const:
        return d
    out = b.reg(".b64")
    b("or.b64", out, d, Imm(const, hex(const)))
    return out


def _wgmma(plan: WgmmaLoopPlan, form: Form, acc: list[str], a_regs, adesc, bdesc, k: int) -> list:
    """The wgmma's operands, in the form's order."""
    ops: list = []
    for spec in form.operands:
        r = spec.role
        if r == "d":
            ops.append(vec(acc))
        elif r == "a":
            ops.append(vec(a_regs))
        elif r == "a_desc":
            ops.append(adesc)
        elif r == "b_desc":
            ops.append(bdesc)
        elif r == "scale_d":
            ops.append(0 if k == 0 else 1)  # each tile starts from zero
        elif r in ("imm_scale_a", "imm_scale_b"):
            ops.append(1)
        elif r == "imm_trans_a":
            ops.append(int(plan.a_tile.major == "MN"))
        elif r == "imm_trans_b":
            ops.append(int(plan.b_tile.major == "MN"))
        else:
            raise ValueError(f"{form.key}: operand {r!r}")
    return ops


def _epilogue(b: _Build, plan: WgmmaLoopPlan, form: Form, acc: list[str], pd: str, tile: str, cwg: str, ltid: str,
              lane: str) -> None:
    """Accumulators to global: raw registers (thread t's register i at word t * R + i of its
    warpgroup's block), or as f16 rows through ``stmatrix`` into shared memory, a named barrier
    of the consumers, and word copies to global (row-major 64 x N per warpgroup and tile)."""
    CW, nd, N = plan.consumers, len(acc), form.shape.n
    blk = b.reg(".b32")
    b("mad.lo.u32", blk, tile, CW, cwg)
    out = b.reg(".b64")
    if plan.epilogue == "st.global":
        idx, o64 = b.reg(".b32"), b.reg(".b64")
        b("mad.lo.u32", idx, blk, 128, ltid)
        b("mul.wide.u32", o64, idx, 4 * nd)
        b("add.s64", out, pd, o64)
        st_ = {".f32": "f32", ".s32": "s32"}.get(form.operand("d").reg_types[0], "b32")
        for i, r in enumerate(acc):
            b(f"st.global.{st_}", at(out, 4 * i), r)
        return
    # f16 pairs: (row g, cols 2c, 2c+1) and (row g + 8, same cols) of each 8-column block
    halves = []
    for nb in range(N // 8):
        for half in range(2):
            if form.dtype == "f16":
                halves.append(acc[2 * nb + half])
            else:
                h = b.reg(".b32")
                lo, hi = acc[4 * nb + 2 * half], acc[4 * nb + 2 * half + 1]
                b("cvt.rn.f16x2.f32", h, hi, lo)
                halves.append(h)
    b("bar.sync", 1, CW * 128)  # the previous tile's reads of the staging rows are done
    wl, r16, row, nbj, e0, e1, e2, addr = (b.reg(".b32") for _ in range(8))
    b("shr.u32", wl, ltid, 5)
    b("and.b32", r16, lane, 15)
    b("mad.lo.u32", row, wl, 16, r16)
    b("shr.u32", nbj, lane, 4)
    b("mov.u32", e0, "epi")
    b("mad.lo.u32", e1, cwg, 128 * N, e0)
    b("mad.lo.u32", e2, row, 2 * N, e1)
    b("mad.lo.u32", addr, nbj, 16, e2)
    for nb in range(0, N // 8, 2):  # x4: two 8-column blocks; x2 for a last odd one (lanes 0-15)
        rs = halves[2 * nb: 2 * nb + 4]
        b(f"stmatrix.sync.aligned.m8n8.x{len(rs)}.shared.b16", at(addr, 16 * nb), vec(rs))
    b("bar.sync", 1, CW * 128)
    s0, s1, src, word, g = (b.reg(".b32") for _ in range(5))
    o64 = b.reg(".b64")
    b("mov.u32", s0, "epi")
    b("mad.lo.u32", s1, cwg, 128 * N, s0)
    b("mad.lo.u32", src, ltid, 4, s1)
    b("mad.lo.u32", g, blk, 32 * N, ltid)
    b("mul.wide.u32", o64, g, 4)
    b("add.s64", out, pd, o64)
    for j in range(N // 4):  # 128 N bytes = 32 N words per warpgroup: 128 threads, N / 4 words each
        b("ld.shared.b32", word, at(src, 512 * j))
        b("st.global.b32", at(out, 512 * j), word)
    # the staging rows were written through the generic proxy; the next tile's wgmmas read shared
    # memory through the async proxy (descriptors the checker cannot bound may meet these rows)
    b("fence.proxy.async.shared::cta")


def render_wgmma(plan: WgmmaLoopPlan) -> Program:
    """The plan as a Program: buffers a (A images), b (B images), d (output)."""
    form = plan.form
    module = wgmma_kernel(plan)
    at, bt = buffer_type(form.atype), buffer_type(form.btype)
    a_count = plan.tiles * plan.ktiles * plan.consumers * plan._a_copy // element_bytes(at)
    b_count = plan.ktiles * plan._b_copy // element_bytes(bt)
    maps: tuple = ()
    if plan.fill == "tensor":  # the matrices (or register images) the maps describe, row-major
        maps = tensor_maps(plan)
        a_count, b_count = (m.dims[0] * m.dims[1] * m.element_bytes // element_bytes(t) for m, t in zip(maps, (at, bt)))
    blocks = plan.tiles * plan.consumers
    if plan.epilogue == "stmatrix":
        out = Buffer("d", "f16", blocks * 64 * form.shape.n, "zeros", output=True)
    else:
        ot = {"f32": "f32", "s32": "s32", "f16": "f16"}[form.dtype]
        nd = form.operand("d").count
        out = Buffer("d", ot, blocks * 128 * nd * 4 // element_bytes(ot), "zeros", output=True)
    buffers = (Buffer("a", at, a_count, plan.init, plan.seed), Buffer("b", bt, b_count, plan.init, plan.seed + 1), out)
    notes = (f"mainloop: {form.key} a={plan.a_load} consumers={plan.consumers} producer_wg={plan.producer_wg} "
             f"setmaxnreg={plan.setmaxnreg} depth={plan.depth} stages={plan.stages} ktiles={plan.ktiles} "
             f"tiles={plan.tiles} epilogue={plan.epilogue}{_fill_note(plan)}",)
    expect: tuple = ()
    if plan.fault is not None:
        expect = _twin_expect(plan.fault)
        notes = (_twin_note(plan.fault),) + notes + (f"mainloop fault: {plan.fault} at K-step {plan.fault_k}",)
    return Program(module, Launch("k", (1, 1, 1), (plan.threads, 1, 1)), buffers, (), expect, notes=notes,
                   tensormaps=maps)


def _fill_note(plan: WgmmaLoopPlan) -> str:
    """The fill in the plan note (nothing for bulk: the note reads as it did before the axis)."""
    if plan.fill == "bulk":
        return ""
    if plan.fill == "cp.async":
        return f" fill=cp.async.{plan.cp_op}/{plan.chunk}/{plan.cp_done}"
    return f" fill={plan.fill}" + (f"/{plan.chunk}" if plan.fill == "ld.st" else "")


#: The rule each twin breaks, as the checker names it (None: no checker rule sees it yet).
TWIN_RULES: dict[str, str | None] = {
    "missing_expect_tx": "spec.mbarrier.arrive-no-expect-tx", "wrong_parity": "spec.mbarrier.wrong-parity",
    "early_read": "spec.mbarrier.read-before-wait", "producer_overwrite": "spec.mbarrier.release-in-flight",
    "unfenced_fill": "spec.proxy.fence-missing",
}


def twin_name(fault: str) -> str:
    """The name a twin goes by among the mutations (``mutation: NAME breaks RULE`` notes)."""
    return "mainloop_" + fault


def fault_of(name: str) -> str:
    return name.removeprefix("mainloop_")


def _twin_expect(fault: str) -> tuple[tuple[str, str], ...]:
    """Labels as ``mutations.Mutation.expect`` writes them (ptxas, checker where a rule sees it, reference)."""
    out = [("ptxas", "accepted")]
    if TWIN_RULES[fault] is not None:
        out.append(("checker", f"undefined: {TWIN_RULES[fault]}"))
    return tuple(out + [("reference", "undefined")])


def _twin_note(fault: str) -> str:
    rule = TWIN_RULES[fault]
    return f"mutation: {twin_name(fault)} breaks {rule if rule else 'no checker rule yet (the reference sees it)'}"


def mainloop_programs() -> st.SearchStrategy[Program]:
    """Legal mainloop kernels: every thread reading the stages, or wgmma consumers (module doc)."""
    return st.one_of(mainloop_plans().map(render), wgmma_loop_plans().map(render_wgmma))


def wgmma_mainloop_programs() -> st.SearchStrategy[Program]:
    """Legal wgmma-consumer mainloops only (``WgmmaLoopPlan``)."""
    return wgmma_loop_plans().map(render_wgmma)


def illegal_mainloop_programs(faults: tuple[str, ...] = WGMMA_FAULTS) -> st.SearchStrategy[Program]:
    """Their labelled illegal twins: one K-step with a missing expect_tx, a wrong parity, an early
    read, or (wgmma consumers) a stage released while the wgmma reading it is in flight."""
    parts = []
    plain = tuple(f for f in faults if f in FAULTS)
    if plain:
        parts.append(st.sampled_from(plain).flatmap(lambda f: mainloop_plans(fault=f)).map(render))
    parts.append(st.sampled_from(faults).flatmap(lambda f: wgmma_loop_plans(fault=f)).map(render_wgmma))
    return st.one_of(*parts)


__all__ = ["MainloopPlan", "mainloop_plans", "kernel", "kernel_text", "render", "mainloop_programs",
           "illegal_mainloop_programs", "FAULTS", "WgmmaLoopPlan", "wgmma_loop_plans", "wgmma_kernel", "wgmma_kernel_text",
           "render_wgmma", "wgmma_mainloop_programs", "WGMMA_FAULTS", "MAY_HANG", "TWIN_RULES", "twin_name", "fault_of",
           "FILLS", "COMPLETE_TX_FILLS", "FAULT_FILLS", "with_fill", "tma_tile", "tensor_maps"]
