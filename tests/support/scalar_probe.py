"""Random integer kernels for probing ptxas against itself (compile pairs on the GPU).

Each kernel is defined by construction: every register is written before it is read, divisors
are forced odd (never zero), shifts and bit-field positions are whatever the ISA defines for any
value, and every thread stores only its own words.  The code is what ptxas folds hardest:
integer and bit arithmetic (mul.hi, mad, prmt, lop3, bfe/bfi, shf, clz/popc/brev, carry chains,
mul.wide and 64-bit shifts, truncation and sign extension), a loop with a runtime trip count
(0 included), and a lane-divergent if/else that ptxas may if-convert.

Used by ``tests/support/hw_pairs.py --probe`` to find -O0 != -O3 kernels on the H100 (the hand-made
suite under ``tests/data/pairs/``); never installed.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

THREADS = 128
OUTS = 4  # output words per thread


@dataclass
class _Gen:
    rng: random.Random
    regs: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    n: int = 0
    n64: int = 0
    npred: int = 0

    def fresh(self) -> str:
        self.n += 1
        return f"%r{self.n}"

    def fresh64(self) -> str:
        self.n64 += 1
        return f"%rd{self.n64 + 10}"

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
        k = rng.randrange(24)
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
            self.emit(f"{rng.choice(('popc.b32', 'clz.b32', 'brev.b32', 'not.b32', 'neg.s32', 'abs.s32'))} {d}, {a};", d)
        elif k == 7:
            self.emit(f"bfe.{s} {d}, {a}, {rng.randrange(40)}, {rng.randrange(40)};", d)
        elif k == 8:
            self.emit(f"bfi.b32 {d}, {a}, {b}, {rng.randrange(40)}, {rng.randrange(40)};", d)
        elif k == 9:
            self.emit(f"prmt.b32{rng.choice(('', '.f4e', '.b4e', '.rc8', '.ecl', '.ecr', '.rc16'))} {d}, {a}, {b}, "
                      f"{rng.randrange(1 << 16)};", d)
        elif k == 10:
            self.emit(f"lop3.b32 {d}, {a}, {b}, {c}, {rng.randrange(256)};", d)
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
        else:
            self.emit(f"mad24.lo.{s} {d}, {a}, {b}, {c};", d)


def kernel(seed: int, ops: int = 24) -> str:
    """One random kernel's PTX with its fuzzptx header (x: 2 words per thread in, y: OUTS out)."""
    rng = random.Random(seed)
    g = _Gen(rng)
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
            f"// BUFFER: x type=u32 count={2 * THREADS} init=random seed={seed}\n"
            f"// BUFFER: y type=u32 count={OUTS * THREADS} init=zeros output\n"
            f"// PARAM: n value={trip}\n// NOTE: tests/support/scalar_probe.py seed {seed}\n")
    decl = (f"\t.reg .b32 %r<{g.n + 1}>;\n\t.reg .b32 %rn;\n\t.reg .b32 %rl;\n\t.reg .b64 %rd<{g.n64 + 11}>;\n"
            f"\t.reg .pred %p<{g.npred + 1}>;\n\t.reg .pred %pl;\n\t.reg .pred %pd;\n")
    return (head + ".version 8.0\n.target sm_90a\n.address_size 64\n\n"
            ".visible .entry k(\n\t.param .u64 x,\n\t.param .u64 y,\n\t.param .u32 n\n)\n{\n"
            + decl + "\n".join(g.lines) + "\n}\n")
