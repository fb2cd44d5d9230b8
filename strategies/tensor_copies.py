"""Kernels that move tiles through tensor maps (TMA, issue 27): ``cp.async.bulk.tensor`` loads into
shared memory, each completing on its own mbarrier, then (optionally) a TMA store back to global
memory, with the header's ``TENSORMAP:`` lines describing the maps (``fuzzptx.program.TensorMap``).

Drawn: the element type (1 to 8 bytes, integer and float), rank 1-3, the swizzle (every mode, the
box's inner row at most the swizzle span), global dims and padded row strides, boxes whose
coordinates overhang the tensor's edges on either side (stores: the high edges only; the innermost
coordinate a multiple of 16 bytes: the H100 faults on a store at a negative coordinate and on a copy
whose innermost coordinate is not 16-byte aligned, oracles/reference/tma.py) (out-of-bounds elements filled with zero, or
NaN on float maps), 1-3 loads of the same map at different coordinates (the map operand is the parameter's
``cvta.param`` address: ptxas refuses the bare parameter symbol), and a store phase: every thread rewrites its
words of the first box (``xor``), ``fence.proxy.async``, then one elected thread stores the box
through a second map (same geometry, another buffer holding random data, so unwritten
out-of-bounds elements are checked too), or reduces it into that buffer (integer ``add``/``min``/
``max``), then a ``commit_group`` and a ``wait_group(.read) 0``.  Outputs: the shared tiles word by
word (``o``), and the stored-to buffer (``r``).  One legal plan in two issues its loads as
``.multicast::cluster`` copies in a cluster of one CTA (``CLUSTER_FORMS``, drawn last; the twins draw
none, so what ``illegal_programs()`` draws is unchanged).

Illegal twins (labelled as ``mainloops`` labels its twins: ptxas accepts, the checker names the
rule each breaks (``TWIN_RULES``), the reference's outputs are undefined):
  short_expect_tx  the expect_tx of one load counts only the in-bounds bytes (or 16 fewer): the
                   box's complete_tx, out-of-bounds bytes included, completes the phase before every
                   byte has landed
  early_read       the tiles are read before the wait on the last load's barrier
  unfenced_store   the rewritten tile is stored by TMA with no fence.proxy.async after the generic writes
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzzptx.program import Buffer, Launch, Program, TensorMap
from fuzzptx.ptx.emit import emit
from fuzzptx.ptx.ir import Module

from . import irbuild
from .irbuild import Body, at, param, regs, shared, tensor

FAULTS = ("short_expect_tx", "early_read", "unfenced_store")
#: The rule each twin breaks, as the checker names it (its labels claim it: ``checker: undefined: RULE``).
TWIN_RULES: dict[str, str] = {"short_expect_tx": "spec.mbarrier.expect-tx-short",
                              "early_read": "spec.mbarrier.read-before-wait",
                              "unfenced_store": "spec.proxy.fence-missing"}
# element type of the map -> the buffer type holding it (same width; floats compare NaN to NaN)
TYPES = {"u8": "u8", "u16": "u16", "f16": "f16", "bf16": "bf16", "u32": "u32", "s32": "s32", "f32": "f32",
         "u64": "u64", "f64": "f64"}
SPAN = {"none": 256, "32B": 32, "64B": 64, "128B": 128}  # most bytes of the box's inner row
PATTERN = {"none": 128, "32B": 256, "64B": 512, "128B": 1024}  # shared alignment of one box
MAX_TILE_BYTES = 4096
# how a plan's loads are issued: "none" plain loads; "implicit" multicast loads with the mask 1 <<
# %cluster_ctarank in a kernel with no cluster directive (every CTA is then a cluster of one);
# "explicit" the same under ``.reqnctapercluster 1, 1, 1`` with CUTLASS's cluster handshake
# (``barrier.cluster.arrive.relaxed.aligned`` / ``wait.aligned`` after the mbarrier inits, one at the
# end), ``.L2::cache_hint`` on the copies, and a consumer release through ``mapa`` +
# ``mbarrier.arrive.shared::cluster`` on an empty barrier of the own CTA (as CUTLASS's multicast GEMMs
# release the stages of the CTAs that multicast to them), whose completed phase every thread then waits for
CLUSTER_FORMS = ("none", "implicit", "explicit")
EVICT_NORMAL = 1152921504606846976  # the L2 cache-policy word CUTLASS passes (tests/data/cutlass/*cluster*)


@dataclass(frozen=True)
class CopyPlan:
    ntid: int
    tmap: TensorMap  # the load map (parameter tm, buffer g)
    loads: tuple[tuple[int, ...], ...]  # coordinates of each load
    store: tuple[int, ...] | None  # coordinates of the store through tmo (None: no store phase)
    reduce: str | None  # an integer reduction through tmo instead of the plain store
    wait_read: bool  # wait_group.read 0 (else wait_group 0)
    xor: int
    seed: int
    fault: str | None = None
    cluster: str = "none"  # CLUSTER_FORMS: the loads as multicast copies in a cluster of one CTA

    @property
    def multicast(self) -> bool:
        return self.cluster != "none"

    @property
    def box_bytes(self) -> int:
        return self.tmap.box_bytes

    @property
    def slot(self) -> int:
        """Shared bytes between boxes: the box's footprint (rows padded to the swizzle span) rounded
        up to its swizzle pattern."""
        a = PATTERN[self.tmap.swizzle]
        return -(-self.tmap.smem_bytes // a) * a

    def inside_bytes(self, coords: tuple[int, ...]) -> int:
        """Bytes of the box at ``coords`` inside the tensor."""
        n = 1
        for c, b, d in zip(coords, self.tmap.box, self.tmap.dims):
            n *= max(0, min(c + b, d) - max(c, 0))
        return n * self.tmap.element_bytes


@st.composite
def tensor_maps(draw, name: str = "tm", buffer: str = "g") -> TensorMap:
    """A tiled map whose box fits ``MAX_TILE_BYTES`` and may overhang a small tensor."""
    etype = draw(st.sampled_from(tuple(TYPES)))
    eb = {"u8": 1, "u16": 2, "f16": 2, "bf16": 2, "u32": 4, "s32": 4, "f32": 4, "u64": 8, "f64": 8}[etype]
    swizzle = draw(st.sampled_from(("none", "32B", "64B", "128B")))
    rank = draw(st.integers(1, 3))
    span = SPAN[swizzle]
    inner = draw(st.sampled_from([b for b in (16, 32, 64, 128, 256) if b <= span and b // eb <= 256]))
    if swizzle != "none" and draw(st.booleans()):
        inner = span  # the usual choice: one swizzle row per box row
    box = [inner // eb]
    rows_left = MAX_TILE_BYTES // inner
    for _ in range(rank - 1):
        b = draw(st.integers(1, max(1, min(8, rows_left))))
        rows_left = max(1, rows_left // b)
        box.append(b)
    dims = [draw(st.integers(1, 2 * box[0]))]
    for b in box[1:]:
        dims.append(draw(st.integers(1, 2 * b)))
    strides = []
    row = -(-dims[0] * eb // 16) * 16 + 16 * draw(st.integers(0, 2))
    for k in range(1, rank):
        strides.append(row)
        row *= dims[k]
    oob = "nan" if etype.startswith(("f", "bf")) and draw(st.booleans()) else "zero"
    return TensorMap(name, buffer, etype, tuple(dims), tuple(strides), tuple(box), (), 0, "none", swizzle,
                     draw(st.sampled_from(("none", "64B", "128B", "256B"))), oob)


def aligned(c: int, eb: int) -> int:
    """``c`` rounded down to an innermost coordinate whose byte offset is a multiple of 16 (the H100
    faults on any other: oracles/reference/tma.py)."""
    q = 16 // eb
    return c // q * q


def _coords(draw, tm: TensorMap, store: bool = False) -> tuple[int, ...]:
    """Box coordinates anywhere from overhanging the low edges (loads only: the H100 faults on a
    store at a negative coordinate) to overhanging the high ones."""
    q = 16 // tm.element_bytes
    first = q * draw(st.integers(0 if store else -((tm.box[0] - 1) // q), (tm.dims[0] - 1) // q))
    return (first,) + tuple(draw(st.integers(0 if store else -b + 1, d - 1)) for b, d in zip(tm.box[1:], tm.dims[1:]))


@st.composite
def copy_plans(draw, *, fault: str | None = None) -> CopyPlan:
    tm = draw(tensor_maps())
    nloads = draw(st.integers(1, 3 if tm.box_bytes <= 1024 else 1))
    loads = tuple(_coords(draw, tm) for _ in range(nloads))
    store_phase = fault == "unfenced_store" or (fault is None and draw(st.booleans()))
    store = _coords(draw, tm, store=True) if store_phase else None
    reduce = None
    if store is not None and tm.type in ("u32", "s32", "u64") and draw(st.booleans()):
        reduce = draw(st.sampled_from(("add", "min", "max")))
    if fault == "short_expect_tx":
        # a box that overhangs, so counting only its in-bounds bytes comes up short
        last = (aligned(tm.dims[0] - 1, tm.element_bytes),) + tuple(d - 1 for d in tm.dims[1:])
        loads = tuple(c if i else last for i, c in enumerate(loads))
    plan = CopyPlan(
        ntid=draw(st.sampled_from((128, 256))), tmap=tm, loads=loads, store=store, reduce=reduce,
        wait_read=draw(st.booleans()),
        xor=draw(st.integers(1, 2**32 - 1)), seed=draw(st.integers(0, 2**31 - 1)), fault=fault)
    if fault is not None:  # the twins draw what they drew before cluster forms (so do the samples of them)
        return plan
    # drawn last, so every earlier field of a plan is what it was before cluster forms existed
    form = draw(st.integers(0, 3))
    return replace(plan, cluster=CLUSTER_FORMS[max(form - 1, 0)])


def _regs(b: Body, first: int, coords: tuple[int, ...]) -> list[str]:
    names = []
    for k, c in enumerate(coords):
        b("mov.b32", f"%r{first + k}", c)
        names.append(f"%r{first + k}")
    return names


def _words(b: Body, plan: CopyPlan, body) -> None:
    """``body(b)`` per round of the loop over the tiles' words (thread tid takes tid + k*ntid)."""
    total = len(plan.loads) * plan.slot // 4
    for k in range(-(-total // plan.ntid)):
        b("add.s32", "%r20", "%r1", k * plan.ntid)
        b("setp.lt.u32", "%p5", "%r20", total)
        b("shl.b32", "%r21", "%r20", 2)
        b("add.s32", "%r22", "%r2", "%r21")
        body(b)


def _cluster_sync(b: Body) -> None:
    b("barrier.cluster.arrive.relaxed.aligned")
    b("barrier.cluster.wait.aligned")


def kernel(plan: CopyPlan) -> Module:
    """The IR of a plan: ``k(g, o, r, tm, tmo)``."""
    r, B = plan.tmap.rank, plan.box_bytes
    n = len(plan.loads)
    explicit = plan.cluster == "explicit"
    params = (param(".u64", "g"), param(".u64", "o"), param(".u64", "r"), param(".b8", "tm", 64, 128),
              param(".b8", "tmo", 64, 128))
    attributes = (f".reqntid {plan.ntid}", *([".reqnctapercluster 1, 1, 1"] if explicit else []))
    decls = [regs(".pred", "%p", 8), regs(".b32", "%r", 48), regs(".b64", "%rd", 12),
             *([regs(".b16", "%rs", 2)] if plan.multicast else []),
             shared(".b8", "tile", 1024, n * plan.slot), shared(".b64", "bar", 8, n),
             *([shared(".b64", "ebar", 8)] if explicit else [])]
    b = Body()
    b("ld.param.u64", "%rd1", at("o"))
    b("mov.u32", "%r1", "%tid.x")
    b("mov.u32", "%r2", "tile")
    b("shr.u32", "%r4", "%r1", 5)
    b("setp.eq.u32", "%p1", "%r4", 0)
    b("elect.sync", "%r5|%p2", -1)
    b("and.pred", "%p3", "%p1", "%p2")
    # ptxas takes the map as a generic address (the parameter symbol itself is a state-space mismatch)
    b("mov.u64", "%rd2", "tm")
    b("cvta.param.u64", "%rd3", "%rd2")
    b("mov.u64", "%rd4", "tmo")
    b("cvta.param.u64", "%rd5", "%rd4")
    src, dst = "%rd3", "%rd5"
    for i in range(n):
        b("mbarrier.init.shared::cta.b64", at("bar", 8 * i), 1, g="%p3")
    if explicit:
        b("mbarrier.init.shared::cta.b64", at("ebar"), 1, g="%p3")
    b("fence.mbarrier_init.release.cluster")
    if explicit:
        _cluster_sync(b)
    else:
        b("bar.sync", 0)
    mcast, hint = "", ""
    if plan.multicast:  # the mask of this CTA's rank, as CUTLASS builds it from the cluster layout
        b("mov.u32", "%r24", "%cluster_ctarank")
        b("shl.b32", "%r25", 1, "%r24")
        b("cvt.u16.u32", "%rs1", "%r25")
        mcast = ".multicast::cluster"
    if explicit:
        b("mov.u64", "%rd8", EVICT_NORMAL)
        hint = ".L2::cache_hint"
    for i, c in enumerate(plan.loads):
        expect = B
        if plan.fault == "short_expect_tx" and i == 0:
            inside = plan.inside_bytes(c)
            expect = inside if inside < B else B - 16
        co = _regs(b, 30 + 5 * (i % 2), c)
        b("mbarrier.arrive.expect_tx.shared::cta.b64", "_", at("bar", 8 * i), expect, g="%p3")
        b(f"cp.async.bulk.tensor.{r}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes{mcast}{hint}",
          at("tile", i * plan.slot), tensor(src, co), at("bar", 8 * i),
          *(["%rs1"] if mcast else []), *(["%rd8"] if hint else []), g="%p3")

    def wait(i: int) -> None:
        b.label(f"W{i}")
        b("mbarrier.try_wait.parity.shared::cta.b64", "%p4", at("bar", 8 * i), 0)
        b("bra", f"W{i}", g="!%p4")

    def copy_out(b: Body) -> None:
        b("ld.shared.u32", "%r23", at("%r22"), g="%p5")
        b("cvt.u64.u32", "%rd6", "%r21")
        b("add.s64", "%rd7", "%rd1", "%rd6")
        b("st.global.u32", at("%rd7"), "%r23", g="%p5")

    def rewrite(b: Body) -> None:
        b("ld.shared.u32", "%r23", at("%r22"), g="%p5")
        b("xor.b32", "%r23", "%r23", plan.xor)
        b("st.shared.u32", at("%r22"), "%r23", g="%p5")

    late = plan.fault == "early_read"
    for i in range(n - 1 if late else n):
        wait(i)
    _words(b, plan, copy_out)
    if late:
        wait(n - 1)
    if explicit:  # the consumer release: the elected thread arrives on the empty barrier through its cluster address
        b("bar.sync", 0)
        b("mov.u32", "%r26", "ebar")
        b("mapa.shared::cluster.u32", "%r27", "%r26", "%r24")
        b("mbarrier.arrive.shared::cluster.b64", "_", at("%r27"), g="%p3")
        b.label("R0")
        b("mbarrier.try_wait.parity.shared::cta.b64", "%p6", at("ebar"), 0)
        b("bra", "R0", g="!%p6")
    if plan.store is not None:
        b("bar.sync", 0)
        _words(b, plan, rewrite)
        if plan.fault != "unfenced_store":
            b("fence.proxy.async.shared::cta")
        b("bar.sync", 0)
        co = _regs(b, 40, plan.store)
        if plan.reduce is None:
            b(f"cp.async.bulk.tensor.{r}d.global.shared::cta.tile.bulk_group", tensor(dst, co), at("tile"), g="%p3")
        else:  # alone: a store and a reduction of the same elements in flight together would race
            b(f"cp.reduce.async.bulk.tensor.{r}d.global.shared::cta.{plan.reduce}.tile.bulk_group",
              tensor(dst, co), at("tile"), g="%p3")
        b("cp.async.bulk.commit_group", g="%p3")
        b(f"cp.async.bulk.wait_group{'.read' if plan.wait_read else ''}", 0, g="%p3")
    if explicit:  # no CTA leaves while another of its cluster may still reach its shared memory
        _cluster_sync(b)
    b("ret")
    return irbuild.kernel(params, attributes, decls, b)


def kernel_text(plan: CopyPlan) -> str:
    """The PTX of a plan (its IR, emitted)."""
    return emit(kernel(plan))


def render(plan: CopyPlan) -> Program:
    tm = plan.tmap
    btype = TYPES[tm.type]
    nbytes = tm.offset + (tm.strides[-1] * tm.dims[-1] if tm.strides else tm.dims[0] * tm.element_bytes)
    # 16 bytes of slack past the tensor: a store whose box ends inside the last row's final 16-byte run
    # writes the rest of that run on the H100 (oracles/reference/tma.py), here inside the buffer
    count = (-(-nbytes // 16) * 16 + 16) // tm.element_bytes
    out_bytes = len(plan.loads) * plan.slot
    buffers = (Buffer("g", btype, count, "random", plan.seed),
               Buffer("o", btype, out_bytes // tm.element_bytes, "zeros", output=True),
               Buffer("r", btype, count, "random", plan.seed + 1, output=True))
    tmo = replace(tm, name="tmo", buffer="r")
    expect: tuple = ()
    notes: tuple = ()
    if plan.fault is not None:
        expect = (("ptxas", "accepted"), ("checker", f"undefined: {TWIN_RULES[plan.fault]}"), ("reference", "undefined"))
        notes = (f"tensor-copy fault: {plan.fault}", f"mutation: {twin_name(plan.fault)} breaks {TWIN_RULES[plan.fault]}")
    return Program(kernel(plan), Launch("k", (1, 1, 1), (plan.ntid, 1, 1)), buffers,
                   (), expect, None, notes, "spec", (tm, tmo))


def tensor_copy_programs() -> st.SearchStrategy[Program]:
    """Legal tensor-copy kernels (see the module doc)."""
    return copy_plans().map(render)


def illegal_tensor_copy_programs(faults: tuple[str, ...] = FAULTS) -> st.SearchStrategy[Program]:
    """Their labelled illegal twins (``FAULTS``; with ``faults``, those)."""
    return st.sampled_from(faults).flatmap(lambda f: copy_plans(fault=f)).map(render)


def twin_name(fault: str) -> str:
    """The name a twin goes by among the mutations (``mutation: NAME breaks RULE`` notes; the rule is
    ``TWIN_RULES``'s: the checker reads a tensor copy's box from the program's ``TENSORMAP:`` header)."""
    return "tensor_" + fault


def fault_of(name: str) -> str:
    return name.removeprefix("tensor_")


__all__ = ["CopyPlan", "CLUSTER_FORMS", "FAULTS", "aligned", "copy_plans", "tensor_maps", "kernel", "kernel_text", "render",
           "tensor_copy_programs", "illegal_tensor_copy_programs", "twin_name", "fault_of", "TWIN_RULES"]
