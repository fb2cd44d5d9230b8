"""The hardware judge: argument packing, fault names, clean unavailability, and (gpu) real runs."""
from __future__ import annotations

import numpy as np
import pytest

from fuzzptx import isa
from fuzzptx.builders import KernelBuilder, wgmma_program
from fuzzptx.data import buffer_bytes
from fuzzptx.oracles import hardware
from fuzzptx.oracles.hw_worker import classify
from support import dense_wgmma


def test_program_args_follow_parameter_order_and_header_bytes():
    f = next(f for f in isa.forms("wgmma") if f.atype == "f16" and f.a_source == "reg" and f.shape.n == 8)
    p = wgmma_program(f, scale_d="pred", pred_value=True, seed=9)
    args = hardware.program_args(p)
    assert [a.name for a in args] == ["a", "b", "c", "d", "sd"]
    assert args[0].data == buffer_bytes(p.buffer("a")).tobytes()
    assert [a.output for a in args] == [False, False, False, True, False]
    assert (args[4].ctype, args[4].value, args[4].data) == ("uint32", 1, None)


@pytest.mark.parametrize("text,fault,poisoned", [
    ("CUDARuntimeError: cudaErrorIllegalInstruction: an illegal instruction was encountered", "illegal instruction", True),
    ("CUDADriverError: CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address", "misaligned address", True),
    ("CUDARuntimeError: cudaErrorLaunchFailure: unspecified launch failure", "trap", True),
    ("CUDARuntimeError: cudaErrorIllegalAddress: an illegal memory access was encountered", "illegal address", True),
    ("CUDADriverError: CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid", None, False),
    ("CUDADriverError: CUDA_ERROR_NOT_FOUND: named symbol not found", None, False),
])
def test_fault_classification(text, fault, poisoned):
    name, poison = classify(RuntimeError(text))
    assert poison == poisoned
    if fault is None:
        assert name.startswith("load error")
    else:
        assert name == fault


def test_unavailable_is_one_clean_error():
    reason = hardware.gpu_available()
    if reason is None:
        pytest.skip("a GPU is available here")
    assert isinstance(reason, str) and "\n" not in reason
    p = KernelBuilder().build()
    with pytest.raises(hardware.HardwareUnavailable) as ei:
        hardware.run_program_on_gpu(p, cubin=b"")
    assert "\n" not in str(ei.value)


def _small_wgmma(**kw):
    f = next(f for f in isa.forms("wgmma") if f.atype == "f16" and f.dtype == "f32" and f.a_source == "desc"
             and f.shape.n == 16)
    return dense_wgmma.Case(f.key, tuple(sorted(dict(a_swizzle="128B", b_swizzle="none", a_major="K", b_major="MN",
                                                   scale_d=True, scale_a=1, scale_b=-1).items())),
                         "small_int", 11, 2, False)


def _trap_program(kind: str):
    kb = KernelBuilder("bad")
    out = kb.buffer("o", "u32", 128, init="zeros", output=True)
    if kind == "trap":
        kb.emit("trap")
    else:  # spin forever
        loop = kb.new_label()
        kb.place(loop)
        kb.emit("bra.uni", loop)
    kb.store_fragment(out, (kb.tid(),), ".b32")
    return kb.build()


@pytest.mark.gpu
def test_wgmma_on_gpu_matches_the_layout_model():
    case = _small_wgmma()
    p = case.program()
    r = hardware.run_program_on_gpu(p)
    assert r.fault is None
    assert dense_wgmma.direct_check(case, p, r.outputs) is None


@pytest.mark.gpu
def test_worker_survives_trap_and_hang():
    case = _small_wgmma()
    good = case.program()
    with hardware.HardwareWorker(timeout=5.0) as w:
        first = w.run(good)
        trapped = w.run(_trap_program("trap"))
        hung = w.run(_trap_program("hang"), timeout=3.0)
        again = w.run(good)
        assert trapped.fault == "trap"
        assert hung.fault == "timeout"
        assert w.restarts >= 2
    assert first.fault is None and again.fault is None
    assert first.outputs == again.outputs
    assert dense_wgmma.direct_check(case, good, again.outputs) is None
    assert np.frombuffer(again.outputs["d"], np.float32).any()


@pytest.mark.gpu
def test_worker_pinned_to_a_missing_device_is_cleanly_unavailable():
    w = hardware.HardwareWorker(device=99)
    with pytest.raises(hardware.HardwareUnavailable) as ei:
        w.start()
    assert "\n" not in str(ei.value)


@pytest.mark.gpu
def test_worker_leaves_quietly_after_a_fault(capfd):
    """After a trap the worker exits by itself, without CuPy's finalisers printing CUDA errors
    ("Exception ignored ...") for every array on the poisoned context."""
    import multiprocessing

    from fuzzptx.oracles import hw_worker

    p = _trap_program("trap")
    cubin, kernel, err = hardware._compile(p)
    assert err is None
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=hw_worker.main, args=(child, 0), daemon=True)
    proc.start()
    child.close()
    assert parent.recv()[0] == "ready"
    la = p.launch
    parent.send(("cubin", "k", cubin))
    parent.send(("run", hw_worker.Job(0, "k", kernel, la.grid, la.block, la.dynamic_smem, hardware.program_args(p))))
    reply = parent.recv()
    proc.join(30)
    assert reply[3] == "trap" and proc.exitcode == 0
    stderr = capfd.readouterr().err
    assert "Exception ignored" not in stderr and "Traceback" not in stderr


@pytest.mark.parametrize("env,mode", [(None, "block"), ("spin", "spin"), ("yield", "yield"), ("nonsense", "block")])
def test_sync_mode_defaults_to_a_blocking_wait(monkeypatch, env, mode):
    from fuzzptx.oracles import hw_worker

    if env is None:
        monkeypatch.delenv("FUZZPTX_GPU_SYNC", raising=False)
    else:
        monkeypatch.setenv("FUZZPTX_GPU_SYNC", env)
    assert hw_worker.sync_mode() == mode


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["spin", "block"])
def test_worker_waits_as_asked_and_gives_the_same_outputs(monkeypatch, mode):
    case = _small_wgmma()
    good = case.program()
    monkeypatch.setenv("FUZZPTX_GPU_SYNC", mode)
    with hardware.HardwareWorker(timeout=10.0) as w:
        info = w.start()
        r = w.run(good)
    assert info["sync"] == mode  # the driver took the flag (else "driver default (...)")
    assert r.fault is None
    assert dense_wgmma.direct_check(case, good, r.outputs) is None
