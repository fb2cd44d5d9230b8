"""Complete wgmma programs whose results numpy can compute independently (tests, benchmarks).

``wgmma_program`` builds one CTA of 128 threads that loads A (registers or shared
memory) and B (shared memory, K-major, no swizzle) from global buffers, runs one
dense ``wgmma.mma_async`` of the given catalogue form, waits, and stores D
row-major.  Every dense row's tile rows hold 32 bytes (k16 f16, k8 tf32, k32
8-bit, k256 b1), so one pattern serves every type: 16-byte chunks copied with
``ld.global.v4.b32`` / ``st.shared.v4.b32``; LBO = 128, SBO = 256.
"""
from __future__ import annotations

import numpy as np

from fuzzptx import isa
from fuzzptx.program import Buffer, Launch, Program

_BUF_TYPE = {"f16": "f16", "bf16": "bf16", "tf32": "f32", "e4m3": "e4m3", "e5m2": "e5m2", "s8": "s8",
             "u8": "u8", "b1": "u8", "f32": "f32", "s32": "s32"}
LBO, SBO = 128, 256


def _desc_code(reg: str, smem: str, tmp32: str, tmp64: str) -> list[str]:
    return [
        f"mov.u32 {tmp32}, {smem};",
        f"cvt.u64.u32 {tmp64}, {tmp32};",
        f"and.b64 {tmp64}, {tmp64}, 262143;",
        f"shr.u64 {tmp64}, {tmp64}, 4;",
        f"or.b64 {reg}, {tmp64}, {(LBO >> 4) << 16 | (SBO >> 4) << 32};",
    ]


def _copy_tile(src: str, smem: str, rows: int, lines: list[str], mn_major_rows: int = 0) -> None:
    """Copy a row-major global tile into the no-swizzle canonical layout.

    K-major (default): ``rows`` MN rows of 32 bytes of K; chunk (mn, kc) -> (mn%8)*16 + kc*LBO + (mn/8)*SBO.
    MN-major (``mn_major_rows`` = K): K rows of ``rows`` MN elements (16-bit); chunk (k, nc) ->
    (k%8)*16 + (k/8)*LBO + nc*SBO (FACTS.md's MN-major formula with LBO = 128, SBO = 256).
    """
    if mn_major_rows:
        per_row = rows * 2 // 16
        chunks = mn_major_rows * per_row
        for j in range((chunks + 127) // 128):
            lines += [
                f"add.u32 %c, %ti, {128 * j};",
                f"setp.lt.u32 %pc, %c, {chunks};",
                f"@!%pc bra SKIP_{smem}_{j};",
                f"div.u32 %n, %c, {per_row};",  # k
                f"rem.u32 %kc, %c, {per_row};",  # n chunk
                "mul.wide.u32 %ga, %c, 16;",
                f"add.s64 %ga, %ga, {src};",
                "ld.global.v4.b32 {%v0, %v1, %v2, %v3}, [%ga];",
                "and.b32 %t0, %n, 7;",
                "shl.b32 %t0, %t0, 4;",
                f"mad.lo.u32 %t0, %kc, {SBO}, %t0;",
                "shr.u32 %t1, %n, 3;",
                f"mad.lo.u32 %t0, %t1, {LBO}, %t0;",
                f"mov.u32 %t1, {smem};",
                "add.u32 %t0, %t0, %t1;",
                "st.shared.v4.b32 [%t0], {%v0, %v1, %v2, %v3};",
                f"SKIP_{smem}_{j}:",
            ]
        return
    chunks = rows * 2
    for j in range((chunks + 127) // 128):
        lines += [
            f"add.u32 %c, %ti, {128 * j};",
            f"setp.lt.u32 %pc, %c, {chunks};",
            f"@!%pc bra SKIP_{smem}_{j};",
            "shr.u32 %n, %c, 1;",
            "and.b32 %kc, %c, 1;",
            # global byte offset: c * 16
            "mul.wide.u32 %ga, %c, 16;",
            f"add.s64 %ga, %ga, {src};",
            "ld.global.v4.b32 {%v0, %v1, %v2, %v3}, [%ga];",
            # shared offset: (n%8)*16 + kc*LBO + (n/8)*SBO
            "and.b32 %t0, %n, 7;",
            "shl.b32 %t0, %t0, 4;",
            f"mad.lo.u32 %t0, %kc, {LBO}, %t0;",
            "shr.u32 %t1, %n, 3;",
            f"mad.lo.u32 %t0, %t1, {SBO}, %t0;",
            f"mov.u32 %t1, {smem};",
            "add.u32 %t0, %t0, %t1;",
            "st.shared.v4.b32 [%t0], {%v0, %v1, %v2, %v3};",
            f"SKIP_{smem}_{j}:",
        ]


def wgmma_program(key: str, *, scale_d: int = 0, init: str = "small_int", seed: int = 1, c_init: str | None = None,
                  imm_scale_a: int = 1, imm_scale_b: int = 1, trans_a: int = 0, trans_b: int = 0,
                  scale_d_pred: bool = False) -> Program:
    """A full program around the catalogue form ``key`` (``isa.by_key``); D lands in buffer ``d``."""
    form = isa.by_key(key)
    N, K = form.shape.n, form.shape.k
    a_reg = form.a_source == "reg"
    dreg = form.operand("d").count
    acc_t = form.dtype
    reg_t = {"f32": ".f32", "s32": ".s32", "f16": ".b32"}[acc_t]
    lines = [
        ".reg .b32 %ti, %w, %lane, %g, %q, %row, %c, %n, %kc, %t0, %t1, %v0, %v1, %v2, %v3, %a<4>;",
        f".reg {reg_t} %d<{dreg}>;",
        ".reg .b64 %pa, %pb, %pd, %pcc, %ga, %t64, %da, %db, %off;",
        ".reg .pred %pc, %ps;",
        "ld.param.u64 %pa, [a];", "ld.param.u64 %pb, [b];", "ld.param.u64 %pd, [d];",
        "cvta.to.global.u64 %pa, %pa;", "cvta.to.global.u64 %pb, %pb;", "cvta.to.global.u64 %pd, %pd;",
        "mov.u32 %ti, %tid.x;",
        "shr.u32 %w, %ti, 5;", "and.b32 %lane, %ti, 31;", "shr.u32 %g, %lane, 2;", "and.b32 %q, %lane, 3;",
        "shl.b32 %row, %w, 4;", "add.u32 %row, %row, %g;",
    ]
    _copy_tile("%pb", "smem_b", N, lines, K if trans_b else 0)
    if not a_reg:
        _copy_tile("%pa", "smem_a", 64, lines, K if trans_a else 0)
    lines += ["fence.proxy.async.shared::cta;", "bar.sync 0;"]
    lines += _desc_code("%db", "smem_b", "%t0", "%t64")
    if a_reg:
        # register r: the 32-bit word at row (+8 for odd r), byte 4q + 16*(r//2) of the 32-byte row
        lines += ["mul.wide.u32 %off, %row, 32;", "add.s64 %ga, %pa, %off;",
                  "mul.wide.u32 %off, %q, 4;", "add.s64 %ga, %ga, %off;"]
        for r in range(4):
            lines.append(f"ld.global.b32 %a{r}, [%ga+{8 * 32 * (r % 2) + 16 * (r // 2)}];")
    else:
        lines += _desc_code("%da", "smem_a", "%t0", "%t64")
    # C: loaded with the accumulator layout when scale-d, else left unwritten (scale-d 0 ignores it)
    eb_d = 2 if acc_t == "f16" else 4
    lines += [f"mul.wide.u32 %off, %row, {N * eb_d};", "add.s64 %t64, %pd, %off;",
              f"mul.wide.u32 %off, %q, {2 * eb_d};", "add.s64 %t64, %t64, %off;"]
    if c_init is not None:
        lines += ["ld.param.u64 %pcc, [c];", "cvta.to.global.u64 %pcc, %pcc;", "sub.s64 %off, %t64, %pd;",
                  "add.s64 %ga, %pcc, %off;"]
    per = 2 if acc_t == "f16" else 1
    offsets = []
    for i in range(dreg):
        e = i * per
        off = (8 * ((e // 2) % 2) * N + (e % 2) + 8 * (e // 4)) * eb_d
        offsets.append(off)
        if c_init is not None:
            lines.append(f"ld.global.b32 %d{i}, [%ga+{off}];")
    args = ["{" + ", ".join(f"%d{i}" for i in range(dreg)) + "}"]
    args.append("{%a0, %a1, %a2, %a3}" if a_reg else "%da")
    args.append("%db")
    if scale_d_pred:
        lines.append(f"setp.{'lt' if scale_d else 'gt'}.u32 %ps, %ti, 1000;")  # uniform: scale_d everywhere
    args.append("%ps" if scale_d_pred else str(scale_d))
    if form.has_operand("imm_scale_a"):
        args += [str(imm_scale_a), str(imm_scale_b)]
    if form.has_operand("imm_trans_a"):
        args.append(str(trans_a))
    if form.has_operand("imm_trans_b"):
        args.append(str(trans_b))
    lines += ["wgmma.fence.sync.aligned;", f"{form.opcode} " + ", ".join(args) + ";",
              "wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 0;"]
    for i in range(dreg):
        lines.append(f"st.global.b32 [%t64+{offsets[i]}], %d{i};")
    lines.append("ret;")
    params = [".param .u64 a", ".param .u64 b", ".param .u64 d"] + ([".param .u64 c"] if c_init else [])
    smem = [f".shared .align 1024 .b8 smem_b[{max(N, 8) * 32}];"] + ([] if a_reg else [".shared .align 1024 .b8 smem_a[2048];"])
    text = "\n".join([
        ".version %d.%d" % max((8, 0), form.min_ptx), ".target sm_90a", ".address_size 64", "",
        *smem,
        ".visible .entry k(" + ", ".join(params) + ")", "{",
        *("\t" + ln if not ln.endswith(":") else ln for ln in lines), "}", ""])
    bt = _BUF_TYPE[form.atype]
    div = 8 if form.atype == "b1" else 1
    bufs = [Buffer("a", bt, 64 * K // div, init, seed), Buffer("b", _BUF_TYPE[form.btype], N * K // div, init, seed + 1),
            Buffer("d", _BUF_TYPE[acc_t], 64 * N, "zeros", 0, output=True)]
    if c_init:
        bufs.append(Buffer("c", _BUF_TYPE[acc_t], 64 * N, c_init, seed + 2))
    header = Program(None, Launch("k", (1, 1, 1), (128, 1, 1)), tuple(bufs))  # type: ignore[arg-type]
    from fuzzptx.ptx.parse import parse
    module = parse(text, f"<wgmma {key}>")
    prog = Program(module, header.launch, header.buffers)
    return Program.from_ptx(prog.to_ptx(), f"<wgmma {key}>")


def expected(program: Program, key: str, *, scale_d: int = 0, imm_scale_a: int = 1, imm_scale_b: int = 1,
             trans_a: int = 0, trans_b: int = 0) -> np.ndarray:
    """D = A @ B^T (+ C) in float64 / int64 computed by numpy from the buffers' values."""
    from fuzzptx.data import buffer_bytes

    from fuzzptx.oracles.reference import formats as F

    form = isa.by_key(key)
    N, K = form.shape.n, form.shape.k

    def values(name: str, t: str, rows: int, trans: int = 0) -> np.ndarray:
        raw = buffer_bytes(program.buffer(name))
        if t == "b1":
            return np.unpackbits(raw, bitorder="little").reshape(rows, K).astype(np.int64)
        eb = isa.ELEMENT_BITS[t] // 8
        u = raw.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[eb]).astype(np.uint64)
        v = F.decode(t, u)
        return v.reshape(K, rows).T if trans else v.reshape(rows, K)

    a = values("a", form.atype, 64, trans_a) * imm_scale_a
    b = values("b", form.btype, N, trans_b) * imm_scale_b
    d = a @ b.T
    if scale_d:
        raw = buffer_bytes(program.buffer("c"))
        t = form.dtype
        eb = isa.ELEMENT_BITS[t] // 8
        d = d + F.decode(t, raw.view({2: np.uint16, 4: np.uint32}[eb]).astype(np.uint64)).reshape(64, N)
    return d
