"""Merge several PTX modules into one, textually, so one ptxas run judges them all.

Each input keeps its own lines (its ``.version``/``.target``/``.address_size``
directives are blanked, not removed), so input i's line L is merged line
``offset_i + L``.  Module-scope names (entries, functions, module variables) get a
suffix ``_fzb<i>_`` so inputs cannot clash, and the suffix in a message tells which
input it is about.  Only inputs with the same header are merged: a ``.version`` or
``.target`` change would change what ptxas says.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .ptxas_diag import ABORT_MESSAGE, AROUND_RE, LINE_RE

_IDENT = r"(?<![\w$%.])[A-Za-z_$%][\w$]*"
_IDENT_RE = re.compile(_IDENT)
_LEXEME_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/', re.S)
_HEADER_RE = re.compile(
    r"\.version\s+\d+\.\d+|\.target\s+[\w]+(?:\s*,\s*[\w]+)*|\.address_size\s+\d+"
)
_VAR_START_RE = re.compile(
    r"(?<![\w$%.])\.(?:global|const|shared|extern|visible|weak|common|tex|texref|samplerref|surfref)\b")
_SUFFIX_RE = re.compile(r"_fzb(\d+)_")


@dataclass(frozen=True)
class ModuleShape:
    """What merging needs to know about one module's text."""

    header: tuple[str, ...]  # normalised header directives, e.g. (".version 8.5", ".target sm_90a")
    symbols: tuple[str, ...]  # module-scope names, in order of declaration
    entries: tuple[str, ...]  # names of .entry functions
    spans: tuple[tuple[str, int, int], ...]  # (function, first line, last line), 1-based


def mask(text: str) -> str:
    """``text`` with comments and string contents blanked (newlines kept), for scanning."""
    return _LEXEME_RE.sub(lambda m: re.sub(r"[^\n]", " ", m[0]), text)


def _norm(directive: str) -> str:
    return re.sub(r"\s*,\s*", ", ", " ".join(directive.split()))


def _decl_names(stmt: str) -> tuple[list[str], str | None]:
    """(module-scope names a depth-0 statement declares, function name if it is one)."""
    fm = re.search(r"\.(entry|func)\b", stmt)
    if fm:
        rest = stmt[fm.end():].lstrip()
        if rest.startswith("("):  # .func return-parameter list
            rest = rest[rest.index(")") + 1:]
        nm = _IDENT_RE.search(rest)
        return ([nm[0]], nm[0]) if nm else ([], None)
    vm = _VAR_START_RE.search(stmt)  # not always first: `.file 1 "a.cu"` has no ';'
    if vm is None:
        return [], None
    body = stmt[vm.start():].split("=", 1)[0]
    body = re.sub(r"\[[^\]]*\]|<[^>]*>", " ", body)
    return _IDENT_RE.findall(body), None


def scan(text: str) -> ModuleShape:
    """Header, module-scope symbols and function line spans of one PTX module."""
    masked = mask(text)
    header = tuple(_norm(h) for h in _HEADER_RE.findall(masked))
    masked = _HEADER_RE.sub(lambda m: " " * len(m[0]), masked)
    symbols: dict[str, None] = {}  # ordered, and a name's membership test is O(1) in a 10,000-kernel module
    entries: list[str] = []
    spans: list[tuple[str, int, int]] = []
    depth, line, start = 0, 1, 0
    fn: tuple[str, int] | None = None
    for i, ch in enumerate(masked):
        if ch == "\n":
            line += 1
        elif depth == 0 and ch in ";{":
            stmt = masked[start:i]
            names, fname = _decl_names(stmt)
            if ch == ";" or fname:
                symbols.update(dict.fromkeys(names))
            if ch == ";":
                start = i + 1
            elif fname:  # a function body opens (else: a variable initialiser)
                first = start + len(stmt) - len(stmt.lstrip())
                fn = (fname, line - masked.count("\n", first, i))  # counted back from here, not from the top
                if re.search(r"\.entry\b", stmt):
                    entries.append(fname)
            depth += ch == "{"
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and fn is not None:
                spans.append((fn[0], fn[1], line))
                fn = None
                start = i + 1
    return ModuleShape(header, tuple(symbols), tuple(entries), tuple(spans))


def suffixed(name: str, index: int) -> str:
    return f"{name}_fzb{index}_"


def unsuffixed(text: str) -> str:
    """``text`` with the merged module's renamings undone (``k_fzb3_`` -> ``k``): what a run of the
    input alone would print."""
    return _SUFFIX_RE.sub("", text)


def input_index(message: str) -> set[int]:
    """Which merged inputs a message mentions by a renamed symbol."""
    return {int(m[1]) for m in _SUFFIX_RE.finditer(message)}


def restore_names(message: str, index: int, symbols: tuple[str, ...]) -> str:
    for s in symbols:
        message = message.replace(suffixed(s, index), s)
    return message


def _opcode_position(text: str, start: int, end: int) -> bool:
    """Whether the token at text[start:end] is an instruction's opcode (``ret;``), which a
    module symbol of the same name must not replace."""
    before = text[max(0, start - 256):start].rstrip()
    before = re.sub(r"@!?[%\w$]+$", "", before).rstrip()  # a guard predicate
    after = text[end:end + 256].lstrip()[:1]
    return (not before or before[-1] in ";{}:") and after != ":"


def rename(text: str, names: tuple[str, ...], index: int) -> str:
    """Rename every use of ``names`` outside comments, strings and opcode positions."""
    if not names:
        return text
    alt = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    rx = re.compile(_LEXEME_RE.pattern + rf"|(?<![\w$%.])(?:{alt})(?![\w$.])", re.S)

    def sub(m: re.Match) -> str:
        if m[0][:1] in '"/' or _opcode_position(text, m.start(), m.end()):
            return m[0]
        return suffixed(m[0], index)

    return rx.sub(sub, text)


def strip_header(text: str) -> str:
    """Blank the header directives (same line count)."""
    masked = mask(text)
    out = list(text)
    for m in _HEADER_RE.finditer(masked):
        out[m.start():m.end()] = " " * (m.end() - m.start())
    return "".join(out)


@dataclass(frozen=True)
class Merged:
    text: str
    offsets: tuple[int, ...]  # merged line = offsets[i] + input line
    lengths: tuple[int, ...]  # line count of each input


def merge(texts: list[str], shapes: list[ModuleShape], indices: list[int]) -> Merged:
    """One module holding ``texts`` (all with ``shapes[0].header``), input k renamed with
    suffix ``indices[k]``."""
    head = list(shapes[0].header)
    parts, offsets, lengths = list(head), [], []
    n = len(head)
    for text, shape, idx in zip(texts, shapes, indices):
        body = rename(strip_header(text), shape.symbols, idx)
        lines = body.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        offsets.append(n)
        lengths.append(len(lines))
        parts += lines
        n += len(lines)
    return Merged("\n".join(parts) + "\n", tuple(offsets), tuple(lengths))


def _owner(line: int, merged: Merged) -> int | None:
    for k, (off, n) in enumerate(zip(merged.offsets, merged.lengths)):
        if off < line <= off + n:
            return k
    return None


def split_stderr(stderr: str, merged: Merged, indices: list[int],
                 shapes: list[ModuleShape]) -> list[list[str]] | None:
    """ptxas's output for the merged module, cut into each input's own output lines
    (its line numbers and names restored); ``None`` when a line cannot be pinned to
    exactly one input.  The closing "assembly aborted" summary is dropped."""
    out: list[list[str]] = [[] for _ in indices]
    where = {idx: k for k, idx in enumerate(indices)}
    cur: int | None = None
    for raw in stderr.splitlines():
        if not raw.strip():
            continue
        m = LINE_RE.match(raw)
        if m is None:
            if cur is None or not raw[:1].isspace():
                return None
            out[cur].append(raw)
            continue
        msg = m["msg"]
        if m["sev"] == "fatal" and msg.strip() == ABORT_MESSAGE:
            cur = None
            continue
        around = None if m["line"] else AROUND_RE.search(msg)
        line = int(m["line"]) if m["line"] else int(around[1]) if around else None
        named = {where[i] for i in input_index(msg) if i in where}
        k = _owner(line, merged) if line is not None else (named.pop() if len(named) == 1 else None)
        if k is None or named - {k}:
            return None
        off = merged.offsets[k]
        if m["line"]:
            head = raw[:m.start("line")] + str(line - off) + raw[m.end("line"):m.start("msg")]
        else:
            head = raw[:m.start("msg")]
            if around:
                msg = msg[:around.start(1)] + str(line - off) + msg[around.end(1):]
        out[k].append(head + restore_names(msg, indices[k], shapes[k].symbols))
        cur = k
    return out
