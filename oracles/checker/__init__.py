"""Static checker over the program IR: ISA rules, PTX-spec pipeline rules, and a ptxas model.

``check_module(module)`` returns ``Finding``s with stable rule ids and lines (``tensormaps``: the
program header's ``TENSORMAP:`` descriptions, which give a tensor copy's box for the mbarrier rules);
``predict_ptxas(module)`` says what ptxas 13.0.88 will print (accept/reject, codes, lines);
``check_and_predict(module)`` gives both from one run of the ptxas model.
"""
from __future__ import annotations

from typing import Iterable

from fuzzptx.program import TensorMap
from fuzzptx.ptx.ir import Module

from . import isa_rules, mbarrier_rules, scalar_rules, spec_rules
from .context import build_ctx
from .findings import LAYERS, Finding, Sink, path_of
from .ptxas_model import PredictedDiag, PredictedDiagnostics, findings_from, predict_module

__all__ = ["Finding", "PredictedDiag", "PredictedDiagnostics", "check_module", "check_and_predict", "predict_ptxas",
           "LAYERS"]


def check_module(module: Module, *, layers: tuple[str, ...] = LAYERS,
                 tensormaps: Iterable[TensorMap] = ()) -> list[Finding]:
    """Every finding of the chosen layers, in function order then line order."""
    return _check(module, layers, predict=False, tensormaps=tensormaps)[0]


def check_and_predict(module: Module, *, layers: tuple[str, ...] = LAYERS,
                      tensormaps: Iterable[TensorMap] = ()) -> tuple[list[Finding], PredictedDiagnostics]:
    """``check_module``'s findings and ``predict_ptxas``'s prediction from one run of the ptxas
    model (which reuses the spec layer's per-function contexts and the ISA layer's findings):
    a caller that needs both pays for the model once.  The model runs even when ``layers``
    leaves out ``ptxas-model`` (its findings are then not in the list)."""
    findings, pred = _check(module, layers, predict=True, tensormaps=tensormaps)
    assert pred is not None
    return findings, pred


def _check(module: Module, layers: tuple[str, ...], predict: bool,
           tensormaps: Iterable[TensorMap] = ()) -> tuple[list[Finding], PredictedDiagnostics | None]:
    tensormaps = tuple(tensormaps)
    unknown = set(layers) - set(LAYERS)
    if unknown:
        raise ValueError(f"unknown checker layers: {sorted(unknown)}; choose from {LAYERS}")
    model = predict or "ptxas-model" in layers
    path = path_of(module)
    out: list[Finding] = []
    ctxs = {}
    isa_found: dict[str, list[Finding]] = {}
    head = Sink(path, None, "isa")
    isa_rules.check_module_header(module, head)
    isa_found[""] = head.items
    if "isa" in layers:
        out += head.items
    for fn in module.functions():
        if fn.body is None:
            continue
        if "isa" in layers or model:
            sink = Sink(path, fn.name, "isa")
            isa_rules.check_function(module, fn, sink)
            isa_found[fn.name] = sink.items
            if "isa" in layers:
                out += sink.items
        if "spec" in layers or model:
            ctxs[fn.name] = build_ctx(module, fn, tensormaps)
        if "spec" in layers:
            sink = Sink(path, fn.name, "spec")
            spec_rules.check_function(ctxs[fn.name], sink)
            mbarrier_rules.check_function(ctxs[fn.name], sink)
            scalar_rules.check_function(ctxs[fn.name], sink)
            out += sorted(sink.items, key=lambda f: (f.line or 0, f.rule))
    pred = predict_module(module, ctxs, isa_found) if model else None
    if "ptxas-model" in layers and pred is not None:
        out += findings_from(pred, path)
    return out, pred


def predict_ptxas(module: Module) -> PredictedDiagnostics:
    """What ptxas 13.0.88 (-arch=sm_90a) is predicted to print for this module."""
    return predict_module(module)


