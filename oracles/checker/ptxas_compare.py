"""A real ptxas result and a ptxas-model prediction as comparable items.

Both become sorted header-style lines (``info C7519 line 14``, ``error line 38``, ``none``), so
``fuzzptx check --ptxas``, the recorded experiments and the differential sample compare them as sets.
"""
from __future__ import annotations


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
    out = []
    for d in pred.diagnostics:
        if d.code:
            out.append(f"info {d.code}" + (f" line {d.line}" if d.line is not None else ""))
        else:
            out.append("error" + (f" line {d.line}" if d.line is not None else ""))
    if not pred.accepted and not any(o.startswith("error") for o in out):
        out.append("error")
    return sorted(set(out)) or ["none"]
