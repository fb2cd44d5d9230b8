"""Random integer kernels: the scalar code ptxas folds hardest, judged by the compile pairs on the GPU.

Each kernel is defined by construction: every register is written before it is read, divisors
are forced odd (never zero; signed ones positive), shifts and bit-field positions are whatever the
ISA defines for any value, and every thread stores only its own words.  The code is integer and
bit arithmetic (mul.hi, mad, prmt, lop3, bfe/bfi, shf, clz/popc/brev, carry chains, mul.wide and
64-bit shifts, truncation and sign extension; with the v2 mix also 16-bit and packed 16x2,
64-bit carry chains, video SIMD, bmsk/szext, dot products, saturating conversions, predicated
ops), a loop with a runtime trip count (0 included), and a lane-divergent if/else that ptxas may
if-convert.  The compile pairs' probe (``tests/support/hw_pairs.py --probe``) found three ptxas
-O3 miscompiles with it (``reports/known_bugs.toml``); campaigns with the GPU draw a share of
their programs from ``scalar_kernels()`` (``--scalar-share``), each judged by a compile pair.

``avoid`` takes the ``strategies.avoid.AVOIDABLE`` names of the known bugs' shapes: a kernel then
holds none of them (the shapes of ``fuzzptx.strategies.scalar_shapes``).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from hypothesis import strategies as st

from fuzzptx.program import Program

from .scalar_shapes import SHAPES

THREADS = 128
NOTE = "scalar kernel seed"  # the note that marks a program as one of these kernels (``is_scalar_kernel``)
OUTS = 4  # output words per thread


#: ``mix`` -> how many op kinds ``_Gen.op`` draws from: v1 (the first 24, the kernels the suite's
#: seeds name) or v2 (v1 and 16-bit, packed 16x2, 64-bit and carry chains, video, masks, dot products,
#: saturating conversions, predicated ops, register-valued bit fields).
KINDS = {"v1": 24, "v2": 44, "v3": 58}
#: range-analysis edges: constants at which a value range folds wrong if it is off by one bit
EDGES = (0, 1, 2, 7, 8, 15, 16, 31, 32, 33, 63, 64, 127, 128, 255, 256, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
         0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 0x80000001)

#: The ``avoid`` names this generator honours (``strategies.avoid.AVOIDABLE`` holds their words).
SCALAR_AVOIDABLE = ("bfe-s32-position-beyond-31", "bfi-length-beyond-31", "abs-into-saturating-cvt",
                    "neg-into-saturating-cvt", "abs-assumed-nonnegative", "lop3-repeated-operand",
                    "neg-into-saturating-add", "clz-into-saturating-add", "prmt-sign-into-byte-mask",
                    "mulhi-into-wide-sub", "unsigned-max-into-signed-min", "mulhi-accumulated",
                    "set-compared-with-one")
#: a kernel the draw made that still holds an avoided shape (one the draw does not turn down as it
#: goes: a neg read through a copy, a slct, a clz, a prmt's mask) is drawn again from the next seed,
#: at most this many times; the shapes' own tests (``scalar_shapes.SHAPES``) decide
REDRAWS = 64


@dataclass
class _Gen:
    rng: random.Random
    mix: str = "v1"
    avoid: frozenset = frozenset()
    regs: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    n: int = 0
    n64: int = 0
    npred: int = 0
    n16: int = 0
    absolute: set = field(default_factory=set)  # registers an abs.s32 wrote
    negated: set = field(default_factory=set)  # registers a neg.s32 wrote

    def fresh(self) -> str:
        self.n += 1
        return f"%r{self.n}"

    def fresh64(self) -> str:
        self.n64 += 1
        return f"%rd{self.n64 + 10}"

    def fresh16(self) -> str:
        self.n16 += 1
        return f"%h{self.n16}"

    def pred(self) -> str:
        self.npred += 1
        return f"%p{self.npred}"

    def src(self) -> str:
        return self.rng.choice(self.regs[-8:]) if self.rng.random() < 0.7 else self.rng.choice(self.regs)

    def imm(self) -> str:
        r = self.rng.random()
        if r < 0.3:
            return str(self.rng.randrange(0, 33))
        if r < 0.6:
            return str(self.rng.choice((0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 255, 0xFFFF, 0x7FFFFFFF, 0x80000000,
                                        0xFFFFFFFF)))
        return str(self.rng.randrange(0, 1 << 32))

    def emit(self, text: str, dest: str | None = None) -> None:
        self.lines.append("\t" + text)
        if dest is not None:
            self.regs.append(dest)

    def op(self) -> None:
        rng, d = self.rng, self.fresh()
        a, b, c = self.src(), self.src(), self.src()
        s = rng.choice(("u32", "s32"))
        k = rng.randrange(KINDS[self.mix])
        if k == 0:
            self.emit(f"{rng.choice(('add', 'sub'))}.{s} {d}, {a}, {rng.choice((b, self.imm()))};", d)
        elif k == 1:
            self.emit(f"mul.{rng.choice(('lo', 'hi'))}.{s} {d}, {a}, {rng.choice((b, self.imm()))};", d)
        elif k == 2:
            self.emit(f"mad.{rng.choice(('lo', 'hi'))}.{s} {d}, {a}, {b}, {c};", d)
        elif k == 3:
            self.emit(f"{rng.choice(('and', 'or', 'xor'))}.b32 {d}, {a}, {rng.choice((b, self.imm()))};", d)
        elif k == 4:
            self.emit(f"{rng.choice(('shl.b32', 'shr.u32', 'shr.s32'))} {d}, {a}, {rng.choice((b, str(rng.randrange(40))))};", d)
        elif k == 5:
            self.emit(f"{rng.choice(('min', 'max'))}.{s} {d}, {a}, {rng.choice((b, self.imm()))};", d)
        elif k == 6:
            op = rng.choice(('popc.b32', 'clz.b32', 'brev.b32', 'not.b32', 'neg.s32', 'abs.s32'))
            if op == "abs.s32":
                self.absolute_value(d, a)
            else:
                self.emit(f"{op} {d}, {a};", d)
                if op == "neg.s32":
                    self.negated.add(d)
        elif k == 7:
            high = 32 if s == "s32" and "bfe-s32-position-beyond-31" in self.avoid else 40
            self.emit(f"bfe.{s} {d}, {a}, {rng.randrange(high)}, {rng.randrange(40)};", d)
        elif k == 8:
            pos, length = rng.randrange(40), rng.randrange(40)
            if "bfi-length-beyond-31" in self.avoid and pos < 32 and length >= 32:
                length -= 32
            self.emit(f"bfi.b32 {d}, {a}, {b}, {pos}, {length};", d)
        elif k == 9:
            self.emit(f"prmt.b32{rng.choice(('', '.f4e', '.b4e', '.rc8', '.ecl', '.ecr', '.rc16'))} {d}, {a}, {b}, "
                      f"{rng.randrange(1 << 16)};", d)
        elif k == 10:
            lut = rng.randrange(256)
            if "lop3-repeated-operand" in self.avoid:
                a, b, c = self.distinct(a, b, c)
            self.emit(f"lop3.b32 {d}, {a}, {b}, {c}, {lut};", d)
        elif k == 11:
            self.emit(f"shf.{rng.choice(('l', 'r'))}.{rng.choice(('wrap', 'clamp'))}.b32 {d}, {a}, {b}, "
                      f"{rng.choice((c, str(rng.randrange(40))))};", d)
        elif k == 12:
            p = self.pred()
            self.emit(f"setp.{rng.choice(('lt', 'le', 'gt', 'ge', 'eq', 'ne'))}.{s} {p}, {a}, {rng.choice((b, self.imm()))};")
            self.emit(f"selp.b32 {d}, {b}, {c}, {p};", d)
        elif k == 13:
            w, x = self.fresh64(), self.fresh64()
            self.emit(f"mul.wide.{s} {w}, {a}, {b};")
            self.emit(f"shr.{'u64' if s == 'u32' else 's64'} {x}, {w}, {rng.randrange(1, 64)};")
            self.emit(f"cvt.u32.u64 {d}, {x};", d)
        elif k == 14:
            t = rng.choice(("u8", "s8", "u16", "s16"))
            self.emit(f"cvt.{s}.{t} {d}, {a};", d)
        elif k == 15:
            e = self.fresh()
            self.emit(f"add.cc.u32 {d}, {a}, {b};", d)
            self.emit(f"addc.u32 {e}, {c}, {self.imm()};", e)
        elif k == 16:
            e = self.fresh()
            self.emit(f"sub.cc.u32 {d}, {a}, {b};", d)
            self.emit(f"subc.u32 {e}, {c}, {a};", e)
        elif k == 17:
            o = self.fresh()
            self.emit(f"or.b32 {o}, {b}, 1;", o)
            self.emit(f"{rng.choice(('div', 'rem'))}.u32 {d}, {a}, {o};", d)
        elif k == 18:
            self.emit(f"sad.{s} {d}, {a}, {b}, {c};", d)
        elif k == 19:
            self.emit(f"slct.{s}.s32 {d}, {a}, {b}, {c};", d)
        elif k == 20:
            w, x = self.fresh64(), self.fresh64()
            self.emit(f"cvt.u64.u32 {w}, {a};")
            self.emit(f"{rng.choice(('shl.b64', 'shr.u64', 'shr.s64'))} {x}, {w}, {rng.randrange(64)};")
            self.emit(f"cvt.u32.u64 {d}, {x};", d)
        elif k == 21:
            self.emit(f"bfind.{rng.choice(('', 'shiftamt.'))}{s} {d}, {a};".replace("..", "."), d)
        elif k == 22:
            self.emit(f"mul24.{rng.choice(('lo', 'hi'))}.{s} {d}, {a}, {b};", d)
        elif k == 23:
            self.emit(f"mad24.lo.{s} {d}, {a}, {b}, {c};", d)
        elif k < 44:
            self.op_v2(k, d, a, b, c, s)
        else:
            self.op_v3(k, d, a, b, s)

    def op_v2(self, k: int, d: str, a: str, b: str, c: str, s: str) -> None:
        """The v2 kinds (24..43): each defined for every input value."""
        rng = self.rng
        if k == 24:  # 16-bit arithmetic through truncation and extension
            h = rng.choice(("u16", "s16"))
            x, y, z = self.fresh16(), self.fresh16(), self.fresh16()
            self.emit(f"cvt.{h}.u32 {x}, {a};")
            self.emit(f"cvt.{h}.u32 {y}, {b};")
            op = rng.choice(("add", "sub", "mul.lo", "min", "max", "mul.hi"))
            self.emit(f"{op}.{h} {z}, {x}, {y};")
            self.emit(f"cvt.{s}.{h} {d}, {z};", d)
        elif k == 25:  # packed 16x2
            h = rng.choice(("u16x2", "s16x2"))
            op = rng.choice(("add", "min", "max"))  # sm_90's packed 16x2 integer ops (no sub)
            self.emit(f"{op}.{h} {d}, {a}, {b};", d)
        elif k == 26:  # 64-bit carry chain through mad.cc/madc
            e = self.fresh()
            self.emit(f"mad.lo.cc.u32 {d}, {a}, {b}, {c};", d)
            self.emit(f"madc.hi.u32 {e}, {a}, {b}, {self.src()};", e)
        elif k == 27:  # 64-bit add/sub with carry between halves
            w, x, y = self.fresh64(), self.fresh64(), self.fresh64()
            self.emit(f"mov.b64 {w}, {{{a}, {b}}};")
            self.emit(f"mov.b64 {x}, {{{c}, {self.src()}}};")
            self.emit(f"{rng.choice(('add', 'sub', 'mul.lo', 'min', 'max'))}.{rng.choice(('u64', 's64'))} {y}, {w}, {x};")
            e = self.fresh()
            self.emit(f"mov.b64 {{{d}, {e}}}, {y};", d)
            self.regs.append(e)
        elif k == 28:  # shifts by register amounts (any amount is defined: clamped)
            self.emit(f"{rng.choice(('shl.b32', 'shr.u32', 'shr.s32'))} {d}, {a}, {b};", d)
        elif k == 29:  # bmsk / szext
            if rng.random() < 0.5:
                self.emit(f"bmsk.{rng.choice(('clamp', 'wrap'))}.b32 {d}, {rng.choice((a, str(rng.randrange(40))))}, "
                          f"{rng.choice((b, str(rng.randrange(40))))};", d)
            else:
                self.emit(f"szext.{rng.choice(('clamp', 'wrap'))}.{s} {d}, {a}, {rng.choice((b, str(rng.randrange(40))))};", d)
        elif k == 30:  # dot products
            if rng.random() < 0.5:
                self.emit(f"dp4a.{s}.{rng.choice(('u32', 's32'))} {d}, {a}, {b}, {c};", d)
            else:
                self.emit(f"dp2a.{rng.choice(('lo', 'hi'))}.{s}.{rng.choice(('u32', 's32'))} {d}, {a}, {b}, {c};", d)
        elif k == 31:  # video SIMD
            op = rng.choice(("vadd4", "vsub4", "vmin4", "vmax4", "vabsdiff4", "vadd2", "vsub2", "vavrg2"))
            t = rng.choice(("u32", "s32"))
            self.emit(f"{op}.{t}.{t}.{t}{rng.choice(('', '.sat'))} {d}, {a}, {b}, {c};", d)
        elif k == 32:  # 64-bit bit ops back to 32 bits
            w, x = self.fresh64(), self.fresh64()
            self.emit(f"mov.b64 {w}, {{{a}, {b}}};")
            op = rng.choice(("popc.b64", "clz.b64", "brev.b64", "bfind.u64", "bfind.s64", "not.b64", "cnot.b64"))
            if op in ("popc.b64", "clz.b64") or op.startswith("bfind"):
                self.emit(f"{op} {d}, {w};", d)
            else:
                self.emit(f"{op} {x}, {w};")
                self.emit(f"cvt.u32.u64 {d}, {x};", d)
        elif k == 33:  # set: a predicate's mask as a value
            cmps = ("lt", "le", "gt", "ge", "eq", "ne") + (("lo", "hs") if s == "u32" else ())
            self.emit(f"set.{rng.choice(cmps)}.u32.{s} {d}, {a}, {rng.choice((b, self.imm()))};", d)
        elif k == 34:  # saturating conversions
            h, x = rng.choice(("u16", "s16")), self.fresh16()
            if ("abs-into-saturating-cvt" in self.avoid and a in self.absolute) or (
                    "neg-into-saturating-cvt" in self.avoid and a in self.negated):
                a = "%r0"  # the thread index: never an abs or neg result
            self.emit(f"cvt.sat.{h}.{s} {x}, {a};")
            self.emit(f"cvt.{s}.{h} {d}, {x};", d)
        elif k == 35:  # predicated op (if-conversion's output shape)
            p = self.pred()
            self.emit(f"mov.u32 {d}, {c};", d)
            self.emit(f"setp.{rng.choice(('lt', 'gt', 'ne'))}.{s} {p}, {a}, {rng.choice((b, self.imm()))};")
            op = rng.choice((f"add.{s}", f"sub.{s}", "xor.b32", f"min.{s}"))
            self.emit(f"@{rng.choice((p, '!' + p))} {op} {d}, {a}, {b};")
        elif k == 36:  # signed division by a positive odd divisor (never 0, never -1)
            o = self.fresh()
            self.emit(f"and.b32 {o}, {b}, 0x7ffffff;", o)
            self.emit(f"or.b32 {o}, {o}, 1;")
            self.emit(f"{rng.choice(('div', 'rem'))}.s32 {d}, {a}, {o};", d)
        elif k == 37:  # bit fields with register positions and lengths
            pos = self.fresh()
            high = 31 if s == "s32" and "bfe-s32-position-beyond-31" in self.avoid else 255
            self.emit(f"and.b32 {pos}, {b}, {high};", pos)
            if rng.random() < 0.5:
                self.emit(f"bfe.{s} {d}, {a}, {pos}, {c};", d)
            else:
                self.emit(f"bfi.b32 {d}, {a}, {c}, {pos}, {self.src()};", d)
        elif k == 38:  # mul.hi / mad on 64 bits
            w, x, y = self.fresh64(), self.fresh64(), self.fresh64()
            self.emit(f"mov.b64 {w}, {{{a}, {b}}};")
            self.emit(f"mov.b64 {x}, {{{c}, {a}}};")
            t = rng.choice(("u64", "s64"))
            if rng.random() < 0.4:
                self.emit(f"mul.hi.{t} {y}, {w}, {x};")
            else:
                self.emit(f"{rng.choice(('mad.lo', 'mad.hi'))}.{t} {y}, {w}, {x}, {w};")
            e = self.fresh()
            self.emit(f"mov.b64 {{{e}, {d}}}, {y};", d)
            self.regs.append(e)
        elif k == 39:  # 64-bit shifts by a register amount, shf on 64-bit halves
            w, x = self.fresh64(), self.fresh64()
            self.emit(f"mov.b64 {w}, {{{a}, {b}}};")
            self.emit(f"{rng.choice(('shl.b64', 'shr.u64', 'shr.s64'))} {x}, {w}, {c};")
            e = self.fresh()
            self.emit(f"mov.b64 {{{d}, {e}}}, {x};", d)
            self.regs.append(e)
        elif k == 40:  # max with relu, 32-bit and packed 16x2
            self.emit(f"{rng.choice(('max.s32.relu', 'max.s16x2.relu'))} {d}, {a}, {b};", d)
        elif k == 41:  # a select tree on one predicate (if-conversion of nested ifs)
            p, q = self.pred(), self.pred()
            e = self.fresh()
            self.emit(f"setp.{rng.choice(('lt', 'ge'))}.{s} {p}, {a}, {b};")
            self.emit(f"setp.{rng.choice(('ne', 'eq'))}.{rng.choice(('and', 'or', 'xor'))}.{s} {q}, {b}, {c}, {p};")
            self.emit(f"selp.b32 {e}, {a}, {c}, {q};", e)
            self.emit(f"selp.b32 {d}, {e}, {b}, {p};", d)
        elif k == 42:  # add.cc on 64 bits
            w, x, y, z = self.fresh64(), self.fresh64(), self.fresh64(), self.fresh64()
            self.emit(f"mov.b64 {w}, {{{a}, {b}}};")
            self.emit(f"mov.b64 {x}, {{{c}, {a}}};")
            self.emit(f"add.cc.u64 {y}, {w}, {x};")
            self.emit(f"addc.u64 {z}, {x}, {w};")
            self.emit(f"cvt.u32.u64 {d}, {z};", d)
        else:  # popc/clz of a combination, then a shift by the count
            e = self.fresh()
            self.emit(f"{rng.choice(('popc', 'clz'))}.b32 {e}, {a};", e)
            self.emit(f"shl.b32 {d}, {b}, {e};", d)

    def absolute_value(self, d: str, a: str) -> None:
        """``abs.s32 d, a``; with ``abs-assumed-nonnegative`` avoided, clamped at 0 after it (the
        one value ptxas's range analysis gets wrong, abs(INT_MIN), never reaches a reader)."""
        if "abs-assumed-nonnegative" in self.avoid:
            t = self.fresh()
            self.emit(f"abs.s32 {t}, {a};")
            self.emit(f"max.s32 {d}, {t}, 0;", d)
        else:
            self.emit(f"abs.s32 {d}, {a};", d)
            self.absolute.add(d)

    def distinct(self, *regs: str) -> tuple[str, ...]:
        """``regs`` with repeats replaced by other registers of the kernel (%r0, the inputs)."""
        out: list[str] = []
        spare = [r for r in ("%r0", "%r1", "%r2", "%r3") if r not in regs]
        for r in regs:
            out.append(r if r not in out else spare.pop(0))
        return tuple(out)

    def edge(self) -> str:
        return str(self.rng.choice(EDGES))

    def producer(self, a: str, b: str) -> tuple[str, bool]:
        """A value whose range a compiler derives (abs, clz, bfind, a shift, a mask...): its
        register, and whether it came from ``abs``."""
        rng, v = self.rng, self.fresh()
        k = rng.randrange(12)
        if k == 0:
            self.absolute_value(v, a)
        elif k == 1:
            self.emit(f"neg.s32 {v}, {a};", v)
            self.negated.add(v)
        elif k == 2:
            self.emit(f"{rng.choice(('clz.b32', 'popc.b32', 'bfind.u32', 'bfind.s32', 'bfind.shiftamt.u32'))} {v}, {a};", v)
        elif k == 3:
            self.emit(f"shr.{rng.choice(('s32', 'u32'))} {v}, {a}, {rng.randrange(1, 32)};", v)
        elif k == 4:
            self.emit(f"and.b32 {v}, {a}, {rng.choice((0xFF, 0xFFFF, 0x7FFFFFFF, 0x1F, 0x80000000, 0xFFFF0000))};", v)
        elif k == 5:
            self.emit(f"rem.{rng.choice(('u32', 's32'))} {v}, {a}, {rng.choice((3, 7, 8, 10, 32, 1000))};", v)
        elif k == 6:
            self.emit(f"sad.{rng.choice(('u32', 's32'))} {v}, {a}, {b}, 0;", v)
        elif k == 7:
            self.emit(f"mul.hi.{rng.choice(('u32', 's32'))} {v}, {a}, {self.edge()};", v)
        elif k == 8:
            self.emit(f"cvt.{rng.choice(('s32.s8', 'u32.u8', 's32.s16', 'u32.u16'))} {v}, {a};", v)
        elif k == 9:
            self.emit(f"{rng.choice(('min', 'max'))}.{rng.choice(('s32', 'u32'))} {v}, {a}, {self.edge()};", v)
        elif k == 10:
            self.emit(f"szext.{rng.choice(('clamp', 'wrap'))}.{rng.choice(('s32', 'u32'))} {v}, {a}, {rng.randrange(1, 33)};", v)
        else:
            x, y = self.fresh(), self.fresh()
            self.emit(f"and.b32 {x}, {a}, 255;", x)
            self.emit(f"and.b32 {y}, {b}, 255;", y)
            self.emit(f"sub.s32 {v}, {x}, {y};", v)
        return v, k == 0

    def op_v3(self, k: int, d: str, a: str, b: str, s: str) -> None:
        """The v3 kinds (44..57): a value with a derived range (``producer``) read by an
        instruction that folds on ranges: saturation, compares against edge constants, clamps,
        shifts by it, division by constants, bit fields at it."""
        rng = self.rng
        v, from_abs = self.producer(a, b)
        c = k % 7
        if c == 0:
            if from_abs and "abs-into-saturating-cvt" in self.avoid:
                v = a
            if "neg-into-saturating-cvt" in self.avoid and v in self.negated:
                v = "%r0"
            h, x = rng.choice(("u16", "s16")), self.fresh16()
            src = rng.choice(("s32", "u32"))
            self.emit(f"cvt.sat.{h}.{src} {x}, {v};")
            self.emit(f"cvt.{s}.{h} {d}, {x};", d)
        elif c == 1:
            p = self.pred()
            self.emit(f"setp.{rng.choice(('lt', 'le', 'gt', 'ge', 'eq', 'ne'))}.{rng.choice(('s32', 'u32'))} {p}, {v}, {self.edge()};")
            self.emit(f"selp.b32 {d}, {v}, {b}, {p};", d)
        elif c == 2:
            self.emit(f"{rng.choice(('min', 'max'))}.{rng.choice(('s32', 'u32'))} {d}, {v}, {self.edge()};", d)
        elif c == 3:
            self.emit(f"{rng.choice(('shl.b32', 'shr.u32', 'shr.s32'))} {d}, {b}, {v};", d)
        elif c == 4:
            self.emit(f"{rng.choice(('div', 'rem'))}.{rng.choice(('u32', 's32'))} {d}, {v}, {rng.choice((3, 5, 7, 16, 255, 0x7FFF))};", d)
        elif c == 5:
            high = 31 if "bfe-s32-position-beyond-31" in self.avoid else 255
            pos = self.fresh()
            self.emit(f"and.b32 {pos}, {v}, {high};", pos)
            self.emit(f"bfe.{rng.choice(('u32', 's32'))} {d}, {b}, {pos}, {rng.randrange(1, 33)};", d)
        else:
            self.emit(f"add.sat.s32 {d}, {v}, {self.edge()};", d)


def kernel(seed: int, ops: int = 24, mix: str = "v1", avoid: frozenset = frozenset()) -> str:
    """One random kernel's PTX with its fuzzptx header (x: 2 words per thread in, y: OUTS out);
    ``mix``: the op kinds (``KINDS``); ``avoid``: known bugs' shapes not drawn (``SCALAR_AVOIDABLE``):
    a draw that still holds one is made again from the next seed (``REDRAWS``), and the header's
    note names the seed of the kernel returned, so ``kernel(that seed)`` gives it back."""
    return kernel_program(seed, ops, mix, avoid)[0]


def kernel_program(seed: int, ops: int = 24, mix: str = "v1", avoid: frozenset = frozenset()) -> tuple[str, Program]:
    """``kernel``'s text and its program, parsed once (the shapes' tests read the program)."""
    tests = [test for name, test in SHAPES if name in avoid]
    drawn = seed
    for k in range(1, REDRAWS + 2):
        text = _kernel(drawn, ops, mix, avoid)
        program = Program.from_ptx(text, f"scalar_kernel_{drawn}.ptx")
        if not any(test(program) for test in tests):
            break
        drawn = (seed + k * 0x9E3779B1) % 2**31
    return text, program


def _kernel(seed: int, ops: int, mix: str, avoid: frozenset) -> str:
    """``kernel`` for one seed, with the shapes the draw turns down as it goes."""
    rng = random.Random(seed)
    g = _Gen(rng, mix, frozenset(avoid))
    g.emit("mov.u32 %r0, %tid.x;", None)
    g.emit("ld.param.u64 %rd1, [x];")
    g.emit("ld.param.u64 %rd2, [y];")
    g.emit("cvta.to.global.u64 %rd1, %rd1;")
    g.emit("cvta.to.global.u64 %rd2, %rd2;")
    g.emit("mul.wide.u32 %rd3, %r0, 8;")
    g.emit("add.u64 %rd4, %rd1, %rd3;")
    a, b = g.fresh(), g.fresh()
    g.emit(f"ld.global.u32 {a}, [%rd4];", a)
    g.emit(f"ld.global.u32 {b}, [%rd4+4];", b)
    g.emit("ld.param.u32 %rn, [n];")
    g.regs.append("%r0")
    for _ in range(ops // 2):
        g.op()
    # a loop with a runtime trip count (the parameter n, 0 included)
    acc, i = g.fresh(), g.fresh()
    g.emit(f"mov.u32 {acc}, {g.src()};", acc)
    g.emit(f"mov.u32 {i}, 0;")
    g.emit("LOOP:")
    g.emit(f"setp.ge.u32 %pl, {i}, %rn;")
    g.emit("@%pl bra LOOP_END;")
    saved = len(g.regs)
    g.regs.append(i)
    for _ in range(rng.randrange(1, 4)):
        g.op()
    g.emit(f"add.u32 {acc}, {acc}, {g.regs[-1]};")
    del g.regs[saved:]
    g.emit(f"add.u32 {i}, {i}, 1;")
    g.emit("bra LOOP;")
    g.emit("LOOP_END:")
    g.regs.append(acc)
    # a lane-divergent if/else joining into one register
    j = g.fresh()
    lane = rng.randrange(1, 32)
    g.emit("and.b32 %rl, %r0, 31;")
    g.emit(f"setp.lt.u32 %pd, %rl, {lane};")
    g.emit("@%pd bra ELSE;")
    saved = len(g.regs)
    g.op()
    g.emit(f"mov.u32 {j}, {g.regs[-1]};")
    g.emit("bra JOIN;")
    del g.regs[saved:]
    g.emit("ELSE:")
    g.op()
    g.emit(f"mov.u32 {j}, {g.regs[-1]};")
    del g.regs[saved:]
    g.emit("JOIN:")
    g.regs.append(j)
    for _ in range(ops - ops // 2):
        g.op()
    g.emit(f"mul.wide.u32 %rd5, %r0, {4 * OUTS};")
    g.emit("add.u64 %rd6, %rd2, %rd5;")
    outs = [g.regs[-1], acc, j] + rng.sample(g.regs, min(len(g.regs), OUTS - 3))
    for w, r in enumerate(outs[:OUTS]):
        g.emit(f"st.global.u32 [%rd6+{4 * w}], {r};")
    g.emit("ret;")
    trip = rng.choice((0, 1, 2, 3, 5, 8))
    head = (f"// fuzzptx-repro v1\n// LAUNCH: kernel=k grid=1,1,1 block={THREADS},1,1\n"
            f"// BUFFER: x type={'s32' if mix == 'v3' else 'u32'} count={2 * THREADS} "
            f"init={'special' if mix == 'v3' else 'random'} seed={seed}\n"
            f"// BUFFER: y type=u32 count={OUTS * THREADS} init=zeros output\n"
            f"// PARAM: n value={trip}\n// NOTE: {NOTE} {seed}"
            + (f" mix {mix}" if mix != "v1" else "") + (f" avoid {','.join(sorted(avoid))}" if avoid else "") + "\n")
    decl = (f"\t.reg .b32 %r<{g.n + 1}>;\n\t.reg .b32 %rn;\n\t.reg .b32 %rl;\n\t.reg .b64 %rd<{g.n64 + 11}>;\n"
            f"\t.reg .pred %p<{g.npred + 1}>;\n\t.reg .pred %pl;\n\t.reg .pred %pd;\n"
            + (f"\t.reg .b16 %h<{g.n16 + 1}>;\n" if g.n16 else ""))
    return (head + ".version 8.0\n.target sm_90a\n.address_size 64\n\n"
            ".visible .entry k(\n\t.param .u64 x,\n\t.param .u64 y,\n\t.param .u32 n\n)\n{\n"
            + decl + "\n".join(g.lines) + "\n}\n")


def is_scalar_kernel(program) -> bool:
    """One of these kernels (its header's note): the compile pairs judge every one of them."""
    return any(n.startswith(NOTE) for n in program.notes)


def scalar_kernels(avoid: frozenset[str] = frozenset(), mix: str = "v3") -> st.SearchStrategy[Program]:
    """Random integer kernels (``kernel``) as programs, drawn by their seed."""
    shapes = frozenset(avoid) & frozenset(SCALAR_AVOIDABLE)
    return st.integers(0, 2**31 - 1).map(lambda seed: kernel_program(seed, mix=mix, avoid=shapes)[1])
