"""Reference: ``barrier.sync`` without ``.aligned`` and without a count is met by the CTA's live
threads at different instructions (Triton's warp-specialised partitions each reach ``barrier.sync
1`` in their own code); ``bar.sync`` (aligned) reached on two paths stays refused."""
from __future__ import annotations

import numpy as np
import pytest

from fuzzptx.oracles.reference import Unsupported, run_program
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.parse import parse


def _kernel(bar: str) -> Program:
    text = f""".version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 o)
{{
.reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<4>;
.shared .align 4 .b32 s[2];
mov.u32 %r0, %tid.x;
ld.param.u64 %rd1, [o];
mul.wide.u32 %rd2, %r0, 4; add.s64 %rd2, %rd1, %rd2;
setp.lt.u32 %p1, %r0, 32;
@%p1 bra PRODUCER;
{bar}
ld.shared.b32 %r2, [s];
st.global.b32 [%rd2], %r2;
ret;
PRODUCER:
mov.u32 %r3, 1234;
st.shared.b32 [s], %r3;
{bar}
st.global.b32 [%rd2], %r0;
ret;
}}
"""
    return Program(parse(text, "paths.ptx"), Launch("k", (1, 1, 1), (64, 1, 1)),
                   (Buffer("o", "u32", 64, "zeros", output=True),))


def test_barrier_sync_met_on_two_paths_orders_the_producers_store():
    ref = run_program(_kernel("barrier.sync 1;"))
    got = np.frombuffer(ref.bytes("o"), np.uint32)
    assert ref.undefined is None
    assert list(got[:32]) == list(range(32)) and (got[32:] == 1234).all()


def test_an_aligned_barrier_on_two_paths_is_refused():
    with pytest.raises(Unsupported, match="divergent barriers"):
        run_program(_kernel("bar.sync 1;"))
