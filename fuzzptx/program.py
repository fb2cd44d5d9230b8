"""A runnable program: a PTX module plus how to launch it and fill its buffers.

On disk a program is one self-describing ``.ptx`` file (lit-style): the module's
leading ``//`` comment lines carry the launch, the buffers, the scalar params,
what each judge said and the finding's signature.  ptxas ignores the comments,
so the file is valid ptxas input as it stands.  ``NUMERICS: hardware`` (absent: ``spec``) says
which numerics the reference judged it with: the PTX ISA's error bounds, or the bit-exact H100
model; a replay or a shrink of the file uses the same.

    // fuzzptx-repro v1
    // LAUNCH: kernel=k grid=1,1,1 block=128,1,1
    // BUFFER: a type=f16 count=1024 init=random seed=7
    // BUFFER: d type=f32 count=4096 init=zeros output
    // PARAM: n value=4
    // NUMERICS: hardware
    // EXPECT: ptxas: accepted
    // SIGNATURE: reference!=hardware|wgmma
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from fuzzptx.errors import FuzzptxError
from fuzzptx.inputs import read_text
from fuzzptx.ptx.emit import emit, emit_located
from fuzzptx.ptx.ir import Module
from fuzzptx.ptx.parse import parse

MAGIC = "fuzzptx-repro v1"
NUMERICS = ("spec", "hardware")  # the reference's numerics modes (oracles.reference.run_program)
INITS = ("random", "small_int", "special", "zeros", "ones", "iota")
BUFFER_TYPES = (
    "f64", "f32", "tf32", "f16", "bf16", "e4m3", "e5m2",
    "s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64", "b8", "b16", "b32", "b64",
)


class ReproError(FuzzptxError):
    """A repro header that cannot be understood (names the file and line)."""


_BYTES = {  # bytes per element of each buffer type
    "f64": 8, "s64": 8, "u64": 8, "b64": 8,
    "f32": 4, "tf32": 4, "s32": 4, "u32": 4, "b32": 4,
    "f16": 2, "bf16": 2, "s16": 2, "u16": 2, "b16": 2,
    "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1, "b8": 1,
}



def element_bytes(type_: str) -> int:
    return _BYTES[type_]


@dataclass(frozen=True)
class Buffer:
    """A global buffer passed through the kernel parameter of the same name.

    ``init`` says how its contents are made: a distribution drawn from ``seed``
    (``random``, ``small_int``, ``special``), a constant pattern (``zeros``,
    ``ones``, ``iota``), or ``hex:<bytes>`` for small shrunk data.
    """

    name: str
    type: str
    count: int
    init: str = "random"
    seed: int = 0
    output: bool = False

    @property
    def nbytes(self) -> int:
        return self.count * element_bytes(self.type)


@dataclass(frozen=True)
class Launch:
    kernel: str
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (128, 1, 1)
    dynamic_smem: int = 0

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class Program:
    """A module with everything needed to run it; ``to_ptx``/``from_ptx`` round-trip."""

    module: Module
    launch: Launch
    buffers: tuple[Buffer, ...] = ()
    scalars: tuple[tuple[str, int], ...] = ()
    expect: tuple[tuple[str, str], ...] = ()
    signature: str | None = None
    notes: tuple[str, ...] = field(default=())
    numerics: str = "spec"

    def with_kernel_body(self, body) -> "Program":
        """The program with its launched kernel's body replaced (mutations, probes and models edit it)."""
        fn = self.module.function(self.launch.kernel)
        items = tuple(replace(it, body=tuple(body)) if it is fn else it for it in self.module.items)
        return replace(self, module=replace(self.module, items=items))

    def buffer(self, name: str) -> Buffer:
        for b in self.buffers:
            if b.name == name:
                return b
        raise KeyError(name)

    def outputs(self) -> tuple[Buffer, ...]:
        return tuple(b for b in self.buffers if b.output)

    def header_lines(self) -> tuple[str, ...]:
        la = self.launch
        lines = [
            MAGIC,
            f"LAUNCH: kernel={la.kernel} grid={_triple(la.grid)} block={_triple(la.block)}"
            + (f" smem={la.dynamic_smem}" if la.dynamic_smem else ""),
        ]
        for b in self.buffers:
            seed = f" seed={b.seed}" if not b.init.startswith("hex:") and b.init in ("random", "small_int", "special") else ""
            lines.append(f"BUFFER: {b.name} type={b.type} count={b.count} init={b.init}{seed}" + (" output" if b.output else ""))
        lines += [f"PARAM: {k} value={v}" for k, v in self.scalars]
        if self.numerics != "spec":
            lines.append(f"NUMERICS: {self.numerics}")
        lines += [f"EXPECT: {judge}: {verdict}" for judge, verdict in self.expect]
        if self.signature:
            lines.append(f"SIGNATURE: {self.signature}")
        lines += [f"NOTE: {n}" for n in self.notes]
        return tuple(lines)

    def with_header(self) -> Module:
        """The module with this program's header as its preamble (other preamble lines dropped)."""
        return replace(self.module, preamble=self.header_lines())

    def to_ptx(self) -> str:
        return emit(self.with_header())

    def to_ptx_located(self, file: str = "<program>") -> tuple[str, "Program"]:
        """``to_ptx()`` and this program as the judges read it back from that text (what
        ``differ.as_judged`` parses), built while emitting: no parse."""
        text, module = emit_located(self.with_header(), file)
        return text, replace(self, module=module)

    @staticmethod
    def from_ptx(text: str, file: str = "<string>", kernel: str | None = None) -> "Program":
        """``kernel``: the kernel a plain file's inferred header launches (default: the first)."""
        module = parse(text, file)
        return Program.from_module(module, file, kernel)

    @staticmethod
    def from_file(path: str | Path, kernel: str | None = None) -> "Program":
        """The program in a repro file, read through the one input layer (a missing, binary,
        non-UTF-8 or oversized file is one line naming it)."""
        return Program.from_ptx(read_text(path, what="PTX file"), str(path), kernel)

    @staticmethod
    def from_module(module: Module, file: str = "<string>", kernel: str | None = None) -> "Program":
        """Read the header from ``module.preamble``; the preamble's line i is file line i+1.
        ``kernel``: for plain PTX, the kernel the inferred header launches; with a header, it
        must be the one the header launches."""
        return _parse_header(module, file, kernel)


def _triple(t: tuple[int, int, int]) -> str:
    return ",".join(str(x) for x in t)


_KV = re.compile(r"(\w+)=(\S+)")


def _fields(rest: str, file: str, line: int) -> tuple[list[str], dict[str, str]]:
    words, kv = [], {}
    for tok in rest.split():
        m = _KV.fullmatch(tok)
        if m:
            kv[m.group(1)] = m.group(2)
        else:
            words.append(tok)
    return words, kv


def _int(kv: dict[str, str], key: str, file: str, line: int, default: int | None = None) -> int:
    if key not in kv:
        if default is None:
            raise ReproError(f"missing {key}=", file=file, line=line)
        return default
    try:
        return int(kv[key], 0)
    except ValueError:
        raise ReproError(f"{key}={kv[key]!r} is not an integer", file=file, line=line) from None


def _dims(kv: dict[str, str], key: str, file: str, line: int, default: tuple[int, int, int]) -> tuple[int, int, int]:
    if key not in kv:
        return default
    parts = kv[key].split(",")
    try:
        vals = [int(p) for p in parts]
    except ValueError:
        raise ReproError(f"{key}={kv[key]!r}: expected x,y,z integers", file=file, line=line) from None
    if not 1 <= len(vals) <= 3 or any(v < 1 for v in vals):
        raise ReproError(f"{key}={kv[key]!r}: expected 1 to 3 positive integers", file=file, line=line)
    return tuple(vals + [1] * (3 - len(vals)))  # type: ignore[return-value]


def _parse_header(module: Module, file: str, kernel: str | None = None) -> Program:
    launch: Launch | None = None
    buffers: list[Buffer] = []
    scalars: list[tuple[str, int]] = []
    expect: list[tuple[str, str]] = []
    notes: list[str] = []
    signature = None
    numerics = "spec"
    seen_magic = False
    for i, raw in enumerate(module.preamble):
        line = i + 1
        text = raw.strip()
        if not text:
            continue
        if text == MAGIC:
            seen_magic = True
            continue
        key, sep, rest = text.partition(":")
        if not sep or key not in ("LAUNCH", "BUFFER", "PARAM", "NUMERICS", "EXPECT", "SIGNATURE", "NOTE"):
            continue  # free comment text
        rest = rest.strip()
        if key == "LAUNCH":
            _, kv = _fields(rest, file, line)
            if "kernel" not in kv:
                raise ReproError("LAUNCH needs kernel=<name>", file=file, line=line)
            launch = Launch(
                kv["kernel"],
                _dims(kv, "grid", file, line, (1, 1, 1)),
                _dims(kv, "block", file, line, (128, 1, 1)),
                _int(kv, "smem", file, line, 0),
            )
        elif key == "BUFFER":
            words, kv = _fields(rest, file, line)
            if not words:
                raise ReproError("BUFFER needs a name", file=file, line=line)
            btype = kv.get("type")
            if btype not in BUFFER_TYPES:
                raise ReproError(f"BUFFER {words[0]}: type={btype!r} is not one of {', '.join(BUFFER_TYPES)}", file=file, line=line)
            init = kv.get("init", "random")
            if init not in INITS and not init.startswith("hex:"):
                raise ReproError(f"BUFFER {words[0]}: init={init!r} is not one of {', '.join(INITS)} or hex:<bytes>", file=file, line=line)
            if init.startswith("hex:") and not re.fullmatch(r"(?:[0-9a-fA-F]{2})*", init[4:]):
                raise ReproError(f"BUFFER {words[0]}: init=hex: needs an even number of hex digits", file=file, line=line)
            count = _int(kv, "count", file, line)
            if count < 1:
                raise ReproError(f"BUFFER {words[0]}: count must be positive", file=file, line=line)
            buffers.append(Buffer(words[0], btype, count, init, _int(kv, "seed", file, line, 0), "output" in words[1:]))
        elif key == "PARAM":
            words, kv = _fields(rest, file, line)
            if not words:
                raise ReproError("PARAM needs a name", file=file, line=line)
            scalars.append((words[0], _int(kv, "value", file, line)))
        elif key == "EXPECT":
            judge, sep2, verdict = rest.partition(":")
            if not sep2:
                raise ReproError("EXPECT needs '<judge>: <verdict>'", file=file, line=line)
            expect.append((judge.strip(), verdict.strip()))
        elif key == "SIGNATURE":
            signature = rest
        elif key == "NUMERICS":
            if rest not in NUMERICS:
                raise ReproError(f"NUMERICS {rest!r}: expected one of {', '.join(NUMERICS)}", file=file, line=line)
            numerics = rest
        else:
            notes.append(rest)
    if not seen_magic and launch is None:
        return inferred_header(module, file, kernel)
    if launch is None:
        raise ReproError("no LAUNCH line in the header", file=file, line=len(module.preamble) or 1)
    kernels = {f.name: f for f in module.kernels()}
    if kernel is not None and kernel != launch.kernel:
        raise ReproError(f"--kernel {kernel}: the file's header launches {launch.kernel} (--kernel chooses the "
                         "kernel of a plain file; edit the LAUNCH line here)", file=file, line=1)
    if launch.kernel not in kernels:
        raise ReproError(f"LAUNCH kernel={launch.kernel} is not a kernel in this file (have: {', '.join(kernels) or 'none'})", file=file, line=1)
    params = {p.name for p in kernels[launch.kernel].params}
    for b in buffers:
        if b.name not in params:
            raise ReproError(f"BUFFER {b.name} names no parameter of kernel {launch.kernel}", file=file, line=1)
    for name, _ in scalars:
        if name not in params:
            raise ReproError(f"PARAM {name} names no parameter of kernel {launch.kernel}", file=file, line=1)
    missing = params - {b.name for b in buffers} - {n for n, _ in scalars}
    if missing:
        raise ReproError(f"kernel {launch.kernel} parameter(s) {', '.join(sorted(missing))} have no BUFFER or PARAM line", file=file, line=1)
    return Program(module, launch, tuple(buffers), tuple(scalars), tuple(expect), signature, tuple(notes), numerics)


INFERRED = "header inferred"  # the note a program with an inferred header carries


def say_inferred(program: Program, file: str, command: str) -> None:
    """Print a program's inferred header (stderr), so the user sees it and can edit it into the file."""
    if any(n.startswith(INFERRED) for n in program.notes):
        lines = "\n".join("  // " + ln for ln in program.header_lines())
        print(f"fuzzptx {command}: {file} has no fuzzptx header; inferred (put it at the top of the file to "
              f"change it):\n{lines}", file=sys.stderr)
INFERRED_COUNT = 4096  # elements of each inferred buffer: room for any single-CTA tensor-core kernel
_POINTERS = (".u64", ".b64", ".s64")


def inferred_header(module: Module, file: str, kernel: str | None = None) -> Program:
    """A header for plain PTX (no ``// fuzzptx-repro v1`` lines), so any PTX file can be checked,
    replayed and shrunk: the first kernel, launched as one CTA of 128 threads (a warpgroup: every
    tensor-core form fits); each 64-bit parameter a buffer of ``INFERRED_COUNT`` random u32
    words (seed 0), each an output (what the kernel writes is compared); each other scalar
    parameter 0.  A ptxas-only signature needs none of it; the program's note says it was
    inferred, and which kernels the file has, and its text (``to_ptx``) prints the header to
    edit.  ``kernel`` (``--kernel NAME``) launches another kernel than the first."""
    kernels = list(module.kernels())
    if not kernels:
        raise ReproError(f"no '// {MAGIC}' header, and no .entry kernel to infer one from", file=file, line=1)
    names = [f.name for f in kernels]
    if kernel is not None and kernel not in names:
        raise ReproError(f"--kernel {kernel}: no such kernel (have: {', '.join(names)})", file=file, line=1)
    k = kernels[names.index(kernel)] if kernel is not None else kernels[0]
    buffers: list[Buffer] = []
    scalars: list[tuple[str, int]] = []
    for p in k.params:
        if p.dims:
            raise ReproError(f"no '// {MAGIC}' header, and parameter {p.name} of {k.name} is an array "
                             "(a tensor map?): write the header by hand", file=file, line=1)
        if p.type in _POINTERS:
            buffers.append(Buffer(p.name, "u32", INFERRED_COUNT, "random", 0, output=True))
        else:
            scalars.append((p.name, 0))
    note = (f"{INFERRED}: kernel {k.name}, one CTA of 128 threads, {len(buffers)} buffer(s) of "
            f"{INFERRED_COUNT} random u32, scalars 0 (edit the header to change them)")
    if len(names) > 1:
        note += f"; kernels in the file: {', '.join(names)} (--kernel NAME launches another)"
    return Program(module, Launch(k.name), tuple(buffers), tuple(scalars), (), None, (note,), "spec")

