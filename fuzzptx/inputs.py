"""The input layer: every file fuzzptx reads goes through here, so that a bad file -- missing,
a directory, unreadable, binary, not UTF-8, too large, empty, or the wrong kind -- ends the
command with one line ``file[:line[:col]]: message`` (exit 2 at the CLI) instead of a
traceback or a hang.

``read_text`` reads a whole text file (a PTX program, a known-findings file) under a size
limit; ``read_jsonl`` streams a JSON-lines record (a campaign's ``results.jsonl`` runs to
gigabytes), naming each bad line by file and line.  ``make_dir`` is the one way out: the
directory a command writes (``--out``), or one line saying why it cannot be.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

from fuzzptx.errors import FuzzptxError

LIMIT_ENV = "FUZZPTX_MAX_INPUT_MB"  # raises (or lowers) the size limit of every text input
DEFAULT_LIMIT_MB = 64


class InputError(FuzzptxError):
    """A file that cannot be used as the input asked for (one line: ``file[:line[:col]]: message``)."""


def default_limit() -> int:
    """The size limit in bytes: ``$FUZZPTX_MAX_INPUT_MB`` MiB, else 64 MiB."""
    raw = os.environ.get(LIMIT_ENV, "").strip()
    if raw:
        try:
            mb = float(raw)
            if mb > 0:
                return int(mb * (1 << 20))
        except ValueError:
            pass
        raise InputError(f"{LIMIT_ENV}={raw!r}: expected a positive number of MiB")
    return DEFAULT_LIMIT_MB << 20


def make_dir(path: str | Path, *, what: str) -> Path:
    """``path`` as a directory, made with its parents where missing; one line (``InputError``)
    where it cannot be: a file is in the way, or the file system refuses."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(f"cannot write the {what}: exists and is not a directory", str(path))
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
        raise InputError(f"cannot make the {what}: {exc.strerror or exc}{where}", str(path)) from None
    return p


def output_file(path: str | Path, *, what: str) -> Path:
    """``path`` checked as a file a command will write at its end (its directory made here): a
    command that works for minutes says at once, not after, that its result could not be kept."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"cannot write the {what}: it is a directory", str(path))
    make_dir(p.parent, what=f"{what}'s directory")
    return p


DEFAULT_LIMIT = -1  # sentinel: ``default_limit()`` at the time of the call (the environment may change)


def _open_checked(path: str | Path, what: str):
    """An open binary file handle, or one line saying why the path is not a readable file."""
    p = Path(path)
    name = str(path)
    try:
        if p.is_dir():
            raise InputError(f"cannot read the {what}: it is a directory", name)
        if not p.exists():
            raise InputError(f"cannot read the {what}: no such file", name)
        if not p.is_file():
            raise InputError(f"cannot read the {what}: not a regular file", name)
        return p.open("rb")
    except PermissionError:
        raise InputError(f"cannot read the {what}: permission denied", name) from None
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}", name) from None


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def _line_col(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    return line, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def _wrong_kind(text: str, what: str) -> str | None:
    """Why ``text`` is plainly another kind of fuzzptx file than ``what`` (None: it may be one)."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    looks_json = first.startswith("{") and first.endswith("}")
    if looks_json:
        try:
            looks_json = isinstance(json.loads(first), dict)
        except ValueError:
            looks_json = False
    if what == "PTX file" and looks_json:
        return "a JSON-lines record (results.jsonl?), not a PTX file"
    if what == "known-findings file":
        if looks_json:
            return "a JSON-lines record (results.jsonl?), not a known-findings file"
        if any(ln.lstrip().startswith((".version", ".target", "// fuzzptx-repro")) for ln in text.splitlines()[:50]):
            return "a PTX file, not a known-findings file"
    return None


def read_text(path: str | Path, *, what: str, limit: int | None = DEFAULT_LIMIT,
              allow_empty: bool = False) -> str:
    """The UTF-8 text of ``path``, a ``what`` ("PTX file", "known-findings file", ...).

    Raises ``InputError`` naming the file (and line and column for a bad byte) when it is
    missing, a directory, unreadable, larger than ``limit`` bytes (default: 64 MiB, or
    ``$FUZZPTX_MAX_INPUT_MB``; None: no limit), binary, not UTF-8, empty (unless
    ``allow_empty``), or plainly another kind of fuzzptx file."""
    name = str(path)
    lim = default_limit() if limit == DEFAULT_LIMIT else limit
    with _open_checked(path, what) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            if lim is not None and size > lim:
                raise InputError(f"{_size(size)} is over the {what} size limit of {_size(lim)} "
                                 f"(set {LIMIT_ENV}=<MiB> to raise it)", name)
            data = fh.read() if lim is None else fh.read(lim + 1)
        except OSError as exc:
            raise InputError(f"cannot read the {what}: {exc.strerror or exc}", name) from None
    if lim is not None and len(data) > lim:  # grew while read, or a size stat does not report
        raise InputError(f"over the {what} size limit of {_size(lim)} (set {LIMIT_ENV}=<MiB> to raise it)", name)
    nul = data.find(b"\0")
    if nul >= 0:
        line, col = _line_col(data, nul)
        raise InputError(f"binary file (NUL byte at offset {nul}), not a {what}", name, line, col)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _line_col(data, exc.start)
        raise InputError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}), not a {what}",
                         name, line, col) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if not allow_empty and not text.strip():
        raise InputError(f"empty {what}", name)
    why = _wrong_kind(text, what)
    if why is not None:
        raise InputError(f"this is {why}", name, 1)
    return text


def _bad_line(raw: bytes) -> tuple[str, dict | None]:
    """(why the line is not a record or '', the record)."""
    if b"\0" in raw:
        return "binary data (NUL byte), not a JSON record", None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})", None
    try:
        rec = json.loads(text)
    except ValueError as exc:  # json's own message: what and where in the line
        return str(exc), None
    if not isinstance(rec, dict):
        return "not a JSON object", None
    return "", rec


def read_jsonl(path: str | Path, *, what: str = "campaign record", on_bad: str = "error",
               problems: list[str] | None = None) -> Iterator[tuple[int, dict]]:
    """(line number, record) for every record line of a JSON-lines file, one line at a time.

    A line that is not a JSON object is an ``InputError`` ``file:line: ...`` (``on_bad="error"``)
    or is left out, its one-line description appended to ``problems`` (``on_bad="skip"``).  In
    either mode a file whose first non-blank line is not a record is not a record at all (a PTX
    file, a binary): that is an error, so a wrong file ends at once instead of giving a problem
    per line."""
    if on_bad not in ("error", "skip"):
        raise ValueError(f"on_bad={on_bad!r}: expected 'error' or 'skip'")
    name = str(path)
    seen = False
    with _open_checked(path, what) as fh:
        try:
            for lineno, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                why, rec = _bad_line(raw)
                if rec is not None:
                    seen = True
                    yield lineno, rec
                    continue
                if not seen:
                    if raw.lstrip().startswith((b"//", b".version", b".target")):
                        why = "this is a PTX file"
                    raise InputError(f"not a {what}: {why}", name, lineno)
                if on_bad == "error":
                    raise InputError(why, name, lineno)
                if problems is not None:
                    problems.append(f"{name}:{lineno}: skipped: {why}")
        except OSError as exc:
            raise InputError(f"cannot read the {what}: {exc.strerror or exc}", name) from None
