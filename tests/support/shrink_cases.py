"""Programs, padding and predicates the reducer's tests and ``benchmarks/bench_shrink.py`` share."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from fuzzptx.program import Program
from fuzzptx.reduce import Pass, Predicate
from support.planted import fence_any_path, fragment_rows_swapped, swizzle_off_by_one

HEADER = "// fuzzptx-repro v1\n// LAUNCH: kernel=k\n// BUFFER: out type=f32 count=256 init=random seed=3 output\n"
KERNEL = """.version 8.0
.target sm_90a
.address_size 64

.shared .align 1024 .b8 smem[8192];
{func}
.visible .entry k(.param .u64 out)
{{
\t.reg .b64 %o, %g, %da, %db, %t<4>;
\t.reg .b32 %r<60>;
\t.reg .f32 %f<64>;
\t.reg .pred %p;
\tld.param.u64 %o, [out];
\tcvta.to.global.u64 %g, %o;
\tmov.u32 %r0, smem;
\tcvt.u64.u32 %da, %r0;
\tshr.u64 %da, %da, 4;
\tadd.u64 %t0, %da, 0;
\tmov.b64 %db, %t0;
{body}
\tret;
}}
"""
W64 = "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" + ", ".join(f"%f{i}" for i in range(32)) + "}, %da, %db, 1, 1, 1, 0, 0;"


def program(body: str, func: str = "") -> Program:
    return Program.from_ptx(HEADER + KERNEL.format(body=body, func=func))


def opcodes(p: Program) -> list[str]:
    return [i.opcode for i in p.module.function("k").instructions()]


def copy_kernel() -> Program:
    """A value-level repro as a generator writes it: A and B copied global -> shared (unrolled),
    descriptors computed from the tiles' addresses, all eight accumulators stored (57 instructions)."""
    copies = "".join(f"\tld.global.b32 %r{3 + k}, [%rd4+{512 * k}];\n\tst.shared.b32 [%r2+{512 * k}], %r{3 + k};\n" for k in range(4))
    desc = "".join(f"\tcvt.u64.u32 %rd{d}, %r{r};\n\tshr.u64 %rd{d}, %rd{d}, 4;\n\tand.b64 %rd{d}, %rd{d}, 16383;\n"
                   f"\tor.b64 %rd{d}, %rd{d}, 0xC000001000010000;\n" for d, r in ((6, 1), (7, 7)))
    acc = ", ".join(f"%f{i}" for i in range(8))
    text = """// fuzzptx-repro v1
// LAUNCH: kernel=k grid=1,1,1 block=128,1,1
// BUFFER: a type=f16 count=1024 init=random seed=1
// BUFFER: b type=f16 count=256 init=random seed=2
// BUFFER: d type=f32 count=1024 init=zeros output
.version 8.0
.target sm_90a
.address_size 64

.visible .entry k(.param .u64 a, .param .u64 b, .param .u64 d)
{
\t.reg .b32 %r<12>;
\t.reg .b64 %rd<10>;
\t.reg .f32 %f<8>;
\t.shared .align 1024 .b8 sa[2048];
\t.shared .align 1024 .b8 sb[512];
\tmov.u32 %r0, %tid.x;
""" + "".join(f"\tld.param.u64 %rd{i}, [{p}];\n\tcvta.to.global.u64 %rd{i}, %rd{i};\n" for i, p in enumerate("abd")) + f"""\
\tmul.wide.u32 %rd3, %r0, 4;
\tadd.u64 %rd4, %rd0, %rd3;
\tadd.u64 %rd5, %rd1, %rd3;
\tmov.u32 %r1, sa;
\tmad.lo.u32 %r2, %r0, 4, %r1;
{copies}\tmov.u32 %r7, sb;
\tmad.lo.u32 %r8, %r0, 4, %r7;
\tld.global.b32 %r9, [%rd5];
\tst.shared.b32 [%r8], %r9;
\tfence.proxy.async.shared::cta;
\tbar.sync 0;
{desc}""" + "".join(f"\tmov.f32 %f{i}, 0f00000000;\n" for i in range(8)) + f"""\
\twgmma.fence.sync.aligned;
\twgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {{{acc}}}, %rd6, %rd7, 1, 1, 1, 0, 0;
\twgmma.commit_group.sync.aligned;
\twgmma.wait_group.sync.aligned 0;
\tmul.wide.u32 %rd8, %r0, 32;
\tadd.u64 %rd9, %rd2, %rd8;
""" + "".join(f"\tst.global.f32 [%rd9+{4 * i}], %f{i};\n" for i in range(8)) + "\tret;\n}\n"
    return Program.from_ptx(text)


def reduced(pas: Pass, program: Program, holds: Predicate) -> Program:
    """``program`` after ``pas`` alone, run as the driver runs a pass: the first candidate smaller (by
    the driver's size order) that holds is kept and the pass asked again, to a fixed point."""
    from fuzzptx.reduce.driver import _size

    while True:
        cands = [c for c in pas.candidates(program) if _size(c) < _size(program)]
        hit = next((c for c, ok in zip(cands, holds(cands)) if ok), None) if cands else None
        if hit is None:
            return program
        program = hit


def ptxas_accepts(programs: Sequence[Program]) -> list[bool]:
    """The real ptxas accepts each program (one batch)."""
    from fuzzptx.oracles.ptxas import compile_batch

    return [r.accepted for r in compile_batch([p.to_ptx() for p in programs])]


def every(*tests: Callable[[Program], bool]) -> Predicate:
    """A predicate: each program passes every test."""
    return lambda ps: [all(t(p) for t in tests) for p in ps]


# ------------------------------------------------------------------ planted bugs


def reference_outputs(program) -> tuple | None:
    from fuzzptx.oracles.reference import run_program

    try:
        ref = run_program(program)
    except Exception:
        return None
    if ref.undefined:
        return None
    return tuple(sorted(ref.outputs.items()))


def defined_differ(a: tuple, b: tuple) -> bool:
    """Whether two reference verdicts differ on an element both define: EXACT bits, or SET bounds.
    UNDEF elements are free (a judge comparing with hardware skips them), so a difference
    there shows nothing."""
    from fuzzptx.oracles.reference.values import EXACT, SET, UNDEF

    for (ka, oa), (kb, ob) in zip(a, b):
        if ka != kb or oa.count != ob.count:
            return True
        both = (oa.kind != UNDEF) & (ob.kind != UNDEF)
        if (oa.kind[both] != ob.kind[both]).any():
            return True
        eb = len(oa.data) // max(oa.count, 1)
        exact = both & (oa.kind == EXACT)
        da = np.frombuffer(oa.data, np.uint8).reshape(oa.count, eb)[exact]
        if (da != np.frombuffer(ob.data, np.uint8).reshape(ob.count, eb)[exact]).any():
            return True
        s = both & (oa.kind == SET)
        for x, y in ((oa.lo, ob.lo), (oa.hi, ob.hi), (oa.flags, ob.flags)):
            if not np.array_equal(x[s], y[s], equal_nan=True):
                return True
    return False


def fence_findings(program) -> tuple | None:
    from fuzzptx.oracles.checker import check_module

    try:
        return tuple(sorted(f.line or 0 for f in check_module(program.module, layers=("spec",)) if f.rule == "spec.fence.missing"))
    except Exception:
        return None


def differs(plant, observe, changed=lambda a, b: a != b, accepted: bool = False):
    """A shrink predicate: the planted judge and the original say different things (both ran);
    with ``accepted``, ptxas must also accept the program (as a hardware comparison needs).
    Judges in order and stops at the first program that holds (the reducer takes that one)."""

    def holds(programs):
        out = [False] * len(programs)
        for i, p in enumerate(programs):
            a = observe(p)
            if a is None:
                continue
            with plant():
                b = observe(p)
            if b is None or not changed(a, b):
                continue
            if accepted:
                from fuzzptx.oracles.ptxas import compile_ptx

                if not compile_ptx(p.to_ptx()).accepted:
                    continue
            out[i] = True
            break
        return out

    return holds


PLANTS = {  # name: (plant, observe, how two observations differ, ptxas must accept)
    "swizzle-off-by-one-bit": (swizzle_off_by_one, reference_outputs, defined_differ, True),
    "fragment-rows-swapped": (fragment_rows_swapped, reference_outputs, defined_differ, True),
    "fence-rule-any-path": (fence_any_path, fence_findings, lambda a, b: a != b, False),
}


def plant_predicate(name: str):
    plant, observe, changed, accepted = PLANTS[name]
    return differs(plant, observe, changed, accepted)



# ------------------------------------------------------------------ padding


PAD_DECLS = """
\t.reg .b32 %pad<12>;
\t.reg .pred %padp;
\t.shared .align 4 .b32 padsm[4];
"""
PAD_LOOP = """
\tmov.u32 %pad0, 0;
\tmov.u32 %pad1, 3;
PADLOOP:
\tadd.u32 %pad0, %pad0, 1;
\tmul.lo.u32 %pad1, %pad1, 7;
\txor.b32 %pad1, %pad1, %pad0;
\tsetp.lt.u32 %padp, %pad0, 4;
\t@%padp bra PADLOOP;
\tst.shared.u32 [padsm], %pad1;
"""
PAD_DEAD = "".join(f"\tadd.u32 %pad{2 + i % 8}, %pad{2 + (i + 3) % 8}, {i + 5};\n" for i in range(10))
PAD_CALL = "\tcall (%pad10), padf, (%pad1);\n\tst.shared.u32 [padsm+4], %pad10;\n"
PAD_FUNC = """
.func (.reg .b32 r) padf(.reg .b32 x)
{
\t.reg .b32 t<3>;
\tadd.u32 t0, x, 1;
\tmul.lo.u32 t1, t0, t0;
\tshl.b32 t2, t1, 2;
\tor.b32 r, t2, 1;
\tret;
}
"""
PAD_STAGE = """
\t.reg .f32 %padf<4>;
\t.reg .b64 %paddesc;
\tmov.b64 %paddesc, 0;
\tmov.f32 %padf0, 0f00000000;
\tmov.f32 %padf1, 0f00000000;
\tmov.f32 %padf2, 0f00000000;
\tmov.f32 %padf3, 0f00000000;
\twgmma.fence.sync.aligned;
\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%padf0, %padf1, %padf2, %padf3}, %paddesc, %paddesc, 0, 1, 1, 0, 0;
\twgmma.commit_group.sync.aligned;
\twgmma.wait_group.sync.aligned 0;
\tst.shared.f32 [padsm+8], %padf0;
"""


def pad(text: str, parts: tuple[str, ...]) -> str:
    """The repro text with padding inserted at the top of the kernel body (and a .func before it)."""
    head, sep, body = text.partition("\n{\n")
    kernel_at = head.rfind(".visible .entry")
    if "call" in parts:
        head = head[:kernel_at] + PAD_FUNC.lstrip() + "\n" + head[kernel_at:]
    lines = body.split("\n")
    k = 0
    while k < len(lines) and lines[k].strip().startswith((".reg", ".shared", ".local")):
        k += 1
    decls = PAD_DECLS.strip("\n")
    code = ""
    if "stage" in parts:
        stage = PAD_STAGE.strip("\n").split("\n")
        decls += "\n" + "\n".join(stage[:2])
        code += "\n".join(stage[2:]) + "\n"
    if "loop" in parts:
        code += PAD_LOOP.strip("\n") + "\n"
    if "dead" in parts:
        code += PAD_DEAD
    if "call" in parts:
        code += PAD_CALL
    new_body = lines[:k] + decls.split("\n") + code.rstrip("\n").split("\n") + lines[k:]
    return head + sep + "\n".join(new_body)


def minimal(pick: Callable) -> Program:
    """The catalogue's minimal kernel of the first form ``pick`` accepts, as a runnable program."""
    from fuzzptx import isa
    from fuzzptx.kernels import minimal_kernel
    from fuzzptx.program import Buffer, Launch

    form = next(f for f in isa.forms() if pick(f))
    return Program(minimal_kernel(form), Launch("k", (1, 1, 1), (128, 1, 1)), (Buffer("out", "u32", 64, "zeros", 0, True),))


def has_opcode(*words: str) -> Callable[[Program], bool]:
    """A test: some instruction's opcode contains every word."""
    return lambda p: any(all(w in i.opcode for w in words) for f in p.module.functions() for i in f.instructions())
