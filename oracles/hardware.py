"""The hardware judge: run a Program's cubin on an sm_90a GPU and return its output bytes.

The GPU is driven from a separate ``spawn``-ed worker process (``hw_worker``) that
owns the CUDA context: a trap or illegal instruction poisons a context, and a hung
kernel never returns, so neither may happen in the campaign's own process.  The
parent keeps a watchdog on every job; a fault or a timeout kills the worker and the
next job starts a fresh one.  Buffers are filled exactly as the program header says
(``fuzzptx.data.buffer_bytes``), the same bytes the reference sees; each ``TENSORMAP:`` parameter
is encoded in the worker by the driver's ``cuTensorMapEncodeTiled`` over its buffer's device
pointer and passed by value (``hw_worker.encode_tensormap``).

``run_program_on_gpu`` is one-shot (starts and stops a worker); campaigns hold one
``HardwareWorker`` and submit many programs.
"""
from __future__ import annotations

import functools
import glob
import hashlib
import multiprocessing
import re
import time
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from fuzzptx.errors import FuzzptxError
from fuzzptx.program import TMAP_INTERLEAVES, TMAP_L2, TMAP_OOB, TMAP_SWIZZLES, TMAP_TYPES, Program, TensorMap

from . import hw_worker
from .hw_worker import Arg, Job, TensorMapArg
from fuzzptx.data import buffer_bytes
from fuzzptx.ptx.smem import var_bytes
from .ptxas import compile_ptx

__all__ = ["HwResult", "HardwareUnavailable", "HardwareWorker", "gpu_available", "run_program_on_gpu",
           "program_args"]

_SCALAR_CTYPES = {".u32": "uint32", ".s32": "int32", ".b32": "uint32", ".u64": "uint64", ".s64": "int64",
                  ".b64": "uint64", ".u16": "uint16", ".s16": "int16", ".b16": "uint16", ".u8": "uint8",
                  ".s8": "int8", ".b8": "uint8",
                  # a float parameter's PARAM value is its bits (the reference reads it so): the same
                  # bytes reach the kernel through an unsigned integer of its width
                  ".f32": "uint32", ".f64": "uint64", ".f16": "uint16", ".bf16": "uint16"}


class HardwareUnavailable(FuzzptxError):
    """No GPU judge here: no CuPy, no CUDA device, or a device without sm_90a."""


@dataclass(frozen=True)
class HwResult:
    """What the GPU did: output buffers (name -> bytes) or a fault ("trap", "timeout", ...)."""

    outputs: dict[str, bytes] = field(default_factory=dict)
    fault: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.fault is None


@functools.lru_cache(maxsize=1)
def gpu_available() -> str | None:
    """None when this machine can run sm_90a kernels through CuPy, else the reason why not.

    The probe runs in a short-lived worker process (cached per process), so the caller
    never initialises CUDA itself and can still fork CPU pools safely.
    """
    import importlib.util

    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed (pip install 'fuzzptx[gpu]')"
    w = HardwareWorker()
    try:
        w.start()
    except HardwareUnavailable as exc:
        return str(exc)
    finally:
        w.close()
    return None


def program_args(program: Program) -> tuple[Arg, ...]:
    """The launched kernel's arguments in parameter order, filled from the header."""
    fn = program.module.function(program.launch.kernel)
    buffers = {b.name: b for b in program.buffers}
    scalars = dict(program.scalars)
    tmaps = {t.name: t for t in program.tensormaps if not _embedded(t, scalars)}
    inside: dict[str, list[TensorMap]] = {}
    for t in program.tensormaps:
        if _embedded(t, scalars):
            inside.setdefault(t.name, []).append(t)
    args = []
    for p in fn.params:
        if p.name in tmaps:
            args.append(Arg(p.name, tensormap=tensormap_arg(tmaps[p.name])))
        elif p.name in buffers:
            b = buffers[p.name]
            args.append(Arg(p.name, buffer_bytes(b).tobytes(), b.output))
        elif p.name in scalars:
            if p.dims:  # a by-value struct: its PARAM value is its bytes as one little-endian integer
                if None in p.dims:
                    raise HardwareUnavailable(f"parameter {p.name} is an array of no size ({p.type}[])")
                size = var_bytes(p.type, p.dims)
                args.append(Arg(p.name, raw=(scalars[p.name] & ((1 << (8 * size)) - 1)).to_bytes(size, "little"),
                                embedded=tuple((t.at, tensormap_arg(t)) for t in inside.get(p.name, ())),
                                pointers=tuple((b.at, b.name) for b in program.buffers if b.param == p.name)))
                continue
            ctype = _SCALAR_CTYPES.get(p.type)
            if ctype is None:
                raise HardwareUnavailable(f"scalar parameter {p.name} of type {p.type} is not supported")
            args.append(Arg(p.name, None, False, ctype, scalars[p.name]))
        else:
            raise HardwareUnavailable(f"kernel parameter {p.name} has no BUFFER or PARAM line")
    params = {p.name for p in fn.params}
    # buffers no parameter passes (behind a tensor map or a struct's pointer): allocated first of all
    hidden = tuple(Arg(b.name, buffer_bytes(b).tobytes(), b.output, hidden=True) for b in program.buffers
                   if b.name not in params)
    return hidden + tuple(args)


def _embedded(t: TensorMap, scalars: dict[str, int]) -> bool:
    """A map inside a by-value struct whose other bytes a PARAM line gives (placed at ``t.at``)."""
    return t.name in scalars


def tensormap_arg(t: TensorMap) -> TensorMapArg:
    """A header's tensor map as ``cuTensorMapEncodeTiled``'s arguments (the header's vocabularies are in
    the driver's enum order)."""
    return TensorMapArg(t.buffer, t.offset, TMAP_TYPES.index(t.type), t.dims, t.strides, t.box, t.element_strides,
                        TMAP_INTERLEAVES.index(t.interleave), TMAP_SWIZZLES.index(t.swizzle), TMAP_L2.index(t.l2),
                        TMAP_OOB.index(t.oob))


def _compile(program: Program) -> tuple[bytes | None, str, str | None]:
    """(cubin, kernel name inside it, rejection text) via the ptxas judge."""
    res = compile_ptx(program.to_ptx(), arch=program.module.target, want_cubin=True)
    if not res.accepted or res.cubin is None:
        first = res.errors()[0].message if res.errors() else res.stderr.strip()[:200]
        return None, program.launch.kernel, f"ptxas rejected: {first}"
    return res.cubin, res.kernel_map().get(program.launch.kernel, program.launch.kernel), None


class HardwareWorker:
    """One long-lived GPU worker process; submit many programs, survive faults and hangs.

    ``device`` is the CUDA device index (as this process sees it); the worker pins itself
    to that GPU alone (``CUDA_VISIBLE_DEVICES``), so one worker per GPU scales a campaign.

    ``run``/``run_many`` return one ``HwResult`` per program.  After a fault the
    worker process is replaced (``restarts`` counts that); a job that outlives
    ``timeout`` seconds is reported as ``fault="timeout"`` and its worker killed.
    """

    def __init__(self, timeout: float = 20.0, start_timeout: float = 120.0, device: int = 0):
        self.device = device
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.info: dict = {}
        self.restarts = 0
        self._proc = None
        self._conn = None
        self._stop_sent = False
        self._sent: dict[str, None] = {}  # cubin keys the worker holds (FIFO, CUBIN_CACHE long)
        self._next_id = 0

    # ------------------------------------------------------------ lifecycle

    def start(self) -> dict:
        """Start the worker (if not running); returns device info or raises HardwareUnavailable."""
        if self._proc is not None and self._proc.is_alive():
            return self.info
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=hw_worker.main, args=(child, self.device), daemon=True,
                           name=f"fuzzptx-hw{self.device}")
        proc.start()
        child.close()
        if not parent.poll(self.start_timeout):
            proc.kill()
            raise HardwareUnavailable(f"GPU worker did not start within {self.start_timeout:.0f} s")
        try:
            kind, payload = parent.recv()
        except EOFError:
            proc.join(5)
            raise HardwareUnavailable(f"GPU worker died at start (exit code {proc.exitcode})") from None
        if kind != "ready":
            proc.join(5)
            raise HardwareUnavailable(str(payload))
        self._proc, self._conn, self.info = proc, parent, payload
        self._sent = {}
        self._stop_sent = False
        return self.info

    def request_stop(self) -> None:
        """Ask the worker to exit without waiting for it (``close`` waits): closing many workers
        asks them all first, so their CUDA teardowns overlap instead of adding up."""
        if self._proc is None or self._stop_sent:
            return
        try:
            self._conn.send(("stop",))
        except (OSError, BrokenPipeError):
            pass
        self._stop_sent = True

    def close(self) -> None:
        if self._proc is None:
            return
        self.request_stop()
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
        self._proc = self._conn = None

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(10)
        self._proc = self._conn = None
        self.restarts += 1

    def __enter__(self) -> "HardwareWorker":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ jobs

    def scrub(self, pattern: int, timeout: float | None = None) -> str | None:
        """Fill every SM's shared memory with the 32-bit ``pattern`` (``hw_worker.SCRUB_PTX``); None
        when done, else the fault (a fault that poisoned the context restarts the worker)."""
        self.start()
        try:
            self._conn.send(("scrub", pattern & 0xFFFFFFFF))
        except (OSError, BrokenPipeError):
            self._kill()
            return "worker died"
        if not self._conn.poll(timeout or self.timeout):
            self._kill()
            return "timeout"
        try:
            _, fault, _seconds = self._conn.recv()
        except EOFError:
            self._kill()
            return "worker died"
        if fault is not None and (_poisoning(fault) or not self._proc.is_alive()):
            self._kill()
        return fault

    def run(self, program: Program, *, cubin: bytes | None = None, kernel: str | None = None,
            timeout: float | None = None) -> HwResult:
        """Run one program (compiled here with the ptxas judge when ``cubin`` is None)."""
        return self.run_many([(program, cubin, kernel)], timeout=timeout)[0]

    def run_many(self, items: Iterable[tuple[Program, bytes | None, str | None]],
                 timeout: float | None = None) -> list[HwResult]:
        """Run (program, cubin or None, kernel name in the cubin or None) items in order.

        Items sharing one cubin (a batch module of many kernels) load it once.
        """
        out = []
        for program, cubin, kernel in items:
            if cubin is None:
                cubin, kernel, err = _compile(program)
                if err:
                    out.append(HwResult({}, err, 0.0))
                    continue
            out.append(self._run_one(program, cubin, kernel or program.launch.kernel, timeout or self.timeout))
        return out

    def _run_one(self, program: Program, cubin: bytes, kernel: str, timeout: float) -> HwResult:
        self.start()
        key = hashlib.sha1(cubin).hexdigest()
        la = program.launch
        job = Job(self._next_id, key, kernel, la.grid, la.block, la.dynamic_smem, program_args(program),
                  tuple(getattr(la, "cluster", (1, 1, 1))))
        self._next_id += 1
        t0 = time.perf_counter()
        try:
            if key not in self._sent:
                if len(self._sent) >= hw_worker.CUBIN_CACHE:
                    del self._sent[next(iter(self._sent))]
                self._conn.send(("cubin", key, cubin))
                self._sent[key] = None
            self._conn.send(("run", job))
        except (OSError, BrokenPipeError):
            self._kill()
            return HwResult({}, "worker died", time.perf_counter() - t0)
        if not self._conn.poll(timeout):
            self._kill()
            return HwResult({}, "timeout", time.perf_counter() - t0)
        try:
            _, job_id, outputs, fault, seconds = self._conn.recv()
        except EOFError:
            self._kill()
            return HwResult({}, "worker died", time.perf_counter() - t0)
        if fault is not None and (_poisoning(fault) or not self._proc.is_alive()):
            self._kill()
        return HwResult(outputs or {}, fault, seconds)


def _poisoning(fault: str) -> bool:
    return not fault.startswith("load error")


def run_program_on_gpu(program: Program, *, cubin: bytes | None = None, kernel: str | None = None,
                       timeout: float = 20.0) -> HwResult:
    """Compile (unless ``cubin`` is given), run once on the GPU in a fresh worker, return outputs.

    Raises ``HardwareUnavailable`` (one line, no traceback at the CLI) without a usable GPU.
    """
    with HardwareWorker(timeout=timeout) as w:
        return w.run(program, cubin=cubin, kernel=kernel)


def run_programs_on_gpu(items: Sequence[tuple[Program, bytes | None, str | None]], *,
                        timeout: float = 20.0) -> tuple[list[HwResult], dict]:
    """Many programs through one worker; returns (results, device info)."""
    with HardwareWorker(timeout=timeout) as w:
        return w.run_many(items), dict(w.info, restarts=w.restarts)


def visible_gpu_count() -> int:
    """NVIDIA GPUs this machine shows (``/dev/nvidiaN``), without starting CUDA: safe before a
    process forks its CPU pool or pins an xdist worker to a GPU."""
    return len([p for p in glob.glob("/dev/nvidia*") if re.fullmatch(r"/dev/nvidia\d+", p)])
