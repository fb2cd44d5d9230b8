"""The warp-level handlers run through the reference interpreter (dispatch patched by ``warp_exec.install``)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fuzzptx import isa
from fuzzptx.builders import KernelBuilder
from fuzzptx.data import buffer_bytes
from fuzzptx.oracles import reference
from fuzzptx.oracles.reference import layouts as L
from fuzzptx.isa import sparse as S
from fuzzptx.oracles.reference import warp_exec as WX
from fuzzptx.oracles.reference import warp_layouts as WL
from fuzzptx.oracles.reference.values import EXACT, UNDEF
from fuzzptx.ptx.ir import Addr, Vec

from support import hw_warp_forms as H  # the proof's program builders (the oracles below are independent)


def run(program):
    with WX.install():
        return reference.run_program(program)


def words(program, name, dtype=np.uint32):
    b = next(x for x in program.buffers if x.name == name)
    return buffer_bytes(b).view(dtype)


def out(ref, name, dtype=np.uint32):
    return np.frombuffer(ref.outputs[name].data, dtype)


def test_handler_for_picks_the_longest_prefix():
    from fuzzptx.ptx.ir import Instr

    assert WX.handler_for(Instr("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16")) is WX.h_wgmma_sp
    assert WX.handler_for(Instr("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16")) is None
    assert WX.handler_for(Instr("mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")) is WX.h_mma
    assert WX.handler_for(Instr("ldmatrix.sync.aligned.m8n8.x4.b16")) is WX.h_ldmatrix


def test_mma_m16n8k16_f16_small_ints_exact_against_the_ptx_formulas():
    f = isa.by_opcode("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")[0]
    p = H.mma_program(f, seed=5, init="small_int", warps=2)
    ref = run(p)
    a = words(p, "a", np.float16).astype(np.float64).reshape(64, 8)
    b = words(p, "b", np.float16).astype(np.float64).reshape(64, 4)
    c = words(p, "c", np.float32).astype(np.float64).reshape(64, 4)
    d = out(ref, "d", np.float32).reshape(64, 4)
    assert (ref.outputs["d"].kind != UNDEF).all()
    for w in range(2):
        A, B, C = np.zeros((16, 16)), np.zeros((16, 8)), np.zeros((16, 8))
        for lane in range(32):
            g, t = lane >> 2, lane % 4
            for i in range(8):
                A[g + 8 * ((i // 2) % 2), 2 * t + (i & 1) + 8 * (i // 4)] = a[32 * w + lane, i]
            for i in range(4):
                B[2 * t + (i & 1) + 8 * (i // 2), g] = b[32 * w + lane, i]
                C[g + 8 * (i // 2), 2 * t + (i & 1)] = c[32 * w + lane, i]
        D = A @ B + C
        for lane in range(32):
            g, t = lane >> 2, lane % 4
            for i in range(4):
                assert d[32 * w + lane, i] == D[g + 8 * (i // 2), 2 * t + (i & 1)]


@pytest.mark.parametrize("opcode", [
    "mma.sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.xor.popc",
    "mma.sync.aligned.m16n8k64.row.col.satfinite.s32.u4.s4.s32",
    "mma.sync.aligned.m8n8k4.col.row.f32.f16.f16.f32",
    "mma.sync.aligned.m8n8k4.row.col.rz.f64.f64.f64.f64",
])
def test_mma_integer_and_special_rows_match_layouts_and_math(opcode):
    from fuzzptx.oracles.reference import mma_math as MM

    f = isa.by_opcode(opcode)[0]
    p = H.mma_program(f, seed=9, init="small_int", warps=1)
    ref = run(p)
    wide = np.uint64 if f.dtype == "f64" else np.uint32
    la, lb, lc, ld = (WL.mma_a_layout(f.shape, f.atype, f.attr("layout_a")), WL.mma_b_layout(f.shape, f.btype, f.attr("layout_b")),
                      WL.mma_c_layout(f.shape, f.ctype, f.atype), WL.mma_c_layout(f.shape, f.dtype, f.atype))
    A = WL.scatter(la, words(p, "a", wide if f.atype == "f64" else np.uint32).reshape(32, -1))
    B = WL.scatter(lb, words(p, "b", wide if f.btype == "f64" else np.uint32).reshape(32, -1))
    C = WL.scatter(lc, words(p, "c", wide).reshape(32, -1))
    D = WL.scatter(ld, out(ref, "d", wide).reshape(32, -1))
    M, K = la.rows, f.shape.k
    for q in range(la.batches):
        r = MM.mma_dense(f, A[q * M:(q + 1) * M], B[q * K:(q + 1) * K], C[q * M:(q + 1) * M], op=str(f.attr("op", "")))
        assert MM.within(r, D[q * M:(q + 1) * M]).all()
    if f.atype == "b1":  # independent popcount check of one element
        a0 = int(words(p, "a")[0]) & 0xFFFFFFFF
        row0 = [(A[0, k] & 1) for k in range(128)]
        assert sum(row0[:32]) == bin(a0).count("1")


def test_mma_sp_expands_metadata_and_ignores_other_threads():
    f = isa.by_opcode("mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32")[0]
    p = H.mma_program(f, seed=3, init="small_int", sel=1, warps=1)
    ref = run(p)
    spec = S.spec_for(f)
    la = WL.mma_a_layout(f.shape, "f16", "row", sparse=True)
    packed = WL.scatter(la, words(p, "a").reshape(32, -1))
    fields, valid = S.decode_metadata(spec, words(p, "m"), 1)
    assert valid.all()
    dense, _ = S.expand(spec, packed, fields)
    A = dense.astype(np.uint16).view(np.float16).astype(np.float64)
    B = WL.scatter(WL.mma_b_layout(f.shape, "f16"), words(p, "b").reshape(32, -1)).astype(np.uint16).view(np.float16)
    C = WL.scatter(WL.mma_c_layout(f.shape, "f32"), words(p, "c").reshape(32, -1)).astype(np.uint32).view(np.float32)
    D = WL.scatter(WL.mma_c_layout(f.shape, "f32"), out(ref, "d").reshape(32, -1)).astype(np.uint32).view(np.float32)
    assert np.array_equal(D, A @ B.astype(np.float64) + C)
    # all-zero metadata is invalid (0b0000): every row undefined, never invented
    bad = dataclasses.replace(p, buffers=tuple(dataclasses.replace(b, init="hex:" + "00" * 128) if b.name == "m" else b
                                               for b in p.buffers))
    assert (run(bad).outputs["d"].kind == UNDEF).all()


@pytest.mark.parametrize("opcode", ["ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                                    "ldmatrix.sync.aligned.m8n8.x2.b16"])
def test_ldmatrix_rows_from_lane_addresses(opcode):
    f = isa.by_opcode(opcode)[0]
    p = H.move_program(f, seed=4)
    ref = run(p)
    num, trans = int(f.attr("num")), bool(f.attr("trans"))
    rowoff = words(p, "rowoff")
    src = words(p, "src", np.uint16)
    got = out(ref, "out").reshape(64, num)
    assert (ref.outputs["out"].kind == EXACT).all()
    for w in range(2):
        for lane in range(32):
            for j in range(num):
                for b in range(2):
                    r, c = lane // 4, 2 * (lane % 4) + b
                    if trans:
                        r, c = c, r
                    addr = rowoff[32 * w + 8 * j + r] + 2 * c
                    assert (int(got[32 * w + lane, j]) >> (16 * b)) & 0xFFFF == src[addr // 2]


def test_stmatrix_inverts_ldmatrix():
    f = isa.by_opcode("stmatrix.sync.aligned.m8n8.x4.trans.b16")[0]
    p = H.move_program(f, seed=6)
    ref = run(p)
    rowoff = words(p, "rowoff")
    src = words(p, "src").reshape(64, 4)
    mem = out(ref, "out").view(np.uint16)
    for w in range(2):
        for lane in range(32):
            for j in range(4):
                for b in range(2):
                    r, c = lane // 4, 2 * (lane % 4) + b
                    addr = rowoff[32 * w + 8 * j + c] + 2 * r  # transposed
                    assert mem[addr // 2] == (int(src[32 * w + lane, j]) >> (16 * b)) & 0xFFFF


@pytest.mark.parametrize("opcode,space,c_layout,d_layout,padded", [
    ("wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32", "global", "row", "col", True),
    ("wmma.mma.sync.aligned.col.row.m32n8k16.f32.f16", "shared", "col", "row", False),
    ("wmma.mma.sync.aligned.row.col.m8n8k32.s32.s4.s4.s32", "", "row", "row", True),
])
def test_wmma_load_mma_store_is_the_matrix_product_whatever_the_fragment_layout(opcode, space, c_layout, d_layout, padded):
    from fuzzptx.oracles.reference import formats as F

    f = isa.by_opcode(opcode)[0]
    p = H.wmma_program(f, space=space, c_layout=c_layout, d_layout=d_layout, padded=padded, seed=2, init="small_int",
                       warps=1)
    ref = run(p)
    s = f.shape

    def matrix(name, rows, cols, t, layout):
        eb = isa.ELEMENT_BITS[t]
        frag = next(x for x in isa.forms("wmma.load") if x.attr("matrix") == name and x.shape == s
                    and x.attr("layout") == layout and (x.atype or x.btype or x.ctype) == t).operand("r").count
        default = cols if layout == "row" else rows
        stride = H._stride(default, frag * 4, eb, padded)
        raw = np.unpackbits(buffer_bytes(next(b for b in p.buffers if b.name == name)), bitorder="little")
        out_ = np.zeros((rows, cols), np.uint64)
        for i in range(rows):
            for j in range(cols):
                lin = i * stride + j if layout == "row" else j * stride + i
                bits = raw[lin * eb:(lin + 1) * eb]
                out_[i, j] = int(sum(int(x) << k for k, x in enumerate(bits)))
        return F.decode(t, out_)

    A = matrix("a", s.m, s.k, f.atype, f.attr("layout_a"))
    B = matrix("b", s.k, s.n, f.btype, f.attr("layout_b"))
    C = matrix("c", s.m, s.n, f.ctype, c_layout)
    D = A @ B + C
    ob = ref.outputs["d"]
    assert not (ob.kind == UNDEF).any()
    eb = isa.ELEMENT_BITS[f.dtype]
    vals = F.decode(f.dtype, np.frombuffer(ob.data, {16: np.uint16, 32: np.uint32}[eb]))
    sf = next(x for x in isa.forms("wmma.store") if x.shape == s and x.dtype == f.dtype and x.attr("layout") == d_layout)
    stride = H._stride(s.n if d_layout == "row" else s.m, sf.operand("r").count * 4, eb, padded)
    for i in range(s.m):
        for j in range(s.n):
            lin = i * stride + j if d_layout == "row" else j * stride + i
            assert vals[lin] == D[i, j]


def _wmma_raw_program(break_token: bool):
    """wmma.load.c, then either st.global of the fragment registers, or a mov into one then wmma.store."""
    f = isa.by_opcode("wmma.load.c.sync.aligned.row.m16n16k16.global.f32")[0]
    kb = KernelBuilder("k", 32, "8.0", "sm_90a")
    pc = kb.buffer("c", "f32", 256, "small_int", 1)
    pd = kb.buffer("d", "f32", 256, "zeros", 0, output=True)
    regs = kb.regs(".f32", 8)
    kb.emit(f.opcode, Vec(regs), Addr(pc))
    if break_token:
        kb.emit("mov.f32", regs[3], 1.0)
        kb.emit("wmma.store.d.sync.aligned.row.m16n16k16.global.f32", Addr(pd), Vec(regs))
    else:
        H._store_regs(kb, pd, regs, ".f32")
    return kb.build()


def test_wmma_fragment_registers_read_undefined_and_a_broken_fragment_stores_undefined():
    ref = run(_wmma_raw_program(False))
    assert (ref.outputs["d"].kind == UNDEF).all()
    ref = run(_wmma_raw_program(True))
    assert (ref.outputs["d"].kind == UNDEF).all() and ref.undefined is None


def _wgmma_sp_expected(p, f):
    spec = S.spec_for(f)
    bufs = {b.name: buffer_bytes(b) for b in p.buffers}
    al = L.a_fragment_layout(f.atype)
    packed = L.scatter(al, bufs["a"].view(np.uint32).reshape(128, 4))
    fields, valid = S.decode_metadata(spec, bufs["m"].view(np.uint32), 0)
    dense, _ = S.expand(spec, packed, fields, valid)
    from fuzzptx.builders import tile_plan

    plan = tile_plan(f.shape.n, 8, 2, "K", "none")
    B = L.read_tile(bufs["b"], plan.layouts[0], f.shape.n, f.shape.k).T
    acc = L.accumulator_layout("s32", f.shape.n)
    C = L.scatter(acc, bufs["c"].view(np.uint32).reshape(128, -1))
    A = dense.astype(np.uint8).view(np.int8).astype(np.int64)
    return A @ B.astype(np.uint8).view(np.int8).astype(np.int64) + C.astype(np.uint32).view(np.int32), acc


def test_wgmma_sp_s8_exact_and_invalid_selector_undefined():
    f = isa.by_key("wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.s8.s8|a=reg")
    p = H.wgmma_sp_program(f, seed=11, init="small_int", sel=0, ordered=False)
    ref = run(p)
    expected, acc = _wgmma_sp_expected(p, f)
    D = L.scatter(acc, out(ref, "d").reshape(128, -1)).astype(np.uint32).view(np.int32)
    assert (ref.outputs["d"].kind == EXACT).all()
    assert np.array_equal(D, expected)
    bad = H.wgmma_sp_program(f, seed=11, init="small_int", sel=0)
    bad = dataclasses.replace(bad, module=dataclasses.replace(bad.module))
    text = bad.to_ptx().replace(", 0, 1;", ", 1, 1;")  # sp-sel 1: undefined for 8-bit types
    from fuzzptx.program import Program

    assert (run(Program.from_ptx(text)).outputs["d"].kind == UNDEF).all()


@pytest.mark.gpu
def test_proof_subset_on_the_gpu(tmp_path):
    """A spread of the proof's cases on a real sm_90a GPU: no mismatch, fault or judge error."""
    import json

    out = tmp_path / "warp_forms.json"
    rc = H.main(["--limit", "80", "--out", str(out), "--jobs", "4"])
    rec = json.loads(out.read_text())
    assert rc == 0, (rec["mismatches"][:2], rec["faults"][:2], rec["judge_errors"][:2])


@pytest.mark.parametrize("kind,key", [
    ("mma", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("mma", "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32"),
    ("wmma", "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32"),
    ("wgmma_sp", "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16|a=reg"),
])
def test_hardware_mode_runs_warp_float_forms_exactly_on_small_integers(kind, key):
    """Hardware mode covers the warp-level and sparse float forms; on small integers every
    model is exact, so its bytes equal spec mode's (a wrong layout or mask would differ)."""
    f = isa.by_key(key) if "|" in key else isa.by_opcode(key)[0]
    if kind == "mma":
        p = H.mma_program(f, seed=3, init="small_int", warps=1)
    elif kind == "wmma":
        p = H.wmma_program(f, space="global", c_layout="row", d_layout="row", padded=False, seed=2,
                           init="small_int", warps=1)
    else:
        p = H.wgmma_sp_program(f, seed=11, init="small_int", sel=0)
    spec = reference.run_program(p)
    hw = reference.run_program(p, mode="hardware")
    assert spec.undefined is None and hw.undefined is None
    assert hw.bytes("d") == spec.bytes("d")


@pytest.mark.parametrize("key", ["mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
                                 "wgmma.mma_async.sp.sync.aligned.m64n8k64.s32.s8.s8|a=reg"])
def test_hardware_mode_runs_integer_warp_and_sparse_forms_exactly(key):
    """Integer forms are exact in both modes: hardware mode gives the spec mode's one answer."""
    f = isa.by_key(key) if "|" in key else isa.by_opcode(key)[0]
    p = (H.wgmma_sp_program(f, seed=11, init="small_int", sel=0) if "|" in key
         else H.mma_program(f, seed=3, init="small_int", warps=1))
    spec, hw = reference.run_program(p), reference.run_program(p, mode="hardware")
    assert (hw.outputs["d"].kind == EXACT).all()
    assert hw.bytes("d") == spec.bytes("d")
