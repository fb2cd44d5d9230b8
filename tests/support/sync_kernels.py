"""Small kernels with known answers for the synchronisation instructions issue 27 adds beside the
copies: named barriers with thread counts (a producer warpgroup's ``bar.arrive`` and a consumer's
``bar.sync``, one way and ping-pong), ``griddepcontrol``, and ``prefetch.tensormap`` before a TMA
load.  The reference's tests and the H100 check (``tests/support/hw_sync.py``,
``tests/hw_records/sync_h100.json``) run the same programs."""
from __future__ import annotations

from fuzzptx.program import Program

_HEAD = """// fuzzptx-repro v1
// LAUNCH: kernel=k grid=1,1,1 block={threads},1,1
// BUFFER: g type=u32 count=256 init=random seed={seed}
// BUFFER: o type=u32 count=256 init=zeros output
.version 8.0
.target sm_90a
.address_size 64

.visible .entry k(.param .u64 g, .param .u64 o)
{{
	.reg .pred %p<4>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<8>;
	.shared .align 16 .b8 s[2048];
	mov.u32 %r0, %tid.x;
	and.b32 %r1, %r0, 127;
	ld.param.u64 %rd0, [g];
	ld.param.u64 %rd1, [o];
	cvta.to.global.u64 %rd0, %rd0;
	cvta.to.global.u64 %rd1, %rd1;
	mul.wide.u32 %rd2, %r1, 4;
	add.u64 %rd3, %rd0, %rd2;
	add.u64 %rd4, %rd1, %rd2;
	mov.u32 %r2, s;
	mad.lo.u32 %r3, %r1, 4, %r2;
	setp.ge.u32 %p0, %r0, 128;
"""

# name -> (threads, body): every kernel's outputs are defined (the reference must give values)
KERNELS = {
    # the producer warpgroup (threads 128-255) fills s and arrives on barrier 1 for 256 threads;
    # the consumers (0-127) sync on it, then store 3 * their word + their thread index
    "named_one_way": (256, """	@!%p0 bra CONSUME;
	ld.global.u32 %r4, [%rd3];
	st.shared.u32 [%r3], %r4;
	bar.arrive 1, 256;
	bra.uni DONE;
CONSUME:
	bar.sync 1, 256;
	ld.shared.u32 %r5, [%r3];
	mad.lo.u32 %r5, %r5, 3, %r0;
	st.global.u32 [%rd4], %r5;
DONE:
"""),
    # ping-pong: producer fills, arrives on 1; consumers sync on 1, add one, write a second region,
    # arrive on 2; the producer syncs on 2 and stores what the consumers wrote (to o[128 + i])
    "named_ping_pong": (256, """	@!%p0 bra CONSUME;
	ld.global.u32 %r4, [%rd3];
	st.shared.u32 [%r3], %r4;
	bar.arrive 1, 256;
	bar.sync 2, 256;
	ld.shared.u32 %r6, [%r3+1024];
	st.global.u32 [%rd4+512], %r6;
	bra.uni DONE;
CONSUME:
	bar.sync 1, 256;
	ld.shared.u32 %r5, [%r3];
	add.u32 %r5, %r5, 1;
	st.shared.u32 [%r3+1024], %r5;
	bar.arrive 2, 256;
DONE:
"""),
    # griddepcontrol around the work: a plain launch has no prerequisite and no dependent grid
    "griddepcontrol": (128, """	griddepcontrol.wait;
	ld.global.u32 %r4, [%rd3];
	xor.b32 %r4, %r4, %r0;
	griddepcontrol.launch_dependents;
	st.global.u32 [%rd4], %r4;
"""),
}


def program(name: str, seed: int = 3) -> Program:
    threads, body = KERNELS[name]
    return Program.from_ptx(_HEAD.format(threads=threads, seed=seed) + body + "\tret;\n}\n", f"sync_{name}.ptx")


def prefetch_tensormap(program_: Program) -> Program:
    """A tensor-copy kernel (``strategies.tensor_copies``) with ``prefetch.tensormap`` of each map
    right after its generic address is formed, as CUTLASS's kernels begin."""
    lines = []
    for line in program_.to_ptx().splitlines():
        lines.append(line)
        parts = line.split()
        if parts[:1] == ["cvta.param.u64"]:
            lines.append(f"\tprefetch.tensormap [{parts[1].rstrip(',')}];")
    text = "\n".join(lines) + "\n"
    assert "prefetch.tensormap" in text
    return Program.from_ptx(text, "sync_prefetch_tensormap.ptx")
