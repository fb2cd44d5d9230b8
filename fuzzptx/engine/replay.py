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

import json
import re
import sys
from dataclasses import dataclass
from typing import Sequence

from fuzzptx.errors import FuzzptxError
from fuzzptx.inputs import read_text
from fuzzptx.judges import differ, registry
from fuzzptx.judges.base import ACCEPTED, Judge, ReferenceVerdict, Verdicts
from fuzzptx.judges.expect import (LABELS, Expectation, check_expectations, replay_judges,  # noqa: F401
                                   same_verdict)
from fuzzptx.judges.selection import JudgeSet, select
from fuzzptx.oracles.reference import ReferenceError_
from fuzzptx import launch
from fuzzptx.program import Program, say_inferred

from . import matrix
from .executor import Executor
from .options import Parser, add_judges, add_json, add_ptxas

@dataclass(frozen=True)
class Row:
    judge: str
    verdict: str
    details: str = ""


def run_judges(program: Program, text: str, *, hardware: bool, extra: Sequence[str] = ()):
    """(rows, verdicts) for every judge that can run here: one block of one program through the
    engine's executor (a judge that replays its own way, such as the metamorphic pairs of a
    signature, through its ``replay``)."""
    names = replay_judges(program, hardware=hardware, extra=extra)
    skipped: dict[str, str] = {}
    own: dict[str, list[tuple[str, str, str]]] = {}
    replayed = Verdicts()  # the verdicts of the judges that replay their own way
    for name in names:
        judge = registry.get(name)
        if type(judge).replay is not Judge.replay:
            mine = judge.replay(program, replayed, gpu=hardware)
            if mine is not None:  # (None: judged like any other)
                own[name] = mine
                continue
        if not judge.in_pool and not hardware:
            skipped[name] = "--no-hardware"
            continue
        try:
            why = judge.available()
        except ImportError as exc:
            why = f"{name} judge unavailable: {exc}"
        if why is not None:
            skipped[name] = why
    failed: dict[str, BaseException] = {}
    judges = JudgeSet.of([n for n in names if n not in skipped and n not in own])
    v = Executor(judges).judge(program, text, program, failed=failed) if len(judges) else Verdicts()
    v.update(replayed)
    rows: list[Row] = []
    for name in names:
        judge = registry.get(name)
        if name in own:
            rows += [Row(*r) for r in own[name]]
            continue
        if name in skipped:
            rows.append(Row(name, "skipped", skipped[name]))
            continue
        if name in failed:
            exc = failed[name]
            rows.append(Row(name, "skipped", f"{name} judge unavailable: {exc}" if isinstance(exc, ImportError)
                            else str(exc)))
            continue
        if name not in v:  # nothing to say of this program (the GPU on a program the compiler rejects)
            rows.append(Row(name, "not run", "no verdict on this program"
                            + (" (the compiler did not accept it)" if ACCEPTED in judge.needs else "")))
            continue
        verdict = v[name]
        # a bad address or missing input is bad input (exit 2) unless the repro recorded what the
        # judge said (a fuzz finding whose reference verdict is that error: then it is a verdict
        # to compare, as the differ took it); an instruction outside the reference's subset only
        # means this judge cannot say anything here
        if isinstance(verdict, ReferenceVerdict) and isinstance(verdict.exception, ReferenceError_) \
                and verdict.skipped is None and not any(j == name for j, _ in program.expect):
            raise verdict.exception
        rows += [Row(*r) for r in judge.rows(program, verdict, v)]
        if isinstance(verdict, ReferenceVerdict) and verdict.skipped is not None:
            del v[name]  # outside its subset: this judge says nothing here, its expectation is not run
    return rows, v


def _table(rows: list[Row]) -> str:
    w1 = max(len("judge"), *(len(r.judge) for r in rows))
    w2 = max(len("verdict"), *(len(r.verdict) for r in rows))
    lines = [f"{'judge'.ljust(w1)} | {'verdict'.ljust(w2)} | details", f"{'-' * w1}-+-{'-' * w2}-+--------"]
    lines += [f"{r.judge.ljust(w1)} | {r.verdict.ljust(w2)} | {r.details}" for r in rows]
    return "\n".join(lines)


def main_replay(argv: list[str]) -> int:
    ap = Parser(prog="fuzzptx replay", description="rerun every judge on a repro file")
    ap.add_argument("file", help="a PTX file: a fuzzptx repro, or plain PTX (a header is inferred and printed)")
    add_json(ap)
    ap.add_argument("--no-hardware", action="store_true", help="do not run the GPU judge even if a GPU is present")
    add_judges(ap, None, "more judges to run beside the default ones (built-in or plugin names, comma-separated); "
                         "the default: reference, ptxas, checker, the GPU, and the judges the repro's signature names")
    add_ptxas(ap, help="also judge with each ptxas release of SPEC as the ptxas (a release, list, range 12.4-13.5, "
                       "latest, all, or a path; fetched into the user cache on demand): the release matrix, "
                       "JSON key 'matrix' (release -> verdicts and findings); every CPU judge runs, the SASS "
                       "judge included, and the GPU where there is one")
    ap.add_argument("--launch", metavar="JSON", default=None,
                    help="plain PTX: the launch to use, a JSON object or file ({\"block\": 128, \"smem\": 0, "
                         "\"cluster\": [2, 1, 1], \"params\": {\"NAME or index\": value}}, or Triton's metadata JSON); what it leaves "
                         "open is searched (default: NAME.json beside the file, if any)")
    ap.add_argument("--kernel", metavar="NAME", default=None,
                    help="plain PTX with several kernels: the one the inferred header launches (default: the first)")
    args = ap.parse_args(argv)
    try:
        text = read_text(args.file, what="PTX file")
        given = launch.parse_launch_option(args.launch) if args.launch else None
        program = launch.load(text, args.file, args.kernel, given=given)
        say_inferred(program, args.file, "replay")
        extra = tuple(select(args.judges)) if args.judges.strip() else ()
        rows, v = run_judges(program, text, hardware=not args.no_hardware, extra=extra)
        cov = launch.coverage_row(program, v)
        rows += [Row(*cov)] if cov else []
        rows_by_release = matrix.matrix(program, text, args.releases, matrix.default_judges(not args.no_hardware)) \
            if args.releases else None
    except FuzzptxError as exc:
        print(f"fuzzptx replay: {exc}", file=sys.stderr)
        return 2
    findings = differ.compare(program, v)
    exps = check_expectations(program, v)
    changed = [e for e in exps if e.status == "changed"]
    signature = signature_status(program, findings, v)
    if args.json:
        print(json.dumps({
            "file": args.file,
            "signature": program.signature,
            "judges": [r.__dict__ for r in rows],
            "findings": [f.signature for f in findings],
            **launch.record_fields(program, v),
            "expectations": [e.__dict__ for e in exps],
            "signature_status": signature,
            "status": "changed" if changed or signature == "gone" else "holds",
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
            print(f"\nrelease matrix ({args.releases}):\n" + matrix.table(rows_by_release, program.signature))
        if signature is not None:
            print(f"\nsignature {program.signature}: {signature}"
                  + (f" (needs {', '.join(differ.judges_for(program.signature))})" if signature == "not run" else ""))
        gone = ["the signature"] if signature == "gone" else []
        print("\n" + ("CHANGED: " + ", ".join([e.judge for e in changed] + gone) if changed or gone
                      else "all expectations hold"))
    return 1 if changed or signature == "gone" else 0


def signature_status(program: Program, findings, v: Verdicts) -> str | None:
    """Whether the repro's ``SIGNATURE`` still holds: ``holds``, ``gone`` (every judge it needs ran
    and none found it: the bug is fixed, or the finding was a judge's own error), ``not run`` (a
    judge it needs could not run here: no GPU; or the signature is another tool's, such as
    ``fuzzptx conformance``'s ``spec!=ptxas``), or None for a file without one."""
    sig = program.signature
    if not sig:
        return None
    if any(f.signature.startswith(sig) for f in findings) or differ.keep_predicate(sig)(findings, v):
        return "holds"
    first = re.split(r"!=|:|\|", sig, maxsplit=1)[0]
    if registry.registered(first) is None:
        return "not run"
    return "gone" if all(name in v for name in differ.judges_for(sig)) else "not run"
