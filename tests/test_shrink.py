"""The PTX-level reducer on real ptxas: small programs, each test a few seconds."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fuzzptx import shrink as S
from fuzzptx.errors import FuzzptxError
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Reg


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

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


def test_no_fence_shrinks_to_the_wgmma_and_narrows_n():
    """C7519 (no fence): loop, dead chain, wide N and the call all go; N narrows to 8."""
    body = "\n".join([
        "\tmov.u32 %r1, 0;", "LOOP:", "\tadd.u32 %r1, %r1, 1;", "\tsetp.lt.u32 %p, %r1, 4;", "\t@%p bra LOOP;",
        *(f"\tadd.u32 %r{2 + i}, %r{1 + i}, {i};" for i in range(8)),
        "\tst.global.u32 [%g+512], %r9;",
        "\t" + W64, "\twgmma.commit_group.sync.aligned;", "\twgmma.wait_group.sync.aligned 0;",
        "\tst.global.f32 [%g], %f0;",
    ])
    p = program(body)
    c7519 = S.signature_predicate("ptxas:C7519")

    def keep(ps):  # a lone commit draws C7519 too (corpus/notes_lone_commit_injects.ptx): keep the wgmma
        return [ok and any(o.startswith("wgmma.mma_async") for o in opcodes(q)) for q, ok in zip(ps, c7519(ps))]

    res = S.shrink(p, keep, budget_s=60)
    ops = opcodes(res.program)
    assert res.after <= 4 < res.before, ops
    mma = [o for o in ops if o.startswith("wgmma.mma_async")]
    assert mma == ["wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"], ops
    assert "bra" not in " ".join(ops) and "wgmma.fence.sync.aligned" not in ops
    assert keep([res.program]) == [True]
    decl = [s for s in res.program.module.function("k").body if getattr(s, "names", None) == ("%f",)]
    assert decl and decl[0].count <= 4  # %f<64> cut to the accumulators left


def test_func_body_and_call_reduced_while_the_error_stays():
    """ptxas:error on a bad imm-scale-a: the .func, its call and the rest go; the bad wgmma stays."""
    func = ".func (.reg .b32 r) side(.reg .b32 x)\n{\n\tadd.u32 r, x, 1;\n\tmul.lo.u32 r, r, 3;\n\tret;\n}\n"
    body = "\n".join(["\tcall (%r5), side, (%r1);", "\tst.global.u32 [%g+4], %r5;", "\twgmma.fence.sync.aligned;",
                      "\t" + W64.replace("1, 1, 1, 0, 0;", "1, 2, 1, 0, 0;"), "\twgmma.commit_group.sync.aligned;",
                      "\twgmma.wait_group.sync.aligned 0;", "\tst.global.f32 [%g], %f0;"])
    p = program(body, func)
    keep = S.signature_predicate("ptxas:error")
    assert keep([p]) == [True]
    res = S.shrink(p, keep, budget_s=60)
    assert res.after <= 2, opcodes(res.program)
    assert not [f for f in res.program.module.functions() if f.kind == "func"]
    (mma,) = [i for i in res.program.module.function("k").instructions() if i.opcode.startswith("wgmma.mma_async")]
    assert mma.operands[4].value not in (1, -1)  # imm-scale-a: still illegal (the simplify pass may make it 0)


def test_passes_give_smaller_candidates():
    """Each new pass proposes something on a program made for it."""
    body = "\n".join(["\tmov.u32 %r1, 0;", "L1:", "\tadd.u32 %r1, %r1, 1;", "\tsetp.lt.u32 %p, %r1, 4;", "\t@%p bra L1;",
                      "\tadd.u32 %r2, %r1, 7;", "\tmov.u32 %r3, %r2;", "\tst.global.u32 [%g], %r3;"])
    p = program(body)
    sizes = S._size(p)
    for make in (S._candidates_blocks, S._candidates_bypass, S._candidates_copyprop, S._candidates_counts):
        cands = make(p)
        assert cands and all(S._size(c) < sizes for c in cands), make.__name__
    loopless = [c for c in S._candidates_blocks(p) if "bra" not in " ".join(opcodes(c))]
    assert any(opcodes(c).count("add.u32") == 1 and "setp.lt.u32" not in opcodes(c) for c in loopless)  # the loop alone
    inlined = S.inline_small_data(S._candidates_counts(p)[0])
    assert inlined.buffers[0].init == "zeros" or inlined.buffers[0].output


def test_signature_must_hold_on_the_input():
    p = program("\twgmma.fence.sync.aligned;")
    with pytest.raises(FuzzptxError):
        S.shrink(p, S.signature_predicate("ptxas:C7519"), budget_s=5)


def test_cli_shrinks_a_padded_corpus_repro_back(tmp_path):
    """`fuzzptx shrink FILE --keep SIG -o OUT` on a corpus file padded with a loop, dead code and a call."""
    from bench_shrink import pad

    from fuzzptx.engine.replay import main_replay

    src = ROOT / "corpus" / "notes_lone_commit_injects.ptx"
    base = Program.from_file(src)
    padded = tmp_path / "padded.ptx"
    padded.write_text(pad(src.read_text(), ("loop", "dead", "call")))
    assert S.instruction_count(Program.from_file(padded)) >= S.instruction_count(base) + 15
    out = tmp_path / "out.ptx"
    assert S.main_shrink([str(padded), "--keep", base.signature, "-o", str(out), "--budget", "60"]) == 0
    shrunk = Program.from_file(out)
    assert shrunk.signature == base.signature
    assert S.instruction_count(shrunk) <= S.instruction_count(base)
    assert main_replay([str(out), "--no-hardware"]) == 0


def copy_kernel() -> Program:
    """A value-level repro as a generator writes it: A and B copied global -> shared (unrolled),
    descriptors computed from the tiles' addresses, all eight accumulators stored (57 instructions)."""
    copies = "".join(f"\tld.global.b32 %r{3 + k}, [%rd4+{512 * k}];\n\tst.shared.b32 [%r2+{512 * k}], %r{3 + k};\n" for k in range(4))
    desc = "".join(f"\tcvt.u64.u32 %rd{d}, %r{r};\n\tshr.u64 %rd{d}, %rd{d}, 4;\n\tand.b64 %rd{d}, %rd{d}, 16383;\n"
                   f"\tor.b64 %rd{d}, %rd{d}, 0xC000001000010000;\n" for d, r in ((6, 1), (7, 7)))
    acc = ", ".join(f"%f{i}" for i in range(8))
    text = f"""// fuzzptx-repro v1
// LAUNCH: kernel=k grid=1,1,1 block=128,1,1
// BUFFER: a type=f16 count=1024 init=random seed=1
// BUFFER: b type=f16 count=256 init=random seed=2
// BUFFER: d type=f32 count=1024 init=zeros output
.version 8.0
.target sm_90a
.address_size 64

.visible .entry k(.param .u64 a, .param .u64 b, .param .u64 d)
{{
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


def test_value_level_plant_shrinks_to_eleven_instructions():
    """The reference with its swizzle XOR one address bit off (benchmarks/bench_shrink.py's plant):
    the copies, descriptor arithmetic and stores shrink away until at most 11 instructions remain,
    ptxas still accepts the program and the plant still changes an element the reference defines.
    (It reached 10 while a store every thread made to one address counted as defined; since the
    reference leaves such a racing element undefined, each thread needs its own address: mad.wide.)"""
    from bench_shrink import plant_predicate

    holds = plant_predicate("swizzle-off-by-one-bit")
    p = copy_kernel()
    assert S.instruction_count(p) == 57 and holds([p]) == [True]
    res = S.shrink(p, holds, budget_s=120)
    ops = opcodes(res.program)
    assert res.after <= 11, ops
    assert holds([res.program]) == [True]
    assert "ld.global.b32" not in ops and sum(o.startswith("wgmma.mma_async") for o in ops) == 1, ops


def test_constants_fold_and_mul_add_fuse():
    """A descriptor chain on a shared address made 0 folds to one move; mul.wide + add fuse into mad.wide."""
    from fuzzptx.shrink_values import _candidates_fuse, _candidates_symbols, fold_constants

    p = copy_kernel()
    zeroed = _candidates_symbols(p)
    assert len(zeroed) == 2
    folded = fold_constants(zeroed[0])
    descs = [i for i in folded.module.function("k").instructions() if i.operands and i.operands[0] == Reg("%rd6")]
    assert [str(i.operands[1]) for i in descs] == ["0xc000001000010000"] and descs[0].opcode == "mov.b64"
    fused = [opcodes(c) for c in _candidates_fuse(p)]
    assert any("mad.wide.u32" in ops and ops.count("add.u64") == 2 and ops.count("mul.wide.u32") == 1 for ops in fused)


def test_metamorphic_signature_shrinks_through_the_metamorphic_judge():
    """``--keep reference:pipelined!=planted|...`` goes to fuzzptx.judges.metamorphic, not the differ."""
    from fuzzptx.judges import metamorphic
    from fuzzptx.shrink import signature_predicate

    sig = "reference:pipelined!=planted|mismatch"
    assert metamorphic.is_metamorphic(sig)
    holds = signature_predicate(sig)
    assert callable(holds)
    from fuzzptx.errors import FuzzptxError
    from fuzzptx.oracles.hardware import gpu_available

    if gpu_available():  # no GPU here: the hardware form says so in one line, never a traceback
        with pytest.raises(FuzzptxError, match="needs a GPU"):
            signature_predicate("hardware:O3!=O0|mismatch|wgmma.f32.f16")
