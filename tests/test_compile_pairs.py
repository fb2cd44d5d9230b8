"""Compile pairs (``fuzzptx.judges.compile_pairs`` + ``metamorphic``): real ptxas builds every
side; planted 'compilers' that break under one option, on one input set, or from run to run must
come out as findings with the documented signatures; the reference is not needed."""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, replace

import numpy as np
import pytest

from fuzzptx import isa
from fuzzptx.builders import wgmma_program
from fuzzptx.judges import compile_pairs as CP
from fuzzptx.judges import metamorphic as M
from fuzzptx.oracles import elf
from fuzzptx.oracles.ptxas import PINNED_VERSION, compile_ptx, find_ptxas
from fuzzptx.program import Program

SCALAR = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 x, .param .u64 y)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [y];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.u64 %rd4, %rd1, %rd3;
    ld.global.u32 %r2, [%rd4];
    mul.lo.u32 %r3, %r2, 2654435761;
    shr.u32 %r4, %r3, 7;
    xor.b32 %r5, %r4, %r2;
    add.u64 %rd5, %rd2, %rd3;
    st.global.u32 [%rd5], %r5;
    ret;
}
"""


def scalar() -> Program:
    p = Program.from_ptx(SCALAR, "scalar.ptx")
    return replace(p, buffers=tuple(replace(b, init="random", seed=5) if b.name == "x" else replace(b, init="zeros")
                                    for b in p.buffers))


def chained() -> Program:
    f = next(f for f in isa.forms("wgmma") if f.key == "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16|a=desc")
    return wgmma_program(f, init="small_int", seed=4, k_steps=3)


@dataclass
class WrongUnder:
    """A 'compiler' that is wrong (flips bit 0 of the first output word) under one ptxas option."""

    option: str
    name: str = "gpu"
    deterministic: bool = True

    def run(self, program, build=CP.BASE):
        o = M.ReferenceJudge().run(program, build)
        if self.option in build.options and not o.fault:
            out = program.outputs()[0].name
            data = bytearray(o.outputs[out])
            data[0] ^= 1
            o = M.Outcome({**o.outputs, out: bytes(data)})
        return o


def test_every_compile_pair_is_a_build_real_ptxas_accepts():
    """The table's options are real ptxas options: every build of a wgmma and a scalar program assembles."""
    for p in (chained(), scalar()):
        keys = [(p.to_ptx(), row.build) for row in CP.COMPILE_PAIRS]
        built = M.compile_builds(keys)
        bad = {str(b): r.stderr[:200] for (_, b), r in built.items() if not r.accepted}
        assert not bad, bad


def test_register_count_read_from_the_cubin_is_what_ptxas_prints():
    text = chained().to_ptx()
    r = compile_ptx(text, want_cubin=True)
    got = elf.registers(r.cubin)[r.kernel(chained().launch.kernel)]
    proc = subprocess.run([str(find_ptxas()), "-arch=sm_90a", "-v", "-o", "/dev/null", "-"], input=text,
                          capture_output=True, text=True)
    printed = int(re.search(r"Used (\d+) registers", proc.stderr).group(1))
    assert got == printed


def test_maxrreg_pair_caps_below_the_base_registers_and_a_too_low_cap_is_not_a_finding():
    p = chained()
    prepared = M.prepare_pairs(p, pairs=(CP.MAXRREG,))
    assert isinstance(prepared, M.PreparedPairs)
    prepared.compile()
    regs = elf.registers(prepared.built[(p.to_ptx(), CP.BASE)].cubin)[p.launch.kernel]
    (v,) = [v for v in prepared.variants if v.right.name == CP.MAXRREG]
    assert v.right.build == CP.maxrreg_build(regs) and int(v.right.build.options[1]) < regs
    rejected = M.Outcome(fault="ptxas -O3 --maxrregcount 30 rejected: (C7602) Insufficient registers (30)", rejected=True)
    assert M._not_applicable(v.right, rejected)
    assert CP.maxrreg_build(CP.MAXRREG_FLOOR) is None


@pytest.mark.parametrize("option,name", [("--dont-merge-basicblocks", "nomerge"), ("-lineinfo", "lineinfo"),
                                         ("--register-usage-level", "rul0")])
def test_a_compiler_wrong_under_one_option_is_caught_by_its_pair(option, name):
    p = scalar()
    r = M.check_program(p, WrongUnder(option), pairs=CP.REPLAY_DEFAULT)
    sigs = [f.signature for _, f in r.findings]
    assert f"gpu:O3!={name}|mismatch|" in [s.rsplit("|", 1)[0] + "|" for s in sigs], sigs
    assert all(M.is_metamorphic(s) for s in sigs)
    assert M.pairs_of(sigs[0])[0] in ((name,), ("rul0",), ("rul10",))


def test_pairs_run_where_the_reference_cannot_and_leave_out_the_transforms():
    """A program outside the reference's subset still takes part (every byte compared); the
    transforms, which need the reference's mask, do not."""
    p = scalar()
    calls = []

    def refuses(*a, **k):
        calls.append(1)
        raise M.Unsupported("unsupported: frobnicate.b32")

    el = M.pair_eligibility(p, reference=M.Unsupported("unsupported: frobnicate.b32"))
    assert el.ok and el.defined is None and "frobnicate" in el.note
    prepared = M.prepare_pairs(chained(), reference=M.Unsupported("unsupported: x"), pairs=CP.REPLAY_DEFAULT)
    assert {v.relation for v in prepared.variants} <= {"opt-level", "options", "release"}
    assert prepared.note == "Unsupported: unsupported: x"


def test_a_program_the_checker_calls_undefined_takes_no_pair():
    p = chained()
    fn = p.module.function(p.launch.kernel)
    body = tuple(s for s in fn.body if not (hasattr(s, "opcode") and s.opcode.startswith("wgmma.wait_group")))
    bad = replace(p, module=replace(p.module, items=tuple(replace(fn, body=body) if i is fn else i for i in p.module.items)))
    r = M.prepare_pairs(bad)
    assert isinstance(r, M.Checked) and r.skipped.startswith("checker:")


def test_nondeterminism_is_named_before_any_pair_is_compared():
    @dataclass
    class Racy:
        name: str = "hardware"
        deterministic: bool = False
        calls: int = 0

        def run(self, program, build=CP.BASE, scrub=None):
            self.calls += 1
            return M.Outcome({b.name: self.calls.to_bytes(4, "little") * b.count for b in program.outputs()})

    prepared = M.prepare_pairs(scalar(), pairs=("O0", "O1"))
    checked = prepared.judge(Racy(), inputs=3)
    assert [f.signature for _, f in checked.findings] == ["hardware:nondeterministic|O3|other"]


def test_each_pair_runs_on_several_input_sets_and_names_the_one_that_differs():
    @dataclass
    class WrongOnSecondInputAtO1:
        name: str = "gpu"
        deterministic: bool = True

        def run(self, program, build=CP.BASE):
            o = M.ReferenceJudge().run(program, build)
            if build.opt_level == 1 and program.buffers[0].seed != 5 and not o.fault:
                out = program.outputs()[0].name
                o = M.Outcome({**o.outputs, out: b"\xff" + o.outputs[out][1:]})
            return o

    p = scalar()
    assert M.reseeded(p, 1).buffer("x").seed != p.buffer("x").seed
    assert M.reseeded(p, 1).buffer("y") == p.buffer("y")  # zeros stay zeros
    prepared = M.prepare_pairs(p, pairs=("O0", "O1"))
    assert not prepared.judge(WrongOnSecondInputAtO1(), inputs=1).findings
    found = prepared.judge(WrongOnSecondInputAtO1(), inputs=3).findings
    assert len(found) == 1 and found[0][1].signature.startswith("gpu:O3!=O1|mismatch|")
    assert dict(found[0][1].evidence)["input_set"] == 1


def test_the_release_pair_builds_with_that_release_and_names_both():
    """With the pinned release as 'the other release' (always here, no network) the mechanism runs
    end to end: its own ptxas binary, the signature names both releases."""
    p = scalar()
    (v,) = M.metamorphic_pairs(p, pairs=(CP.RELEASE,), release=PINNED_VERSION)
    assert v.pair == f"{PINNED_VERSION}!={PINNED_VERSION}" and v.right.build.release == PINNED_VERSION
    built = M.compile_builds([(p.to_ptx(), v.right.build)])
    assert all(r.accepted for r in built.values())
    assert M.is_metamorphic("hardware:13.0.88!=13.5.37|mismatch|scalar")
    assert M.pairs_of("hardware:13.0.88!=13.5.37|mismatch|scalar") == ((CP.RELEASE,), "13.5.37")
    missing = M.compile_builds([(p.to_ptx(), CP.Build(3, (), "99.9.99"))])
    (r,) = missing.values()
    assert not r.accepted and "not cached" in r.stderr


def test_float_contraction_limits_the_comparison_to_integer_outputs():
    """Contractible ops of a type the reference does not model both ways (packed halves here)
    leave the float outputs out of the comparison."""
    text = SCALAR.replace(".reg .b32 %r<8>;", ".reg .b32 %r<8>;\n    .reg .b32 %h<4>;").replace(
        "xor.b32 %r5, %r4, %r2;", "xor.b32 %r5, %r4, %r2;\n    mov.b32 %h1, %r2;\n    mul.f16x2 %h2, %h1, %h1;\n"
        "    add.f16x2 %h3, %h2, %h1;")
    el = M.pair_eligibility(Program.from_ptx(text, "contract.ptx"))
    assert el.ok and el.integer_only
    p = chained()  # its output d is .f32: left out of an integer-only comparison, compared otherwise
    n = p.buffer("d").count
    left, right = np.zeros(n, np.float32), np.ones(n, np.float32)
    assert M.first_difference(p, {"d": left.tobytes()}, {"d": right.tobytes()}, integer_only=True) is None
    assert M.first_difference(p, {"d": left.tobytes()}, {"d": right.tobytes()}).count == n


def _contracting(ztype: str = "f32") -> Program:
    """SCALAR with a mul.f32 feeding add.f32 stored to a third buffer ``z``."""
    text = SCALAR.replace("(.param .u64 x, .param .u64 y)", "(.param .u64 x, .param .u64 y, .param .u64 z)").replace(
        ".reg .b32 %r<8>;", ".reg .b32 %r<8>;\n    .reg .f32 %f<8>;\n    .reg .b64 %rz;").replace(
        "    ret;", "    ld.param.u64 %rz, [z];\n    cvta.to.global.u64 %rz, %rz;\n    add.u64 %rz, %rz, %rd3;\n"
        "    cvt.rn.f32.u32 %f1, %r2;\n    mul.f32 %f2, %f1, 0f3DCCCCCD;\n    add.f32 %f3, %f2, 0f3F800000;\n"
        "    cvt.rn.f32.u32 %f4, %r1;\n    add.f32 %f5, %f3, %f4;\n    st.global.f32 [%rz], %f5;\n    ret;")
    p = Program.from_ptx(text, "contract_f32.ptx")
    return replace(p, buffers=tuple(replace(b, init="random", seed=5) if b.name == "x" else
                                    replace(b, type=ztype) if b.name == "z" else b for b in p.buffers))


@pytest.mark.parametrize("ztype", ["f32", "u32"])
def test_modelled_float_contraction_compares_the_elements_the_reference_gives_exactly(ztype):
    """mul.f32 feeding add.f32: the reference allows the fused and the unfused result (a bound where
    they differ), so a float output takes part in the pairs on the elements it gives exactly
    instead of being left out; so does a float result stored through an integer-typed buffer (a
    campaign's construct moves float bits to .b32 and stores them as u32).  The 85 compiler-made kernels of tests/data showed no such element
    differing between -O3 and -O0 on an H200 (tests/hw_records/kernels_h200.json)."""
    p = _contracting(ztype)
    el = M.pair_eligibility(p)
    assert el.ok and not el.integer_only
    z = el.defined["z"]
    assert 0 < int(z.sum()) < z.size  # exact where fusing cannot change the result, bounded elsewhere
    left = np.zeros(z.size, np.float32)
    right = left.copy()
    right[~z] = 1.0  # a build that differs only where the reference allows either result
    assert M.first_difference(p, {"z": left.tobytes()}, {"z": right.tobytes()}, el.defined) is None
    right[np.flatnonzero(z)[0]] = 1.0
    assert M.first_difference(p, {"z": left.tobytes()}, {"z": right.tobytes()}, el.defined) is not None


def test_eligibility_reads_the_reference_run_the_campaign_took_in_the_same_numerics(monkeypatch):
    """A campaign's reference judge runs every program in its numerics (hardware); the pairs'
    eligibility of a program with contractible f32 arithmetic wants that very run and reads it
    instead of running the reference again.  A run in other numerics is not read: an integer
    kernel's eligibility wants the spec's."""
    from fuzzptx.judges.base import Context, Verdicts
    from fuzzptx.judges.builtin import ReferenceJudge
    from fuzzptx.judges.differ import as_judged

    p = _contracting()
    fresh = M.pair_eligibility(p)
    judged, text = as_judged(p)
    verdict = ReferenceJudge().judge(judged, Context(text, Verdicts(), numerics="hardware"))
    assert verdict.outcome("hardware") is verdict.result and verdict.outcome("spec") is None
    ran = []
    real = M._reference_run
    monkeypatch.setattr(M, "_reference_run", lambda program, mode: ran.append(mode) or real(program, mode))
    reused = M.pair_eligibility(p, taken=verdict.outcome)
    assert ran == []
    assert (reused.reason, reused.integer_only) == (fresh.reason, fresh.integer_only)
    assert all(np.array_equal(reused.defined[k], fresh.defined[k]) for k in fresh.defined)
    s = scalar()
    sj, st = as_judged(s)
    hw = ReferenceJudge().judge(sj, Context(st, Verdicts(), numerics="hardware"))
    assert M.pair_eligibility(s, taken=hw.outcome).ok and ran == ["spec"]


def test_pairs_names_parse_with_a_one_line_error():
    assert CP.parse_pairs("O0,maxrreg") == ("O0", "maxrreg")
    assert CP.parse_pairs("default") == CP.CAMPAIGN_DEFAULT
    assert CP.parse_pairs("none") == ()
    with pytest.raises(CP.PairsError, match="unknown pair 'O7'"):
        CP.parse_pairs("O0,O7")


@pytest.mark.gpu
def test_scrub_fills_shared_memory_that_a_kernel_then_reads_unwritten():
    """The determinism check's scrub reaches a later kernel: one that stores a word of shared
    memory it never wrote gives the scrub pattern (on the H100)."""
    from fuzzptx.oracles.hardware import HardwareWorker

    text = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 y)
{
    .shared .align 4 .b32 s[32];
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [y];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, s;
    ld.volatile.shared.u32 %r3, [%r2];
    mul.wide.u32 %rd2, %r1, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
}
"""
    p = Program.from_ptx(text, "unwritten.ptx")
    with HardwareWorker() as w:
        seen = []
        for pattern in M.SCRUB_PATTERNS:
            assert w.scrub(pattern) is None
            seen.append(np.frombuffer(w.run(p).outputs["y"], np.uint32)[0])
    assert seen[0] != seen[1]


def test_the_suite_files_take_part_and_name_their_pair():
    """tests/data/pairs/: each file is one the checker finds defined, names a compile pair in its
    SIGNATURE, and both builds of that pair assemble (the H100 record says the GPU flags them)."""
    from pathlib import Path

    files = sorted((Path(__file__).parent / "data" / "pairs").glob("*.ptx"))
    assert len(files) >= 20
    keys = []
    for f in files:
        p = Program.from_file(f)
        assert p.signature and M.is_metamorphic(p.signature), f.name
        names, release = M.pairs_of(p.signature)
        prepared = M.prepare_pairs(p, pairs=names, release=release)
        assert isinstance(prepared, M.PreparedPairs), (f.name, prepared)
        keys += [(s.program.to_ptx(), s.build) for v in prepared.variants for s in (v.left, v.right)]
    built = M.compile_builds(list(dict.fromkeys(keys)))
    assert all(r.accepted for r in built.values())


def test_a_campaign_gives_a_share_of_programs_one_pair_drawn_by_weight():
    picks = [CP.choose(CP.CAMPAIGN_DEFAULT, key, 0.25) for key in range(4000)]
    got = [p for p in picks if p]
    assert all(len(p) == 1 for p in got) and 0.22 < len(got) / len(picks) < 0.28
    from collections import Counter

    c = Counter(p[0] for p in got)
    assert c["O0"] > 2 * c["O1"] and c[CP.RELEASE] > 2 * c[CP.MAXRREG]
    assert CP.choose(CP.CAMPAIGN_DEFAULT, 7, 0.25) == CP.choose(CP.CAMPAIGN_DEFAULT, 7, 0.25)
    assert CP.choose(("O0", "serialise"), 1, 0.0) == ("serialise",)
    assert CP.choose(("O0",), 1, 1.0) == ("O0",)


def test_the_campaign_options_configure_the_metamorphic_judge_and_its_share():
    """``--pairs/--pair-share/--inputs`` reach the judge object the run ships (``JudgeSet.configured``);
    its pool step gives a pair to about the share asked for, compiled for the GPU, and nothing to the rest."""
    from fuzzptx.engine.options import judges_of
    from fuzzptx.commands import build_parser

    args = build_parser().parse_args(["--judges", "reference,ptxas,metamorphic", "--pairs", "O0,O1", "--pair-share",
                                      "0.5", "--inputs", "2"])
    js = judges_of(args, "run")
    (meta,) = [j for j in js.judges if j.name == "metamorphic"]
    assert (meta.pairs, meta.share, meta.inputs) == (("O0", "O1"), 0.5, 2)
    from fuzzptx.judges.registry import get

    assert get("metamorphic").share == 1.0  # the registered judge is untouched
    p = scalar()
    text = p.to_ptx()
    base = compile_ptx(text, want_cubin=True)
    # the pair a program gets is a function of its text: 40 texts (another seed in the header each)
    prepared = [meta.prepare(p, text.replace("seed=5", f"seed={s}"), base, gpu=True) for s in range(40)]
    chosen = [x for x in prepared if x is not None]
    assert 8 <= len(chosen) <= 32 and all(isinstance(x, M.PreparedPairs) for x in chosen)
    assert not any(x.built for x in chosen)  # built with the block's others: prepare_block
    meta.prepare_block(prepared)
    assert all(x.built and x.staged is None for x in chosen)
    assert meta.prepare(p, text, base, gpu=False) is None  # compile pairs need the GPU: nothing to do without


def test_a_program_the_reference_finds_out_of_bounds_takes_no_pair():
    """Found on the H100: the reducer kept a 5-instruction 'O3 != O0' candidate that stored out of
    its buffer; an out-of-bounds access is undefined under the launch (the GPU too), not a limit
    of the reference, so no pair is compared on it."""
    from fuzzptx.oracles.reference.errors import BadAddress, StepLimit

    el = M.pair_eligibility(scalar(), reference=BadAddress("k.ptx:9: st.global.u32: out-of-bounds store"))
    assert not el.ok and el.reason.startswith("reference: BadAddress")
    assert M.pair_eligibility(scalar(), reference=StepLimit("k.ptx:9: step limit")).ok


def test_a_build_ptxas_crashes_on_is_named_a_crash_of_that_side():
    """Found on the H100 run over tests/data: ptxas 13.0.88 (and 12.9.86) -O0 -g dies with SIGSEGV on
    a Triton warp-specialised persistent TMA kernel that -O3 builds (13.5.37 builds both)."""
    from pathlib import Path

    f = Path(__file__).parent / "data" / "triton" / "matmul_tma_persistent_ws_bf16_64x128x64_w4s4.ptx"
    from fuzzptx.oracles.hardware import HwResult

    class Ran:  # a GPU worker whose every launch ends without a fault (the side's build is what is tested)
        def run(self, program, *, cubin=None, kernel=None, timeout=None):
            return HwResult({}, None if cubin else "load error: no cubin")

    p = Program.from_ptx(f.read_text(), str(f))
    judge = M.HardwareJudge(Ran())
    o = judge.run(p, CP.pair("O0g").build)
    assert o.crashed and o.rejected and "crashed (signal 11)" in o.fault
    v = M.Variant("options", M.Side("O3", p, CP.BASE), M.Side("O0g", p, CP.pair("O0g").build))
    f_ = M.compare_pair(v, judge)
    assert f_ is not None and f_.signature.startswith("hardware:O3!=O0g|crashed:O0g|")


def test_a_register_cap_an_mma_cannot_meet_is_no_finding():
    """The H100 campaign's one maxrreg finding (mma.sp with an f64 mma under --maxrregcount 27): ptxas
    refuses the cap ("cannot be compiled with specified register target constraints"), a limit."""
    side = M.Side(CP.MAXRREG, scalar(), CP.Build(3, ("--maxrregcount", "27")))
    said = M.Outcome(fault="ptxas -O3 --maxrregcount 27 rejected: Function 'k' using feature 'mma with .f64 type' and "
                           "with shape '.m16n8k16' cannot be compiled with specified register target constraints",
                     rejected=True)
    assert M._not_applicable(side, said)
    assert not M._not_applicable(side, replace(said, crashed=True))
    assert not M._not_applicable(side, M.Outcome(fault="ptxas -O3 rejected: syntax error", rejected=True))


def test_a_scalar_kernel_gets_the_scalar_pairs_a_wgmma_program_one_in_a_share():
    from fuzzptx.judges.compile_pairs import CAMPAIGN_DEFAULT, CAMPAIGN_SHARE, SCALAR_PAIRS, choose_for

    assert choose_for(CAMPAIGN_DEFAULT, 1, CAMPAIGN_SHARE, scalar_kernel=True) == SCALAR_PAIRS
    drawn = [choose_for(CAMPAIGN_DEFAULT, k, CAMPAIGN_SHARE, scalar_kernel=False) for k in range(400)]
    assert 20 < sum(bool(d) for d in drawn) < 80 and all(len(d) <= 1 for d in drawn)
    assert len(choose_for(("O1", "maxrreg"), 1, CAMPAIGN_SHARE, scalar_kernel=True)) == 1  # no scalar pair named
    assert choose_for(CAMPAIGN_DEFAULT, 1, 1.0, scalar_kernel=True) == CAMPAIGN_DEFAULT  # replay: every pair


def test_a_release_rows_pairs_are_built_by_that_release():
    """``bisect``/the release matrix judge each release as the compile stage: the base side of a
    row's pairs is that release's -O3 cubin, so every other side must be built by it too.  They
    were built by the pinned ptxas: on the H200 a 13.5.37 row of a kernel that only 12.9.86 and
    13.0.88 miscompile read 'O3!=O1, O3!=O2, ...' (13.5.37's right -O3 against 13.0.88's wrong
    -O1), as if 13.5.37 had a bug of its own."""
    from fuzzptx.judges.base import Verdicts
    from fuzzptx.judges.builtin import MetamorphicJudge

    p = scalar()
    text = p.to_ptx()
    judge = MetamorphicJudge()
    v = Verdicts()
    v.release = "12.9.86"
    staged_cubin = object()
    prepared = judge.prepare(p, text, staged_cubin, gpu=True, verdicts=v)
    assert isinstance(prepared, M.PreparedPairs)
    builds = {side.name: side.build for var in prepared.variants for side in (var.left, var.right)}
    assert builds["O3"] == CP.Build(3, (), "12.9.86") == prepared.base
    assert builds["O0"] == CP.Build(0, (), "12.9.86") and builds["lineinfo"].release == "12.9.86"
    assert prepared.staged == {(text, prepared.base): staged_cubin}
    assert all(var.left.name != PINNED_VERSION for var in prepared.variants)  # no pinned side left in
    v.release = PINNED_VERSION  # the pinned release's row is the plain campaign's pairs
    pinned = judge.prepare(p, text, staged_cubin, gpu=True, verdicts=v)
    assert pinned.base == CP.BASE and {s.build.release for var in pinned.variants for s in (var.left, var.right)
                                       if var.relation != "release"} == {None}
