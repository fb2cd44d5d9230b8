"""Reference: a tensor map the kernel builds itself (Triton's device-made descriptors):
``tensormap.replace`` sets the fields of a map object in shared memory, ``tensormap.cp_fenceproxy``
copies it to global memory, and a tensor copy through that global address reads the box the fields
describe; the copied 128 bytes are the driver's opaque encoding (undefined).  The reference stopped
at the first ``tensormap.replace`` (Triton's 9 ``matmul_devdesc_*`` kernels: 0 of 180 tensor-core
instructions)."""
from __future__ import annotations

import numpy as np
import pytest

from fuzzptx.oracles.reference import Unsupported, run_program
from fuzzptx.oracles.reference.values import EXACT, UNDEF
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.parse import parse

# a 64 x 64 f16 tensor (rows of 128 bytes); the map's box: 16 elements x 8 rows at (16, 8)
_PTX = """.version 8.3
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 scratch, .param .u64 o)
{{
.reg .b32 %r<16>; .reg .b64 %rd<16>; .reg .pred %p<4>;
.shared .align 128 .b8 tmap[128];
.shared .align 128 .b8 box[256];
.shared .align 8 .b64 bar;
mov.u32 %r0, %tid.x;
ld.param.u64 %rd1, [a];
ld.param.u64 %rd2, [scratch];
ld.param.u64 %rd3, [o];
setp.ne.u32 %p1, %r0, 0;
@%p1 bra WAIT;
mov.u64 %rd4, tmap;
tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%rd4], %rd1;
tensormap.replace.tile.rank.shared::cta.b1024.b32 [%rd4], {rank};
tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%rd4], 0, 16;
tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%rd4], 1, 8;
tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%rd4], 0, 64;
tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%rd4], 1, 64;
tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%rd4], 0, 128;
tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%rd4], 0, 1;
tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%rd4], 1, 1;
tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%rd4], 6;
tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%rd4], 0;
tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd2], [%rd4], 128;
fence.proxy.tensormap::generic.acquire.gpu [%rd2], 128;
mbarrier.init.shared::cta.b64 [bar], 1;
mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [bar], 256;
mov.u32 %r1, 16; mov.u32 %r2, 8;
cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [box], [%rd2, {{%r1, %r2}}], [bar];
WAIT:
bar.sync 0;
LOOP:
mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
@!%p2 bra LOOP;
mul.wide.u32 %rd6, %r0, 8;
mov.u64 %rd7, box;
add.s64 %rd8, %rd7, %rd6;
ld.shared.u64 %rd9, [%rd8];
add.s64 %rd10, %rd3, %rd6;
st.global.u64 [%rd10], %rd9;
ret;
}}
"""


def _program(rank: int = 1) -> Program:
    return Program(parse(_PTX.format(rank=rank), "tmap.ptx"), Launch("k", (1, 1, 1), (32, 1, 1)),
                   (Buffer("a", "u16", 64 * 64, "iota"), Buffer("scratch", "u32", 32, "zeros", output=True),
                    Buffer("o", "u16", 128, "zeros", output=True)))


def test_a_map_built_with_tensormap_replace_is_the_one_a_tensor_copy_reads():
    ref = run_program(_program())
    assert ref.undefined is None
    out = np.frombuffer(ref.bytes("o"), np.uint16)
    want = np.arange(64 * 64, dtype=np.uint16).reshape(64, 64)[8:16, 16:32].ravel()
    assert (out == want).all()
    scratch = ref.outputs["scratch"]
    assert (scratch.kind == UNDEF).all()  # the driver's encoding: any bytes


def test_the_scratch_bytes_are_defined_before_the_copy():
    """Only what the copy writes is left free: a scratch buffer no map reaches stays as it was."""
    p = _program()
    bigger = Program(p.module, p.launch, (p.buffers[0], Buffer("scratch", "u32", 64, "zeros", output=True),
                                          p.buffers[2]))
    kinds = run_program(bigger).outputs["scratch"].kind
    assert (kinds[:32] == UNDEF).all() and (kinds[32:] == EXACT).all()


def test_a_map_whose_rank_needs_a_field_never_set_is_refused():
    """Rank 3 (the field holds 2) with the third dimension's element stride never set."""
    with pytest.raises(Unsupported, match="element stride never set"):
        run_program(_program(rank=2))


def test_a_copy_through_an_address_no_map_was_copied_to_is_refused():
    text = _PTX.format(rank=1).replace("[%rd2, {%r1, %r2}]", "[%rd3, {%r1, %r2}]")
    p = Program(parse(text, "tmap.ptx"), Launch("k", (1, 1, 1), (32, 1, 1)), _program().buffers)
    with pytest.raises(Unsupported, match="no TENSORMAP"):
        run_program(p)
