"""``fuzzptx check PATH... [--format text|json|sarif] [--ptxas [SPEC]] [--layers isa,spec,ptxas-model]``.

Exit status: 0 nothing found, 1 findings (or, with ``--ptxas``, a prediction ptxas contradicts),
2 bad input (one line naming file:line, no traceback).
"""
from __future__ import annotations

import argparse
import json
import sys

from fuzzptx.errors import FuzzptxError
from fuzzptx.inputs import read_text
from fuzzptx.oracles.ptxas import compile_ptx
from fuzzptx.ptx.parse import parse

from . import check_module, predict_ptxas
from .findings import LAYERS, Finding
from .. import toolchains
from .ptxas_compare import agreement

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


class _Args(argparse.ArgumentParser):
    def error(self, message):  # argparse prints usage and exits 2 itself; keep it one line
        raise FuzzptxError(f"check: {message}")


def _parser() -> argparse.ArgumentParser:
    p = _Args(prog="fuzzptx check", description="Static checks of PTX kernels: ISA, PTX-spec pipeline rules, ptxas model.")
    p.add_argument("paths", nargs="*", help="PTX files")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    p.add_argument("--ptxas", nargs="?", const="", default=None, metavar="SPEC",
                   help="also run the real ptxas and report where the model differs; with a SPEC (a release, a list, "
                        "a range 12.4-13.5, latest, all, or a path), each of those releases (the model is of 13.0.88)")
    p.add_argument("--layers", default=",".join(LAYERS), help=f"comma-separated subset of {','.join(LAYERS)}")
    return p


def load(path: str):
    """Parse one file; every failure becomes a FuzzptxError naming the file (and line when known)."""
    text = read_text(path, what="PTX file")
    return parse(text, file=path), text


def mismatches(path: str, module, text: str, toolchain=None) -> list[Finding]:
    """Findings for every place the ptxas model and the real ptxas (``toolchain``: another release)
    disagree ("may" codes -- allocator-dependent -- aside: never a mismatch, ``ptxas_compare.agreement``)."""
    a = agreement(compile_ptx(text, want_cubin=False, ptxas=toolchain.ptxas if toolchain is not None else None),
                  predict_ptxas(module))
    real, pred = a.real, a.mine
    who = "ptxas" if toolchain is None else f"ptxas {toolchain.release}"
    out = []
    for item in sorted(set(pred) - set(real)):
        out.append(Finding(path, _line_of(item), "ptxas-model.mismatch", "warning", "ptxas-model",
                           f"predicted '{item}' but {who} did not print it ({who} printed: {', '.join(real)})", None))
    for item in sorted(set(real) - set(pred)):
        out.append(Finding(path, _line_of(item), "ptxas-model.mismatch", "warning", "ptxas-model",
                           f"{who} printed '{item}' which the model did not predict", None))
    return out


def _line_of(item: str) -> int | None:
    parts = item.split()
    return int(parts[-1]) if len(parts) >= 2 and parts[-2] == "line" else None


def sarif(findings: list[Finding]) -> dict:
    rules = sorted({f.rule for f in findings})
    results = []
    for f in findings:
        res = {"ruleId": f.rule, "level": SARIF_LEVEL.get(f.severity, "warning"), "message": {"text": f.message}}
        if f.path:
            loc = {"artifactLocation": {"uri": f.path}}
            if f.line:
                loc["region"] = {"startLine": f.line}
            res["locations"] = [{"physicalLocation": loc}]
        results.append(res)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "fuzzptx-check", "informationUri": "https://github.com/",
                                "rules": [{"id": r, "shortDescription": {"text": r}} for r in rules]}},
            "results": results,
        }],
    }


def run(argv: list[str], out=None) -> int:
    out = sys.stdout if out is None else out  # looked up at call time (a caller may have replaced it)
    args = _parser().parse_args(argv)
    if args.ptxas and args.ptxas.endswith(".ptx"):  # `check --ptxas kernel.ptx`: the flag, then a file to check
        args.paths.insert(0, args.ptxas)
        args.ptxas = ""
    if not args.paths:
        raise FuzzptxError("check: name at least one PTX file")
    layers = tuple(x.strip() for x in args.layers.split(",") if x.strip())
    bad = [x for x in layers if x not in LAYERS]
    if bad:
        raise FuzzptxError(f"check: unknown layer(s) {', '.join(bad)}; choose from {', '.join(LAYERS)}")
    findings: list[Finding] = []
    loaded, bad_files = [], []
    for p in args.paths:  # every good file is checked; each bad one is one line, and the exit is 2
        try:
            loaded.append((p, *load(p)))
        except FuzzptxError as exc:
            bad_files.append(str(exc))
    releases = toolchains.resolve(args.ptxas) if args.ptxas else ()
    for path, module, text in loaded:
        findings += check_module(module, layers=layers)
        if args.ptxas is not None and not releases:
            findings += mismatches(path, module, text)
        for tc in releases:
            findings += mismatches(path, module, text, tc)
    if args.format == "text":
        for f in findings:
            print(f.text(), file=out)
    elif args.format == "json":
        json.dump([f.as_json() for f in findings], out, indent=1)
        print(file=out)
    else:
        json.dump(sarif(findings), out, indent=1)
        print(file=out)
    for line in bad_files:
        print(f"fuzzptx check: {line}", file=sys.stderr)
    return 2 if bad_files else 1 if findings else 0


def main_check(argv: list[str]) -> int:
    """CLI entry: bad input prints one line (``file:line:col: message``) and returns 2."""
    try:
        return run(list(argv))
    except FuzzptxError as exc:
        print(f"fuzzptx check: {exc}", file=sys.stderr)
        return 2
