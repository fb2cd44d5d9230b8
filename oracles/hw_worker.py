"""The GPU side of the hardware judge: a child process that owns the CUDA context.

Runs in a ``spawn``-ed process (never imported for its side effects by the
parent).  It receives jobs over a pipe, loads cubins with CuPy ``RawModule``
(cached by key), allocates and fills buffers, launches, synchronises and sends
back the output bytes, one reply per job.  A launch fault (trap, illegal
instruction, bad address) poisons the CUDA context, so after replying with the
fault the worker exits at once (no finalisers: they would print CUDA errors); the parent
starts a fresh one.

Messages parent -> worker: ``("run", job)`` with ``job`` a ``Job``; ``("cubin", key,
bytes)`` before the first job that uses ``key``; ``("stop",)``.  Both sides keep the
last ``CUBIN_CACHE`` cubins in arrival order (FIFO), so the parent knows which keys the
worker still holds without asking, and a long campaign's temp files stay bounded.
Worker -> parent: ``("ready", info)`` or ``("unavailable", reason)`` once, then
``("result", job_id, outputs | None, fault | None, seconds)`` per job.
"""
from __future__ import annotations

import functools
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from fuzzptx.perf import die_with_parent

CUBIN_CACHE = 32

# CUDA error names (driver CUDA_ERROR_X_Y and runtime cudaErrorXY spellings both match once
# upper-cased with underscores dropped) -> the short fault names the judge reports.
_FAULTS = (
    ("ILLEGALINSTRUCTION", "illegal instruction"),
    ("MISALIGNEDADDRESS", "misaligned address"),
    ("ILLEGALADDRESS", "illegal address"),
    ("INVALIDADDRESSSPACE", "invalid address space"),
    ("INVALIDPC", "invalid pc"),
    ("HARDWARESTACKERROR", "hardware stack error"),
    ("ASSERT", "trap"),
    ("LAUNCHFAIL", "trap"),  # a `trap` instruction reports "unspecified launch failure"
    ("UNSPECIFIEDLAUNCHFAILURE", "trap"),
    ("LAUNCHTIMEOUT", "timeout"),
)
# Errors that leave the context usable (the kernel never ran).
# A grid that is no multiple of a kernel's .reqnctapercluster is refused at launch (INVALID_CLUSTER_SIZE).
_BENIGN = ("INVALIDIMAGE", "NOBINARYFORGPU", "NOTFOUND", "INVALIDVALUE", "OUTOFRESOURCES",
           "INVALIDPTX", "UNSUPPORTEDPTXVERSION", "SHAREDOBJECT", "INVALIDSOURCE", "INVALIDCLUSTERSIZE",
           "CLUSTEROUTOFRESOURCES")


@dataclass(frozen=True)
class TensorMapArg:
    """What ``cuTensorMapEncodeTiled`` takes for one tensor-map parameter, as the driver's enums and
    lists (``fuzzptx.program.TensorMap`` turned into numbers by ``hardware.program_args``); the
    global address is the device pointer of ``buffer`` plus ``offset``, known only in the worker."""

    buffer: str
    offset: int
    dtype: int  # CUtensorMapDataType
    dims: tuple[int, ...]
    strides: tuple[int, ...]  # bytes, dimensions 1..rank-1
    box: tuple[int, ...]
    estrides: tuple[int, ...]
    interleave: int  # CUtensorMapInterleave
    swizzle: int  # CUtensorMapSwizzle
    l2: int  # CUtensorMapL2promotion
    oob: int  # CUtensorMapFloatOOBfill


@dataclass(frozen=True)
class Arg:
    """One kernel argument: a buffer (``data`` = initial bytes), a scalar (``ctype``, ``value``) or a
    tensor map (``tensormap``: 128 bytes passed by value, encoded in the worker)."""

    name: str
    data: bytes | None = None
    output: bool = False
    ctype: str = ""  # numpy dtype name of a scalar: "uint32", "int64", ...
    value: int = 0
    tensormap: TensorMapArg | None = None
    raw: bytes | None = None  # a by-value struct (CUTLASS's Params, CuTe's shapes): its bytes, passed as they are
    # tensor maps inside that struct: (byte offset, map), each encoded in the worker over its buffer
    embedded: tuple[tuple[int, TensorMapArg], ...] = ()
    # buffers whose device address goes inside that struct: (byte offset, buffer name)
    pointers: tuple[tuple[int, str], ...] = ()
    # a buffer no parameter passes (a tensor map's memory, a pointer inside a struct): allocated,
    # filled and read back like the others, reached only through the map or the struct
    hidden: bool = False


# a tensor map as one by-value kernel argument: CuPy (9+) passes a NumPy structured scalar's bytes as
# they are, and the driver places them at the parameter's offset (64-aligned) from the cubin's
# parameter table; checked with CuPy 14.2 on the H100 (tests/hw_records/tma_tensor_h100.json)
TMAP_DTYPE = [("words", "<u8", (16,))]


def encode_tensormap(address: int, t: TensorMapArg) -> bytes:
    """The 128-byte CUtensorMap the driver's ``cuTensorMapEncodeTiled`` makes (ctypes on libcuda; the
    driver API is not wrapped by CuPy).  A refused map raises with CUDA_ERROR_INVALID_VALUE in its
    text: ``classify`` calls that a load error (the context stays usable)."""
    import ctypes

    lib = ctypes.CDLL("libcuda.so.1")
    fn = lib.cuTensorMapEncodeTiled
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p,
                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                   ctypes.c_int]
    rank = len(t.dims)
    raw = (ctypes.c_uint8 * (128 + 64))()  # CUtensorMap is alignas(64)
    at = ctypes.addressof(raw)
    at += -at % 64
    dims = (ctypes.c_uint64 * rank)(*t.dims)
    strides = (ctypes.c_uint64 * max(rank - 1, 1))(*(t.strides or (0,)))
    box = (ctypes.c_uint32 * rank)(*t.box)
    estrides = (ctypes.c_uint32 * rank)(*(t.estrides or (1,) * rank))
    rc = fn(ctypes.c_void_p(at), t.dtype, rank, ctypes.c_void_p(address), dims, strides, box, estrides,
            t.interleave, t.swizzle, t.l2, t.oob)
    if rc != 0:
        raise ValueError(f"CUDA_ERROR_INVALID_VALUE: cuTensorMapEncodeTiled refused the map over {t.buffer} "
                         f"(CUresult {rc})")
    return ctypes.string_at(at, 128)


CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4  # CUlaunchAttributeID (cuda.h)


def _arg_bytes(arg) -> bytes:
    """A kernel argument as the bytes ``cuLaunchKernelEx``'s ``kernelParams`` entry points to: a
    device array's address, a scalar's or a structured scalar's (a tensor map, a by-value struct) own
    bytes -- what CuPy's launch passes for the same argument."""
    import numpy as np

    ptr = getattr(getattr(arg, "data", None), "ptr", None)
    if ptr is not None and not isinstance(arg, np.generic):
        return int(ptr).to_bytes(8, "little")
    return np.asarray(arg).tobytes()


def launch_config(grid, block, cluster, smem: int, stream: int):
    """The ``CUlaunchConfig`` (and the attribute array it points to, kept alive with it) of a launch
    in clusters of ``cluster`` CTAs: cuda.h's layout, one ``CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION``
    attribute (its 64-byte value union's first three words: x, y, z)."""
    import ctypes

    class Attr(ctypes.Structure):
        _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint32 * 16)]

    class Config(ctypes.Structure):
        _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                    ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                    ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                    ("attrs", ctypes.POINTER(Attr)), ("numAttrs", ctypes.c_uint)]

    attrs = (Attr * 1)()
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attrs[0].value[0], attrs[0].value[1], attrs[0].value[2] = cluster
    cfg = Config(*grid, *block, smem, ctypes.c_void_p(stream or None), attrs, 1)
    assert ctypes.sizeof(Attr) == 72 and Config.attrs.offset == 40  # cuda.h's CUlaunchAttribute, CUlaunchConfig
    return cfg, attrs


def cu_function(kernel: Any) -> int:
    """The CUfunction handle of a CuPy kernel: ``RawModule.get_function`` gives a ``RawKernel``,
    whose ``kernel`` is the ``cupy.cuda.Function`` holding it (``ptr``); a ``Function`` is its own."""
    inner = getattr(kernel, "kernel", kernel)
    return int(inner.ptr)


def launch_in_clusters(function: int, grid, block, cluster, smem: int, args: list[bytes], stream: int) -> None:
    """Launch CUfunction ``function`` (CuPy's ``Function.ptr``) over ``grid`` in clusters of
    ``cluster`` CTAs through the driver's ``cuLaunchKernelEx`` (CuPy launches without a cluster
    attribute); ``args``: each parameter's bytes (``_arg_bytes``).  A refused launch raises with the
    CUresult in its text (``classify``)."""
    import ctypes

    lib = ctypes.CDLL("libcuda.so.1")
    cfg, attrs = launch_config(grid, block, cluster, smem, stream)
    bufs = [ctypes.create_string_buffer(a, max(len(a), 8)) for a in args]
    params = (ctypes.c_void_p * max(len(bufs), 1))(*[ctypes.cast(b, ctypes.c_void_p) for b in bufs])
    fn = lib.cuLaunchKernelEx
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    rc = fn(ctypes.byref(cfg), ctypes.c_void_p(function), params, None)
    if rc != 0:
        name = ctypes.c_char_p()
        lib.cuGetErrorName(rc, ctypes.byref(name))
        what = (name.value or b"?").decode()
        raise RuntimeError(f"CUDADriverError: {what}: cuLaunchKernelEx with cluster {cluster} refused (CUresult {rc})")


@dataclass(frozen=True)
class Job:
    job_id: int
    cubin_key: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_smem: int
    args: tuple[Arg, ...]
    cluster: tuple[int, int, int] = (1, 1, 1)  # CTAs per cluster: launched with cuLaunchKernelEx when not 1,1,1


def classify(exc: BaseException) -> tuple[str, bool]:
    """(fault name, context poisoned?) for an exception raised by a load or launch."""
    text = f"{type(exc).__name__}: {exc}"
    key_text = text.upper().replace("_", "").replace(" ", "")
    for key, name in _FAULTS:
        if key in key_text:
            return name, True
    for key in _BENIGN:
        if key in key_text:
            return f"load error: {text[:200]}", False
    return f"error: {text[:200]}", True


def probe() -> str | None:
    """Why this process cannot run sm_90a kernels, or None."""
    try:
        import cupy
    except Exception as exc:
        return f"CuPy not importable ({type(exc).__name__}: {exc})"
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            return "no CUDA device"
        cc = cupy.cuda.Device(0).compute_capability
    except Exception as exc:
        return f"no usable CUDA device ({type(exc).__name__}: {exc})"
    if cc != "90":
        return f"device is sm_{cc}; wgmma needs sm_90a"
    return None


def _device_info() -> dict:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"]
    return {
        "device": name.decode() if isinstance(name, bytes) else str(name),
        "driver": cupy.cuda.runtime.driverGetVersion(),
        "runtime": cupy.cuda.runtime.runtimeGetVersion(),
        "cupy": cupy.__version__,
    }


def pin_device(device: int) -> None:
    """Make ``device`` (an index among the GPUs this process may see) the only visible GPU."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        os.environ["CUDA_VISIBLE_DEVICES"] = ids[device] if device < len(ids) else "-1"
    else:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(device)


def _quit(tmp: str | None, poisoned: bool, before_exit=None) -> None:
    """End the worker.  After a fault that poisoned the context, leave at once (``os._exit``):
    a normal interpreter exit would run CuPy's finalisers, whose CUDA frees fail on the
    poisoned context and print one "Exception ignored" traceback per array to stderr."""
    if tmp is not None:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    if poisoned:
        if before_exit is not None:
            before_exit()
        os._exit(0)


# How a worker waits for its kernel (``FUZZPTX_GPU_SYNC``): CUDA's default for a process with
# fewer contexts than cores is to spin a core until the kernel ends, and a campaign runs many
# workers beside a CPU-bound pool; "block" sleeps on an interrupt instead (the default here).
_SYNC_FLAGS = {"auto": 0, "spin": 1, "yield": 2, "block": 4}  # cudaDeviceSchedule*


def sync_mode() -> str:
    mode = os.environ.get("FUZZPTX_GPU_SYNC", "block")
    return mode if mode in _SYNC_FLAGS else "block"


def set_sync(mode: str) -> str:
    """Set how this process's primary context on device 0 waits (the driver's
    ``cuDevicePrimaryCtxSetFlags``; CuPy does not wrap it).  Returns the mode in effect, in words
    for the worker's ``ready`` info."""
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
        setter = getattr(lib, "cuDevicePrimaryCtxSetFlags_v2", None) or lib.cuDevicePrimaryCtxSetFlags
        dev = ctypes.c_int()
        rc = lib.cuInit(0) or lib.cuDeviceGet(ctypes.byref(dev), 0) or setter(dev, ctypes.c_uint(_SYNC_FLAGS[mode]))
    except (OSError, AttributeError) as exc:
        return f"driver default ({type(exc).__name__})"
    return mode if rc == 0 else f"driver default (CUresult {rc})"


# Fills each SM's shared memory with a 32-bit pattern (``("scrub", pattern)``): the determinism
# check of the compile pairs runs one build twice with other leftovers in shared memory, so output
# bytes read from memory no one wrote show up as a difference instead of passing as results.
SCRUB_PTX = """.version 8.0
.target sm_90a
.address_size 64
.extern .shared .align 16 .b8 fuzzptx_scrub_smem[];
.visible .entry fuzzptx_scrub(.param .u32 pattern, .param .u32 nbytes)
{
    .reg .b32 %r<8>;
    .reg .pred %p;
    ld.param.u32 %r1, [pattern];
    ld.param.u32 %r2, [nbytes];
    mov.u32 %r3, %tid.x;
    shl.b32 %r3, %r3, 2;
    mov.u32 %r4, fuzzptx_scrub_smem;
    mov.u32 %r6, %ntid.x;
    shl.b32 %r6, %r6, 2;
LOOP:
    setp.ge.u32 %p, %r3, %r2;
    @%p bra DONE;
    add.u32 %r5, %r4, %r3;
    st.volatile.shared.u32 [%r5], %r1;
    add.u32 %r3, %r3, %r6;
    bra LOOP;
DONE:
    ret;
}
"""
SCRUB_BYTES = 227 * 1024  # the most dynamic shared memory an sm_90 block may have
_STATIC_SMEM_LIMIT = 48 * 1024  # above this a kernel must opt in to dynamic shared memory


def _scrub(cupy, tmp: str, state: dict, pattern: int) -> None:
    """Run the scrub kernel on every SM (two blocks per SM of the device)."""
    fn = state.get("scrub")
    if fn is None:
        path = os.path.join(tmp, "scrub.ptx")
        with open(path, "w") as fh:
            fh.write(SCRUB_PTX)
        fn = cupy.RawModule(path=path).get_function("fuzzptx_scrub")
        fn.max_dynamic_shared_size_bytes = SCRUB_BYTES
        state["scrub"] = fn
        state["sms"] = cupy.cuda.Device().attributes["MultiProcessorCount"]
    import numpy as np

    fn((2 * state["sms"],), (1024,), (np.uint32(pattern), np.uint32(SCRUB_BYTES)), shared_mem=SCRUB_BYTES)
    cupy.cuda.Device().synchronize()


def main(conn, device: int = 0) -> None:
    """Worker loop (the spawn target); runs on GPU ``device``.  With ``FUZZPTX_HW_PROFILE=DIR``
    set, the loop runs under cProfile and leaves ``DIR/hw_worker_<pid>.prof`` when it stops
    (to see where a GPU worker's CPU time goes)."""
    prof_dir = os.environ.get("FUZZPTX_HW_PROFILE")
    if not prof_dir:
        return _main(conn, device)
    import cProfile

    prof = cProfile.Profile()
    dump = functools.partial(prof.dump_stats, os.path.join(prof_dir, f"hw_worker_{os.getpid()}.prof"))
    try:
        prof.runcall(_main, conn, device, dump)  # (a poisoned context exits at once: dump first)
    finally:
        dump()


def _main(conn, device: int, before_exit=None) -> None:
    die_with_parent()  # a campaign killed by -9 takes its GPU worker along
    pin_device(device)
    reason = probe()
    if reason is not None:
        conn.send(("unavailable", reason))
        return
    import cupy
    import numpy as np

    sync = set_sync(sync_mode())

    conn.send(("ready", dict(_device_info(), index=device, sync=sync)))
    tmp = tempfile.mkdtemp(prefix="fuzzptx-hw-")
    cubins: dict[str, str] = {}  # insertion-ordered: FIFO eviction mirrors the parent's
    modules: dict[str, object] = {}
    scrub_state: dict = {}
    serial = 0
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return _quit(tmp, False)
        if msg[0] == "stop":
            return _quit(tmp, False)
        if msg[0] == "scrub":
            t0 = time.perf_counter()
            try:
                _scrub(cupy, tmp, scrub_state, msg[1])
            except Exception as exc:
                fault, poisoned = classify(exc)
                conn.send(("scrubbed", fault, time.perf_counter() - t0))
                if poisoned:
                    return _quit(tmp, True, before_exit)
                continue
            conn.send(("scrubbed", None, time.perf_counter() - t0))
            continue
        if msg[0] == "cubin":
            _, key, data = msg
            if len(cubins) >= CUBIN_CACHE:
                old = next(iter(cubins))
                modules.pop(old, None)
                os.unlink(cubins.pop(old))
            path = os.path.join(tmp, f"{serial}.cubin")
            serial += 1
            with open(path, "wb") as fh:
                fh.write(data)
            cubins[key] = path
            continue
        job: Job = msg[1]
        t0 = time.perf_counter()
        try:
            mod = modules.get(job.cubin_key)
            if mod is None:
                mod = modules[job.cubin_key] = cupy.RawModule(path=cubins[job.cubin_key])
            fn = mod.get_function(job.kernel)
        except Exception as exc:
            fault, poisoned = classify(exc)
            conn.send(("result", job.job_id, None, fault, time.perf_counter() - t0))
            if poisoned:
                return _quit(tmp, True, before_exit)
            continue
        try:
            args, outs, arrays = [], {}, {}
            for a in job.args:
                if a.data is not None:
                    arrays[a.name] = cupy.asarray(np.frombuffer(a.data, dtype=np.uint8))
            for a in job.args:
                if a.tensormap is not None:
                    t = a.tensormap
                    enc = encode_tensormap(arrays[t.buffer].data.ptr + t.offset, t)
                    args.append(np.frombuffer(enc, dtype=np.dtype(TMAP_DTYPE))[0])
                elif a.raw is not None:  # like a tensor map: a structured scalar's bytes, placed by the driver
                    raw = bytearray(a.raw)
                    for at, t in a.embedded:
                        raw[at:at + 128] = encode_tensormap(arrays[t.buffer].data.ptr + t.offset, t)
                    for at, name in a.pointers:
                        raw[at:at + 8] = int(arrays[name].data.ptr).to_bytes(8, "little")
                    args.append(np.frombuffer(bytes(raw), dtype=np.dtype([("bytes", "u1", (len(raw),))]))[0])
                elif a.data is None:
                    args.append(np.dtype(a.ctype).type(a.value))
                else:
                    if not a.hidden:
                        args.append(arrays[a.name])
                    if a.output:
                        outs[a.name] = arrays[a.name]
            if job.dynamic_smem > _STATIC_SMEM_LIMIT:
                fn.max_dynamic_shared_size_bytes = job.dynamic_smem
            if job.cluster != (1, 1, 1):
                launch_in_clusters(cu_function(fn), job.grid, job.block, job.cluster, job.dynamic_smem,
                                   [_arg_bytes(a) for a in args], cupy.cuda.get_current_stream().ptr)
            else:
                fn(job.grid, job.block, tuple(args), shared_mem=job.dynamic_smem)
            cupy.cuda.Device().synchronize()
            result = {k: cupy.asnumpy(v).tobytes() for k, v in outs.items()}
        except Exception as exc:
            fault, poisoned = classify(exc)
            conn.send(("result", job.job_id, None, fault, time.perf_counter() - t0))
            if poisoned:
                return _quit(tmp, True, before_exit)
            continue
        conn.send(("result", job.job_id, result, None, time.perf_counter() - t0))
