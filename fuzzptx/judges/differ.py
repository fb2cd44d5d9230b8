"""Run a program through the chosen judges and name every disagreement.

The judges come from the registry (``fuzzptx.judges.registry``): the built-ins and any package's
plugins, all called through one interface, so nothing here names a judge.  ``compare`` asks each
judge that ran for the findings it reports, then checks a labelled (mutated) program's
expectations, names what a known pattern of the program explains (``diagnose``) and merges the
findings that share a root cause into one (``finding.merge``).  A ``Finding`` carries a readable
``signature`` -- ``<pair>|<what>|<family>`` such as ``checker!=ptxas|C7519|wgmma`` or
``reference!=hardware|mismatch|wgmma.f32.bf16``, the evidence -- and a ``root_cause``, its
identity, so that findings from many runs and shards bucket together by what causes them.
"""
from __future__ import annotations

import time
from dataclasses import replace
from fnmatch import fnmatchcase
from typing import Any, Callable, Iterable, Sequence

from fuzzptx.errors import FuzzptxError
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Imm, Instr
from fuzzptx.strategies.mutations import BY_NAME, verdict_holds

from .registry import get as get_judge, resolve
from .metamorphic import is_metamorphic, verdict as metamorphic_verdict  # noqa: F401 - part of the differ's interface
from .base import Context, Judge, JudgeFault, Verdicts
from .builtin import (BUILTIN, CPU_JUDGES, FINDINGS_ORDER, describe_prediction, describe_ptxas,  # noqa: F401
                      predicted_codes, ptxas_codes)
from .finding import Finding, cause_of, merge
from fuzzptx.strategies.scalar_shapes import SHAPES, repeated_wgmma
from .programs import (as_judged, collapsed_repeats_explain, expects_defined, form_family,  # noqa: F401
                       is_labelled, mutation_of, output_family, program_family, took_the_mutated_path,
                       without_repeated_wgmmas)

JUDGES = BUILTIN  # the built-in judges; ``fuzzptx.judges.names()`` adds installed plugins


def compare(program: Program, v: Verdicts, *, family: str | None = None,
            full: Callable[[], Program] | None = None) -> list[Finding]:
    """Every disagreement the judges that ran report, plus broken expectations, one finding per root
    cause (``finding.merge``: the other findings of that cause are its ``also``) (``family``: the
    program's ``program_family``, when the caller has it already; ``full``: the program with its
    bodies, where ``program`` is a campaign's shipped header -- a reference/hardware mismatch asks
    for it, to test the repeated-wgmma diagnosis, and so does ``diagnose``)."""
    fam = program_family(program) if family is None else family
    out: list[Finding] = []
    ran = [n for n in FINDINGS_ORDER if n in v] + [n for n in v if n not in FINDINGS_ORDER]
    for name in ran:
        verdict = v[name]
        if isinstance(verdict, JudgeFault):
            out.append(Finding(f"{name}:fault|{fam}", f"{name} failed: {verdict.message}"))
        else:
            out += get_judge(name).findings(program, v, fam, full=full)
    out += expectation_findings(program, v, fam)
    return merge(diagnose(after_sass_hazards(out), program, full))


def _immediate_descriptor(program: Program) -> bool:
    """A wgmma.mma_async whose A or B descriptor is an immediate (the ISA asks for a register)."""
    return any(isinstance(s, Instr) and s.opcode.startswith("wgmma.mma_async")
               and any(isinstance(o, Imm) for o in s.operands[1:3])
               for fn in program.module.functions() for s in fn.instructions())


#: Diagnoses: (judges, rule) globs of a finding's cause -> (pattern, test of the program).  A
#: finding whose cause has no pattern yet gets the first whose test holds.  One table; what a
#: pattern means is ``finding.PATTERNS``.  A compile pair's -O3 mismatch is diagnosed by the
#: scalar shapes of known ptxas bugs (``scalar_shapes``): one without a known shape is a new cause.
DIAGNOSES: dict[tuple[str, str], tuple[tuple[str, Callable[[Program], bool]], ...]] = {
    ("ptxas", "crash"): (("immediate-descriptor", _immediate_descriptor),),
    ("ptxas@*", "crash"): (("immediate-descriptor", _immediate_descriptor),),
    # a compile pair's -O3 side against a build that collapsed a repeated wgmma (the GPU against the
    # reference tells that case itself: ``mismatch-repeated-wgmma``, the reference with the repeats dropped)
    ("hardware:O3!=*", "mismatch"): SHAPES + (("repeated-wgmma", repeated_wgmma),),
    ("reference!=hardware", "mismatch"): SHAPES,  # a miscompile the reference alone sees: the -O3 build is wrong
}


def _diagnoses(judges: str, rule: str) -> tuple[tuple[str, Callable[[Program], bool]], ...]:
    return next((tests for (j, r), tests in DIAGNOSES.items() if fnmatchcase(judges, j) and fnmatchcase(rule, r)), ())


def diagnose(findings: list[Finding], program: Program, full: Callable[[], Program] | None = None) -> list[Finding]:
    """Each finding with the pattern of the program that causes it, where ``DIAGNOSES`` knows one
    (a ptxas crash on a wgmma with an immediate descriptor): the pattern is part of the root
    cause, so a crash of another cause is another bug.  ``full``: the program with its bodies."""
    out, whole = [], None
    for f in findings:
        c = f.root_cause
        tests = _diagnoses(c.judges, c.rule) if not c.pattern else ()
        for pattern, holds in tests:
            if whole is None:
                whole = full() if full is not None else program
            try:
                hit = holds(whole)
            except Exception:  # noqa: BLE001 - no diagnosis, the cause stays the rule's
                hit = False
            if hit:
                f = replace(f, cause=cause_of(f.signature, pattern))
                break
        out.append(f)
    return out


def after_sass_hazards(findings: list[Finding]) -> list[Finding]:
    """A GPU mismatch or fault in a program whose SASS has a pipeline hazard (``sass:*``) is named
    as the hazard's consequence: ``reference!=hardware|mismatch-after-sass-hazard|...`` and
    ``hardware:fault-after-sass-hazard:...``, compiler bug candidates.

    Why: the hazard is in what ptxas emitted, so the GPU doing something the PTX ISA does not allow
    there says nothing against the GPU.  On the H100 every fault of a 5-minute campaign was such a
    program (benchmarks/results/campaign_h100_seed30_tma/record.json), and where the SASS keeps
    every GMMA the GPU computes repeated wgmmas right (benchmarks/results/repeat_probe_h100.json).
    The hazard's own finding stays beside it."""
    hazards = sorted({f.pair for f in findings if f.pair.startswith("sass:")})
    if not hazards:
        return findings
    out: list[Finding] = []
    for f in findings:
        sig = f.signature
        if sig.startswith("reference!=hardware|mismatch|"):
            sig = sig.replace("|mismatch|", "|mismatch-after-sass-hazard|", 1)
        elif sig.startswith("hardware:fault:"):
            sig = "hardware:fault-after-sass-hazard:" + sig[len("hardware:fault:"):]
        else:
            out.append(f)
            continue
        out.append(Finding(sig, f"{f.message} (the SASS has {', '.join(h.split(':', 1)[1] for h in hazards)})",
                           f.evidence + (("sass hazards", tuple(hazards)),)))
    return out


def expectation_findings(program: Program, v: Verdicts, fam: str) -> list[Finding]:
    """A labelled (mutated) program whose judge verdicts contradict its label.

    Labels come from ``fuzzptx.strategies.mutations``: ``ptxas: rejected | accepted [C75xx ...]``,
    ``checker: illegal: RULE | undefined: RULE``, ``reference: undefined``.
    """
    rule = mutation_of(program)
    if rule is None:
        return []
    out: list[Finding] = []
    for judge_, verdict in program.expect:
        # a label says what the mutation does to legality; ptxas's allocator giving up says nothing
        # of it (the checker!=ptxas comparison reports that rejection as the ptxas model's gap)
        if judge_ == "ptxas" and v.ptxas is not None and not v.ptxas.timed_out and not v.ptxas.allocation_failed():
            if not verdict_holds(verdict, v.ptxas.accepted, [c for c, _ in ptxas_codes(v.ptxas)]):
                out.append(Finding(f"expect!=ptxas|{rule}|{fam}", f"mutation {rule!r} expects ptxas {verdict!r}; ptxas {describe_ptxas(v.ptxas)}"))
        elif judge_ == "checker" and v.checker is not None and ":" in verdict:
            layer, _, want = verdict.partition(":")
            want = want.strip()
            # a label names a rule or a family of rules (``isa.imm`` covers ``isa.imm.scale-a``)
            if layer in ("illegal", "undefined") and not any(f.rule == want or f.rule.startswith(want + ".")
                                                             for f in v.checker):
                out.append(Finding(f"expect!=checker|{rule}|{fam}", f"mutation {rule!r} breaks {want}; the checker did not say so"))
        elif judge_ == "reference" and verdict.startswith("undefined") and v.reference is not None \
                and not (program.numerics == "hardware" and _hardware_defined(rule)):
            # the reference agrees when it saw the undefined behaviour, even where a later
            # instruction overwrote the undefined values before any output (a fenced wgmma with
            # scale-d 0 after an unfenced one): its notes say so.  A mutation that breaks one
            # path only says nothing about a run that did not take it (the checker judges paths)
            if v.reference.undefined is None and not _any_undefined(v.reference) and \
                    not any("undefined" in n for n in v.reference.notes) and \
                    (v.mutation_reached if v.mutation_reached is not None else took_the_mutated_path(program, v.reference)):
                out.append(Finding(f"expect!=reference|{rule}|{fam}", f"mutation {rule!r} makes the program undefined; the reference ran it fully defined and saw no undefined behaviour"))
    return out


def _hardware_defined(name: str) -> bool:
    """The mutation's undefined behaviour is one the H100 numerics model defines (its table says)."""
    m = BY_NAME.get(name)
    return m is not None and m.hardware_defined


def _any_undefined(ref: Any) -> bool:
    return any(bool((o.kind == UNDEF).any()) for o in ref.outputs.values())


def judge(program: Program, judges: Sequence[str] | Sequence[Judge] = CPU_JUDGES, *, ptxas_result: Any = None, hardware_result: Any = None,
          text: str | None = None, numerics: str | None = None, judged: Program | None = None,
          into: Verdicts | None = None, gpu: Any = None, alongside: Sequence[str] = (),
          given: dict[str, Any] | None = None, toolchain: Any = None,
          failed: dict[str, BaseException] | None = None) -> Verdicts:
    """Run one program through ``judges``, each after the judges it reads (a precomputed ptxas or
    hardware result may be passed in; ``text`` is the PTX it was compiled from, when the caller
    already emitted it; ``judged`` the program ``as_judged`` read back from that text, when the
    caller has it; ``into`` verdicts of other judges on the same program, to add to; ``numerics``
    the reference's mode, by default the program's own: its ``NUMERICS`` header, else spec;
    ``gpu`` a GPU worker the run holds; ``alongside``: judges of the same run judged in other
    calls, which a judge may plan for -- ptxas keeps the cubin when one of them reads it;
    ``given``: verdicts already taken, by judge name, as a batch judge's are; ``toolchain``: the
    ptxas release the ptxas judge and the SASS judge run, for a release matrix; ``failed``: where a
    judge's ImportError or FuzzptxError goes, by name, instead of up -- the judge then gives no
    verdict).  A plugin judge that raises anything else gives a ``JudgeFault`` verdict (a finding),
    never the end of the run.  The engine's executor (``fuzzptx.engine.executor``) calls this for
    each program's judges of one stage."""
    v = Verdicts() if into is None else into
    if judged is None:
        t0 = time.perf_counter()
        program, text = as_judged(program, text)
        v.seconds["emit+parse"] = v.seconds.get("emit+parse", 0.0) + time.perf_counter() - t0
    else:
        program = judged
        if text is None:
            text = program.to_ptx()
    given = dict(given or {})
    if ptxas_result is not None:
        given["ptxas"] = ptxas_result
    if hardware_result is not None:
        given["hardware"] = hardware_result
    if all(isinstance(j, Judge) for j in judges):  # judge objects (a run's JudgeSet): in the order given
        ordered = list(judges)
        names = tuple(j.name for j in ordered)
    else:
        names = tuple(judges)
        ordered = resolve(names)
    ctx = Context(text, v, numerics or program.numerics, gpu, tuple(dict.fromkeys(names + tuple(alongside))),
                  toolchain)
    if toolchain is not None:
        v.release = toolchain.release
    for j in ordered:
        if j.name in given:
            v[j.name] = given[j.name]
            continue
        t0 = time.perf_counter()
        try:
            verdict = j.judge(program, ctx)
        except (ImportError, FuzzptxError) as exc:
            if failed is None:
                if j.name in BUILTIN:  # each built-in says what went wrong in its own verdict
                    raise
                verdict = JudgeFault(f"{type(exc).__name__}: {exc}")
            else:
                failed[j.name] = exc
                v.seconds[j.name] = time.perf_counter() - t0
                continue
        except Exception as exc:  # noqa: BLE001 - a plugin's failure is its finding
            if j.name in BUILTIN:
                raise
            verdict = JudgeFault(f"{type(exc).__name__}: {exc}")
        if verdict is not None:  # None: nothing to say of this program (the GPU on a rejected one)
            v[j.name] = verdict
        v.seconds[j.name] = time.perf_counter() - t0
    return v


def names_an_outcome(keep: str) -> bool:
    """Whether a ``--keep`` names a judge outcome (``ptxas:C7519``) rather than a finding signature."""
    return keep.startswith("ptxas:")


def keeps_timeout(keep: str) -> bool:
    """Whether a ``--keep`` asks about the compiler running out of time (``ptxas:timeout``)."""
    return keep.startswith("ptxas:timeout")


def keep_predicate(signature: str):
    """A test ``(findings, verdicts) -> bool`` for ``--keep``: a judge outcome or a finding signature prefix.

    ``ptxas:C7519`` ptxas printed that code; ``ptxas:error`` ptxas rejected (or crashed);
    ``ptxas:crash`` ptxas was killed by a signal; ``ptxas:accepted``;
    anything else matches findings whose signature starts with it (``checker!=ptxas``,
    ``reference!=hardware``, ``checker!=ptxas|missed:C7517``...).
    """
    if signature.startswith("ptxas:"):
        what = signature.split(":", 1)[1]

        def pred(findings: Iterable[Finding], v: Verdicts) -> bool:
            r = v.ptxas
            if r is None or r.timed_out:
                return what == "timeout" and r is not None
            if what == "crash":
                return r.returncode < 0
            if what == "error":
                return not r.accepted
            if what == "accepted":
                return r.accepted
            return any(d.code == what for d in r.diagnostics)

        return pred

    def pred_sig(findings: Iterable[Finding], v: Verdicts) -> bool:
        return any(s.startswith(signature) for f in findings for s in f.signatures)

    return pred_sig


def judges_for(signature: str) -> tuple[str, ...]:
    """The judges a signature needs (so shrinking never runs more than it must)."""
    needed = {"ptxas"} if signature.startswith("ptxas") else set()
    for j in BUILTIN:
        if j in signature:
            needed.add(j)
    if "expect!=" in signature:
        needed |= {"ptxas", "checker"}
    if "checker" in signature:
        needed.add("ptxas")
    if "sass" in signature:
        needed.add("checker")  # the scan applies to programs the checker finds defined
    if is_metamorphic(signature):  # ``hardware:O3!=O0``: a compile pair's, which the metamorphic judge runs
        needed.add("metamorphic")
    plugins = []
    for name in signature.split("|", 1)[0].replace("!=", ":").split(":"):
        if name and name not in BUILTIN and name not in ("expect", "differ"):
            try:
                judge_ = get_judge(name)
            except Exception:  # noqa: BLE001 - not a judge's name (a word of the signature)
                continue
            plugins.append(name)
            needed |= {d for d in judge_.after if d in BUILTIN}
    return tuple(j for j in BUILTIN if j in needed) + tuple(plugins) or ("ptxas",)


def finalize_repro(program: Program, judges: Sequence[str] = CPU_JUDGES, signature: str | None = None,
                   hardware_result: Any = None, verdicts: Verdicts | None = None,
                   text: str | None = None) -> Program:
    """The program with EXPECT lines saying what ``judges`` say of the very file they will be written to.

    Line numbers in verdicts count the header's comment lines, so the verdicts are taken
    on a text whose header has as many lines as the final one (two rounds at most).
    ``verdicts`` (what the same judges said of the program before) sizes the header of the
    first round, which then usually is the last: an EXPECT line per judge that spoke.  With
    ``text``, the PTX those verdicts were taken on, a judge whose verdict depends on the text
    only through line numbers is not run again where the body is unchanged: its verdict moves
    with the header (ptxas's diagnostics, the checker's predicted ones; the checker's rule
    list and a reference run that ended have no line in them).  Only a reference verdict
    that quotes a line ('undefined', an error) is taken again.
    """
    labels = tuple(e for e in program.expect if e[0] == "rule")
    # The EXPECT lines become records of what the judges said; the mutation label stays as
    # history only, so the differ no longer reads them as a label to check.
    notes = tuple(("from " + n) if n.startswith("mutation: ") else n for n in program.notes)
    current = replace(program, signature=signature or program.signature, notes=notes)
    if verdicts is not None:
        current = replace(current, expect=labels + tuple(verdicts.summary().items()))
    for _ in range(4):
        now = current.to_ptx()
        delta = _header_growth(text, now) if verdicts is not None and text is not None else None
        v, rerun = (Verdicts(), list(judges)) if delta is None else moved_verdicts(verdicts, judges, delta)
        if rerun:
            judge(current, rerun, text=now, hardware_result=hardware_result, into=v)
        nxt = replace(current, expect=labels + tuple(v.summary().items()))
        if len(nxt.header_lines()) == len(current.header_lines()):
            return nxt
        current = nxt
    return current


def moved_verdicts(v: Verdicts, judges: Sequence[str], delta: int) -> tuple[Verdicts, list[str]]:
    """``v`` for the same body ``delta`` lines further down, for those of ``judges`` whose
    verdict can be moved (``Judge.moved``); the others are returned to be run again."""
    out, rerun = Verdicts(), []
    for name in judges:
        verdict = v.get(name)
        moved = get_judge(name).moved(verdict, delta) if verdict is not None else None
        if moved is None:
            rerun.append(name)
        else:
            out[name] = moved
    return out, rerun


def _header_growth(before: str, now: str) -> int | None:
    """How many lines further down ``now`` holds the body of ``before`` (None: another body)."""
    a, b = before.splitlines(), now.splitlines()
    i = next((k for k, ln in enumerate(a) if not ln.startswith("//")), len(a))
    j = next((k for k, ln in enumerate(b) if not ln.startswith("//")), len(b))
    return j - i if a[i:] == b[j:] else None
