"""What the real-kernel corpus tests (tests/data/triton, tests/data/cutlass) share: one cached
parse per file, the round-trip property every corpus file must hold, and one -O3 build of the
emitted Triton corpus for the whole test run (``triton_o3``)."""
from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import pytest

from fuzzptx.ptx.emit import emit
from fuzzptx.ptx.ir import Module
from fuzzptx.ptx.parse import parse

from .shared import once_per_run

TRITON = Path(__file__).resolve().parents[1] / "data" / "triton"


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


def triton_o3(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """File name -> real ptxas's -O3 result (cubin included) on the file's *emitted* text, once per
    test run: test_triton_corpus asserts each is accepted and test_sass_rules reads their SASS
    (emit(parse(file)) is the file's module, test_triton_corpus's round trip; one build of the
    68 kernels serves both)."""
    def make(_where: Path) -> dict:
        from fuzzptx.oracles.ptxas import compile_batch

        files = sorted(TRITON.glob("*.ptx"))
        results = compile_batch([emit(parsed(f)) for f in files], want_cubin=True)
        # (a result's kernel_names is a read-only mapping, which pickle cannot take: a dict travels;
        # one pickle keeps a batch's shared cubin one object)
        return {f.name: replace(r, kernel_names=dict(r.kernel_names)) for f, r in zip(files, results)}

    return once_per_run(tmp_path_factory, "triton-O3", make)
