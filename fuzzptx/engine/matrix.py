"""A finding against every ptxas release: the release matrix, and ``fuzzptx bisect``.

For each release of a ``--ptxas`` SPEC the same judges run with that release as *the* ptxas (the
ptxas judge compiles with it, the SASS judge disassembles its cubin, the GPU runs it), so each row
answers "does this signature hold with release R?".  A release that cannot read the program's
``.version`` or target is "not applicable", never a row of findings.  The checker's ptxas model
is of one release and is silent against the others.
"""
from __future__ import annotations

import json
import sys
from typing import Any, Sequence

from fuzzptx.judges import differ, registry
from fuzzptx.judges.base import COMPILE, DEVICE
from fuzzptx.judges.builtin import release_not_applicable
from fuzzptx.judges.selection import default_names
from fuzzptx.oracles import toolchains
from fuzzptx.program import Program

from .options import Parser, add_json, add_ptxas


def usable(names: tuple[str, ...], gpu: bool) -> tuple[str, ...]:
    """``names`` less the judges that need a GPU where none is asked for or there."""
    return tuple(n for n in names if DEVICE not in registry.get(n).needs
                 or (gpu and registry.get(n).available() is None))


def default_judges(hardware: bool) -> tuple[str, ...]:
    """Every CPU judge, the SASS judge included; the GPU too where one is there and asked for."""
    return usable(default_names("matrix"), hardware)


def releases(program: Program, text: str, spec: str, judges: Sequence[str]):
    """The matrix's one loop: for each release of SPEC, (release, verdicts, findings) of the judges
    with that release as the compile stage's, or (release, why not applicable, None)."""
    for tc in toolchains.resolve(spec):
        why = release_not_applicable(tc, program)
        if why is not None:
            yield tc.release, why, None
        else:
            v = differ.judge(program, judges, text=text, judged=program, toolchain=tc)
            yield tc.release, v, differ.compare(program, v)


def row(verdicts: Any, findings: list | None) -> dict:
    """A release's row: its verdict lines and finding signatures, or why it is not applicable."""
    if findings is None:
        return {"not_applicable": verdicts}
    return {"verdicts": verdicts.summary(), "findings": [f.signature for f in findings]}


def matrix(program: Program, text: str, spec: str, judges: Sequence[str], *,
           progress: Any = None) -> dict[str, dict]:
    """Release -> ``{"verdicts": {...}, "findings": [signature, ...]}`` (or ``{"not_applicable": why}``)."""
    out: dict[str, dict] = {}
    for release, v, findings in releases(program, text, spec, judges):
        out[release] = row(v, findings)
        if progress is not None:
            progress(release, out[release])
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
        compiler = registry.by_stage(COMPILE).name
        lines.append(f"{release:10s}  {holds}{compiler} {row['verdicts'].get(compiler, '?')}"
                     + (f"; findings: {', '.join(row['findings'])}" if row["findings"] else ""))
    return "\n".join(lines)


def bisect(program: Program, text: str, keep: str, spec: str, *, progress: Any = None) -> dict:
    """Which releases of SPEC reproduce ``keep`` (a signature prefix or ``ptxas:C7519``...): every
    release is judged (a bug can come and go), then the first and last that hold are named."""
    compiler = registry.by_stage(COMPILE).name
    judges = usable(tuple(dict.fromkeys((compiler,) + differ.judges_for(keep))), True)
    pred = differ.keep_predicate(keep)
    holds: dict[str, bool | None] = {}
    rows: dict[str, dict] = {}
    for release, v, findings in releases(program, text, spec, judges):
        holds[release] = None if findings is None else bool(pred(findings, v))
        rows[release] = row(v, findings)
        if progress is not None:
            progress(release, holds[release])
    yes = [r for r, h in holds.items() if h]
    return {"keep": keep, "judges": list(judges), "holds": holds, "first": yes[0] if yes else None,
            "last": yes[-1] if yes else None, "matrix": rows}


def main_bisect(argv: list[str]) -> int:
    ap = Parser(prog="fuzzptx bisect", description="which ptxas releases reproduce a signature: "
                                                   "the first and the last, and every release's verdict")
    ap.add_argument("file", help="a repro file or any .ptx (without a header: a ptxas-only signature)")
    ap.add_argument("--keep", required=True, help="the signature (prefix) or judge outcome, e.g. ptxas:C7519, "
                    "ptxas:error, checker!=ptxas|missed:C7517, sass:")
    add_ptxas(ap, "all", "the releases to try (fetched into the user cache on demand; fuzzptx toolchains lists them)")
    add_json(ap, "print one JSON object (first, last, every release's verdict)")
    args = ap.parse_args(argv)
    program = Program.from_file(args.file)
    with open(args.file) as fh:
        text = fh.read()

    def say(release: str, h: bool | None) -> None:
        if not args.json:
            print(f"  {release:10s} {'n/a' if h is None else 'holds' if h else '-'}", file=sys.stderr)

    res = bisect(program, text, args.keep, args.releases, progress=say)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print(table(res["matrix"], None if differ.names_an_outcome(args.keep) else args.keep))
        if res["first"] is None:
            print(f"\n{args.keep}: no release of {args.releases!r} reproduces it")
        else:
            print(f"\n{args.keep}: first {res['first']}, last {res['last']} "
                  f"({sum(1 for h in res['holds'].values() if h)} of {sum(1 for h in res['holds'].values() if h is not None)} "
                  "applicable releases)")
    return 0 if res["first"] is not None else 1
