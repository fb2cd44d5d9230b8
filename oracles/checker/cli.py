"""``fuzzptx check PATH... [--format text|json|sarif] [--ptxas [SPEC]] [--layers isa,spec,ptxas-model]``.

Exit status: 0 nothing found, 1 findings (or, with ``--ptxas``, a prediction ptxas contradicts),
2 bad input (one line naming file:line, no traceback).
"""
from __future__ import annotations

import argparse
import json
import sys

from fuzzptx.errors import FuzzptxError
from fuzzptx.helptext import Formatter, Progress
from fuzzptx.inputs import read_text
from fuzzptx.oracles.ptxas import compile_ptx
from fuzzptx.program import MAGIC, Program
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
    p = _Args(prog="fuzzptx check", formatter_class=Formatter,
              description="Static checks of PTX kernels: ISA, PTX-spec pipeline rules, ptxas model.")
    p.add_argument("paths", nargs="*", help="PTX files")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text",
                   help="text: one line per finding (and, with --ptxas, per ptxas that agreed); json: a list of "
                        "findings; sarif: SARIF 2.1.0 for code-scanning dashboards")
    p.add_argument("--ptxas", nargs="?", const="", default=None, metavar="SPEC",
                   help="also run the real ptxas and report where the model differs; with a SPEC (a release, a list, "
                        "a range 12.4-13.5, latest, all, or a path), each of those releases (the model is of 13.0.88)")
    p.add_argument("--layers", default=",".join(LAYERS), help=f"comma-separated subset of {','.join(LAYERS)}")
    return p


def load(path: str):
    """Parse one file; every failure becomes a FuzzptxError naming the file (and line when known)."""
    text = read_text(path, what="PTX file")
    return parse(text, file=path), text


def tensormaps_of(path: str, module, text: str) -> tuple:
    """The tensor maps a repro file's header describes (the mbarrier rules size a tensor copy's box
    from them, as the checker judge does in a replay); () for plain PTX.  A bad header is the
    file's one-line error, as in ``fuzzptx replay``."""
    if MAGIC not in text or "TENSORMAP:" not in text:
        return ()
    return Program.from_module(module, path).tensormaps


def mismatches(path: str, module, text: str, toolchain=None) -> list[Finding]:
    """One finding for every place the ptxas model and the real ptxas (``toolchain``: another
    release) disagree ("may" codes -- allocator-dependent -- aside: never a mismatch,
    ``ptxas_compare.agreement``): a diagnostic both print at different lines is one mismatch, and
    "nothing printed" is said in words, never as a diagnostic of its own."""
    return compare_with_ptxas(path, module, text, toolchain)[0]


def compare_with_ptxas(path: str, module, text: str, toolchain=None) -> tuple[list[Finding], str]:
    """(the mismatches, one line saying which ptxas ran and what both printed, for when they agree)."""
    a = agreement(compile_ptx(text, want_cubin=False, ptxas=toolchain.ptxas if toolchain is not None else None),
                  predict_ptxas(module))
    real, pred = a.real, a.mine
    who = "ptxas" if toolchain is None else f"ptxas {toolchain.release}"
    only_pred = [] if a.exact else [x for x in pred if x not in real and x != "none"]
    only_real = [] if a.exact else [x for x in real if x not in pred and x != "none"]
    out = []

    def add(line: int | None, message: str) -> None:
        out.append(Finding(path, line, "ptxas-model.mismatch", "warning", "ptxas-model", message, None))

    for item in list(only_pred):  # the same diagnostic at another line: one mismatch
        twin = next((r for r in only_real if _kind(r) == _kind(item)), None)
        if twin is not None and _line_of(item) != _line_of(twin):
            only_pred.remove(item)
            only_real.remove(twin)
            add(_line_of(twin), f"predicted '{item}' but {who} printed it at line {_line_of(twin)}")
    nothing = "nothing" if real == ["none"] else ", ".join(real)
    for item in only_pred:
        add(_line_of(item), f"predicted '{item}' but {who} did not print it ({who} printed: {nothing})")
    for item in only_real:
        add(_line_of(item), f"{who} printed '{item}' which the model did not predict"
            + (" (the model predicted nothing)" if pred == ["none"] else ""))
    may = f"; 'may' codes it printed: {', '.join(a.may_printed)}" if a.may_printed else ""
    agreed = (f"{path}: {who} agrees with the model ({'nothing printed' if real == ['none'] else ', '.join(real)}"
              f"{may})")
    return out, agreed


def _kind(item: str) -> str:
    """``info C7517 line 34`` -> ``info C7517``: what a diagnostic is, without where."""
    return item.split(" line ")[0]


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
    layers = tuple(dict.fromkeys(x.strip() for x in args.layers.split(",") if x.strip()))
    if not layers:
        raise FuzzptxError(f"check: --layers {args.layers!r} names no layer; choose from {', '.join(LAYERS)}")
    bad = [x for x in layers if x not in LAYERS]
    if bad:
        raise FuzzptxError(f"check: unknown layer(s) {', '.join(bad)}; choose from {', '.join(LAYERS)}")
    with Progress("check") as ticker:  # a line every few seconds while a big module is read or checked
        return _check(args, layers, out, ticker)


def _check(args: argparse.Namespace, layers: tuple[str, ...], out, ticker: Progress) -> int:
    findings: list[Finding] = []
    loaded, bad_files = [], []
    for k, p in enumerate(args.paths, 1):  # every good file is checked; each bad one is one line, and the exit is 2
        ticker.step(f"reading {p} ({k}/{len(args.paths)})")
        try:
            module, text = load(p)
            loaded.append((p, module, text, tensormaps_of(p, module, text)))
        except FuzzptxError as exc:
            bad_files.append(str(exc))
    releases = toolchains.resolve(args.ptxas) if args.ptxas else ()
    agreed: list[str] = []  # one line per file and ptxas that agreed with the model: it did run
    clean: list[str] = []  # files with no finding: said, so a clean run is not silence
    for k, (path, module, text, tmaps) in enumerate(loaded, 1):
        before, said = len(findings), len(agreed)
        ticker.step(f"checking {path} ({k}/{len(loaded)})")
        findings += check_module(module, layers=layers, tensormaps=tmaps)
        for tc in (releases or ((None,) if args.ptxas is not None else ())):
            ticker.step(f"ptxas {tc.release if tc is not None else 'pinned'} on {path}")
            found, agree = compare_with_ptxas(path, module, text, tc)
            findings += found
            if not found:
                agreed.append(agree)
        if len(findings) == before and len(agreed) == said:  # (an "agrees" line already speaks for it)
            clean.append(f"{path}: clean ({', '.join(layers)})")
    if args.format == "text":
        for f in findings:
            print(f.text(), file=out)
        for line in agreed:
            print(line, file=out)
        for line in clean:
            print(line, file=out)
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
