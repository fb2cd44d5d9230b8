"""A small generator of wgmma pipeline programs, legal and illegal, for differential testing.

A program is a tree of steps: fence / wgmma on accumulator set A / commit / wait N / use of A
(stores) / write of A / uniform or divergent ``if`` / ``if-else`` / uniform loop / a guard on a
pipeline op.  Legal programs follow fence -> wgmma+ -> commit -> wait 0 -> use; illegal ones get
random omissions, insertions and wrappings.  ``program(seed)`` is deterministic.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

W_OP = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"
FENCE = "wgmma.fence.sync.aligned;"
COMMIT = "wgmma.commit_group.sync.aligned;"
ACC_SETS = 2


@dataclass(frozen=True)
class Step:
    kind: str  # fence wgmma commit wait use write if ifelse loop guard
    arg: int = 0
    div: bool = False
    body: tuple["Step", ...] = ()
    other: tuple["Step", ...] = ()


def acc_regs(a: int) -> list[str]:
    return [f"%f{8 * a + i}" for i in range(1, 5)]


class _Emitter:
    def __init__(self, name: str):
        self.name = name
        self.lines: list[str] = []
        self.labels = 0
        self.loops = 0

    def label(self) -> str:
        self.labels += 1
        return f"L{self.labels}"

    def op(self, text: str) -> None:
        self.lines.append("\t" + text)

    def steps(self, steps, guard: str = "") -> None:
        for s in steps:
            self.step(s, guard)

    def step(self, s: Step, guard: str = "") -> None:
        g = guard
        if s.kind == "fence":
            self.op(g + FENCE)
        elif s.kind == "wgmma":
            regs = ",".join(acc_regs(s.arg))
            if s.div:  # A from registers
                self.op(g + f"{W_OP} {{{regs}}}, {{%r1,%r2,%r3,%r4}}, %rd2, 1, 1, 1, 0;")
            else:
                self.op(g + f"{W_OP} {{{regs}}}, %rd1, %rd2, 1, 1, 1, 0, 0;")
        elif s.kind == "commit":
            self.op(g + COMMIT)
        elif s.kind == "wait":
            self.op(g + f"wgmma.wait_group.sync.aligned {s.arg};")
        elif s.kind == "use":
            base = 32 * s.arg
            for k, r in enumerate(acc_regs(s.arg)):
                self.op(g + f"st.global.f32 [%rd3+{base + 4 * k}], {r};")
        elif s.kind == "write":
            r = acc_regs(s.arg)[0]
            self.op(g + (f"add.f32 {r}, {r}, %f30;" if s.div else f"mov.f32 {r}, %f30;"))
        elif s.kind == "guard":
            self.steps(s.body, "@%p1 " if s.div else "@%p2 ")
        elif s.kind == "if":
            end = self.label()
            self.op(("@%p1" if s.div else "@%p2") + f" bra {end};")
            self.steps(s.body)
            self.lines.append(f"{end}:")
        elif s.kind == "ifelse":
            els, end = self.label(), self.label()
            self.op(("@%p1" if s.div else "@%p2") + f" bra {els};")
            self.steps(s.body)
            self.op(f"bra {end};")
            self.lines.append(f"{els}:")
            self.steps(s.other)
            self.lines.append(f"{end}:")
        elif s.kind == "loop":
            self.loops += 1
            top = self.label()
            ctr = f"%r{10 + self.loops}"
            self.op(f"mov.u32 {ctr}, 0;")
            self.lines.append(f"{top}:")
            self.steps(s.body)
            self.op(f"add.u32 {ctr}, {ctr}, 1;")
            self.op(f"setp.lt.u32 %p3, {ctr}, %r9;")
            self.op(f"@%p3 bra {top};")
        else:
            raise ValueError(s.kind)


def render(steps: tuple[Step, ...], name: str = "k") -> str:
    """PTX text of one kernel running ``steps`` after loading inputs (so nothing folds to constants)."""
    e = _Emitter(name)
    e.steps(steps)
    head = [
        ".version 8.0", ".target sm_90a", ".address_size 64", "",
        f".visible .entry {name}(.param .u64 out, .param .u32 n)", "{",
        "\t.reg .f32 %f<32>;", "\t.reg .b64 %rd<8>;", "\t.reg .pred %p<4>;", "\t.reg .b32 %r<24>;",
        "\tld.param.u64 %rd3, [out];", "\tld.param.u32 %r9, [n];",
        "\tld.global.u64 %rd1, [%rd3+256];", "\tld.global.u64 %rd2, [%rd3+264];",
    ]
    head += [f"\tld.global.f32 %f{i}, [%rd3+{512 + 4 * i}];" for i in range(1, 8 * ACC_SETS + 1)]
    head += ["\tld.global.f32 %f30, [%rd3+640];"]
    head += [f"\tld.global.u32 %r{i}, [%rd3+{768 + 4 * i}];" for i in range(1, 5)]
    head += ["\tmov.u32 %r20, %tid.x;", "\tsetp.lt.u32 %p1, %r20, 64;",
             "\tmov.u32 %r21, %ctaid.x;", "\tsetp.lt.u32 %p2, %r21, 2;"]
    return "\n".join(head + e.lines + ["\tret;", "}", ""])


# ------------------------------------------------------------------ random programs


def _stage(rng: random.Random, a: int) -> list[Step]:
    regs_a = rng.random() < 0.2
    ws = [Step("wgmma", a, div=regs_a) for _ in range(rng.choice((1, 1, 2)))]
    return [Step("fence"), *ws, Step("commit")]


def legal(rng: random.Random) -> list[Step]:
    shape = rng.random()
    if shape < 0.4:
        return _stage(rng, 0) + [Step("wait", 0), Step("use", 0)]
    if shape < 0.6:
        return _stage(rng, 0) + _stage(rng, 1) + [Step("wait", 1), Step("use", 0), Step("wait", 0), Step("use", 1)]
    if shape < 0.8:
        return [Step("loop", body=tuple(_stage(rng, 0) + [Step("wait", rng.choice((0, 1)))])), Step("wait", 0),
                Step("use", 0)]
    return [Step("if", div=rng.random() < 0.5, body=tuple(_stage(rng, 0) + [Step("wait", 0), Step("use", 0)]))]


def _mutate(rng: random.Random, steps: list[Step]) -> list[Step]:
    kind = rng.choice(("drop", "drop", "insert", "wrap", "guard", "wait_n", "swap"))
    flat = [i for i, s in enumerate(steps) if s.kind not in ("if", "ifelse", "loop", "guard")]
    if kind == "drop" and flat:
        i = rng.choice(flat)
        return steps[:i] + steps[i + 1:]
    if kind == "insert":
        i = rng.randrange(len(steps) + 1)
        new = Step(rng.choice(("use", "write", "write", "fence", "wait", "commit")), rng.randrange(ACC_SETS),
                   div=rng.random() < 0.5)
        if new.kind == "wait":
            new = Step("wait", rng.choice((0, 1)))
        return steps[:i] + [new] + steps[i:]
    if kind == "wrap" and steps:
        i = rng.randrange(len(steps))
        j = rng.randrange(i, min(len(steps), i + 3)) + 1
        if rng.random() < 0.3:
            k = rng.randrange(i, j)
            return steps[:i] + [Step("ifelse", div=rng.random() < 0.5, body=tuple(steps[i:k + 1]),
                                     other=tuple(steps[k + 1:j]))] + steps[j:]
        return steps[:i] + [Step("if", div=rng.random() < 0.5, body=tuple(steps[i:j]))] + steps[j:]
    if kind == "guard" and flat:
        i = rng.choice(flat)
        return steps[:i] + [Step("guard", div=rng.random() < 0.5, body=(steps[i],))] + steps[i + 1:]
    if kind == "wait_n":
        waits = [i for i, s in enumerate(steps) if s.kind == "wait"]
        if waits:
            i = rng.choice(waits)
            return steps[:i] + [Step("wait", rng.choice((0, 1, 2)))] + steps[i + 1:]
    if kind == "swap" and len(flat) >= 2:
        i = rng.choice(flat[:-1])
        if i + 1 < len(steps):
            out = list(steps)
            out[i], out[i + 1] = out[i + 1], out[i]
            return out
    return steps


def program(seed: int, *, p_legal: float = 0.25) -> tuple[Step, ...]:
    rng = random.Random(seed)
    steps = legal(rng)
    if rng.random() >= p_legal:
        for _ in range(rng.choice((1, 1, 2, 3))):
            steps = _mutate(rng, steps)
    return tuple(steps)


def describe(steps: tuple[Step, ...]) -> str:
    out = []
    for s in steps:
        if s.kind in ("if", "guard", "loop"):
            out.append(f"{s.kind}{'[div]' if s.div else ''}({describe(s.body)})")
        elif s.kind == "ifelse":
            out.append(f"ifelse{'[div]' if s.div else ''}({describe(s.body)} | {describe(s.other)})")
        else:
            out.append(f"{s.kind}{s.arg if s.kind in ('wgmma', 'wait', 'use', 'write') else ''}")
    return " ".join(out)
