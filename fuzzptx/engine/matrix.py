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

from fuzzptx.helptext import Progress
from fuzzptx.judges import differ, registry
from fuzzptx.judges.base import COMPILE, DEVICE
from fuzzptx.judges.builtin import release_not_applicable
from fuzzptx.judges.selection import JudgeSet, default_names
from fuzzptx.oracles import toolchains
from fuzzptx.oracles.ptxas import BASE_TIMEOUT_S, PER_MB_S, TIMEOUT_ENV, use_ptxas_timeout
from fuzzptx.program import Program

from .executor import Executor
from .options import Parser, add_json, add_ptxas, keep_signature


def usable(names: tuple[str, ...], gpu: bool) -> tuple[str, ...]:
    """``names`` less the judges that need a GPU where none is asked for or there."""
    return tuple(n for n in names if DEVICE not in registry.get(n).needs
                 or (gpu and registry.get(n).available() is None))


def default_judges(hardware: bool) -> tuple[str, ...]:
    """Every CPU judge, the SASS judge included; the GPU too where one is there and asked for."""
    return usable(default_names("matrix"), hardware)


def releases(program: Program, text: str, spec: str, judges: Sequence[str], step: Any = None):
    """The matrix's one loop: for each release of SPEC, (release, verdicts, findings) of the judges
    with that release as the compile stage's (the engine's executor, a block of one program), or (release, why not applicable, None).
    ``step(text)`` is told what runs before each release (a progress line)."""
    for tc in toolchains.resolve(spec):
        if step is not None:
            step(f"judging with ptxas {tc.release}")
        why = release_not_applicable(tc, program)
        if why is not None:
            yield tc.release, why, None
        else:
            v = Executor(JudgeSet.of(judges), toolchain=tc).judge(program, text, program)
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
    compiler = registry.by_stage(COMPILE).name
    for release, r in rows.items():
        if "not_applicable" in r:
            lines.append(f"{release:10s}  n/a    {r['not_applicable']}")
            continue
        if "timed_out" in r:
            lines.append(f"{release:10s}  ?      {r['timed_out']}")
            continue
        holds = "" if signature is None else ("holds  " if any(f.startswith(signature) for f in r["findings"])
                                              else "-      ")
        lines.append(f"{release:10s}  {holds}{compiler} {r['verdicts'].get(compiler, '?')}"
                     + (f"; findings: {', '.join(r['findings'])}" if r["findings"] else ""))
    return "\n".join(lines)


def bisect(program: Program, text: str, keep: str, spec: str, *, progress: Any = None, step: Any = None) -> dict:
    """Which releases of SPEC reproduce ``keep`` (a signature prefix or ``ptxas:C7519``...): every
    release is judged (a bug can come and go), then the first and last that hold are named.  A
    release whose ptxas ran out of time says nothing either way (``holds`` None, its row
    ``timed_out``), unless the timeout is what ``keep`` asks about.  ``step(text)`` is told what
    runs before each release (a progress line)."""
    compiler = registry.by_stage(COMPILE).name
    wanted = tuple(dict.fromkeys((compiler,) + differ.judges_for(keep)))
    judges = usable(wanted, True)
    missing = [j for j in wanted if j not in judges]  # the GPU judge on a machine without one: no answer
    pred = differ.keep_predicate(keep)
    holds: dict[str, bool | None] = {}
    rows: dict[str, dict] = {}
    for release, v, findings in releases(program, text, spec, judges, step):
        compiled = v.get(compiler) if findings is not None else None
        if compiled is not None and compiled.timed_out and not differ.keeps_timeout(keep):
            holds[release], rows[release] = None, {"timed_out": compiled.timeout_text()}
        else:
            holds[release] = None if findings is None or missing else bool(pred(findings, v))
            rows[release] = row(v, findings)
        if progress is not None:
            progress(release, holds[release], rows[release])
    yes = [r for r, h in holds.items() if h]
    return {"keep": keep, "judges": list(judges), "not_run": missing, "holds": holds, "first": yes[0] if yes else None,
            "last": yes[-1] if yes else None, "matrix": rows,
            "timed_out": [r for r, x in rows.items() if "timed_out" in x]}


def main_bisect(argv: list[str]) -> int:
    ap = Parser(prog="fuzzptx bisect", description="which ptxas releases reproduce a signature: "
                                                   "the first and the last, and every release's verdict")
    ap.add_argument("file", help="a repro file or any .ptx (without a header: a ptxas-only signature)")
    ap.add_argument("--keep", required=True, help="the signature (prefix) or judge outcome, e.g. ptxas:C7519, "
                    "ptxas:error, checker!=ptxas|missed:C7517, sass:")
    add_ptxas(ap, "all", "the releases to try (fetched into the user cache on demand; fuzzptx toolchains lists them)")
    add_json(ap, "print one JSON object (first, last, every release's verdict)")
    ap.add_argument("--ptxas-timeout", metavar="SECONDS", type=float, default=None,
                    help=f"seconds each ptxas run may take (default: {BASE_TIMEOUT_S:g} s plus {PER_MB_S:g} s per MB "
                         f"of PTX, or ${TIMEOUT_ENV}); a release that runs out of time is no answer, never a rejection")
    args = ap.parse_args(argv)
    keep_signature(args.keep)
    program = Program.from_file(args.file)
    with open(args.file) as fh:
        text = fh.read()

    with use_ptxas_timeout(args.ptxas_timeout), Progress("bisect") as ticker:
        def say(release: str, h: bool | None, r: dict) -> None:
            ticker.step("")
            if not args.json:
                what = "timed out" if "timed_out" in r else "n/a" if h is None else "holds" if h else "-"
                print(f"  {release:10s} {what}", file=sys.stderr)

        res = bisect(program, text, args.keep, args.releases, progress=say, step=ticker.step)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print(table(res["matrix"], None if differ.names_an_outcome(args.keep) else args.keep))
        late = f"; {len(res['timed_out'])} release(s) ran out of time ({', '.join(res['timed_out'])}): " \
               f"--ptxas-timeout SECONDS gives them more" if res["timed_out"] else ""
        if res["not_run"]:
            print(f"\n{args.keep!r}: not judged here: it needs {', '.join(res['not_run'])}, which cannot run "
                  f"on this machine (a GPU judge without a GPU)")
        elif res["first"] is None:
            print(f"\n{args.keep!r}: no release of {args.releases!r} reproduces it{late}")
        else:
            print(f"\n{args.keep!r}: first {res['first']}, last {res['last']} "
                  f"({sum(1 for h in res['holds'].values() if h)} of {sum(1 for h in res['holds'].values() if h is not None)} "
                  f"applicable releases){late}")
    return 0 if res["first"] is not None else 2 if res["not_run"] else 1
