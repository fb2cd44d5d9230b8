"""The scalar instruction forms of sm_90a that the reference reads, by PTX ISA chapter: one table,
read by the coverage document (``docs/reference-coverage.md``, checked against ``render()`` by a
test), by the test that runs every form through the reference, and by the H100 op-by-op script
(``tests/support/hw_scalar.py``), which builds one small kernel per form.

A form is PTX text with placeholders: ``{a0}``, ``{a1}``... are inputs (registers loaded from
fresh random data of the input's kind, edge values mixed in), ``{d0}``, ``{d1}``... outputs
(stored per thread and compared bit for bit).  ``REFUSED`` lists forms of the ISA the reference
refuses, each with the one-line reason it gives.
"""
from __future__ import annotations

from dataclasses import dataclass

from .interp import VOLATILE_SPECIAL

# input kinds -> register class; hw_scalar draws each kind's values (and edge values)
KIND_CLASS = {
    "u16": "b16", "u32": "b32", "u64": "b64", "sh": "b32", "pos": "b32", "small": "b32", "small16": "b16", "small64": "b64", "soff": "b32", "rare": "b32", "lane": "b32",
    "shflc": "b32", "pred": "pred", "f32": "b32", "f64": "b64", "f16": "b16", "bf16": "b16", "f16x2": "b32",
    "bf16x2": "b32", "e4m3x2": "b16", "e5m2x2": "b16", "div32": "b32", "div64": "b64", "div16": "b16",
}


@dataclass(frozen=True)
class Form:
    chapter: str
    text: str  # PTX with {aK} inputs and {dK} outputs
    ins: tuple[str, ...]  # input kinds (KIND_CLASS)
    outs: tuple[str, ...]  # output register classes: b16, b32, b64, pred
    name: str = ""  # the form's name (default: the first instruction's opcode)

    @property
    def label(self) -> str:
        return self.name or self.text.split()[0]


@dataclass(frozen=True)
class Refused:
    chapter: str
    form: str
    text: str  # PTX the reference refuses (registers: %r<n> .b32, %rd<n> .b64, %p<n> .pred)
    reason: str


INT = "9.7.1 Integer Arithmetic"
EXT = "9.7.2 Extended-Precision Integer Arithmetic"
FLT = "9.7.3 Floating-Point"
HALF = "9.7.4 Half Precision Floating-Point"
CMP = "9.7.6 Comparison and Selection"
LOGIC = "9.7.8 Logic and Shift"
MOVE = "9.7.9 Data Movement and Conversion"
CONV = "9.7.9.21 cvt"
LOCAL = "9.7.9 Data Movement: .local"
ATOM = "9.7.13 Atomics: atom / red"
WARP = "9.7.13 Warp-level: shfl / vote / match / redux"
VIDEO = "9.7.16 Video (SIMD and scalar)"
SREG = "10 Special Registers"
MISC = "9.7.9 / 9.7.19 Hints and address classes: createpolicy, discard, isspacep, nanosleep, pmevent"

_W = {"u16": 16, "s16": 16, "u32": 32, "s32": 32, "u64": 64, "s64": 64, "b16": 16, "b32": 32, "b64": 64}


def _k(t: str) -> str:
    return {16: "u16", 32: "u32", 64: "u64"}[_W[t]]


def _c(t: str) -> str:
    return f"b{_W[t]}"


def _forms() -> list[Form]:
    out: list[Form] = []

    def add(chapter, text, ins, outs, name=""):
        out.append(Form(chapter, text, tuple(ins), tuple(outs), name))

    ints = ("u16", "s16", "u32", "s32", "u64", "s64")
    for t in ints:
        k, c = _k(t), _c(t)
        for op in ("add", "sub", "min", "max"):
            add(INT, f"{op}.{t} {{d0}}, {{a0}}, {{a1}};", (k, k), (c,))
        for part in ("lo", "hi"):
            add(INT, f"mul.{part}.{t} {{d0}}, {{a0}}, {{a1}};", (k, k), (c,))
            add(INT, f"mad.{part}.{t} {{d0}}, {{a0}}, {{a1}}, {{a2}};", (k, k, k), (c,))
        dk = {16: "div16", 32: "div32", 64: "div64"}[_W[t]]
        add(INT, f"div.{t} {{d0}}, {{a0}}, {{a1}};", (dk, dk), (c,))
        add(INT, f"rem.{t} {{d0}}, {{a0}}, {{a1}};", (dk, dk), (c,))
        add(INT, f"sad.{t} {{d0}}, {{a0}}, {{a1}}, {{a2}};", (k, k, k), (c,))
        if t[0] == "s":
            add(INT, f"abs.{t} {{d0}}, {{a0}};", (k,), (c,))
            add(INT, f"neg.{t} {{d0}}, {{a0}};", (k,), (c,))
        if _W[t] < 64:
            wc = f"b{2 * _W[t]}"
            add(INT, f"mul.wide.{t} {{d0}}, {{a0}}, {{a1}};", (k, k), (wc,))
            add(INT, f"mad.wide.{t} {{d0}}, {{a0}}, {{a1}}, {{a2}};", (k, k, _k(wc)), (wc,))
    add(INT, "add.sat.s32 {d0}, {a0}, {a1};", ("u32", "u32"), ("b32",))
    add(INT, "sub.sat.s32 {d0}, {a0}, {a1};", ("u32", "u32"), ("b32",))
    add(INT, "mad.hi.sat.s32 {d0}, {a0}, {a1}, {a2};", ("u32",) * 3, ("b32",))
    for t in ("u16x2", "s16x2"):
        for op in ("add", "min", "max"):
            add(INT, f"{op}.{t} {{d0}}, {{a0}}, {{a1}};", ("u32", "u32"), ("b32",))
    for op in ("min", "max"):
        add(INT, f"{op}.relu.s16x2 {{d0}}, {{a0}}, {{a1}};", ("u32", "u32"), ("b32",))
        add(INT, f"{op}.relu.s32 {{d0}}, {{a0}}, {{a1}};", ("u32", "u32"), ("b32",))
    for t in ("u32", "s32"):
        for part in ("lo", "hi"):
            add(INT, f"mul24.{part}.{t} {{d0}}, {{a0}}, {{a1}};", ("u32", "u32"), ("b32",))
            add(INT, f"mad24.{part}.{t} {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32",) * 3, ("b32",))
    add(INT, "mad24.hi.sat.s32 {d0}, {a0}, {a1}, {a2};", ("u32",) * 3, ("b32",))
    for t in ("b32", "b64"):
        k = _k(t)
        add(INT, f"popc.{t} {{d0}}, {{a0}};", (k,), ("b32",))
        add(INT, f"clz.{t} {{d0}}, {{a0}};", (k,), ("b32",))
        add(INT, f"brev.{t} {{d0}}, {{a0}};", (k,), (t,))
        add(INT, f"bfi.{t} {{d0}}, {{a0}}, {{a1}}, {{a2}}, {{a3}};", (k, k, "pos", "pos"), (t,))
    for t in ("u32", "s32", "u64", "s64"):
        k, c = _k(t), _c(t)
        add(INT, f"bfind.{t} {{d0}}, {{a0}};", (k,), ("b32",))
        add(INT, f"bfind.shiftamt.{t} {{d0}}, {{a0}};", (k,), ("b32",))
        add(INT, f"bfe.{t} {{d0}}, {{a0}}, {{a1}}, {{a2}};", (k, "pos", "pos"), (c,))
    add(INT, "fns.b32 {d0}, {a0}, {a1}, {a2};", ("u32", "lane", "soff"), ("b32",))
    for mode in ("wrap", "clamp"):
        add(INT, f"bmsk.{mode}.b32 {{d0}}, {{a0}}, {{a1}};", ("sh", "sh"), ("b32",))
        for t in ("u32", "s32"):
            add(INT, f"szext.{mode}.{t} {{d0}}, {{a0}}, {{a1}};", ("u32", "sh"), ("b32",))
    for at in ("u32", "s32"):
        for bt in ("u32", "s32"):
            add(INT, f"dp4a.{at}.{bt} {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32",) * 3, ("b32",))
            for part in ("lo", "hi"):
                add(INT, f"dp2a.{part}.{at}.{bt} {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32",) * 3, ("b32",))

    # extended precision: chains through CC.CF, carry out made visible by addc of zeros
    for t in ("u32", "s32", "u64", "s64"):
        k, c = _k(t), _c(t)
        add(EXT, f"add.cc.{t} {{d0}}, {{a0}}, {{a1}}; addc.cc.{t} {{d1}}, {{a2}}, {{a3}}; addc.{t} {{d2}}, 0, 0;",
            (k,) * 4, (c,) * 3, f"add.cc/addc.cc/addc.{t}")
        add(EXT, f"sub.cc.{t} {{d0}}, {{a0}}, {{a1}}; subc.cc.{t} {{d1}}, {{a2}}, {{a3}}; subc.{t} {{d2}}, 0, 0;",
            (k,) * 4, (c,) * 3, f"sub.cc/subc.cc/subc.{t}")
        for part in ("lo", "hi"):
            add(EXT, f"mad.{part}.cc.{t} {{d0}}, {{a0}}, {{a1}}, {{a2}}; madc.{part}.cc.{t} {{d1}}, {{a3}}, {{a4}}, {{a5}};"
                     f" madc.{part}.{t} {{d2}}, {{a0}}, {{a1}}, 0;", (k,) * 6, (c,) * 3,
                f"mad.{part}.cc/madc.{part}.cc/madc.{part}.{t}")

    # comparison and selection
    for t in ("u16", "s16", "u32", "s32", "u64", "s64", "b32"):
        k = _k(t)
        cmps = ("eq", "ne") if t[0] == "b" else ("eq", "ne", "lt", "le", "gt", "ge") if t[0] == "s" else \
            ("eq", "ne", "lo", "ls", "hi", "hs")
        for cmp in cmps:
            add(CMP, f"setp.{cmp}.{t} {{d0}}, {{a0}}, {{a1}};", (k, k), ("pred",))
        add(CMP, f"set.{cmps[2 % len(cmps)]}.u32.{t} {{d0}}, {{a0}}, {{a1}};", (k, k), ("b32",))
        add(CMP, f"set.{cmps[-1]}.and.s32.{t} {{d0}}, {{a0}}, {{a1}}, {{a2}};", (k, k, "pred"), ("b32",))
    for cmp in ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"):
        add(CMP, f"setp.{cmp}.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("pred",))
        add(CMP, f"set.{cmp}.f32.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",))
    add(CMP, "set.lt.ftz.u32.f32 {d0}, {a0}, {a1};", ("f32", "f32"), ("b32",))
    add(CMP, "setp.lt.f64 {d0}, {a0}, {a1};", ("f64", "f64"), ("pred",))
    add(CMP, "set.gtu.or.u32.f64 {d0}, {a0}, {a1}, !{a2};", ("f64", "f64", "pred"), ("b32",))
    add(CMP, "setp.lt.xor.s32 {d0}|{d1}, {a0}, {a1}, {a2};", ("u32", "u32", "pred"), ("pred", "pred"))
    for t in ("b16", "b32", "b64"):
        add(CMP, f"selp.{t} {{d0}}, {{a0}}, {{a1}}, {{a2}};", (_k(t), _k(t), "pred"), (t,))
    for dt in ("b32", "u32", "s32", "f32", "b64", "s64"):
        c = "b64" if dt.endswith("64") else "b32"
        add(CMP, f"slct.{dt}.s32 {{d0}}, {{a0}}, {{a1}}, {{a2}};", (_k(c), _k(c), "u32"), (c,))
        add(CMP, f"slct.{dt}.f32 {{d0}}, {{a0}}, {{a1}}, {{a2}};", (_k(c), _k(c), "f32"), (c,))
    add(CMP, "slct.ftz.b32.f32 {d0}, {a0}, {a1}, {a2};", ("u32", "u32", "f32"), ("b32",))

    # floating point: IEEE operations with every rounding, ftz and saturation
    rnd = ("rn", "rz", "rm", "rp")
    for op in ("add", "sub", "mul"):
        for r in rnd:
            add(FLT, f"{op}.{r}.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",))
            add(FLT, f"{op}.{r}.f64 {{d0}}, {{a0}}, {{a1}};", ("f64", "f64"), ("b64",))
        add(FLT, f"{op}.rn.ftz.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",))
        add(FLT, f"{op}.rz.ftz.sat.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",))
        add(FLT, f"{op}.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",), f"{op}.f32 (no rounding modifier)")
    for r in rnd:
        add(FLT, f"fma.{r}.f32 {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("f32",) * 3, ("b32",))
        add(FLT, f"div.{r}.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",))
        add(FLT, f"div.{r}.f64 {{d0}}, {{a0}}, {{a1}};", ("f64", "f64"), ("b64",))
        add(FLT, f"sqrt.{r}.f32 {{d0}}, {{a0}};", ("f32",), ("b32",))
        add(FLT, f"rcp.{r}.f32 {{d0}}, {{a0}};", ("f32",), ("b32",))
    add(FLT, "fma.rn.ftz.sat.f32 {d0}, {a0}, {a1}, {a2};", ("f32",) * 3, ("b32",))
    for r in rnd:
        add(FLT, f"fma.{r}.f64 {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("f64",) * 3, ("b64",))
    add(FLT, "mad.rn.f64 {d0}, {a0}, {a1}, {a2};", ("f64",) * 3, ("b64",))
    add(FLT, "mad.rn.f32 {d0}, {a0}, {a1}, {a2};", ("f32",) * 3, ("b32",))
    add(FLT, "div.rn.ftz.f32 {d0}, {a0}, {a1};", ("f32", "f32"), ("b32",))
    add(FLT, "div.full.f32 {d0}, {a0}, {a1};", ("f32", "f32"), ("b32",), "div.full.f32 (within 2 ulp: a set)")
    add(FLT, "sqrt.rn.f64 {d0}, {a0};", ("f64",), ("b64",))
    add(FLT, "rcp.rn.f64 {d0}, {a0};", ("f64",), ("b64",))
    for t, c in (("f32", "b32"), ("f64", "b64")):
        for op in ("min", "max"):
            add(FLT, f"{op}.{t} {{d0}}, {{a0}}, {{a1}};", (t, t), (c,))
        add(FLT, f"abs.{t} {{d0}}, {{a0}};", (t,), (c,))
        add(FLT, f"neg.{t} {{d0}}, {{a0}};", (t,), (c,))
    for op in ("min", "max"):
        add(FLT, f"{op}.ftz.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",))
        add(FLT, f"{op}.NaN.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",))
        add(FLT, f"{op}.xorsign.abs.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",))
    add(FLT, "abs.ftz.f32 {d0}, {a0};", ("f32",), ("b32",))
    add(FLT, "neg.ftz.f32 {d0}, {a0};", ("f32",), ("b32",))
    # half precision, scalar and packed
    for t, c in (("f16", "b16"), ("bf16", "b16"), ("f16x2", "b32"), ("bf16x2", "b32")):
        for op in ("add", "sub", "mul"):
            add(HALF, f"{op}.rn.{t} {{d0}}, {{a0}}, {{a1}};", (t, t), (c,))
        add(HALF, f"fma.rn.{t} {{d0}}, {{a0}}, {{a1}}, {{a2}};", (t, t, t), (c,))
        add(HALF, f"fma.rn.relu.{t} {{d0}}, {{a0}}, {{a1}}, {{a2}};", (t, t, t), (c,))
        for op in ("min", "max"):
            add(HALF, f"{op}.{t} {{d0}}, {{a0}}, {{a1}};", (t, t), (c,))
            add(HALF, f"{op}.NaN.{t} {{d0}}, {{a0}}, {{a1}};", (t, t), (c,))
            add(HALF, f"{op}.xorsign.abs.{t} {{d0}}, {{a0}}, {{a1}};", (t, t), (c,))
        add(HALF, f"neg.{t} {{d0}}, {{a0}};", (t,), (c,))
        add(HALF, f"abs.{t} {{d0}}, {{a0}};", (t,), (c,))
    for t, c in (("f16", "b16"), ("f16x2", "b32")):
        add(HALF, f"add.rn.ftz.sat.{t} {{d0}}, {{a0}}, {{a1}};", (t, t), (c,))
        add(HALF, f"mul.ftz.{t} {{d0}}, {{a0}}, {{a1}};", (t, t), (c,))
        add(HALF, f"fma.rn.ftz.sat.{t} {{d0}}, {{a0}}, {{a1}}, {{a2}};", (t, t, t), (c,))
        add(HALF, f"min.ftz.{t} {{d0}}, {{a0}}, {{a1}};", (t, t), (c,))
        add(HALF, f"neg.ftz.{t} {{d0}}, {{a0}};", (t,), (c,))
    for cmp in ("eq", "lt", "geu", "nan"):
        add(HALF, f"setp.{cmp}.f16 {{d0}}, {{a0}}, {{a1}};", ("f16", "f16"), ("pred",))
        add(HALF, f"setp.{cmp}.bf16 {{d0}}, {{a0}}, {{a1}};", ("bf16", "bf16"), ("pred",))
        add(HALF, f"setp.{cmp}.f16x2 {{d0}}|{{d1}}, {{a0}}, {{a1}};", ("f16x2", "f16x2"), ("pred", "pred"))
        add(HALF, f"setp.{cmp}.bf16x2 {{d0}}|{{d1}}, {{a0}}, {{a1}};", ("bf16x2", "bf16x2"), ("pred", "pred"))
        add(HALF, f"set.{cmp}.f16.f16 {{d0}}, {{a0}}, {{a1}};", ("f16", "f16"), ("b16",))
        add(HALF, f"set.{cmp}.u32.f16x2 {{d0}}, {{a0}}, {{a1}};", ("f16x2", "f16x2"), ("b32",))
        add(HALF, f"set.{cmp}.f16x2.f16x2 {{d0}}, {{a0}}, {{a1}};", ("f16x2", "f16x2"), ("b32",))
        add(HALF, f"set.{cmp}.bf16x2.bf16x2 {{d0}}, {{a0}}, {{a1}};", ("bf16x2", "bf16x2"), ("b32",))

    # floating point (the scalar bit-level ones)
    for t in ("f32", "f64"):
        for op in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"):
            add(FLT, f"testp.{op}.{t} {{d0}}, {{a0}};", (t,), ("pred",))
        add(FLT, f"copysign.{t} {{d0}}, {{a0}}, {{a1}};", (t, t), (_c("b64" if t == "f64" else "b32"),))

    # logic and shift
    for t in ("b16", "b32", "b64"):
        k = _k(t)
        for op in ("and", "or", "xor"):
            add(LOGIC, f"{op}.{t} {{d0}}, {{a0}}, {{a1}};", (k, k), (t,))
        add(LOGIC, f"not.{t} {{d0}}, {{a0}};", (k,), (t,))
        add(LOGIC, f"cnot.{t} {{d0}}, {{a0}};", (k,), (t,))
        add(LOGIC, f"shl.{t} {{d0}}, {{a0}}, {{a1}};", (k, "sh"), (t,))
        add(LOGIC, f"shr.{t} {{d0}}, {{a0}}, {{a1}};", (k, "sh"), (t,))
    for t in ("u16", "s16", "u32", "s32", "u64", "s64"):
        add(LOGIC, f"shr.{t} {{d0}}, {{a0}}, {{a1}};", (_k(t), "sh"), (_c(t),))
    for op in ("and", "or", "xor"):
        add(LOGIC, f"{op}.pred {{d0}}, {{a0}}, {{a1}};", ("pred", "pred"), ("pred",))
    add(LOGIC, "not.pred {d0}, {a0};", ("pred",), ("pred",))
    for lut in (0x00, 0x01, 0x1E, 0x80, 0x96, 0xCA, 0xE8, 0xF0, 0xFE, 0xFF, 0x6A, 0x2D):
        add(LOGIC, f"lop3.b32 {{d0}}, {{a0}}, {{a1}}, {{a2}}, {lut:#04x};", ("u32",) * 3, ("b32",), f"lop3.b32 {lut:#04x}")
    for d in ("l", "r"):
        for mode in ("wrap", "clamp"):
            add(LOGIC, f"shf.{d}.{mode}.b32 {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32", "u32", "sh"), ("b32",))

    # data movement
    add(MOVE, "prmt.b32 {d0}, {a0}, {a1}, {a2};", ("u32",) * 3, ("b32",))
    for mode in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"):
        add(MOVE, f"prmt.b32.{mode} {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32",) * 3, ("b32",))
    add(MOVE, "mov.b64 {d0}, {{{a0}, {a1}}};", ("u32", "u32"), ("b64",), "mov.b64 {lo,hi}")
    add(MOVE, "mov.b32 {{{d0}, {d1}}}, {a0};", ("u32",), ("b16", "b16"), "mov.b32 {h0,h1}")

    # cvt: integer <-> integer
    itypes = ("u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64")
    cls = {"u8": "b16", "s8": "b16", "u16": "b16", "s16": "b16", "u32": "b32", "s32": "b32", "u64": "b64", "s64": "b64"}
    for dt in itypes:
        for st in itypes:
            if dt == st:
                continue
            for sat in ("", ".sat"):
                if sat and not _narrows(dt, st):
                    continue
                add(CONV, f"cvt{sat}.{dt}.{st} {{d0}}, {{a0}};", (_k(cls[st]),), (cls[dt],))
    # float -> integer, integer -> float
    for ft, fc in (("f16", "b16"), ("bf16", "b16"), ("f32", "b32"), ("f64", "b64")):
        for it in ("u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64"):
            if ft == "bf16" and it in ("u8", "s8"):
                continue
            for r in ("rni", "rzi", "rmi", "rpi"):
                add(CONV, f"cvt.{r}.{it}.{ft} {{d0}}, {{a0}};", (ft,), (cls[it],))
            for r in ("rn", "rz", "rm", "rp"):
                if ft == "bf16" and it in ("u16", "s16"):
                    continue
                add(CONV, f"cvt.{r}.{ft}.{it} {{d0}}, {{a0}};", (_k(cls[it]),), (fc,))
    add(CONV, "cvt.rzi.ftz.s32.f32 {d0}, {a0};", ("f32",), ("b32",))
    for ct in ("u16", "s16"):
        add(CONV, f"cvt.pack.sat.{ct}.s32 {{d0}}, {{a0}}, {{a1}};", ("u32", "u32"), ("b32",))
    for ct in ("u8", "s8", "u4", "s4"):
        add(CONV, f"cvt.pack.sat.{ct}.s32.b32 {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32", "u32", "u32"), ("b32",))
    add(CONV, "cvt.rn.sat.f32.s32 {d0}, {a0};", ("u32",), ("b32",))
    # float -> float
    fl = {"f16": "b16", "bf16": "b16", "f32": "b32", "f64": "b64"}
    for dt in fl:
        for st in fl:
            if dt == st:
                for r in ("rni", "rzi", "rmi", "rpi"):
                    add(CONV, f"cvt.{r}.{dt}.{st} {{d0}}, {{a0}};", (st,), (fl[dt],))
                continue
            narrowing = _fbits(dt) < _fbits(st) or (dt, st) in (("bf16", "f16"), ("f16", "bf16"))
            modes = ("rn", "rz", "rm", "rp") if narrowing else ("",)
            for r in modes:
                dot = f".{r}" if r else ""
                add(CONV, f"cvt{dot}.{dt}.{st} {{d0}}, {{a0}};", (st,), (fl[dt],))
            if "bf16" not in (dt, st):  # ptxas: "Illegal modifier '.sat'" with a bf16 side
                add(CONV, f"cvt{'.rn' if narrowing else ''}.sat.{dt}.{st} {{d0}}, {{a0}};", (st,), (fl[dt],))
    add(CONV, "cvt.ftz.f32.f32 {d0}, {a0};", ("f32",), ("b32",))
    add(CONV, "cvt.rn.ftz.f16.f32 {d0}, {a0};", ("f32",), ("b16",))
    add(CONV, "cvt.ftz.f64.f32 {d0}, {a0};", ("f32",), ("b64",))
    add(CONV, "cvt.rn.relu.f16.f32 {d0}, {a0};", ("f32",), ("b16",))
    add(CONV, "cvt.rn.relu.bf16.f32 {d0}, {a0};", ("f32",), ("b16",))
    add(CONV, "cvt.rna.tf32.f32 {d0}, {a0};", ("f32",), ("b32",))
    add(CONV, "cvt.rna.satfinite.tf32.f32 {d0}, {a0};", ("f32",), ("b32",))
    for pk in ("f16x2", "bf16x2"):
        add(CONV, f"cvt.rn.{pk}.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",))
        add(CONV, f"cvt.rn.relu.{pk}.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",))
        add(CONV, f"cvt.rz.satfinite.{pk}.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b32",))
    for f8 in ("e4m3x2", "e5m2x2"):
        add(CONV, f"cvt.rn.satfinite.{f8}.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b16",))
        add(CONV, f"cvt.rn.satfinite.relu.{f8}.f32 {{d0}}, {{a0}}, {{a1}};", ("f32", "f32"), ("b16",))
        add(CONV, f"cvt.rn.satfinite.{f8}.f16x2 {{d0}}, {{a0}};", ("f16x2",), ("b16",))
        add(CONV, f"cvt.rn.f16x2.{f8} {{d0}}, {{a0}};", (f8,), ("b32",))
        add(CONV, f"cvt.rn.relu.f16x2.{f8} {{d0}}, {{a0}};", (f8,), ("b32",))

    # .local: per-thread arrays through ld/st.local and generic addresses from cvta.local
    add(LOCAL, "st.local.b32 [loc+4], {a0}; st.local.b32 [loc+8], {a1}; st.local.b32 [loc+12], {a0};"
               " ld.local.b32 {d0}, [loc+4]; ld.local.b64 {d1}, [loc+8];", ("u32", "u32"), ("b32", "b64"), "ld/st.local.b32/b64")
    add(LOCAL, "st.local.v2.b32 [loc+16], {{{a0}, {a1}}}; ld.local.u8 {d0}, [loc+17]; ld.local.s16 {d1}, [loc+22];",
        ("u32", "u32"), ("b32", "b32"), "ld/st.local.v2/u8/s16")
    add(MOVE, "ldu.global.b32 {d0}, [%rds2]; ld.global.nc.b32 {d1}, [%rds2]; prefetchu.L1 [%rds2];", ("u32",),
        ("b32", "b32"), "ldu / ld.global.nc / prefetchu")
    add(LOCAL, "mov.u64 %loc_a, loc; cvta.local.u64 %loc_g, %loc_a; and.b32 %loc_i, {a1}, 7; mul.wide.u32 %loc_o, %loc_i, 4;"
               " add.s64 %loc_g, %loc_g, %loc_o; st.b32 [%loc_g], {a0}; ld.local.b32 {d0}, [loc+0];"
               " st.local.b32 [loc], {a0}; add.s64 %loc_a, %loc_a, %loc_o; ld.local.b32 {d1}, [%loc_a];",
        ("u32", "u32"), ("b32", "b32"), "cvta.local + generic st, indexed ld.local")

    # atomics: own slot (returned value defined) and four threads per slot (final value only)
    for space in ("global", "shared"):
        for op, types in (("add", ("u32", "s32", "u64", "f32", "f64")), ("min", ("u32", "s32", "u64", "s64")),
                          ("max", ("u32", "s32", "u64", "s64")), ("inc", ("u32",)), ("dec", ("u32",)),
                          ("and", ("b32", "b64")), ("or", ("b32", "b64")), ("xor", ("b32", "b64")),
                          ("exch", ("b32", "b64")), ("cas", ("b32", "b64"))):
            for t in types:
                c = "b64" if t.endswith("64") else "b32"
                k = {"f32": "f32", "f64": "f64"}.get(t, _k(c))
                extra = ", {a2}" if op == "cas" else ""
                nin = (k, k, k) if op == "cas" else (k, k)
                add(ATOM, f"st.{space}.{c} [%own_{space}], {{a0}}; atom.{space}.{op}.{t} {{d0}}, [%own_{space}], {{a1}}{extra};"
                          f" ld.{space}.{c} {{d1}}, [%own_{space}];", nin, (c, c), f"atom.{space}.{op}.{t}")
            if op in ("add", "min", "max", "and", "or", "xor"):
                t = {"add": "u32", "min": "s32", "max": "u32"}.get(op, "b32")
                add(ATOM, f"@%lead st.{space}.b32 [%four_{space}], {{a0}}; bar.sync 0; red.{space}.{op}.{t} [%four_{space}], {{a1}};"
                          f" bar.sync 0; ld.{space}.b32 {{d0}}, [%four_{space}];", ("u32", "u32"), ("b32",),
                    f"red.{space}.{op}.{t} (4 threads per address)")
    for space in ("global", "shared"):
        add(ATOM, f"st.{space}.b16 [%own_{space}], {{a0}}; atom.{space}.cas.b16 {{d0}}, [%own_{space}], {{a1}}, {{a2}};"
                  f" ld.{space}.b16 {{d1}}, [%own_{space}];", ("small16", "small16", "u16"), ("b16", "b16"),
            f"atom.{space}.cas.b16")
    for t in ("f16", "bf16"):
        add(ATOM, f"st.global.b16 [%own_global], {{a0}}; atom.global.add.noftz.{t} {{d0}}, [%own_global], {{a1}};"
                  " ld.global.b16 {d1}, [%own_global];", (t, t), ("b16", "b16"), f"atom.global.add.noftz.{t}")
    for t in ("f16x2", "bf16x2"):
        add(ATOM, f"st.global.b32 [%own_global], {{a0}}; atom.global.add.noftz.{t} {{d0}}, [%own_global], {{a1}};"
                  " ld.global.b32 {d1}, [%own_global];", (t, t), ("b32", "b32"), f"atom.global.add.noftz.{t}")
    add(ATOM, "st.b32 [%own_generic], {a0}; atom.add.u32 {d0}, [%own_generic], {a1}; ld.b32 {d1}, [%own_generic];",
        ("u32", "u32"), ("b32", "b32"), "atom.add.u32 (generic address of shared memory)")
    add(ATOM, "st.global.b32 [%own_global], {a0}; atom.relaxed.gpu.global.add.u32 {d0}, [%own_global], {a1};"
              " ld.global.b32 {d1}, [%own_global];", ("u32", "u32"), ("b32", "b32"), "atom.relaxed.gpu.global.add.u32")

    # warp-level
    for mode in ("up", "down", "bfly", "idx"):
        add(WARP, f"shfl.sync.{mode}.b32 {{d0}}|{{d1}}, {{a0}}, {{a1}}, {{a2}}, 0xffffffff;", ("u32", "lane", "shflc"),
            ("b32", "pred"))
        add(WARP, f"shfl.sync.{mode}.b32 {{d0}}, {{a0}}, 1, 0x1f, 0xffffffff;", ("u32",), ("b32",),
            f"shfl.sync.{mode}.b32 (immediates)")
    add(WARP, "and.b32 %rs4, %rs0, 16; setp.eq.u32 %ps0, %rs4, 0; selp.b32 %rs4, 0x0000ffff, 0xffff0000, %ps0;"
              " shfl.sync.idx.b32 {d0}, {a0}, {a1}, 0x1f, %rs4;", ("u32", "lane"), ("b32",),
        "shfl.sync.idx.b32 (half-warp membermasks)")
    for mode in ("all", "any", "uni"):
        add(WARP, f"vote.sync.{mode}.pred {{d0}}, {{a0}}, 0xffffffff;", ("pred",), ("pred",))
    add(WARP, "vote.sync.ballot.b32 {d0}, {a0}, 0xffffffff;", ("pred",), ("b32",))
    add(WARP, "st.shared.b32 [%own_shared], {a0}; bar.warp.sync 0xffffffff; xor.b32 %rs4, %rs0, 1; mul.wide.u32 %rds5, %rs4, 8;"
              " mov.u64 %rds6, sm; add.s64 %rds6, %rds6, %rds5; ld.shared.b32 {d0}, [%rds6];", ("u32",), ("b32",),
        "bar.warp.sync (neighbour's shared word after it)")
    add(WARP, "and.b32 %rs4, %rs0, 1; setp.eq.u32 %ps0, %rs4, 0; selp.b32 %rs4, 0x55555555, 0xaaaaaaaa, %ps0;"
              " vote.sync.ballot.b32 {d0}, !{a0}, %rs4;", ("pred",), ("b32",), "vote.sync.ballot.b32 (even/odd membermasks)")
    for t, k in (("b32", "small"), ("b64", "small64")):
        add(WARP, f"match.any.sync.{t} {{d0}}, {{a0}}, 0xffffffff;", (k,), ("b32",))
        add(WARP, f"match.all.sync.{t} {{d0}}|{{d1}}, {{a0}}, 0xffffffff;", (k,), ("b32", "pred"))
    add(WARP, "match.all.sync.b32 {d0}|{d1}, {a0}, 0xffffffff;", ("rare",), ("b32", "pred"),
        "match.all.sync.b32 (0/1 values: often all equal)")
    for op, t in (("add", "u32"), ("add", "s32"), ("min", "u32"), ("min", "s32"), ("max", "u32"), ("max", "s32"),
                  ("and", "b32"), ("or", "b32"), ("xor", "b32")):
        add(WARP, f"redux.sync.{op}.{t} {{d0}}, {{a0}}, 0xffffffff;", ("u32",), ("b32",))

    # video: SIMD forms, then scalar
    for op in ("vadd2", "vsub2", "vavrg2", "vabsdiff2", "vmin2", "vmax2", "vadd4", "vsub4", "vavrg4", "vabsdiff4",
               "vmin4", "vmax4"):
        for types in ("u32.u32.u32", "s32.s32.s32", "s32.u32.s32"):
            add(VIDEO, f"{op}.{types} {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32",) * 3, ("b32",))
            add(VIDEO, f"{op}.{types}.sat {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32",) * 3, ("b32",))
        add(VIDEO, f"{op}.s32.s32.s32.add {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32",) * 3, ("b32",))
    for op in ("vset2", "vset4"):
        for cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
            add(VIDEO, f"{op}.s32.u32.{cmp} {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32",) * 3, ("b32",))
        add(VIDEO, f"{op}.u32.u32.lt.add {{d0}}, {{a0}}, {{a1}}, {{a2}};", ("u32",) * 3, ("b32",))
    add(VIDEO, "vadd4.u32.u32.u32 {d0}.b20, {a0}.b3120, {a1}.b7654, {a2};", ("u32",) * 3, ("b32",),
        "vadd4 (selectors, partial mask)")
    add(VIDEO, "vmax2.s32.s32.s32 {d0}.h1, {a0}.h01, {a1}.h20, {a2};", ("u32",) * 3, ("b32",),
        "vmax2 (selectors, partial mask)")
    for op in ("vadd", "vsub", "vabsdiff", "vmin", "vmax"):
        for types in ("u32.u32.u32", "s32.s32.s32", "s32.u32.s32"):
            add(VIDEO, f"{op}.{types} {{d0}}, {{a0}}, {{a1}};", ("u32", "u32"), ("b32",))
            add(VIDEO, f"{op}.{types}.sat {{d0}}, {{a0}}, {{a1}};", ("u32", "u32"), ("b32",))
        add(VIDEO, f"{op}.s32.s32.s32.add {{d0}}, {{a0}}.b1, {{a1}}.h0, {{a2}};", ("u32",) * 3, ("b32",),
            f"{op} (byte/half selectors, .add)")
        add(VIDEO, f"{op}.u32.u32.u32.max {{d0}}, {{a0}}, {{a1}}.b2, {{a2}};", ("u32",) * 3, ("b32",), f"{op} (.max)")
        add(VIDEO, f"{op}.u32.u32.u32.sat {{d0}}.b1, {{a0}}.h1, {{a1}}.b3, {{a2}};", ("u32",) * 3, ("b32",),
            f"{op} (merge into .b1, .sat)")
    for op in ("vshl", "vshr"):
        for mode in ("wrap", "clamp"):
            add(VIDEO, f"{op}.u32.u32.u32.{mode} {{d0}}, {{a0}}, {{a1}};", ("u32", "sh"), ("b32",))
            add(VIDEO, f"{op}.s32.s32.u32.{mode} {{d0}}, {{a0}}, {{a1}};", ("u32", "sh"), ("b32",))
    for cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
        add(VIDEO, f"vset.s32.u32.{cmp} {{d0}}, {{a0}}, {{a1}};", ("u32", "u32"), ("b32",))
    add(VIDEO, "vset.s32.s32.lt.add {d0}, {a0}.b0, {a1}.b1, {a2};", ("u32",) * 3, ("b32",), "vset (selectors, .add)")

    # hints, waits and address classes
    add(MISC, "createpolicy.fractional.L2::evict_last.b64 %rds7, 0.25; ld.global.L2::cache_hint.b32 {d0}, [%rds2], %rds7;"
              " st.global.L2::cache_hint.b32 [%own_global], {a0}, %rds7; ld.global.b32 {d1}, [%own_global];",
        ("u32",), ("b32", "b32"), "createpolicy + ld/st .L2::cache_hint")
    add(MISC, "createpolicy.fractional.L2::evict_first.b64 {d0}, 1.0;", (), ("b64",), "createpolicy (opaque value: UNDEF)")
    add(MISC, "nanosleep.u32 {a0}; pmevent 3; applypriority.global.L2::evict_normal [%own_global], 128; mov.b32 {d0}, {a1};",
        ("small", "u32"), ("b32",), "nanosleep / pmevent / applypriority")
    add(MISC, "st.global.b32 [%own_global], {a0}; bar.sync 0; discard.global.L2 [%rds4], 128; bar.sync 0;"
              " ld.global.b32 {d0}, [%own_global];", ("u32",), ("b32",), "discard.global.L2 (first 128 bytes: UNDEF)")
    for sp, reg in (("shared", "%own_generic"), ("global", "%own_generic"), ("local", "%own_generic"), ("global", "%rds2"),
                    ("shared", "%rds2")):
        add(MISC, f"isspacep.{sp} {{d0}}, {reg};", (), ("pred",), f"isspacep.{sp} ({'shared' if reg == '%own_generic' else 'global'} address)")
    add(MISC, "mov.u64 %loc_a, loc; cvta.local.u64 %loc_g, %loc_a; isspacep.local {d0}, %loc_g; isspacep.global {d1}, %loc_g;",
        (), ("pred", "pred"), "isspacep.local/global (local address)")

    # special registers
    for r in ("%laneid", "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt", "%tid.x",
              "%ntid.x", "%ctaid.x", "%nctaid.x", "%dynamic_smem_size", "%cluster_ctarank", "%cluster_nctarank"):
        add(SREG, f"mov.u32 {{d0}}, {r};", (), ("b32",), f"mov.u32 {r}")
    add(SREG, "mov.pred {d0}, %is_explicit_cluster;", (), ("pred",))
    for r in ("%warpid", "%nwarpid", "%smid", "%nsmid", "%clock", "%clock_hi", "%globaltimer_lo", "%total_smem_size",
              "%envreg0", "%pm0"):
        add(SREG, f"mov.u32 {{d0}}, {r};", (), ("b32",), f"mov.u32 {r} (UNDEF)")
    for r in ("%clock64", "%globaltimer", "%gridid"):
        add(SREG, f"mov.u64 {{d0}}, {r};", (), ("b64",), f"mov.u64 {r} (UNDEF)")
    add(SREG, "activemask.b32 {d0};", (), ("b32",), "activemask.b32 (UNDEF)")
    return out


def _narrows(dt: str, st: str) -> bool:
    """cvt.sat between integers: the source's range is not inside the destination's."""
    wd, ws = int(dt[1:]), int(st[1:])
    if dt[0] == st[0]:
        return wd < ws
    if dt[0] == "u":  # signed -> unsigned: negatives clamp
        return True
    return wd <= ws  # unsigned -> signed


def _fbits(t: str) -> int:
    return {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[t]


FORMS: tuple[Form, ...] = tuple(_forms())

REFUSED: tuple[Refused, ...] = (
    Refused(VIDEO, "vmad", "vmad.u32.u32.u32 %r1, %r2, %r3, %r4;", "vmad is not modelled"),
    Refused(ATOM, "atom/red .v2/.v4/.v8 (vector f32/f16)", "atom.global.v2.f32.add {%r1, %r2}, [%rd1], {%r3, %r4};",
            "vector atom"),
    Refused(ATOM, "atom.exch/cas.b128", "atom.global.exch.b128 %rd2, [%rd1], %rd3;", "b128"),
    Refused(WARP, "shfl.sync with members on another path",
            "setp.eq.u32 %p1, %r0, 0; @%p1 bra L1; shfl.sync.idx.b32 %r1, %r0, 0, 0x1f, 0xffffffff; bra L2;"
            " L1: shfl.sync.idx.b32 %r1, %r0, 1, 0x1f, 0xffffffff; L2:", "does not execute this instruction together"),
    Refused(FLT, "rcp.approx.ftz.f64", "rcp.approx.ftz.f64 %rd2, %rd1;", "rcp.approx.f64 is not modelled"),
)


def chapters() -> list[str]:
    seen: list[str] = []
    for f in FORMS:
        if f.chapter not in seen:
            seen.append(f.chapter)
    return seen


def render() -> str:
    """docs/reference-coverage.md: the forms by chapter, then the refused ones."""
    lines = ["# Reference interpreter: scalar instruction coverage (sm_90a)", "",
             "Generated from `oracles/reference/coverage.py` (`python -m fuzzptx.oracles.reference.coverage`"
             " rewrites it; `tests/test_reference_coverage.py` fails when it is stale).  Every form below runs"
             " through the reference in that test, and on the H100 op by op against fresh random data"
             " (`tests/support/hw_scalar.py`, record `tests/hw_records/scalar_ops_h100.json`).", "",
             "What the reference cannot run it refuses in one line: the reference judge's summary reads",
             "`unsupported: FILE:LINE: OPCODE: reason` (`Unsupported`), and the run is skipped, never guessed.", "",
             "Values the ISA leaves free are UNDEF (any value allowed, none invented; a branch on one makes the"
             " run undefined): integer division by zero, uninitialised registers, shared and local memory,"
             " shfl from a lane that does not execute it, the returned values of atomics that several threads"
             " apply to one address (and their final value unless the operation is order-free: integer add,"
             " and, or, xor, min, max), CC.CF before any .cc instruction or after a call, and the special"
             " registers whose value the machine picks: " + ", ".join(f"`{r}`" for r in _volatile()) + ".", "",
             "NaN bits the ISA does not fix are UNDEF too: a NaN result of `.f64` arithmetic (add, sub, mul, div,"
             " fma, mad, sqrt, rcp, cvt.rni-style rounding, atom/red.add.f64), of abs/neg (\"NaN inputs yield an"
             " unspecified NaN\"), of cvt into or out of `.f64` and of cvt.f32.bf16, and the integer a float ->"
             " integer cvt gives for a NaN (the ISA clamps out-of-range values, names nothing for NaN).  Where the"
             " ISA fixes a value the reference gives the H100's bits (f32/f16/bf16 arithmetic NaNs are canonical,"
             " `.sat`/`.relu` give +0 for -0, testp.normal counts zeros as normal).  The forms whose H100 bits"
             " lie outside the ISA are listed with the reason in `EXPLAINED` (`tests/test_reference_coverage.py`);"
             " `tests/support/hw_scalar.py --reexamine RECORD` re-judges a record's examples with today's"
             " reference.", "",
             "Approximate float instructions (`ex2`, `lg2`, `sin`, `cos`, `tanh`, `rsqrt`, `rcp.approx`,"
             " `sqrt.approx` on `.f32`) run but are not forms of this table: their result is a bound around"
             " the true value (`oracles/reference/approx.py`: looser than the PTX ISA's error bounds), so the"
             " value and all derived from it is compared with that tolerance or left free, never bit for bit"
             " (their 16-bit and packed forms give free values).", "",
             "| chapter | forms | count |", "| --- | --- | --- |"]
    for ch in chapters():
        fs = [f for f in FORMS if f.chapter == ch]
        lines.append(f"| {ch} | {_summary(fs)} | {len(fs)} |")
    lines += ["", f"Total: {len(FORMS)} forms.", "", "## Refused (one-line `unsupported:`)", "",
              "| chapter | form | reason the reference gives |", "| --- | --- | --- |"]
    for r in REFUSED:
        lines.append(f"| {r.chapter} | {r.form} | {r.reason} |")
    lines += ["", "## Every form", ""]
    for ch in chapters():
        lines.append(f"### {ch}")
        lines.append("")
        for f in FORMS:
            if f.chapter == ch:
                lines.append(f"- `{f.label}`")
        lines.append("")
    return "\n".join(lines)


def _volatile() -> list[str]:
    short = sorted(r for r in VOLATILE_SPECIAL if not r.startswith(("%envreg", "%pm")))
    return short + ["%envreg0..31", "%pm0..7", "%pm0_64..%pm7_64"]


_NOT_OPCODES = frozenset(("b16", "b32", "b64", "u8", "s8", "u16", "s16", "v2", "global", "shared", "local"))


def _summary(fs: list[Form]) -> str:
    names: list[str] = []
    for f in fs:
        for part in f.label.split()[0].split("/"):
            toks = part.split(".")
            if toks[0] in _NOT_OPCODES:
                continue  # "ld/st.local.b32/b64": the pieces after a slash that are no opcode
            op = toks[0] + (".cc" if "cc" in toks else "")
            if op not in names:
                names.append(op)
    return ", ".join(f"`{n}`" for n in names)


if __name__ == "__main__":  # pragma: no cover - regenerates the document
    import pathlib
    path = pathlib.Path(__file__).resolve().parents[2] / "docs" / "reference-coverage.md"
    path.write_text(render() + "\n")
    print(f"wrote {path} ({len(FORMS)} forms)")
