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

from fuzzptx.helptext import Formatter, Progress
from fuzzptx.judges import differ
from fuzzptx.judges.builtin import ReleasePtxasJudge
from fuzzptx.oracles import toolchains
from fuzzptx.oracles.hardware import gpu_available
from fuzzptx.oracles.ptxas import BASE_TIMEOUT_S, PER_MB_S, TIMEOUT_ENV, use_ptxas_timeout
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
        if "timed_out" in row:
            lines.append(f"{release:10s}  ?      {row['timed_out']}")
            continue
        holds = "" if signature is None else ("holds  " if any(f.startswith(signature) for f in row["findings"])
                                              else "-      ")
        lines.append(f"{release:10s}  {holds}ptxas {row['verdicts'].get('ptxas', '?')}"
                     + (f"; findings: {', '.join(row['findings'])}" if row["findings"] else ""))
    return "\n".join(lines)


def bisect(program: Program, text: str, keep: str, spec: str, *, progress: Any = None, step: Any = None) -> dict:
    """Which releases of SPEC reproduce ``keep`` (a signature prefix or ``ptxas:C7519``...): every
    release is judged (a bug can come and go), then the first and last that hold are named.  A
    release whose ptxas ran out of time says nothing either way (``holds`` None, its row
    ``timed_out``), unless the timeout is what ``keep`` asks about.  ``step(text)`` is told what
    runs before each release (a progress line)."""
    gpu = gpu_available() is None
    judges = tuple(dict.fromkeys(("ptxas",) + tuple(j for j in differ.judges_for(keep) if j != "hardware" or gpu)))
    pred = differ.keep_predicate(keep)
    holds: dict[str, bool | None] = {}
    rows: dict[str, dict] = {}
    for tc in toolchains.resolve(spec):
        if step is not None:
            step(f"judging with ptxas {tc.release}")
        why = ReleasePtxasJudge(tc).not_applicable(program)
        if why is not None:
            holds[tc.release], rows[tc.release] = None, {"not_applicable": why}
        else:
            v = differ.judge(program, judges, text=text, judged=program, toolchain=tc)
            findings = differ.compare(program, v)
            r = v.get("ptxas")
            if r is not None and r.timed_out and not keep.startswith("ptxas:timeout"):
                holds[tc.release], rows[tc.release] = None, {"timed_out": r.timeout_text()}
            else:
                holds[tc.release] = bool(pred(findings, v))
                rows[tc.release] = {"verdicts": v.summary(), "findings": [f.signature for f in findings]}
        if progress is not None:
            progress(tc.release, holds[tc.release], rows[tc.release])
    yes = [r for r, h in holds.items() if h]
    return {"keep": keep, "judges": list(judges), "holds": holds, "first": yes[0] if yes else None,
            "last": yes[-1] if yes else None, "matrix": rows,
            "timed_out": [r for r, row in rows.items() if "timed_out" in row]}


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
    ap.add_argument("--ptxas-timeout", metavar="SECONDS", type=float, default=None,
                    help=f"seconds each ptxas run may take (default: {BASE_TIMEOUT_S:g} s plus {PER_MB_S:g} s per MB "
                         f"of PTX, or ${TIMEOUT_ENV}); a release that runs out of time is no answer, never a rejection")
    args = ap.parse_args(argv)
    program = Program.from_file(args.file)
    with open(args.file) as fh:
        text = fh.read()

    with use_ptxas_timeout(args.ptxas_timeout), Progress("bisect") as ticker:
        def say(release: str, h: bool | None, row: dict) -> None:
            ticker.step("")
            if not args.json:
                what = "timed out" if "timed_out" in row else "n/a" if h is None else "holds" if h else "-"
                print(f"  {release:10s} {what}", file=sys.stderr)

        res = bisect(program, text, args.keep, args.ptxas, progress=say, step=ticker.step)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print(table(res["matrix"], None if args.keep.startswith("ptxas:") else args.keep))
        late = f"; {len(res['timed_out'])} release(s) ran out of time ({', '.join(res['timed_out'])}): " \
               f"--ptxas-timeout SECONDS gives them more" if res["timed_out"] else ""
        if res["first"] is None:
            print(f"\n{args.keep!r}: no release of {args.ptxas!r} reproduces it{late}")
        else:
            print(f"\n{args.keep!r}: first {res['first']}, last {res['last']} "
                  f"({sum(1 for h in res['holds'].values() if h)} of {sum(1 for h in res['holds'].values() if h is not None)} "
                  f"applicable releases){late}")
    return 0 if res["first"] is not None else 1
