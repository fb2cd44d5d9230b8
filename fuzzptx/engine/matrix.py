"""A finding against every ptxas release: the release matrix, and ``fuzzptx bisect``.

For each release of a ``--ptxas`` SPEC the same judges run with that release as *the* ptxas (the
ptxas judge compiles with it, the SASS judge disassembles its cubin, the GPU runs it), so each row
answers "does this signature hold with release R?".  A release that cannot read the program's
``.version`` or target is "not applicable", never a row of findings.  The checker's ptxas model
is of one release and is silent against the others.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from fuzzptx.helptext import Formatter
from fuzzptx.judges import differ
from fuzzptx.judges.builtin import ReleasePtxasJudge
from fuzzptx.oracles import toolchains
from fuzzptx.oracles.hardware import gpu_available
from fuzzptx.program import Program

CPU_MATRIX_JUDGES = ("ptxas", "checker", "reference", "sass")


def default_judges(hardware: bool) -> tuple[str, ...]:
    """Every CPU judge, the SASS judge included; the GPU too where one is there and asked for."""
    return CPU_MATRIX_JUDGES + (("hardware",) if hardware and gpu_available() is None else ())


def matrix(program: Program, text: str, spec: str, judges: Sequence[str], *,
           progress: Any = None) -> dict[str, dict]:
    """Release -> ``{"verdicts": {...}, "findings": [signature, ...]}`` (or ``{"not_applicable": why}``)."""
    out: dict[str, dict] = {}
    for tc in toolchains.resolve(spec):
        why = ReleasePtxasJudge(tc).not_applicable(program)
        if why is not None:
            out[tc.release] = {"not_applicable": why}
        else:
            v = differ.judge(program, judges, text=text, judged=program, toolchain=tc)
            out[tc.release] = {"verdicts": v.summary(), "findings": [f.signature for f in differ.compare(program, v)]}
        if progress is not None:
            progress(tc.release, out[tc.release])
    return out


def table(rows: dict[str, dict], signature: str | None = None) -> str:
    """The matrix as text: one line per release, with whether ``signature`` holds."""
    lines = []
    for release, row in rows.items():
        if "not_applicable" in row:
            lines.append(f"{release:10s}  n/a    {row['not_applicable']}")
            continue
        holds = "" if signature is None else ("holds  " if any(f.startswith(signature) for f in row["findings"])
                                              else "-      ")
        lines.append(f"{release:10s}  {holds}ptxas {row['verdicts'].get('ptxas', '?')}"
                     + (f"; findings: {', '.join(row['findings'])}" if row["findings"] else ""))
    return "\n".join(lines)


def bisect(program: Program, text: str, keep: str, spec: str, *, progress: Any = None) -> dict:
    """Which releases of SPEC reproduce ``keep`` (a signature prefix or ``ptxas:C7519``...): every
    release is judged (a bug can come and go), then the first and last that hold are named."""
    gpu = gpu_available() is None
    judges = tuple(dict.fromkeys(("ptxas",) + tuple(j for j in differ.judges_for(keep) if j != "hardware" or gpu)))
    pred = differ.keep_predicate(keep)
    holds: dict[str, bool | None] = {}
    rows: dict[str, dict] = {}
    for tc in toolchains.resolve(spec):
        why = ReleasePtxasJudge(tc).not_applicable(program)
        if why is not None:
            holds[tc.release], rows[tc.release] = None, {"not_applicable": why}
        else:
            v = differ.judge(program, judges, text=text, judged=program, toolchain=tc)
            findings = differ.compare(program, v)
            holds[tc.release] = bool(pred(findings, v))
            rows[tc.release] = {"verdicts": v.summary(), "findings": [f.signature for f in findings]}
        if progress is not None:
            progress(tc.release, holds[tc.release])
    yes = [r for r, h in holds.items() if h]
    return {"keep": keep, "judges": list(judges), "holds": holds, "first": yes[0] if yes else None,
            "last": yes[-1] if yes else None, "matrix": rows}


def main_bisect(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fuzzptx bisect", description="which ptxas releases reproduce a signature: "
                                 "the first and the last, and every release's verdict",
                                 formatter_class=Formatter)
    ap.add_argument("file", help="a repro file or any .ptx (without a header: a ptxas-only signature)")
    ap.add_argument("--keep", required=True, help="the signature (prefix) or judge outcome, e.g. ptxas:C7519, "
                    "ptxas:error, checker!=ptxas|missed:C7517, sass:")
    ap.add_argument("--ptxas", default="all", metavar="SPEC", help="the releases to try (fetched into the user "
                    "cache on demand; fuzzptx toolchains lists them)")
    ap.add_argument("--json", action="store_true", help="print one JSON object (first, last, every release's verdict)")
    args = ap.parse_args(argv)
    program = Program.from_file(args.file)
    with open(args.file) as fh:
        text = fh.read()

    def say(release: str, h: bool | None) -> None:
        if not args.json:
            print(f"  {release:10s} {'n/a' if h is None else 'holds' if h else '-'}", file=sys.stderr)

    res = bisect(program, text, args.keep, args.ptxas, progress=say)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print(table(res["matrix"], None if args.keep.startswith("ptxas:") else args.keep))
        if res["first"] is None:
            print(f"\n{args.keep!r}: no release of {args.ptxas!r} reproduces it")
        else:
            print(f"\n{args.keep!r}: first {res['first']}, last {res['last']} "
                  f"({sum(1 for h in res['holds'].values() if h)} of {sum(1 for h in res['holds'].values() if h is not None)} "
                  "applicable releases)")
    return 0 if res["first"] is not None else 1
