"""Metamorphic pairs on the CPU: real ptxas, the real checker and the reference as the judge.

The transforms must keep the reference's outputs, the checker's verdict and ptxas's acceptance;
planted defects (judges that mis-execute one side, a broken transform) must come out as Findings
with the documented signatures. The GPU version of the same check is marked ``gpu``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np
import pytest

from fuzzptx import isa
from fuzzptx.judges import metamorphic as M
from fuzzptx.builders import wgmma_program
from fuzzptx.engine.generate import draw_programs
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Imm, Instr, Reg, Scope


@functools.lru_cache(maxsize=1)
def drawn() -> tuple[Program, ...]:
    """Strategy-drawn legal programs (wgmma pipelines under control flow, warp forms, sweeps)."""
    return tuple(draw_programs(14, seed=20261122, illegal_share=0.0))


@functools.lru_cache(maxsize=1)
def eligible() -> tuple[tuple[Program, M.Eligibility], ...]:
    out = []
    for p in drawn():
        el = M.spec_defined(p)
        if el.ok:
            out.append((p, el))
    return tuple(out)


def chained(k_steps: int = 3, seed: int = 4) -> Program:
    """Pipelined by construction: ``k_steps`` wgmmas on one accumulator in one commit group."""
    f = next(f for f in isa.forms("wgmma") if f.key == "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16|a=desc")
    return wgmma_program(f, init="small_int", seed=seed, k_steps=k_steps)


def kernel_instrs(p: Program) -> list[Instr]:
    return list(p.module.function(p.launch.kernel).instructions())


def mmas(p: Program) -> list[Instr]:
    return [i for i in kernel_instrs(p) if i.opcode.startswith("wgmma.mma_async")]


# ---------------------------------------------------------------- the transforms themselves


def test_enough_drawn_programs_take_part():
    ps = eligible()
    assert len(ps) >= 8, [M.spec_defined(p).reason for p in drawn()]
    assert sum(1 for p, _ in ps if mmas(p)) >= 4  # the serialise relation gets exercised


def test_serialise_gives_every_wgmma_its_own_group_and_keeps_every_instruction():
    for p in [chained()] + [p for p, _ in eligible()]:
        s = M.serialise(p)
        ins = [i.opcode for i in kernel_instrs(s)]
        for k, op in enumerate(ins):
            if op.startswith("wgmma.mma_async"):
                assert ins[k - 1] == M.FENCE and ins[k + 1] == M.COMMIT and ins[k + 2] == M.WAIT
        assert len(mmas(s)) == len(mmas(p))
        # the original instructions are a subsequence of the serialised ones, in order
        it = iter(kernel_instrs(s))
        assert all(any(x == y for y in it) for x in kernel_instrs(p))


def test_dead_branches_stay_outside_wgmma_stages_and_skip_their_junk():
    for p in [chained()] + [p for p, _ in eligible()]:
        d = M.with_dead_uniform_branches(p, seed=3)
        body = d.module.function(d.launch.kernel).body
        opened = M._open_stage_points(body)
        branches = [k for k, s in enumerate(body) if isinstance(s, Instr) and s.opcode == "bra.uni"
                    and s.operands[0].name.startswith("MMX_DEAD")]
        assert branches, "no dead branch was inserted"
        for k in branches:
            assert not opened[k], f"dead branch inside a wgmma stage at statement {k}"
            assert body[k].guard.negated  # always-false predicate: the branch over the junk is always taken
        assert (M.DEAD_PARAM, 0) in d.scalars
        assert len(d.module.function(d.launch.kernel).params) == len(p.module.function(p.launch.kernel).params) + 1


def test_checker_sees_no_new_spec_finding_in_any_variant():
    for p, _ in eligible():
        for v in M.metamorphic_pairs(p, seed=1, check=False):
            assert M.spec_findings(v.right.program) == [] or \
                {f.rule for f in M.spec_findings(v.right.program)} <= {f.rule for f in M.spec_findings(p)}, v.relation


def test_every_relation_applies_where_it_should():
    for p, _ in eligible():
        rel = {v.relation for v in M.metamorphic_pairs(p, seed=2, pairs=("O0", "serialise", "dead-branch"))}
        want = {"opt-level", "dead-branch"} | ({"serialise"} if mmas(p) else set())
        assert rel == want, (rel, want)


def test_ptxas_accepts_both_sides_at_their_opt_levels():
    sides: dict[int, list[str]] = {0: [], 3: []}
    for p, _ in eligible():
        for v in M.metamorphic_pairs(p, seed=5, pairs=("O0", "serialise", "dead-branch")):
            for s in (v.left, v.right):
                sides[s.opt_level].append(s.program.to_ptx())
    for opt, texts in sides.items():
        texts = list(dict.fromkeys(texts))
        for t, r in zip(texts, compile_batch(texts, opt_level=opt)):
            assert r.accepted, (opt, r.stderr[:400], t[:2000])


def test_opt_levels_really_build_different_code():
    """The pair is worth running: -O0 and -O3 give different cubins for a pipelined program."""
    from fuzzptx.oracles.ptxas import compile_ptx

    text = chained().to_ptx()
    o3, o0 = compile_ptx(text, opt_level=3), compile_ptx(text, opt_level=0)
    assert o3.accepted and o0.accepted and o3.cubin != o0.cubin


def test_transforms_keep_reference_outputs():
    judge = M.ReferenceJudge()
    ran = 0
    for p, el in eligible():
        for v in M.metamorphic_pairs(p, seed=7):
            assert M.compare_pair(v, judge, defined=el.defined) is None, v.relation
            ran += 1
    assert ran >= 20


def test_programs_the_spec_does_not_define_take_no_part():
    import fuzzptx.strategies as S
    from hypothesis import HealthCheck, given, settings

    seen = []

    @settings(max_examples=6, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(S.illegal_programs())
    def run(p):
        r = M.check_program(p, M.ReferenceJudge())
        if M.spec_findings(p):
            assert r.skipped and r.skipped.startswith("checker:") and not r.relations
            seen.append(r.skipped)

    run()
    assert seen


# ---------------------------------------------------------------- planted defects are found


@dataclass
class FallsThroughNegatedBranches:
    """A reference copy that never takes ``@!p bra.uni`` (a control-flow bug): dead junk then runs."""

    name: str = "reference"
    deterministic: bool = True

    def run(self, program, build=M.BASE):
        return M.ReferenceJudge().run(_without(program, lambda i: i.opcode == "bra.uni" and i.guard is not None
                                               and i.guard.negated), build)


@dataclass
class LosesChainedWgmma:
    """A reference copy that mis-executes a pipeline: a wgmma issued while another of its group is
    still open (no fence/commit between them) is lost. Serialised programs never trigger it."""

    name: str = "reference"
    deterministic: bool = True

    def run(self, program, build=M.BASE):
        fn = program.module.function(program.launch.kernel)
        lost, prev = set(), None
        for k, i in enumerate(fn.instructions()):
            if i.opcode.startswith("wgmma.mma_async") and prev is not None and prev.opcode.startswith("wgmma.mma_async"):
                lost.add(k)
            prev = i
        counter = iter(range(10 ** 9))
        return M.ReferenceJudge().run(_without(program, lambda i: next(counter) in lost), build)


@dataclass
class WrongAtO0:
    """A 'compiler' whose -O0 build drops the program's last global store."""

    name: str = "reference"
    deterministic: bool = True

    def run(self, program, build=M.BASE):
        if M._as_build(build).opt_level != 0:
            return M.ReferenceJudge().run(program, build)
        stores = [k for k, i in enumerate(kernel_instrs(program)) if i.opcode.startswith("st.global")]
        counter = iter(range(10 ** 9))
        return M.ReferenceJudge().run(_without(program, lambda i: next(counter) == stores[-1]), build)


def _without(program: Program, drop) -> Program:
    """The kernel without the instructions ``drop`` picks (called once per instruction, in text order)."""
    fn = program.module.function(program.launch.kernel)

    def go(body):
        out = []
        for s in body:
            if isinstance(s, Scope):
                out.append(replace(s, body=go(s.body)))
            elif isinstance(s, Instr) and drop(s):
                continue
            else:
                out.append(s)
        return tuple(out)

    fn2 = replace(fn, body=go(fn.body))
    items = tuple(fn2 if it is fn else it for it in program.module.items)
    return replace(program, module=replace(program.module, items=items))


def _pair(p: Program, relation: str, **kw) -> M.Variant:
    return next(v for v in M.metamorphic_pairs(p, **kw) if v.relation == relation)


def test_a_judge_that_mis_executes_pipelines_is_caught_by_the_serialise_pair():
    p = chained()
    el = M.spec_defined(p)
    assert el.ok
    f = M.compare_pair(_pair(p, "serialise"), LosesChainedWgmma(), defined=el.defined)
    assert f is not None
    assert f.signature == "reference:pipelined!=serialised|mismatch|wgmma.f32.f16"
    ev = dict(f.evidence)
    assert ev["buffer"] == "d" and ev["index"] >= 0 and ev["left_value"] != ev["right_value"]
    # the same judge agrees with itself on the other relations (they are not what it breaks)
    assert M.compare_pair(_pair(p, "opt-level"), LosesChainedWgmma(), defined=el.defined) is None


def test_a_judge_that_takes_dead_branches_the_wrong_way_is_caught():
    cases = [(chained(), M.spec_defined(chained()))] + list(eligible())
    caught = 0
    for p, el in cases:
        if any(i.opcode == "bra.uni" and i.guard is not None and i.guard.negated for i in kernel_instrs(p)):
            continue  # the defect changes both sides there
        out = next(b for b in p.outputs() if b.nbytes >= 4)
        if not el.defined[out.name][0]:
            continue  # the junk word lands on an element the spec leaves free (masked)
        f = M.compare_pair(_pair(p, "dead-branch", seed=11), FallsThroughNegatedBranches(), defined=el.defined)
        assert f is not None and f.signature.startswith("reference:plain!=deadbranch|mismatch|"), p.to_ptx()[:800]
        assert dict(f.evidence)["index"] == 0
        caught += 1
    assert caught >= 2


def test_a_compiler_wrong_at_O0_is_caught_by_the_opt_level_pair():
    p = chained()
    el = M.spec_defined(p)
    f = M.compare_pair(_pair(p, "opt-level"), WrongAtO0(), defined=el.defined)
    assert f is not None and f.signature == "reference:O3!=O0|mismatch|wgmma.f32.f16"


def test_a_broken_transform_is_reported():
    p = chained()
    el = M.spec_defined(p)
    v = next(v for v in M.metamorphic_pairs(p, planted=True) if v.relation == "planted")
    f = M.compare_pair(v, M.ReferenceJudge(), defined=el.defined)
    assert f is not None and f.signature == "reference:pipelined!=planted|mismatch|wgmma.f32.f16"
    r = M.check_program(p, M.ReferenceJudge(), planted=True)
    assert [x.signature for _, x in r.findings] == [f.signature]


def test_a_side_that_faults_alone_is_a_finding_and_both_faulting_is_not():
    @dataclass
    class FaultsOn:
        side_text: str
        name: str = "reference"
        deterministic: bool = True

        def run(self, program, build=M.BASE):
            if program.to_ptx() == self.side_text or self.side_text == "*":
                return M.Outcome(fault="trap")
            return M.ReferenceJudge().run(program, build)

    p = chained()
    v = _pair(p, "serialise")
    f = M.compare_pair(v, FaultsOn(v.right.program.to_ptx()))
    assert f is not None and f.signature == "reference:pipelined!=serialised|fault:serialised|wgmma.f32.f16"
    assert M.compare_pair(v, FaultsOn("*")) is None


def test_a_nondeterministic_judge_is_named_as_such():
    @dataclass
    class Flaky:
        name: str = "hardware"
        deterministic: bool = False
        calls: int = 0

        def run(self, program, build=M.BASE):
            self.calls += 1
            return M.Outcome({"d": self.calls.to_bytes(4, "little") * 1024})

    p = chained()
    f = M.compare_pair(_pair(p, "serialise"), Flaky())
    assert f is not None and f.signature == "hardware:nondeterministic|pipelined|wgmma.f32.f16"


def test_the_gpu_path_compiles_every_side_and_names_a_rejected_side():
    """``HardwareJudge`` with the reference standing in for the GPU: real ptxas at each side's opt
    level (batched), the cubin handed on; a side ptxas rejects is ``rejected:<side>``."""
    p = chained()
    el = M.spec_defined(p)
    judge = M.HardwareJudge(M.ReferenceWorker(), name="reference")
    pairs = M.metamorphic_pairs(p, defined=el.defined, pairs=("O0", "serialise", "dead-branch"))
    judge.prepare([(s.program, s.build) for v in pairs for s in (v.left, v.right)])
    assert {b.opt_level for _, b in judge._built} == {0, 3} and all(r.accepted for r in judge._built.values())
    assert all(M.compare_pair(v, judge, defined=el.defined) is None for v in pairs)
    v = _pair(p, "serialise")
    right = v.right.program
    fn = right.module.function(p.launch.kernel)
    undeclared = Instr("mov.u32", (Reg("%undeclared"), Imm.of(1)))  # ptxas: undefined identifier
    broken = replace(fn, body=fn.body[:-1] + (undeclared,) + fn.body[-1:])
    bad = replace(right, module=replace(right.module, items=tuple(broken if i is fn else i for i in right.module.items)))
    f = M.compare_pair(replace(v, right=replace(v.right, program=bad)), judge)
    assert f is not None and f.signature == "reference:pipelined!=serialised|rejected:serialised|wgmma.f32.f16"
    assert "rejected" in dict(f.evidence)["fault"]


# ---------------------------------------------------------------- comparison details


def test_first_difference_masks_undefined_elements_and_equates_nans():
    p = chained()
    d = p.buffer("d")
    n = d.count
    left = np.arange(n, dtype=np.float32)
    right = left.copy()
    right[5] = np.nan
    left[5] = np.float32("nan")
    assert M.first_difference(p, {"d": left.tobytes()}, {"d": right.tobytes()}) is None  # NaN == NaN
    right[7] = 99.0
    diff = M.first_difference(p, {"d": left.tobytes()}, {"d": right.tobytes()})
    assert (diff.buffer, diff.index, diff.count, diff.compared) == ("d", 7, 1, n)
    mask = np.ones(n, bool)
    mask[7] = False
    assert M.first_difference(p, {"d": left.tobytes()}, {"d": right.tobytes()}, {"d": mask}) is None


# ---------------------------------------------------------------- on the GPU


@pytest.mark.gpu
def test_pairs_hold_on_the_gpu_and_the_planted_pair_does_not():
    from fuzzptx.oracles.hardware import HardwareWorker

    p = chained()
    with HardwareWorker() as w:
        r = M.check_program(p, M.HardwareJudge(w), planted=True, pairs=("O0", "serialise", "dead-branch"))
    assert r.skipped is None
    assert [f.signature for _, f in r.findings] == ["hardware:pipelined!=planted|mismatch|wgmma.f32.f16"]


# ------------------------------------------------------------------ as a judge of fuzzptx run


def test_the_metamorphic_judge_runs_in_a_fuzz_run_and_its_findings_reach_the_differ():
    """``--judges ...,metamorphic``: every accepted program the spec defines has its pairs judged
    (on the reference without a GPU), the verdict says which ran, and a pair that differs comes
    out of ``differ.compare`` as a finding with the metamorphic signature."""
    from fuzzptx.judges import differ

    progs = [p for p, _ in eligible()[:3]]
    verdicts = [differ.judge(p, ("reference", "checker", "ptxas", "metamorphic")) for p in progs]
    for p, v in zip(progs, verdicts):
        assert v.metamorphic is not None and v.metamorphic.skipped is None, v.metamorphic
        # on the reference the compile pairs hold trivially: only the transforms run there
        assert v.metamorphic.relations and set(v.metamorphic.relations) <= set(M.RELATIONS) - {"opt-level"}
        assert "pair(s)" in v.summary()["metamorphic"]
        assert not [f for f in differ.compare(p, v) if M.is_metamorphic(f.signature)]
    planted = M.check_program(progs[0], M.ReferenceJudge(), planted=True)
    v = verdicts[0].replace(metamorphic=planted)
    sigs = [f.signature for f in differ.compare(progs[0], v)]
    assert any(s.startswith("reference:pipelined!=planted|") for s in sigs), sigs


def test_a_campaign_block_ships_its_pairs_compiled_to_the_gpu_worker():
    """With the hardware judge the pool compiles every side and hands ``PreparedPairs`` to the GPU
    thread: they must pickle (cubins and all) and judge there without another ptxas run. The
    reference stands in for the GPU worker here; nothing differs on it."""
    import pickle

    from fuzzptx.engine.generate import BlockTask

    from fuzzptx.engine.block import prepare_block

    item = pickle.loads(pickle.dumps(prepare_block(BlockTask(0, 5, 6, ("ptxas", "hardware", "metamorphic")))))
    prepared = [w["metamorphic"] for w in item.gpu if isinstance(w.get("metamorphic"), M.PreparedPairs)]
    assert prepared, item.gpu
    for pairs in prepared:
        sides = {(s.program.to_ptx(), s.build) for v in pairs.variants for s in (v.left, v.right)}
        assert sides <= set(pairs.built) and all(pairs.built[k].cubin for k in sides)
        judge = M.HardwareJudge(M.ReferenceWorker(), _built=pairs.built)
        checked = pairs.judge(judge)
        assert checked.relations and not checked.findings, checked
        assert set(judge._built) == set(pairs.built)  # nothing compiled on the GPU side


def test_dead_branches_never_split_a_call_prototype_from_its_label(fuzzptx_full):
    """Found by the metamorphic judge in an H100 campaign (benchmarks/results/
    campaign_metamorphic_h100.json): junk between ``fz_protoL4:`` and its ``.callprototype`` made
    ptxas reject the dead-branch side ("Call target not recognized").  No placement goes between
    them (a seed picks 2 of the ~590 places at random, so the check is on the places, not on
    seeds), and the variants compile: 8 by default, 40 in a full run."""
    from pathlib import Path

    from fuzzptx.ptx.ir import Directive, Label

    p = Program.from_file(Path(__file__).parent / "data" / "metamorphic" / "deadbranch_callprototype.ptx")
    body = p.module.function(p.launch.kernel).body
    (proto,) = [i for i, s in enumerate(body) if isinstance(s, Directive) and s.text.startswith(".callprototype")]
    assert body[proto - 1] == Label("fz_protoL4") and proto not in M.dead_branch_points(p)
    variants = [M.with_dead_uniform_branches(p, seed, points=3) for seed in range(40 if fuzzptx_full else 8)]
    for v in variants:
        vbody = v.module.function(v.launch.kernel).body
        at = vbody.index(Label("fz_protoL4"))
        assert isinstance(vbody[at + 1], Directive) and vbody[at + 1].text.startswith(".callprototype")
    rejected = [r.errors()[0].message for r in compile_batch([v.to_ptx() for v in variants]) if not r.accepted]
    assert not rejected, rejected
