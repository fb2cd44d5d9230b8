"""Errors of the reference interpreter: one line each, located at the PTX instruction."""
from __future__ import annotations

from fuzzptx.errors import FuzzptxError


class ReferenceError_(FuzzptxError):
    """The reference cannot run this program (unsupported, bad address, missing input)."""

    @classmethod
    def at(cls, instr, message: str) -> "ReferenceError_":
        loc = getattr(instr, "loc", None) if instr is not None else None
        if loc is None:
            text = f"{instr.opcode}: {message}" if instr is not None else message
            return cls(text)
        return cls(f"{instr.opcode}: {message}", file=loc.file, line=loc.line)


class Unsupported(ReferenceError_):
    """An instruction or form outside the interpreter's subset."""


class BadAddress(ReferenceError_):
    """An out-of-bounds or misaligned memory access."""


class MissingInput(ReferenceError_):
    """A kernel parameter with no buffer or scalar value, or a bad launch."""


class StepLimit(ReferenceError_):
    """The program ran longer than the step budget (a hang on hardware)."""


class Undefined(Exception):
    """Internal: the whole run's outcome is undefined from here on (e.g. a branch on an undefined value)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
