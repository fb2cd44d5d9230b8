"""ptxas model: predict what ptxas 13.0.88 prints for a module, learned by experiment.

The learned rules are classes, each naming the probe files under ``tests/data/checker/`` that pin
it (their ``// PTXAS:`` headers say what real ptxas printed; ``tests/test_checker_ptxas.py`` re-runs
them): ``ptxas_rules`` (what the pipeline pass does at an instruction, and passes over a function),
this module (what the report keeps, module-wide rules).  They run in the orders below.  Scored on
generated programs and real kernels: ``reports/checker_vs_ptxas.md``.  All GMMA messages are
``info`` severity.

``C7519`` "warpgroup.arrive is injected in around line L"; ``C7517`` "warpgroup.wait is injected in
around line L"; one serialisation reason per function (no line): ``C7509``/``C7510`` calls,
``C7511``/``C7512`` registers, ``C7514``/``C7515`` reads and writes of accumulators in flight,
``C7518``/``C7520`` divergence (after those ptxas prints nothing else).  ptxas deletes dead code
first (``ptxas_dce``), and its divergence is not the spec's (``uniformity``, ``ptxas=True``).
"""
from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, replace

from fuzzptx.ptx.ir import Instr, Label, Module, SrcLoc, Sym

from .context import FnCtx, build_ctx
from .findings import Finding, PredictedDiag, PredictedDiagnostics
from .ptxas_errors import _callee, predict_errors
from .ptxas_pipeline import run as run_pipeline
from .ptxas_pressure import allocator_may, register_budget, register_pressure
from .ptxas_rules import (BraUniDistrusted, FunctionRule, Rule, StageStructure, _opaque,
                          after_calls_on_every_path)
from .ptxas_sites import _line, arrives_before_divergence
from .ptxas_state import Out

SER_PREFIX = "Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
SER_REASONS = {
    "C7509": "the presence of Extern calls in the function '{f}'",
    "C7510": "wgmma pipeline crossing function boundary at a function call in the function '{f}'",
    "C7511": "insufficient register resources for the wgmma pipeline in the function '{f}'",
    "C7512": "insufficient register resources for the function '{f}'",
    "C7513": "non wgmma instructions defining input registers of a wgmma between start and end of the pipeline stage in the function '{f}'",
    "C7514": "non wgmma instructions reading accumulator registers of  a wgmma between start and end of the pipeline stage in the function '{f}'",
    "C7515": "non wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage in the function '{f}'",
    "C7516": "ill formed pipeline stage in the function '{f}'",
    "C7518": "program dependence on compiler-inserted WG.DP in divergent path in the function '{f}'",
    "C7520": "program dependence on compiler-inserted WG.AR in divergent path in the function '{f}'",
}
ADVISORY = {
    "C7517": "warpgroup.wait is injected in around line {line} by compiler to allow use of registers defined by GMMA in function '{f}'",
    "C7519": "warpgroup.arrive is injected in around line {line} by compiler to allow use of registers in GMMA in function '{f}'",
}


@dataclass(frozen=True)
class Pipeline(FunctionRule):
    """The pipeline pass (``ptxas_pipeline``): the step rules at every instruction ptxas keeps.
    Its own rules: a self-move is nothing to ptxas; work that stays after paths with and without
    groups met moves their wait to the exit."""

    probes = ("self_move*", "identity_in_place*", "split_then_*")

    def apply(self, ctx: FnCtx, out: Out) -> None:
        run_pipeline(ctx, out)


@dataclass(frozen=True)
class RegisterPressure(FunctionRule):
    """C7511 for accumulators rewritten after a scale-d 0 wgmma (``ptxas_pressure.register_pressure``)."""

    probes = ("c7511_*",)

    def apply(self, ctx: FnCtx, out: Out) -> None:
        register_pressure(ctx, out.ser)


@dataclass(frozen=True)
class RegisterBudget(FunctionRule):
    """C7512 where the function's accumulators take ``ptxas_pressure.C7512_FROM`` registers or more
    and nothing else serialises it (``ptxas_pressure.register_budget``)."""

    probes = ("c7512_*",)

    def apply(self, ctx: FnCtx, out: Out) -> None:
        register_budget(ctx, out.ser, bool(out.divergent or out.div_wait))


FUNCTION_RULES: tuple[FunctionRule, ...] = (BraUniDistrusted(), StageStructure(), Pipeline(), RegisterPressure(),
                                            RegisterBudget())
"""Over each function with a wgmma, in this order: the uniformity ptxas uses first (every later rule asks it)."""


class ReportRule(Rule):
    """What ptxas prints of a function's record (``REPORT_RULES``: the first that answers)."""

    @abstractmethod
    def report(self, ctx: FnCtx, out: Out) -> list[PredictedDiag] | None:
        """The function's diagnostics, or None when the rule does not decide them."""


def _diag(code: str, line, name: str) -> PredictedDiag:
    if code in ADVISORY:
        return PredictedDiag(code, line, "info", name, ADVISORY[code].format(line=line, f=name))
    return PredictedDiag(code, None, "info", name, SER_PREFIX + SER_REASONS[code].format(f=name))


@dataclass(frozen=True)
class DivergentOutcome(ReportRule):
    """C7520/C7518 (the first in order) and nothing else -- save, beside C7520, the arrives and
    feed waits at uniform sites ptxas passed before finding the divergence; an indirect call
    outranks C7518, not C7520 (measured: div_*_indirect_call)."""

    probes = ("div_*", "uniform_*", "tid_*", "laneid_*", "param_guard*", "feed_wait_then*", "feed_wait_in_flight*",
              "dead_divergent*")

    def report(self, ctx: FnCtx, out: Out) -> list[PredictedDiag] | None:
        if not (out.divergent or out.div_wait):
            return None
        name = ctx.fn.name
        _, code = min(out.divergent or out.div_wait)
        if code == "C7518" and _ser_code(out.ser) in ("C7509", "C7510"):
            code = _ser_code(out.ser)
        kept = arrives_before_divergence(ctx, out.arrive_at, out.divergent) if code == "C7520" else []
        fed = arrives_before_divergence(ctx, out.wait_feed_at, out.divergent) if code == "C7520" else []
        return ([_diag("C7519", line, name) for line in kept] + [_diag("C7517", line, name) for line in fed]
                + [_diag(code, None, name)])


@dataclass(frozen=True)
class SerialisedWaits(ReportRule):
    """The arrives, and the waits a serialisation leaves: an indirect call serialises the whole
    function (no exit waits; the feed waits placed before reaching it stay; a read after the first
    one on every path gets none; one at the call itself with groups in flight stays, as does an
    exit's wait for groups committed before it that some path carries there without passing one);
    after C7509 the exits wait as unserialised, for groups committed before the indirect call;
    another serialisation waits for everything at the exits -- beside C7510 too after a read of a
    wgmma whose wait_group a path skipped.  The wait placed for groups in flight at an opaque call
    stays.  Every rewrite arrive stays."""

    probes = ("use_after_indirect_call*", "no_wait_after_indirect*", "wait_at_indirect*", "exit_wait_stage_skipping*",
              "exit_wait_call_skipped*", "wait_read_past_calls_*", "rewrite_arrive_*", "skipped_wait_*",
              "lagged_wait_*", "exit_wait_assert_trap*", "trap_*")

    def report(self, ctx: FnCtx, out: Out) -> list[PredictedDiag] | None:
        name = ctx.fn.name
        ser_code = _ser_code(out.ser)
        early = {x: True for x, before in out.wait_feed.items() if before}
        if ser_code in ("C7509", "C7510"):
            # (measured: campaign seeds 6 #99, 8 #92 and strategies #201-207, shrunk: use_after_indirect_call_*;
            # a read a branch around the calls reaches still waits: strategies #951-954)
            first = min((_line(i) or 0 for b in ctx.g.blocks for i in b.instrs
                         if i.base == "call" and _opaque(_callee(i))), default=None)
            if first is not None:
                past_calls = after_calls_on_every_path(ctx)
                out.wait_at_use = {x: v for x, v in out.wait_at_use.items()
                                   if x is None or x <= first or not past_calls(x)}
        if ser_code == "C7510":
            at_ind = {_line(i) for b in ctx.g.blocks for i in b.instrs if i.base == "call" and _opaque(_callee(i))}
            at_ind |= set(out.wait_opaque)  # (placed at a loop's exit branch before the call: trap_loop_*)
            at_ind |= set(out.wait_pre_ind) & set(out.wait_clear)
            waits = {**{x: True for x in out.wait if x in at_ind}, **out.wait_at_use, **early}
            if out.skipped_read:  # (a read after a skipped wait_group: the exits wait for everything;
                # campaign seed 8 #79, shrunk: skipped_wait_read_after_indirect_call)
                waits.update(out.wait_ser)
        elif ser_code == "C7509":
            waits = {**out.wait_pre_ind, **out.wait_at_use, **out.wait_feed}
        elif out.ser:
            waits = {**out.wait_ser, **out.wait_at_use, **out.wait_feed}
        else:
            waits = {**out.wait, **out.wait_at_use, **out.wait_feed}
        diags = [_diag("C7519", line, name) for line in sorted(out.arrive, key=lambda x: x or 0)]
        diags += [_diag("C7517", line, name) for line in sorted(waits, key=lambda x: x or 0)]
        if out.ser:
            diags.append(_diag(ser_code, None, name))
        return diags


REPORT_RULES: tuple[ReportRule, ...] = (DivergentOutcome(), SerialisedWaits())


def predict_function(ctx: FnCtx) -> list[PredictedDiag]:
    return _predict(ctx)[0]


def _predict(ctx: FnCtx) -> tuple[list[PredictedDiag], Out]:
    """The function's diagnostics, and the record they came from."""
    out = Out()
    if not any(i.base == "wgmma" for b in ctx.g.blocks for i in b.instrs):
        return [], out
    for rule in FUNCTION_RULES:
        rule.apply(ctx, out)
    for rule in REPORT_RULES:
        diags = rule.report(ctx, out)
        if diags is not None:
            return diags, out
    return [], out


def _ser_code(ser: list) -> str | None:
    """The one serialisation reason ptxas prints: an indirect call's outranks the rest (measured);
    of an indirect call's two codes the first call's wins, and a C7510 call always comes before any
    C7509 one (C7509 is an indirect call after a direct call; measured: indirect, direct, indirect
    gives C7510)."""
    for code in ("C7510", "C7509"):
        if any(c == code for _, c in ser):
            return code
    return min(ser)[1] if ser else None


@dataclass(frozen=True)
class Errors(Rule):
    """The module is rejected (no C-codes): ISA violations at the instruction's line; ``.version``
    too old for ``.target`` at the ``.target`` line; a call to an undefined extern ``.func`` (no
    line).  Accepted although the spec disagrees: a missing ``.aligned``; ``wait_group N`` with N > 7
    (``ptxas_errors.predict_errors``)."""

    probes = ("isa_*", "wait8*")

    def apply(self, module: Module, isa_findings: dict | None) -> list[PredictedDiag]:
        return predict_errors(module, isa_findings)


@dataclass(frozen=True)
class FallsOffTheEnd(Rule):
    """A body that can fall off its end returns there, and ptxas reports what it does at that
    return at line 0 (measured: falls_off_the_end; a label after the last instruction lets a branch
    reach the end: exit_jump_to_next_end)."""

    probes = ("falls_off_the_end*", "exit_jump_to_next*")

    def ctx(self, module: Module, fn, ctxs: dict | None) -> FnCtx:
        if _falls_off_the_end(fn):
            return build_ctx(module, replace(fn, body=tuple(fn.body) + (Instr("ret", loc=SrcLoc("", 0)),)))
        return (ctxs or {}).get(fn.name) or build_ctx(module, fn)


@dataclass(frozen=True)
class SetmaxnregIgnored(Rule):
    """C7508, once per kernel: a ``setmaxnreg`` in the kernel or in a ``.func`` it calls, when the
    kernel bounds its register count neither by ``.maxnreg`` nor by ``.maxntid``/``.reqntid``
    together with ``.minnctapersm`` (``_setmaxnreg_ignored``)."""

    probes = ("setmaxnreg*",)

    def apply(self, module: Module, fn) -> list[PredictedDiag]:
        if fn.kind == "entry" and _setmaxnreg_ignored(module, fn):
            return [PredictedDiag("C7508", None, "info", fn.name, C7508_MESSAGE)]
        return []


@dataclass(frozen=True)
class AllocatorCodes(Rule):
    """The codes ptxas's register allocator decides, which the model calls "may" where it cannot
    (``ptxas_pressure.allocator_may``)."""

    probes = ("c7512_*", "operand_write_in_flight_a_zero_loop*", "a_move_in_loop*")

    def apply(self, ctx: FnCtx, certain: frozenset, out: Out) -> frozenset:
        return allocator_may(ctx, certain, out.a_in_flight)


ERRORS, BODY, SETMAXNREG, ALLOCATOR = Errors(), FallsOffTheEnd(), SetmaxnregIgnored(), AllocatorCodes()
MODULE_RULES: tuple[Rule, ...] = (ERRORS, BODY, SETMAXNREG, ALLOCATOR)
"""Errors first (a rejected module has no C-codes); then per function its context (``BODY``),
``FUNCTION_RULES`` and ``REPORT_RULES``, C7508 and the allocator's "may" codes."""


def predict_module(module: Module, ctxs: dict | None = None, isa_findings: dict | None = None) -> PredictedDiagnostics:
    errors = ERRORS.apply(module, isa_findings)
    if errors:
        return PredictedDiagnostics(False, tuple(sorted(errors, key=lambda d: (d.line or 0))))
    diags: list[PredictedDiag] = []
    may: set = set()  # allocator-dependent codes (ptxas_pressure.allocator_may)
    for fn in module.functions():
        if fn.body is None:
            continue
        ctx = BODY.ctx(module, fn, ctxs)
        mine, out = _predict(ctx)
        diags += mine
        diags += SETMAXNREG.apply(module, fn)
        may |= ALLOCATOR.apply(ctx, frozenset(d.code for d in mine), out)
    return PredictedDiagnostics(True, tuple(diags), tuple(sorted(may)))


C7508_MESSAGE = "Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register count at entry."


def _setmaxnreg_ignored(module: Module, kernel) -> bool:
    """C7508, once per kernel: a ``setmaxnreg`` in the kernel or in a ``.func`` it calls (directly,
    at any depth), guarded or not, when the kernel bounds its register count neither by ``.maxnreg``
    nor by ``.maxntid``/``.reqntid`` together with ``.minnctapersm`` (either alone does not do;
    measured: setmaxnreg_*; CUTLASS's warp-specialized kernels have ``.maxntid`` and ``.minnctapersm``)."""
    names = {a.split()[0] for a in kernel.attributes if a.split()}
    if ".maxnreg" in names or (names & {".maxntid", ".reqntid"} and ".minnctapersm" in names):
        return False
    funcs = {f.name: f for f in module.functions() if f.body is not None}
    seen, todo = set(), [kernel]
    while todo:
        f = todo.pop()
        if f.name in seen:
            continue
        seen.add(f.name)
        for ins in f.instructions():
            if ins.base == "setmaxnreg":
                return True
            callee = _callee(ins) if ins.base == "call" else None
            if isinstance(callee, Sym) and callee.name in funcs:
                todo.append(funcs[callee.name])
    return False


def _falls_off_the_end(fn) -> bool:
    """The body's last instruction can fall through the closing brace (no ``ret``/``exit``/jump)."""
    k = max((i for i, s in enumerate(fn.body) if isinstance(s, Instr)), default=None)
    if k is None or any(isinstance(s, Label) for s in fn.body[k + 1:]):
        return True  # a label after the last instruction: a branch there reaches the end (exit_jump_to_next_end)
    last = fn.body[k]
    return last.guard is not None or last.base not in ("ret", "exit", "bra", "trap", "brx")


def findings_from(pred: PredictedDiagnostics, path: str | None) -> list[Finding]:
    out = []
    for d in pred.diagnostics:
        rule = f"ptxas.{d.code}" if d.code else "ptxas.error"
        out.append(Finding(path, d.line, rule, "error" if d.code is None else "warning", "ptxas-model",
                           d.message, d.kernel))
    return out
