"""``fuzzptx replay FILE [--json] [--no-hardware]``: rerun every judge on a repro file.

Prints a verdict table (judge | verdict | details), the disagreements the differ
finds, and whether each recorded ``EXPECT`` line still holds.  Exit status: 0 when
every expectation holds, 1 when one changed, 2 for bad input (one line
``file:line: message``, never a traceback): an unreadable file, a bad header, a
missing buffer, an out-of-bounds or misaligned access (unless the file records the
reference's verdict: then the error is that judge's verdict, compared like any other).  Judges that cannot run here
(no GPU, no checker, an instruction outside the reference's subset) are reported as
skipped / unsupported and their expectations as "not run".
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from typing import Sequence

from fuzzptx.errors import FuzzptxError
from fuzzptx.inputs import read_text
from fuzzptx.judges import differ, metamorphic, registry
from fuzzptx.judges.base import Verdicts
from fuzzptx.oracles.hardware import gpu_available
from fuzzptx.oracles.reference import ReferenceError_
from fuzzptx import launch
from fuzzptx.program import say_inferred

from . import matrix

LABELS = ("rule", "spec", "mutation", "note")  # EXPECT keys that label the program rather than quote a judge


@dataclass(frozen=True)
class Row:
    judge: str
    verdict: str
    details: str = ""


@dataclass(frozen=True)
class Expectation:
    judge: str
    expected: str
    actual: str | None
    status: str  # holds | changed | not run | label


def _codes(text: str) -> set[str]:
    """The exact codes of a verdict line (the model's "may:C7512" codes are not predictions)."""
    return set(re.findall(r"C\d{4}(?:@\d+)?", re.sub(r"may:\S+", "", text)))


def same_verdict(judge: str, expected: str, actual: str) -> bool:
    """Whether a judge's verdict today still says what the repro recorded."""
    e, a = " ".join(expected.split()), " ".join(actual.split())
    if e == a:
        return True
    if judge in ("ptxas", "ptxas-model"):
        return e.split(" ")[0] == a.split(" ")[0] and _codes(e) == _codes(a)
    if judge == "reference":
        return e.split(" ")[0].rstrip(":") == a.split(" ")[0].rstrip(":")
    if judge == "hardware":
        return e.split(" ")[0] == a.split(" ")[0]
    if judge == "checker":
        return _checker_label_holds(e, a)
    return False


def _checker_label_holds(label: str, actual: str) -> bool:
    """A generator's checker label against the checker's verdict today.

    The strategies label a program ``legal``, ``illegal: <rule>`` or ``undefined: <rule>``
    (``strategies/mutations.py``); the checker answers ``clean`` or ``findings r1,r2``.  The
    model's ``ptxas.*`` findings are its forecast of ptxas's messages, not a verdict on the
    program, so a legal program holds beside them; a labelled rule holds when the checker names
    it or a rule under it (``isa.imm`` covers ``isa.imm.scale-d``)."""
    rules = actual.removeprefix("findings ").split(",") if actual.startswith("findings ") else []
    rules = [r for r in rules if r and not r.startswith("ptxas.")]
    if label == "legal":
        return actual == "clean" or (actual.startswith("findings ") and not rules)
    kind, _, rule = label.partition(":")
    rule = rule.strip()
    if kind in ("illegal", "undefined") and rule:
        return any(r == rule or r.startswith(rule + ".") for r in rules)
    return False


def replay_judges(program, *, hardware: bool, extra: Sequence[str] = ()) -> list[str]:
    """The judges a replay runs: the CPU judges, the GPU (unless ``--no-hardware``), the
    metamorphic pairs for a metamorphic signature, any plugin judge the signature names, and
    ``extra`` (``--judges``)."""
    names = ["reference", "ptxas", "checker", "hardware"]
    sig = program.signature or ""
    if metamorphic.is_metamorphic(sig):
        names.append("metamorphic")
    names += [j for j in differ.judges_for(sig) if j not in differ.BUILTIN] if sig else []
    names += list(extra)
    return list(dict.fromkeys(names))


def run_judges(program, text: str, *, hardware: bool, extra: Sequence[str] = ()):
    """(rows, verdicts) for every judge that can run here, each through the judge registry."""
    v = Verdicts()
    rows: list[Row] = []
    names = replay_judges(program, hardware=hardware, extra=extra)
    for name in names:
        judge = registry.get(name)
        if name == "metamorphic":
            _metamorphic_row(program, v, rows, hardware)
            continue
        if judge.cpu is False and not hardware:
            rows.append(Row(name, "skipped", "--no-hardware"))
            continue
        try:
            why = judge.available()
        except ImportError as exc:
            why = f"{name} judge unavailable: {exc}"
        if why is not None:
            rows.append(Row(name, "skipped", why))
            continue
        try:
            differ.judge(program, (name,), text=text, judged=program, into=v, alongside=names)
        except ImportError as exc:
            rows.append(Row(name, "skipped", f"{name} judge unavailable: {exc}"))
            continue
        except FuzzptxError as exc:
            rows.append(Row(name, "skipped", str(exc)))
            continue
        rv = v.get("reference") if name == "reference" else None
        # a bad address or missing input is bad input (exit 2) unless the repro recorded what the
        # reference said (a fuzz finding whose reference verdict is that error: then it is a
        # verdict to compare, as the differ took it); an instruction outside the reference's
        # subset only means this judge cannot say anything here
        if rv is not None and isinstance(rv.exception, ReferenceError_) and rv.skipped is None \
                and not any(j == "reference" for j, _ in program.expect):
            raise rv.exception
        rows += [Row(*r) for r in judge.rows(program, v[name], v)]
        if rv is not None and rv.skipped is not None:
            del v["reference"]  # outside its subset: this judge says nothing here, its expectation is not run
    return rows, v


def _metamorphic_row(program, v, rows: list, hardware: bool) -> None:
    """A repro of a metamorphic finding reruns its pairs: on the GPU for ``hardware:...``
    signatures (skipped, saying why, without one), on the reference for ``reference:...``."""
    sig = program.signature or ""
    on_gpu = not sig.startswith("reference:")
    if on_gpu:
        why = "--no-hardware" if not hardware else gpu_available()
        if why is not None:
            rows.append(Row("metamorphic", "skipped", f"{sig.split('|')[0]} needs the GPU: {why}"))
            return
    v.metamorphic = differ.metamorphic_verdict(program, on_gpu=on_gpu)
    found = [f.signature for _, f in v.metamorphic.findings]
    rows.append(Row("metamorphic", v.summary()["metamorphic"],
                    ("signature holds" if any(f.startswith(sig) for f in found) else "signature gone")
                    + (f"; found: {', '.join(found)}" if found else "")))


def check_expectations(program, v) -> list[Expectation]:
    summary = v.summary()
    out: list[Expectation] = []
    spec_rules = None
    if v.checker is not None:
        spec_rules = {f.rule for f in v.checker if getattr(f, "layer", "") == "spec"}
    for judge, expected in program.expect:
        if judge == "spec" and spec_rules is not None:
            undefined = expected.startswith("undefined")
            holds = bool(spec_rules) == undefined
            out.append(Expectation(judge, expected, "undefined" if spec_rules else "defined", "holds" if holds else "changed"))
        elif judge in LABELS or judge == "spec":
            out.append(Expectation(judge, expected, None, "label"))
        elif judge in summary:
            actual = summary[judge]
            out.append(Expectation(judge, expected, actual, "holds" if same_verdict(judge, expected, actual) else "changed"))
        else:
            out.append(Expectation(judge, expected, None, "not run"))
    return out


def _table(rows: list[Row]) -> str:
    w1 = max(len("judge"), *(len(r.judge) for r in rows))
    w2 = max(len("verdict"), *(len(r.verdict) for r in rows))
    lines = [f"{'judge'.ljust(w1)} | {'verdict'.ljust(w2)} | details", f"{'-' * w1}-+-{'-' * w2}-+--------"]
    lines += [f"{r.judge.ljust(w1)} | {r.verdict.ljust(w2)} | {r.details}" for r in rows]
    return "\n".join(lines)


def main_replay(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fuzzptx replay", description="rerun every judge on a repro file")
    ap.add_argument("file", help="a PTX file: a fuzzptx repro, or plain PTX (a header is inferred and printed)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--no-hardware", action="store_true", help="do not run the GPU judge even if a GPU is present")
    ap.add_argument("--judges", default="", help="more judges to run beside the default ones (built-in or plugin "
                    "names, comma-separated); the default: reference, ptxas, checker, the GPU, and the judges the "
                    "repro's signature names")
    ap.add_argument("--ptxas", metavar="SPEC", default=None,
                    help="also judge with each ptxas release of SPEC as the ptxas (a release, list, range 12.4-13.5, "
                         "latest, all, or a path; fetched into the user cache on demand): the release matrix, "
                         "JSON key 'matrix' (release -> verdicts and findings); every CPU judge runs, the SASS "
                         "judge included, and the GPU where there is one")
    ap.add_argument("--launch", metavar="JSON", default=None,
                    help="plain PTX: the launch to use, a JSON object or file ({\"block\": 128, \"smem\": 0, "
                         "\"params\": {\"NAME or index\": value}}, or Triton's metadata JSON); what it leaves "
                         "open is searched (default: NAME.json beside the file, if any)")
    ap.add_argument("--kernel", metavar="NAME", default=None,
                    help="plain PTX with several kernels: the one the inferred header launches (default: the first)")
    args = ap.parse_args(argv)
    try:
        text = read_text(args.file, what="PTX file")
        given = launch.parse_launch_option(args.launch) if args.launch else None
        program = launch.load(text, args.file, args.kernel, given=given)
        say_inferred(program, args.file, "replay")
        extra = registry.parse(args.judges) if args.judges.strip() else ()
        rows, v = run_judges(program, text, hardware=not args.no_hardware, extra=extra)
        cov = launch.coverage_row(program, v)
        rows += [Row(*cov)] if cov else []
        rows_by_release = matrix.matrix(program, text, args.ptxas, matrix.default_judges(not args.no_hardware)) \
            if args.ptxas else None
    except FuzzptxError as exc:
        print(f"fuzzptx replay: {exc}", file=sys.stderr)
        return 2
    findings = differ.compare(program, v)
    exps = check_expectations(program, v)
    changed = [e for e in exps if e.status == "changed"]
    if args.json:
        print(json.dumps({
            "file": args.file,
            "signature": program.signature,
            "judges": [r.__dict__ for r in rows],
            "findings": [f.signature for f in findings],
            **launch.record_fields(program, v),
            "expectations": [e.__dict__ for e in exps],
            "status": "changed" if changed else "holds",
            **({"matrix": rows_by_release} if rows_by_release is not None else {}),
        }, indent=2))
    else:
        print(_table(rows))
        if findings:
            print("\nfindings:")
            for f in findings:
                print(f"  {f.signature}: {f.message}")
        if exps:
            print("\nexpectations:")
            for e in exps:
                extra = "" if e.status in ("holds", "label", "not run") else f" (now: {e.actual})"
                print(f"  [{e.status}] {e.judge}: {e.expected}{extra}")
        if rows_by_release is not None:
            print(f"\nrelease matrix ({args.ptxas}):\n" + matrix.table(rows_by_release, program.signature))
        print("\n" + ("CHANGED: " + ", ".join(e.judge for e in changed) if changed else "all expectations hold"))
    return 1 if changed else 0
