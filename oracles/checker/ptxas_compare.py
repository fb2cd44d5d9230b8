"""A real ptxas result and a ptxas-model prediction as comparable items.

Both become sorted header-style lines (``info C7519 line 14``, ``error line 38``, ``none``), so
``fuzzptx check --ptxas``, the recorded experiments and the differential sample compare them as sets.
``agreement`` is the one comparison the scores use.  A program is *exact* when ptxas's lines equal the
model's outside the codes the model predicts as "may" (allocator-dependent, ``PredictedDiagnostics.may``);
a program with any "may" code is counted apart (``Agreement.may``): the published figure is the exact
agreement on the programs without one, beside the rate of programs with one.  A rejection is never
agreement with a predicted acceptance, a register-allocation failure included: the model does not
predict one.  ``code_verdicts`` says, per code, whether the model said yes, no or "may".
"""
from __future__ import annotations

import re
from typing import NamedTuple

# ptxas's own words when its register allocator gives up (the module is rejected)
_REGALLOC = re.compile(r"register allocation failed", re.I)


def observed(result) -> list[str]:
    """ptxas's diagnostics as header lines (``info C7519 line 14``, ``error line 38``)."""
    out = []
    for d in result.diagnostics:
        if d.code:
            out.append(f"{d.severity} {d.code}" + (f" line {d.line}" if d.code in ("C7517", "C7519") else ""))
        elif d.severity == "error" and d.line is not None:
            out.append(f"error line {d.line}")
        elif d.severity == "error" and "aborted due to errors" not in d.message:
            out.append("error")
    if not result.accepted and not any(o.startswith("error") for o in out):
        out.append("error")
    return sorted(set(out)) or ["none"]


def predicted(pred) -> list[str]:
    """The model's exact predictions as header lines ("may" codes are not among them)."""
    out = []
    for d in pred.diagnostics:
        if d.code:
            out.append(f"info {d.code}" + (f" line {d.line}" if d.line is not None else ""))
        else:
            out.append("error" + (f" line {d.line}" if d.line is not None else ""))
    if not pred.accepted and not any(o.startswith("error") for o in out):
        out.append("error")
    return sorted(set(out)) or ["none"]


def regalloc_failure(result) -> bool:
    """ptxas rejected the module because its register allocator gave up (an allocator outcome)."""
    errors = [d for d in result.diagnostics if d.severity == "error" and "aborted due to errors" not in d.message]
    return not result.accepted and bool(errors) and all(_REGALLOC.search(d.message) for d in errors)


def without(lines: list[str], codes) -> list[str]:
    """``lines`` less those of ``codes`` (``info C7512``)."""
    out = [x for x in lines if not (x.startswith("info ") and x.split()[1] in codes)]
    return out or ["none"]


class Agreement(NamedTuple):
    exact: bool  # accept flag, every code outside ``may``, every C7517/C7519/error line
    may_printed: tuple[str, ...]  # the "may" codes ptxas printed
    real: list[str]  # ptxas's lines, less the "may" codes
    mine: list[str]  # the model's exact lines
    may: bool = False  # the model predicted some code as "may": the program is counted apart

    @property
    def certain(self) -> bool:
        """Exact with no "may" code: what the published agreement figure counts."""
        return self.exact and not self.may


def agreement(result, pred) -> Agreement:
    """ptxas against the model, "may" codes aside (and the program marked ``may``).  A rejection
    where the model predicts acceptance -- a register-allocation failure too -- is a miss."""
    may = tuple(getattr(pred, "may", ()))
    real, mine = observed(result), predicted(pred)
    printed = tuple(sorted({x.split()[1] for x in real if x.startswith("info ") and x.split()[1] in may}))
    real = without(real, may)
    return Agreement(real == mine, printed, real, mine, bool(may))


def code_verdicts(pred, codes) -> dict[str, str]:
    """For each of ``codes`` (``C7511``..., or ``error``): "yes" (the model predicts it), "may" or "no"."""
    said = {d.code or "error" for d in pred.diagnostics} | ({"error"} if not pred.accepted else set())
    may = set(getattr(pred, "may", ()))
    return {c: "may" if c in may else "yes" if c in said else "no" for c in codes}


def printed_codes(result) -> set[str]:
    """The codes ptxas printed (``error`` for a rejection)."""
    return {x.split()[1] if x.startswith("info ") else "error" for x in observed(result) if x != "none"}
