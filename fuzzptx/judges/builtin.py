"""The built-in judges, registered in the order their verdict lines print: ptxas, the checker
(its ISA/spec findings and its ptxas model), the reference interpreter, the GPU, MMA-Sim, the
SASS reader, and the metamorphic pairs.  Each is a thin adapter from ``fuzzptx.oracles`` to the
``Judge`` interface; what each reports against the others is its ``findings``."""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, replace
from typing import Any

from fuzzptx.strategies.scalar_kernels import is_scalar_kernel
from fuzzptx.errors import FuzzptxError
from fuzzptx.oracles import mmasim_judge
from fuzzptx.oracles.checker import check_and_predict, check_module
from fuzzptx.oracles.hardware import gpu_available, run_program_on_gpu
from fuzzptx.oracles import toolchains
from fuzzptx.oracles.ptxas import PINNED_VERSION, compile_batch, compile_ptx
from fuzzptx.oracles.ptxas_merge import unsuffixed
from fuzzptx.oracles.reference import compare as ref_compare, run_program
from fuzzptx.oracles.reference.errors import BadAddress, MissingInput, StepLimit, Unsupported
from fuzzptx.oracles.sass import cubin_sm, disassemble, disassemble_all, disassembler, gmma_count_hazards, verify
from fuzzptx.oracles.sass.listing import cached as cached_listing
from fuzzptx.oracles.sass.vocabulary import program_forms
from fuzzptx.program import Program

from .metamorphic import Checked, HardwareJudge as OnGpu, PreparedPairs, ReferenceJudge as OnReference, compile_together
from . import compile_pairs
from .metamorphic import prepare_pairs as metamorphic_prepare, verdict as metamorphic_verdict
from .registry import get as get_judge, register, register_family
from .base import (ACCEPTED, COMPILE, CUBIN, DEVICE, EARLY, GPU, IR, METAMORPHIC, BATCH, CheckerVerdict, Context,
                   Done, Judge, NotApplicable, ReferenceVerdict, SassVerdict, SkippableVerdict, Verdicts)
from .finding import Finding
from .programs import expects_defined, is_labelled, outputs_against_reference, took_the_mutated_path

# The judge sets each route uses unless told otherwise: the one place they are written.
#  run: the CPU fuzz run (the SASS verifier reads ptxas's own cubins on the CPU);
#  campaign: the nightly hardware route; the checker is a static judge whose only differential
#    partner is ptxas, which the CPU fuzz runs already cover, and on a GPU node it costs ~8-10% of
#    the throughput (its findings, ptxas-model gaps, are not the hardware team's);
#  pytest: the fuzz tests of the pytest plugin, and ``differ.judge`` when given no judges;
#  replay: a repro file put back through every judge (the GPU where there is one);
#  matrix: every CPU judge against each release of a release matrix (the GPU added where there is one).
DEFAULT_JUDGES: dict[str, tuple[str, ...]] = {
    "run": ("reference", "checker", "ptxas", "sass"),
    "campaign": ("reference", "ptxas", "sass", "hardware", "metamorphic"),
    "pytest": ("reference", "checker", "ptxas"),
    "replay": ("reference", "ptxas", "checker", "hardware"),
    "matrix": ("ptxas", "checker", "reference", "sass", "hardware"),
}
CPU_JUDGES = DEFAULT_JUDGES["pytest"]
# The reference's numerics modes: the PTX ISA's error bounds, or the bit-exact H100 model.
NUMERICS = ("spec", "hardware")
# The built-in names in registration order.
BUILTIN = ("ptxas", "checker", "reference", "hardware", "mmasim", "sass", "metamorphic")
# The order their findings are listed in a record (a checker-vs-ptxas disagreement first).
FINDINGS_ORDER = ("checker", "ptxas", "reference", "hardware", "mmasim", "sass", "metamorphic")


# ------------------------------------------------------------------ ptxas


def _located(d: Any) -> str:
    """A ptxas diagnostic as ``line N: message`` (the message alone where ptxas named no line)."""
    return f"line {d.line}: {d.message}" if d.line is not None else d.message


def describe_ptxas(res: Any) -> str:
    if res.timed_out:
        return "timeout"
    if res.returncode < 0:  # killed by a signal: a crash, not a rejection
        return f"crashed (signal {-res.returncode})"
    if not res.accepted:
        first = next((d for d in res.diagnostics if d.severity == "error"), None)
        return "rejected" + (f" ({_located(first)})" if first else "")
    codes = ptxas_codes(res)
    return "accepted" + (" " + " ".join(f"{c}@{ln}" for c, ln in codes) if codes else "")


def describe_prediction(pred: Any) -> str:
    """``accepted C7519@14 may:C7512`` -- "may" codes (allocator-dependent) after the exact ones."""
    if not pred.accepted:
        return "rejected"
    codes = sorted(set(predicted_codes(pred)), key=lambda t: (t[0], t[1] or 0))
    may = getattr(pred, "may", ())
    return "accepted" + (" " + " ".join(f"{c}@{ln}" for c, ln in codes) if codes else "") + \
        (" may:" + ",".join(may) if may else "")


def predicted_codes(pred: Any) -> list[tuple[str, int | None]]:
    return [(c, ln) for c, ln in pred.pairs() if c]


def ptxas_codes(res: Any) -> list[tuple[str, int | None]]:
    return sorted({(d.code, d.line) for d in res.diagnostics if d.code}, key=lambda t: (t[0], t[1] or 0))


class PtxasJudge(Judge):
    """The real ptxas (the pinned release from PyPI): accepted or rejected, its diagnostics, the cubin."""

    name = "ptxas"
    stage = COMPILE
    needs = frozenset()
    summary_keys = ("ptxas",)

    def judge(self, program: Program, ctx: Context) -> Any:
        return compile_ptx(ctx.text, want_cubin=any(CUBIN in get_judge(j).needs for j in ctx.judges),
                           ptxas=ctx.toolchain.ptxas if ctx.toolchain is not None else None)

    def judge_batch(self, programs: list[Program], texts: list[str], *, cubins: bool = False,
                    toolchain: Any = None) -> list[Any]:
        """One batched ptxas run over the block (one module), cubins kept when a judge reads them."""
        return compile_batch(texts, want_cubin=cubins, ptxas=toolchain.ptxas if toolchain is not None else None)

    def light(self, verdict: Any) -> Any:
        return _light(verdict)

    def accepted(self, verdict: Any) -> bool | None:
        return None if isinstance(verdict, NotApplicable) else bool(verdict.accepted)

    def summary(self, verdict: Any) -> dict[str, str]:
        return {"ptxas": describe_ptxas(verdict)}

    def rows(self, program: Program, verdict: Any, v: Verdicts) -> list[tuple[str, str, str]]:
        first = next((d for d in verdict.diagnostics if d.severity in ("error", "warning")), None)
        return [("ptxas", describe_ptxas(verdict), _located(first) if first else "")]

    def findings(self, program: Program, v: Verdicts, family: str, *, full: Any = None) -> list[Finding]:
        """A timeout or a crash (ptxas killed by a signal) of the pinned ptxas: a compiler bug
        candidate whatever the program, since ptxas must answer every input with a verdict."""
        if v.ptxas is None:
            return []
        if v.ptxas.timed_out:
            return [Finding(f"ptxas:timeout|{family}", v.ptxas.timeout_text())]
        if v.ptxas.returncode < 0:
            return [Finding(f"ptxas:crash|{family}", f"ptxas died with signal {-v.ptxas.returncode}")]
        return []

    def moved(self, verdict: Any, delta: int) -> Any:
        return verdict.moved(delta)


class ReleasePtxasJudge(PtxasJudge):
    """Another ptxas release (``ptxas@12.9.86``), from the toolchain cache: the same verdict as the
    pinned ptxas's, "not applicable" to a program whose ``.version`` or target the release cannot
    read, and a finding where it and an older release that ran on the program disagree on
    acceptance, or where it crashes."""

    stage = BATCH
    summary_keys = ()

    def __init__(self, toolchain: "toolchains.Toolchain"):
        self.toolchain = toolchain
        # a binary given by path is named by its path: another process resolves the same one
        self.name = f"ptxas@{toolchain.ptxas}" if toolchain.source == "path" else toolchain.name
        self.release = toolchain.release
        # the last block's results with their cubins, by PTX text: ``sass@R`` reads them in this
        # process instead of compiling each program again (verdicts travel without cubins)
        self.last_batch: dict[str, Any] = {}

    def not_applicable(self, program: Program) -> str | None:
        """Why this release cannot judge the program (its PTX version or target), or None."""
        return release_not_applicable(self.toolchain, program)

    def judge(self, program: Program, ctx: Context) -> Any:
        why = self.not_applicable(program)
        if why is not None:
            return NotApplicable(why)
        return _light(compile_ptx(ctx.text, want_cubin=False, ptxas=self.toolchain.ptxas))

    def judge_batch(self, programs: list[Program], texts: list[str], *, cubins: bool = False,
                    toolchain: Any = None) -> list[Any]:
        """Verdicts for a block: one batched run of this release over the programs it can read
        (``toolchain`` is the compile stage's: this judge runs its own)."""
        out: list[Any] = [NotApplicable(why) if (why := self.not_applicable(p)) else None for p in programs]
        todo = [k for k, v in enumerate(out) if v is None]
        self.last_batch = {}
        for k, r in zip(todo, compile_batch([texts[k] for k in todo], want_cubin=True, ptxas=self.toolchain.ptxas)
                        if todo else ()):
            self.last_batch[texts[k]] = r
            out[k] = _light(r)
        return out

    def light(self, verdict: Any) -> Any:
        return verdict  # a release's verdict carries no cubin

    def summary(self, verdict: Any) -> dict[str, str]:
        if isinstance(verdict, NotApplicable):
            return {self.name: f"n/a: {verdict.reason}"}
        return {self.name: describe_ptxas(verdict)}

    def rows(self, program: Program, verdict: Any, v: Verdicts) -> list[tuple[str, str, str]]:
        if isinstance(verdict, NotApplicable):
            return [(self.name, "n/a", verdict.reason)]
        return [(self.name, *r[1:]) for r in super().rows(program, verdict, v)]

    def findings(self, program: Program, v: Verdicts, family: str, *, full: Any = None) -> list[Finding]:
        mine = v.get(self.name)
        if mine is None or isinstance(mine, NotApplicable):
            return []
        if mine.timed_out:
            return [Finding(f"{self.name}:timeout|{family}", f"ptxas {self.release}: {mine.timeout_text()}")]
        if mine.returncode < 0:
            return [Finding(f"{self.name}:crash|{family}", f"ptxas {self.release} died with signal {-mine.returncode}")]
        out = []
        key = _release_key(self.release)
        for name, other in v.items():
            rel = release_of(name)
            if rel is None or name == self.name or key is None or _release_key(rel) is None:
                continue
            if name != "ptxas" and not _release_key(rel) < key:
                continue  # each pair once: the newer release reports it (the pinned ptxas reports none)
            if isinstance(other, NotApplicable) or other.timed_out or other.returncode < 0:
                continue
            (old_name, old), (new_name, new) = sorted(((name, other), (self.name, mine)),
                                                     key=lambda nv: _release_key(release_of(nv[0])))
            if old.accepted != new.accepted and not _beyond_limits(old if new.accepted else new):
                what = f"{'accepted' if old.accepted else 'rejected'}-then-{'accepted' if new.accepted else 'rejected'}"
                out.append(Finding(f"{old_name}!={new_name}|{what}|{family}",
                                   f"ptxas {release_of(old_name)} {describe_ptxas(old)}; "
                                   f"ptxas {release_of(new_name)} {describe_ptxas(new)}",
                                   (("older", describe_ptxas(old)), ("newer", describe_ptxas(new)))))
        return out

    def moved(self, verdict: Any, delta: int) -> Any:
        return verdict if isinstance(verdict, NotApplicable) else verdict.moved(delta)


def release_not_applicable(tc: "toolchains.Toolchain", program: Program) -> str | None:
    """Why a ptxas release cannot judge the program (its PTX version or target), or None."""
    version = program.module.version
    if tc.reads(version) is not True:
        return f".version {version} is beyond what ptxas {tc.release} is known to read"
    target = program.module.target.split(",")[0].strip()
    known = tc.targets()
    if known and target not in known:
        return f"ptxas {tc.release} has no target {target}"
    return None


# Resource limits that differ between releases by design, not by mistake: ptxas 12.x allows 48 KB
# (0xc000) of static shared memory per entry, 13.x more on sm_90a (an H100 campaign, seed 25:
# every one of 40 "rejected-then-accepted" repros between 12.9.86 and 13.5.37 was this limit).
RELEASE_LIMITS = ("uses too much shared data",)


def _beyond_limits(rejected: Any) -> bool:
    """The rejecting release said no because the program exceeds one of its documented limits:
    the program is beyond that release, like a newer ``.version``, not a disagreement."""
    return any(limit in d.message for d in rejected.diagnostics if d.severity == "error" for limit in RELEASE_LIMITS)


def _light(r: Any) -> Any:
    """A release's verdict as it travels between processes (no cubin: only the pinned ptxas's runs)."""
    return replace(r, cubin=None, kernel_names=dict(r.kernel_names))


def _release_key(release: str) -> tuple[int, ...] | None:
    try:
        return toolchains._vt(release)
    except ValueError:  # a binary named by its path
        return None


def release_of(judge_name: str) -> str | None:
    """The ptxas release a judge name stands for (``ptxas`` is the pinned one), else None."""
    if judge_name == "ptxas":
        return PINNED_VERSION
    return judge_name[len("ptxas@"):] if judge_name.startswith("ptxas@") else None


def release_judge(spec: str) -> Judge:
    """``ptxas@<release>``: the release resolved (fetched into the cache if missing) by
    ``fuzzptx.oracles.toolchains``; the pinned release is the ``ptxas`` judge itself."""
    (tc,) = toolchains.resolve(spec)
    return ReleasePtxasJudge(tc)


def release_judges(spec: str) -> tuple[str, ...]:
    """The judge names for a ``--ptxas`` SPEC: ``ptxas`` for the pinned release (it stays the
    run's primary ptxas, whose cubins the GPU runs), ``ptxas@<release>`` for each other."""
    names = []
    for tc in toolchains.resolve(spec):
        if tc.release == PINNED_VERSION and tc.source == "pinned package":
            names.append("ptxas")
        else:
            judge = ReleasePtxasJudge(tc)
            register(judge)
            names.append(judge.name)
    return tuple(dict.fromkeys(names))


def with_releases(judges: tuple[str, ...], spec: str | None) -> tuple[str, ...]:
    """``judges`` with the ptxas judge replaced by one per release of ``--ptxas SPEC`` (none: as given),
    and the SASS judge by one per release (``sass@R`` reads the SASS of ``ptxas@R``)."""
    if not spec:
        return judges
    releases = release_judges(spec)
    sass = tuple("sass" + r[len("ptxas"):] for r in releases)
    for name in sass:
        get_judge(name)  # registered here, before a pool process is forked
    out: list[str] = []
    for j in judges:
        out += releases if j == "ptxas" else sass if j == "sass" else (j,)
    if "ptxas" not in judges:
        out += releases
    return tuple(dict.fromkeys(out))


# ------------------------------------------------------------------ checker


class CheckerJudge(Judge):
    """The static checker: ISA and spec-pipeline rule findings, and its model of ptxas's diagnostics.
    The model is of one release (``MODELS``): against another release's ptxas it is silent.  Codes
    it predicts as "may" (allocator-dependent: ``PredictedDiagnostics.may``) are no finding whether
    ptxas prints them or not."""

    name = "checker"
    MODELS = PINNED_VERSION  # the release its ptxas model learned from: the pinned one
    stage = EARLY
    summary_keys = ("checker", "ptxas-model")

    def judge(self, program: Program, ctx: Context) -> CheckerVerdict:
        try:
            findings, predicted = check_and_predict(program.module, tensormaps=program.tensormaps)
        except Exception as exc:  # a checker crash is a finding (checker:crash), never the end of a run
            return CheckerVerdict(error=f"internal error: {type(exc).__name__}: {exc}")
        return CheckerVerdict(findings, predicted)

    def foresees_rejection(self, verdict: CheckerVerdict) -> bool:
        """The ptxas model predicts a rejection (it agrees with ptxas on ~99% of programs)."""
        return verdict.predicted is not None and not verdict.predicted.accepted

    def summary(self, verdict: CheckerVerdict) -> dict[str, str]:
        out: dict[str, str] = {}
        if verdict.findings is not None:
            rules = sorted({f.rule for f in verdict.findings})
            out["checker"] = ("findings " + ",".join(rules)) if rules else "clean"
        elif verdict.error is not None:
            out["checker"] = f"error: {verdict.error}"
        if verdict.predicted is not None:
            out["ptxas-model"] = describe_prediction(verdict.predicted)
        return out

    def rows(self, program: Program, verdict: CheckerVerdict, v: Verdicts) -> list[tuple[str, str, str]]:
        if verdict.error is not None:
            return [("checker", "error", verdict.error)]
        s = self.summary(verdict)
        return [("checker", s["checker"], "; ".join(f"{f.rule}@{getattr(f, 'line', '?')}" for f in verdict.findings[:4])),
                ("ptxas-model", s["ptxas-model"], "")]

    def findings(self, program: Program, v: Verdicts, family: str, *, full: Any = None) -> list[Finding]:
        out: list[Finding] = []
        real_res, pred_res = v.ptxas, v.predicted
        modelled = v.release is None or v.release == self.MODELS
        may = set(getattr(pred_res, "may", ()) or ())  # allocator-dependent: never a disagreement
        if modelled and real_res is not None and pred_res is not None and not real_res.timed_out:
            if pred_res.accepted != real_res.accepted:  # an allocator failure too: a "may" code is no rejection
                what = "accept" if pred_res.accepted else "reject"
                out.append(Finding(
                    f"checker!=ptxas|{what}|{family}",
                    f"checker predicts {'acceptance' if pred_res.accepted else 'rejection'}, ptxas {describe_ptxas(real_res)}",
                    (("ptxas", describe_ptxas(real_res)), ("checker", describe_prediction(pred_res))),
                ))
            elif real_res.accepted:
                real = set(ptxas_codes(real_res))
                pred = set(predicted_codes(pred_res))
                for code in sorted(({c for c, _ in real} | {c for c, _ in pred}) - may):
                    r = sorted((ln for c, ln in real if c == code), key=lambda x: x or 0)
                    q = sorted((ln for c, ln in pred if c == code), key=lambda x: x or 0)
                    if r == q:
                        continue
                    what = "missed" if not q else "spurious" if not r else "line"
                    out.append(Finding(
                        f"checker!=ptxas|{what}:{code}|{family}",
                        f"{code}: ptxas printed it at line(s) {r or 'none'}, the model predicted line(s) {q or 'none'}",
                        (("code", code), ("ptxas_lines", tuple(r)), ("predicted_lines", tuple(q))),
                    ))
        if v.checker_error is not None:
            out.append(Finding(f"checker:crash|{family}", f"the checker crashed: {v.checker_error}"))
        return out

    def moved(self, verdict: CheckerVerdict, delta: int) -> CheckerVerdict | None:
        if verdict.findings is None or verdict.predicted is None or verdict.error is not None:
            return None
        return CheckerVerdict(verdict.findings, replace(verdict.predicted, diagnostics=tuple(
            replace(d, line=None if d.line is None else d.line + delta) for d in verdict.predicted.diagnostics)))


# ------------------------------------------------------------------ reference


def _message_slug(message: str) -> str:
    """The shape of an error message: its first three words without numbers or names in them."""
    text = message.split(": ", 1)[1] if ": " in message else message
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z_\-]*", text) if not any(c.isdigit() for c in w)]
    return "-".join(words[:3]).lower()


class ReferenceJudge(Judge):
    """The pure-Python reference interpreter: output buffers with their allowed bounds, or 'undefined'."""

    name = "reference"
    stage = EARLY
    needs = frozenset({IR, ACCEPTED})
    summary_keys = ("reference",)

    def judge(self, program: Program, ctx: Context) -> ReferenceVerdict:
        try:
            result = run_program(program, mode=ctx.numerics)
        except Unsupported as exc:
            return ReferenceVerdict(skipped=str(exc))
        except (BadAddress, MissingInput, StepLimit) as exc:
            if program.inferred:  # fuzzptx's guess at a launch does not fit: a limit, not a finding
                return ReferenceVerdict(skipped=f"cannot run the inferred launch (write the header by hand): {exc}")
            return ReferenceVerdict(error=str(exc), error_kind=f"{type(exc).__name__}:{_message_slug(exc.message)}",
                                    exception=exc, mode=ctx.numerics)
        except FuzzptxError as exc:
            return ReferenceVerdict(error=str(exc), error_kind=f"{type(exc).__name__}:{_message_slug(exc.message)}",
                                    exception=exc, mode=ctx.numerics)
        except Exception as exc:  # a crash of the reference is a finding, never the end of a run
            return ReferenceVerdict(error=f"internal error: {type(exc).__name__}: {exc}", exception=exc,
                                    mode=ctx.numerics)
        reached = None
        if is_labelled(program):
            reached = took_the_mutated_path(program, result)
        return ReferenceVerdict(result, mutation_reached=reached, mode=ctx.numerics)

    def summary(self, verdict: ReferenceVerdict) -> dict[str, str]:
        if verdict.error is not None:
            return {"reference": f"error: {verdict.error}"}
        if verdict.skipped is not None:
            return {"reference": f"unsupported: {verdict.skipped}"}
        if verdict.result is not None:
            return {"reference": verdict.result.summary()}
        return {}

    def rows(self, program: Program, verdict: ReferenceVerdict, v: Verdicts) -> list[tuple[str, str, str]]:
        if verdict.skipped is not None:
            return [("reference", "unsupported", verdict.skipped)]
        if verdict.error is not None:
            return [("reference", "error", verdict.error)]
        return [("reference", verdict.result.summary(), "; ".join(verdict.result.notes[:3]))]

    def findings(self, program: Program, v: Verdicts, family: str, *, full: Any = None) -> list[Finding]:
        err = v.reference_error
        if err is None or not expects_defined(program) or not (v.ptxas is None or v.ptxas.accepted):
            return []
        kind = "crash" if err.startswith("internal error") else "error"
        if v.reference_error_kind:
            kind += ":" + v.reference_error_kind
        return [Finding(f"reference:{kind}|{family}", f"the reference could not run a legal program: {err}")]

    def moved(self, verdict: ReferenceVerdict, delta: int) -> ReferenceVerdict | None:
        if verdict.result is None or verdict.result.undefined:
            return None
        return ReferenceVerdict(verdict.result)  # values and bounds: no line in them


# ------------------------------------------------------------------ hardware


class HardwareJudge(Judge):
    """A real sm_90a GPU through CuPy, in an isolated worker process: output buffers, or a fault."""

    name = "hardware"
    stage = GPU
    needs = frozenset({IR, ACCEPTED, CUBIN, DEVICE})
    summary_keys = ("hardware",)

    def prepare(self, program: Program, text: str, compiled: Any, *, gpu: bool,
                verdicts: Verdicts | None = None) -> Any:
        """ptxas's own cubin of the program and its kernel's name in it (the GPU loads that)."""
        if not gpu or compiled is None or not compiled.accepted or not compiled.cubin:
            return None
        return compiled.cubin, compiled.kernel(program.launch.kernel)

    def on_gpu(self, program: Program, prepared: Any, worker: Any) -> Any:
        cubin, kernel = prepared
        return worker.run(program, cubin=cubin, kernel=kernel)

    def judge(self, program: Program, ctx: Context) -> Any:
        """The GPU's outputs, from ptxas's own cubin where the ptxas judge ran (none where it
        rejected the program: nothing to run); through the run's worker when it holds one."""
        r = ctx.verdicts.ptxas
        if r is not None and not r.accepted:
            return None
        cubin = r.cubin if r is not None and r.cubin else None
        kernel = r.kernel(program.launch.kernel) if cubin is not None else None
        if ctx.gpu is not None:
            return ctx.gpu.run(program, cubin=cubin, kernel=kernel)
        return run_program_on_gpu(program, cubin=cubin, kernel=kernel)

    def summary(self, verdict: Any) -> dict[str, str]:
        return {"hardware": f"fault: {verdict.fault}" if verdict.fault else "ran"}

    def rows(self, program: Program, verdict: Any, v: Verdicts) -> list[tuple[str, str, str]]:
        if verdict.fault:
            return [("hardware", f"fault: {verdict.fault}", "")]
        ref = v.reference
        if ref is None:
            return [("hardware", "ran", "no reference to compare with")]
        if ref.undefined:
            return [("hardware", "ran", "reference undefined")]
        mism = ref_compare(program, ref, verdict.outputs)
        return [("hardware", "ran", f"{len(mism)} element(s) outside the reference's bounds"
                 + (f"; first: {mism[0]}" if mism else ""))]

    def findings(self, program: Program, v: Verdicts, family: str, *, full: Any = None) -> list[Finding]:
        hw = v.hardware
        if hw is None:
            return []
        if hw.fault:
            return [Finding(f"hardware:fault:{hw.fault}|{family}", f"the GPU faulted: {hw.fault}")]
        if v.reference is None or not expects_defined(program):
            return []
        return outputs_against_reference(program, v.reference, hw.outputs, "reference!=hardware", family,
                                         diagnose_repeats=True, full=full)

    def available(self) -> str | None:
        return gpu_available()


# ------------------------------------------------------------------ MMA-Sim


class MmasimJudge(Judge):
    """The reference with MMA-Sim's bit-accurate arithmetic (optional wheel)."""

    name = "mmasim"
    needs = frozenset({IR, ACCEPTED})
    summary_keys = ("mmasim",)

    def judge(self, program: Program, ctx: Context) -> SkippableVerdict:
        why = mmasim_judge.available()
        if why:
            return SkippableVerdict(skipped=why)
        try:
            res, modelled = mmasim_judge.run_program(program)
        except Exception as exc:  # noqa: BLE001 - outside the reference's subset, or MMA-Sim failing
            return SkippableVerdict(skipped=f"{type(exc).__name__}: {exc}")
        if not modelled:
            return SkippableVerdict(skipped="MMA-Sim models no tensor-core product of this program")
        return SkippableVerdict(res)

    def summary(self, verdict: SkippableVerdict) -> dict[str, str]:
        return {"mmasim": verdict.value.summary()} if verdict.value is not None else {}

    def findings(self, program: Program, v: Verdicts, family: str, *, full: Any = None) -> list[Finding]:
        """MMA-Sim three ways: against the GPU (a disagreement where our hardware mode agrees with the
        GPU is a finding about MMA-Sim) and against the reference (its hardware mode: bit for bit;
        spec mode: MMA-Sim's result outside the allowed set)."""
        sim = v.mmasim
        if sim is None or sim.undefined or not expects_defined(program):
            return []
        out: list[Finding] = []
        if v.hardware is not None and not v.hardware.fault:
            out += outputs_against_reference(program, sim, v.hardware.outputs, "mmasim!=hardware", family)
        if v.reference is not None and not v.reference.undefined:
            out += outputs_against_reference(program, v.reference, {b: sim.bytes(b) for b in sim.outputs},
                                             "mmasim!=reference", family)
        return out


# ------------------------------------------------------------------ SASS


@dataclass
class _Hazards:
    """What the SASS judge's pipeline rules found, and the compile result they read."""

    value: Any = None
    skipped: str | None = None
    compiled: Any = None


class SassJudge(Judge):
    """The GMMA pipeline rules on the SASS ptxas emitted (``fuzzptx.oracles.sass``; docs/sass.md):
    a register of a GMMA in flight written or its accumulator read, a GMMA reading what was
    written after the last ``WARPGROUP.ARRIVE``, a PTX wgmma that must execute missing from a SASS
    path or one too many.  It checks only programs the checker finds defined, so what it reports
    is ptxas's, not the program's.  It reads the ptxas judge's own cubin -- in a run or a
    campaign, the batch's module, disassembled once for a group of blocks (``warm``;
    ``engine.block.pool_blocks``) -- and
    compiles the program alone only where no cubin came with the verdicts."""

    name = "sass"
    needs = frozenset({IR, ACCEPTED, CUBIN})
    after = ("ptxas", "checker")
    summary_keys = ("sass", "sass-at", "sass-excerpt")

    @staticmethod
    def tool(toolchain: Any = None) -> list[str] | None:
        """The release's own nvdisasm, else the wheel's, else the newest cached release's."""
        if toolchain is not None and getattr(toolchain, "nvdisasm", None) is not None:
            return [str(toolchain.nvdisasm), "-c"]
        found = disassembler()
        if found is None and (cached := toolchains.local_nvdisasm()) is not None:
            found = [str(cached), "-c"]
        return found

    def available(self) -> str | None:
        return None if self.tool() is not None else "no disassembler (pip install nvidia-cuda-nvdisasm)"

    def warm(self, results: list[Any], toolchain: Any = None) -> None:
        """Disassemble every module of one or more blocks in one run (their programs' verdicts then read it)."""
        tool = self.tool(toolchain)
        cubins = list({id(r.cubin): r.cubin for r in results
                       if r is not None and r.accepted and r.cubin and cubin_sm(r.cubin) == 90}.values())
        if tool is not None and cubins:
            try:
                disassemble_all(cubins, tool)
            except Exception:  # noqa: BLE001 - each program's verdict then says what went wrong
                pass

    def judge(self, program: Program, ctx: Context) -> SassVerdict:
        """The pipeline hazards (wgmma programs the checker finds defined), with the program's SASS
        forms wherever its listing is at hand (every accepted program of a run: ``warm``)."""
        tc = ctx.toolchain
        tool = self.tool(tc)
        r = ctx.verdicts.ptxas
        seen = self._forms(r, tool)
        verdict = self._hazards(program, ctx, tool)
        if seen is None and verdict.value is not None:  # it disassembled the program: read the forms off its listing
            seen = self._forms(verdict.compiled, tool)
        return SassVerdict(verdict.value, verdict.skipped, seen)

    @staticmethod
    def _forms(r: Any, tool: list[str] | None) -> frozenset[str] | None:
        """The forms of ``r``'s program in the listing already made of its cubin (None: none at hand)."""
        if tool is None or r is None or not r.accepted or not r.cubin:
            return None
        listing = cached_listing(r.cubin, tool)
        return None if listing is None else program_forms(listing, [r.kernel(e) for e in r.kernel_names])

    def _hazards(self, program: Program, ctx: Context, tool: list[str] | None) -> "_Hazards":
        if not any(i.opcode.startswith("wgmma.mma_async") for f in program.module.functions() if f.body is not None
                   for i in f.instructions()):
            return _Hazards(())
        tc = ctx.toolchain
        if tool is None:
            return _Hazards(skipped="no disassembler (pip install nvidia-cuda-nvdisasm)")
        cv = ctx.verdicts.get("checker")
        if cv is not None and cv.error is not None:
            return _Hazards(skipped=f"the checker could not judge the program: {cv.error}")
        findings = cv.findings if cv is not None else None
        if findings is None:
            try:
                findings = check_module(program.module, layers=("isa", "spec"), tensormaps=program.tensormaps)
            except Exception as exc:  # noqa: BLE001 - a program the checker cannot read is not the SASS's
                return _Hazards(skipped=f"the checker could not judge the program: {type(exc).__name__}: {exc}")
        if any(f.severity == "error" for f in findings):
            return _Hazards(skipped="the checker finds the program illegal or undefined")
        r = ctx.verdicts.ptxas
        if r is None or r.cubin is None:  # judged without the ptxas judge's cubin: compile it alone
            r = compile_ptx(ctx.text, want_cubin=True, ptxas=tc.ptxas if tc is not None else None)
        if not r.accepted or not r.cubin:
            return _Hazards(skipped="ptxas rejects it")
        if cubin_sm(r.cubin) != 90:
            return _Hazards(skipped=f"a cubin for sm_{cubin_sm(r.cubin)}: the GMMA pipeline rules are Hopper's")
        listing = disassemble(r.cubin, tool)
        out: list[tuple[str, str, tuple[str, ...]]] = []
        for entry in r.kernel_names:
            name = r.kernel(entry)
            # lines name the program's own functions, not a batch's renamed ones: a repro's
            # EXPECT lines then hold when the file is compiled alone
            for h in verify(listing, name):
                out.append((h.rule, unsuffixed(h.line()), h.excerpt))
            for c in gmma_count_hazards(program.module, entry, listing, name):
                out.append((c.rule, unsuffixed(c.line()), c.excerpt))
        return _Hazards(tuple(out), compiled=r)

    def record_fields(self, verdict: Any) -> dict[str, Any]:
        """``sass_forms``: the program's SASS forms, sorted (what a run's SASS coverage counts)."""
        forms = getattr(verdict, "forms", None)
        return {} if forms is None else {"sass_forms": sorted(forms)}

    def moved(self, verdict: SkippableVerdict, delta: int) -> SkippableVerdict | None:
        """Header lines change no instruction, so the SASS and its hazards stay (a skip may quote a line)."""
        return verdict if verdict.value is not None else None

    def summary(self, verdict: SkippableVerdict) -> dict[str, str]:
        if verdict.value is not None:
            if not verdict.value:
                return {"sass": "clean"}
            rules = sorted({rule for rule, _, _ in verdict.value})
            first = verdict.value[0]
            return {"sass": f"{len(verdict.value)} hazard(s): {', '.join(rules)}", "sass-at": first[1],
                    "sass-excerpt": " | ".join(x.strip() for x in first[2])}
        if verdict.skipped is not None:
            return {"sass": f"skipped: {verdict.skipped}"}
        return {}

    def findings(self, program: Program, v: Verdicts, family: str, *, full: Any = None) -> list[Finding]:
        mine = v.get(self.name)
        hazards = mine.value if isinstance(mine, SkippableVerdict) else None
        if not hazards:
            return []
        out, seen = [], set()
        for rule, line, excerpt in hazards:
            if rule in seen:
                continue
            seen.add(rule)
            n = sum(1 for x in hazards if x[0] == rule)
            out.append(Finding(f"{self.name}:{rule}|{family}", f"ptxas's SASS breaks the GMMA pipeline ({n}x): {line}",
                               (("sass", line), ("excerpt", " | ".join(x.strip() for x in excerpt)))))
        return out


class ReleaseSassJudge(SassJudge):
    """The SASS verifier on another release's code (``sass@12.9.86`` beside ``ptxas@12.9.86``):
    the cubin of that release's batched run of the block (``ReleasePtxasJudge.last_batch``), or
    the program compiled alone by it, where its ``ptxas@R`` judge accepted it; disassembled by
    that release's nvdisasm if it has one.  Its findings are ``sass@R:rule``."""

    needs = frozenset({IR, CUBIN})  # accepted by *its* release (not ACCEPTED: the compile stage's pinned verdict does not say)
    summary_keys = ()
    warm = Judge.warm  # the block's listing is made on first use (one cubin per batch, cached)

    def __init__(self, toolchain: "toolchains.Toolchain"):
        self.toolchain = toolchain
        self.release = toolchain.release
        self.ptxas_name = ReleasePtxasJudge(toolchain).name
        self.name = "sass" + self.ptxas_name[len("ptxas"):]
        self.after = (self.ptxas_name, "checker")

    def judge(self, program: Program, ctx: Context) -> SkippableVerdict:
        mine = ctx.verdicts.get(self.ptxas_name)
        if isinstance(mine, NotApplicable):
            return SkippableVerdict(skipped=mine.reason)
        if mine is not None and not getattr(mine, "accepted", False):
            return SkippableVerdict(skipped=f"ptxas {self.release} rejects it")
        # the pinned ptxas's cubin (``ctx.verdicts.ptxas``) is not this release's
        full = getattr(get_judge(self.ptxas_name), "last_batch", {}).get(ctx.text)
        return super().judge(program, replace(ctx, verdicts=ctx.verdicts.replace(ptxas=full), toolchain=self.toolchain))

    def summary(self, verdict: SkippableVerdict) -> dict[str, str]:
        s = super().summary(verdict)
        return {self.name: s["sass"]} if "sass" in s else {}

    def record_fields(self, verdict: Any) -> dict[str, Any]:
        return {}  # a run's SASS coverage is the pinned release's (the one the GPU runs)


def release_sass_judge(spec: str) -> Judge:
    """``sass@<release>``: the SASS judge of that release's ptxas (``release_judge`` resolves it)."""
    (tc,) = toolchains.resolve(spec)
    return ReleaseSassJudge(tc)


# ------------------------------------------------------------------ metamorphic


class MetamorphicJudge(Judge):
    """Pairs that must agree: compile pairs (-O3 against -O0, other options, another release) and
    program transforms (pipelined/serialised, with/without dead uniform branches); on the GPU
    beside the hardware judge, else on the reference (``fuzzptx.judges.metamorphic``).

    ``pairs``, ``share`` and ``inputs`` (``--pairs``, ``--pair-share``, ``--inputs``): which pairs,
    for which share of the programs (``compile_pairs.choose``), on how many input sets.  The class
    defaults judge every pair of one program (``replay``); a campaign's set is configured by its
    options (``JudgeSet.configured``)."""

    name = "metamorphic"
    stage = METAMORPHIC
    needs = frozenset({IR, ACCEPTED})
    after = ("reference", "hardware")
    summary_keys = ("metamorphic",)
    pairs: tuple[str, ...] = compile_pairs.REPLAY_DEFAULT
    share: float = 1.0
    inputs: int = 1

    def judge(self, program: Program, ctx: Context) -> Any:
        return metamorphic_verdict(program, on_gpu=ctx.has_gpu(), worker=ctx.gpu, pairs=self.pairs, inputs=self.inputs)

    def prepare(self, program: Program, text: str, compiled: Any, *, gpu: bool,
                verdicts: Verdicts | None = None) -> Any:
        """The program's pairs (``compile_pairs.choose``, a function of its text) with every side
        compiled here in the pool (the original's -O3 build reused) for the GPU; without a GPU, the
        transforms judged at once on the reference (compile pairs hold trivially there)."""
        # a random integer kernel is small and its code is what the pairs find miscompiled: it gets
        # -O0 and the newest release where the campaign runs them (compile_pairs.SCALAR_PAIRS)
        chosen = compile_pairs.choose_for(self.pairs, zlib.crc32(text.encode()), self.share,
                                          scalar_kernel=is_scalar_kernel(program))
        if not gpu:
            chosen = tuple(n for n in chosen if n in compile_pairs.TRANSFORMS)
        if not chosen:
            return None
        try:
            ref = verdicts.get("reference") if verdicts is not None else None
            taken = ref.outcome if isinstance(ref, ReferenceVerdict) else None
            # a release matrix's row (bisect): its compile stage built ``compiled`` with that
            # release, and every other side of the pairs is built with it too
            release = verdicts.release if verdicts is not None else None
            pairs = metamorphic_prepare(program, pairs=chosen, taken=taken, base_release=release)
            if isinstance(pairs, PreparedPairs):
                if gpu:  # compiled with the block's other programs' sides (``prepare_block``)
                    pairs.staged = {(text, pairs.base): compiled}
                    if self.share < 1 and is_scalar_kernel(program):  # a campaign's integer kernel
                        pairs.determinism = False  # race-free by construction
                        pairs.inputs = min(self.inputs, compile_pairs.SCALAR_INPUTS)
                    return pairs
                return Done(pairs.judge(OnReference()))
            return Done(pairs)
        except Exception as exc:  # noqa: BLE001 - never lose the block's other verdicts
            return Done(Checked(skipped=f"metamorphic judge failed: {type(exc).__name__}: {exc}"))

    def prepare_block(self, prepared: list[Any]) -> None:
        """Every side of the block's pairs in one batched ptxas run per build (a program whose
        sides are not built here is built beside the GPU, as replay does)."""
        staged = [p for p in prepared if isinstance(p, PreparedPairs) and p.staged is not None]
        try:
            compile_together([(p, p.staged) for p in staged])
        except Exception:  # noqa: BLE001 - the GPU side compiles what is missing
            pass
        for p in staged:
            p.staged = None

    def on_gpu(self, program: Program, prepared: Any, worker: Any) -> Any:
        try:
            inputs = self.inputs if prepared.inputs is None else prepared.inputs
            return prepared.judge(OnGpu(worker, _built=prepared.built), inputs=inputs)
        except Exception as exc:  # noqa: BLE001
            return Checked(skipped=f"metamorphic judge failed: {type(exc).__name__}: {exc}")

    def replay(self, program: Program, v: Verdicts, *, gpu: bool) -> list[tuple[str, str, str]] | None:
        """A repro of a metamorphic finding reruns its pairs: on the GPU for ``hardware:...``
        signatures (skipped, saying why, without one), on the reference for ``reference:...``;
        a file of another signature has none to rerun."""
        sig = program.signature or ""
        on_gpu = not sig.startswith("reference:")
        if on_gpu:
            why = "--no-hardware" if not gpu else gpu_available()
            if why is not None:
                return [(self.name, "skipped", f"{sig.split('|')[0]} needs the GPU: {why}")]
        v[self.name] = metamorphic_verdict(program, on_gpu=on_gpu)
        found = [f.signature for _, f in v[self.name].findings]
        return [(self.name, v.summary()[self.name],
                 ("signature holds" if any(f.startswith(sig) for f in found) else "signature gone")
                 + (f"; found: {', '.join(found)}" if found else ""))]

    def summary(self, verdict: Any) -> dict[str, str]:
        m = verdict
        return {"metamorphic": f"skipped: {m.skipped}" if m.skipped else
                f"{len(m.relations)} pair(s) ({', '.join(m.relations) or 'none'}), {len(m.findings)} differ"}

    def findings(self, program: Program, v: Verdicts, family: str, *, full: Any = None) -> list[Finding]:
        return [f for _, f in v.metamorphic.findings] if v.metamorphic is not None else []


for _judge in (PtxasJudge, CheckerJudge, ReferenceJudge, HardwareJudge, MmasimJudge, SassJudge, MetamorphicJudge):
    register(_judge)
register_family("ptxas@", release_judge)
register_family("sass@", release_sass_judge)
