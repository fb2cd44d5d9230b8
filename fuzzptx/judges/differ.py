"""Run a program through the chosen judges and name every disagreement.

A ``Finding`` carries a stable ``signature`` — ``<pair>|<what>|<family>`` such as
``checker!=ptxas|C7519|wgmma`` or ``reference!=hardware|mismatch|wgmma.f32.bf16`` —
so that findings from many runs and shards bucket together, plus its evidence.
Judges are looked up lazily: a run that does not ask for the hardware never
imports CuPy.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

from fuzzptx import isa
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Instr

JUDGES = ("reference", "checker", "ptxas", "hardware", "mmasim", "metamorphic", "sass")
CPU_JUDGES = ("reference", "checker", "ptxas")


@dataclass(frozen=True)
class Finding:
    signature: str
    message: str
    evidence: tuple[tuple[str, Any], ...] = ()

    @property
    def pair(self) -> str:
        return self.signature.split("|", 1)[0]


@dataclass
class Verdicts:
    """What each judge said about one program (None: that judge did not run)."""

    ptxas: Any = None  # oracles.ptxas.PtxasResult
    checker: Any = None  # list of checker Findings
    predicted: Any = None  # checker's predicted ptxas diagnostics
    reference: Any = None  # oracles.reference.RefResult
    reference_error: str | None = None
    reference_skipped: str | None = None  # outside the reference's subset: not a finding
    checker_error: str | None = None
    reference_error_kind: str = ""  # error class and message shape, so shrinking keeps the same error
    hardware: Any = None  # oracles.hardware.HwResult
    mmasim: Any = None  # the reference with MMA-Sim's arithmetic (oracles.mmasim_judge.run_program)
    mmasim_skipped: str | None = None  # MMA-Sim missing, or it models no product of this program
    metamorphic: Any = None  # metamorphic.Checked: the program's pairs through the GPU (or the reference)
    # whether the reference's run reached what its mutation made undefined (a jump it added, the
    # instruction it broke); taken where the program has its source lines, since a campaign
    # compares a light copy of the program with no body (campaign.shipped)
    mutation_reached: bool | None = None
    sass: Any = None  # ptxas -O3's writes to registers of a wgmma in flight (fuzzptx.oracles.sass), [] if none
    sass_skipped: str | None = None  # no disassembler, or a program the scan does not apply to
    seconds: dict[str, float] = field(default_factory=dict)

    def forget_reference(self) -> None:
        """Drop what the reference said (and what it decided of the mutation's path), as if it never
        ran: a campaign takes it before ptxas answers and keeps it only for programs ptxas accepts.
        Its seconds stay: they were spent."""
        self.reference = self.reference_error = self.reference_skipped = self.mutation_reached = None
        self.reference_error_kind = ""

    def summary(self) -> dict[str, str]:
        """One line per judge for verdict tables and repro EXPECT lines."""
        out: dict[str, str] = {}
        if self.ptxas is not None:
            out["ptxas"] = describe_ptxas(self.ptxas)
        if self.checker is not None:
            rules = sorted({f.rule for f in self.checker})
            out["checker"] = ("findings " + ",".join(rules)) if rules else "clean"
        elif self.checker_error is not None:
            out["checker"] = f"error: {self.checker_error}"
        if self.predicted is not None:
            out["ptxas-model"] = describe_prediction(self.predicted)
        if self.reference_error is not None:
            out["reference"] = f"error: {self.reference_error}"
        elif self.reference_skipped is not None:
            out["reference"] = f"unsupported: {self.reference_skipped}"
        elif self.reference is not None:
            out["reference"] = self.reference.summary()
        if self.hardware is not None:
            out["hardware"] = f"fault: {self.hardware.fault}" if self.hardware.fault else "ran"
        if self.mmasim is not None:
            out["mmasim"] = self.mmasim.summary()
        if self.sass is not None:
            out["sass"] = f"writes in flight: {self.sass[0]}" if self.sass else "clean"
        elif self.sass_skipped is not None:
            out["sass"] = f"skipped: {self.sass_skipped}"
        if self.metamorphic is not None:
            m = self.metamorphic
            out["metamorphic"] = (f"skipped: {m.skipped}" if m.skipped else
                                  f"{len(m.relations)} pair(s) ({', '.join(m.relations) or 'none'}), "
                                  f"{len(m.findings)} differ")
        return out


def describe_ptxas(res: Any) -> str:
    if res.timed_out:
        return "timeout"
    if not res.accepted:
        first = next((d for d in res.diagnostics if d.severity == "error"), None)
        return "rejected" + (f" (line {first.line}: {first.message})" if first else "")
    codes = _ptxas_codes(res)
    return "accepted" + (" " + " ".join(f"{c}@{ln}" for c, ln in codes) if codes else "")


def describe_prediction(pred: Any) -> str:
    if not pred.accepted:
        return "rejected"
    codes = sorted(set(_predicted_codes(pred)), key=lambda t: (t[0], t[1] or 0))
    return "accepted" + (" " + " ".join(f"{c}@{ln}" for c, ln in codes) if codes else "")


def _predicted_codes(pred: Any) -> list[tuple[str, int | None]]:
    return [(c, ln) for c, ln in pred.pairs() if c]


def _ptxas_codes(res: Any) -> list[tuple[str, int | None]]:
    return sorted({(d.code, d.line) for d in res.diagnostics if d.code}, key=lambda t: (t[0], t[1] or 0))


def program_family(program: Program) -> str:
    """The most telling tensor-core family in the program, with its type mix for wgmma/mma."""
    best = None
    rank = {"wgmma.sp": 0, "wgmma": 1, "mma.sp": 2, "mma": 3, "wmma.mma": 4, "ldmatrix": 5, "stmatrix": 6}
    for fn in program.module.functions():
        for ins in fn.instructions():
            form = isa.form_for(ins)
            if form is None:
                continue
            r = rank.get(form.family, 9)
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


def _collapsed_repeats_explain(program: Program, hardware_outputs: dict) -> bool:
    """The GPU's outputs are what the reference gives with the repeated wgmmas dropped (either
    reading of a repeat): the mismatch is ptxas -O3's known collapse, bucketed as
    ``mismatch-repeated-wgmma``."""
    from fuzzptx.oracles.reference import compare as ref_compare, run_program

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
        if not ref_compare(collapsed, ref, hardware_outputs):
            return True
    return False


def _sass(program: Program, text: str, v: Verdicts) -> tuple[list[str] | None, str | None]:
    """The ``sass`` judge: ptxas -O3's writes to registers of a wgmma still in flight, read from
    the SASS of a program the checker finds defined (a mutant that writes an accumulator in
    flight itself would show its own write).  It needs a cubin of this program alone: the ptxas
    judge's where that judge compiled it alone, else one more ptxas run (a batched module holds
    other programs' kernels, as in a campaign or a fuzz run), so it is opt-in."""
    from fuzzptx.oracles.sass import disassembler, inflight_writes, sass

    if not any(i.opcode.startswith("wgmma.mma_async") for f in program.module.functions() if f.body is not None
               for i in f.instructions()):
        return [], None
    tool = disassembler()
    if tool is None:
        return None, "no disassembler (pip install 'fuzzptx[sass]')"
    findings = v.checker
    if findings is None:
        from fuzzptx.oracles.checker import check_module

        findings = check_module(program.module, layers=("isa", "spec"))
    if any(f.severity == "error" for f in findings):
        return None, "the checker finds the program illegal or undefined"
    r = v.ptxas
    if r is None or r.cubin is None or r.shared_cubin:  # no cubin of this program's own (a batch's holds others)
        from fuzzptx.oracles.ptxas import compile_ptx

        r = compile_ptx(text, want_cubin=True)
    if not r.accepted or not r.cubin:
        return None, "ptxas rejects it"
    return inflight_writes(sass(r.cubin, tool)), None


def compare(program: Program, v: Verdicts, *, family: str | None = None,
            full: Callable[[], Program] | None = None) -> list[Finding]:
    """Every pairwise disagreement between the judges that ran, plus broken expectations
    (``family``: the program's ``program_family``, when the caller has it already; ``full``: the
    program with its bodies, where ``program`` is a campaign's shipped header -- only a
    reference/hardware mismatch asks for it, to test the repeated-wgmma diagnosis)."""
    fam = program_family(program) if family is None else family
    out: list[Finding] = []
    if v.ptxas is not None and v.predicted is not None and not v.ptxas.timed_out:
        if v.predicted.accepted != v.ptxas.accepted:
            what = "accept" if v.predicted.accepted else "reject"
            out.append(Finding(
                f"checker!=ptxas|{what}|{fam}",
                f"checker predicts {'acceptance' if v.predicted.accepted else 'rejection'}, ptxas {describe_ptxas(v.ptxas)}",
                (("ptxas", describe_ptxas(v.ptxas)), ("checker", describe_prediction(v.predicted))),
            ))
        elif v.ptxas.accepted:
            real = set(_ptxas_codes(v.ptxas))
            pred = set(_predicted_codes(v.predicted))
            real_codes, pred_codes = {c for c, _ in real}, {c for c, _ in pred}
            for code in sorted(real_codes | pred_codes):
                r = sorted((ln for c, ln in real if c == code), key=lambda x: x or 0)
                q = sorted((ln for c, ln in pred if c == code), key=lambda x: x or 0)
                if r == q:
                    continue
                what = "missed" if not q else "spurious" if not r else "line"
                out.append(Finding(
                    f"checker!=ptxas|{what}:{code}|{fam}",
                    f"{code}: ptxas printed it at line(s) {r or 'none'}, the model predicted line(s) {q or 'none'}",
                    (("code", code), ("ptxas_lines", tuple(r)), ("predicted_lines", tuple(q))),
                ))
    if v.ptxas is not None and v.ptxas.timed_out:
        out.append(Finding(f"ptxas:timeout|{fam}", "ptxas did not finish in time"))
    if v.reference_error is not None and _expects_defined(program) and (v.ptxas is None or v.ptxas.accepted):
        kind = "crash" if v.reference_error.startswith("internal error") else "error"
        if v.reference_error_kind:
            kind += ":" + v.reference_error_kind
        out.append(Finding(f"reference:{kind}|{fam}", f"the reference could not run a legal program: {v.reference_error}"))
    if v.checker_error is not None:
        out.append(Finding(f"checker:crash|{fam}", f"the checker crashed: {v.checker_error}"))
    if v.hardware is not None:
        if v.hardware.fault:
            out.append(Finding(f"hardware:fault:{v.hardware.fault}|{fam}", f"the GPU faulted: {v.hardware.fault}"))
        elif v.reference is not None and _expects_defined(program):
            from fuzzptx.oracles.reference import compare as ref_compare

            mism = ref_compare(program, v.reference, v.hardware.outputs)
            if mism:
                explained = _collapsed_repeats_explain(full() if full is not None else program, v.hardware.outputs)
                what = "mismatch-repeated-wgmma" if explained else "mismatch"
                out.append(Finding(f"reference!=hardware|{what}|{output_family(program, mism[0].buffer, fam)}", f"{len(mism)} element(s) differ; first: {mism[0]}",
                                   (("mismatches", len(mism)), ("first", str(mism[0])))))
    out += mmasim_findings(program, v, fam)
    if v.sass:
        out.append(Finding(f"sass:inflight-write|{fam}",
                           f"ptxas -O3 writes {len(v.sass)} register(s) of a wgmma still in flight, first: {v.sass[0]}",
                           (("writes", "; ".join(v.sass[:4])),)))
    if v.metamorphic is not None:
        out += [f for _, f in v.metamorphic.findings]
    out += expectation_findings(program, v, fam)
    return out


def mmasim_findings(program: Program, v: Verdicts, fam: str) -> list[Finding]:
    """MMA-Sim three ways: against the GPU (a disagreement where our hardware mode agrees with the
    GPU is a finding about MMA-Sim) and against the reference (its hardware mode: bit for bit;
    spec mode: MMA-Sim's result outside the allowed set)."""
    if v.mmasim is None or v.mmasim.undefined or not _expects_defined(program):
        return []
    from fuzzptx.oracles.reference import compare as ref_compare

    out = []
    if v.hardware is not None and not v.hardware.fault:
        mism = ref_compare(program, v.mmasim, v.hardware.outputs)
        if mism:
            out.append(Finding(f"mmasim!=hardware|mismatch|{output_family(program, mism[0].buffer, fam)}", f"{len(mism)} element(s) differ; first: {mism[0]}",
                               (("mismatches", len(mism)), ("first", str(mism[0])))))
    if v.reference is not None and not v.reference.undefined:  # spec mode: MMA-Sim outside the set; hardware: != ours
        mism = ref_compare(program, v.reference, {b: v.mmasim.bytes(b) for b in v.mmasim.outputs})
        if mism:
            out.append(Finding(f"mmasim!=reference|mismatch|{output_family(program, mism[0].buffer, fam)}", f"{len(mism)} element(s) differ; first: {mism[0]}",
                               (("mismatches", len(mism)), ("first", str(mism[0])))))
    return out


def _message_slug(message: str) -> str:
    """The shape of an error message: its first three words without numbers or names in them."""
    import re

    text = message.split(": ", 1)[1] if ": " in message else message
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z_\-]*", text) if not any(c.isdigit() for c in w)]
    return "-".join(words[:3]).lower()


def mutation_of(program: Program) -> str | None:
    """The mutation a labelled illegal program came from (its ``mutation: NAME breaks RULE`` note)."""
    for note in program.notes:
        if note.startswith("mutation: "):
            return note.split()[1]
    return None


def is_labelled(program: Program) -> bool:
    return mutation_of(program) is not None


def _expects_defined(program: Program) -> bool:
    """False for programs labelled rejected by ptxas or undefined by the spec (nothing to compare)."""
    for judge_, verdict in program.expect:
        if judge_ == "ptxas" and verdict.startswith("rejected") and is_labelled(program):
            return False
        if judge_ in ("checker", "reference") and verdict.startswith(("undefined", "illegal")) and is_labelled(program):
            return False
    return True


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
        if judge_ == "ptxas" and v.ptxas is not None and not v.ptxas.timed_out:
            from fuzzptx.strategies.mutations import verdict_holds

            if not verdict_holds(verdict, v.ptxas.accepted, [c for c, _ in _ptxas_codes(v.ptxas)]):
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
                    (v.mutation_reached if v.mutation_reached is not None else _took_the_mutated_path(program, v.reference)):
                out.append(Finding(f"expect!=reference|{rule}|{fam}", f"mutation {rule!r} makes the program undefined; the reference ran it fully defined and saw no undefined behaviour"))
    return out


def _hardware_defined(name: str) -> bool:
    """The mutation's undefined behaviour is one the H100 numerics model defines (its table says)."""
    from fuzzptx.strategies.mutations import BY_NAME

    m = BY_NAME.get(name)
    return m is not None and m.hardware_defined


def _took_the_mutated_path(program: Program, ref: Any) -> bool:
    """False where the mutation jumps over an instruction on one path and the run never jumped,
    or made one instruction undefined and the run never reached it."""
    from fuzzptx.strategies.mutations import path_jump_lines, site_lines

    jumps = path_jump_lines(program)
    if jumps and not set(jumps) & ref.branches_taken:
        return False
    sites = site_lines(program, mutation_of(program) or "")
    return not sites or any(ref.ran(line) for line in sites)


def _any_undefined(ref: Any) -> bool:
    from fuzzptx.oracles.reference.values import UNDEF

    return any(bool((o.kind == UNDEF).any()) for o in ref.outputs.values())


def _expected_codes(verdict: str) -> list[str]:
    import re

    return re.findall(r"C\d{4}", verdict)


# ----------------------------------------------------------- running judges


def as_judged(program: Program, text: str | None = None) -> tuple[Program, str]:
    """The program exactly as the judges see it: its PTX text and the program parsed back from it.

    Every judge reads the same text, so the checker's and the reference's line numbers are
    the lines ptxas reports (a generated program has no source lines until it is emitted).
    """
    text = program.to_ptx() if text is None else text
    try:
        from fuzzptx.ptx.parse import parse

        parsed = replace(program, module=parse(text, "<program>"))
    except Exception:
        parsed = program  # the parser's own failure must not hide the other judges' verdicts
    return parsed, text


def judge(program: Program, judges: Sequence[str] = CPU_JUDGES, *, ptxas_result: Any = None, hardware_result: Any = None,
          text: str | None = None, numerics: str | None = None, judged: Program | None = None,
          into: Verdicts | None = None) -> Verdicts:
    """Run one program through ``judges`` (a precomputed ptxas/hardware result may be passed in;
    ``text`` is the PTX it was compiled from, when the caller already emitted it; ``judged`` the
    program ``as_judged`` read back from that text, when the caller has it; ``into`` verdicts
    of other judges on the same program, to add to; ``numerics`` the reference's mode, by default
    the program's own: its ``NUMERICS`` header, else spec)."""
    import time

    v = Verdicts() if into is None else into
    if judged is None:
        t0 = time.perf_counter()
        program, text = as_judged(program, text)
        v.seconds["emit+parse"] = v.seconds.get("emit+parse", 0.0) + time.perf_counter() - t0
    else:
        program = judged
        if text is None and "ptxas" in judges and ptxas_result is None:
            text = program.to_ptx()
    if "ptxas" in judges:
        if ptxas_result is None:
            from fuzzptx.oracles.ptxas import compile_ptx

            t0 = time.perf_counter()
            ptxas_result = compile_ptx(text, want_cubin="hardware" in judges or "sass" in judges)
            v.seconds["ptxas"] = time.perf_counter() - t0
        v.ptxas = ptxas_result
    if "checker" in judges:
        from fuzzptx.oracles.checker import check_and_predict  # one run of the ptxas model for both

        t0 = time.perf_counter()
        try:
            v.checker, v.predicted = check_and_predict(program.module)
        except Exception as exc:  # likewise for the checker
            v.checker_error = f"internal error: {type(exc).__name__}: {exc}"
            v.checker = v.predicted = None
        v.seconds["checker"] = time.perf_counter() - t0
    if "sass" in judges:
        t0 = time.perf_counter()
        v.sass, v.sass_skipped = _sass(program, text if text is not None else program.to_ptx(), v)
        v.seconds["sass"] = time.perf_counter() - t0
    if "reference" in judges:
        from fuzzptx.errors import FuzzptxError
        from fuzzptx.oracles.reference import run_program
        from fuzzptx.oracles.reference.errors import Unsupported

        t0 = time.perf_counter()
        try:
            v.reference = run_program(program, mode=numerics or program.numerics)
            if is_labelled(program):
                v.mutation_reached = _took_the_mutated_path(program, v.reference)
        except Unsupported as exc:
            v.reference_skipped = str(exc)
        except FuzzptxError as exc:
            v.reference_error = str(exc)
            v.reference_error_kind = f"{type(exc).__name__}:{_message_slug(exc.message)}"
        except Exception as exc:  # a crash of the reference is a finding, never the end of a run
            v.reference_error = f"internal error: {type(exc).__name__}: {exc}"
        v.seconds["reference"] = time.perf_counter() - t0
    if "hardware" in judges:
        if hardware_result is None:
            from fuzzptx.oracles.hardware import run_program_on_gpu

            t0 = time.perf_counter()
            hardware_result = run_program_on_gpu(program)
            v.seconds["hardware"] = time.perf_counter() - t0
        v.hardware = hardware_result
    if "mmasim" in judges:
        from fuzzptx.oracles import mmasim_judge

        t0 = time.perf_counter()
        why = mmasim_judge.available()
        if why:
            v.mmasim_skipped = why
        else:
            try:
                res, modelled = mmasim_judge.run_program(program)
                if modelled:
                    v.mmasim = res
                else:
                    v.mmasim_skipped = "MMA-Sim models no tensor-core product of this program"
            except Exception as exc:  # noqa: BLE001 - outside the reference's subset, or MMA-Sim failing
                v.mmasim_skipped = f"{type(exc).__name__}: {exc}"
        v.seconds["mmasim"] = time.perf_counter() - t0
    if "metamorphic" in judges:
        t0 = time.perf_counter()
        v.metamorphic = metamorphic_verdict(program, on_gpu="hardware" in judges)
        v.seconds["metamorphic"] = time.perf_counter() - t0
    return v


def metamorphic_verdict(program: Program, *, on_gpu: bool, worker: Any = None) -> Any:
    """The program's metamorphic pairs (``fuzzptx.judges.metamorphic``) on the GPU when ``on_gpu`` (through
    ``worker``, or a fresh one), else on the reference as its CPU stand-in. A judge that breaks
    says so as a skip, never by losing the program's other verdicts."""
    from fuzzptx.judges import metamorphic

    try:
        if on_gpu:
            if worker is None:
                from fuzzptx.oracles.hardware import HardwareWorker

                with HardwareWorker() as w:
                    return metamorphic.check_program(program, metamorphic.HardwareJudge(w))
            return metamorphic.check_program(program, metamorphic.HardwareJudge(worker))
        return metamorphic.check_program(program, metamorphic.ReferenceJudge())
    except Exception as exc:  # noqa: BLE001
        if type(exc).__name__ == "HardwareUnavailable":
            raise
        return metamorphic.Checked(skipped=f"metamorphic judge failed: {type(exc).__name__}: {exc}")


def keep_predicate(signature: str):
    """A test ``(findings, verdicts) -> bool`` for ``--keep``: a judge outcome or a finding signature prefix.

    ``ptxas:C7519`` ptxas printed that code; ``ptxas:error`` ptxas rejected; ``ptxas:accepted``;
    anything else matches findings whose signature starts with it (``checker!=ptxas``,
    ``reference!=hardware``, ``checker!=ptxas|missed:C7517``...).
    """
    if signature.startswith("ptxas:"):
        what = signature.split(":", 1)[1]

        def pred(findings: Iterable[Finding], v: Verdicts) -> bool:
            r = v.ptxas
            if r is None or r.timed_out:
                return what == "timeout" and r is not None
            if what == "error":
                return not r.accepted
            if what == "accepted":
                return r.accepted
            return any(d.code == what for d in r.diagnostics)

        return pred

    def pred_sig(findings: Iterable[Finding], v: Verdicts) -> bool:
        return any(f.signature.startswith(signature) for f in findings)

    return pred_sig


def judges_for(signature: str) -> tuple[str, ...]:
    """The judges a signature needs (so shrinking never runs more than it must)."""
    needed = {"ptxas"} if signature.startswith("ptxas") else set()
    for j in JUDGES:
        if j in signature:
            needed.add(j)
    if "expect!=" in signature:
        needed |= {"ptxas", "checker"}
    if "checker" in signature:
        needed.add("ptxas")
    if signature.startswith("sass"):
        needed.add("checker")  # the scan applies to programs the checker finds defined
    return tuple(j for j in JUDGES if j in needed) or ("ptxas",)


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
    verdict can be moved; the others are returned to be run again."""
    out, rerun = Verdicts(), []
    for j in judges:
        if j == "ptxas" and v.ptxas is not None:
            out.ptxas = v.ptxas.moved(delta)
        elif j == "checker" and v.checker is not None and v.predicted is not None and v.checker_error is None:
            out.checker = v.checker  # its summary is the set of rule ids
            out.predicted = replace(v.predicted, diagnostics=tuple(
                replace(d, line=None if d.line is None else d.line + delta) for d in v.predicted.diagnostics))
        elif j == "reference" and v.reference is not None and not v.reference.undefined:
            out.reference = v.reference  # values and bounds: no line in them
        else:
            rerun.append(j)
    return out, rerun


def _header_growth(before: str, now: str) -> int | None:
    """How many lines further down ``now`` holds the body of ``before`` (None: another body)."""
    a, b = before.splitlines(), now.splitlines()
    i = next((k for k, ln in enumerate(a) if not ln.startswith("//")), len(a))
    j = next((k for k, ln in enumerate(b) if not ln.startswith("//")), len(b))
    return j - i if a[i:] == b[j:] else None
