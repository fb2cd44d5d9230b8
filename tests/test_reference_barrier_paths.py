"""Reference: ``barrier.sync`` without ``.aligned`` and without a count is met by the CTA's live
threads at different instructions (Triton's warp-specialised partitions each reach ``barrier.sync
1`` in their own code); ``bar.sync`` (aligned) reached on two paths stays refused."""
from __future__ import annotations

import numpy as np
import pytest

from fuzzptx.oracles.reference import Unsupported, run_program
from fuzzptx.program import Program
from support.two_warps import output_words, two_warp_kernel


def _kernel(bar: str) -> Program:
    return two_warp_kernel("paths.ptx", ".shared .align 4 .b32 s[2];", f"""
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
""")


def test_barrier_sync_met_on_two_paths_orders_the_producers_store():
    got = output_words(_kernel("barrier.sync 1;"))
    assert list(got[:32]) == list(range(32)) and (got[32:] == 1234).all()


def test_an_aligned_barrier_on_two_paths_is_refused():
    with pytest.raises(Unsupported, match="divergent barriers"):
        run_program(_kernel("bar.sync 1;"))


def _skip_kernel(store_in_block: bool) -> Program:
    """Thread t branches on ``x < 16`` with x undefined for the threads reading past the buffer's
    defined words; the skipped block writes a register (or stores)."""
    body = "st.global.b32 [%rd2], %r0;" if store_in_block else "mov.u32 %r2, 77;"
    return two_warp_kernel("skip.ptx", ".shared .align 4 .b32 s[64];", f"""
setp.lt.u32 %p2, %r0, 32;
@!%p2 bra READ;
shl.b32 %r5, %r0, 2;
mov.u32 %r6, s;
add.u32 %r6, %r6, %r5;
st.shared.b32 [%r6], %r0;
READ:
bar.sync 0;
shl.b32 %r5, %r0, 2;
mov.u32 %r6, s;
add.u32 %r6, %r6, %r5;
ld.shared.b32 %r1, [%r6];
mov.u32 %r2, 5;
setp.lt.u32 %p1, %r1, 16;
@%p1 bra JOIN;
{body}
JOIN:
st.global.b32 [%rd2], %r2;
ret;
""")


def test_a_branch_on_an_undefined_predicate_over_register_only_code_leaves_those_registers_free():
    """libdevice's log2f skips ``r = fma(x, inf, inf)`` unless x >= inf: on float bits the reference
    holds only as bounds (attention's softmax sums) the branch's predicate is undefined.  Either path
    ends at the target, so the run goes on with the skipped block's registers undefined for those
    threads (it stopped there: Triton's causal attention never reached its 8 stmatrix)."""
    from fuzzptx.oracles.reference.values import EXACT, UNDEF

    out = run_program(_skip_kernel(store_in_block=False)).outputs["o"]
    got = np.frombuffer(out.data, np.uint32)
    assert list(got[:16]) == [5] * 16 and list(got[16:32]) == [77] * 16  # defined: each path as taken
    assert (out.kind[:32] == EXACT).all() and (out.kind[32:] == UNDEF).all()  # undefined x: 5 or 77


def test_a_branch_on_an_undefined_predicate_over_a_store_still_stops_the_run():
    ref = run_program(_skip_kernel(store_in_block=True))
    assert ref.undefined is not None and "undefined predicate" in ref.undefined
