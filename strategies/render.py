"""Plan -> Program: render a wgmma program plan with helper "hardware"'s KernelBuilder.

Kernel shape (one CTA, ``128 * warpgroups`` threads):

  prologue   buffers a<i>/b<i>/c<i>/d<i> (+ s for side work), scalar params
             copy every shared tile global -> shared, fence.proxy.async, bar.sync
             roles "producer": warpgroup 1 copies, then leaves (bra.uni, or exit early)
             descriptors per tile and K-slice; A fragments; accumulators (zero or loaded)
  script     stages / waits / touches / side work / loops / uniform ifs
  epilogue   wait_group 0 if anything is in flight, store accumulators (raw per-thread
             registers: thread t's register i at word t*R + i), store the scratch word
"""
from __future__ import annotations

from dataclasses import dataclass

from fuzzptx.builders import KernelBuilder
from fuzzptx.data import element_bytes
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Addr, CallArgs, Directive, Function, Guard, Imm, Instr, Param, Reg, Sym, Vec

from .control import Live, Loop, Side, UniformIf, script_state, walk_ops
from .operands import buffer_type
from .pipelines import Mma, Stage, Touch, Unit, Wait
from .shapes import shapes_of
from .surround import APPROX_NOTE, Around, Assertion, DescriptorRing, Io, assert_decl

SIDE_FUNC = "fz_side"
EXTERN_FUNC = "fz_extern"
PROTO = "fz_proto"


@dataclass(frozen=True)
class WgmmaPlan:
    """Everything a wgmma program is made from; ``render`` turns it into a Program."""

    units: tuple[Unit, ...]
    script: tuple
    warpgroups: int = 1
    roles: str = "all"  # "all": every warpgroup runs the script; "producer": warpgroup 1 only copies
    early_exit: bool = False  # producer leaves with `exit` instead of a branch to the end
    acc_init: str = "zero"  # "zero" (mov) or "load" (from buffer c<i>)
    init: str = "small_int"
    seed: int = 0
    sd_value: int = 1  # value of the scale-d predicate parameter
    version: str = "8.0"
    extern_decl: bool = False

    @property
    def threads(self) -> int:
        return 128 * self.warpgroups


class _Builder(KernelBuilder):
    def directive(self, text: str) -> None:
        self._body.append(Directive(text))


def _words(nbytes: int) -> int:
    return -(-nbytes // 16) * 16


def render(plan: WgmmaPlan) -> Program:
    kb = _Builder("k", plan.threads, plan.version, "sm_90a")
    tid = kb.tid()
    ops = list(walk_ops(plan.script))
    mmas = [m for op in ops if isinstance(op, Stage) for m in op.mmas]
    sides = [op for op in ops if isinstance(op, Side)]
    lives = [op for op in ops if isinstance(op, Live)]
    # ---- buffers
    ptr: dict[str, Reg] = {}
    for i, u in enumerate(plan.units):
        f = u.form
        bt = buffer_type(f.btype)
        nb = _words(u.b_tile.footprint())
        ptr[f"b{i}"] = kb.buffer(f"b{i}", bt, nb // element_bytes(bt), plan.init, plan.seed + 10 * i + 1)
        at = buffer_type(f.atype)
        na = _words(u.a_tile.footprint()) if u.a_tile else plan.threads * 16 * u.slices
        ptr[f"a{i}"] = kb.buffer(f"a{i}", at, na // element_bytes(at), plan.init, plan.seed + 10 * i + 2)
        nd = plan.threads * u.d_count * 4 // element_bytes(f.dtype)
        if plan.acc_init == "load":
            ptr[f"c{i}"] = kb.buffer(f"c{i}", f.dtype, nd, plan.init, plan.seed + 10 * i + 3)
        ptr[f"d{i}"] = kb.buffer(f"d{i}", f.dtype, nd, "zeros", 0, output=True)
    if sides:
        ptr["s"] = kb.buffer("s", "u32", plan.threads, "zeros", 0, output=True)
    for j, lv in enumerate(lives):  # a Live block's values come from h<j> and go to l<j>
        ptr[f"h{j}"] = kb.buffer(f"h{j}", "u32", plan.threads * lv.count, plan.init, plan.seed + 7 + 10 * j)
        ptr[f"l{j}"] = kb.buffer(f"l{j}", "u32", plan.threads * lv.count, "zeros", 0, output=True)
    pred_sd = None
    if any(m.scale_d == "param" for m in mmas):
        sd = kb.scalar("sd", plan.sd_value)
        pred_sd = kb.reg(".pred")
        kb.emit("setp.ne.u32", pred_sd, sd, 0)
    wg = kb.reg(".b32")
    kb.emit("shr.u32", wg, tid, 7)
    p_wg = kb.reg(".pred")
    kb.emit("setp.ne.u32", p_wg, wg, 0)
    # ---- shared tiles
    tiles: list[tuple[int, str, object]] = []
    for i, u in enumerate(plan.units):
        for role, tile in (("b", u.b_tile), ("a", u.a_tile)):
            if tile is not None:
                tiles.append((i, role, tile))
    syms: dict[tuple[int, str], str] = {}
    for i, role, tile in tiles:
        syms[(i, role)] = kb.shared(_words(tile.footprint()))
    end = kb.new_label()
    if plan.roles == "producer":
        skip = kb.new_label()
        kb.emit("bra.uni", Sym(skip), guard=Guard(p_wg, negated=True))
        local = kb.reg(".b32")
        kb.emit("sub.u32", local, tid, 128)
        for i, role, tile in tiles:
            _copy(kb, ptr[f"{role}{i}"], syms[(i, role)], _words(tile.footprint()), local, 128)
        kb.place(skip)
    else:
        for i, role, tile in tiles:
            kb.copy_to_shared(ptr[f"{role}{i}"], syms[(i, role)], _words(tile.footprint()), sync=False)
    kb.sync_shared()
    if plan.roles == "producer":
        if plan.early_exit:
            kb.emit("exit", guard=Guard(p_wg))
        else:
            kb.emit("bra.uni", Sym(end), guard=Guard(p_wg))
    # ---- operands
    bdesc, adesc, afrag, dregs, meta, places = {}, {}, {}, {}, {}, {}
    for i, u in enumerate(plan.units):
        for s in range(u.slices):
            t = u.b_tile.slice(s, u.form.shape.k)
            bdesc[i, s] = kb.descriptor(syms[(i, "b")], t.start, t.descriptor())
            places[("b", i, s)] = (syms[(i, "b")], t.start, t.descriptor())
            if u.a_tile is not None:
                t = u.a_tile.slice(s, u.a_k)
                adesc[i, s] = kb.descriptor(syms[(i, "a")], t.start, t.descriptor())
                places[("a", i, s)] = (syms[(i, "a")], t.start, t.descriptor())
        if u.a_tile is None:
            regs = kb.load_fragment(ptr[f"a{i}"], u.a_type, 4 * u.slices)
            for s in range(u.slices):
                afrag[i, s] = regs[4 * s: 4 * s + 4]
        if plan.acc_init == "load":
            dregs[i] = kb.load_fragment(ptr[f"c{i}"], u.d_type, u.d_count)
        else:
            dregs[i] = kb.regs(u.d_type, u.d_count)
            for r in dregs[i]:
                kb.emit("mov.b32", r, 0)
        if u.meta is not None:
            meta[i] = kb.reg(".b32")
            kb.emit("mov.b32", meta[i], Imm(u.meta, hex(u.meta)))
    scratch = lane_p = None
    if sides:
        scratch = kb.reg(".b32")
        kb.emit("mov.u32", scratch, tid)
        lane = kb.reg(".b32")
        kb.emit("and.b32", lane, tid, 31)
        lane_p = kb.reg(".pred")
        kb.emit("setp.lt.u32", lane_p, lane, 16)
    ctx = _Ctx(kb, plan, ptr, bdesc, adesc, afrag, dregs, meta, pred_sd, p_wg, scratch, lane_p, places)
    ctx.script(plan.script, None)
    # ---- epilogue
    if script_state(plan.script).pending:
        kb.emit("wgmma.wait_group.sync.aligned", 0)
    for i, u in enumerate(plan.units):
        kb.store_fragment(ptr[f"d{i}"], dregs[i], u.d_type)
    if sides:
        kb.store_fragment(ptr["s"], (scratch,), ".b32")
    kb.place(end)
    prog = kb.build(expect=(("ptxas", "accepted"), ("checker", "legal")), notes=_notes(plan))
    return _with_functions(prog, plan, sides)


def _copy(kb: KernelBuilder, src: Reg, sym: str, nbytes: int, local: Reg, stride: int) -> None:
    """Threads with local index 0..stride-1 copy nbytes word by word (unrolled)."""
    g = kb.reg(".b64")
    kb.emit("mul.wide.u32", g, local, 4)
    kb.emit("add.u64", g, src, g)
    s = kb.shared_address(sym)
    kb.emit("mad.lo.u32", s, local, 4, s)
    for j in range(-(-nbytes // (4 * stride))):
        off = 4 * stride * j
        x = kb.reg(".b32")
        if off + 4 * stride > nbytes:
            p = kb.reg(".pred")
            kb.emit("setp.lt.u32", p, local, (nbytes - off) // 4)
            kb.emit("ld.global.b32", x, Addr(g, off), guard=p)
            kb.emit("st.shared.b32", Addr(s, off), x, guard=p)
        else:
            kb.emit("ld.global.b32", x, Addr(g, off))
            kb.emit("st.shared.b32", Addr(s, off), x)


_SIGN = {"f32": 0x80000000, "s32": 0x80000000, "f16": 0x80008000}


@dataclass
class _Ctx:
    kb: _Builder
    plan: WgmmaPlan
    ptr: dict
    bdesc: dict
    adesc: dict
    afrag: dict
    dregs: dict
    meta: dict
    pred_sd: Reg | None
    p_wg: Reg
    scratch: Reg | None
    lane_p: Reg | None
    places: dict  # ("a"|"b", unit, slice) -> (shared symbol, offset, descriptor): what a descriptor encodes
    nflags: int = 0
    nlives: int = 0
    narounds: int = 0

    def script(self, ops: tuple, loop_pred: Reg | None) -> None:
        for op in ops:
            if isinstance(op, Stage):
                afrag = self.fresh_fragments(op) if op.fresh_a else self.afrag
                self.kb.emit("wgmma.fence.sync.aligned")
                for m in op.mmas:
                    self.mma(m, loop_pred, afrag)
                self.kb.emit("wgmma.commit_group.sync.aligned")
            elif isinstance(op, Live):
                j, self.nlives = self.nlives, self.nlives + 1
                held = self.kb.load_fragment(self.ptr[f"h{j}"], ".b32", op.count)
                self.script(op.body, loop_pred)
                self.kb.store_fragment(self.ptr[f"l{j}"], held, ".b32")
            elif isinstance(op, Wait):
                self.kb.emit("wgmma.wait_group.sync.aligned", op.n)
            elif isinstance(op, Touch):
                r = self.dregs[op.unit][0]
                mask = _SIGN[self.plan.units[op.unit].form.dtype]
                self.kb.emit("xor.b32", r, r, Imm(mask, hex(mask)))
            elif isinstance(op, Side):
                self.side(op.kind)
            elif isinstance(op, Around):
                j, self.narounds = self.narounds, self.narounds + 1
                io = Io(self.kb, j, self.plan.threads, self.plan.seed + 1000 + 10 * j)
                if isinstance(op.construct, DescriptorRing):  # recomputes descriptors later stages use
                    op.construct.emit_descriptors(self.kb, io, self.places, self.adesc, self.bdesc)
                else:
                    op.construct.emit(self.kb, io)
            elif isinstance(op, Loop):
                self.loop(op)
            elif isinstance(op, UniformIf):
                self.uniform_if(op, loop_pred)
            else:
                raise TypeError(op)

    def fresh_fragments(self, op: Stage) -> dict:
        """The A fragments of a stage, register-A units' loaded again into new registers (the
        registers of a group in flight are never rewritten: each stage has its own)."""
        out = dict(self.afrag)
        for i in sorted({m.unit for m in op.mmas}):
            u = self.plan.units[i]
            if u.a_tile is None:
                regs = self.kb.load_fragment(self.ptr[f"a{i}"], u.a_type, 4 * u.slices)
                for s in range(u.slices):
                    out[i, s] = regs[4 * s: 4 * s + 4]
        return out

    def mma(self, m: Mma, loop_pred: Reg | None, afrag: dict) -> None:
        u = self.plan.units[m.unit]
        ops = []
        for spec in u.form.operands:
            r = spec.role
            if r == "d":
                ops.append(Vec(self.dregs[m.unit]))
            elif r == "a":
                ops.append(Vec(afrag[m.unit, m.slice]))
            elif r == "a_desc":
                ops.append(self.adesc[m.unit, m.slice])
            elif r == "b_desc":
                ops.append(self.bdesc[m.unit, m.slice])
            elif r == "sp_meta":
                ops.append(self.meta[m.unit])
            elif r == "sp_sel":
                ops.append(Imm.of(u.sp_sel))
            elif r == "scale_d":
                if m.scale_d == "param":
                    ops.append(self.pred_sd)
                elif m.scale_d == "loop":
                    ops.append(loop_pred)
                else:
                    ops.append(Imm.of(int(m.scale_d)))
            elif r == "imm_scale_a":
                ops.append(Imm.of(m.scale_a))
            elif r == "imm_scale_b":
                ops.append(Imm.of(m.scale_b))
            elif r == "imm_trans_a":
                ops.append(Imm.of(int(u.a_tile.major == "MN")))
            elif r == "imm_trans_b":
                ops.append(Imm.of(int(u.b_tile.major == "MN")))
            else:
                raise ValueError(f"{u.form.key}: unknown operand {r!r}")
        self.kb.emit(u.form.opcode, *ops)

    def side(self, kind: str) -> None:
        kb, s = self.kb, self.scratch
        if kind == "arith":
            kb.emit("mad.lo.u32", s, s, 3, 1)
        elif kind == "predicated":
            kb.emit("add.u32", s, s, 7, guard=Guard(self.lane_p))
        elif kind == "divergent":
            lab = kb.new_label()
            kb.emit("bra", Sym(lab), guard=Guard(self.lane_p))
            kb.emit("xor.b32", s, s, 0x55)
            kb.place(lab)
        elif kind == "call":
            kb.emit("call", CallArgs((s,)), Sym(SIDE_FUNC), CallArgs((s,)))
        elif kind == "call_indirect":
            fp = kb.reg(".b64")
            kb.emit("mov.u64", fp, Sym(SIDE_FUNC))
            name = PROTO + kb.new_label()  # one prototype label per call site
            kb.place(name)
            kb.directive(".callprototype (.reg .b32 _) _ (.reg .b32 _);")
            kb.emit("call", CallArgs((s,)), fp, CallArgs((s,)), Sym(name))
        else:
            raise ValueError(kind)

    def loop(self, op: Loop) -> None:
        kb = self.kb
        it = kb.reg(".b32")
        kb.emit("mov.u32", it, 0)
        top = kb.new_label()
        kb.place(top)
        p_first = kb.reg(".pred")
        kb.emit("setp.ne.u32", p_first, it, 0)
        self.script(op.body, p_first)
        kb.emit("add.u32", it, it, 1)
        p = kb.reg(".pred")
        kb.emit("setp.lt.u32", p, it, op.trips)
        kb.emit("bra.uni", Sym(top), guard=Guard(p))

    def uniform_if(self, op: UniformIf, loop_pred: Reg | None) -> None:
        kb = self.kb
        if op.cond == "param":
            self.nflags += 1
            v = kb.scalar(f"flag{self.nflags}", int(op.taken))
            p = kb.reg(".pred")
            kb.emit("setp.ne.u32", p, v, 0)
            skip_if = Guard(p, negated=True)
        else:  # warpgroup index: uniform across each warpgroup; `taken` = warpgroup 0 runs the body
            skip_if = Guard(self.p_wg, negated=not op.taken)
        skip = kb.new_label()
        kb.emit("bra.uni", Sym(skip), guard=skip_if)
        self.script(op.body, loop_pred)
        kb.place(skip)


def _with_functions(prog: Program, plan: WgmmaPlan, sides: list) -> Program:
    from dataclasses import replace

    items = list(prog.module.items)
    extra = []
    if any(s.kind in ("call", "call_indirect") for s in sides):
        a, r = Reg("a"), Reg("r")
        extra.append(Function("func", SIDE_FUNC, (Param(".reg", ".b32", "a"),), (Param(".reg", ".b32", "r"),),
                              (Instr("mad.lo.u32", (r, a, Imm.of(5), Imm.of(3))), Instr("ret"))))
    if any(isinstance(op, Around) and isinstance(op.construct, Assertion) for op in walk_ops(plan.script)):
        extra.append(assert_decl())
    if plan.extern_decl:
        extra.append(Function("func", EXTERN_FUNC, (Param(".reg", ".b32", "a"),), (Param(".reg", ".b32", "r"),),
                              None, ".extern"))
    return replace(prog, module=replace(prog.module, items=tuple(extra + items)))


def _notes(plan: WgmmaPlan) -> tuple[str, ...]:
    out = [f"units: {', '.join(u.form.key for u in plan.units)}",
           f"warpgroups={plan.warpgroups} roles={plan.roles} early_exit={plan.early_exit} acc_init={plan.acc_init}"]
    arounds = [op.construct for op in walk_ops(plan.script) if isinstance(op, Around)]
    if arounds:
        out.append(f"around: {' '.join(type(c).__name__ for c in arounds)}")
    if any(c.approx for c in arounds):
        out.append(APPROX_NOTE)
    found = shapes_of(plan.units, plan.script)
    if found:
        out.append(f"shapes: {' '.join(found)}")
    return tuple(out)


__all__ = ["WgmmaPlan", "render"]
