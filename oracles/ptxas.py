"""The ptxas judge: run the pinned ptxas on PTX text and say what it said, structured.

ptxas comes from the PyPI package nvidia-cuda-nvcc (never from PATH) so every machine
judges with the same build; ``FUZZPTX_PTXAS`` points at another build on purpose.
``compile_batch`` judges many modules with one ptxas run (ptxas start-up dominates
small kernels) and gives the same verdicts as ``compile_ptx`` one by one.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import os
import pathlib
import re
import subprocess
import tempfile
import time
import warnings
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping, Sequence

from fuzzptx.errors import FuzzptxError

from .ptxas_diag import Diagnostic, moved_lines, parse_diagnostics
from .ptxas_merge import ModuleShape, merge, scan, split_stderr, suffixed

__all__ = [
    "Diagnostic", "PtxasResult", "PtxasNotFound", "find_ptxas", "ptxas_version",
    "compile_ptx", "compile_batch", "compile_parallel", "PINNED_VERSION", "TIMEOUT_ENV", "ptxas_timeout", "use_ptxas_timeout",
]

# ptxas's time limit: BASE_TIMEOUT_S plus PER_MB_S per MB of PTX (ptxas -O3 took 140 s on a valid
# 40 MB module: 3.5 s/MB; the limit gives it 460 s), or FUZZPTX_PTXAS_TIMEOUT seconds for any input
TIMEOUT_ENV = "FUZZPTX_PTXAS_TIMEOUT"
BASE_TIMEOUT_S = 60.0
BATCH_TIMEOUT_S = 120.0
PER_MB_S = 10.0

PACKAGE = "nvidia-cuda-nvcc"
PINNED_VERSION = "13.0.88"
ENV_VAR = "FUZZPTX_PTXAS"
_INPUT_NAME = "input.ptx"  # the file name ptxas prints; the same for single and merged runs


class PtxasNotFound(FuzzptxError):
    """No usable ptxas: the package is missing or the override is not executable."""


#: what ptxas says when its register allocator gives up (a resource limit, not a rejection of the program)
ALLOCATION_FAILED = "Register allocation failed"


@dataclass(frozen=True)
class PtxasResult:
    """What ptxas said about one PTX module.

    ``kernel_names`` maps each ``.entry`` name of the input to its name in ``cubin``
    (they differ when the cubin came from a merged batch).  ``shared_cubin`` is true
    when ``cubin`` holds other inputs' kernels too: results whose ``cubin`` is the same
    object share one module (a batch can end up in several modules after retries).  ``seconds`` of a batched result is its share of
    the batch's ptxas run.  ``stderr`` is ptxas's own text for this input.
    """

    accepted: bool
    diagnostics: tuple[Diagnostic, ...]
    cubin: bytes | None
    seconds: float
    returncode: int
    timed_out: bool
    kernel_names: Mapping[str, str] = field(default_factory=lambda: _names(()))
    shared_cubin: bool = False
    stderr: str = ""
    limit: float | None = None  # the seconds ptxas was given (``ptxas_timeout``): a timeout says it

    def timeout_text(self) -> str:
        """What a timed-out run was: never a rejection, and how to allow more time."""
        limit = getattr(self, "limit", None)  # (a verdict pickled before the field existed has none)
        return (f"ptxas did not finish in {limit:g} s" if limit else "ptxas did not finish in time") + \
            f" (a time limit, not a rejection: {TIMEOUT_ENV}=SECONDS or --ptxas-timeout raises it)"

    def moved(self, delta: int) -> "PtxasResult":
        """This verdict for the same body ``delta`` lines further down (a repro's header grew):
        ptxas's line numbers are positions in the file and nothing else depends on them."""
        diags, stderr = moved_lines(self.diagnostics, self.stderr, delta)
        return replace(self, diagnostics=diags, stderr=stderr)

    def codes(self) -> tuple[str, ...]:
        """The C-codes of the diagnostics, in order (e.g. ``("C7519", "C7517")``)."""
        return tuple(d.code for d in self.diagnostics if d.code)

    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")

    def allocation_failed(self) -> bool:
        """Rejected because the register allocator gave up ("Register allocation failed with
        register count of '255'"): a resource limit of ptxas, no verdict on the program's legality."""
        return not self.accepted and any(ALLOCATION_FAILED in d.message for d in self.errors())

    def kernel_map(self) -> dict[str, str]:
        """Input entry name -> name to look up in ``cubin``."""
        return dict(self.kernel_names)

    def kernel(self, name: str) -> str:
        """The name of the input's entry ``name`` inside ``cubin``."""
        return self.kernel_names[name]

    def verdict(self) -> tuple:
        """The judgement alone (no timing, no cubin): equal for batched and single runs."""
        return (self.accepted, self.diagnostics, self.returncode, self.timed_out)


def _names(pairs) -> Mapping[str, str]:
    """A read-only name map (the result is frozen)."""
    return MappingProxyType(dict(pairs))


# ---------------------------------------------------------------- locating ptxas

@functools.lru_cache(maxsize=1)
def _packaged_ptxas() -> pathlib.Path | None:
    try:
        dist = importlib.metadata.distribution(PACKAGE)
        for f in dist.files or ():
            if f.name == "ptxas" and f.parent.name == "bin":
                return pathlib.Path(dist.locate_file(f))
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        import nvidia  # namespace package of NVIDIA's wheels
    except ImportError:
        return None
    for base in getattr(nvidia, "__path__", ()):
        cand = pathlib.Path(base) / "cu13" / "bin" / "ptxas"
        if cand.is_file():
            return cand
    return None


def _executable(p: pathlib.Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def find_ptxas() -> pathlib.Path:
    """The ptxas to run: ``$FUZZPTX_PTXAS`` if set, else the one in nvidia-cuda-nvcc."""
    override = os.environ.get(ENV_VAR)
    if override:
        p = pathlib.Path(override)
        if not _executable(p):
            raise PtxasNotFound(f"{ENV_VAR}={override} is not an executable ptxas "
                                f"(unset it to use the one from PyPI's {PACKAGE})")
    else:
        p = _packaged_ptxas()
        if p is None or not _executable(p):
            raise PtxasNotFound(f"ptxas not found: install {PACKAGE}=={PINNED_VERSION} from PyPI "
                                f"(pip install {PACKAGE}=={PINNED_VERSION}) or set {ENV_VAR}")
    _warn_if_unpinned(str(p))
    return p


@functools.lru_cache(maxsize=None)
def _version_of(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PtxasNotFound(f"{path}: cannot run ptxas --version ({e})") from None
    m = re.search(r"\bV(\d+\.\d+\.\d+)\b", out)
    if not m:
        raise PtxasNotFound(f"{path}: not a ptxas (no version in its --version output)")
    return m[1]


@functools.lru_cache(maxsize=None)
def _warn_if_unpinned(path: str) -> None:
    v = _version_of(path)
    if v != PINNED_VERSION:
        warnings.warn(f"{path} is ptxas {v}; fuzzptx is pinned to {PINNED_VERSION}, "
                      "so its diagnostics may differ from recorded ones", stacklevel=3)


def ptxas_version() -> str:
    """The version of the ptxas ``find_ptxas`` picks, e.g. ``"13.0.88"``."""
    return _version_of(str(find_ptxas()))


# ---------------------------------------------------------------- running it

@dataclass(frozen=True)
class _Run:
    returncode: int
    stderr: str
    cubin: bytes | None
    seconds: float
    timed_out: bool


_TARGET = re.compile(r"^\s*\.target\s+(sm_\w+)", re.MULTILINE)


def arch_of(ptx: str) -> str:
    """The ``-arch`` a module asks for: its first ``.target`` (sm_90a when it names none).

    A module for sm_100a or sm_120a (ldmatrix .b8 shapes, mma .kind::f8f6f4) must be
    assembled for that target; sm_90a would reject it for a reason that is not its own.
    """
    m = _TARGET.search(ptx)
    return m.group(1) if m else "sm_90a"


def _given_ptxas(ptxas: str | os.PathLike) -> pathlib.Path:
    """A ptxas the caller named (another release, ``fuzzptx.oracles.toolchains``): it must run."""
    p = pathlib.Path(ptxas)
    if not _executable(p):
        raise PtxasNotFound(f"{p} is not an executable ptxas")
    return p


def ptxas_timeout(size: int, base: float = BASE_TIMEOUT_S) -> float:
    """Seconds one ptxas run on ``size`` bytes of PTX may take: ``$FUZZPTX_PTXAS_TIMEOUT`` if set,
    else ``base`` plus ``PER_MB_S`` per MB (a big module takes ptxas minutes, and a timeout is no verdict)."""
    env = os.environ.get(TIMEOUT_ENV, "").strip()
    if env:
        try:
            value = float(env)
        except ValueError:
            value = -1.0
        if not value > 0:
            raise FuzzptxError(f"{TIMEOUT_ENV}={env!r}: expected a number of seconds above 0")
        return value
    return base + PER_MB_S * size / 1e6


@contextlib.contextmanager
def use_ptxas_timeout(seconds: float | None):
    """A command's ``--ptxas-timeout SECONDS``: every ptxas run inside gets that limit (through
    ``$FUZZPTX_PTXAS_TIMEOUT``, which processes started inside inherit); None changes nothing."""
    if seconds is None:
        yield
        return
    if not seconds > 0:
        raise FuzzptxError(f"--ptxas-timeout {seconds:g}: expected a number of seconds above 0")
    old = os.environ.get(TIMEOUT_ENV)
    os.environ[TIMEOUT_ENV] = repr(float(seconds))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(TIMEOUT_ENV, None)
        else:
            os.environ[TIMEOUT_ENV] = old


def _run(ptx: str, arch: str | None, opt_level: int, timeout: float, want_cubin: bool,
         extra_args: Sequence[str], ptxas: str | os.PathLike | None = None) -> _Run:
    """One ptxas process on ``ptx``; killed (never waited for) past ``timeout``."""
    exe = find_ptxas() if ptxas is None else _given_ptxas(ptxas)
    arch = arch or arch_of(ptx)
    with tempfile.TemporaryDirectory(prefix="fuzzptx-ptxas-") as d:
        src = pathlib.Path(d) / _INPUT_NAME
        src.write_text(ptx, encoding="utf-8")
        out = pathlib.Path(d) / "out.cubin"
        cmd = [str(exe), f"-arch={arch}", f"-O{opt_level}", *extra_args, _INPUT_NAME,
               "-o", str(out) if want_cubin else os.devnull]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            so, se = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            proc.kill()
            so, se = proc.communicate()
            timed_out = True
        except BaseException:  # e.g. Ctrl-C: leave no ptxas behind
            proc.kill()
            proc.wait()
            raise
        seconds = time.perf_counter() - t0
        rc = proc.returncode
        cubin = out.read_bytes() if want_cubin and rc == 0 and not timed_out and out.exists() else None
    text = (se + so).decode("utf-8", errors="replace")
    return _Run(rc, text, cubin, seconds, timed_out)


def compile_ptx(ptx: str, *, arch: str | None = None, opt_level: int = 3, timeout: float | None = None,
                want_cubin: bool = True, extra_args: Sequence[str] = (),
                ptxas: str | os.PathLike | None = None) -> PtxasResult:
    """Assemble one PTX module (one or more kernels) and parse what ptxas printed.

    ``arch`` defaults to the module's own ``.target`` (see ``arch_of``).  ``ptxas`` is the
    binary to run (default: ``find_ptxas()``, the pinned one).  ``timeout`` (default:
    ``ptxas_timeout``, which grows with the input) bounds the run; past it the result is
    ``timed_out``, not accepted, and says its limit."""
    shape = scan(ptx)
    limit = ptxas_timeout(len(ptx)) if timeout is None else timeout
    r = _run(ptx, arch, opt_level, limit, want_cubin, extra_args, ptxas)
    return PtxasResult(
        accepted=r.returncode == 0 and not r.timed_out,
        diagnostics=parse_diagnostics(r.stderr, shape.spans),
        cubin=r.cubin, seconds=r.seconds, returncode=r.returncode, timed_out=r.timed_out,
        kernel_names=_names((e, e) for e in shape.entries), stderr=r.stderr, limit=limit,
    )


def compile_batch(ptxs: Sequence[str], *, arch: str | None = None, opt_level: int = 3,
                  timeout: float | None = None, want_cubin: bool = False,
                  extra_args: Sequence[str] = (),
                  ptxas: str | os.PathLike | None = None) -> list[PtxasResult]:
    """Judge many modules with as few ptxas runs as possible; result i has the verdict
    ``compile_ptx(ptxs[i])`` would give.

    Inputs with the same header are merged into one module (entries and module
    variables renamed, lines kept), run once, and ptxas's output is cut back per
    input.  A merged run that fails, times out, or prints a line no single input owns
    is retried: inputs that drew errors alone, the rest as a smaller batch, or halves
    (after a timeout, every input alone).
    ``timeout`` bounds each ptxas run (default: ``ptxas_timeout`` of the merged module, from
    ``BATCH_TIMEOUT_S``; an input alone gets ``compile_ptx``'s); with ``-v`` every input runs alone.  With ``want_cubin`` an accepted batched input
    gets the shared module cubin (``shared_cubin``; see ``kernel_names``).  ``ptxas`` as
    for ``compile_ptx``.
    """
    opts = dict(arch=arch, opt_level=opt_level, timeout=timeout, want_cubin=want_cubin,
                extra_args=tuple(extra_args), ptxas=ptxas)
    shapes = [scan(t) for t in ptxs]
    results: list[PtxasResult | None] = [None] * len(ptxs)
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, s in enumerate(shapes):
        groups[s.header].append(i)
    # -v prints module totals ("N bytes gmem") that no single input owns: run singly.
    verbose = any(a in ("-v", "--verbose") for a in extra_args)
    for idxs in groups.values():
        for part in ([[i] for i in idxs] if verbose else [idxs]):
            _judge(list(ptxs), shapes, part, results, opts)
    return results  # type: ignore[return-value]


def _judge(ptxs: list[str], shapes: list[ModuleShape], idxs: list[int],
           results: list[PtxasResult | None], opts: dict) -> None:
    if len(idxs) == 1:
        results[idxs[0]] = compile_ptx(ptxs[idxs[0]], **opts)
        return
    sub = [shapes[i] for i in idxs]
    merged = merge([ptxs[i] for i in idxs], sub, idxs)
    limit = ptxas_timeout(len(merged.text), BATCH_TIMEOUT_S) if opts["timeout"] is None else opts["timeout"]
    r = _run(merged.text, opts["arch"], opts["opt_level"], limit, opts["want_cubin"],
             opts["extra_args"], opts["ptxas"])
    parts = None if r.timed_out else split_stderr(r.stderr, merged, idxs, sub)
    if parts is not None and r.returncode == 0:
        share = r.seconds / len(idxs)
        for k, i in enumerate(idxs):
            text = "".join(line + "\n" for line in parts[k])
            results[i] = PtxasResult(
                accepted=True, diagnostics=parse_diagnostics(text, sub[k].spans),
                cubin=r.cubin, seconds=share, returncode=0, timed_out=False,
                kernel_names=_names((e, suffixed(e, i)) for e in sub[k].entries),
                shared_cubin=r.cubin is not None, stderr=text, limit=limit,
            )
        return
    bad = [] if parts is None else [
        i for k, i in enumerate(idxs)
        if any(d.severity == "error" for d in parse_diagnostics("\n".join(parts[k])))]
    if bad:
        for i in bad:
            results[i] = compile_ptx(ptxs[i], **opts)
        rest = [i for i in idxs if i not in bad]
        if rest:
            _judge(ptxs, shapes, rest, results, opts)
        return
    if r.timed_out:  # halving would wait out the timeout once per level: go single
        for i in idxs:
            results[i] = compile_ptx(ptxs[i], **opts)
        return
    half = len(idxs) // 2
    _judge(ptxs, shapes, idxs[:half], results, opts)
    _judge(ptxs, shapes, idxs[half:], results, opts)


def compile_parallel(ptxs: Sequence[str], *, batch_size: int = 32, jobs: int | None = None,
                     **options) -> list[PtxasResult]:
    """``compile_batch`` over chunks of at most ``batch_size`` (smaller when that keeps
    all ``jobs`` threads busy) on ``jobs`` threads (default: all CPUs); each thread
    waits on its own ptxas process, so threads suffice."""
    jobs = jobs or os.cpu_count() or 1
    size = max(1, min(batch_size, -(-len(ptxs) // jobs)))  # every thread gets work
    chunks = [list(ptxs[i:i + size]) for i in range(0, len(ptxs), size)]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        parts = list(pool.map(lambda c: compile_batch(c, **options), chunks))
    return [r for part in parts for r in part]
