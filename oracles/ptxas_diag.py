"""Parse ptxas's stderr into structured diagnostics.

ptxas 13.0.88 prints one diagnostic per line, all on stderr, in these shapes:

    ptxas FILE, line 12; error   : Unknown modifier '.m64n9k16'
    ptxas FILE, line 27; warning : .minnctapersm is ignored when ...
    ptxas FILE, line 22; fatal   : Parsing error near 'cvta.to': syntax error
    ptxas warning : Registers are spilled to local memory in function 'sp', ...
    ptxas info    : (C7519) warpgroup.arrive is injected in around line 18 by compiler ... in function 'wg'
    ptxas fatal   : Ptx assembly aborted due to errors

FILE is the input path (or ``application ptx input`` for ``-ias``).  ``-v`` adds
``ptxas info`` lines and indented continuation lines ("    0 bytes stack frame, ...");
its "Compile time = ..." line is left out so that verdicts are deterministic.
The GMMA pipeline messages carry a ``(C75xx)`` code and name the function; the
injection advisories (C7517, C7519) also give "around line N" instead of a location.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

LINE_RE = re.compile(
    r"^ptxas (?:(?P<file>.+?), line (?P<line>\d+); )?"
    r"(?P<sev>warning|info|error\*?|fatal)\s*: ?(?P<msg>.*)$"
)
_CODE_RE = re.compile(r"^\((?P<code>C\d+)\)\s*")
AROUND_RE = re.compile(r"\b(?:around|at) line (\d+)\b")
# How ptxas names the function a message is about.
_KERNEL_RES = (
    re.compile(r"\bfunction '([^']+)'"),
    re.compile(r"\bin function ([\w$]+)"),
    re.compile(r"\bfor entry (\S+?)(?: |$)", re.I),
    re.compile(r"\bFunction properties for (\S+)"),
)

#: The closing summary ptxas prints after any error; it is about the run, not one input.
ABORT_MESSAGE = "Ptx assembly aborted due to errors"


@dataclass(frozen=True)
class Diagnostic:
    """One ptxas message.

    ``line`` is the line in the PTX text that was submitted for this program (for the
    GMMA injection advisories, the "around line N" they name); ``kernel`` the function
    the message names or whose body holds ``line``; ``fatal`` marks ptxas's ``fatal``
    severity (reported as ``severity="error"``).
    """

    severity: str
    code: str | None
    line: int | None
    message: str
    kernel: str | None
    fatal: bool = False


def parse_diagnostics(stderr: str, spans: tuple[tuple[str, int, int], ...] = ()) -> tuple[Diagnostic, ...]:
    """Every diagnostic in ``stderr``; ``spans`` (name, first line, last line) of the
    submitted text's functions name the kernel of a line-located message."""
    out: list[Diagnostic] = []
    for raw in stderr.splitlines():
        if not raw.strip():
            continue
        m = LINE_RE.match(raw)
        if m is None:
            if out and raw[:1].isspace():  # -v continuation line
                out[-1] = replace(out[-1], message=out[-1].message + "\n" + raw.strip())
            else:  # e.g. an internal assertion: keep it rather than lose it
                out.append(Diagnostic("error", None, None, raw.strip(), None))
            continue
        sev = m["sev"]
        msg = m["msg"].strip()
        if sev == "info" and msg.startswith("Compile time ="):
            continue  # -v timing: differs run to run, says nothing about the program
        code = None
        cm = _CODE_RE.match(msg)
        if cm:
            code = cm["code"]
            msg = msg[cm.end():]
        line = int(m["line"]) if m["line"] else None
        if line is None and code is not None:
            am = AROUND_RE.search(msg)
            if am:
                line = int(am[1])
        out.append(Diagnostic(
            severity="error" if sev.startswith(("error", "fatal")) else sev,
            code=code,
            line=line,
            message=msg,
            kernel=kernel_at(line, spans) if m["line"] else kernel_named(msg) or kernel_at(line, spans),
            fatal=sev == "fatal",
        ))
    return tuple(out)


def kernel_named(message: str) -> str | None:
    """The function a message names, if it names one."""
    for rx in _KERNEL_RES:
        m = rx.search(message)
        if m:
            return m[1]
    return None


def moved_lines(diags: tuple[Diagnostic, ...], stderr: str, delta: int) -> tuple[tuple[Diagnostic, ...], str]:
    """The same diagnostics and stderr for the same PTX body ``delta`` lines further down
    (a repro's header grew or shrank): every line number, located or "around line N", moves."""
    if not delta:
        return diags, stderr

    def around(msg: str) -> str:
        return AROUND_RE.sub(lambda m: m[0][:m.start(1) - m.start(0)] + str(int(m[1]) + delta), msg)

    out = tuple(replace(d, line=None if d.line is None else d.line + delta, message=around(d.message))
                for d in diags)
    lines = []
    for raw in stderr.splitlines(keepends=True):
        m = LINE_RE.match(raw.rstrip("\n"))
        if m is not None and m["line"]:
            raw = raw[:m.start("line")] + str(int(m["line"]) + delta) + raw[m.end("line"):]
        elif m is not None:
            raw = raw[:m.start("msg")] + around(raw[m.start("msg"):])
        lines.append(raw)
    return out, "".join(lines)


def kernel_at(line: int | None, spans: tuple[tuple[str, int, int], ...]) -> str | None:
    """The function whose declaration or body holds ``line``."""
    if line is None:
        return None
    for name, first, last in spans:
        if first <= line <= last:
            return name
    return None
