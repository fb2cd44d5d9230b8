"""A launch for plain PTX that reaches its tensor cores, and how much of them a run reached.

A compiler-made kernel has no fuzzptx header; ``fuzzptx.program.inferred_header`` gives it one
(the kernel's block, every pointer a buffer, every scalar 0).  With M = N = K = 0 a matmul runs
its K loop zero times: every judge then compares runs that never touch a tensor core.  This module

- counts a kernel's tensor-core instructions (``sites``: ``wgmma.mma_async``, ``mma``, ``wmma.mma``,
  ``ldmatrix``, ``stmatrix``) and how many of them a reference run executed (``coverage``), so that
  every command can say when a run reached none (``coverage:none``);
- reads a launch a user or a compiler gives (``Given``): a JSON beside the file -- Triton's own
  metadata (``num_warps``, ``shared``, ``tensordesc_meta``) or a small one of ours (``block``,
  ``smem``, ``params``) -- or the same JSON through ``--launch``; else the ``MANIFEST.json`` that
  ``tests/support/triton_corpus.py`` writes (its ``num_warps``);
- searches what is still free (``search``): every integer scalar set to one candidate value --
  the kernel's own constants (tile sizes, loop steps, masks: a power of two, or one less), 64 and
  128 -- (and, for a kernel that declares no block size, one warp as well as one warpgroup), each
  candidate one reference run scored by the tensor-core instructions it executed with no
  out-of-bounds access and no hang; Triton's tensor descriptors become ``TENSORMAP`` lines over
  buffers of the launch's shape; pointer buffers are sized from the bytes the chosen run touched.
  The search has a budget (runs and seconds) and says when it ran out (docs/inputs.md).
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from fuzzptx.errors import FuzzptxError
from fuzzptx.inputs import read_text
from fuzzptx.oracles.reference.blas import single_thread
from fuzzptx.oracles.reference.errors import ReferenceError_, Undefined
from fuzzptx.oracles.reference.memory import Memory
from fuzzptx.oracles.reference.result import RefResult
from fuzzptx.oracles.reference.run import machines, run_ctas
from fuzzptx.oracles.reference.tensormap import DEVICE_TO_DRIVER_TYPE
from fuzzptx.program import (INFERRED, MAGIC, TMAP_BYTES, TMAP_SWIZZLES, TMAP_TYPES, Buffer, Program, ReproError,
                             TensorMap, element_bytes)
from fuzzptx.ptx.ir import Addr, Function, Imm, Module, Reg, Sym, TensorAddr, Vec

COVERAGE_NOTE = "executes"  # the NOTE line that says what the inferred launch reached
SEARCH_NOTE = "launch searched"  # the NOTE line of a header the search chose (a pasted one is not searched again)
SEARCH_BUFFER_BYTES = 1 << 22  # each pointer buffer while searching: room for any tile a CTA reads
DEFAULT_RUNS = 12
DEFAULT_SECONDS = 60.0
DEALIAS_SECONDS = 30.0  # more for setting aliasing strides to 1 after the search


class LaunchError(FuzzptxError):
    """A given launch (``--launch``, a JSON beside the file) that cannot be used."""


# ------------------------------------------------------------------ tensor-core sites and coverage


def site_kind(opcode: str) -> str | None:
    """The tensor-core kind of an instruction (``wgmma`` for ``wgmma.mma_async`` only: its fences,
    commits and waits move no data), else None."""
    base, _, rest = opcode.partition(".")
    if base == "wgmma":
        return "wgmma" if rest.startswith("mma_async") else None
    if base == "wmma":
        return "wmma" if rest.startswith("mma") else None
    return base if base in ("mma", "ldmatrix", "stmatrix") else None


def _called(module: Module, fn: Function) -> list[Function]:
    """``fn`` and the functions it calls, transitively (a call's target is a symbol operand)."""
    names = {f.name for f in module.functions() if f.body}
    out, todo, seen = [], [fn], {fn.name}
    while todo:
        f = todo.pop()
        out.append(f)
        for ins in f.instructions():
            if ins.base == "call":
                for o in ins.operands:
                    if isinstance(o, Sym) and o.name in names and o.name not in seen:
                        seen.add(o.name)
                        todo.append(module.function(o.name))
    return out


def sites(program: Program) -> tuple[tuple[str, int], ...]:
    """(kind, source line) of every tensor-core instruction the launched kernel can run."""
    try:
        fn = program.module.function(program.launch.kernel)
    except KeyError:
        return ()
    out = []
    for f in _called(program.module, fn):
        for ins in f.instructions():
            kind = site_kind(ins.opcode)
            if kind is not None and ins.loc is not None:
                out.append((kind, ins.loc.line))
    return tuple(out)


@dataclass(frozen=True)
class Coverage:
    """How many of a kernel's tensor-core instructions a run executed, by kind."""

    executed: dict[str, int]
    total: dict[str, int]

    @property
    def ran(self) -> int:
        return sum(self.executed.values())

    @property
    def of(self) -> int:
        return sum(self.total.values())

    @property
    def none(self) -> bool:
        """The kernel has tensor-core instructions and the run executed none of them."""
        return self.of > 0 and self.ran == 0

    def text(self) -> str:
        if not self.of:
            return "no tensor-core instructions"
        return ", ".join(f"{self.executed.get(k, 0)} of {n} {k}" for k, n in self.total.items() if n)

    def record(self) -> dict[str, Any]:
        return {"executed": self.ran, "of": self.of,
                "by_kind": {k: [self.executed.get(k, 0), n] for k, n in self.total.items() if n}}


def coverage(program: Program, result: RefResult | None) -> Coverage:
    """The coverage of one reference run of ``program`` (None: the run did not happen, nothing ran)."""
    total: dict[str, int] = {}
    executed: dict[str, int] = {}
    for kind, line in sites(program):
        total[kind] = total.get(kind, 0) + 1
        if result is not None and result.ran(line):
            executed[kind] = executed.get(kind, 0) + 1
    return Coverage({k: executed.get(k, 0) for k in total}, total)


def record_fields(program: Program, verdicts: Any) -> dict[str, Any]:
    """Record fields for a judged program: the file it came from (``source``), its tensor coverage
    in the reference (``tensor``; ``"reference": "did not run"`` when it has no run), and
    ``coverage:none`` among its ``notes`` when the reference ran and reached none of its
    tensor-core instructions: such a run says nothing of the tensor cores, whatever the judges
    agree on."""
    out: dict[str, Any] = {"source": program.source} if program.source is not None else {}
    result = _reference_result(verdicts)
    cov = coverage(program, result)
    if not cov.of:
        return out
    out["tensor"] = cov.record()
    if result is None:  # rejected by ptxas, or past the reference's reach: the row says why
        out["tensor"]["reference"] = "did not run"
    elif cov.none:
        out["notes"] = ["coverage:none"]
    return out


def _reference_result(verdicts: Any) -> RefResult | None:
    """The reference's run among a program's verdicts (None: it did not run)."""
    r = getattr(verdicts, "reference", None) if verdicts is not None else None
    return r if isinstance(r, RefResult) else None


def coverage_row(program: Program, verdicts: Any) -> tuple[str, str, str] | None:
    """The ``coverage`` row of a replay's table: how many of the kernel's tensor-core instructions
    the reference executed (None: the kernel has none)."""
    fields = record_fields(program, verdicts)
    if "tensor" not in fields:
        return None
    cov = coverage(program, _reference_result(verdicts))
    if fields["tensor"].get("reference"):
        return ("coverage", "not run", f"the reference did not run: none of the kernel's {cov.of} "
                                       "tensor-core instruction(s) was checked against it")
    verdict = "coverage:none" if cov.none else f"{cov.ran} of {cov.of}"
    why = " (no judge compared a tensor-core result: change the launch in the header)" if cov.none else ""
    return ("coverage", verdict, f"executed in the reference: {cov.text()}{why}")


def as_written(program: Program) -> str | None:
    """The bytes of the file ``program`` was read from, for the judges to compile as the user wrote
    them (None: a generated program, or the file is gone: emit it)."""
    if program.source is None:
        return None
    try:
        return read_text(program.source, what="PTX file")
    except FuzzptxError:
        return None


# ------------------------------------------------------------------ a launch a user or compiler gives


@dataclass(frozen=True)
class Given:
    """What a user or compiler says of a launch; every field optional."""

    block: tuple[int, int, int] | None = None
    smem: int | None = None
    params: dict[str, int] = field(default_factory=dict)  # parameter name or index -> value
    origin: str = ""
    # Triton's ``tensordesc_meta``: per tensor-descriptor parameter, in order, its block, element
    # type and swizzle (the descriptor's shape is the launch's: see ``_tensormaps``)
    descs: tuple[dict, ...] = ()
    # Triton's ``global_scratch_size``: bytes per CTA of the scratch buffer its kernels take as their
    # second-to-last parameter (device-made tensor maps are written there: a smaller buffer faults)
    scratch: int = 0
    # CTAs per cluster (our ``cluster``; Triton's ``num_ctas``, a cluster along x): the grid is then
    # that one cluster
    cluster: tuple[int, int, int] | None = None

    def __bool__(self) -> bool:
        return (self.block is not None or self.smem is not None or bool(self.params) or bool(self.descs)
                or bool(self.scratch) or self.cluster is not None)


def _as_int(value: Any, what: str, origin: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise LaunchError(f"{what}: expected a number, not {value!r}", origin)
    if isinstance(value, float):
        return int(np.float32(value).view(np.uint32))  # a float parameter's bits
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            try:
                return int(np.float32(float(value)).view(np.uint32))
            except ValueError:
                raise LaunchError(f"{what}: {value!r} is not a number", origin) from None
    return value


def given_from_json(data: Any, origin: str) -> Given:
    """A ``Given`` from Triton's metadata (``num_warps``, ``shared``, ``num_ctas``) or our own JSON
    (``block``, ``smem``, ``cluster``, ``params``: parameter name or index -> value)."""
    if not isinstance(data, dict):
        raise LaunchError("a launch JSON is an object ({\"block\": 128, \"smem\": 0, \"params\": {...}})", origin)
    block = smem = None
    params: dict[str, int] = {}
    if "num_warps" in data:
        block = (32 * _as_int(data["num_warps"], "num_warps", origin), 1, 1)
    if "block" in data:
        block = _triple(data, "block", origin)
    cluster = None
    if int(_as_int(data.get("num_ctas", 1), "num_ctas", origin)) > 1:
        cluster = (_as_int(data["num_ctas"], "num_ctas", origin), 1, 1)
    if "cluster" in data:
        cluster = _triple(data, "cluster", origin)
    if cluster is not None and math.prod(cluster) > 16:
        raise LaunchError(f"cluster: {','.join(map(str, cluster))}: at most 16 CTAs in a cluster", origin)
    for key in ("shared", "smem"):
        if key in data:
            smem = _as_int(data[key], key, origin)
            if smem < 0:
                raise LaunchError(f"{key}: must not be negative", origin)
    raw = data.get("params", data.get("scalars", {}))
    if not isinstance(raw, dict):
        raise LaunchError("params: expected an object of parameter -> value", origin)
    for k, v in raw.items():
        params[str(k)] = _as_int(v, f"params.{k}", origin)
    descs = data.get("tensordesc_meta") or ()
    if not isinstance(descs, (list, tuple)) or not all(isinstance(d, dict) and isinstance(d.get("block_size"), list)
                                                       for d in descs):
        raise LaunchError("tensordesc_meta: expected a list of {block_size, elem_type, swizzle}", origin)
    scratch = _as_int(data.get("global_scratch_size") or 0, "global_scratch_size", origin)
    return Given(block, smem, params, origin, tuple(descs), max(0, scratch), cluster)


def _triple(data: dict, key: str, origin: str) -> tuple[int, int, int]:
    """A launch JSON's ``block`` or ``cluster``: 1 to 3 positive integers (missing ones 1)."""
    b = data[key]
    b = [b] if isinstance(b, (int, str)) else b
    if not isinstance(b, list) or not 1 <= len(b) <= 3:
        raise LaunchError(f"{key}: expected 1 to 3 integers, not {data[key]!r}", origin)
    vals = [_as_int(x, key, origin) for x in b]
    if any(v < 1 for v in vals):
        raise LaunchError(f"{key}: {data[key]!r}: expected positive integers", origin)
    return tuple(vals + [1] * (3 - len(vals)))  # type: ignore[return-value]


def read_given(path: str | Path) -> Given:
    """The launch in a JSON file (``--launch FILE``); one line naming the file for a bad one."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except OSError as exc:
        raise LaunchError(f"cannot read the launch JSON: {exc.strerror or exc}", str(path)) from None
    except ValueError as exc:
        raise LaunchError(f"not JSON: {exc}", str(path)) from None
    return given_from_json(data, str(path))


def parse_launch_option(text: str) -> Given:
    """``--launch``: a JSON object inline, or a JSON file."""
    if text.lstrip().startswith("{"):
        try:
            return given_from_json(json.loads(text), "--launch")
        except ValueError as exc:
            raise LaunchError(f"not JSON: {exc}", "--launch") from None
    return read_given(text)


def beside(ptx_path: str | Path, kernel: str) -> Given:
    """What a compiler left beside a PTX file: ``NAME.json`` (Triton's cache writes its metadata
    so, or a user's launch JSON), else the entry for the file in a ``MANIFEST.json``
    (``tests/support/triton_corpus.py``: its ``num_warps``).  Nothing there: an empty ``Given``."""
    p = Path(ptx_path)
    if not p.is_file():
        return Given()
    side = p.with_suffix(".json")
    if side.is_file():
        try:
            data = json.loads(side.read_text())
        except (OSError, ValueError):
            return Given()
        if isinstance(data, dict) and data.get("name", kernel) == kernel:
            return given_from_json(data, str(side))
        return Given()
    man = p.parent / "MANIFEST.json"
    if man.is_file():
        try:
            data = json.loads(man.read_text())
        except (OSError, ValueError):
            return Given()
        for entry in data.get("kernels", []) if isinstance(data, dict) else []:
            if isinstance(entry, dict) and entry.get("file") == p.name:
                opts = entry.get("options", {}) if isinstance(entry.get("options"), dict) else {}
                meta = {"num_warps": opts["num_warps"]} if "num_warps" in opts else {}
                try:
                    return given_from_json(meta, f"{man}:{p.name}")
                except LaunchError:
                    return Given()
    return Given()


def apply_given(program: Program, given: Given) -> Program:
    """``program`` (an inferred header) with what ``given`` says; a parameter it names that the
    kernel lacks is one line naming where the launch came from."""
    if not given:
        return program
    fn = program.module.function(program.launch.kernel)
    order = [p.name for p in fn.params]
    values = dict(program.scalars)
    named = []
    for key, v in given.params.items():
        name = order[int(key)] if key.isdigit() and int(key) < len(order) else key
        if name not in values:
            raise LaunchError(f"params: {key!r} is no scalar parameter of kernel {fn.name}", given.origin)
        values[name] = v
        named.append(name)
    la = program.launch
    notes = list(program.notes)
    if given.block is not None:
        la = replace(la, block=given.block)
    if given.cluster is not None:
        la = replace(la, grid=given.cluster, cluster=given.cluster)
    if given.smem is not None:
        la = replace(la, dynamic_smem=given.smem)
        notes = [re.sub(r"; dynamic shared memory \d+ bytes \([^)]*\)", "", n) if n.startswith(INFERRED) else n
                 for n in notes]
    said = [f"block {','.join(map(str, given.block))}" if given.block else "",
            f"dynamic shared memory {given.smem} bytes" if given.smem is not None else "",
            f"{len(named)} parameter value(s)" if named else "",
            f"{len(given.descs)} tensor descriptor(s)" if given.descs else "",
            f"cluster {','.join(map(str, given.cluster))}" if given.cluster else ""]
    notes.append(f"launch given by {given.origin}: " + ", ".join(x for x in said if x))
    return replace(program, launch=la, notes=tuple(notes), scalars=tuple((n, values[n]) for n, _ in program.scalars),
                   given=tuple(dict.fromkeys(program.given + tuple(named) + (("block",) if given.block else ())
                                             + (("cluster",) if given.cluster else ()))))


# ------------------------------------------------------------------ the search


class _Tracking(Memory):
    """Memory that remembers how far into each region a run reached (bytes from its base), and how
    many global bytes two different threads stored to (``conflicts``: on the GPU a write-write race,
    whose winner changes from run to run -- every scalar one value makes ``c[m * scm + n * scn]``
    one address for many (m, n))."""

    def resolve(self, space, addr, nbytes, instr, what, *rest, **kw):
        groups = super().resolve(space, addr, nbytes, instr, what, *rest, **kw)
        reach = self.__dict__.setdefault("reach", {})
        tids = rest[0] if rest else kw.get("tids")
        for region, pos, off in groups:
            if off.size:
                end = int(off.max()) + nbytes
                if end > reach.get(region.name, 0):
                    reach[region.name] = end
                if what == "store" and region.space == "global" and tids is not None:
                    self._writers(region, np.asarray(tids)[pos], off, nbytes)
        return groups

    def _writers(self, region, tids: np.ndarray, off: np.ndarray, nbytes: int) -> None:
        table = self.__dict__.setdefault("writer", {})
        w = table.get(region.name)
        if w is None:
            w = table[region.name] = np.full(region.size + 16, -1, np.int64)
        byte = (off.astype(np.int64)[:, None] + np.arange(nbytes)).ravel()
        who = np.repeat(tids.astype(np.int64), nbytes)
        ok = byte < w.size
        byte, who = byte[ok], who[ok]
        order = np.argsort(byte, kind="stable")
        byte, who = byte[order], who[order]
        same = (byte[1:] == byte[:-1]) & (who[1:] != who[:-1])  # two threads of this store, one byte
        prev = w[byte]
        clash = int(((prev >= 0) & (prev != who)).sum()) + int(same.sum())
        if clash:
            self.__dict__["conflicts"] = self.__dict__.get("conflicts", 0) + clash
        w[byte] = who


@dataclass(frozen=True)
class Trial:
    """One reference run of a candidate launch."""

    value: int | None
    coverage: Coverage
    error: str | None  # why the run stopped short (an out-of-bounds access, a hang, ...)
    reach: dict[str, int]  # buffer name -> bytes from its start the run touched
    seconds: float
    conflicts: int = 0  # global bytes stored by two different threads (a race on the GPU)

    def score(self) -> tuple:
        return (self.error is None, self.coverage.ran, -self.conflicts)


def trial(program: Program, value: int | None = None) -> Trial:
    """Run ``program`` once in the reference, noting coverage and how far each buffer was touched."""
    t0 = time.perf_counter()
    error = None
    m = None
    result = None
    old = np.seterr(all="ignore")
    ctas: list = []
    try:
        ctas = machines(program, program.numerics, _Tracking)
        m = ctas[0]
        with single_thread():
            run_ctas(ctas)
    except Undefined:
        pass  # the outcome is left free from here on; what ran so far still ran
    except ReferenceError_ as exc:
        error = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - a crash of the reference is this candidate's loss
        error = f"internal error: {type(exc).__name__}: {exc}"
    finally:
        np.seterr(**old)
    reach: dict[str, int] = {}
    if m is not None:
        result = RefResult({}, None, (), sum(c.steps for c in ctas), frozenset(),
                           frozenset().union(*(c.blocks_run for c in ctas)))
        for c in ctas:  # the CTAs of a cluster share the buffers: the farthest any reached
            for k, v in getattr(c.mem, "reach", {}).items():
                reach[k] = max(reach.get(k, 0), v)
    conflicts = sum(int(getattr(c.mem, "conflicts", 0)) for c in ctas)
    return Trial(value, coverage(program, result), error, reach, time.perf_counter() - t0, conflicts)


_FLOATS = {".f32": 0x3F800000, ".f64": 0x3FF0000000000000, ".f16": 0x3C00, ".bf16": 0x3F80}


def candidates(fn: Function, limit: int = 8) -> list[int]:
    """Values to try for every integer scalar: the kernel's own tile sizes, loop steps and masks
    (an immediate that is a power of two from 16 to 512, or one less; the ``limit`` most frequent),
    with 64 and 128: those from 64 up first (a tile's worth of data: M = N = K = 64 runs a K loop
    of tile 64 once), then the smaller ones, then 1."""
    seen: dict[int, int] = {}
    for ins in fn.instructions():
        for o in ins.operands:
            if isinstance(o, Imm) and isinstance(o.value, int) and not isinstance(o.value, bool):
                for v in (o.value, o.value + 1):
                    if 16 <= v <= 512 and v & (v - 1) == 0:
                        seen[v] = seen.get(v, 0) + 1
    vals = set(sorted(seen, key=lambda v: -seen[v])[:limit]) | {64, 128}
    return sorted(v for v in vals if v >= 64) + sorted((v for v in vals if v < 64), reverse=True) + [1]


def _with_value(program: Program, fn: Function, value: int, free: set[str]) -> Program:
    """Every free scalar set from ``value``: an integer to it, a float to 1.0, a by-value array to
    32-bit words of it (a struct of ints: CuTe's shapes and strides)."""
    by_name = {p.name: p for p in fn.params}
    out = []
    for name, old in program.scalars:
        p = by_name.get(name)
        if name not in free or p is None:
            out.append((name, old))
        elif p.dims:
            size = max(1, math.prod(d or 0 for d in p.dims) * _type_bytes(p.type))
            words = (size + 3) // 4
            packed = sum((value & 0xFFFFFFFF) << (32 * i) for i in range(words))
            out.append((name, packed & ((1 << (8 * size)) - 1)))
        elif p.type in _FLOATS:
            out.append((name, _FLOATS[p.type]))
        else:
            out.append((name, value))
    return replace(program, scalars=tuple(out))


# Triton's ``elem_type`` is its device-side code (tensormap.replace's); the driver's (``TMAP_TYPES`` order)
# differs for three (triton/backends/nvidia/driver.py, TMA_DTYPE_DEVICE_TO_HOST)
_TRITON_TO_DRIVER = DEVICE_TO_DRIVER_TYPE
_MAP_BUFFER = {"f32.ftz": "f32", "tf32": "f32", "tf32.ftz": "f32"}  # a map type's buffer type, where they differ


def _desc_slots(fn: Function, descs: tuple[dict, ...]) -> dict[str, tuple[dict, str]]:
    """Tensor-descriptor parameter -> (its ``tensordesc_meta`` entry, the parameter whose buffer backs
    it).  Triton passes a descriptor as the 128-byte map, then its shape (rank u32) and strides (rank
    u64), which the kernel does not read: the first stride parameter carries the buffer."""
    if not descs:
        return {}
    params = list(fn.params)
    slots = [i for i, p in enumerate(params) if p.dims == (TMAP_BYTES,) and p.type == ".b8"]
    out: dict[str, tuple[dict, str]] = {}
    for i, meta in zip(slots, descs):
        rank = len(meta["block_size"])
        j = i + 1 + rank
        if j < len(params) and params[j].type in (".u64", ".b64", ".s64") and not params[j].dims:
            out[params[i].name] = (meta, params[j].name)
    return out


def _tensormaps(program: Program, maps: dict[str, tuple[dict, str]], value: int) -> Program:
    """``program`` with a TENSORMAP for each descriptor of ``maps``: its block, type and swizzle as
    Triton says, every dimension ``value`` (at least the block), rows 16-byte aligned, over a buffer
    of that shape (random, of the map's type, compared as an output: a TMA store writes it)."""
    if not maps:
        return program
    tmaps, backing = [], {}
    for name, (meta, buf) in maps.items():
        ttype = TMAP_TYPES[_TRITON_TO_DRIVER.get(int(meta.get("elem_type", 6)), int(meta.get("elem_type", 6)))]
        swz = TMAP_SWIZZLES[int(meta.get("swizzle", 0))]
        box = tuple(int(b) for b in reversed(meta["block_size"]))
        dims = tuple(max(value, b) for b in box)
        eb = element_bytes(_MAP_BUFFER.get(ttype, ttype))
        strides, row = [], -(-dims[0] * eb // 16) * 16
        for d in dims[1:]:
            strides.append(row)
            row *= d
        tmaps.append(TensorMap(name, buf, ttype, dims, tuple(strides), box, swizzle=swz))
        backing[buf] = (_MAP_BUFFER.get(ttype, ttype), max(1, row // eb))
    buffers = tuple(replace(b, type=backing[b.name][0], count=backing[b.name][1]) if b.name in backing else b
                    for b in program.buffers)
    scalars = tuple((n, v) for n, v in program.scalars if n not in maps)
    return replace(program, buffers=buffers, scalars=scalars, tensormaps=tuple(tmaps))


# ------------------------------------------------------------------ tensor maps inside a by-value struct


def _param_of(fn: Function) -> dict[str, tuple[str, int]]:
    """Register -> (parameter, byte offset) for registers that hold a parameter's address
    (``mov.b64 %rd, P`` / ``mov.b32`` then ``cvt``, ``cvta.param``, ``add`` of an immediate), in
    program order: how a kernel names the tensor map a copy goes through."""
    params = {p.name for p in fn.params}
    where: dict[str, tuple[str, int]] = {}
    for ins in fn.instructions():
        ops = ins.operands
        if not ops or not isinstance(ops[0], Reg):
            continue
        dst, src = ops[0].name, ops[1:]
        got = None
        if ins.base in ("mov", "cvta", "cvt") and len(src) == 1:
            if isinstance(src[0], Sym) and src[0].name in params:
                got = (src[0].name, 0)
            elif isinstance(src[0], Reg) and src[0].name in where:
                got = where[src[0].name]
        elif ins.base == "add" and len(src) == 2 and isinstance(src[0], Reg) and isinstance(src[1], Imm):
            if src[0].name in where:
                got = (where[src[0].name][0], where[src[0].name][1] + int(src[1].value))
        if got is None:
            where.pop(dst, None)
        else:
            where[dst] = got
    return where


def struct_map_sites(fn: Function) -> dict[tuple[str, int], int]:
    """(by-value struct parameter, byte offset) -> rank, for every tensor copy of ``fn`` whose map lies
    inside a parameter larger than one map (CuTe's ``Copy_Atom``: the map, then its aux fields)."""
    where = _param_of(fn)
    sizes = {p.name: p.dims[0] for p in fn.params if p.type == ".b8" and len(p.dims) == 1 and p.dims[0]}
    out: dict[tuple[str, int], int] = {}
    for ins in fn.instructions():
        for o in ins.operands:
            if not isinstance(o, TensorAddr):
                continue
            key = (o.base.name, 0) if isinstance(o.base, Sym) else where.get(o.base.name) if isinstance(o.base, Reg) else None
            if key is None or sizes.get(key[0], 0) <= TMAP_BYTES or key[1] % 64:
                continue
            out.setdefault(key, len(o.coords))
    return out


@dataclass(frozen=True)
class BarrierRef:
    """An mbarrier operand two ways: as written (the register and the offset: ``[%r1011]``) and as a
    value (``_Barriers``: the register it was made from by adding an immediate, that register's
    version, the summed offset)."""

    written: tuple[str, int]
    value: tuple[str, int, int]


def copies_on(bar: BarrierRef, copies: list[tuple[Any, BarrierRef]]) -> list[Any]:
    """What of ``copies`` (thing, barrier) completes on ``bar``: those naming it as written, else
    those naming the same value.  As written is the tighter match: CUTLASS's epilogue gives each
    path its own register for one barrier (two paths, one copy each per phase), while its mainloop
    recomputes a stage's full barrier for the copies (``ws_f16_128x128x64``: ``expect_tx`` on
    ``%r667``, A's and B's copies on ``%r672``, both ``%r665 + 229376``)."""
    same = [k for k, c in copies if c.written == bar.written]
    return same or [k for k, c in copies if c.value == bar.value]


class _Barriers:
    """mbarrier operands read in program order (``BarrierRef``): a register that is another plus an
    immediate (``add``, or a ``mov``) has the value of the register it was made from plus that
    offset; a register written again starts a new version, so a value never joins a register's
    contents from before and after a redefinition."""

    def __init__(self) -> None:
        self._version: dict[str, int] = {}
        self._alias: dict[str, tuple[str, int, int]] = {}  # reg -> (root, root's version, offset)

    def key(self, o) -> BarrierRef | None:
        """The barrier an address operand names; None for anything else."""
        if not isinstance(o, Addr) or not isinstance(o.base, (Reg, Sym)):
            return None
        name = o.base.name
        root, ver, off = self._alias.get(name, (name, self._version.get(name, 0), 0))
        return BarrierRef((name, o.offset), (root, ver, off + o.offset))

    def see(self, ins) -> None:
        """Track the register ``ins`` writes (its first operand, where that is a register)."""
        ops = ins.operands
        if not ops or not isinstance(ops[0], Reg):
            return
        dst = ops[0].name
        src = self._alias.get(ops[1].name, (ops[1].name, self._version.get(ops[1].name, 0), 0)) \
            if len(ops) > 1 and isinstance(ops[1], Reg) else None
        self._version[dst] = self._version.get(dst, 0) + 1
        self._alias.pop(dst, None)
        if src is None or src[0] == dst:
            return
        if ins.base == "mov" and len(ops) == 2:
            self._alias[dst] = src
        elif ins.base == "add" and len(ops) == 3 and isinstance(ops[2], Imm):
            self._alias[dst] = (src[0], src[1], src[2] + int(ops[2].value))


def struct_tx_words(fn: Function) -> dict[tuple[str, int], set[BarrierRef]]:
    """(by-value struct parameter, byte offset) of each 32-bit word an ``expect_tx`` takes as its byte
    count -> the barriers it arms.  CUTLASS keeps the bytes one pipeline stage's copies
    bring in its ``Params`` (``tma_transaction_bytes``): a map of another box than the host's needs
    that word to say the map's bytes, else the phase never completes (or completes early)."""
    where = _param_of(fn)
    word: dict[str, tuple[str, int]] = {}
    out: dict[tuple[str, int], set[BarrierRef]] = {}
    bars = _Barriers()
    for ins in fn.instructions():
        ops = ins.operands
        if ins.base == "mbarrier" and "expect_tx" in ins.opcode and ops and isinstance(ops[-1], Reg):
            key = word.get(ops[-1].name)
            bar = next((bars.key(o) for o in ops if isinstance(o, Addr)), None)
            if key is not None and bar is not None:
                out.setdefault(key, set()).add(bar)
        bars.see(ins)
        if not ops or not isinstance(ops[0], Reg):
            continue
        if ins.opcode in ("ld.param.u32", "ld.param.b32", "ld.param.s32") and len(ops) == 2 \
                and isinstance(ops[1], Addr) and isinstance(ops[1].base, Reg) and ops[1].base.name in where:
            p, off = where[ops[1].base.name]
            word[ops[0].name] = (p, off + ops[1].offset)
        elif ins.base == "mov" and len(ops) == 2 and isinstance(ops[1], Reg) and ops[1].name in word:
            word[ops[0].name] = word[ops[1].name]
        else:
            word.pop(ops[0].name, None)
    return out


def struct_map_barriers(fn: Function) -> list[tuple[tuple[str, int], BarrierRef]]:
    """(struct parameter, map offset), barrier of each tensor load through a map inside a
    struct: one stage's copies (CUTLASS's epilogue brings C in two boxes per stage) on one barrier."""
    where = _param_of(fn)
    out = []
    bars = _Barriers()
    for ins in fn.instructions():
        ops = ins.operands
        if ins.opcode.startswith("cp.async.bulk.tensor") and len(ops) >= 3 and isinstance(ops[1], TensorAddr) \
                and isinstance(ops[1].base, Reg) and ops[1].base.name in where:
            bar = bars.key(ops[2])
            if bar is not None:
                out.append((where[ops[1].base.name], bar))
        bars.see(ins)
    return out


def struct_pointers(fn: Function) -> dict[tuple[str, int], bool]:
    """(by-value struct parameter, byte offset) of each 8-byte field the kernel uses as an address
    (``ld.param.u64 %rd, [params+OFF]``, perhaps ``cvta.to.global``, then ``[%rd]``) -> whether it
    compares the field with 0 first (an optional pointer: CUTLASS's ``alpha_ptr``, read only where
    it is not null)."""
    return _struct_fields(fn)[0]


def struct_numbers(fn: Function) -> set[tuple[str, int]]:
    """(by-value struct parameter, byte offset) of 8-byte fields the kernel reads as a number (a
    stride, a count: CUTLASS's ``stride_C``), neither an address nor a tested field: a launch gives
    each the searched integer as one 64-bit value, not that integer in both of its 32-bit words
    (``0x0000008000000080`` as a stride put ``ws_f16_128x128x64``'s epilogue loads 2 TiB past C)."""
    return _struct_fields(fn)[2]


def struct_bounds(fn: Function) -> dict[tuple[str, int], int]:
    """(by-value struct parameter, byte offset) of 8-byte fields the kernel tests -> the value a
    launch gives them: 0 for one compared with 0 (an optional pointer or stride: the kernel takes
    its plain path; CUTLASS's ``beta_ptr`` and its batch stride, which its producer and consumer
    warps otherwise read apart), 1 for one a running index is compared with by order (a persistent
    kernel's tile count, CUTLASS's ``blocks_per_problem``: one tile per CTA, as the grid is one CTA)."""
    return _struct_fields(fn)[1]


_ONE_BITS = {4: 0x3F800000, 8: 0x3FF0000000000000}  # 1.0 as f32 and f64


def struct_floats(fn: Function) -> dict[tuple[str, int], int]:
    """(by-value struct parameter, byte offset) of each float field the kernel reads
    (``ld.param.f32``/``.f64``, vectors too) -> its bytes: a launch gives it 1.0, as it gives a float
    scalar parameter, not the searched integer's bits (CUTLASS's ``alpha`` and ``beta`` were then
    2e-43, and D came out all zeros)."""
    where = _param_of(fn)
    out: dict[tuple[str, int], int] = {}
    for ins in fn.instructions():
        ops = ins.operands
        if ins.base == "ld" and ".param" in ins.opcode and ins.opcode.endswith(("f32", "f64")) and len(ops) == 2 \
                and isinstance(ops[1], Addr) and isinstance(ops[1].base, Reg) and ops[1].base.name in where:
            p, off = where[ops[1].base.name]
            nb = 4 if ins.opcode.endswith("f32") else 8
            for i in range(len(ops[0].items) if isinstance(ops[0], Vec) else 1):
                out[(p, off + ops[1].offset + nb * i)] = nb
    return out


def _struct_fields(fn: Function) -> tuple[dict[tuple[str, int], bool], dict[tuple[str, int], int], set[tuple[str, int]]]:
    where = _param_of(fn)
    field: dict[str, tuple[str, int]] = {}
    out: dict[tuple[str, int], bool] = {}
    checked: set[tuple[str, int]] = set()
    ordered: set[tuple[str, int]] = set()
    data: set[tuple[str, int]] = set()  # fields some instruction reads as a number (a count, a divisor)
    for ins in fn.instructions():
        ops = ins.operands
        for o in ops[1:] if ins.base != "st" else ops:
            if isinstance(o, Addr) and isinstance(o.base, Reg) and o.base.name in field:
                out.setdefault(field[o.base.name], False)
        zero_test = ins.base == "setp" and any(isinstance(o, Imm) and o.value == 0 for o in ops)
        if zero_test:
            checked |= {field[o.name] for o in ops if isinstance(o, Reg) and o.name in field}
        elif ins.base == "setp" and any(c in ins.modifiers for c in ("lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")) \
                and ins.opcode.endswith("64") and all(isinstance(o, Reg) for o in ops[1:3]):
            ordered |= {field[o.name] for o in ops[1:3] if isinstance(o, Reg) and o.name in field}
        elif not (ins.base in ("cvta", "mov", "add", "cvt") and len(ops) >= 2):
            data |= {field[o.name] for o in ops[1:] if isinstance(o, Reg) and o.name in field}
            if ins.base == "st":
                data |= {field[o.name] for o in ops if isinstance(o, Reg) and o.name in field}
        if not ops:
            continue
        if ins.base == "ld" and ".param" in ins.opcode and ins.opcode.endswith(("u64", "b64", "s64")) \
                and len(ops) == 2 and isinstance(ops[1], Addr) and isinstance(ops[1].base, Reg) \
                and ops[1].base.name in where:
            p, off = where[ops[1].base.name]
            dsts = ops[0].items if isinstance(ops[0], Vec) else (ops[0],)
            for i, d in enumerate(dsts):
                if isinstance(d, Reg):
                    field[d.name] = (p, off + ops[1].offset + 8 * i)
            continue
        if not isinstance(ops[0], Reg):
            continue
        if ins.base in ("cvta", "mov", "cvt") and len(ops) == 2 and isinstance(ops[1], Reg) and ops[1].name in field:
            field[ops[0].name] = field[ops[1].name]
        elif ins.base == "add" and ins.opcode.endswith(("64",)) and len(ops) == 3 and isinstance(ops[1], Reg) \
                and ops[1].name in field:  # the pointer plus an index
            field[ops[0].name] = field[ops[1].name]
        else:
            field.pop(ops[0].name, None)
    # a field only ever compared with 0 is a pointer this code path does not follow (CUTLASS's
    # ``beta_ptr`` beside ``beta``, ``ptr_C``): optional too
    out.update({k: True for k in checked - data - set(out)})
    values = {k: 0 for k in checked}
    values.update({k: 1 for k in ordered - checked - set(out)})
    return {k: k in checked for k in out}, values, data - checked - ordered - set(out)


def struct_pointer_fields(program: Program, fn: Function, value: int | None = None, ctas: int = 1) -> Program:
    """``program`` with the address fields of its by-value structs (``struct_pointers``) made
    addresses: an optional one (compared with 0 before use) null, so the kernel takes its default
    (CUTLASS's ``alpha`` beside ``alpha_ptr``); any other a buffer of its own (``Buffer.param``), whose
    address the struct's bytes hold, sized later like any pointer buffer.  ``ctas``: the CTAs of the
    launch (a cluster's), the tile count a bound field gets (one tile per CTA)."""
    fields, values, numbers = _struct_fields(fn)
    values = {k: ctas if v == 1 else v for k, v in values.items()}
    floats = struct_floats(fn)
    if not fields and not values and not floats and not (numbers and value is not None):
        return program
    scalars = dict(program.scalars)
    if value is not None:
        values = {**{k: value for k in numbers}, **values}
    for (name, off), v in values.items():
        if name in scalars:
            scalars[name] = _set_bytes(scalars[name], off, 8, v)
    for (name, off), nbytes in floats.items():
        if name in scalars:
            scalars[name] = _set_bytes(scalars[name], off, nbytes, _ONE_BITS[nbytes])
    btype = _operand_buffer_type(fn) or "u32"  # the elements such a kernel stores: its D (f16 halves in u32
    # words would hold two values per element, and the reference's bounds of each could not be kept)
    have = {(b.param, b.at) for b in program.buffers if b.param}
    names = {p.name for p in fn.params} | {b.name for b in program.buffers}
    extra = []
    for (name, off), optional in sorted(fields.items()):
        if name not in scalars or (name, off) in have:
            continue
        scalars[name] = _set_bytes(scalars[name], off, 8, 0)
        if not optional:
            new = f"ptr{off}" if f"ptr{off}" not in names else f"ptr{off}_{len(names)}"
            names.add(new)
            extra.append(Buffer(new, btype, SEARCH_BUFFER_BYTES // element_bytes(btype), "random", 0, output=True,
                                param=name, at=off))
    return replace(program, scalars=tuple(scalars.items()), buffers=program.buffers + tuple(extra))


def _set_bytes(value: int, at: int, nbytes: int, new: int) -> int:
    """``value`` (a struct's bytes as one little-endian integer) with bytes ``at``.. set to ``new``."""
    mask = ((1 << (8 * nbytes)) - 1) << (8 * at)
    return (value & ~mask) | ((new << (8 * at)) & mask)


_WGMMA_TO_MAP = {"f16": "f16", "bf16": "bf16", "tf32": "tf32", "e4m3": "u8", "e5m2": "u8", "s8": "u8", "u8": "u8"}


def _operand_type(fn: Function) -> str:
    """The map type of a kernel's tensor copies: its first ``wgmma.mma_async``'s operand type (what
    the copies feed), else 16-bit."""
    for ins in fn.instructions():
        if ins.base == "wgmma" and "mma_async" in ins.opcode:
            for t in reversed(ins.opcode.split(".")):
                if t in _WGMMA_TO_MAP:
                    return _WGMMA_TO_MAP[t]
    return "u16"


def struct_maps(program: Program, fn: Function, value: int) -> Program:
    """``program`` with a TENSORMAP for each tensor map a copy reads from inside a by-value struct
    (``struct_map_sites``), built from the kernel's own use: the rank its copies give; the type of
    the operands its wgmmas read; each box dimension the least step between the coordinates its
    copies use (CuTe splits a tile into boxes side by side), found in one probe run; the tensor as
    large as those coordinates reach (and ``value``), rows dense; no swizzle (the reference and the
    GPU place the bytes the same way under any).  The map is backed by the kernel's pointer
    parameters in order (CuTe passes A and B beside their atoms), and sits at its offset in the
    struct (``TensorMap.at``), whose other bytes stay the PARAM line's."""
    sites = struct_map_sites(fn)
    if not sites:
        return program
    have = {(t.name, t.at) for t in program.tensormaps}
    sites = {k: r for k, r in sites.items() if k not in have}
    if not sites:
        return program
    ttype = _operand_type(fn)
    eb = element_bytes(_MAP_BUFFER.get(ttype, ttype))
    bufs = [b for b in program.buffers if b.name not in {t.buffer for t in program.tensormaps} and not b.param]
    if len(bufs) < len(sites):
        # more maps than pointer parameters (CUTLASS's Params holds A, B, C and D's maps and no kernel
        # parameter names their memory): a buffer of their own for the rest, named after the map's offset
        names = {p.name for p in fn.params} | {b.name for b in program.buffers}
        extra = []
        for _, at in list(sites)[len(bufs):]:
            new = f"map{at}" if f"map{at}" not in names else f"map{at}_{len(names)}"
            names.add(new)
            extra.append(Buffer(new, _MAP_BUFFER.get(ttype, ttype), 1, "random", 0, output=True))
        bufs += extra
        program = replace(program, buffers=program.buffers + tuple(extra))

    fan: dict[tuple[str, int], int] = {}  # a multicast map's copies: the CTAs each lands in (the probe's)

    def with_maps(boxes: dict, dims: dict) -> Program:
        tmaps, backing = list(program.tensormaps), {}
        for (name, at), buf in zip(sites, bufs):
            d = dims[(name, at)]
            strides, row = [], -(-d[0] * eb // 16) * 16
            for x in d[1:]:
                strides.append(row)
                row *= x
            tmaps.append(TensorMap(name, buf.name, ttype, d, tuple(strides), boxes[(name, at)], at=at))
            backing[buf.name] = max(1, row // eb)
        buffers = tuple(replace(b, type=_MAP_BUFFER.get(ttype, ttype), count=backing[b.name]) if b.name in backing
                        else b for b in program.buffers)
        scalars = dict(program.scalars)
        for (name, off), bars in tx_words.items():  # each stage's expected bytes: what its copies' boxes bring
            # (a multicast map's box comes from every CTA of its group, each issuing its slice to all)
            nbytes = max((sum(math.prod(boxes[k]) * eb * fan.get(k, 1) for k in copies_on(b, map_bars) if k in boxes)
                          for b in bars), default=0)
            if nbytes and name in scalars:
                scalars[name] = _set_bytes(scalars[name], off, 4, nbytes)
        return replace(program, buffers=buffers, tensormaps=tuple(tmaps), scalars=tuple(scalars.items()))

    tx_words, map_bars = struct_tx_words(fn), struct_map_barriers(fn)
    probe_box = {k: (16 // eb,) + (8,) * (r - 1) for k, r in sites.items()}
    # room for the coordinates one CTA's copies reach: a 2-D map wide (CuTe's tiles side by side), the
    # outer dimensions of a higher rank (CUTLASS's batch) short, the probe's buffers some MiB at most
    probe_dims = {k: (1 << 12,) * r if r <= 2 else (512, 512) + (8,) * (r - 2) for k, r in sites.items()}
    probe = with_maps(probe_box, probe_dims)
    log: list = []
    starts: list = []
    ctas = machines(probe, probe.numerics)
    for m in ctas:
        m.tma_log = log
        m.tma_smem_log = starts
        m.tma_fan_log = fan
    old = np.seterr(all="ignore")
    try:
        with single_thread():
            run_ctas(ctas)
    except Exception:  # noqa: BLE001 - the probe only needs the copies issued before it stopped
        pass
    finally:
        np.seterr(**old)
    boxes, dims = {}, {}
    for key, rank in sites.items():
        coords = [c for n, at, c in log if (n, at) == key]
        box, dim = [], []
        for d in range(rank):
            vals = sorted({c[d] for c in coords})
            steps = [b - a for a, b in zip(vals, vals[1:]) if b > a]
            default = 128 // eb if d == 0 else 64
            b = min(min(steps) if steps else default, 256)
            if d == 0:
                b = max(16 // eb, b - b % (16 // eb))  # a box row is a multiple of 16 bytes
            box.append(b)
        # a pipeline's stages lie one box apart in shared memory: the least step between the shared
        # addresses a map's copies wrote, in elements, is the box; its rows are the first dimension's
        at = sorted({a for n, o, a in starts if (n, o) == key})
        span = min((b - a for a, b in zip(at, at[1:]) if b > a), default=0) // eb
        if rank > 1 and span and span % box[0] == 0:
            box[1:] = [min(256, span // box[0])] + [1] * (rank - 2)
        for d in range(rank):
            vals = sorted({c[d] for c in coords})
            least = value if d < 2 else 1  # a batch dimension (rank 3 and up) as far as the copies reach
            dim.append(max(least, box[d], (max(vals) + box[d]) if vals else box[d]))
        boxes[key], dims[key] = tuple(box), tuple(dim)
    return with_maps(boxes, dims)


def _type_bytes(t: str) -> int:
    m = re.search(r"(\d+)$", t)
    return max(1, int(m.group(1)) // 8) if m else 1


@dataclass(frozen=True)
class Searched:
    program: Program
    best: Trial
    runs: int
    seconds: float
    stopped: str | None  # why the search stopped before trying every candidate (its budget)


def search(program: Program, *, runs: int = DEFAULT_RUNS, seconds: float = DEFAULT_SECONDS,
           descs: tuple[dict, ...] = (), scratch: int = 0) -> Searched:
    """The launch of an inferred ``program`` whose reference run executes most of its tensor-core
    instructions with no error (see the module doc); at most ``runs`` reference runs and about
    ``seconds`` seconds (a run under way is finished).  ``descs``: Triton's tensor descriptors
    (``Given.descs``), made tensor maps over buffers of the launch's shape; ``scratch``: Triton's
    global scratch bytes per CTA, the least its scratch parameter's buffer holds."""
    fn = program.module.function(program.launch.kernel)
    maps = _desc_slots(fn, descs)
    free = {n for n, _ in program.scalars if n not in set(program.given) and n not in maps}
    program = _typed(program, fn)
    big = tuple(replace(b, count=SEARCH_BUFFER_BYTES // element_bytes(b.type)) for b in program.buffers)
    wide = replace(program, buffers=big)
    blocks = [program.launch.block]
    if "block" not in program.given and not (fn.ntid("reqntid") or fn.ntid("maxntid")):
        blocks.append((32, 1, 1))  # a kernel written for one warp indexes past its data with four
    values: list[int | None] = candidates(fn) if free else [None]
    plan = [(c, b, v) for c in cluster_shapes(program, fn) for b in blocks for v in values]
    t0 = time.perf_counter()
    total = len(sites(program))
    best: Trial | None = None
    best_prog = wide
    tried = 0
    stopped = None
    refined = False
    while plan:
        shape, block, value = plan.pop(0)
        if tried >= runs or time.perf_counter() - t0 > seconds:
            stopped = f"budget of {runs} runs / {seconds:.0f} s spent after {tried} runs, {len(plan) + 1} candidate(s) left"
            break
        cand = wide if value is None else struct_pointer_fields(_with_value(wide, fn, value, free), fn, value,
                                                                math.prod(shape))
        cand = replace(_tensormaps(cand, maps, value or 64), launch=_in_cluster(replace(cand.launch, block=block), fn, shape))
        cand = struct_maps(cand, fn, value or 64)
        t = trial(cand, value)
        tried += 1
        if best is None or t.score() > best.score():
            best, best_prog = t, cand
        if best.error is None and total and best.coverage.ran == total:
            break  # the first value that reaches every instruction
        if not plan and not refined and best.value is not None and best.coverage.ran:
            # an unrolled loop's remainder runs only for a trip count off the unroll factor
            refined = True
            plan = [(best_prog.launch.grid, best_prog.launch.block, best.value + 1)]
    assert best is not None
    ones: list[str] = []
    if best.conflicts and best.value is not None:
        # threads store to one address (a stride equal to another dimension's, or shorter than the
        # tile): set the integer scalars to 1, else to four times the value, one at a time, the last
        # first (compilers pass a tensor's sizes before its strides, the innermost stride last),
        # keeping each that lowers the conflicts and keeps the coverage
        for name, word in reversed(_integer_scalars(fn, free)):
            for new in (1, 4 * best.value):
                if not best.conflicts or time.perf_counter() - t0 > seconds + DEALIAS_SECONDS:
                    break
                cand = replace(best_prog, scalars=tuple((n, _set_word(v, word, new) if n == name else v)
                                                        for n, v in best_prog.scalars))
                t = trial(cand, best.value)
                tried += 1
                if t.error is None and t.coverage.ran >= best.coverage.ran and t.conflicts < best.conflicts:
                    best, best_prog = replace(t, value=best.value), cand
                    ones.append(f"{name if word is None else f'{name} word {word}'} = {new}")
                    break
    sized = _sized(best_prog, best, {m.buffer for m in best_prog.tensormaps}, _scratch_words(fn, sized_for=best_prog,
                                                                                           scratch=scratch))
    final = trial(sized, best.value)
    tried += 1
    if final.score() < best.score():  # other bytes in a smaller buffer took the run elsewhere
        sized, final = best_prog, best
    return Searched(_noted(sized, final, tried, stopped, free, ones), final, tried, time.perf_counter() - t0, stopped)


# cluster shapes a kernel that multicasts its copies is tried in, in this order (the smallest first;
# one CTA last: a copy that multicasts to a rank of its own only runs there too)
CLUSTER_SHAPES = ((2, 1, 1), (1, 2, 1), (1, 1, 2), (4, 1, 1), (1, 4, 1), (2, 2, 1), (1, 1, 1))
_REQ_CLUSTER = re.compile(r"\s*\.reqnctapercluster\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?")


def kernel_cluster(fn: Function) -> tuple[int, int, int] | None:
    """The kernel's own cluster shape (``.reqnctapercluster``), None where it states none."""
    for attr in fn.attributes:
        mt = _REQ_CLUSTER.match(attr)
        if mt:
            return int(mt.group(1)), int(mt.group(2) or 1), int(mt.group(3) or 1)
    return None


def cluster_shapes(program: Program, fn: Function) -> tuple[tuple[int, int, int], ...]:
    """The grids (each one cluster: the reference runs one) the search tries: the kernel's
    ``.reqnctapercluster``, else a cluster the launch was given, else for a kernel that multicasts
    its copies (``.multicast::cluster``: CUTLASS's cluster shape is a template constant, not in the
    PTX) ``CLUSTER_SHAPES``; else one CTA (the launch's grid)."""
    own = kernel_cluster(fn)
    if own is not None:
        return (own,)
    if program.launch.cluster != (1, 1, 1) or "cluster" in program.given:
        return (program.launch.cluster,)
    if any("multicast::cluster" in ins.modifiers for ins in fn.instructions()):
        return CLUSTER_SHAPES
    return (program.launch.grid,)


def _in_cluster(la, fn: Function, shape: tuple[int, int, int]):
    """The launch of one cluster of ``shape``: the grid is the cluster; the launch names it unless
    the kernel's ``.reqnctapercluster`` does (then ``cuLaunchKernel`` takes no attribute)."""
    if la.cluster == (1, 1, 1) and kernel_cluster(fn) is None and (shape == la.grid or shape == (1, 1, 1)):
        return la  # no cluster: the launch as it is
    return replace(la, grid=shape, cluster=(1, 1, 1) if kernel_cluster(fn) is not None else shape)


def _integer_scalars(fn: Function, free: set[str]) -> list[tuple[str, int | None]]:
    """The free integer scalars, in order: (parameter, None) for a 32-bit scalar, (parameter, k) for
    the k-th 32-bit word of a small by-value struct (CuTe's shape and stride tuples, 16 bytes at most)."""
    out: list[tuple[str, int | None]] = []
    for p in fn.params:
        if p.name not in free or p.type in _FLOATS or p.type in (".u64", ".b64", ".s64"):
            continue
        if not p.dims:
            out.append((p.name, None))
        elif len(p.dims) == 1 and p.dims[0] and p.dims[0] * _type_bytes(p.type) <= 16:
            out += [(p.name, k) for k in range(p.dims[0] * _type_bytes(p.type) // 4)]
    return out


def _set_word(value: int, word: int | None, new: int) -> int:
    """``value`` with its 32-bit word ``word`` set to ``new`` (None: the whole value is ``new``)."""
    if word is None:
        return new
    return (value & ~(0xFFFFFFFF << (32 * word))) | ((new & 0xFFFFFFFF) << (32 * word))


# a kernel's wgmma operand type -> the element type its inferred buffers are filled with
_OPERAND_BUFFER = {"f16": "f16", "bf16": "bf16", "tf32": "f32", "e4m3": "e4m3", "e5m2": "e5m2"}


def _operand_buffer_type(fn: Function) -> str | None:
    """The buffer type of the operands ``fn``'s first wgmma reads (f16, bf16, e4m3, ...), if any."""
    for ins in fn.instructions():
        if ins.base == "wgmma" and "mma_async" in ins.opcode:
            return next((_OPERAND_BUFFER[t] for t in reversed(ins.opcode.split(".")) if t in _OPERAND_BUFFER), None)
    return None


def _typed(program: Program, fn: Function) -> Program:
    """The inferred buffers (random 32-bit words) of a kernel whose wgmmas read floats, filled with
    random values of that float type instead: random bits read as f16/bf16 are NaN or huge about
    one time in thirty, and a matmul or a softmax over them is NaN everywhere (attention's
    reference run then branches on NaN bits and says nothing).  A buffer the user gave is kept."""
    ttype = _operand_buffer_type(fn)
    if ttype is None:
        return program
    eb = element_bytes(ttype)
    return replace(program, buffers=tuple(
        replace(b, type=ttype, count=b.count * 4 // eb) if b.type == "u32" and b.init == "random"
        and b.name not in program.given else b for b in program.buffers))


def _scratch_words(fn: Function, *, sized_for: Program, scratch: int) -> dict[str, int]:
    """Triton's global scratch parameter (its second-to-last, a pointer) -> the words its buffer needs:
    ``scratch`` bytes for each CTA of the launch (the reference may stop before touching it, the GPU
    writes all of it)."""
    if scratch <= 0 or len(fn.params) < 2:
        return {}
    name = fn.params[-2].name
    if name not in {b.name for b in sized_for.buffers}:
        return {}
    return {name: -(-scratch * math.prod(sized_for.launch.grid) // 4)}


def _sized(program: Program, t: Trial, keep: set[str] = frozenset(), least: dict[str, int] | None = None) -> Program:
    """Each buffer as large as the bytes the run touched (at least 16 words, and ``least`` words
    where it names the buffer); those in ``keep`` (a tensor map's: the map's shape fixes them) as
    they are."""
    out = []
    least = least or {}
    for b in program.buffers:
        if b.name in keep:
            out.append(b)
            continue
        eb = element_bytes(b.type)
        count = max(64 // eb, -(-4 * least.get(b.name, 0) // eb), -(-t.reach.get(b.name, 0) // eb))
        out.append(replace(b, count=count))
    return replace(program, buffers=tuple(out))


def describe(program: Program, t: Trial) -> str:
    """``executes 8 of 8 wgmma, 1 CTA of 128 threads, 9 integer scalars = 64``."""
    cov = t.coverage.text() if t.coverage.of else "no tensor-core instructions"
    la = program.launch
    ctas = la.grid[0] * la.grid[1] * la.grid[2]
    parts = [cov, f"1 CTA of {la.threads} threads" if ctas == 1 else
             f"a cluster of {ctas} CTAs ({','.join(map(str, la.grid))}) of {la.threads} threads"]
    if t.value is not None:
        fn = program.module.function(program.launch.kernel)
        kinds = {p.name: p for p in fn.params}
        ints = [n for n, _ in program.scalars if n in kinds and kinds[n].type not in _FLOATS]
        if ints:
            parts.append(f"{len(ints)} integer scalar(s) = {t.value}")
    if t.error:
        parts.append(f"stops: {t.error}")
    return f"{COVERAGE_NOTE} " + ", ".join(parts)


def _noted(program: Program, t: Trial, tried: int, stopped: str | None, free: set[str],
           ones: list[str] = ()) -> Program:
    notes = [n for n in program.notes if not n.startswith((COVERAGE_NOTE + " ", SEARCH_NOTE))]
    notes.append(describe(program, t))
    how = f"{SEARCH_NOTE}: {tried} reference run(s)"
    if free and t.value is not None:
        how += f", every integer scalar {t.value}, floats 1.0"
        if ones:
            how += f" ({', '.join(ones)}: with {t.value} threads stored to one address)"
    if t.conflicts:
        how += f"; {t.conflicts} global byte(s) stored by two threads (a race on the GPU)"
    how += "; buffers sized to the bytes the run touched"
    scalars = {n for n, _ in program.scalars}
    inside = sum(1 for m in program.tensormaps if m.name in scalars)
    if len(program.tensormaps) > inside:
        how += (f"; {len(program.tensormaps) - inside} tensor map(s) from Triton's descriptors, every dimension the "
                "scalar value")
    if inside:
        how += (f"; {inside} tensor map(s) inside by-value structs, made from the kernel's own copies (box: their "
                "coordinates' step; no swizzle)")
    if stopped:
        how += f"; {stopped} (edit the header to try others)"
    notes.append(how)
    return replace(program, notes=tuple(notes))


# ------------------------------------------------------------------ the one entry point


def resolve(program: Program, *, given: Given | None = None, search_budget: tuple[int, float] | None = None) -> Program:
    """The launch a plain ``program`` runs with: what the user or compiler gives (``given``, else
    what lies beside its source file), then, for what is still free, the search.  A program with a
    written header comes back as it is."""
    if not program.inferred or MAGIC in (ln.strip() for ln in program.module.preamble):
        return program  # a header in the file (a pasted inferred one too) is used as written
    side = beside(program.source, program.launch.kernel) if program.source else Given()
    program = apply_given(program, side)
    if given:
        program = apply_given(program, given)
    descs = (given.descs if given and given.descs else side.descs)
    scratch = given.scratch if given and given.scratch else side.scratch
    runs, secs = search_budget or (DEFAULT_RUNS, DEFAULT_SECONDS)
    if runs <= 0:
        return program
    try:
        return search(program, runs=runs, seconds=secs, descs=descs, scratch=scratch).program
    except (KeyError, ReproError):
        return program


_LOADED: dict[tuple, Program] = {}  # (file, its text, kernel, given) -> the resolved program, per process


def load(text: str, file: str, kernel: str | None = None, *, given: Given | None = None,
         search_budget: tuple[int, float] | None = None) -> Program:
    """The program in a PTX file's ``text``, its launch resolved (``resolve``): every command that
    runs a user's file reads it so.  One search per file and process."""
    key = (file, hash(text), kernel, repr(given), search_budget)
    hit = _LOADED.get(key)
    if hit is None:
        hit = _LOADED[key] = resolve(Program.from_ptx(text, file, kernel), given=given, search_budget=search_budget)
        if len(_LOADED) > 256:
            _LOADED.pop(next(iter(_LOADED)))
    return hit
