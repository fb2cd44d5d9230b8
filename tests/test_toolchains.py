"""ptxas releases as toolchains: SPEC parsing, the release table, and resolution.

Resolution from ``$FUZZPTX_TOOLCHAINS`` runs fake ptxas scripts that print a ``--version``
banner (a test of the resolver, not of ptxas).  The one real fetch downloads a wheel from
PyPI and runs only with ``FUZZPTX_NETWORK_TESTS=1``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fuzzptx.oracles import toolchains as tc
from fuzzptx.cli import main as cli_main
from fuzzptx.oracles import ptxas
from fuzzptx.oracles.ptxas import PINNED_VERSION

needs_pinned = pytest.mark.skipif(ptxas._packaged_ptxas() is None, reason="nvidia-cuda-nvcc not installed")
needs_network = pytest.mark.skipif(os.environ.get("FUZZPTX_NETWORK_TESTS") != "1",
                                   reason="downloads a ptxas wheel; set FUZZPTX_NETWORK_TESTS=1")


def banner(release: str) -> str:
    major, minor, _ = release.split(".")
    return ("ptxas: NVIDIA (R) Ptx optimizing assembler\n"
            f"Cuda compilation tools, release {major}.{minor}, V{release}\n")


def fake_ptxas(path: Path, release: str) -> Path:
    """A script that answers ``--version`` like ptxas ``release`` does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\nprintf '{banner(release)}'\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """An empty cache and no packed directory: nothing but the pinned package is local."""
    monkeypatch.setenv("FUZZPTX_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("FUZZPTX_TOOLCHAINS", raising=False)
    return tmp_path


# ---------------------------------------------------------------- the table

def test_table_is_sorted_unique_and_spans_12_0_to_13_5():
    keys = [r.key for r in tc.RELEASES]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert tc.RELEASES[0].version == "12.0.76" and tc.latest().version == "13.5.37"
    assert {r.key[0] for r in tc.RELEASES} == {12, 13}


def test_table_packages_follow_the_major():
    for r in tc.RELEASES:
        assert r.package == ("nvidia-cuda-nvcc-cu12" if r.key[0] == 12 else "nvidia-cuda-nvcc")
        assert r.nvdisasm_package in (None, "nvidia-cuda-nvdisasm")
        assert r.key[0] == 13 or not r.has_nvdisasm  # PyPI has no nvidia-cuda-nvdisasm-cu12


def test_ptx_max_never_falls_with_a_later_release():
    measured = [r.ptx_max for r in tc.RELEASES if r.ptx_max is not None]
    assert measured == sorted(measured)
    assert tc.known("12.9.86").ptx_max == (8, 8) and tc.known(PINNED_VERSION).ptx_max == (9, 0)


def test_reads_uses_the_measured_maximum():
    assert tc.reads("12.9.86", "8.8") is True
    assert tc.reads("12.9.86", "9.0") is False
    assert tc.reads("12.4.131", (8, 5)) is False
    assert tc.reads("13.5.37", "9.5") is True and tc.reads("13.5.37", "9.6") is False


def test_reads_bounds_an_unmeasured_release_by_its_neighbours():
    assert tc.known("13.2.78").ptx_max is None
    assert tc.reads("13.2.78", "9.0") is True     # 13.0 reads it, so every later release does
    assert tc.reads("13.2.78", "9.4") is False    # 13.2.86 does not, so no earlier release does
    assert tc.reads("13.2.78", "9.1") is None     # unknown: callers call it not applicable
    assert tc.reads("13.2.86", "9.2") is True and tc.reads("13.2.86", "9.3") is False  # measured: 9.2
    assert tc.reads("13.9.1", "9.5") is True      # a release newer than the table


# ---------------------------------------------------------------- SPEC parsing

def test_spec_single_release_and_minor():
    assert tc.parse_spec("13.5.37") == ("13.5.37",)
    assert tc.parse_spec("12.9") == ("12.9.86",)       # newest patch of the minor
    assert tc.parse_spec("default") == (PINNED_VERSION,)
    assert tc.parse_spec("latest") == (tc.latest().version,)


def test_spec_list_keeps_order_and_drops_repeats():
    assert tc.parse_spec("13.5.37, 12.9.86,13.5.37") == ("13.5.37", "12.9.86")


def test_spec_range_is_inclusive_by_major_minor():
    got = tc.parse_spec("12.8-13.0")
    assert got == ("12.8.61", "12.8.93", "12.9.41", "12.9.86", "13.0.48", "13.0.88")
    assert tc.parse_spec("12.9.86-13.0.48") == ("12.9.86", "13.0.48")
    assert tc.parse_spec("12.4-13.5")[0] == "12.4.99" and tc.parse_spec("12.4-13.5")[-1] == "13.5.37"


def test_spec_all_is_the_table():
    assert tc.parse_spec("all") == tuple(r.version for r in tc.RELEASES)


def test_spec_path(tmp_path):
    p = fake_ptxas(tmp_path / "bin" / "ptxas", "12.9.86")
    assert tc.parse_spec(str(p)) == (p,)
    assert tc.parse_spec(f"13.5.37,{p}") == ("13.5.37", p)


@pytest.mark.parametrize("spec, words", [
    ("13.0.99", "not a known ptxas release"),
    ("11.8", "no known ptxas release 11.8.x"),
    ("13.5-12.4", "runs backwards"),
    ("10.0-11.0", "no known ptxas release in"),
    ("12.4-banana", "range bound"),
    ("newest", "is not a release"),
    ("12.9.86,,13.5.37", "empty release"),
    ("", "empty release"),
])
def test_bad_specs_say_why_in_one_line(spec, words):
    with pytest.raises(tc.ToolchainError) as e:
        tc.parse_spec(spec)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_missing_path_is_an_error(tmp_path):
    with pytest.raises(tc.ToolchainError, match="not an executable ptxas"):
        tc.resolve(str(tmp_path / "nope" / "ptxas"))


# ---------------------------------------------------------------- resolution

@needs_pinned
def test_default_resolves_to_the_pinned_package(isolated):
    (t,) = tc.resolve("default", fetch_missing=False)
    assert t.release == PINNED_VERSION and t.source == "pinned package"
    assert t.ptxas == ptxas._packaged_ptxas() and t.ptx_max == (9, 0)
    assert t.name == f"ptxas@{PINNED_VERSION}" and "sm_90a" in t.targets()


def test_packed_directory_resolves_without_the_network(isolated, monkeypatch):
    packed = isolated / "packed"
    fake_ptxas(packed / "12.9.86" / "ptxas", "12.9.86")
    fake_ptxas(packed / "13.5.37" / "ptxas", "13.5.37")
    fake_ptxas(packed / "13.5.37" / "nvdisasm", "13.5.37")
    monkeypatch.setenv("FUZZPTX_TOOLCHAINS", str(packed))
    a, b = tc.resolve("12.9.86,13.5", fetch_missing=False)
    assert (a.release, a.source, a.nvdisasm, a.ptx_max) == ("12.9.86", "FUZZPTX_TOOLCHAINS dir", None, (8, 8))
    assert b.ptxas == packed / "13.5.37" / "ptxas" and b.nvdisasm == packed / "13.5.37" / "nvdisasm"
    rows = {r["release"]: r["status"] for r in tc.status()}
    assert rows["12.9.86"] == "FUZZPTX_TOOLCHAINS" and rows["12.8.93"] == "fetchable"


def test_a_packed_impostor_is_an_error(isolated, monkeypatch):
    fake_ptxas(isolated / "packed" / "12.9.86" / "ptxas", "12.8.93")
    monkeypatch.setenv("FUZZPTX_TOOLCHAINS", str(isolated / "packed"))
    with pytest.raises(tc.ToolchainError, match="is ptxas 12.8.93, not 12.9.86"):
        tc.resolve("12.9.86", fetch_missing=False)


def test_missing_release_without_fetching_names_the_command(isolated):
    with pytest.raises(tc.ToolchainError, match=r"fuzzptx toolchains --fetch 12\.8\.93"):
        tc.resolve("12.8.93", fetch_missing=False)


def test_a_path_spec_reads_its_release_off_the_binary(tmp_path):
    p = fake_ptxas(tmp_path / "ptxas", "12.4.131")
    fake_ptxas(tmp_path / "nvdisasm", "12.4.131")
    (t,) = tc.resolve(str(p), fetch_missing=False)
    assert (t.release, t.source, t.ptx_max, t.nvdisasm) == ("12.4.131", "path", (8, 4), tmp_path / "nvdisasm")


def test_the_cache_follows_xdg_unless_fuzzptx_cache_says(monkeypatch, tmp_path):
    monkeypatch.delenv("FUZZPTX_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert tc.cache_dir() == tmp_path / "xdg" / "fuzzptx" / "toolchains"
    monkeypatch.setenv("FUZZPTX_CACHE", str(tmp_path / "mine"))
    assert tc.cache_dir() == tmp_path / "mine" / "toolchains"


def test_pack_copies_into_a_carryable_directory(isolated, monkeypatch):
    src = isolated / "src"
    fake_ptxas(src / "12.9.86" / "ptxas", "12.9.86")
    monkeypatch.setenv("FUZZPTX_TOOLCHAINS", str(src))
    out = isolated / "carry"
    assert tc.pack(out, "12.9.86") == [out / "12.9.86"]
    assert sorted(p.name for p in out.iterdir()) == ["12.9.86"]  # no temporary left behind
    monkeypatch.setenv("FUZZPTX_TOOLCHAINS", str(out))
    (t,) = tc.resolve("12.9.86", fetch_missing=False)
    assert t.ptxas == out / "12.9.86" / "ptxas"


def test_cli_lists_every_release_as_json(isolated, capsys):
    assert cli_main(["toolchains", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["release"] for r in doc["releases"]] == [r.version for r in tc.RELEASES]
    assert doc["cache"] == str(isolated / "cache" / "toolchains")
    if ptxas._packaged_ptxas() is not None:
        assert {r["release"]: r["status"] for r in doc["releases"]}[PINNED_VERSION] == "pinned"


def test_cli_bad_spec_is_one_line_exit_2(isolated, capsys):
    assert cli_main(["toolchains", "--fetch", "13.0.99"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fuzzptx toolchains: ") and "\n" not in err


def test_compile_ptx_refuses_a_ptxas_that_is_not_there(tmp_path):
    with pytest.raises(ptxas.PtxasNotFound):
        ptxas.compile_ptx(".version 8.0\n.target sm_90a\n.address_size 64\n", ptxas=tmp_path / "ptxas")


# ---------------------------------------------------------------- fetching, without the network

# pip download's stderr, as it reads through a dead proxy and for a release PyPI lacks.
OFFLINE = ("ERROR: Could not find a version that satisfies the requirement nvidia-cuda-nvcc-cu12==12.8.93 "
           "(from versions: none)\nERROR: No matching distribution found for nvidia-cuda-nvcc-cu12==12.8.93\n")
MISSING = ("ERROR: Could not find a version that satisfies the requirement nvidia-cuda-nvcc==13.0.99 "
           "(from versions: 13.0.48, 13.0.88, 13.5.37)\nERROR: No matching distribution found for nvidia-cuda-nvcc==13.0.99\n")


@pytest.mark.parametrize("stderr, words", [
    (OFFLINE, "unreachable"),
    ("WARNING: Retrying ... ProxyError('Cannot connect to proxy.')\n" + OFFLINE, "FUZZPTX_TOOLCHAINS=DIR"),
    (MISSING, "has no such release"),
    ("ERROR: disk full\n", "failed: ERROR: disk full"),
])
def test_pip_failures_read_as_one_line(stderr, words):
    msg = str(tc._pip_error("x==1", stderr))
    assert words in msg and "\n" not in msg


def test_a_failed_fetch_leaves_nothing_in_the_cache(isolated, monkeypatch):
    def half_download(requirement, dest):
        dest.mkdir(parents=True)
        (dest / "partial.whl").write_bytes(b"PK")
        raise tc._pip_error(requirement, OFFLINE)

    monkeypatch.setattr(tc, "_pip_download", half_download)
    with pytest.raises(tc.ToolchainError, match="unreachable"):
        tc.resolve("12.8.93")
    assert list((isolated / "cache" / "toolchains").iterdir()) == []


def test_fetch_unpacks_only_ptxas_and_checks_its_version(isolated, monkeypatch):
    """A wheel laid out like nvidia-cuda-nvcc-cu12's, holding a fake ptxas of another release."""
    import zipfile

    def wheel_of(release):
        def download(requirement, dest):
            dest.mkdir(parents=True)
            w = dest / "nvidia_cuda_nvcc_cu12-x-py3-none-any.whl"
            with zipfile.ZipFile(w, "w") as z:
                z.writestr("nvidia/cuda_nvcc/bin/ptxas", f"#!/bin/sh\nprintf '{banner(release)}'\n")
                z.writestr("nvidia/cuda_nvcc/bin/nvcc", "not wanted")
            return w
        return download

    monkeypatch.setattr(tc, "_pip_download", wheel_of("12.8.61"))
    with pytest.raises(tc.ToolchainError, match="holds ptxas 12.8.61, not 12.8.93"):
        tc.fetch("12.8.93")
    assert list((isolated / "cache" / "toolchains").iterdir()) == []
    monkeypatch.setattr(tc, "_pip_download", wheel_of("12.8.93"))
    t = tc.fetch("12.8.93")
    assert (t.source, t.nvdisasm) == ("cache", None)
    assert sorted(p.name for p in t.ptxas.parent.iterdir()) == ["ptxas"]


# ---------------------------------------------------------------- one real fetch

WGMMA = """.version {version}
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 pD)
{{
  .reg .f32 d<4>;
  .reg .b32 a<4>;
  .reg .b64 desc, p;
  mov.b32 a0, 0; mov.b32 a1, 0; mov.b32 a2, 0; mov.b32 a3, 0;
  mov.b64 desc, 0;
  mov.f32 d0, 0f00000000; mov.f32 d1, 0f00000000; mov.f32 d2, 0f00000000; mov.f32 d3, 0f00000000;
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{d0,d1,d2,d3}}, {{a0,a1,a2,a3}}, desc, 1, 1, 1, 0;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  ld.param.u64 p, [pD];
  st.global.v4.f32 [p], {{d0,d1,d2,d3}};
  ret;
}}
"""


@pytest.mark.network
@needs_network
@pytest.mark.parametrize("release", ["12.9.86"])
def test_fetch_a_release_from_pypi_and_judge_with_it(isolated, release):
    (t,) = tc.resolve(release)  # an empty cache: this downloads the wheel
    assert t.source == "cache" and t.ptxas == isolated / "cache" / "toolchains" / release / "ptxas"
    assert tc.measure_ptx_max(t.ptxas) == tc.known(release).ptx_max
    ok = ptxas.compile_ptx(WGMMA.format(version="8.8"), ptxas=t.ptxas)
    assert ok.accepted and ok.cubin
    too_new = ptxas.compile_ptx(WGMMA.format(version="9.0"), ptxas=t.ptxas)
    assert not too_new.accepted and "Unsupported .version 9.0" in too_new.stderr
    assert ptxas.compile_ptx(WGMMA.format(version="9.0")).accepted  # the pinned 13.0.88 reads it
    (again,) = tc.resolve(release, fetch_missing=False)  # now cached
    assert again == t
