"""The GPU launch of a kernel in clusters (issue 41): CuPy launches without a cluster attribute, so
the worker calls the driver's ``cuLaunchKernelEx`` with ``CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION``
(``hw_worker.launch_in_clusters``); here the configuration's layout and the argument bytes (no GPU),
the dry run of ``hw_kernels`` picking the CUTLASS cluster kernels up with their clusters, and (gpu)
two-CTA kernels on the GPU against the reference."""
from __future__ import annotations

import ctypes
import json

import numpy as np
import pytest

from fuzzptx.oracles import hardware
from fuzzptx.oracles.hw_worker import CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, _arg_bytes, launch_config
from fuzzptx.oracles.reference import compare, run_program
from support.cluster_kernels import kernel, tensor_kernel


def test_the_launch_config_is_cuda_hs_layout_with_the_cluster_attribute():
    cfg, attrs = launch_config((2, 1, 1), (384, 1, 1), (2, 1, 1), 232448, 0)
    raw = ctypes.string_at(ctypes.addressof(cfg), ctypes.sizeof(cfg))
    assert len(raw) == 56
    assert np.frombuffer(raw[:28], np.uint32).tolist() == [2, 1, 1, 384, 1, 1, 232448]
    assert int.from_bytes(raw[32:40], "little") == 0  # the null stream
    assert int.from_bytes(raw[40:48], "little") == ctypes.addressof(attrs)
    assert int.from_bytes(raw[48:52], "little") == 1
    a = ctypes.string_at(ctypes.addressof(attrs), 72)
    assert int.from_bytes(a[:4], "little") == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION == 4
    assert np.frombuffer(a[8:20], np.uint32).tolist() == [2, 1, 1]


def test_each_argument_is_passed_as_cupy_passes_it():
    class Pointer:
        ptr = 0x7F00DEADBEEF0

    class DeviceArray:
        data = Pointer()

    assert _arg_bytes(DeviceArray()) == (0x7F00DEADBEEF0).to_bytes(8, "little")
    assert _arg_bytes(np.uint32(7)) == b"\x07\x00\x00\x00"
    struct = np.frombuffer(bytes(range(128)), dtype=np.dtype([("bytes", "u1", (128,))]))[0]
    assert _arg_bytes(struct) == bytes(range(128))


def test_the_dry_run_launches_cutlass_cluster_kernels_in_their_clusters(tmp_path):
    from support import hw_kernels

    out = tmp_path / "k.json"
    assert hw_kernels.main(["--dry-run", "--only", "_cluster", "--jobs", "1", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    rows = {r["kernel"].split("/")[-1]: r for r in rec["rows"]}
    assert rows["ws_coop_f16_128x128x64_cluster2x1.ptx"]["cluster"] == [2, 1, 1]
    assert rows["ws_pingpong_e4m3xe5m2_bf16_64x128x128_cluster1x2.ptx"]["cluster"] == [1, 2, 1]
    assert len(rec["launched_in_clusters"]) == 2 and rec["not_launched"] == []
    assert rec["cluster_probes"] == []  # (with --only: the kernels alone)
    for r in rows.values():
        assert r["tensor"]["executed"] == r["tensor"]["of"] == 24 and r["gpu_o3"] == "not run", r
        assert r["reference"] == "ran" or r["reference"].startswith("undefined"), r["reference"]


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["remote-arrive", "tensor-multicast"])
def test_two_cta_kernels_on_the_gpu_give_what_the_reference_gives(which):
    p = kernel() if which == "remote-arrive" else tensor_kernel(3)
    assert p.launch.cluster == (2, 1, 1)
    r = hardware.run_program_on_gpu(p)
    assert r.fault is None, r.fault
    assert compare(p, run_program(p), r.outputs) == []


def test_the_dry_run_runs_the_two_cta_probes_in_the_reference(tmp_path, monkeypatch):
    """Without --only the record carries the two-CTA hand kernels' rows (here: no kernels at all)."""
    from support import hw_kernels

    monkeypatch.setattr(hw_kernels, "kernel_files", lambda: [])
    out = tmp_path / "k.json"
    assert hw_kernels.main(["--dry-run", "--jobs", "1", "--out", str(out)]) == 0
    probes = json.loads(out.read_text())["cluster_probes"]
    assert [(p["probe"], p["cluster"], p["reference"], p["gpu"]) for p in probes] == [
        ("remote-arrive", [2, 1, 1], "ran", "not run"), ("tensor-multicast", [2, 1, 1], "ran", "not run")]


def test_the_cufunction_handle_of_a_raw_kernel_is_its_inner_functions():
    """CuPy's ``RawModule.get_function`` gives a ``RawKernel``, which holds no handle itself: its
    ``kernel`` (a ``cupy.cuda.Function``) does.  The H200 run of the cluster probes failed on
    ``RawKernel.ptr``."""
    from types import SimpleNamespace

    from fuzzptx.oracles.hw_worker import cu_function

    function = SimpleNamespace(ptr=0x7F00DEAD)
    assert cu_function(SimpleNamespace(kernel=function)) == 0x7F00DEAD  # a RawKernel
    assert cu_function(function) == 0x7F00DEAD  # a Function
