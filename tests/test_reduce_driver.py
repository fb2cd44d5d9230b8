"""The reducer's driver on real ptxas: ddmin deletion, passes in order, final tidy-up, per-pass
statistics, the predicates and the ``fuzzptx shrink`` command; each test a few seconds."""
from __future__ import annotations

from pathlib import Path

import pytest

from fuzzptx import reduce as S
from fuzzptx.engine.predicate import signature_predicate
from fuzzptx.errors import FuzzptxError
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Reg
from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Blocks, Bypass, CopyPropagate, Counts
from support.shrink_cases import W64, copy_kernel, opcodes, pad, plant_predicate, program

ROOT = Path(__file__).resolve().parent.parent

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
    c7519 = signature_predicate("ptxas:C7519")

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
    keep = signature_predicate("ptxas:error")
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
    sizes = _size(p)
    for pas in (Blocks(), Bypass(), CopyPropagate(), Counts()):
        cands = pas.candidates(p)
        assert cands and all(_size(c) < sizes for c in cands), pas.name
    loopless = [c for c in Blocks().candidates(p) if "bra" not in " ".join(opcodes(c))]
    assert any(opcodes(c).count("add.u32") == 1 and "setp.lt.u32" not in opcodes(c) for c in loopless)  # the loop alone
    inlined = S.inline_small_data(Counts().candidates(p)[0])
    assert inlined.buffers[0].init == "zeros" or inlined.buffers[0].output


def test_signature_must_hold_on_the_input():
    p = program("\twgmma.fence.sync.aligned;")
    with pytest.raises(FuzzptxError):
        S.shrink(p, signature_predicate("ptxas:C7519"), budget_s=5)


def test_cli_shrinks_a_padded_corpus_repro_back(tmp_path):
    """`fuzzptx shrink FILE --keep SIG -o OUT` on a corpus file padded with a loop, dead code and a call."""
    from fuzzptx.engine.replay import main_replay
    from fuzzptx.triage.shrink_command import main_shrink

    src = ROOT / "corpus" / "notes_lone_commit_injects.ptx"
    base = Program.from_file(src)
    padded = tmp_path / "padded.ptx"
    padded.write_text(pad(src.read_text(), ("loop", "dead", "call")))
    assert S.instruction_count(Program.from_file(padded)) >= S.instruction_count(base) + 15
    out = tmp_path / "out.ptx"
    assert main_shrink([str(padded), "--keep", base.signature, "-o", str(out), "--budget", "60"]) == 0
    shrunk = Program.from_file(out)
    assert shrunk.signature == base.signature
    assert S.instruction_count(shrunk) <= S.instruction_count(base)
    assert main_replay([str(out), "--no-hardware"]) == 0


def test_value_level_plant_shrinks_to_eleven_instructions():
    """The reference with its swizzle XOR one address bit off (benchmarks/bench_shrink.py's plant):
    the copies, descriptor arithmetic and stores shrink away until at most 11 instructions remain,
    ptxas still accepts the program and the plant still changes an element the reference defines.
    (It reached 10 while a store every thread made to one address counted as defined; since the
    reference leaves such a racing element undefined, each thread needs its own address: mad.wide.)"""
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
    from fuzzptx.reduce.passes import Fuse, Symbols
    from fuzzptx.reduce.passes.values import fold_constants

    p = copy_kernel()
    zeroed = Symbols().candidates(p)
    assert len(zeroed) == 2
    folded = fold_constants(zeroed[0])
    descs = [i for i in folded.module.function("k").instructions() if i.operands and i.operands[0] == Reg("%rd6")]
    assert [str(i.operands[1]) for i in descs] == ["0xc000001000010000"] and descs[0].opcode == "mov.b64"
    fused = [opcodes(c) for c in Fuse().candidates(p)]
    assert any("mad.wide.u32" in ops and ops.count("add.u64") == 2 and ops.count("mul.wide.u32") == 1 for ops in fused)


def test_metamorphic_signature_shrinks_through_the_metamorphic_judge():
    """``--keep reference:pipelined!=planted|...`` goes to fuzzptx.judges.metamorphic, not the differ."""
    from fuzzptx.judges import metamorphic
    from fuzzptx.engine.predicate import signature_predicate

    sig = "reference:pipelined!=planted|mismatch"
    assert metamorphic.is_metamorphic(sig)
    holds = signature_predicate(sig)
    assert callable(holds)
    from fuzzptx.errors import FuzzptxError
    from fuzzptx.oracles.hardware import gpu_available

    if gpu_available():  # no GPU here: the hardware form says so in one line, never a traceback
        with pytest.raises(FuzzptxError, match="needs a GPU"):
            signature_predicate("hardware:O3!=O0|mismatch|wgmma.f32.f16")


def test_pass_order_is_one_tuple_and_statistics_follow_it():
    """Every pass of ``PASSES`` (and the driver's steps) reports what it did; the counts add up."""
    body = "\n".join(["\tmov.u32 %r1, 0;", "L1:", "\tadd.u32 %r1, %r1, 1;", "\tsetp.lt.u32 %p, %r1, 4;", "\t@%p bra L1;",
                      "\tadd.u32 %r2, %r1, 7;", "\tmov.u32 %r3, %r2;", "\tst.global.u32 [%g], %r3;", "\twgmma.fence.sync.aligned;"])
    p = program(body)
    keep = lambda ps: [any(o == "wgmma.fence.sync.aligned" for o in opcodes(q)) for q in ps]
    res = S.shrink(p, keep, budget_s=60)
    names = [s.name for s in res.passes]
    pre = [x.name for x in S.PRE]
    assert names[:len(pre) + 2] == ["dead code", *pre, "delete"] and names[-2:] == ["cleanup", "inline"]
    assert [n for n in names if n not in ("dead code", "delete", "cleanup", "inline")] == list(dict.fromkeys(x.name for x in S.PRE + S.PASSES))
    assert sum(s.removed for s in res.passes) == res.before - res.after
    assert sum(s.tried for s in res.passes if s.name not in ("cleanup", "inline")) == res.evaluations - 1
    assert all(s.kept <= s.tried for s in res.passes) and all(s.seconds >= 0 for s in res.passes)
    assert opcodes(res.program) == ["wgmma.fence.sync.aligned"]


def test_the_reducer_never_imports_the_corpus():
    """Imports run one way: triage (the corpus, the shrink command) above the reducer."""
    import subprocess
    import sys

    code = "import sys, fuzzptx.reduce; print(any(m.startswith('fuzzptx.triage') for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
