"""Small two-warp kernels for the reference's tests: 64 threads, each with its own word of one
output buffer ``o`` (``%rd2`` holds its address, ``%r0`` its thread index), the kernel body the
test's own.  One prologue for the barrier, mbarrier and elect tests that used to type it out."""
from __future__ import annotations

import numpy as np

from fuzzptx.oracles.reference import run_program
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.parse import parse

_PROLOGUE = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 o)
{{
.reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<8>;
{decls}
mov.u32 %r0, %tid.x;
ld.param.u64 %rd1, [o];
mul.wide.u32 %rd2, %r0, 4; add.s64 %rd2, %rd1, %rd2;
"""


def two_warp_kernel(name: str, decls: str, body: str) -> Program:
    """The kernel ``k`` with ``decls`` (shared variables) after its registers and ``body`` after
    the prologue, launched as one CTA of 64 threads over a zeroed u32 output ``o``."""
    text = _PROLOGUE.format(decls=decls) + body.strip("\n") + "\n}\n"
    return Program(parse(text, name), Launch("k", (1, 1, 1), (64, 1, 1)),
                   (Buffer("o", "u32", 64, "zeros", output=True),))


def output_words(program: Program) -> np.ndarray:
    """The reference's run of ``program``: its ``o`` as 64 u32 words, the run asserted defined."""
    ref = run_program(program)
    assert ref.undefined is None, ref.undefined
    return np.frombuffer(ref.bytes("o"), np.uint32)
