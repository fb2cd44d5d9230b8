"""Small ``cp.async`` kernels with known answers: the reference's tests and the H100 check
(``tests/hw_records/cp_async_h100.json``) run the same programs."""
from __future__ import annotations

from fuzzptx.program import Program

_HEAD = """// fuzzptx-repro v1
// LAUNCH: kernel=k grid=1,1,1 block=128,1,1
// BUFFER: g type=u32 count=1024 init=random seed={seed}
// BUFFER: o type=u32 count=256 init=zeros output
.version 8.0
.target sm_90a
.address_size 64

.visible .entry k(.param .u64 g, .param .u64 o)
{{
	.reg .b32 %r<16>;
	.reg .b64 %rd<8>;
	.shared .align 16 .b8 s[4096];
	mov.u32 %r0, %tid.x;
	ld.param.u64 %rd0, [g];
	ld.param.u64 %rd1, [o];
	cvta.to.global.u64 %rd0, %rd0;
	cvta.to.global.u64 %rd1, %rd1;
	mul.wide.u32 %rd2, %r0, 16;
	add.u64 %rd3, %rd0, %rd2;
	mov.u32 %r1, s;
	mad.lo.u32 %r2, %r0, 16, %r1;
	mul.wide.u32 %rd4, %r0, 4;
	add.u64 %rd5, %rd1, %rd4;
	add.u32 %r3, %r0, 1;
	and.b32 %r3, %r3, 127;
	mad.lo.u32 %r4, %r3, 16, %r1;
"""

# name -> (body, what the reference must say: "values" or "undefined")
KERNELS = {
    # 16 bytes per thread (.cg), a neighbour's word read after wait + barrier
    "cg16": ("""	cp.async.cg.shared.global [%r2], [%rd3], 16;
	cp.async.commit_group;
	cp.async.wait_group 0;
	bar.sync 0;
	ld.shared.u32 %r5, [%r4+4];
	st.global.u32 [%rd5], %r5;
""", "values"),
    # .ca of 4 and 8 bytes, wait_all
    "ca4_ca8": ("""	cp.async.ca.shared.global [%r2], [%rd3], 4;
	cp.async.ca.shared.global [%r2+8], [%rd3+8], 8;
	cp.async.wait_all;
	bar.sync 0;
	ld.shared.u32 %r5, [%r4];
	ld.shared.u32 %r6, [%r4+12];
	add.u32 %r5, %r5, %r6;
	st.global.u32 [%rd5], %r5;
""", "values"),
    # src-size 8 of 16: the last 8 bytes are zero
    "zero_fill": ("""	cp.async.cg.shared.global [%r2], [%rd3], 16, 8;
	cp.async.commit_group;
	cp.async.wait_group 0;
	bar.sync 0;
	ld.shared.u32 %r5, [%r4+4];
	ld.shared.u32 %r6, [%r4+12];
	st.global.u32 [%rd5], %r5;
	st.global.u32 [%rd5+512], %r6;
""", "values"),
    # two groups, wait_group 1: the older group's bytes are there
    "two_groups_wait1": ("""	cp.async.cg.shared.global [%r2], [%rd3], 16;
	cp.async.commit_group;
	cp.async.cg.shared.global [%r2+2048], [%rd3+2048], 16;
	cp.async.commit_group;
	cp.async.wait_group 1;
	bar.sync 0;
	ld.shared.u32 %r5, [%r4];
	st.global.u32 [%rd5], %r5;
	cp.async.wait_group 0;
""", "values"),
    # the twin: the newer group read before any wait covers it
    "read_before_wait": ("""	cp.async.cg.shared.global [%r2], [%rd3], 16;
	cp.async.commit_group;
	cp.async.cg.shared.global [%r2+2048], [%rd3+2048], 16;
	cp.async.commit_group;
	cp.async.wait_group 1;
	bar.sync 0;
	ld.shared.u32 %r5, [%r4+2048];
	st.global.u32 [%rd5], %r5;
	cp.async.wait_group 0;
""", "undefined"),
}


def program(name: str, seed: int = 3) -> Program:
    body, _ = KERNELS[name]
    return Program.from_ptx(_HEAD.format(seed=seed) + body + "\tret;\n}\n", f"cp_async_{name}.ptx")
