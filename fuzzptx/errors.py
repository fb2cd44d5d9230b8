"""Project errors: every user-facing failure carries a location and prints as one line."""
from __future__ import annotations


class FuzzptxError(Exception):
    """Base error. ``file``/``line``/``col`` locate the problem when known.

    ``str(err)`` is ``file:line:col: message`` (location parts omitted when unknown), the
    one-line form the CLI prints instead of a traceback.
    """

    def __init__(self, message: str, file: str | None = None, line: int | None = None, col: int | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col

    def location(self) -> str:
        parts = [p for p in (self.file, self.line, self.col) if p is not None]
        return ":".join(str(p) for p in parts)

    def __str__(self) -> str:
        loc = self.location()
        return f"{loc}: {self.message}" if loc else self.message
