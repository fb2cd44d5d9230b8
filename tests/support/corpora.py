"""What the real-kernel corpus tests (tests/data/triton, tests/data/cutlass) share: one cached
parse per file, and the round-trip property every corpus file must hold."""
from __future__ import annotations

import functools
from pathlib import Path

from fuzzptx.ptx.emit import emit
from fuzzptx.ptx.ir import Module
from fuzzptx.ptx.parse import parse


@functools.cache
def parsed(path: Path) -> Module:
    """The file's module, parsed once per test session (the corpus files are large)."""
    return parse(path.read_text(), str(path))


def assert_round_trips(path: Path) -> None:
    """parse -> emit -> parse gives the same module, and emitting that gives the same text."""
    m = parsed(path)
    text = emit(m)
    assert parse(text) == m
    assert emit(parse(text)) == text
