"""Any PTX file runs for real (issues 35, 36 items 3-5, 41): plain PTX is judged as written, an
inferred launch reaches the kernel's tensor cores (``fuzzptx.launch``), a launch can be given, a
run that reaches none of them says so, and a limit of the reference is its row, not bad input."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from fuzzptx import cli, launch
from fuzzptx.program import Program

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
KLOOP = DATA / "nvcc" / "wgmma_m64n16_kloop.ptx"  # one int parameter: the K loop's trip count
TRITON = DATA / "triton" / "matmul_fp16_64x64x32_w4s2.ptx"  # .extern .shared global_smem[]
CRASH = ROOT / "reports" / "findings" / "ptxas_O3_crash_immediate_descriptor.ptx"  # 13.0.88 -O3: SIGSEGV


def _no_address_size(tmp_path: Path) -> Path:
    f = tmp_path / "noaddr.ptx"
    f.write_text("".join(ln for ln in KLOOP.read_text().splitlines(True) if ".address_size" not in ln))
    return f


def test_a_file_without_address_size_is_emitted_without_one(tmp_path):
    """ptxas takes the host's 64 bits for such a file and refuses a written 32 for sm_90."""
    p = Program.from_file(_no_address_size(tmp_path))
    assert ".address_size" not in p.to_ptx()
    assert ".address_size 64" in Program.from_file(KLOOP).to_ptx()


def test_dynamic_shared_memory_of_an_extern_shared_kernel_is_in_the_printed_header(tmp_path, capsys):
    f = tmp_path / "k.ptx"
    shutil.copy(TRITON, f)
    assert cli.main(["replay", str(f), "--no-hardware"]) in (0, 1)
    err = capsys.readouterr().err
    smem = int(re.search(r"LAUNCH: .* smem=(\d+)", err).group(1))
    assert smem > 200 * 1024 and "dynamic shared memory" in err and ".extern .shared" in err


def test_the_search_reaches_every_wgmma_of_a_plain_kernel_and_the_header_says_so(tmp_path, capsys):
    """Scalars 0 ran the K loop zero times; the searched launch runs every wgmma, buffers sized
    to what it touched, and the printed header names the choice and the coverage."""
    f = tmp_path / "k.ptx"
    shutil.copy(KLOOP, f)
    assert cli.main(["replay", str(f), "--no-hardware"]) == 0
    cap = capsys.readouterr()
    assert "// NOTE: executes 1 of 1 wgmma, 1 CTA of 128 threads" in cap.err
    assert re.search(r"PARAM: \S+_param_3 value=[1-9]", cap.err)
    assert re.search(r"coverage +\| 1 of 1 +\| executed in the reference: 1 of 1 wgmma", cap.out)


def test_a_run_that_reaches_no_tensor_core_is_flagged(tmp_path, capsys):
    f = tmp_path / "k.ptx"
    shutil.copy(KLOOP, f)
    assert cli.main(["replay", str(f), "--no-hardware", "--json", "--launch", '{"params": {"3": 0}}']) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tensor"] == {"executed": 0, "of": 1, "by_kind": {"wgmma": [0, 1]}}
    assert out["notes"] == ["coverage:none"]
    assert any(r["judge"] == "coverage" and r["verdict"] == "coverage:none" for r in out["judges"])


def test_a_launch_beside_the_file_is_used_and_a_bad_one_is_one_line(tmp_path, capsys):
    """Triton's metadata JSON (num_warps, shared) beside the PTX; a parameter the kernel lacks is
    one line naming the JSON."""
    f = tmp_path / "matmul.ptx"
    shutil.copy(TRITON, f)
    (tmp_path / "matmul.json").write_text(json.dumps({"name": "matmul", "num_warps": 4, "shared": 16384}))
    p = launch.load(f.read_text(), str(f), search_budget=(0, 0.0))
    assert p.launch.dynamic_smem == 16384 and p.launch.threads == 128
    assert cli.main(["replay", str(f), "--no-hardware", "--launch", '{"params": {"nope": 3}}']) == 2
    assert "--launch: params: 'nope' is no scalar parameter of kernel matmul" in capsys.readouterr().err


def test_a_pasted_inferred_header_is_not_announced_again(tmp_path, capsys):
    """Issue 36 item 4: the printed header, pasted with its NOTE line, is the file's header."""
    f = tmp_path / "k.ptx"
    shutil.copy(KLOOP, f)
    assert cli.main(["replay", str(f), "--no-hardware"]) == 0
    err = capsys.readouterr().err
    header = [ln.strip() for ln in err.splitlines() if ln.startswith("  // ")]
    assert "has no fuzzptx header; inferred" in err and any("NOTE: header inferred" in h for h in header)
    header = [re.sub(r"(_param_3 value=)\d+", r"\g<1>3", h) for h in header]  # edited: 3 K tiles
    f.write_text("\n".join(header) + "\n" + KLOOP.read_text())
    assert cli.main(["replay", str(f), "--no-hardware"]) == 0
    cap = capsys.readouterr()
    assert "has no fuzzptx header" not in cap.err and "coverage" in cap.out
    assert dict(Program.from_file(f).scalars)["_Z18wgmma_m64n16_kloopPK6__halfS1_Pfi_param_3"] == 3
    assert launch.load(f.read_text(), str(f)).scalars == Program.from_file(f).scalars  # not searched again


def test_a_limit_of_the_reference_is_its_row_not_bad_input(tmp_path, capsys):
    """Issue 36 item 3: an inferred launch the reference cannot run (here every launch stores
    out of bounds) gives the other judges' table, the reference's row saying why."""
    f = tmp_path / "k.ptx"
    f.write_text(".version 8.0\n.target sm_90a\n.address_size 64\n"
                 ".visible .entry k(.param .u64 out)\n{\n\t.reg .b64 %rd<3>;\n\t.reg .b32 %r<2>;\n"
                 "\tld.param.u64 %rd1, [out];\n\tmov.u32 %r1, 7;\n"
                 "\tst.global.u32 [%rd1+1073741824], %r1;\n\tret;\n}\n")
    assert cli.main(["replay", str(f), "--no-hardware"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"reference +\| unsupported +\| cannot run the inferred launch .*out-of-bounds", out)
    assert re.search(r"ptxas +\| accepted", out)


def test_a_real_kernel_that_failed_replays_with_its_table(capsys):
    """CuTe's cp.async tutorial stopped at an out-of-bounds shared store (exit 2, no table)."""
    f = DATA / "cutlass" / "cute_wgmma_cpasync_sm90.ptx"
    assert cli.main(["replay", str(f), "--no-hardware"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"ptxas +\| accepted", out) and re.search(r"coverage +\| 16 of 16", out)


@pytest.mark.slow
def test_campaign_corpus_judges_plain_files_as_written_and_names_them(tmp_path):
    """Issue 36 item 5 and issue 35's plain PTX: a plain Triton file, a file without
    .address_size and the -O3 crash repro, each compiled as its bytes are; every record names its
    file; no reference:error finding comes from an inferred launch; a run that reaches no tensor
    core is coverage:none in its record and in the report."""
    corp = tmp_path / "corp"
    corp.mkdir()
    shutil.copy(TRITON, corp / "triton.ptx")
    shutil.copy(_no_address_size(tmp_path), corp / "noaddr.ptx")
    shutil.copy(CRASH, corp / "crash.ptx")
    shutil.copy(KLOOP, corp / "zero.ptx")  # its launch given beside it: no K tile, so no wgmma runs
    (corp / "zero.json").write_text(json.dumps({"params": {"3": 0}}))
    out = tmp_path / "c"
    assert cli.main(["campaign", "--corpus", str(corp), "--out", str(out), "--workers", "0", "--quiet"]) == 0
    recs = {Path(r["source"]).name: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert set(recs) == {"triton.ptx", "noaddr.ptx", "crash.ptx", "zero.ptx"}
    assert recs["zero.ptx"]["notes"] == ["coverage:none"] and "notes" not in recs["noaddr.ptx"]
    assert cli.main(["report", str(out)]) == 0
    cov = json.loads((out / "summary.json").read_text())["tensor_coverage"]
    assert cov["coverage:none"] == 1 and cov["programs"] == 4  # the crash repro's reference did not run: no flag
    assert recs["crash.ptx"]["tensor"]["reference"] == "did not run" and "notes" not in recs["crash.ptx"]
    assert recs["noaddr.ptx"]["verdicts"]["ptxas"] == "accepted"
    assert recs["crash.ptx"]["verdicts"]["ptxas"].startswith("crashed")
    assert recs["triton.ptx"]["tensor"]["executed"] == recs["triton.ptx"]["tensor"]["of"] > 0
    assert not [f for r in recs.values() for f in r["findings"] if f["signature"].startswith("reference:error")]


@pytest.mark.slow
def test_a_new_triton_kernel_replays_with_no_header_and_runs_its_wgmmas(tmp_path, capsys):
    """A shape tests/data lacks (64x64x64, fp16, 4 warps, 3 stages), compiled by Triton here."""
    triton = pytest.importorskip("triton")
    from triton.compiler import ASTSource
    from support import triton_corpus as tc
    k = triton.compile(ASTSource(tc.matmul, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16",
                                             **tc._ints("M N K sam sak sbk sbn scm scn")},
                                 constexprs={"BM": 64, "BN": 64, "BK": 64, "GROUP": 8}),
                       target=tc.TARGET, options={"num_warps": 4, "num_stages": 3, "ptx_version": 84})
    f = tmp_path / "matmul_fp16_64x64x64_w4s3.ptx"
    f.write_text(k.asm["ptx"])
    n = k.asm["ptx"].count("wgmma.mma_async")
    assert n > 0
    assert cli.main(["replay", str(f), "--no-hardware", "--json"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    assert out["tensor"]["by_kind"]["wgmma"] == [n, n] and "notes" not in out


def test_the_pytest_plugin_counts_runs_that_reach_no_tensor_core(pytester):
    pytester.makepyfile(f"""
        from fuzzptx import launch
        from fuzzptx.pytest_plugin import check_program

        def test_k(fuzzptx_config):
            text = open({str(KLOOP)!r}).read()
            given = launch.parse_launch_option('{{"params": {{"3": 0}}}}')
            check_program(launch.load(text, "k.ptx", given=given), fuzzptx_config, fail_on=("nothing",))
    """)
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--fuzzptx-judges", "reference,ptxas")
    r.stdout.fnmatch_lines(["*fuzzptx: 1 judged program(s) with tensor-core instructions: 0 of 1 executed in the "
                            "reference; 1 with coverage:none*"])


def test_triton_global_scratch_is_sized_from_its_metadata():
    """A kernel that makes its tensor maps on the device writes them to Triton's global scratch (its
    second-to-last parameter, ``global_scratch_size`` bytes per CTA): a buffer sized to what the
    reference touched before it stopped would be overrun on the GPU."""
    import json

    from fuzzptx import launch
    from fuzzptx.inputs import read_text
    from support.inferred_launches import ROOT

    path = ROOT / "tests" / "data" / "triton" / "matmul_devdesc_tile_fp16_128x128x64_w8s3.ptx"
    need = json.loads(path.with_suffix(".json").read_text())["global_scratch_size"]
    program = launch.load(read_text(path, what="PTX file"), str(path), search_budget=(1, 60.0))
    scratch = {b.name: b for b in program.buffers}["matmul_devdesc_param_6"]
    assert need > 64 and scratch.count * 4 >= need


def test_every_triton_kernel_has_its_metadata_and_a_tma_kernel_of_issue_40_runs_its_wgmmas():
    """Each committed Triton kernel has Triton's own metadata beside it (its TMA kernels' tensor maps
    come from ``tensordesc_meta``: without it the map parameter is zero bytes, and the GPU faults with
    an illegal instruction at the first tensor copy)."""
    from fuzzptx import launch
    from fuzzptx.inputs import read_text
    from support.inferred_launches import ROOT

    tri = ROOT / "tests" / "data" / "triton"
    assert [p.name for p in tri.glob("*.ptx") if not p.with_suffix(".json").is_file()] == []
    path = tri / "matmul_tma_fp16_64x64x64_w4s3.ptx"
    program = launch.load(read_text(path, what="PTX file"), str(path))
    assert len(program.tensormaps) == 3
    t = launch.trial(program)
    assert t.error is None and t.coverage.ran == t.coverage.of > 0


def test_the_inferred_launch_has_no_two_threads_store_to_one_address():
    """Every integer scalar 64 makes Triton's ``c[m * scm + n * scn]`` one address for many (m, n): a
    write-write race, nondeterministic on the H100 (tests/hw_records/pairs_kernels_h100.json named
    matmul_i8_128x128x64_w4s3 so).  The search counts such stores and sets strides to 1 until none is
    left."""
    from fuzzptx import launch
    from fuzzptx.inputs import read_text
    from support.inferred_launches import ROOT

    path = ROOT / "tests" / "data" / "triton" / "matmul_i8_128x128x64_w4s3.ptx"
    program = launch.load(read_text(path, what="PTX file"), str(path))
    t = launch.trial(program)
    assert t.error is None and t.coverage.ran == t.coverage.of and t.conflicts == 0
    assert any("threads stored to one address" in n for n in program.notes)


def test_a_tensor_map_inside_a_by_value_struct_is_made_from_the_kernels_own_copies():
    """CuTe's TMA tutorial passes each map inside its Copy_Atom (a 256-byte by-value struct): the launch
    builds one from the kernel's copies (rank, box from their coordinates' step, the wgmma's type),
    places it at its offset (``at=``), and the reference reads it there: 16 of 16 wgmma, no two
    threads storing to one address (C's leading dimension is raised past the tile)."""
    import re

    from fuzzptx import launch
    from fuzzptx.inputs import read_text
    from fuzzptx.oracles.hardware import program_args
    from fuzzptx.program import Program
    from support.inferred_launches import ROOT

    path = ROOT / "tests" / "data" / "cutlass" / "cute_wgmma_tma_sm90.ptx"
    text = read_text(path, what="PTX file")
    program = launch.load(text, str(path))
    assert [(m.at, m.type, m.box) for m in program.tensormaps] == [(0, "f16", (64, 8))] * 2
    t = launch.trial(program)
    assert t.error is None and t.coverage.ran == t.coverage.of == 16 and t.conflicts == 0
    # the header as printed reads back the same (TENSORMAP ... at=, beside the struct's PARAM line)
    again = Program.from_ptx("".join(f"// {ln}\n" for ln in program.header_lines()) + text, str(path))
    assert again.tensormaps == program.tensormaps
    # the GPU gets the struct's bytes with each map encoded at its offset, not a map in place of the struct
    args = {a.name: a for a in program_args(again)}
    for m in program.tensormaps:
        a = args[m.name]
        assert a.raw is not None and len(a.raw) == 256 and [at for at, _ in a.embedded] == [0]
    line = next(h for h in program.header_lines() if h.startswith("TENSORMAP"))
    assert re.search(r"TENSORMAP: \S+ buffer=\S+ type=f16 dims=\S+ strides=\S+ box=64,8$", line)  # at=0: said by none


def test_a_map_outside_its_struct_is_one_line():
    from fuzzptx.program import Program, ReproError

    text = """// fuzzptx-repro v1
// LAUNCH: kernel=k grid=1,1,1 block=32,1,1
// BUFFER: a type=f16 count=4096 init=random seed=0
// PARAM: s value=0
// TENSORMAP: s buffer=a type=f16 dims=64,64 strides=128 box=64,8 at=192
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 a, .param .align 64 .b8 s[256])
{
ret;
}
"""
    with pytest.raises(ReproError, match="at=192"):
        Program.from_ptx(text, "bad.ptx")


def test_the_struct_bytes_beside_a_map_inside_it_are_the_param_lines():
    """Only the map's 128 bytes of a struct holding one are the driver's opaque encoding; the fields
    beside it (CUTLASS's problem shape, CuTe's aux parameters) are the PARAM line's bytes."""
    import numpy as np

    from fuzzptx.oracles.reference import run_program
    from fuzzptx.oracles.reference.values import EXACT, UNDEF
    from fuzzptx.program import Program

    value = (1234 << (8 * 128)) | (77 << (8 * 4))
    text = f"""// fuzzptx-repro v1
// LAUNCH: kernel=k grid=1,1,1 block=32,1,1
// BUFFER: a type=f16 count=4096 init=random seed=0
// BUFFER: o type=u32 count=2 init=zeros output
// PARAM: s value={value:#x}
// TENSORMAP: s buffer=a type=f16 dims=64,64 strides=128 box=64,8
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 o, .param .align 64 .b8 s[256])
{{
.reg .b32 %r<4>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [o];
ld.param.u32 %r1, [s+128];
ld.param.u32 %r2, [s+4];
st.global.u32 [%rd1], %r1;
st.global.u32 [%rd1+4], %r2;
ret;
}}
"""
    out = run_program(Program.from_ptx(text, "struct.ptx")).outputs["o"]
    assert list(out.kind) == [EXACT, UNDEF]  # beside the map: its bytes; inside it: opaque
    assert np.frombuffer(out.data, np.uint32)[0] == 1234


def test_the_inferred_buffers_of_a_float_gemm_hold_values_of_its_type():
    """Random 32-bit words read as f16 are NaN or huge about one time in thirty: the GEMM's outputs
    were NaN nearly everywhere.  Filled with random f16 values, C is finite bounds the GPU is held to."""
    import numpy as np

    from fuzzptx import launch
    from fuzzptx.inputs import read_text
    from fuzzptx.oracles.reference import run_program
    from fuzzptx.oracles.reference.values import SET
    from support.inferred_launches import ROOT

    path = ROOT / "tests" / "data" / "triton" / "matmul_fp16_128x128x64_w4s3.ptx"
    program = launch.load(read_text(path, what="PTX file"), str(path))
    bufs = {b.name: b for b in program.buffers}
    assert bufs["matmul_param_0"].type == bufs["matmul_param_1"].type == "f16"
    c = run_program(program).outputs["matmul_param_2"]
    vals = np.frombuffer(c.data, np.float16)
    assert (c.kind == SET).all() and np.isfinite(vals).all() and np.isfinite(c.lo).all()


_STRUCT_PTR = """// fuzzptx-repro v1
// LAUNCH: kernel=k grid=1,1,1 block=32,1,1
// BUFFER: data type=u32 count=32 init=iota in=s at=16
// BUFFER: o type=u32 count=32 init=zeros output
// PARAM: s value={value:#x}
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 o, .param .align 8 .b8 s[32])
{{
.reg .b32 %r<4>; .reg .b64 %rd<8>; .reg .pred %p<2>;
mov.u64 %rd7, s;
ld.param.u64 %rd1, [o];
ld.param.u64 %rd2, [%rd7+16];
ld.param.u64 %rd5, [%rd7+24];
setp.eq.s64 %p1, %rd5, 0;
cvta.to.global.u64 %rd3, %rd2;
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd4, %r0, 4;
add.s64 %rd6, %rd3, %rd4;
ld.global.u32 %r1, [%rd6];
@%p1 bra DONE;
ld.global.u32 %r1, [%rd5];
DONE:
ld.param.u32 %r2, [%rd7+4];
add.u32 %r1, %r1, %r2;
add.s64 %rd6, %rd1, %rd4;
st.global.u32 [%rd6], %r1;
ret;
}}
"""


def test_a_buffer_whose_address_sits_inside_a_struct():
    """CUTLASS's Params holds its tensors' pointers: ``BUFFER ... in=PARAM at=OFFSET`` puts the buffer's
    address in the struct's bytes (the reference reads it there, the GPU worker writes the device
    address there), the header reads back the same, and a bad offset is one line."""
    import numpy as np

    from fuzzptx.oracles.hardware import program_args
    from fuzzptx.oracles.reference import run_program
    from fuzzptx.program import ReproError

    text = _STRUCT_PTR.format(value=5 << 32)
    p = Program.from_ptx(text, "ptr.ptx")
    assert [(b.name, b.param, b.at) for b in p.buffers] == [("data", "s", 16), ("o", "", 0)]
    out = run_program(p).outputs["o"]
    assert list(np.frombuffer(out.data, np.uint32)) == [i + 5 for i in range(32)]
    again = Program.from_ptx("".join(f"// {ln}\n" for ln in p.header_lines()) + text.split(".version", 1)[1].join(
        [".version", ""]), "ptr.ptx")
    assert again.buffers == p.buffers
    args = {a.name: a for a in program_args(p)}
    assert args["data"].hidden and not args["o"].hidden and args["s"].pointers == ((16, "data"),)
    from fuzzptx.reduce.driver import cleanup
    assert [b.name for b in cleanup(p).buffers] == ["data", "o"]  # kept with its struct by the shrinker
    with pytest.raises(ReproError, match="at=12"):
        Program.from_ptx(text.replace("at=16", "at=12"), "bad.ptx")
    with pytest.raises(ReproError, match="in=PARAM and at=OFFSET go together"):
        Program.from_ptx(text.replace(" in=s at=16", " in=s"), "bad.ptx")


def test_the_struct_fields_a_kernel_uses_as_addresses_are_found():
    """A field loaded from a by-value struct and used as an address is a pointer (optional where the
    kernel compares it with 0 first: it is left null); a buffer is made for the others."""
    from fuzzptx.ptx.parse import parse

    module = parse(_STRUCT_PTR.format(value=0), "ptr.ptx")
    fn = module.function("k")
    assert {k[1]: v for k, v in launch.struct_pointers(fn).items()} == {16: False, 24: True}
    p = launch._with_value(Program.from_module(module, "ptr.ptx"), fn, 0xFFFFFFFF, {"s"})
    made = launch.struct_pointer_fields(p, fn)
    (buf,) = [b for b in made.buffers if b.param]
    assert (buf.param, buf.at) == ("s", 16)
    value = dict(made.scalars)["s"]
    assert (value >> (8 * 24)) & ((1 << 64) - 1) == 0  # the optional pointer: null
    assert (value >> (8 * 4)) & 0xFFFFFFFF == 0xFFFFFFFF  # other fields as they were


def test_cutlass_gemm_universal_reaches_its_wgmmas():
    """A CUTLASS 3.x GemmUniversal kernel takes one Params struct holding its four tensor maps, the
    pointers beside them and the bytes one pipeline stage's copies bring: the launch gives the maps
    buffers of their own, boxes from the shared-memory step between the pipeline's stages (64 x 128
    f16 here) and that byte count, so the producer warp's copies complete the consumers' phases and
    the consumer warpgroups run their wgmmas, the epilogue its ldmatrix and stmatrix (the reference
    was stopped at the first copy: 0 of 24)."""
    from fuzzptx.inputs import read_text
    from fuzzptx.ptx.parse import parse

    path = DATA / "cutlass" / "ws_coop_f16_128x128x64.ptx"
    text = read_text(path, what="PTX file")
    fn = parse(text, str(path)).kernels()[0]
    assert sorted(k[1] for k in launch.struct_map_sites(fn)) == [128, 384, 896, 1152]
    assert [k[1] for k in launch.struct_tx_words(fn)] == [640, 1408]
    p = launch.load(text, str(path))
    maps = {m.at: m for m in p.tensormaps}
    assert maps[128].box == maps[384].box == (64, 128, 1) and maps[896].box == (64, 32, 1)
    assert {m.buffer for m in p.tensormaps} <= {b.name for b in p.buffers}
    value = dict(p.scalars)[fn.params[0].name]
    assert (value >> (8 * 640)) & 0xFFFFFFFF == 2 * 64 * 128 * 2  # A's and B's box per stage
    assert (value >> (8 * 1408)) & 0xFFFFFFFF == 2 * 64 * 32 * 2  # C's two boxes per stage
    assert (value >> (8 * 1656)) & ((1 << 64) - 1) == 1  # the tile scheduler's tile count: one tile
    t = launch.trial(p)
    assert t.error is None and t.coverage.ran == t.coverage.of == 24


def test_a_64_bit_struct_field_read_as_a_number_is_one_64_bit_value():
    """CUTLASS's ``ws_f16_128x128x64`` epilogue reads C through its ``ptr_C`` with the 64-bit
    ``stride_C`` of the same Params: the searched integer goes into such a field as one 64-bit value.
    Set in each of its 32-bit words (0x0000008000000080), the stride put the epilogue's loads 2 TiB
    past C and the run stopped there after its 16 wgmma."""
    from fuzzptx.inputs import read_text
    from fuzzptx.ptx.parse import parse

    path = DATA / "cutlass" / "ws_f16_128x128x64.ptx"
    text = read_text(path, what="PTX file")
    fn = parse(text, str(path)).kernels()[0]
    numbers = launch.struct_numbers(fn)
    assert numbers and not numbers & set(launch.struct_pointers(fn))
    p = launch.load(text, str(path))
    value = dict(p.scalars)[fn.params[0].name]
    chosen = {(value >> (8 * off)) & ((1 << 64) - 1) for _, off in numbers}
    assert chosen and all(v < 1 << 32 for v in chosen)  # never the integer in both halves
    t = launch.trial(p)
    assert t.error is None and t.coverage.ran == t.coverage.of == 16


def test_a_stage_barrier_computed_twice_gets_its_copies_bytes():
    """``ws_f16_128x128x64`` arms a stage's full barrier through ``%r667`` and its A and B copies
    complete on ``%r672``, both ``%r665 + 229376``: the stage's expected bytes are the two boxes
    (64 x 128 f16 each).  Matched by register name, the word kept the searched integer (128), the
    phase never completed and the H200 hung on it (60 s, -O3 and -O0)."""
    from fuzzptx.inputs import read_text
    from fuzzptx.ptx.parse import parse

    path = DATA / "cutlass" / "ws_f16_128x128x64.ptx"
    text = read_text(path, what="PTX file")
    fn = parse(text, str(path)).kernels()[0]
    ((word, bars),) = launch.struct_tx_words(fn).items()
    (bar,) = bars
    copies = launch.copies_on(bar, launch.struct_map_barriers(fn))
    assert sorted(at for _, at in copies) == [128, 384]  # A's map and B's, on a barrier named otherwise
    assert all(c.written != bar.written for _, c in launch.struct_map_barriers(fn))
    p = launch.load(text, str(path))
    value = dict(p.scalars)[word[0]]
    assert (value >> (8 * word[1])) & 0xFFFFFFFF == 2 * 64 * 128 * 2
    from fuzzptx.oracles.reference import run_program

    assert not any("phase expecting" in n for n in run_program(p).notes)


def test_copies_named_as_written_win_over_the_same_value():
    """Two paths (CUTLASS's epilogue, each with its own register for one barrier) each bring one
    box per phase: the copies the expect_tx's own register names count, not every copy whose barrier
    has the same value (that doubled ``ws_pingpong``'s C bytes and hung its reference run)."""
    a = launch.BarrierRef(("%r1", 0), ("%r0", 1, 128))
    b = launch.BarrierRef(("%r2", 0), ("%r0", 1, 128))
    copies = [("one", a), ("two", b)]
    assert launch.copies_on(a, copies) == ["one"]
    assert launch.copies_on(launch.BarrierRef(("%r3", 0), ("%r0", 1, 128)), copies) == ["one", "two"]
    assert launch.copies_on(launch.BarrierRef(("%r3", 0), ("%r0", 2, 128)), copies) == []


def test_float_fields_of_a_struct_are_one_and_its_pointer_buffers_hold_the_operand_type():
    """CUTLASS's ``alpha``/``beta`` live in the Params struct: a launch gives them 1.0, as it gives a
    float scalar (they had the searched integer's bits, 2e-43, and D came out zeros); the buffers
    behind its C and D pointers hold f16 as its wgmmas read, so the reference keeps each f16 of D's
    bounds (two per u32 word could not be kept: D read as undefined, and the GPU run said nothing)."""
    from fuzzptx.inputs import read_text
    from fuzzptx.oracles.reference import run_program
    from fuzzptx.oracles.reference.values import UNDEF
    from fuzzptx.ptx.parse import parse

    path = DATA / "cutlass" / "ws_f16_128x128x64.ptx"
    text = read_text(path, what="PTX file")
    fn = parse(text, str(path)).kernels()[0]
    floats = launch.struct_floats(fn)
    assert sorted(off for _, off in floats) == [768, 772] and set(floats.values()) == {4}
    p = launch.load(text, str(path))
    value = dict(p.scalars)[fn.params[0].name]
    assert (value >> (8 * 768)) & ((1 << 64) - 1) == 0x3F800000_3F800000
    ptrs = [b for b in p.buffers if b.param]
    assert ptrs and all(b.type == "f16" for b in ptrs)
    r = run_program(p)
    d = r.outputs[max(ptrs, key=lambda b: b.at).name]
    assert r.undefined is None and not (d.kind == UNDEF).any()
