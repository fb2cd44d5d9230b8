"""Static checker over the program IR: ISA rules, PTX-spec pipeline rules, and a ptxas model.

``check_module(module)`` returns ``Finding``s with stable rule ids and lines;
``predict_ptxas(module)`` says what ptxas 13.0.88 will print (accept/reject, codes, lines).
"""
from __future__ import annotations

from fuzzptx.ptx.ir import Module

from .context import build_ctx
from .findings import LAYERS, Finding, Sink, path_of
from .ptxas_model import PredictedDiag, PredictedDiagnostics, findings_from, predict_module

__all__ = ["Finding", "PredictedDiag", "PredictedDiagnostics", "check_module", "predict_ptxas", "main_check", "LAYERS"]


def check_module(module: Module, *, layers: tuple[str, ...] = LAYERS) -> list[Finding]:
    """Every finding of the chosen layers, in function order then line order."""
    from . import isa_rules, spec_rules

    unknown = set(layers) - set(LAYERS)
    if unknown:
        raise ValueError(f"unknown checker layers: {sorted(unknown)}; choose from {LAYERS}")
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
        if "isa" in layers or "ptxas-model" in layers:
            sink = Sink(path, fn.name, "isa")
            isa_rules.check_function(module, fn, sink)
            isa_found[fn.name] = sink.items
            if "isa" in layers:
                out += sink.items
        if "spec" in layers or "ptxas-model" in layers:
            ctxs[fn.name] = build_ctx(module, fn)
        if "spec" in layers:
            sink = Sink(path, fn.name, "spec")
            spec_rules.check_function(ctxs[fn.name], sink)
            out += sorted(sink.items, key=lambda f: (f.line or 0, f.rule))
    if "ptxas-model" in layers:
        out += findings_from(predict_module(module, ctxs, isa_found), path)
    return out


def predict_ptxas(module: Module) -> PredictedDiagnostics:
    """What ptxas 13.0.88 (-arch=sm_90a) is predicted to print for this module."""
    return predict_module(module)


def main_check(argv: list[str]) -> int:
    from .cli import main_check as _main

    return _main(argv)
