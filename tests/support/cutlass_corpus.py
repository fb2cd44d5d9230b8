"""CUTLASS-made sm_90a PTX as production Hopper GEMMs are written (issue 28: "PTX from CUTLASS as written").

``PYTHONPATH=$PWD:tests python3 -m support.cutlass_corpus --cutlass PATH`` compiles, with nvcc
(``nvcc --version`` 13.0 here) and ``-arch=sm_90a -ptx -O3 -std=c++17 --expt-relaxed-constexpr``,
into ``tests/data/cutlass/NAME.ptx`` plus ``MANIFEST.json``:

- CuTe's two Hopper tutorial kernels, compiled from the CUTLASS tree as they stand (their host code
  instantiates an NT and a TN kernel each; CUB adds an empty kernel): ``wgmma_sm90.cu`` (cp.async
  into swizzled shared memory, then wgmma) and ``wgmma_tma_sm90.cu`` (TMA loads completing on
  mbarriers, a multi-stage pipeline, wgmma).
- CUTLASS 3.x GEMM kernels (``cutlass::device_kernel<GemmUniversal<...>>``) chosen through the
  collective builders by the small driver below (ours: it only names types and policies): the
  warp-specialized TMA mainloop with a producer warp and ``setmaxnreg``, cooperative and ping-pong
  consumers, a persistent tile scheduler, TMA-store epilogues through ``stmatrix``, f16, fp8 with
  and without fast accumulation, a 2-CTA cluster (multicast TMA) and a mixed-input kernel whose
  converted operand reaches wgmma from registers.

PATH is a CUTLASS checkout, or a bare git directory (then ``include/``, ``tools/util/include/`` and
the tutorial sources of its HEAD are extracted to a temporary directory).  The first line of each
file names the CUTLASS commit, the source and the nvcc release.  Asserts stay in, as the flags above
build them (the kernels call ``__assertfail``: ptxas serialises their wgmmas, C7510), save in the
``_ndebug`` kernels, built as a CMake Release build is (``NDEBUG``): their wgmma pipelines stay whole.
nvcc runs on relative paths in a scratch directory, so a rebuild equals the committed files except
for the per-compilation hash nvcc puts into internal-linkage names (``_INTERNAL_xxxxxxxx``).
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "data" / "cutlass"
FLAGS = ("-arch=sm_90a", "-ptx", "-O3", "-std=c++17", "--expt-relaxed-constexpr")
TREES = ("include", "tools/util/include", "examples/cute/tutorial/hopper")

# The driver: a GEMM kernel type from the two collective builders, and a host function that takes
# the kernel's address so nvcc emits it.  Each build defines GEMM_A, _B, _D, _TILE, _CLUSTER, _MAINLOOP, _EPILOGUE.
DRIVER = r"""
#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/device_kernel.h"

using namespace cute;
using ColMajor = cutlass::layout::ColumnMajor;
using RowMajor = cutlass::layout::RowMajor;

using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, GEMM_TILE, GEMM_CLUSTER,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    GEMM_D, ColMajor, 16 / sizeof(GEMM_D), GEMM_D, ColMajor, 16 / sizeof(GEMM_D), GEMM_EPILOGUE>::CollectiveOp;
using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    GEMM_A, RowMajor, 16 / sizeof(GEMM_A), GEMM_B, ColMajor, 16 / sizeof(GEMM_B), float, GEMM_TILE, GEMM_CLUSTER,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
    GEMM_MAINLOOP>::CollectiveOp;
using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;

void* kernel_address() { return reinterpret_cast<void*>(&cutlass::device_kernel<Kernel>); }
"""


@dataclass(frozen=True)
class Gemm:
    """One CUTLASS 3.x GEMM: element types, CTA tile, cluster, mainloop and epilogue schedules."""

    a: str
    b: str
    d: str
    tile: tuple[int, int, int]
    cluster: tuple[int, int, int]
    mainloop: str
    epilogue: str
    ndebug: bool = False  # asserts compiled out, as a CMake Release build does

    def source(self) -> str:
        """The driver with this GEMM's ``#define``s in front (not ``-D``: nvcc splits those at commas)."""
        shape = lambda t: "Shape<" + ", ".join(f"_{x}" for x in t) + ">"  # noqa: E731
        defs = {"GEMM_A": self.a, "GEMM_B": self.b, "GEMM_D": self.d, "GEMM_TILE": shape(self.tile),
                "GEMM_CLUSTER": shape(self.cluster), "GEMM_MAINLOOP": f"cutlass::gemm::{self.mainloop}",
                "GEMM_EPILOGUE": f"cutlass::epilogue::{self.epilogue}"}
        if self.ndebug:
            defs = {"NDEBUG": "1", **defs}
        return "".join(f"#define {k} {v}\n" for k, v in defs.items()) + DRIVER


F16, BF16, E4M3, E5M2, S8 = "cutlass::half_t", "cutlass::bfloat16_t", "cutlass::float_e4m3_t", "cutlass::float_e5m2_t", "int8_t"
COOP, COOP_EPI = "KernelTmaWarpSpecializedCooperative", "TmaWarpSpecializedCooperative"
PING, PING_EPI = "KernelTmaWarpSpecializedPingpong", "TmaWarpSpecialized"

# name -> a CuTe tutorial source (path in the CUTLASS tree) or a GEMM for the driver
KERNELS: dict[str, str | Gemm] = {
    "cute_wgmma_cpasync_sm90": "examples/cute/tutorial/hopper/wgmma_sm90.cu",
    "cute_wgmma_tma_sm90": "examples/cute/tutorial/hopper/wgmma_tma_sm90.cu",
    "ws_f16_128x128x64": Gemm(F16, F16, F16, (128, 128, 64), (1, 1, 1), "KernelTmaWarpSpecialized", "NoSmemWarpSpecialized"),
    "ws_coop_f16_128x128x64": Gemm(F16, F16, F16, (128, 128, 64), (1, 1, 1), COOP, COOP_EPI),
    "ws_coop_f16_128x128x64_cluster2x1": Gemm(F16, F16, F16, (128, 128, 64), (2, 1, 1), COOP, COOP_EPI),
    "ws_pingpong_f16_64x128x64": Gemm(F16, F16, F16, (64, 128, 64), (1, 1, 1), PING, PING_EPI),
    "ws_coop_e4m3_fastaccum_128x128x128": Gemm(E4M3, E4M3, F16, (128, 128, 128), (1, 1, 1),
                                               "KernelTmaWarpSpecializedCooperativeFP8FastAccum", COOP_EPI),
    "ws_pingpong_e4m3xe5m2_bf16_64x128x128_cluster1x2": Gemm(E4M3, E5M2, BF16, (64, 128, 128), (1, 2, 1), PING, PING_EPI),
    "ws_coop_mixed_f16xs8_128x128x64": Gemm(F16, S8, F16, (128, 128, 64), (1, 1, 1), COOP, COOP_EPI),
    "ws_coop_f16_128x128x64_ndebug": Gemm(F16, F16, F16, (128, 128, 64), (1, 1, 1), COOP, COOP_EPI, ndebug=True),
    "ws_pingpong_f16_64x128x64_ndebug": Gemm(F16, F16, F16, (64, 128, 64), (1, 1, 1), PING, PING_EPI, ndebug=True),
}


def _git(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], capture_output=True)


def cutlass_tree(path: Path, scratch: Path) -> str:
    """Put CUTLASS's headers and tutorials at ``scratch`` (a link to a checkout, or extracted from a
    bare git dir's HEAD); returns its commit."""
    if (path / "include" / "cute").is_dir():
        rev = _git(["-C", str(path), "rev-parse", "HEAD"])
        if rev.returncode:
            raise SystemExit(f"{path}: not a git checkout, so its CUTLASS commit is unknown")
        scratch.symlink_to(path.resolve(), target_is_directory=True)
        return rev.stdout.decode().strip()
    rev = _git(["--git-dir", str(path), "rev-parse", "HEAD"])
    if rev.returncode:
        raise SystemExit(f"{path}: neither a CUTLASS checkout nor a git directory")
    tar = _git(["--git-dir", str(path), "archive", "HEAD", *TREES])
    if tar.returncode:
        raise SystemExit(f"{path}: git archive failed: {tar.stderr.decode()[:300]}")
    with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as t:
        t.extractall(scratch, filter="data")
    return rev.stdout.decode().strip()


def build(cutlass: Path, out: Path = OUT, nvcc: str | None = None, only: str | None = None) -> dict:
    """Compile every kernel (or those whose name contains ``only``) into ``out``; returns the manifest."""
    nvcc = nvcc or shutil.which("nvcc")
    if nvcc is None:
        raise SystemExit("nvcc not found (CUDA 13.0's nvcc makes these files)")
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text()) if only and manifest_path.exists() else {"kernels": []}
    with tempfile.TemporaryDirectory() as tmp:
        # nvcc runs in ``tmp`` on relative paths: an assert's message holds its file's path as given,
        # so the same commit makes the same bytes wherever the build runs
        commit = cutlass_tree(cutlass, Path(tmp) / "cutlass")
        manifest.update({"cutlass_commit": commit, "nvcc": version, "flags": list(FLAGS),
                         "made_by": "tests/support/cutlass_corpus.py"})
        entries = {k["file"]: k for k in manifest["kernels"]}
        for name, what in KERNELS.items():
            if only and only not in name:
                continue
            if isinstance(what, Gemm):
                src = f"{name}.cu"
                (Path(tmp) / src).write_text(what.source())
                source = "driver: cutlass::device_kernel<GemmUniversal>" + (", NDEBUG" if what.ndebug else "")
                cmd, config = [src], {
                    "a": what.a, "b": what.b, "d": what.d, "tile": list(what.tile), "cluster": list(what.cluster),
                    "mainloop": what.mainloop, "epilogue": what.epilogue, "ndebug": what.ndebug}
            else:
                cmd, source, config = [f"cutlass/{what}"], what, {}
            dest = out / f"{name}.ptx"
            proc = subprocess.run([nvcc, *FLAGS, "-Icutlass/include", "-Icutlass/tools/util/include",
                                   *cmd, "-o", str(dest.resolve())], capture_output=True, text=True, cwd=tmp)
            if proc.returncode:
                raise SystemExit(f"{name}: nvcc failed:\n{proc.stderr[-3000:]}")
            ptx = dest.read_text()
            dest.write_text(f"// made by tests/support/cutlass_corpus.py from CUTLASS {commit} ({source}) with nvcc "
                            f"({version}) {' '.join(FLAGS)}\n" + ptx)
            entries[dest.name] = {"file": dest.name, "source": source, "config": config,
                                  "kernels": ptx.count(".entry "), "wgmma": ptx.count("wgmma.mma_async"),
                                  "lines": ptx.count("\n") + 1, "bytes": dest.stat().st_size}
            print(f"{name}: {entries[dest.name]['bytes']} bytes, {entries[dest.name]['wgmma']} wgmma", file=sys.stderr)
    manifest["kernels"] = [entries[k] for k in sorted(entries)]
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m support.cutlass_corpus", description=__doc__.splitlines()[0])
    ap.add_argument("--cutlass", type=Path, required=True, help="a CUTLASS checkout or bare git directory")
    ap.add_argument("--out", type=Path, default=OUT, help=f"output directory (default {OUT})")
    ap.add_argument("--nvcc", help="the nvcc to use (default: nvcc on PATH)")
    ap.add_argument("--only", help="build only the kernels whose name contains this")
    a = ap.parse_args(argv)
    m = build(a.cutlass, a.out, a.nvcc, a.only)
    print(f"{len(m['kernels'])} files -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
