"""What the judges need to know of a program besides its verdicts: the family a finding is
bucketed under, its mutation label, the text every judge reads, and the comparison of output
buffers with the reference (the GPU and every ``OutputJudge`` are compared the same way)."""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Iterable

from fuzzptx import isa
from fuzzptx.oracles.reference import compare as ref_compare, run_program
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Instr
from fuzzptx.ptx.parse import parse
from fuzzptx.strategies.mutations import path_jump_lines, site_lines

from .finding import Finding

_FAMILY_RANK = {"wgmma.sp": 0, "wgmma": 1, "mma.sp": 2, "mma": 3, "wmma.mma": 4, "ldmatrix": 5, "stmatrix": 6}


def program_family(program: Program) -> str:
    """The most telling tensor-core family in the program, with its type mix for wgmma/mma."""
    return family_of_forms(form for fn in program.module.functions() for ins in fn.instructions()
                           if (form := isa.form_for(ins)) is not None)


def family_of_forms(forms: Iterable) -> str:
    """``program_family`` of a program whose instructions' catalogue forms are ``forms``, in
    program order (the first of the most telling family wins)."""
    best = None
    for form in forms:
        r = _FAMILY_RANK.get(form.family, 9)
        if best is None or r < best[0]:
            best = (r, form)
    return "other" if best is None else form_family(best[1])


def form_family(form) -> str:
    """A form's family with its type mix: ``wgmma.sp.f32.e4m3.e5m2``."""
    types = [t for t in (form.dtype, form.atype) if t]
    if form.btype and form.btype != form.atype:
        types.append(form.btype)
    return ".".join([form.family] + types)


def output_family(program: Program, buffer: str, fam: str) -> str:
    """The family of the unit that writes output ``buffer``, else ``fam``.

    A generated wgmma program lists its units' forms in a ``units:`` note and unit k stores to
    ``d<k>``: a mismatch in ``d1`` is then bucketed under unit 1's family, not the program's
    first (an H100 campaign bucketed fp8 accumulator mismatches under s32 and f16 families
    that had no mismatch, because an s32 or f16 unit came first)."""
    m = re.fullmatch(r"d(\d+)", buffer)
    note = next((n for n in program.notes if n.startswith("units: ")), None)
    if m is None or note is None:
        return fam
    keys = note[len("units: "):].split(", ")
    k = int(m.group(1))
    try:
        return form_family(isa.by_key(keys[k])) if k < len(keys) else fam
    except KeyError:
        return fam


def mutation_of(program: Program) -> str | None:
    """The mutation a labelled illegal program came from (its ``mutation: NAME breaks RULE`` note)."""
    for note in program.notes:
        if note.startswith("mutation: "):
            return note.split()[1]
    return None


def is_labelled(program: Program) -> bool:
    return mutation_of(program) is not None


def took_the_mutated_path(program: Program, ref: Any) -> bool:
    """False where the mutation jumps over an instruction on one path and the run never jumped,
    or made one instruction undefined and the run never reached it."""
    jumps = path_jump_lines(program)
    if jumps and not set(jumps) & ref.branches_taken:
        return False
    sites = site_lines(program, mutation_of(program) or "")
    return not sites or any(ref.ran(line) for line in sites)


def expects_defined(program: Program) -> bool:
    """False for programs labelled rejected by ptxas or undefined by the spec (nothing to compare)."""
    for judge_, verdict in program.expect:
        if judge_ == "ptxas" and verdict.startswith("rejected") and is_labelled(program):
            return False
        if judge_ in ("checker", "reference") and verdict.startswith(("undefined", "illegal")) and is_labelled(program):
            return False
    return True


def undefined_label(program: Program) -> str:
    """The label that keeps a program off the GPU (``judge: verdict``), or '' when there is none."""
    return next((f"{j}: {v}" for j, v in program.expect
                 if j in ("checker", "reference", "ptxas") and v.startswith(("undefined", "illegal", "rejected"))), "")


def as_judged(program: Program, text: str | None = None) -> tuple[Program, str]:
    """The program exactly as the judges see it: its PTX text and the program parsed back from it.

    Every judge reads the same text, so the checker's and the reference's line numbers are
    the lines ptxas reports (a generated program has no source lines until it is emitted).
    """
    text = program.to_ptx() if text is None else text
    try:
        parsed = replace(program, module=parse(text, "<program>"))
    except Exception:
        parsed = program  # the parser's own failure must not hide the other judges' verdicts
    return parsed, text


def without_repeated_wgmmas(program: Program, exact: bool = True) -> Program | None:
    """``program`` with every wgmma.mma_async that repeats the one before it (only commits
    between) dropped -- what ptxas 13.0.88 -O3 makes of such repeats -- or None when the kernel
    repeats none.  ``exact``: a repeat is the identical instruction (the H100 probe,
    tests/test_repeated_wgmma.py); else any with the same accumulators, A and B whatever its
    scale-d (a campaign kernel with scale-d 1, a runtime 0, 1 got the first one's result only:
    benchmarks/results/repeated_wgmma_diagnosis_h100.json)."""
    try:
        fn = program.module.function(program.launch.kernel)
    except (KeyError, AttributeError):
        return None

    def key(s: Instr):
        return s if exact else (s.opcode, s.operands[:3], s.guard)

    body, last, dropped = [], None, False
    for s in fn.body or ():
        if isinstance(s, Instr) and s.opcode.startswith("wgmma.mma_async"):
            if last is not None and key(s) == key(last):
                dropped = True
                continue
            last = s
        elif not (isinstance(s, Instr) and s.opcode.startswith("wgmma.commit_group")):
            last = None
        body.append(s)
    return program.with_kernel_body(body) if dropped else None


def collapsed_repeats_explain(program: Program, outputs: dict[str, bytes]) -> bool:
    """The outputs are what the reference gives with the repeated wgmmas dropped (either reading
    of a repeat): the mismatch is ptxas -O3's known collapse, bucketed as ``mismatch-repeated-wgmma``."""
    tried = []
    for exact in (True, False):
        collapsed = without_repeated_wgmmas(program, exact)
        if collapsed is None or collapsed.module in tried:
            continue
        tried.append(collapsed.module)
        try:
            ref = run_program(collapsed, mode=program.numerics)
        except Exception:  # noqa: BLE001 - no diagnosis, the mismatch stays a plain one
            continue
        if not ref_compare(collapsed, ref, outputs):
            return True
    return False


def hardware_numerics_explain(program: Program, outputs: dict[str, bytes]) -> bool:
    """A program judged in spec numerics whose outputs are what the bit-exact H100 model gives
    (``docs/numerics.md``: the fp8 e8m13 accumulator): the GPU's known numerics, not a new bug,
    bucketed as ``mismatch-hardware-numerics``."""
    if program.numerics == "hardware":
        return False
    try:
        ref = run_program(replace(program, numerics="hardware"), mode="hardware")
    except Exception:  # noqa: BLE001 - no diagnosis, the mismatch stays a plain one
        return False
    return not ref_compare(program, ref, outputs)


def outputs_against_reference(program: Program, reference: Any, outputs: dict[str, bytes], pair: str,
                              family: str, *, diagnose_repeats: bool = False, full: Any = None) -> list[Finding]:
    """A ``pair`` finding (``reference!=hardware``, ``zerosim!=reference``) for output buffers
    outside ``reference``'s bounds, undefined elements skipped.  ``diagnose_repeats``: name a
    mismatch that ptxas -O3's collapse of repeated wgmmas explains, or the H100's own numerics
    in a program judged in spec numerics (``full``: a callable giving the
    program with its bodies, where ``program`` is a campaign's light copy)."""
    mism = ref_compare(program, reference, outputs)
    if not mism:
        return []
    what = "mismatch"
    if diagnose_repeats and collapsed_repeats_explain(full() if full is not None else program, outputs):
        what = "mismatch-repeated-wgmma"
    elif diagnose_repeats and hardware_numerics_explain(full() if full is not None else program, outputs):
        what = "mismatch-hardware-numerics"
    return [Finding(f"{pair}|{what}|{output_family(program, mism[0].buffer, family)}",
                    f"{len(mism)} element(s) differ; first: {mism[0]}",
                    (("mismatches", len(mism)), ("first", str(mism[0]))))]
