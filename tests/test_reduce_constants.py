"""The constants pass (Constants): a load of one input element in every thread becomes a move of its value."""
from __future__ import annotations

from fuzzptx.program import Program
from fuzzptx.reduce import cleanup
from fuzzptx.reduce.driver import _size
from fuzzptx.reduce.passes import Constants
from support.shrink_cases import opcodes, ptxas_accepts, reduced

TEXT = """// fuzzptx-repro v1
// LAUNCH: kernel=k grid=1,1,1 block=32,1,1
// BUFFER: c type=f32 count=2 init=hex:34e18a4000000040
// BUFFER: d type=f32 count=32 init=zeros output
.version 8.0
.target sm_90a
.address_size 64

.visible .entry k(.param .u64 c, .param .u64 d)
{
\t.reg .b32 %r<2>;
\t.reg .b64 %rd<8>;
\t.reg .f32 %f<2>;
\tmov.u32 %r0, %tid.x;
\tld.param.u64 %rd0, [c];
\tcvta.to.global.u64 %rd1, %rd0;
\tadd.u64 %rd2, %rd1, 4;
\tld.param.u64 %rd3, [d];
\tcvta.to.global.u64 %rd4, %rd3;
\tLOAD
\tmul.wide.u32 %rd5, %r0, 4;
\tadd.u64 %rd6, %rd4, %rd5;
\tst.global.f32 [%rd6], %f0;
\tret;
}
"""


def test_a_uniform_load_becomes_the_value_the_buffer_holds():
    p = Program.from_ptx(TEXT.replace("LOAD", "ld.global.f32 %f0, [%rd2+-4];"))
    out = reduced(Constants(), p, ptxas_accepts)
    (mov,) = [i for i in out.module.function("k").instructions() if i.opcode == "mov.b32"]
    assert mov.operands[1].value == 0x408AE134, mov  # bytes 0..3 of c, little-endian
    assert "ld.global.f32" not in opcodes(out) and opcodes(out).count("ld.param.u64") == 1 and _size(out) < _size(p)
    assert [b.name for b in cleanup(out).buffers] == ["d"]  # the input buffer goes with its parameter


def test_the_offset_chain_is_followed():
    p = Program.from_ptx(TEXT.replace("LOAD", "ld.global.f32 %f0, [%rd2];"))
    (c,) = Constants().candidates(p)
    assert any(i.opcode == "mov.b32" and i.operands[1].value == 0x40000000 for i in c.module.function("k").instructions())


def test_a_per_thread_load_is_left_alone():
    p = Program.from_ptx(TEXT.replace("LOAD", "add.u64 %rd7, %rd1, %rd5;\n\tld.global.f32 %f0, [%rd7];")
                         .replace("\tmul.wide.u32 %rd5, %r0, 4;\n", "").replace("\tadd.u64 %rd2", "\tmul.wide.u32 %rd5, %r0, 4;\n\tadd.u64 %rd2"))
    assert Constants().candidates(p) == []


def test_an_output_buffer_is_not_read_as_a_constant():
    p = Program.from_ptx(TEXT.replace("LOAD", "ld.global.f32 %f0, [%rd4];"))
    assert Constants().candidates(p) == []
