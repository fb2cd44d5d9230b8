"""The ptxas judge against the real, pinned ptxas (no mocks).

Kernels are one-wgmma programs written here; a line ending in ``// @L`` is the line a
diagnostic must point at.
"""
from __future__ import annotations

import functools
import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzptx.errors import FuzzptxError
from fuzzptx.oracles import ptxas
from fuzzptx.oracles.ptxas_merge import scan

W = "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {d0,d1,d2,d3}, {a0,a1,a2,a3}, desc, 1, 1, 1, 0;"
FENCE, COMMIT, WAIT = "wgmma.fence.sync.aligned;", "wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 0;"


def kernel(body: str, pre: str = "", name: str = "wg", version: str = "8.5") -> str:
    """A module with one kernel: load A, zero D, run ``body`` (``W`` = one wgmma), store D."""
    return f""".version {version}
.target sm_90a
.address_size 64
{pre}
.visible .entry {name}(.param .u64 pA, .param .u64 pD)
{{
  .reg .b32 a<4>, tid, t;
  .reg .f32 d<4>, x;
  .reg .pred p;
  .reg .b64 desc, t64, base, addr;
  mov.u32 tid, %tid.x;
  ld.param.u64 base, [pA];
  cvta.to.global.u64 base, base;
  mul.wide.u32 t64, tid, 16;
  add.u64 addr, base, t64;
  ld.global.v4.b32 {{a0,a1,a2,a3}}, [addr];
  mov.b64 desc, 0x0000001000080000;
  mov.f32 d0, 0f00000000; mov.f32 d1, 0f00000000; mov.f32 d2, 0f00000000; mov.f32 d3, 0f00000000;
  setp.lt.u32 p, tid, 64;
{body.replace("W;", W)}
  ld.param.u64 base, [pD];
  cvta.to.global.u64 base, base;
  add.u64 addr, base, t64;
  st.global.v4.f32 [addr], {{d0,d1,d2,d3}};
  ret;
}}
"""


def marked_line(ptx: str) -> int:
    return next(i for i, s in enumerate(ptx.splitlines(), 1) if s.rstrip().endswith("// @L"))


CALL = "{ .param .b32 q; st.param.b32 [q], tid; call ext, (q); }"
GOOD = kernel(f"{FENCE}\nW;\n{COMMIT}\n{WAIT}")

# code -> (body, module prologue, extra ptxas args, whether the code carries a line)
GMMA_CASES = {
    "C7519": (f"W; // @L\n{COMMIT}\n{WAIT}", "", (), True),
    "C7517": (f"{FENCE}\nW;\n{COMMIT}\nadd.f32 d0, d0, 0f3F800000; // @L\n{WAIT}", "", (), True),
    "C7520": (f"{FENCE}\n@p bra SKIP;\nW;\nSKIP:\n{COMMIT}\n{WAIT}", "", (), False),
    "C7518": (f"{FENCE}\nW;\n{COMMIT}\n@p {WAIT}\nadd.f32 d0, d0, d1;", "", (), False),
    "C7515": (f"{FENCE}\nW;\n{COMMIT}\n@p bra L1;\nmov.f32 d0, 0f3F800000;\nL1:\n{WAIT}", "", (), False),
    "C7514": (f"{FENCE}\nW;\n{COMMIT}\nwgmma.wait_group.sync.aligned 1;", "", (), False),
    "C7511": (f"{FENCE}\nW;\nmov.f32 d0, 0f3F800000;\nW;\n{COMMIT}\n{WAIT}", "", (), False),
    "C7509": (f"{FENCE}\nW;\n{COMMIT}\n{CALL}\n{WAIT}", ".extern .func ext(.param .b32 x);", ("-c",), False),
}


@functools.lru_cache(maxsize=None)
def single(ptx: str) -> ptxas.PtxasResult:
    return ptxas.compile_ptx(ptx, want_cubin=False)


def test_finds_the_pinned_ptxas_from_the_package():
    path = ptxas.find_ptxas()
    assert path.parts[-4:] == ("nvidia", "cu13", "bin", "ptxas")
    assert ptxas.ptxas_version() == ptxas.PINNED_VERSION == "13.0.88"


def test_missing_ptxas_is_a_one_line_project_error(monkeypatch):
    monkeypatch.setenv(ptxas.ENV_VAR, "/nonexistent")
    with pytest.raises(ptxas.PtxasNotFound) as info:
        ptxas.compile_ptx(GOOD)
    assert isinstance(info.value, FuzzptxError)
    assert "\n" not in str(info.value) and "/nonexistent" in str(info.value)


def test_missing_package_names_the_package_to_install(monkeypatch):
    monkeypatch.delenv(ptxas.ENV_VAR, raising=False)
    monkeypatch.setattr(ptxas, "_packaged_ptxas", lambda: None)
    with pytest.raises(ptxas.PtxasNotFound, match="nvidia-cuda-nvcc==13.0.88"):
        ptxas.find_ptxas()


def test_accepted_kernel_gives_an_elf_cubin_and_no_diagnostics():
    r = ptxas.compile_ptx(GOOD)
    assert r.accepted and r.returncode == 0 and not r.timed_out
    assert r.cubin is not None and r.cubin[:4] == b"\x7fELF"
    assert r.diagnostics == () and r.kernel_map() == {"wg": "wg"}


def test_want_cubin_false_skips_the_cubin():
    r = ptxas.compile_ptx(GOOD, want_cubin=False)
    assert r.accepted and r.cubin is None


def test_syntax_error_points_at_its_line():
    ptx = kernel(f"{FENCE}\nW;\n{COMMIT}\n{WAIT}\nadd.u32 t, t, 1 // @L")
    r = ptxas.compile_ptx(ptx)
    assert not r.accepted and r.returncode != 0 and r.cubin is None
    first = r.diagnostics[0]
    assert first.severity == "error" and first.fatal and "syntax error" in first.message
    # ptxas reports a missing ';' where the next statement starts
    assert first.line == marked_line(ptx) + 1 and first.kernel == "wg"


def test_semantic_error_keeps_line_and_kernel():
    ptx = kernel(f"{FENCE}\n{W.replace('m64n8k16', 'm64n9k16')} // @L\n{COMMIT}\n{WAIT}", name="bad_shape")
    r = ptxas.compile_ptx(ptx)
    errs = r.errors()
    assert errs[0].line == marked_line(ptx) and errs[0].kernel == "bad_shape"
    assert "m64n9k16" in errs[0].message and not errs[0].fatal


@pytest.mark.parametrize("code", sorted(GMMA_CASES))
def test_gmma_diagnostic_codes(code):
    body, pre, extra, has_line = GMMA_CASES[code]
    ptx = kernel(body, pre, name="k_" + code)
    r = ptxas.compile_ptx(ptx, want_cubin=False, extra_args=extra)
    assert r.accepted
    hits = [d for d in r.diagnostics if d.code == code]
    assert hits, r.stderr
    d = hits[0]
    assert d.severity == "info" and d.kernel == "k_" + code
    assert d.line == (marked_line(ptx) if has_line else None)


@pytest.mark.parametrize("case", ["C7519", "C7517", "syntax", "shape"])
@pytest.mark.parametrize("lines", [3, -3])
def test_moved_verdict_is_what_ptxas_says_of_the_text_with_another_header(case, lines):
    """A repro's header grows or shrinks; ptxas's verdict on the body moves with it, located
    lines and "around line N" advisories alike, instead of compiling the file again."""
    body = {"syntax": f"{FENCE}\nW;\n{COMMIT}\n{WAIT}\nadd.u32 t, t, 1",
            "shape": f"{FENCE}\n{W.replace('m64n8k16', 'm64n9k16')}\n{COMMIT}\n{WAIT}"}.get(case)
    ptx = kernel(body if body is not None else GMMA_CASES[case][0])
    short, tall = "// a\n// b\n" + ptx, "// a\n// b\n// c\n// d\n// e\n" + ptx
    before, after = (short, tall) if lines > 0 else (tall, short)
    r0, r1 = single(before), single(after)
    assert any(d.line for d in r0.diagnostics), r0.stderr
    moved = r0.moved(lines)
    assert (moved.diagnostics, moved.stderr, moved.accepted) == (r1.diagnostics, r1.stderr, r1.accepted)


def test_timeout_kills_ptxas_and_says_so():
    r = ptxas.compile_ptx(GOOD, timeout=1e-4)
    assert r.timed_out and not r.accepted and r.cubin is None and r.seconds < 10


def test_scan_finds_module_symbols_and_function_spans():
    text = (".version 8.5\n.target sm_90a\n.address_size 64\n"
            ".global .align 4 .b8 buf[16] = {1, 2};\n"
            "// .entry not_this\n"
            ".func (.param .b32 r) helper(.param .b32 x)\n{\n ret;\n}\n"
            ".visible .entry k(.param .u64 p)\n{\n ret;\n}\n")
    s = scan(text)
    assert s.header == (".version 8.5", ".target sm_90a", ".address_size 64")
    assert s.symbols == ("buf", "helper", "k") and s.entries == ("k",)
    assert s.spans == (("helper", 6, 9), ("k", 10, 13))


# A pool of modules of every kind; several share the kernel name "wg" and a module
# variable, so merging must rename them.
SHARED_VAR = ".global .align 4 .u32 counter;"
POOL = [
    GOOD,
    kernel(f"W;\n{COMMIT}\n{WAIT}"),                                   # C7519
    kernel(f"{FENCE}\nW;\n{COMMIT}"),                                  # C7517
    kernel(f"{FENCE}\n{W.replace('m64n8k16', 'm64n9k16')}\n{COMMIT}\n{WAIT}"),   # error
    kernel(f"{FENCE}\nW;\n{COMMIT}\n{WAIT}\nadd.u32 t, t, 1"),         # syntax error
    kernel(GMMA_CASES["C7520"][0], name="div"),
    kernel(f"{FENCE}\nW;\n{COMMIT}\n{WAIT}\nld.global.u32 t, [counter];", SHARED_VAR),
    kernel(f"{FENCE}\nW;\n{COMMIT}\n{WAIT}\n.pragma \"bogus\";"),    # warning with no line
    kernel(f"{FENCE}\nW;\n{COMMIT}\n{WAIT}", version="8.0"),          # another header
    kernel(f"{FENCE}\nW;\n{COMMIT}\n{WAIT}", version="7.0"),          # errors because of its header
    kernel(f"{FENCE}\nW;\n{COMMIT}\nbar.sync 20;\n{WAIT}"),           # error mid-file
    GOOD.replace(".param .u64 pD)", ".param .u64 pD) .minnctapersm 1"),  # warning with a line
]


def test_batch_equals_one_by_one_on_the_whole_pool():
    batched = ptxas.compile_batch(POOL)
    for ptx, got in zip(POOL, batched):
        assert got.verdict() == single(ptx).verdict()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(range(len(POOL))), min_size=2, max_size=8))
def test_batch_equals_one_by_one(picks):
    ptxs = [POOL[i] for i in picks]
    for ptx, got in zip(ptxs, ptxas.compile_batch(ptxs)):
        assert got.verdict() == single(ptx).verdict()


def test_batched_cubin_holds_every_renamed_kernel():
    ptxs = [GOOD, POOL[1], POOL[5]]
    results = ptxas.compile_batch(ptxs, want_cubin=True)
    cubin = results[0].cubin
    assert cubin is not None and cubin[:4] == b"\x7fELF"
    names = set()
    for r in results:
        assert r.accepted and r.shared_cubin and r.cubin is cubin
        (orig, renamed), = r.kernel_names.items()
        assert renamed == r.kernel(orig) != orig and renamed.encode() in cubin
        names.add(renamed)
    assert len(names) == 3


def test_parallel_equals_batch():
    ptxs = POOL[:6]
    par = ptxas.compile_parallel(ptxs, batch_size=2, jobs=2)
    assert [r.verdict() for r in par] == [single(p).verdict() for p in ptxs]


def test_package_path_is_not_from_path_env(monkeypatch, tmp_path: pathlib.Path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert ptxas.compile_ptx(GOOD, want_cubin=False).accepted


def test_accepted_inputs_share_one_ptxas_run(monkeypatch):
    """The point of batching: accepted inputs, warnings included, cost one run."""
    runs = []
    real = ptxas._run
    monkeypatch.setattr(ptxas, "_run", lambda *a: runs.append(1) or real(*a))
    ptxs = [GOOD, POOL[1], POOL[2], POOL[5], POOL[6], POOL[11]] * 2
    got = ptxas.compile_batch(ptxs)
    assert len(runs) == 1
    assert [r.verdict() for r in got] == [single(p).verdict() for p in ptxs]


def test_symbols_named_like_opcodes_are_renamed_only_as_symbols():
    text = (".version 8.5\n.target sm_90a\n.address_size 64\n.global .u32 add;\n"
            ".func ret()\n{\n  ret;\n}\n"
            ".visible .entry k(.param .u64 p)\n{\n .reg .b32 r;\n .reg .pred q;\n"
            " ld.global.u32 r, [add];\n add.u32 r, r, 1;\n st.global.u32 [add+4], r;\n"
            " call ret;\n setp.eq.u32 q, r, 0;\n @q ret;\n @!q bra L;\nL:\n ret;\n}\n")
    alone = single(text)
    assert alone.accepted
    assert [r.verdict() for r in ptxas.compile_batch([text, text])] == [alone.verdict()] * 2


def test_verbose_batch_equals_one_by_one():
    ptxs = POOL[:3]
    got = ptxas.compile_batch(ptxs, extra_args=("-v",))
    want = [ptxas.compile_ptx(p, want_cubin=False, extra_args=("-v",)) for p in ptxs]
    assert [r.verdict() for r in got] == [r.verdict() for r in want]
    assert any("registers" in d.message for d in got[0].diagnostics)


def test_register_limit_is_a_coded_fatal_error_at_the_wgmma_line():
    ptx = kernel(f"{FENCE}\nW; // @L\n{COMMIT}\n{WAIT}", name="tight")
    r = ptxas.compile_ptx(ptx, want_cubin=False, extra_args=("-maxrregcount=24",))
    assert not r.accepted and r.codes() == ("C7602",)
    d = r.diagnostics[0]
    assert d.severity == "error" and d.fatal and d.line == marked_line(ptx) and d.kernel == "tight"


def test_batch_timeout_gives_timed_out_results_not_a_hang():
    got = ptxas.compile_batch(POOL[:4], timeout=1e-4)
    assert len(got) == 4 and all(r.timed_out and not r.accepted for r in got)
