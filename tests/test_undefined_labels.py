"""Mutations labelled undefined, and the reference seeing it.

A swizzled descriptor whose base offset does not match its start: the spec says the base offset
"must" be ``(start >> 7) & 7`` there, so the spec-mode reference leaves the wgmma's results
undefined (as the ``descriptor_misaligned`` mutation's label says); the hardware mode computes
what the H100 does (its phase formula, tests/hw_records/dense_wgmma_base_offset_explore.json)."""
from __future__ import annotations

import numpy as np
import pytest

from fuzzptx.engine.generate import draw_direct
from fuzzptx.oracles.reference import run_program
from fuzzptx.oracles.reference.descriptors import MatrixDescriptor
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.strategies.mutations import apply, mutation_of


def _undefined(ref) -> int:
    return sum(int((np.asarray(o.kind) == UNDEF).sum()) for o in ref.outputs.values())


@pytest.mark.parametrize("start, base, bad", [(0x400, 0, False), (0x480, 0, True), (0x480, 1, False),
                                              (0x420, 0, False), (0x500, 2, False), (0x500, 3, True)])
def test_pattern_issues_follow_the_phase(start, base, bad):
    d = MatrixDescriptor.decode((start >> 4) | (1 << 16) | (64 << 32) | (base << 49) | (1 << 62))
    assert bool(d.pattern_issues()) == bad


def _in_bounds(p) -> bool:
    """The moved descriptor's tile still lies in shared memory (else the run stops there)."""
    from fuzzptx.oracles.reference.errors import BadAddress

    try:
        run_program(p)
    except BadAddress:
        return False
    return True


def _mutants(n: int = 3):
    out = []
    for p in draw_direct(80, 5):
        if mutation_of(p) is None and p.module.target.startswith("sm_90a"):
            m = apply("descriptor_misaligned", p, 0)
            if m is not None and run_program(p).undefined is None and _in_bounds(m):
                out.append((p, m))
        if len(out) == n:
            break
    return out


def test_a_misaligned_pattern_is_undefined_in_spec_mode_and_computed_in_hardware_mode():
    pairs = _mutants()
    assert pairs
    for legal, mutant in pairs:
        spec = run_program(mutant)
        assert spec.undefined is not None or _undefined(spec) > _undefined(run_program(legal))
        assert any("base offset" in n for n in spec.notes)
        hw = run_program(mutant, mode="hardware")
        assert not any("base offset" in n for n in hw.notes)
        # the label is the spec's: a hardware-numerics run computes the H100's result, and that is no finding
        from dataclasses import replace

        from fuzzptx.judges import differ

        for numerics, expected in (("spec", False), ("hardware", False)):
            q = replace(mutant, numerics=numerics)
            judged, text = differ.as_judged(q)
            v = differ.judge(judged, ("reference",), text=text, judged=judged)
            assert bool(_expect_reference(differ.compare(judged, v))) == expected, numerics


def _reference_judged_mutants(name: str, n: int, seed: int = 2):
    """(legal program, judged mutant, its verdicts, its differ findings) for each legal sm_90a
    program of ``draw_direct(n, seed)``; mutant and verdicts are None where ``name`` does not apply
    or the reference could not run it."""
    from fuzzptx.judges import differ

    for p in draw_direct(n, seed):
        if mutation_of(p) is not None or not p.module.target.startswith("sm_90a"):
            continue
        m = apply(name, p, 0)
        if m is None:
            yield p, None, None, []
            continue
        judged, text = differ.as_judged(m)
        v = differ.judge(judged, ("reference",), text=text, judged=judged)
        yield (p, judged, v, differ.compare(judged, v)) if v.reference is not None else (p, None, None, [])


def _expect_reference(findings) -> list:
    return [f for f in findings if f.signature.startswith("expect!=reference")]


def test_a_skipped_fence_is_seen_by_the_reference_even_when_its_values_are_overwritten():
    """``fence_skipped_on_a_path`` labels the program undefined.  Where a later fenced wgmma with
    scale-d 0 overwrites the unfenced wgmma's accumulators, every output is defined, yet the
    reference saw the undefined behaviour (its notes): no expect!=reference finding then."""
    checked = overwritten = 0
    # seed 1: its first 40 programs hold two such overwritten cases (seed 2's did before the
    # generator drew wgmma-consumer mainloops)
    for _, _judged, v, findings in _reference_judged_mutants("fence_skipped_on_a_path", 40, seed=1):
        if v is None:
            continue
        checked += 1
        assert not _expect_reference(findings)
        assert v.reference.undefined or any("fence" in n and "undefined" in n for n in v.reference.notes)
        overwritten += v.reference.undefined is None and _undefined(v.reference) == 0
    assert checked >= 5 and overwritten >= 1, (checked, overwritten)


def test_a_skipped_wait_is_the_only_wait_after_the_last_wgmma():
    """``wait_skipped_on_a_path`` jumps over the last wait_group.  Where another wait follows the
    last wgmma (one inside a taken branch, say) the run already waited and the label would lie
    (a campaign found two such expect!=reference findings): the mutation then does not apply.  A
    run that takes the jump reads in flight, and the reference says so; a run that never reaches
    the jump (the stage sits in a branch the launch skips) is defined, and no finding."""
    from fuzzptx.ptx.ir import Function, Instr
    from fuzzptx.strategies.mutations import path_jump_lines

    def waits_after_last_wgmma(p) -> int:
        kernel = next(f for f in p.module.items if isinstance(f, Function) and f.name == p.launch.kernel)
        body = [s for s in kernel.body if isinstance(s, Instr)]
        last = max((i for i, s in enumerate(body) if s.opcode.startswith("wgmma.mma_async")), default=None)
        return 0 if last is None else sum(s.opcode == "wgmma.wait_group.sync.aligned" for s in body[last:])

    applied = took = refused = 0
    for p, judged, v, findings in _reference_judged_mutants("wait_skipped_on_a_path", 60):
        if judged is None:
            refused += waits_after_last_wgmma(p) > 1
            continue
        assert waits_after_last_wgmma(p) == 1
        applied += 1
        assert not _expect_reference(findings)
        if set(path_jump_lines(judged)) & v.reference.branches_taken:  # the run skipped the wait
            took += 1
            assert v.reference.undefined or _undefined(v.reference) or \
                any("undefined" in n for n in v.reference.notes)
    assert applied >= 5 and took >= 3 and refused >= 1, (applied, took, refused)


@pytest.mark.parametrize("name, n", [("acc_write_in_flight", 160), ("a_write_in_flight", 160), ("descriptor_misaligned", 160)])
def test_a_mutated_site_is_one_every_launch_runs(name, n):
    """These mutations make a run undefined at one wgmma: they pick a wgmma that no kernel
    parameter's branch jumps over (a campaign found an accumulator written after a wgmma the
    launch skipped: the reference ran it fully defined, and the label lied).  A warpgroup-role
    branch still lets the other threads run it.  The reference sees every mutant undefined."""
    from fuzzptx.strategies import mutations as M

    applied = refused = 0
    for p, judged, v, findings in _reference_judged_mutants(name, n):
        body = M._body(p)
        wgmmas = M._mmas(body)
        if judged is None:
            refused += bool(wgmmas) and not any(M._always_reached(body, i) for i in wgmmas)
            continue
        applied += 1
        assert not _expect_reference(findings), findings
        if v.mutation_reached:  # (a role branch the launch always takes can still skip it)
            assert v.reference.undefined or _undefined(v.reference) or any("undefined" in n for n in v.reference.notes)
    assert applied >= 5 and refused >= 1, (applied, refused)


def test_a_parameter_branch_skips_a_site_and_a_role_branch_does_not():
    from fuzzptx.ptx.ir import Guard, Imm, Instr, Label, Reg, Sym
    from fuzzptx.strategies.mutations import _always_reached

    wgmma = Instr("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16", ())

    def body(src: str):
        return [Instr("ld.param.u32" if src == "param" else "mov.u32", (Reg("%r1"), Reg("%tid.x") if src == "tid" else Sym("flag"))),
                Instr("setp.ne.u32", (Reg("%p1"), Reg("%r1"), Imm.of(0))),
                Instr("bra.uni", (Sym("L1"),), Guard(Reg("%p1"))), wgmma, Label("L1"), Instr("ret", ())]

    assert not _always_reached(body("param"), 3)
    assert _always_reached(body("tid"), 3)
    loop = [Label("L0"), wgmma, Instr("bra.uni", (Sym("L0"),), Guard(Reg("%p1")))]
    assert _always_reached(loop, 1)
    assert not _always_reached([Instr("ret", (), Guard(Reg("%p1"))), wgmma], 1)


def test_a_site_the_run_never_reached_is_no_finding():
    """A 5-minute H100 campaign's mutant: the accumulator write sits after a wgmma behind a
    warpgroup-role branch (``tid >> 7``) that a one-warpgroup launch always takes, so no thread
    runs it and the run is defined.  The reference records the blocks it ran; the differ expects
    the undefined behaviour only where the mutated site ran (statically the branch looks like it
    splits the threads)."""
    from dataclasses import replace
    from pathlib import Path

    from fuzzptx.judges import differ
    from fuzzptx.program import Program
    from fuzzptx.strategies.mutations import BY_NAME, site_lines

    p = Program.from_file(Path(__file__).parent / "data" / "repros" / "acc_write_site_not_reached.ptx")
    m = BY_NAME["acc_write_in_flight"]
    p = replace(p, notes=(f"mutation: {m.name} breaks {m.rule}",), expect=m.expect())
    judged, text = differ.as_judged(p)  # (the new header moves the body: lines as the judges see them)
    v = differ.judge(judged, ("reference",), text=text, judged=judged)
    (site,) = site_lines(judged, m.name)
    wgmma = site - 1
    assert not v.reference.ran(site) and v.reference.ran(wgmma - 5)
    assert v.reference.undefined is None and not _expect_reference(differ.compare(judged, v))


def test_a_campaign_compares_without_the_body_and_still_knows_the_site_was_not_reached():
    """A campaign's main process compares a light copy of each program (``campaign.shipped``: no
    body, so no mutated lines to look up); the pool's judge records whether the run reached the
    mutation's site.  Seed 1, block 12, program 25 is a divergent_guard mutant whose guarded wgmma
    the launch skips (found by searching seeds' blocks for such a mutant, again after the
    generator's code around the tensor cores changed the draws; a 2,048-program CPU
    campaign of seed 4 first reported the case, at block 2 program 25 before illegal_programs()
    drew the mainloop twins too)."""
    from fuzzptx.judges import differ
    from fuzzptx.engine.generate import block_seed
    from fuzzptx.engine.block import shipped

    p = draw_direct(32, block_seed(1, 12))[25]
    assert mutation_of(p).name == "divergent_guard"
    text, judged = p.to_ptx_located()
    v = differ.judge(p, ("reference",), text=text, judged=judged)
    assert v.mutation_reached is False and v.reference.undefined is None
    assert not _expect_reference(differ.compare(shipped(p), v))
    v.mutation_reached = None  # what the light copy alone would say: the label's claim, unchecked
    assert _expect_reference(differ.compare(shipped(p), v))


@pytest.mark.parametrize("name", ["acc_write_in_flight", "a_write_in_flight", "divergent_guard", "descriptor_misaligned",
                                  "smem_out_of_bounds"])
def test_each_site_mutation_names_its_site(name):
    """``site_lines`` finds the instruction each site mutation broke, on the judged text."""
    from fuzzptx.judges import differ
    from fuzzptx.strategies.mutations import site_lines

    found = 0
    for p in draw_direct(80, 2):
        if mutation_of(p) is not None or not p.module.target.startswith("sm_90a"):
            continue
        m = apply(name, p, 0)
        if m is None:
            continue
        judged, text = differ.as_judged(m)
        lines = site_lines(judged, name)
        assert lines, name
        kind = "mov.b32" if "write" in name else "wgmma.mma_async"
        assert all(text.splitlines()[n - 1].strip().startswith(("@%fz_div " + kind) if name == "divergent_guard" else kind)
                   for n in lines), name
        found += 1
        if found == 3:
            break
    assert found >= 1, name
