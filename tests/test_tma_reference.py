"""Reference semantics of mbarrier phases and transaction counts, bulk copies, elect.sync and
setmaxnreg (oracles/reference/mbarrier.py): a correct pipeline moves the data; a missing
expect_tx leaves it undefined; a wrong parity or a missing arrival is a hang."""
from __future__ import annotations

import numpy as np
import pytest

from fuzzptx.data import buffer_bytes
from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.reference import BadAddress, run_program
from fuzzptx.oracles.reference.errors import StepLimit
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.strategies.mutations import illegal_programs, mutation_of
from fuzzptx.ptx.parse import parse

A = Buffer("a", "u32", 128, "random", 7)
O = Buffer("o", "u32", 128, "zeros", output=True)


def program(issue: str, wait_parity: int = 0, arrivals: int = 1, ntid: int = 128) -> Program:
    """Thread 0 (elected in warp 0) initialises a barrier for ``arrivals`` arrivals and runs ``issue``;
    every thread waits on phase ``wait_parity`` and copies word tid of shared memory out."""
    text = f""".version 8.4
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 o)
.reqntid {ntid}
{{
	.reg .pred 	%p<6>;
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<12>;
	.shared .align 16 .b8 buf[512];
	.shared .align 8 .b64 bar;
	ld.param.u64 	%rd1, [a];
	ld.param.u64 	%rd2, [o];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, buf;
	mov.u32 	%r3, bar;
	shr.u32 	%r4, %r1, 5;
	setp.eq.u32 	%p1, %r4, 0;
	elect.sync 	%r5|%p2, -1;
	and.pred 	%p3, %p1, %p2;
	@%p3 mbarrier.init.shared::cta.b64 	[%r3], {arrivals};
	fence.mbarrier_init.release.cluster;
	bar.sync 	0;
{issue}
WAIT:
	mbarrier.try_wait.parity.shared::cta.b64 	%p4, [%r3], {wait_parity};
	@!%p4 bra 	WAIT;
	shl.b32 	%r6, %r1, 2;
	add.s32 	%r7, %r2, %r6;
	ld.shared.u32 	%r8, [%r7];
	mul.wide.u32 	%rd3, %r6, 1;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.u32 	[%rd4], %r8;
	bar.sync 	0;
	@%p3 mbarrier.inval.shared::cta.b64 	[%r3];
	ret;
}}
"""
    return Program(parse(text, "t.ptx"), Launch("k", (1, 1, 1), (ntid, 1, 1)), (A, O), ())


COPY = "\t@%p3 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[%r2], [%rd1], 512, [%r3];\n"
EXPECT = "\t@%p3 mbarrier.arrive.expect_tx.shared::cta.b64 	_, [%r3], 512;\n"
ARRIVE = "\t@%p3 mbarrier.arrive.shared::cta.b64 	%rd5, [%r3];\n"


def out(r) -> np.ndarray:
    return np.frombuffer(r.bytes("o"), np.uint32)


@pytest.mark.parametrize("issue", [EXPECT + COPY, COPY + EXPECT], ids=["expect-then-copy", "copy-then-expect"])
def test_a_bulk_copy_ordered_by_its_barrier_delivers_the_data(issue):
    r = run_program(program(issue))
    assert np.array_equal(out(r), buffer_bytes(A).view(np.uint32))
    assert not (r.outputs["o"].kind == UNDEF).any()


def test_a_missing_expect_tx_completes_the_phase_early_and_the_data_is_undefined():
    r = run_program(program(ARRIVE + COPY))
    assert (r.outputs["o"].kind == UNDEF).all()


def test_a_wrong_parity_after_a_completed_phase_is_undefined():
    """Waiting on parity 1 once phase 0 has completed hangs, or returns at once where the wait runs
    before that completion: the outcome is undefined, not a certain hang."""
    r = run_program(program(EXPECT + COPY, wait_parity=1))
    assert r.undefined and "returns at once" in r.undefined


def test_waiting_on_a_phase_nothing_can_complete_is_a_hang():
    with pytest.raises(StepLimit, match="hang: every live thread waits"):
        run_program(program("", wait_parity=0))


def test_a_missing_arrival_is_a_hang():
    with pytest.raises(StepLimit, match=r"needs 1 arrival\(s\) and 0 transaction byte"):
        run_program(program(EXPECT + COPY, arrivals=2))


def test_every_thread_arriving_completes_a_phase_of_their_count():
    every = "\tmbarrier.arrive.shared::cta.b64 	%rd5, [%r3];\n"
    init = program(every, arrivals=128)
    r = run_program(init)
    assert (r.outputs["o"].kind == UNDEF).all()  # nothing wrote the buffer: undefined shared memory
    with pytest.raises(StepLimit):
        run_program(program(every, arrivals=129))


def test_setmaxnreg_checks():
    ok = program("\tsetmaxnreg.dec.sync.aligned.u32 	40;\n" + EXPECT + COPY)
    assert np.array_equal(out(run_program(ok)), buffer_bytes(A).view(np.uint32))
    with pytest.raises(BadAddress, match="part of warpgroup"):
        run_program(program("\t@%p1 setmaxnreg.dec.sync.aligned.u32 	40;\n" + EXPECT + COPY))


def test_a_copy_without_expect_tx_before_every_arrival_is_a_race_not_a_hang():
    """tx-count -512 after all 128 arrivals: stuck here, but on hardware the copy's complete_tx may
    land after the arrivals complete the phase; the outcome is undefined."""
    every = "\tmbarrier.arrive.shared::cta.b64 	%rd5, [%r3];\n"
    r = run_program(program(COPY + every, arrivals=128))
    assert r.undefined and "a race" in r.undefined


def test_a_read_before_the_wait_sees_undefined_bytes():
    """The copy's bytes are defined once a wait observes its phase; read before, they are not."""
    from fuzzptx.strategies.mainloops import MainloopPlan, render
    legal = render(MainloopPlan(128, 2, 4, False, False, False, 9))
    early = render(MainloopPlan(128, 2, 4, False, False, False, 9, "early_read", 2))
    assert (run_program(legal).outputs["o"].kind == 0).all()
    assert (run_program(early).outputs["o"].kind == UNDEF).all()


# ---------------------------------------------------------------- tensor maps (TENSORMAP:, oracles/reference/tma.py)

import dataclasses  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402

from fuzzptx.errors import FuzzptxError  # noqa: E402
from fuzzptx.isa.layouts import SWIZZLES  # noqa: E402
from fuzzptx.oracles.ptxas import compile_ptx  # noqa: E402
from fuzzptx.oracles.reference.errors import Unsupported  # noqa: E402
from fuzzptx.program import TensorMap  # noqa: E402
from fuzzptx.strategies import tensor_copies as tc  # noqa: E402


def tmap(**kw) -> TensorMap:
    base = dict(name="tm", buffer="g", type="f16", dims=(40, 5), strides=(96,), box=(64, 4), swizzle="128B")
    base.update(kw)
    return TensorMap(**base)


def plan(tm: TensorMap, loads, store=None, reduce=None, fault=None, wait_read=True) -> "tc.CopyPlan":
    return tc.CopyPlan(128, tm, tuple(loads), store, reduce, wait_read, 0x0F0F0F0F, 11, fault)


def host(tm: TensorMap, p: Program, name: str = "g") -> np.ndarray:
    """The tensor as the host sees it: element [x_{r-1}, ..., x_0] read through the byte strides."""
    raw = buffer_bytes(p.buffer(name)).view(np.uint8)
    eb = tm.element_bytes
    out = np.zeros(tm.dims[::-1], dtype=f"<u{eb}")
    for pos in np.ndindex(*tm.dims[::-1]):
        off = tm.offset + sum(x * s for x, s in zip(pos[::-1], tm.byte_strides()))
        out[pos] = raw[off:off + eb].view(f"<u{eb}")[0]
    return out


def expected_smem(tm: TensorMap, data: np.ndarray, coords, start: int, fill: int = 0) -> dict[int, int]:
    """Shared byte address -> element, worked out here from the PTX ISA's description (box row-major,
    innermost fastest, rows one swizzle span apart, then the ISA table's swizzle on the address)."""
    eb, out = tm.element_bytes, {}
    pitch = tm.inner_bytes if tm.swizzle == "none" else max(tm.inner_bytes, {"32B": 32, "64B": 64, "128B": 128}[tm.swizzle])
    for row, outer in enumerate(np.ndindex(*tm.box[1:][::-1])):
        for x0 in range(tm.box[0]):
            x = (coords[0] + x0,) + tuple(c + i for c, i in zip(coords[1:], outer[::-1]))
            inside = all(0 <= v < d for v, d in zip(x, tm.dims))
            addr = int(SWIZZLES[tm.swizzle](start + row * pitch + x0 * eb))
            out[addr] = int(data[x[::-1]]) if inside else fill
    return out


def run_plan(p):
    prog = tc.render(p)
    return prog, run_program(prog)


def test_the_128B_swizzle_table_matches_the_isa_pattern():
    """128B: the 16-byte chunk index (address bits 4-6) XOR the 128-byte line index (bits 7-9); the
    reference takes the swizzle from this one table (fuzzptx.isa.layouts)."""
    for addr in range(0, 2048, 16):
        line, chunk = (addr >> 7) & 7, (addr >> 4) & 7
        assert SWIZZLES["128B"](addr) == (addr & ~0x70) | ((chunk ^ line) << 4)
        assert SWIZZLES["64B"](addr) == (addr & ~0x30) | ((((addr >> 4) & 3) ^ ((addr >> 7) & 3)) << 4)
        assert SWIZZLES["32B"](addr) == (addr & ~0x10) | ((((addr >> 4) & 1) ^ ((addr >> 7) & 1)) << 4)


@pytest.mark.parametrize("swizzle,etype,inner", [("none", "u32", 64), ("32B", "f16", 32), ("64B", "u8", 64),
                                                  ("128B", "f16", 128), ("128B", "f64", 128), ("64B", "f32", 32)])
def test_a_tensor_load_lands_the_box_swizzled_with_out_of_bounds_zeros(swizzle, etype, inner):
    eb = {"u8": 1, "f16": 2, "u32": 4, "f32": 4, "f64": 8}[etype]
    dims = (inner // eb + 16 // eb, 3)
    row = -(-dims[0] * eb // 16) * 16
    tm = tmap(type=etype, dims=dims, strides=(row,), box=(inner // eb, 4), swizzle=swizzle)
    q = 16 // eb
    loads = ((0, 0), (-q, -2), (dims[0] - q, 1))  # inside, overhanging low, overhanging high
    prog, r = run_plan(plan(tm, loads))
    data = host(tm, prog)
    o = np.frombuffer(r.bytes("o"), np.uint8)
    kind = np.repeat(r.outputs["o"].kind, eb)
    slot = plan(tm, loads).slot
    seen = 0
    for i, c in enumerate(loads):
        for addr, want in expected_smem(tm, data, c, i * slot).items():
            assert kind[addr] == 0
            assert int(o[addr:addr + eb].view(f"<u{eb}")[0]) == want, (i, addr)
            seen += 1
    assert seen == 3 * tm.box_elements
    if tm.smem_row_bytes > tm.inner_bytes:  # padding between rows: never written, undefined
        assert kind[tm.inner_bytes] == UNDEF


def test_the_nan_fill_and_the_box_bytes_on_the_barrier():
    tm = tmap(type="f32", dims=(3, 2), strides=(16,), box=(8, 4), swizzle="none", oob="nan")
    prog, r = run_plan(plan(tm, ((-4, -1),)))
    o = np.frombuffer(r.bytes("o"), np.uint32)
    data = host(tm, prog)
    exp = expected_smem(tm, data, (-4, -1), 0, fill=0x7FF77FF7)
    assert all(o[a // 4] == v for a, v in exp.items())
    assert tm.box_bytes == 128  # out-of-bounds elements included: the expect_tx that completes the phase


def test_a_tensor_store_writes_the_in_bounds_elements_and_keeps_the_rest():
    tm = tmap(type="u32", dims=(12, 6), strides=(48,), box=(16, 4), swizzle="64B")
    p = plan(tm, ((0, 0),), store=(4, 4))  # overhangs the right and bottom edges; rows of 48 bytes: no spill
    prog, r = run_plan(p)
    src = host(tm, prog)
    before = host(tm, prog, "r")
    after = np.frombuffer(r.bytes("r"), np.uint32)[:72].reshape(6, 12)  # rows of 48 bytes: 12 words, no padding
    assert not (r.outputs["r"].kind == UNDEF).any()
    want = before.copy()
    for y in range(4):
        for x in range(16):
            gx, gy = x + 4, y + 4
            if 0 <= gx < 12 and 0 <= gy < 6:
                v = int(src[y, x]) if (0 <= x < 12 and y < 6) else 0
                want[gy, gx] = v ^ 0x0F0F0F0F
    assert np.array_equal(after, want)


def test_a_store_ending_inside_a_16_byte_run_spills_undefined_elements():
    """19 u32 a row: column 19 shares the 16-byte run of columns 16-18; the H100 writes it (438 of 438
    recorded mismatches, tests/hw_records/tma_tensor_h100_reexamined.json), the ISA says out-of-bounds
    elements are not written: undefined.  Columns 20-23 (a run wholly outside) keep their bytes."""
    tm = tmap(type="u32", dims=(19, 6), strides=(96,), box=(16, 4), swizzle="none")
    prog, r = run_plan(plan(tm, ((0, 0),), store=(8, 1)))
    kind = r.outputs["r"].kind[:144].reshape(6, 24)
    got = np.frombuffer(r.bytes("r"), np.uint32)[:144].reshape(6, 24)
    before = buffer_bytes(prog.buffer("r")).view(np.uint32)[:144].reshape(6, 24)
    assert (kind[1:5, 19] == UNDEF).all() and not kind[1:5, :19].any() and not kind[:, 20:].any()
    assert np.array_equal(got[:, 20:], before[:, 20:]) and np.array_equal(got[0], before[0])
    assert any("16-byte run" in n for n in r.notes)


def test_a_store_at_a_negative_coordinate_is_the_h100s_fault():
    tm = tmap(type="u32", dims=(12, 6), strides=(48,), box=(16, 4), swizzle="none")
    with pytest.raises(BadAddress, match="negative coordinates"):
        run_plan(plan(tm, ((0, 0),), store=(0, -1)))


def test_a_reduction_adds_into_global_memory():
    tm = tmap(type="u32", dims=(8, 4), strides=(32,), box=(8, 2), swizzle="none")
    p = plan(tm, ((0, 0),), store=(0, 2), reduce="add")
    prog, r = run_plan(p)
    src, old = host(tm, prog), host(tm, prog, "r")
    got = np.frombuffer(r.bytes("r"), np.uint32)[:32].reshape(4, 8)
    tile = src[0:2] ^ np.uint32(0x0F0F0F0F)
    assert np.array_equal(got[2:4], (old[2:4] + tile).astype(np.uint32))  # wraps modulo 2^32
    assert np.array_equal(got[0:2], old[0:2])
    assert "cp.async.bulk.tensor.2d.global" not in prog.to_ptx()  # the reduction alone, no racing store


@pytest.mark.parametrize("fault", tc.FAULTS)
def test_each_illegal_twin_leaves_outputs_undefined(fault):
    tm = tmap(type="u32", dims=(12, 6), strides=(48,), box=(16, 4), swizzle="64B")
    p = plan(tm, ((0, 0), (8, 4)), store=(0, 0), fault=fault)
    prog, r = run_plan(p)
    undefined = r.undefined or any((o.kind == UNDEF).any() for o in r.outputs.values())
    legal = run_program(tc.render(dataclasses.replace(p, fault=None)))
    # the legal twin's only undefined bytes are the slots' padding; the fault adds box bytes
    assert undefined and (r.outputs["o"].kind == UNDEF).sum() + (r.outputs["r"].kind == UNDEF).sum() > \
        (legal.outputs["o"].kind == UNDEF).sum() + (legal.outputs["r"].kind == UNDEF).sum()
    rule = tc.TWIN_RULES[fault]
    assert prog.expect == (("ptxas", "accepted"), ("checker", f"undefined: {rule}"), ("reference", "undefined"))
    assert rule in {f.rule for f in check_module(prog.module, layers=("spec",), tensormaps=prog.tensormaps)}


def test_a_misaligned_innermost_coordinate_is_the_h100s_fault():
    tm = tmap(type="f16", dims=(40, 4), strides=(96,), box=(32, 4), swizzle="none")
    with pytest.raises(BadAddress, match="not on 16 bytes"):
        run_plan(plan(tm, ((3, 0),)))


def test_unsupported_forms_say_so():
    tm = tmap(type="u32", dims=(8, 4), strides=(32,), box=(8, 2), swizzle="none")
    prog = tc.render(plan(tm, ((0, 0),)))
    text = prog.to_ptx().replace(".tile.mbarrier::complete_tx::bytes", ".tile.mbarrier::complete_tx::bytes.multicast::cluster")
    text = text.replace("[%rd3, {%r30, %r31}], [bar];", "[%rd3, {%r30, %r31}], [bar], %rs1;")
    text = text.replace(".reg .pred", ".reg .b16 %rs<2>;\n\t.reg .pred")
    # multicast runs in a cluster of one CTA (tests/test_tma_cluster.py) and of several
    # (tests/test_cluster_reference.py); here its ctaMask register is never written
    assert "undefined ctaMask" in run_program(Program.from_ptx(text.replace(
        ".reqntid 128", ".reqntid 128\n.reqnctapercluster 2").replace("grid=1,1,1", "grid=2,1,1"))).undefined
    with pytest.raises(Unsupported, match="im2col"):
        run_program(Program.from_ptx(text.replace(".tile.mbarrier", ".im2col.mbarrier").replace(
            "[bar], %rs1;", "[bar], {%rs1};")))


# ---------------------------------------------------------------- the header


def test_tensormap_header_round_trips():
    tm = tmap(type="bf16", dims=(40, 5, 3), strides=(96, 480), box=(64, 4, 2), estrides=(1, 2, 1), swizzle="128B",
              l2="256B", oob="nan", offset=32)
    prog = tc.render(plan(tmap(), ((0, 0),)))
    prog = dataclasses.replace(prog, tensormaps=(dataclasses.replace(tm, name="tm"), prog.tensormaps[1]))
    back = Program.from_ptx(prog.to_ptx(), "t.ptx")
    assert back.tensormaps == prog.tensormaps
    assert "TENSORMAP: tm buffer=g offset=32 type=bf16 dims=40,5,3 strides=96,480 box=64,4,2 estrides=1,2,1 " \
           "swizzle=128B l2=256B oob=nan" in prog.to_ptx()


BAD = [
    ("TENSORMAP: tm buffer=g type=f16 dims=40,5 box=64,4", "strides= needs 1 value"),
    ("TENSORMAP: tm buffer=g type=f17 dims=40 box=64", "type='f17' is not one of"),
    ("TENSORMAP: tm buffer=g type=f16 dims=40 box=64 swizzle=16B", "swizzle='16B' is not one of"),
    ("TENSORMAP: tm buffer=g type=f16 dims=40 box=96 swizzle=128B", "more than the 128B swizzle span"),
    ("TENSORMAP: tm buffer=g type=f16 dims=40 box=4", "a multiple of 16 is needed"),
    ("TENSORMAP: tm buffer=g type=u32 dims=40 box=4 oob=nan", "oob=nan needs a floating-point type"),
    ("TENSORMAP: tm buffer=g type=f16 dims=40,x box=64", "expected comma-separated integers"),
    ("TENSORMAP: tm buffer=zz type=f16 dims=40 box=64", "buffer=zz is no BUFFER"),
    ("TENSORMAP: o buffer=g type=f16 dims=40 box=64", "must be declared .param .align 64 .b8 o[128]"),
    ("TENSORMAP: tm buffer=g type=f16 dims=40 box=64 colour=red", "unknown field colour="),
    ("TENSORMAP: tm buffer=g type=f16 dims=40,2 strides=24 box=64,2", "strides must be positive multiples of 16"),
]


@pytest.mark.parametrize("line,message", BAD, ids=[m for _, m in BAD])
def test_a_bad_tensormap_line_is_one_located_error(line, message):
    prog = tc.render(plan(tmap(type="f16", dims=(40,), strides=(), box=(64,)), ((0,),)))
    text = prog.to_ptx()
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("// TENSORMAP: tm "))
    lines[at] = "// " + line
    with pytest.raises(FuzzptxError) as err:
        Program.from_ptx("\n".join(lines), "bad.ptx")
    assert str(err.value).startswith(f"bad.ptx:{at + 1}: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_the_cli_reports_a_bad_tensormap_line_with_exit_2(tmp_path):
    import subprocess
    import sys
    prog = tc.render(plan(tmap(type="f16", dims=(40,), strides=(), box=(64,)), ((0,),)))
    bad = tmp_path / "bad.ptx"
    bad.write_text(prog.to_ptx().replace("type=f16 dims=40 box=64", "type=f16 dims=40 box=0", 1))
    res = subprocess.run([sys.executable, "-m", "fuzzptx.cli", "replay", str(bad), "--judges", "reference"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().count("\n") == 0 and "bad.ptx:" in res.stderr and "box dims must lie in [1, 256]" in res.stderr


def test_plain_ptx_with_a_tensor_map_parameter_runs_ptxas_and_asks_for_the_maps_description():
    """An inferred header gives a 128-byte map parameter zero bytes (ptxas-only signatures need no
    more); the reference will not guess a tensor map: its copy names the missing TENSORMAP line."""
    text = tc.kernel_text(plan(tmap(), ((0, 0),)))
    p = Program.from_ptx(text, "plain.ptx")
    assert p.scalars == (("tm", 0), ("tmo", 0)) and "array parameter(s) tm, tmo: zero bytes" in p.notes[0]
    with pytest.raises(Unsupported, match="no TENSORMAP parameter of the header"):
        run_program(p)


CUDA_H = [p for p in ("/usr/local/cuda/include/cuda.h", "/usr/local/cuda-13.0/include/cuda.h") if os.path.exists(p)]


@pytest.mark.skipif(not CUDA_H, reason="no cuda.h here")
def test_the_header_vocabularies_are_the_drivers_enum_order():
    """hardware.tensormap_arg passes each word's index as cuTensorMapEncodeTiled's enum: the order must
    be cuda.h's."""
    from fuzzptx.oracles.hardware import tensormap_arg
    from fuzzptx.program import TMAP_INTERLEAVES, TMAP_L2, TMAP_OOB, TMAP_SWIZZLES, TMAP_TYPES
    text = open(CUDA_H[0]).read()

    def enum(name: str, prefix: str) -> list[str]:
        block = re.search(rf"typedef enum {name}_enum \{{(.*?)\}}", text, re.S).group(1)
        return re.findall(rf"\b{prefix}(\w+)", block)

    types = enum("CUtensorMapDataType", "CU_TENSOR_MAP_DATA_TYPE_")
    want = ["UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64", "FLOAT16", "FLOAT32", "FLOAT64", "BFLOAT16",
            "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ"]
    assert types[:len(TMAP_TYPES)] == want
    assert enum("CUtensorMapInterleave", "CU_TENSOR_MAP_INTERLEAVE_")[:3] == ["NONE", "16B", "32B"] and len(TMAP_INTERLEAVES) == 3
    assert enum("CUtensorMapSwizzle", "CU_TENSOR_MAP_SWIZZLE_")[:4] == ["NONE", "32B", "64B", "128B"] and TMAP_SWIZZLES == ("none", "32B", "64B", "128B")
    assert enum("CUtensorMapL2promotion", "CU_TENSOR_MAP_L2_PROMOTION_")[:4] == ["NONE", "L2_64B", "L2_128B", "L2_256B"] and len(TMAP_L2) == 4
    assert enum("CUtensorMapFloatOOBfill", "CU_TENSOR_MAP_FLOAT_OOB_FILL_")[:2] == ["NONE", "NAN_REQUEST_ZERO_FMA"] and TMAP_OOB == ("zero", "nan")
    arg = tensormap_arg(tmap(type="bf16", swizzle="64B", l2="256B", oob="nan"))
    assert (arg.dtype, arg.swizzle, arg.l2, arg.oob) == (want.index("BFLOAT16"), 2, 3, 1)


# ---------------------------------------------------------------- drawn kernels and ptxas


@settings(max_examples=8, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(tc.tensor_copy_programs())
def test_drawn_legal_tensor_copy_kernels_are_accepted_by_ptxas_and_run_defined(prog):
    res = compile_ptx(prog.to_ptx(), arch="sm_90a")
    assert res.accepted, res.stderr[:400]
    r = run_program(prog)
    assert r.undefined is None
    # the only undefined stores: elements a box ending inside a row's last 16-byte run spills
    assert all("16-byte run" in n for n in r.notes), r.notes
    assert (r.outputs["r"].kind == UNDEF).any() == bool(r.notes)


@settings(max_examples=6, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(tc.illegal_tensor_copy_programs())
def test_drawn_illegal_twins_are_accepted_by_ptxas(prog):
    assert compile_ptx(prog.to_ptx(), arch="sm_90a").accepted


# ---------------------------------------------------------------- named barriers with thread counts (mem_ops.h_bar)


def named(sync: str, ntid: int = 256, consumers_first: bool = False) -> Program:
    """Warpgroup 0 stores its tid to shared memory and runs ``sync``'s first half; warpgroup 1 runs the
    second half, then reads warpgroup 0's word: the barrier is what orders the two.  The reference
    runs a divergent branch's taken side first: the producers unless ``consumers_first``."""
    first, second = sync.split("|")
    branch = "\t@!%p1 bra 	CONSUMER;\n\tbra.uni 	PRODUCER;" if consumers_first else \
        "\t@%p1 bra 	PRODUCER;\n\tbra.uni 	CONSUMER;"
    text = f""".version 8.4
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 o)
.reqntid {ntid}
{{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<12>;
	.reg .b64 	%rd<6>;
	.shared .align 16 .b8 buf[1024];
	ld.param.u64 	%rd1, [o];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, buf;
	and.b32 	%r3, %r1, 127;
	shl.b32 	%r4, %r3, 2;
	add.s32 	%r5, %r2, %r4;
	setp.lt.u32 	%p1, %r1, 128;
{branch}
PRODUCER:
	st.shared.u32 	[%r5], %r1;
{first}
	bra.uni 	DONE;
CONSUMER:
{second}
	ld.shared.u32 	%r6, [%r5];
	mul.wide.u32 	%rd2, %r4, 1;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r6;
DONE:
	ret;
}}
"""
    return Program(parse(text, "named.ptx"), Launch("k", (1, 1, 1), (ntid, 1, 1)),
                   (Buffer("o", "u32", 128, "zeros", output=True),), ())


def test_a_producer_arrives_and_the_consumers_sync_on_a_named_barrier():
    r = run_program(named("\tbar.arrive 	1, 256;|\tbar.sync 	1, 256;"))
    assert np.array_equal(np.frombuffer(r.bytes("o"), np.uint32), np.arange(128, dtype=np.uint32))


def test_consumers_waiting_before_their_producers_ran_are_suspended_until_the_count_fills():
    """The consumers' bar.sync runs while the producers have not arrived and are alive elsewhere: the
    runner suspends the consumers there, runs the producers, and resumes the consumers after the
    barrier once the producers' bar.arrive fills its count."""
    r = run_program(named("\tbar.arrive 	1, 256;|\tbar.sync 	1, 256;", consumers_first=True))
    assert r.undefined is None
    assert np.array_equal(np.frombuffer(r.bytes("o"), np.uint32), np.arange(128, dtype=np.uint32))


def pingpong(rounds: int = 3, consumers_first: bool = True, producers_arrive: bool = True) -> Program:
    """Warpgroup 0 produces ``rounds`` rounds into one shared buffer (``bar.arrive 1``: full), warpgroup 1
    sums them (``bar.sync 1``, then ``bar.arrive 2``: empty, which the producers ``bar.sync`` before the
    next round); each side waits at a barrier the other fills, over and over."""
    branch = "\t@!%p1 bra \tCONSUMER;\n\tbra.uni \tPRODUCER;" if consumers_first else "\t@%p1 bra \tPRODUCER;\n\tbra.uni \tCONSUMER;"
    ew = "\tbar.sync \t2, 256;\n"
    arrive = "\tbar.arrive \t1, 256;\n" if producers_arrive else ""
    text = f""".version 8.4
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 o)
.reqntid 256
{{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<6>;
	.shared .align 16 .b8 buf[512];
	ld.param.u64 	%rd1, [o];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, buf;
	and.b32 	%r3, %r1, 127;
	shl.b32 	%r4, %r3, 2;
	add.s32 	%r5, %r2, %r4;
	setp.lt.u32 	%p1, %r1, 128;
	mov.u32 	%r7, 0;
	mov.u32 	%r8, 0;
{branch}
PRODUCER:
	mad.lo.u32 	%r9, %r7, 1000, %r1;
	st.shared.u32 	[%r5], %r9;
{arrive}	add.u32 	%r7, %r7, 1;
	setp.lt.u32 	%p2, %r7, {rounds};
	@!%p2 bra 	DONE;
{ew}	bra.uni 	PRODUCER;
CONSUMER:
	bar.sync 	1, 256;
	ld.shared.u32 	%r6, [%r5];
	add.u32 	%r8, %r8, %r6;
	add.u32 	%r7, %r7, 1;
	setp.lt.u32 	%p3, %r7, {rounds};
	@!%p3 bra 	OUT;
	bar.arrive 	2, 256;
	bra.uni 	CONSUMER;
OUT:
	mul.wide.u32 	%rd2, %r4, 1;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r8;
DONE:
	ret;
}}
"""
    return Program(parse(text, "pp.ptx"), Launch("k", (1, 1, 1), (256, 1, 1)), (Buffer("o", "u32", 128, "zeros", output=True),), ())



@pytest.mark.parametrize("consumers_first", [True, False])
def test_a_producer_consumer_ping_pong_over_two_named_barriers_runs(consumers_first):
    p = pingpong(3, consumers_first)
    r = run_program(p)
    want = sum(i * 1000 + np.arange(128, dtype=np.uint32) for i in range(3))
    assert r.undefined is None and np.array_equal(np.frombuffer(r.bytes("o"), np.uint32), want)
    assert compile_ptx(p.to_ptx(), arch="sm_90a").accepted


def test_suspended_threads_whose_barrier_never_fills_are_a_hang():
    """The producers never arrive: once they end, the suspended consumers can never resume; or they
    wait at their own barrier, which only the suspended consumers could fill."""
    with pytest.raises(StepLimit, match="hang: 128 thread.s. wait at named barrier 1, which has 128 of its 256 "
                                        "arrivals, and every other thread has ended"):
        run_program(named("|\tbar.sync 	1, 256;", consumers_first=True))
    with pytest.raises(StepLimit, match="hang: barrier 2 waits for 256 threads; 128 can ever arrive"):
        run_program(pingpong(3, True, producers_arrive=False))


def test_a_named_barrier_short_of_its_count_inside_a_called_function_is_not_modelled():
    text = named("\tbar.arrive 	1, 256;|\tcall.uni 	wait1;", consumers_first=True).to_ptx()
    text = text.replace(".visible .entry k", ".func wait1()\n{\n\tbar.sync \t1, 256;\n\tret;\n}\n.visible .entry k")
    with pytest.raises(Unsupported, match="inside a called function"):
        run_program(Program.from_ptx(text))


def test_a_named_barrier_count_not_a_multiple_of_32_is_undefined():
    r = run_program(named("\tbar.arrive 	1, 200;|\tbar.sync 	1, 200;"))
    assert r.undefined and "not a positive multiple of 32" in r.undefined


def test_more_threads_than_the_count_is_undefined():
    r = run_program(named("\tbar.arrive 	1, 128;|\tbar.sync 	1, 128;"))  # 128 arrive: complete; then 128 more
    assert r.undefined is None  # two phases of 128: legal
    r = run_program(named("\tbar.arrive 	1, 96;|\tbar.sync 	1, 96;"))
    assert r.undefined and "whose count is 96" in r.undefined


def test_a_named_barrier_that_can_never_fill_is_a_hang():
    """All 128 threads of the CTA at a barrier counting 256: nothing else can arrive."""
    with pytest.raises(StepLimit, match="hang: barrier 2 waits for 256 threads; 128 can ever arrive"):
        run_program(program("\tbar.sync 	2, 256;\n" + EXPECT + COPY))
    r = run_program(program("\tbar.sync 	2, 128;\n" + EXPECT + COPY))  # the count the CTA has: completes
    assert np.array_equal(out(r), buffer_bytes(A).view(np.uint32))


# ---------------------------------------------------------------- the H100 record


def test_the_h100_tensor_record_is_explained_by_the_reference():
    """tests/hw_records/tma_tensor_h100.json judged again with the reference (hw_tma.py --tensor
    --reexamine ... --code-at 0978064): every program rebuilt, every fault predicted, every listed
    mismatching element undefined; and the record covers each swizzle, rank, fill, store and the
    padded rows."""
    import json
    import pathlib
    recs = pathlib.Path(__file__).parent / "hw_records"
    again = json.loads((recs / "tma_tensor_h100_reexamined.json").read_text())
    assert again["rebuilt"] == again["rows"] == 330 and again["unexplained"] == 0
    assert again["faults_predicted"] == 49 and again["listed_mismatches_now_undefined"] == again["listed_mismatches"]
    run = json.loads((recs / "tma_tensor_h100.json").read_text())
    assert run["device"]["device"].startswith("NVIDIA H100") and run["cupy_struct_by_value"] == "ok"
    clean = [r for r, v in zip(run["results"], again["results"]) if v["verdict"] == "clean"]
    covered = {f for r in clean for f in r["forms"]}
    for form in ("swizzle=none", "swizzle=32B", "swizzle=64B", "swizzle=128B", "rank=1", "rank=2", "rank=3",
                 "oob=zero", "oob=nan", "load overhangs the tensor", "store overhangs", "inner row < swizzle span",
                 "element stride > 1", "wait_group", "wait_group.read"):
        assert form in covered, form


def test_the_shrinker_keeps_a_tensor_maps_buffer():
    """``reduce.driver.cleanup`` drops unused parameters; ``g`` is named by no instruction, only by
    the map: it stays, and the repro still parses."""
    from fuzzptx.reduce.driver import cleanup
    prog = tc.render(plan(tmap(type="u32", dims=(12, 6), strides=(48,), box=(16, 4), swizzle="none"), ((0, 0),)))
    small = cleanup(prog)
    back = Program.from_ptx(small.to_ptx(), "shrunk.ptx")
    assert "g" in {b.name for b in back.buffers} and back.tensormaps == small.tensormaps
    assert [t.name for t in small.tensormaps] == ["tm", "tmo"]  # both maps' parameters are named (mov)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(illegal_programs(tuple(tc.twin_name(f) for f in tc.FAULTS)))
def test_illegal_programs_draws_the_tensor_copy_twins_with_their_labels(p):
    """``illegal_programs()`` (what fuzz runs and campaigns draw) holds the tensor-copy twins, labelled as
    their ``TENSOR_MUTATIONS`` entry says, and the reference finds each undefined."""
    m = mutation_of(p)
    rule = tc.TWIN_RULES[tc.fault_of(m.name)]
    assert m.name.startswith("tensor_") and dict(p.expect) == dict(m.expect()) == {
        "ptxas": "accepted", "checker": f"undefined: {rule}", "reference": "undefined"}
    r = run_program(p)
    assert r.undefined or any((o.kind == UNDEF).any() for o in r.outputs.values())


def test_a_bulk_tensor_store_carries_the_bounds_of_its_elements():
    """CUTLASS's epilogues stage D (wgmma results, bounds in spec mode) in shared memory and store it
    with a bulk tensor store: the global elements keep those bounds.  Read byte by byte, every
    element of D was undefined in all seven CUTLASS kernels that do so, and their GPU runs were
    compared against nothing."""
    from fuzzptx import launch
    from fuzzptx.inputs import read_text
    from fuzzptx.oracles.reference.values import SET
    from pathlib import Path

    path = Path(__file__).parent / "data" / "cutlass" / "ws_coop_f16_128x128x64.ptx"
    p = launch.load(read_text(path, what="PTX file"), str(path))
    r = run_program(p)
    d = r.outputs["map1152"]  # D: the map the epilogue's bulk stores write
    assert r.undefined is None and not (d.kind == UNDEF).any() and (d.kind == SET).all()
    assert np.isfinite(d.lo).all() and (d.lo <= d.hi).all()
