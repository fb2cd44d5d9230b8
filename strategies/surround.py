"""The code real kernels wrap around tensor cores (issue 38): epilogues, online-softmax steps,
address arithmetic, comparisons, runtime loops, warp collectives, local arrays, atomics and
16-bit shared memory, drawn as small constructs and placed between the stages, waits and loops
of a wgmma program (``Around`` ops: values live while wgmmas are in flight, inside the same
loops).

Each construct reads fresh words of its own input buffer ``x<j>`` (thread t: words t*n..t*n+n-1)
and writes its own output buffer ``y<j>``; it is free of undefined behaviour by construction:
divisors are made non-zero, shift and field amounts are whatever the ISA defines for every
value, collectives run on whole warps with the full mask (after a divergent branch has
reconverged), local arrays are written before they are read, atomics whose returned value is
stored own their address, a shared counter is only ``red``-added (order-free).  Constructs with
``approx`` use ``ex2.approx``/``rcp.approx`` (the reference gives bounds, not bits: the program's
notes say so and compile pairs judge its bits); ``approx`` is drawn one time in four.

Strategies, one per noun (``arounds()`` draws a mix): ``divisions()``, ``address_arithmetic()``,
``comparisons()``, ``epilogues()``, ``softmax_steps()``, ``collectives()``, ``loops()``,
``local_arrays()``, ``atomics()``, ``shared16()``.  Illegal twins are ``mutations.SURROUND_MUTATIONS``.
"""
from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from fuzzptx.builders import _encode_fields
from fuzzptx.ptx.ir import Addr, CallArgs, Function, Guard, Imm, Instr, Param, Reg, Scope, Sym, Vec, VarDecl

from .operands import ints, sampled

FULL = Imm(0xFFFFFFFF, "0xffffffff")
APPROX_NOTE = "approx: ex2.approx/rcp.approx (the reference gives bounds, not bits: compile pairs judge its bits)"


def _hex(v: int) -> Imm:
    return Imm(v, hex(v))


class Io:
    """A construct's buffers and names: ``x<j>`` in, ``y<j>`` (and ``z<j>``) out, params ``<p><j>``."""

    def __init__(self, kb, j: int, threads: int, seed: int):
        self.kb, self.j, self.threads, self.seed = kb, j, threads, seed

    def name(self, stem: str) -> str:
        return f"{stem}{self.j}"

    def load(self, n: int) -> tuple[Reg, tuple[Reg, ...]]:
        """Thread t's ``n`` random words of ``x<j>``: (their address, the registers)."""
        kb = self.kb
        ptr = kb.buffer(self.name("x"), "u32", self.threads * n, "random", self.seed)
        self.base = ptr
        addr = kb.thread_address(ptr, 4 * n)
        regs = kb.regs(".b32", n)
        for i, r in enumerate(regs):
            kb.emit("ld.global.u32", r, Addr(addr, 4 * i))
        return addr, regs

    def out(self, n: int, stem: str = "y", extra: int = 0) -> tuple[Reg, Reg]:
        """An output buffer of ``n`` words per thread (+ ``extra`` shared words after them):
        (its base, thread t's address)."""
        kb = self.kb
        ptr = kb.buffer(self.name(stem), "u32", self.threads * n + extra, "zeros", 0, output=True)
        return ptr, kb.thread_address(ptr, 4 * n)

    def store(self, regs: tuple[Reg, ...], stem: str = "y") -> None:
        """Thread t's ``regs`` into ``y<j>`` (none: no buffer; ``Address`` of ``store16`` alone writes
        only its ``z<j>``, and a zero-word ``y<j>`` is no buffer a header can name)."""
        if not regs:
            return
        _, addr = self.out(len(regs), stem)
        for i, r in enumerate(regs):
            self.kb.emit("st.global.u32", Addr(addr, 4 * i), r)

    def lane(self) -> Reg:
        r = self.kb.reg(".b32")
        self.kb.emit("and.b32", r, self.kb.tid(), 31)
        return r


# ------------------------------------------------------------------ constructs


@dataclass(frozen=True)
class Division:
    """``div``/``rem`` by a runtime divisor (a tile index over a grid width, as Triton computes
    it): ptxas expands it (I2F.RP, MUFU.RCP, F2I, IMAD.HI, IABS).  The divisor is a kernel
    parameter (non-zero, never -1) or an input word made positive and odd."""

    signed: bool
    divisor: str  # "param" | "input"
    value: int

    approx = False

    def emit(self, kb, io: Io) -> None:
        _, (a, b) = io.load(2)
        t = ".s32" if self.signed else ".u32"
        if self.divisor == "pow2":  # a ceiling division by a tile size (SHF.R.S32.HI, LEA.HI)
            t, u, q, r = kb.regs(".b32", 4)
            kb.emit("add.s32", t, a, 63)  # Triton's signed division by 64, in shifts
            kb.emit("shr.s32", u, t, 31)
            kb.emit("shr.u32", u, u, 26)
            kb.emit("add.s32", u, t, u)
            kb.emit("shr.s32", q, u, 6)
            kb.emit(f"rem{'.s32' if self.signed else '.u32'}", r, a, 32)
            x, w = kb.reg(".b32"), kb.reg(".b64")  # and a sign-extended scaled offset of it
            kb.emit("shl.b32", x, q, 3)
            kb.emit("cvt.s64.s32", w, x)
            kb.emit("shl.b64", w, w, 1)
            kb.emit("add.s64", w, w, io.base)
            kb.emit("sub.s64", w, w, io.base)
            lo, hi = kb.regs(".b32", 2)
            kb.emit("mov.b64", Vec((lo, hi)), w)
            io.store((q, r, lo, hi))
            return
        if self.divisor == "param":
            d = kb.scalar(io.name("dv"), self.value & 0xFFFFFFFF)
        else:
            d = kb.reg(".b32")
            kb.emit("and.b32", d, b, _hex(0xFFFF))
            kb.emit("or.b32", d, d, 1)
        q, r = kb.regs(".b32", 2)
        kb.emit(f"div{t}", q, a, d)
        kb.emit(f"rem{t}", r, a, d)
        io.store((q, r))


ADDRESS_OPS = ("wide", "wide64", "madhi", "carry", "sext", "shf", "bfe", "bfi", "prmt", "lop3", "sx8", "sra", "abs",
               "minmax", "load16", "store16", "uniform")


@dataclass(frozen=True)
class Address:
    """Address and bit arithmetic: ``mul.wide``, ``mad.lo``/``mad.hi``, a 128-bit carry chain,
    sign-extended 64-bit offsets, ``shf``, ``bfe``/``bfi``, ``prmt``, ``lop3``, sign extension,
    16-bit loads at an in-bounds runtime index, bounds-masked 16-bit stores, and the same on
    kernel parameters (the uniform datapath)."""

    ops: tuple[str, ...]
    lut: int
    shift: int
    index: int  # the parameter index of "uniform" (in bounds: < 4)

    approx = False

    def emit(self, kb, io: Io) -> None:
        xa, (a, b, c, d) = io.load(4)
        outs: list[Reg] = []

        def r32() -> Reg:
            r = kb.reg(".b32")
            outs.append(r)
            return r

        def split(w: Reg) -> None:
            lo, hi = r32(), r32()
            kb.emit("mov.b64", Vec((lo, hi)), w)

        for op in self.ops:
            if op == "wide":
                w, v = kb.reg(".b64"), kb.reg(".b64")
                kb.emit("mul.wide.s32", w, a, b)
                kb.emit("mul.wide.u32", v, c, d)
                kb.emit("add.s64", w, w, v)
                split(w)
            elif op == "wide64":
                w, v, m = kb.regs(".b64", 3)
                kb.emit("mov.b64", w, Vec((a, b)))
                kb.emit("mov.b64", v, Vec((c, d)))
                kb.emit("mul.lo.u64", m, w, v)
                split(m)
                hi = kb.reg(".b64")
                kb.emit("mul.hi.u64", hi, w, v)
                split(hi)
                kb.emit("mul.hi.s32", r32(), a, c)
                ps = kb.regs(".pred", 4)
                kb.emit("setp.ge.u64", ps[0], w, v)
                kb.emit("setp.gt.and.s64", ps[1], v, w, ps[0])
                kb.emit("setp.ne.or.u64", ps[2], m, w, ps[1])
                kb.emit("setp.ge.or.s32", ps[3], a, b, ps[2])
                for pr in ps:
                    kb.emit("selp.b32", r32(), c, d, pr)
            elif op == "madhi":
                kb.emit("mad.hi.s32", r32(), a, b, c)
                kb.emit("mad.hi.u32", r32(), b, c, d)
                kb.emit("mul.hi.u32", r32(), a, d)
                kb.emit("mad.lo.s32", r32(), a, b, d)
            elif op == "carry":
                s = kb.regs(".b32", 4)
                kb.emit("add.cc.u32", s[0], a, c)
                kb.emit("addc.cc.u32", s[1], b, d)
                kb.emit("addc.cc.u32", s[2], c, a)
                kb.emit("addc.u32", s[3], d, 0)
                outs.extend(s)
            elif op == "sext":
                w, base = kb.reg(".b64"), kb.reg(".b64")
                kb.emit("mov.b64", base, Vec((c, d)))
                kb.emit("cvt.s64.s32", w, a)
                kb.emit("shl.b64", w, w, self.shift)
                kb.emit("add.s64", w, base, w)
                split(w)
                u = kb.reg(".b64")
                kb.emit("shl.b64", u, base, b)  # a runtime 64-bit shift (amounts >= 64 give 0)
                split(u)
            elif op == "shf":
                kb.emit("shf.l.wrap.b32", r32(), a, b, c)
                kb.emit("shf.r.clamp.b32", r32(), a, b, c)
                kb.emit("shf.r.wrap.b32", r32(), b, a, self.shift)
            elif op == "bfe":
                kb.emit("bfe.u32", r32(), a, b, c)
                kb.emit("bfe.s32", r32(), b, self.shift, 8)
            elif op == "bfi":
                kb.emit("bfi.b32", r32(), a, b, c, d)
            elif op == "prmt":
                kb.emit("prmt.b32", r32(), a, b, c)
                kb.emit("prmt.b32", r32(), a, b, _hex(0x5410))
            elif op == "lop3":
                kb.emit("lop3.b32", r32(), a, b, c, _hex(self.lut))
            elif op == "sx8":
                kb.emit("cvt.s32.s8", r32(), a)
                kb.emit("cvt.s32.s16", r32(), b)
                kb.emit("cvt.u32.u8", r32(), c)
            elif op == "sra":
                kb.emit("shr.s32", r32(), a, self.shift)
                kb.emit("shr.s32", r32(), b, 31)
            elif op == "abs":
                kb.emit("abs.s32", r32(), a)
            elif op == "minmax":
                kb.emit("min.s32", r32(), a, b)
                kb.emit("max.u32", r32(), c, d)
                kb.emit("max.s32", r32(), a, 0)
            elif op == "load16":
                i = kb.reg(".b32")
                kb.emit("and.b32", i, a, 7)  # one of the thread's own 8 half-words
                kb.emit("mad.lo.s32", i, kb.tid(), 8, i)
                z = kb.scalar(io.name("z16_"), 0)
                kb.emit("sub.s32", i, i, z)  # of unknown sign to ptxas (0 subtracted at run time)
                p = kb.reg(".pred")
                kb.emit("setp.lt.s32", p, i, 8 * io.threads)
                for k in range(4):  # signed element indices off one base, as Triton indexes
                    ik, off, at = kb.reg(".b32"), kb.reg(".b64"), kb.reg(".b64")
                    kb.emit("xor.b32", ik, i, k)
                    if k % 2:
                        kb.emit("mul.wide.s32", off, ik, 2)
                    else:
                        kb.emit("cvt.s64.s32", off, ik)
                        kb.emit("shl.b64", off, off, 1)
                    kb.emit("add.s64", at, io.base, off)
                    u = r32()
                    kb.emit("mov.u32", u, 0)
                    kb.emit("ld.global.u16", u, Addr(at), guard=p)
                at = kb.reg(".b64")
                kb.emit("add.s64", at, xa, 0)
                h = kb.reg(".b16")
                kb.emit("ld.global.L2::128B.u16", h, Addr(at))
                kb.emit("cvt.u32.u16", r32(), h)
                kb.emit("ld.global.s16", r32(), Addr(xa, 6))
            elif op == "store16":
                n = kb.scalar(io.name("bound"), io.threads // 2)
                _, at = io.out(1, "z")
                p = kb.reg(".pred")
                kb.emit("setp.lt.u32", p, kb.tid(), n)
                h = kb.reg(".b16")
                kb.emit("cvt.u16.u32", h, a)
                kb.emit("st.global.u16", Addr(at), h, guard=p)
                kb.emit("st.global.u8", Addr(at, 3), h)
            elif op == "uniform":
                ptr = kb.buffer(io.name("u"), "u32", 4, "random", io.seed + 1)
                k = kb.scalar(io.name("k"), self.index)
                w, at = kb.reg(".b64"), kb.reg(".b64")
                kb.emit("mul.wide.s32", w, k, 4)
                kb.emit("add.s64", at, ptr, w)
                kb.emit("ld.global.u32", r32(), Addr(at))
                p = kb.reg(".pred")
                kb.emit("setp.gt.s32", p, k, 1)
                s = r32()
                kb.emit("selp.b32", s, k, 3, p)
                kb.emit("bfe.s32", r32(), k, 1, 2)
                kb.emit("shr.s32", r32(), k, 1)
            else:
                raise ValueError(op)
        io.store(tuple(outs))


CMPS = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
CMP_TYPES = (".s32", ".u32", ".s64", ".u64")


@dataclass(frozen=True)
class Compare:
    """A chain of ``setp.<cmp>.<and|or>.<type>`` (ISETP with .AND/.OR/.EX), ``selp`` on the
    result; operands are input words or kernel parameters (UISETP, USEL)."""

    cmps: tuple[tuple[str, str, str], ...]  # (cmp, type, combine)
    source: str  # "input" | "param"
    values: tuple[int, int]

    approx = False

    def emit(self, kb, io: Io) -> None:
        _, (a, b) = io.load(2)
        if self.source == "param":
            a = kb.scalar(io.name("ca"), self.values[0])
            b = kb.scalar(io.name("cb"), self.values[1])
        wa, wb = kb.reg(".b64"), kb.reg(".b64")
        kb.emit("mov.b64", wa, Vec((a, b)))
        kb.emit("mov.b64", wb, Vec((b, a)))
        q = kb.reg(".pred")
        kb.emit("setp.ne.u32", q, a, b)
        outs = []
        for cmp, t, comb in self.cmps:
            if cmp in ("lo", "ls", "hi", "hs"):
                t = t.replace("s", "u")
            x, y = (wa, wb) if t.endswith("64") else (a, b)
            p = kb.reg(".pred")
            kb.emit(f"setp.{cmp}.{comb}{t}", p, x, y, q)
            r = kb.reg(".b32")
            kb.emit("selp.b32", r, a, b, p)
            outs.append(r)
            q = p
        io.store(tuple(outs))


ACTIVATIONS = ("relu_max", "relu_sel", "nan_check", "geu", "eq", "rcp", "div", "ex2", "rcp_approx")
CONVERSIONS = ("f16x2", "bf16x2", "bf16x2_relu", "e4m3x2", "e5m2x2", "f16", "s32", "u32", "sat_u8", "none")


@dataclass(frozen=True)
class Epilogue:
    """Scale, bias, activation and conversion as a GEMM epilogue does it: ``mul``/``fma``
    (``.ftz`` or not), ``max``/``setp``+``selp``, ``rcp.rn``/``div.rn``, packing to
    f16x2/bf16x2/e4m3x2/e5m2x2 with rounding and saturation, float-to-int, packed 16x2 math, and
    a bounds-masked store.  ``ex2``/``rcp_approx`` make it ``approx``."""

    raw: bool  # the first value is the input's raw bits (NaN, inf, subnormals) or a small integer
    ftz: bool
    acts: tuple[str, ...]
    conv: str
    packed: bool

    @property
    def approx(self) -> bool:
        return any(a in ("ex2", "rcp_approx") for a in self.acts)

    def emit(self, kb, io: Io) -> None:
        _, (a, b, c, d) = io.load(4)
        ftz = ".ftz" if self.ftz else ""
        x, y, bias = kb.regs(".f32", 3)
        if self.raw:
            kb.emit("mov.b32", x, a)
        else:
            t = kb.reg(".b32")
            kb.emit("shr.s32", t, a, 16)
            kb.emit("cvt.rn.f32.s32", x, t)
        kb.emit("cvt.rn.f32.u32", y, b)
        kb.emit("cvt.rn.f32.s32", bias, c)
        kb.emit(f"mul{ftz}.f32", x, x, Imm.of(0.125))
        kb.emit(f"fma.rn{ftz}.f32", x, x, Imm.of(-3.0), bias)
        kb.emit(f"mul.rn{ftz}.f32", y, y, Imm.of(2.0 ** -20))
        outs: list[Reg] = []
        for act in self.acts:
            if act == "relu_max":
                kb.emit(f"max{ftz}.f32", x, x, Imm.of(0.0))
            elif act == "relu_sel":
                p = kb.reg(".pred")
                kb.emit(f"setp.gt{ftz}.f32", p, x, Imm.of(0.0))
                kb.emit("selp.f32", x, x, y, p)
            elif act == "nan_check":
                p = kb.reg(".pred")
                kb.emit("setp.neu.f32", p, x, x)
                kb.emit("selp.f32", x, y, x, p)
            elif act in ("geu", "eq"):
                p = kb.reg(".pred")
                kb.emit(f"setp.{act}.f32", p, x, y)
                kb.emit("selp.f32", y, x, bias, p)
            elif act == "rcp":
                kb.emit(f"rcp.rn{ftz}.f32", y, y)
            elif act == "div":
                kb.emit("div.rn.f32", x, x, y)
            elif act == "ex2":
                kb.emit("mul.f32", y, y, Imm.of(1.4426950216293335))
                kb.emit("ex2.approx.ftz.f32", y, y)
            elif act == "rcp_approx":
                kb.emit("rcp.approx.ftz.f32", y, y)
            else:
                raise ValueError(act)
            kb.emit(f"min{ftz}.f32", bias, bias, x)
        for v in (x, y, bias):
            r = kb.reg(".b32")
            kb.emit("mov.b32", r, v)
            outs.append(r)
        conv = self.conv
        if conv in ("f16x2", "bf16x2", "bf16x2_relu"):
            h = kb.reg(".b32")
            t = "f16x2" if conv == "f16x2" else "bf16x2"
            relu = ".relu" if conv == "bf16x2_relu" else ""
            kb.emit(f"cvt.rn{relu}.{t}.f32", h, x, y)
            outs.append(h)
        elif conv in ("e4m3x2", "e5m2x2"):
            h, w = kb.reg(".b16"), kb.reg(".b32")
            kb.emit(f"cvt.rn.satfinite.{conv}.f32", h, x, y)
            kb.emit("cvt.u32.u16", w, h)
            outs.append(w)
        elif conv == "f16":
            h = kb.reg(".b16")
            kb.emit("cvt.rn.f16.f32", h, x)
            _, at = io.out(1, "z")
            kb.emit("st.global.b16", Addr(at), h)
        elif conv in ("s32", "u32"):
            r = kb.reg(".b32")
            kb.emit(f"cvt.rzi.{conv}.f32", r, x)
            outs.append(r)
        elif conv == "sat_u8":
            r = kb.reg(".b32")
            kb.emit("cvt.rni.sat.u8.f32", r, y)
            outs.append(r)
        if self.packed:
            h, g = kb.regs(".b32", 2)
            kb.emit("cvt.rn.f16x2.f32", h, bias, x)
            kb.emit("fma.rn.f16x2", g, h, d, h)
            kb.emit("mul.rn.f16x2", h, g, h)
            kb.emit("max.f16x2", g, g, h)
            kb.emit("fma.rn.bf16x2", h, d, g, h)
            n = kb.scalar(io.name("bound"), io.threads - 32)
            p = kb.reg(".pred")
            kb.emit("setp.lt.u32", p, kb.tid(), n)
            _, at = io.out(2, "w")
            kb.emit("st.global.v2.u32", Addr(at), Vec((g, h)), guard=p)
        io.store(tuple(outs))


@dataclass(frozen=True)
class Softmax:
    """One online-softmax step as attention kernels run it: a row max and a row sum through
    ``shfl.sync.bfly`` over ``width`` lanes, ``ex2`` (``approx``) or an exact stand-in, the sum
    broadcast with ``shfl.sync.idx``, its reciprocal, and the old row state rescaled."""

    width: int
    approx: bool

    def emit(self, kb, io: Io) -> None:
        _, (a, b) = io.load(2)
        v, m, t, e, s, old = kb.regs(".f32", 6)
        i = kb.reg(".b32")
        kb.emit("shr.s32", i, a, 20)
        kb.emit("cvt.rn.f32.s32", v, i)
        kb.emit("mul.f32", v, v, Imm.of(0.0625))
        kb.emit("mov.f32", m, v)
        off = 1
        while off < self.width:
            kb.emit("shfl.sync.bfly.b32", t, m, off, 0x1F, FULL)
            kb.emit("max.f32", m, m, t)
            off *= 2
        kb.emit("sub.f32", e, v, m)
        if self.approx:
            kb.emit("mul.f32", e, e, Imm.of(1.4426950216293335))
            kb.emit("ex2.approx.ftz.f32", e, e)
        else:
            kb.emit("fma.rn.f32", e, e, Imm.of(0.5), Imm.of(1.0))
        kb.emit("mov.f32", s, e)
        off = 1
        while off < self.width:
            kb.emit("shfl.sync.bfly.b32", t, s, off, 0x1F, FULL)
            kb.emit("add.f32", s, s, t)
            off *= 2
        z = kb.reg(".f32")
        kb.emit("shfl.sync.idx.b32", z, s, 0, 0x1F, FULL)
        kb.emit("cvt.rn.f32.u32", old, b)
        kb.emit("rcp.rn.f32", t, s)
        kb.emit("mul.f32", e, e, t)
        kb.emit("fma.rn.f32", old, old, e, z)
        outs = kb.regs(".b32", 5)
        for r, f in zip(outs, (m, s, e, z, old)):
            kb.emit("mov.b32", r, f)
        io.store(outs)


COLLECTIVE_OPS = ("ballot", "all", "all_branch", "any_uniform", "uni", "match", "redux_add", "redux_min", "redux_max",
                  "redux_or", "shfl_idx", "shfl_down", "nanosleep")


@dataclass(frozen=True)
class Collective:
    """Warp collectives (``vote``, ``match``, ``redux``, ``shfl``) on the whole warp, after a
    lane-dependent branch or a lane-dependent loop has reconverged (ptxas cannot prove the warp
    converged: BRA.DIV, WARPSYNC.COLLECTIVE)."""

    ops: tuple[str, ...]
    diverge: str  # "none" | "branch" | "loop"
    split: int  # lanes below it take the branch

    approx = False

    def emit(self, kb, io: Io) -> None:
        _, (a, b) = io.load(2)
        lane = io.lane()
        v = kb.reg(".b32")
        kb.emit("mov.b32", v, a)
        if self.diverge == "branch":
            p, lab = kb.reg(".pred"), kb.new_label()
            kb.emit("setp.lt.u32", p, lane, self.split)
            kb.emit("bra", Sym(lab), guard=p)
            kb.emit("xor.b32", v, v, b)
            kb.emit("mul.lo.u32", v, v, 5)
            kb.place(lab)
        elif self.diverge == "loop":
            n, i, p = kb.reg(".b32"), kb.reg(".b32"), kb.reg(".pred")
            top, end = kb.new_label(), kb.new_label()
            kb.emit("and.b32", n, lane, 3)
            kb.emit("mov.u32", i, 0)
            kb.emit("setp.eq.u32", p, n, 0)
            kb.emit("bra", Sym(end), guard=p)
            kb.place(top)
            kb.emit("mad.lo.u32", v, v, 3, i)
            kb.emit("add.u32", i, i, 1)
            kb.emit("setp.lt.u32", p, i, n)
            kb.emit("bra", Sym(top), guard=p)
            kb.place(end)
        q = kb.reg(".pred")
        kb.emit("setp.gt.u32", q, v, b)
        outs: list[Reg] = []

        def r32() -> Reg:
            r = kb.reg(".b32")
            outs.append(r)
            return r

        for op in self.ops:
            if op == "ballot":
                kb.emit("vote.sync.ballot.b32", r32(), q, FULL)
            elif op in ("all", "uni", "any_uniform"):
                pr = kb.reg(".pred")
                src = q
                if op == "any_uniform":
                    k = kb.scalar(io.name("vk"), 1)
                    src = kb.reg(".pred")
                    kb.emit("setp.ne.u32", src, k, 0)
                mode = {"all": "all", "uni": "uni", "any_uniform": "all"}[op]
                kb.emit(f"vote.sync.{mode}.pred", pr, src, FULL)
                kb.emit("selp.b32", r32(), 1, 0, pr)
            elif op == "all_branch":  # a warp-wide vote that steers a branch (VOTEU.ALL)
                pr, lab = kb.reg(".pred"), kb.new_label()
                r = r32()
                kb.emit("mov.u32", r, 0)
                kb.emit("vote.sync.all.pred", pr, q, FULL)
                kb.emit("bra", Sym(lab), guard=Guard(pr, negated=True))
                kb.emit("add.u32", r, v, 1)
                kb.place(lab)
            elif op == "match":
                kb.emit("and.b32", v, v, 3)
                kb.emit("match.any.sync.b32", r32(), v, FULL)
            elif op.startswith("redux_"):
                kind = op[6:]
                t = {"add": ".u32", "min": ".u32", "max": ".s32", "or": ".b32"}[kind]
                kb.emit(f"redux.sync.{kind}{t}", r32(), v, FULL)
            elif op == "shfl_idx":
                src = kb.reg(".b32")
                kb.emit("xor.b32", src, lane, 3)
                kb.emit("shfl.sync.idx.b32", r32(), v, src, 0x1F, FULL)
            elif op == "shfl_down":
                kb.emit("shfl.sync.down.b32", r32(), v, 1, 0x1F, FULL)
            elif op == "nanosleep":
                kb.emit("nanosleep.u32", 32)
            else:
                raise ValueError(op)
        outs.append(v)
        io.store(tuple(outs))


@dataclass(frozen=True)
class RuntimeLoop:
    """A loop whose trip count comes at run time (a kernel parameter, zero included, or the
    lane), with a data-dependent early exit and ``.pragma "nounroll"`` drawn."""

    trips: int  # the parameter's value (source "param")
    source: str  # "param" | "lane"
    early_exit: bool
    nounroll: bool
    nested: bool = False  # the early exit sits in a divergent if-else whose paths store

    approx = False

    def emit(self, kb, io: Io) -> None:
        _, (a, b) = io.load(2)
        if self.source == "param":
            n = kb.scalar(io.name("trips"), self.trips)
        else:
            n = kb.reg(".b32")
            kb.emit("and.b32", n, io.lane(), 7)
        acc, i = kb.regs(".b32", 2)
        p = kb.reg(".pred")
        _, own = io.out(2, "z")
        top, end = kb.new_label(), kb.new_label()
        kb.emit("mov.b32", acc, a)
        kb.emit("mov.u32", i, 0)
        kb.emit("setp.ge.u32", p, i, n)
        kb.emit("bra", Sym(end), guard=p)
        kb.place(top)
        if self.nounroll:
            kb.directive('.pragma "nounroll";')
        kb.emit("mad.lo.u32", acc, acc, 33, i)
        kb.emit("shf.l.wrap.b32", acc, acc, b, 7)
        if self.early_exit and self.nested:  # the exit inside a divergent if-else that stores (BREAK)
            t, q = kb.reg(".b32"), kb.reg(".pred")
            other, join = kb.new_label(), kb.new_label()
            kb.emit("and.b32", t, acc, 1)
            kb.emit("setp.eq.u32", q, t, 0)
            kb.emit("bra", Sym(other), guard=q)
            kb.emit("mul.lo.u32", acc, acc, 3)
            kb.emit("st.global.u32", Addr(own), acc)
            kb.emit("and.b32", t, acc, 48)
            kb.emit("setp.eq.u32", q, t, 0)
            kb.emit("bra", Sym(end), guard=q)
            kb.emit("bra", Sym(join))
            kb.place(other)
            kb.emit("xor.b32", acc, acc, i)
            kb.emit("st.global.u32", Addr(own, 4), i)
            kb.place(join)
        elif self.early_exit:
            t, q = kb.reg(".b32"), kb.reg(".pred")
            kb.emit("and.b32", t, acc, 15)
            kb.emit("setp.eq.u32", q, t, 0)
            kb.emit("bra", Sym(end), guard=q)
        kb.emit("add.u32", i, i, 1)
        kb.emit("setp.lt.u32", p, i, n)
        kb.emit("bra", Sym(top), guard=p)
        kb.place(end)
        io.store((acc, i))


@dataclass(frozen=True)
class LocalArray:
    """A ``.local`` array indexed at run time (ptxas must keep it in local memory: STL/LDL),
    every element written before any is read; 32-, 64- and 16-bit accesses."""

    words: int  # a power of two

    approx = False

    def emit(self, kb, io: Io) -> None:
        _, (a, b, c) = io.load(3)
        name = io.name("loc")
        kb._body.insert(0, VarDecl(".local", ".b8", name, align=8, dims=(4 * self.words,)))
        base = kb.reg(".b64")
        kb.emit("mov.u64", base, Sym(name))
        for k in range(self.words):
            v = kb.reg(".b32")
            kb.emit("add.u32", v, c, k * 0x9E37)
            kb.emit("st.local.u32", Addr(base, 4 * k), v)

        def at(x: Reg, mask: int) -> Reg:
            i, off, ad = kb.reg(".b32"), kb.reg(".b64"), kb.reg(".b64")
            kb.emit("and.b32", i, x, mask)
            kb.emit("mul.wide.u32", off, i, 4)
            kb.emit("add.s64", ad, base, off)
            return ad

        kb.emit("st.local.u32", Addr(at(a, self.words - 1)), b)
        r, w, h16 = kb.reg(".b32"), kb.reg(".b64"), kb.reg(".b16")
        kb.emit("ld.local.u32", r, Addr(at(b, self.words - 1)))
        kb.emit("st.local.s16", Addr(at(c, self.words - 1)), _low16(kb, a))
        kb.emit("ld.local.u64", w, Addr(at(c, self.words - 2)))
        kb.emit("ld.local.s16", h16, Addr(at(a, self.words - 1), 2))
        lo, hi, s = kb.regs(".b32", 3)
        kb.emit("mov.b64", Vec((lo, hi)), w)
        kb.emit("cvt.s32.s16", s, h16)
        io.store((r, lo, hi, s))


def _param16(kb, name: str, value: int) -> str:
    """A ``.u16`` kernel parameter (header ``PARAM`` line); returns its name (``ld.param.u16``)."""
    kb._params.append(Param(".param", ".u16", name))
    kb._scalars.append((name, value))
    return name


def _low16(kb, x: Reg) -> Reg:
    h = kb.reg(".b16")
    kb.emit("cvt.u16.u32", h, x)
    return h


ATOMIC_OPS = ("add", "exch", "cas", "max", "inc", "red_add", "red_max", "shared_add", "fence")


@dataclass(frozen=True)
class Atomics:
    """Atomics to global and shared memory: each thread owns the words whose old value it
    stores; every thread ``red``-adds (and maxes) into one shared counter (order-free)."""

    ops: tuple[str, ...]

    approx = False

    def emit(self, kb, io: Io) -> None:
        _, (a, b) = io.load(2)
        n = 4
        base, own = io.out(n, "z", extra=2)
        ctr = kb.reg(".b64")
        kb.emit("add.s64", ctr, base, 4 * n * io.threads)
        outs: list[Reg] = []
        for op in self.ops:
            r = kb.reg(".b32")
            if op == "add":
                kb.emit("atom.global.add.u32", r, Addr(own), a)
            elif op == "exch":
                kb.emit("atom.global.exch.b32", r, Addr(own, 4), b)
            elif op == "cas":
                kb.emit("atom.global.cas.b32", r, Addr(own, 4), 0, a)
            elif op == "max":
                kb.emit("atom.global.max.s32", r, Addr(own, 8), a)
            elif op == "inc":
                kb.emit("atom.global.inc.u32", r, Addr(own, 12), 5)
            elif op == "red_add":
                kb.emit("red.global.add.u32", Addr(ctr), a)
                continue
            elif op == "red_max":
                kb.emit("red.global.max.u32", Addr(ctr, 4), b)
                continue
            elif op == "shared_add":
                sym = kb.shared(4 * io.threads, align=4)
                s = kb.reg(".b32")
                kb.emit("mov.u32", s, Sym(sym))
                kb.emit("mad.lo.u32", s, kb.tid(), 4, s)
                kb.emit("st.shared.u32", Addr(s), b)
                kb.emit("atom.shared.add.u32", r, Addr(s), a)
                kb.emit("fence.proxy.async.shared::cta")
            elif op == "fence":
                kb.emit("membar.gl")
                kb.emit("fence.acq_rel.gpu")
                continue
            else:
                raise ValueError(op)
            outs.append(r)
        outs.append(a)
        io.store(tuple(outs))


@dataclass(frozen=True)
class Shared16:
    """16- and 8-bit shared-memory traffic in the thread's own slot, and a 16-byte
    ``cp.async.ca|cg`` (L2::128B) into it waited with ``cp.async.wait_all``."""

    cp_async: bool
    cache: str = "ca"  # "ca" | "cg"

    approx = False

    def emit(self, kb, io: Io) -> None:
        xa, (a, b, c, d) = io.load(4)
        sym = kb.shared(32 * io.threads, align=16)
        s = kb.reg(".b32")
        kb.emit("mov.u32", s, Sym(sym))
        kb.emit("mad.lo.u32", s, kb.tid(), 32, s)
        kb.emit("st.shared.u16", Addr(s, 16), _low16(kb, a))
        kb.emit("st.shared.u8", Addr(s, 18), _low16(kb, b))
        kb.emit("st.shared.u8", Addr(s, 19), _low16(kb, c))
        kb.emit("st.shared.u32", Addr(s, 20), d)
        h = kb.reg(".b16")
        r1, r2, r3 = kb.regs(".b32", 3)
        kb.emit("ld.shared.u16", h, Addr(s, 18))
        kb.emit("cvt.u32.u16", r1, h)
        kb.emit("ld.shared.u32", r2, Addr(s, 16))
        kb.emit("ld.shared.s16", h, Addr(s, 20))
        kb.emit("cvt.s32.s16", r3, h)
        outs = [r1, r2, r3]
        if self.cp_async:
            kb.emit(f"cp.async.{self.cache}.shared.global.L2::128B", Addr(s), Addr(xa), 16)
            kb.emit("cp.async.wait_all")
            v = kb.regs(".b32", 4)
            kb.emit("ld.shared.v4.u32", Vec(v), Addr(s))
            outs += list(v)
        kb.emit("fence.proxy.async.shared::cta")  # the wgmmas' async proxy may read shared memory next
        io.store(tuple(outs))


@dataclass(frozen=True)
class DescriptorRing:
    """Descriptors recomputed the way a pipelined kernel computes them per stage: a ring index
    on kernel parameters (``setp``/``selp``: UISETP, USEL), a ceiling division by a power of two
    (USHF.R.S32.HI, ULEA.HI), a sign-extended 64-bit offset (UIMAD.WIDE), and the start field as
    ``bfe.u32 addr, 4, 15`` (USGXT.U32) -- each stage offset multiplied by a parameter that is
    0 at run time, so the descriptors keep their value and the later wgmmas of the script read
    them (``render``)."""

    stages: int  # the ring's length (its counter's parameter: stages - 1)
    which: str  # "b" | "a" | "both"

    approx = False

    def emit(self, kb, io: Io) -> None:
        self.emit_descriptors(kb, io, {}, {}, {})

    def emit_descriptors(self, kb, io: Io, places: dict, adesc: dict, bdesc: dict) -> None:
        n = kb.scalar(io.name("ring"), self.stages - 1)
        z = kb.scalar(io.name("zero"), 0)
        c, p = kb.reg(".b32"), kb.reg(".pred")
        kb.emit("add.s32", c, n, 1)
        kb.emit("setp.gt.s32", p, c, self.stages - 1)
        kb.emit("selp.b32", c, 0, c, p)
        h, h16, g16 = kb.reg(".b32"), kb.reg(".b16"), kb.reg(".b16")
        kb.emit("ld.param.u16", h16, Addr(Sym(_param16(kb, io.name("half"), 3 * self.stages))))
        kb.emit("ld.param.u16", g16, Addr(Sym(_param16(kb, io.name("halg"), 1))))  # at an offset 2 mod 4
        kb.emit("cvt.u32.u16", h, h16)
        g = kb.reg(".b32")
        kb.emit("cvt.u32.u16", g, g16)
        kb.emit("add.s32", h, h, g)
        kb.emit("sub.s32", h, h, 1)
        q, k = kb.regs(".b32", 2)
        kb.emit("mad.lo.s32", k, h, -5, n)  # may be negative: a signed ceiling division
        kb.emit("add.s32", q, k, 63)
        kb.emit("div.s32", q, q, 64)
        kb.emit("add.s32", q, q, c)
        sd = kb.regs(".b32", 2)  # Triton's signed division by 4, in shifts, on uniform values
        kb.emit("shr.s32", sd[0], k, 31)
        kb.emit("shr.u32", sd[0], sd[0], 30)
        kb.emit("add.s32", sd[0], k, sd[0])
        kb.emit("shr.s32", sd[1], sd[0], 2)
        kb.emit("add.s32", q, q, sd[1])
        wide, big = kb.regs(".b64", 2)
        kb.emit("mul.wide.u32", wide, h, _hex(0x9E3779B9))
        kb.emit("cvt.s64.s32", big, k)
        kb.emit("shl.b64", big, big, 3)
        preds = list(kb.regs(".pred", 5))
        kb.emit("setp.lt.s32", preds[0], k, q)
        kb.emit("setp.ne.and.s64", preds[1], wide, big, preds[0])
        kb.emit("setp.ge.or.u64", preds[2], big, wide, preds[1])
        kb.emit("setp.eq.or.s32", preds[3], h, n, preds[2])
        kb.emit("setp.gt.u32", preds[4], h, c)
        more = list(kb.regs(".pred", 4))
        kb.emit("setp.lt.and.s32", more[0], n, h, preds[4])
        kb.emit("setp.eq.and.s32", more[1], k, c, more[0])
        kb.emit("setp.ge.and.u64", more[2], wide, big, more[1])
        kb.emit("vote.sync.all.pred", more[3], preds[0], FULL)  # on a uniform predicate: VOTEU
        prod = kb.reg(".b64")
        kb.emit("mul.lo.u64", prod, wide, big)
        kb.emit("add.s64", big, big, prod)
        for pr in preds + more:
            b = kb.reg(".b32")
            kb.emit("selp.b32", b, 1, 0, pr)
            kb.emit("add.s32", q, q, b)
        o = kb.reg(".b32")
        kb.emit("mul.lo.s32", o, q, z)  # 0 at run time
        w = kb.reg(".b64")
        kb.emit("mul.wide.s32", w, o, 16)
        kb.emit("add.s64", w, w, big)
        kb.emit("sub.s64", w, w, big)
        base = kb.buffer(io.name("r"), "u32", 4, "random", io.seed + 2)  # a uniform load at a uniform offset
        so, at = kb.reg(".b64"), kb.reg(".b64")
        kb.emit("cvt.s64.s32", so, o)
        kb.emit("shl.b64", so, so, 2)
        kb.emit("add.s64", at, base, so)
        u = kb.reg(".b32")
        kb.emit("ld.global.u32", u, Addr(at, 4))
        for key, (sym, start, desc) in sorted(places.items()):
            if self.which != "both" and key[0] != self.which:
                continue
            a, lo, d = kb.reg(".b32"), kb.reg(".b32"), kb.reg(".b64")
            kb.emit("mov.u32", a, Sym(sym))
            kb.emit("add.s32", a, a, start)
            kb.emit("mad.lo.s32", a, o, 1024, a)
            kb.emit("bfe.u32", lo, a, 4, 14)
            kb.emit("cvt.u64.u32", d, lo)
            kb.emit("add.s64", d, d, w)
            const = _encode_fields(desc)
            if const:
                kb.emit("or.b64", d, d, Imm(const, hex(const)))
            (adesc if key[0] == "a" else bdesc)[key[1:]] = d
        io.store((c, q, u))


ASSERT_FUNC = "__assertfail"


def assert_decl():
    """The ``.extern .func __assertfail`` an ``Assertion`` calls (CUDA's ``assert``)."""
    types = (".b64", ".b64", ".b32", ".b64", ".b64")
    return Function("func", ASSERT_FUNC, tuple(Param(".param", t, f"{ASSERT_FUNC}_param_{i}") for i, t in enumerate(types)),
                    (), None, ".extern")


@dataclass(frozen=True)
class Assertion:
    """A device-side ``assert`` that holds: a check on a kernel parameter that is 0 at run time
    guarding a call of ``__assertfail`` (a system call: LEPC, CALL.ABS.NOINC)
    and ``trap`` (BPT.TRAP).  The call and the trap never run."""

    trap: bool

    approx = False

    def emit(self, kb, io: Io) -> None:
        _, (a,) = io.load(1)
        f = kb.scalar(io.name("fail"), 0)
        p, skip = kb.reg(".pred"), kb.new_label()
        t = kb.reg(".b32")
        kb.emit("and.b32", t, a, f)
        kb.emit("setp.eq.u32", p, f, 0)  # uniform (a trap that some lanes skip would leave the rest divergent)
        kb.emit("bra.uni", Sym(skip), guard=p)
        types = (".b64", ".b64", ".b32", ".b64", ".b64")
        names = tuple(f"fz_ap{io.j}_{i}" for i in range(5))
        body = tuple(VarDecl(".param", ty, n) for ty, n in zip(types, names))
        body += tuple(Instr(f"st.param{ty}", (Addr(Sym(n)), Imm.of(0 if i != 2 else 7)))
                      for i, (ty, n) in enumerate(zip(types, names)))
        body += (Instr("call.uni", (Sym(ASSERT_FUNC), CallArgs(tuple(Sym(n) for n in names)))),)
        kb._body.append(Scope(body))
        if self.trap:
            kb.emit("trap")
        kb.place(skip)
        io.store((t,))


# ------------------------------------------------------------------ strategies


def divisions() -> st.SearchStrategy[Division]:
    return st.builds(Division, st.booleans(), sampled(("input", "param", "pow2")), sampled((3, 7, 10, 96, -5, 1000)))


def address_arithmetic() -> st.SearchStrategy[Address]:
    return st.builds(Address, st.lists(sampled(ADDRESS_OPS), min_size=1, max_size=6, unique=True).map(tuple),
                     sampled((0x96, 0xE8, 0xF8, 0x1E, 0xCA, 0x80)), ints(1, 31), ints(0, 3))


def comparisons() -> st.SearchStrategy[Compare]:
    one = st.tuples(sampled(CMPS), sampled(CMP_TYPES), sampled(("and", "or")))
    return st.builds(Compare, st.lists(one, min_size=1, max_size=4).map(tuple), sampled(("input", "param")),
                     st.tuples(ints(0, 5), sampled((0, 3, 0xFFFFFFFF))))


def epilogues() -> st.SearchStrategy[Epilogue]:
    acts = st.lists(sampled(ACTIVATIONS), min_size=1, max_size=3).map(tuple)
    exact_acts = acts.map(lambda t: tuple(a for a in t if a not in ("ex2", "rcp_approx")) or ("relu_max",))
    # approx one time in four: the reference runs the other three
    chosen = st.integers(0, 3).flatmap(lambda i: acts if i == 0 else exact_acts)
    return st.builds(Epilogue, st.booleans(), st.booleans(), chosen, sampled(CONVERSIONS), st.booleans())


def softmax_steps() -> st.SearchStrategy[Softmax]:
    return st.builds(Softmax, sampled((4, 2, 8, 16, 32)), st.integers(0, 3).map(lambda i: i == 0))


def collectives() -> st.SearchStrategy[Collective]:
    return st.builds(Collective, st.lists(sampled(COLLECTIVE_OPS), min_size=1, max_size=4, unique=True).map(tuple),
                     sampled(("branch", "none", "loop")), ints(1, 31))


def loops() -> st.SearchStrategy[RuntimeLoop]:
    return st.builds(RuntimeLoop, sampled((0, 1, 3, 5)), sampled(("param", "lane")), st.booleans(), st.booleans(),
                     st.booleans())


def local_arrays() -> st.SearchStrategy[LocalArray]:
    return st.builds(LocalArray, sampled((8, 16, 4)))


def atomics() -> st.SearchStrategy[Atomics]:
    return st.builds(Atomics, st.lists(sampled(ATOMIC_OPS), min_size=1, max_size=5, unique=True).map(tuple))


def shared16() -> st.SearchStrategy[Shared16]:
    return st.builds(Shared16, st.booleans(), sampled(("ca", "cg")))


def assertions() -> st.SearchStrategy[Assertion]:
    return st.builds(Assertion, st.booleans())


def descriptor_rings() -> st.SearchStrategy[DescriptorRing]:
    return st.builds(DescriptorRing, sampled((3, 2, 4)), sampled(("b", "a", "both")))


NOUNS = {"division": divisions, "address": address_arithmetic, "compare": comparisons, "epilogue": epilogues,
         "softmax": softmax_steps, "collective": collectives, "loop": loops, "local": local_arrays,
         "atomics": atomics, "shared16": shared16, "ring": descriptor_rings,
         "assert": assertions}


def constructs(kinds: tuple[str, ...] = tuple(NOUNS)) -> st.SearchStrategy:
    """One construct of one of ``kinds`` (uniformly)."""
    return sampled(kinds).flatmap(lambda k: NOUNS[k]())


@dataclass(frozen=True)
class Around:
    """A script op: ``construct`` rendered where it stands (``render``)."""

    construct: object


def arounds(max_n: int = 6) -> st.SearchStrategy[tuple[tuple[int, object], ...]]:
    """1..max_n (slot, construct) pairs: ``place`` puts each at the slot-th place of a script."""
    return st.lists(st.tuples(ints(0, 64), constructs()), min_size=1, max_size=max_n).map(tuple)


def place(script: tuple, items: tuple[tuple[int, object], ...], loop_type: type) -> tuple:
    """``script`` with each construct inserted at a slot: the places between its ops, those of
    loop bodies included (pre-order), the slot number taken modulo their count; never before the
    first op (a program starts with a stage)."""
    for slot, c in items:
        n = _slots(script, loop_type)  # the first place, before the script's first op, stays free
        script, _ = _insert(script, 1 + slot % (n - 1) if n > 1 else 1, Around(c), loop_type)
    return script


def _slots(script: tuple, loop_type: type) -> int:
    return len(script) + 1 + sum(_slots(op.body, loop_type) for op in script if isinstance(op, loop_type))


def _insert(script: tuple, k: int, op, loop_type: type) -> tuple[tuple, int]:
    out = list(script)
    for i in range(len(script) + 1):
        if k == 0:
            out.insert(i, op)
            return tuple(out), -1
        k -= 1
        if i < len(script) and isinstance(script[i], loop_type):
            body, k = _insert(script[i].body, k, op, loop_type)
            if k < 0:
                out[i] = type(script[i])(script[i].trips, body)
                return tuple(out), -1
    return tuple(out), k


__all__ = ["Around", "Io", "Division", "Address", "Compare", "Epilogue", "Softmax", "Collective", "RuntimeLoop",
           "LocalArray", "Atomics", "Shared16", "DescriptorRing", "Assertion", "assert_decl", "arounds", "constructs", "place", "NOUNS", "APPROX_NOTE",
           "divisions", "address_arithmetic", "comparisons", "epilogues", "softmax_steps", "collectives", "loops",
           "local_arrays", "atomics", "shared16", "descriptor_rings", "assertions"]
