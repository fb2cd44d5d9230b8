"""A runnable program: a PTX module plus how to launch it and fill its buffers.

On disk a program is one self-describing ``.ptx`` file (lit-style): the module's
leading ``//`` comment lines carry the launch, the buffers, the scalar params,
what each judge said and the finding's signature.  ptxas ignores the comments,
so the file is valid ptxas input as it stands.  ``NUMERICS: hardware`` (absent: ``spec``) says
which numerics the reference judged it with: the PTX ISA's error bounds, or the bit-exact H100
model; a replay or a shrink of the file uses the same.  ``TENSORMAP:`` describes the tensor map a
``.param .align 64 .b8 name[128]`` parameter holds (``TensorMap``): the reference reads the
description, never the driver's opaque encoding; the GPU harness encodes it with
``cuTensorMapEncodeTiled``.

    // fuzzptx-repro v1
    // LAUNCH: kernel=k grid=1,1,1 block=128,1,1
    // BUFFER: a type=f16 count=1024 init=random seed=7
    // BUFFER: d type=f32 count=4096 init=zeros output
    // PARAM: n value=4
    // TENSORMAP: tm buffer=a type=f16 dims=64,32 strides=128 box=32,16 swizzle=64B oob=zero
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
from fuzzptx.isa.layouts import ROW_BYTES
from fuzzptx.ptx.emit import emit, emit_located
from fuzzptx.ptx.ir import Module
from fuzzptx.ptx.parse import parse
from fuzzptx.ptx.smem import SHARED_RESERVED, shared_layout

MAGIC = "fuzzptx-repro v1"
NUMERICS = ("spec", "hardware")  # the reference's numerics modes (oracles.reference.run_program)
INITS = ("random", "small_int", "special", "zeros", "ones", "iota")
BUFFER_TYPES = (
    "f64", "f32", "tf32", "f16", "bf16", "e4m3", "e5m2",
    "s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64", "b8", "b16", "b32", "b64",
)


class ReproError(FuzzptxError):
    """A repro header that cannot be understood (names the file and line)."""


# The most bytes one header BUFFER may hold: every judge materialises it (the reference in numpy,
# the GPU in device memory), so a mistyped count is refused here, not as a MemoryError in a judge.
MAX_BUFFER_BYTES = 1 << 30


_BYTES = {  # bytes per element of each buffer type
    "f64": 8, "s64": 8, "u64": 8, "b64": 8,
    "f32": 4, "tf32": 4, "s32": 4, "u32": 4, "b32": 4,
    "f16": 2, "bf16": 2, "s16": 2, "u16": 2, "b16": 2,
    "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1, "b8": 1,
}



# The tensor-map vocabulary of the header, in the driver's enum order (cuda.h: CUtensorMapDataType,
# CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill): the
# GPU harness passes a value's index as the enum.  Element types name buffer types (their bytes).
TMAP_TYPES = ("u8", "u16", "u32", "s32", "u64", "s64", "f16", "f32", "f64", "bf16", "f32.ftz", "tf32", "tf32.ftz")
TMAP_INTERLEAVES = ("none", "16B", "32B")
TMAP_SWIZZLES = ("none", "32B", "64B", "128B")
TMAP_L2 = ("none", "64B", "128B", "256B")
TMAP_OOB = ("zero", "nan")  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE / _NAN_REQUEST_ZERO_FMA
TMAP_BYTES = 128  # the opaque object: a .param .align 64 .b8 name[128] parameter


@dataclass(frozen=True)
class TensorMap:
    """A tiled tensor map (what ``cuTensorMapEncodeTiled`` takes), filling kernel parameter ``name``.

    ``dims`` (elements) and ``box`` (elements) and ``estrides`` innermost first, as the driver takes
    them; ``strides``: the byte strides of dimensions 1..rank-1 (dimension 0 is dense).  The tensor
    starts ``offset`` bytes into ``buffer``.  Only the description is checked here (the header is a
    file format); the driver's own limits are ``encode_issues``.
    """

    name: str
    buffer: str
    type: str
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    estrides: tuple[int, ...] = ()
    offset: int = 0
    interleave: str = "none"
    swizzle: str = "none"
    l2: str = "none"
    oob: str = "zero"
    # bytes into the parameter where the map's 128 bytes sit: a map inside a by-value struct
    # (CUTLASS's Params, CuTe's Copy_Atom) beside other fields, which a PARAM line gives
    at: int = 0

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def element_strides(self) -> tuple[int, ...]:
        return self.estrides or (1,) * self.rank

    @property
    def element_bytes(self) -> int:
        return _BYTES[self.type.split(".")[0]]

    @property
    def box_elements(self) -> int:
        """Elements one copy moves: the box traversed with the element strides (ceil(box / estride))."""
        n = 1
        for b, e in zip(self.box, self.element_strides):
            n *= -(-b // e)
        return n

    @property
    def box_bytes(self) -> int:
        """Bytes one tensor copy moves, out-of-bounds elements included: its complete_tx count."""
        return self.box_elements * self.element_bytes

    @property
    def inner_bytes(self) -> int:
        """Bytes of one box row (the innermost dimension) in shared memory, before any padding."""
        return -(-self.box[0] // self.element_strides[0]) * self.element_bytes

    @property
    def smem_row_bytes(self) -> int:
        """Shared bytes between box rows: the row itself, or under a swizzle the swizzle span
        (``fuzzptx.isa.layouts.ROW_BYTES``): a narrower row is padded to it.  Measured on an H100:
        a 32-byte row under 64B and a 64-byte row under 128B put their second row one span on
        (tests/hw_records/tma_tensor_h100.json)."""
        return self.inner_bytes if self.swizzle == "none" else max(self.inner_bytes, ROW_BYTES[self.swizzle])

    @property
    def smem_bytes(self) -> int:
        """Shared bytes one copy's box spans (rows times ``smem_row_bytes``)."""
        return self.box_elements * self.element_bytes // self.inner_bytes * self.smem_row_bytes

    def byte_strides(self) -> tuple[int, ...]:
        """The byte stride of every dimension, dimension 0 included."""
        return (self.element_bytes,) + tuple(self.strides)

    def header_line(self) -> str:
        def ints(t: tuple[int, ...]) -> str:
            return ",".join(str(x) for x in t)
        words = [f"{self.name} buffer={self.buffer}"]
        if self.offset:
            words.append(f"offset={self.offset}")
        words += [f"type={self.type}", f"dims={ints(self.dims)}"]
        if self.strides:
            words.append(f"strides={ints(self.strides)}")
        words.append(f"box={ints(self.box)}")
        if self.estrides and any(e != 1 for e in self.estrides):
            words.append(f"estrides={ints(self.estrides)}")
        for key, value in (("interleave", self.interleave), ("swizzle", self.swizzle), ("l2", self.l2)):
            if value != "none":
                words.append(f"{key}={value}")
        if self.oob != "zero":
            words.append(f"oob={self.oob}")
        if self.at:
            words.append(f"at={self.at}")
        return " ".join(words)

    def encode_issues(self) -> tuple[str, ...]:
        """What ``cuTensorMapEncodeTiled`` refuses (CUDA driver API, cuTensorMapEncodeTiled): rank
        1-5 (3-5 interleaved), dims in [1, 2^32], byte strides multiples of 16 (32 interleaved) below
        2^40, box dims in [1, 256], the box's inner row a multiple of 16 bytes (no interleave) and at
        most the swizzle span, element strides in [1, 8], the NaN fill only for float types."""
        out = []
        if not 1 <= self.rank <= 5:
            out.append(f"rank {self.rank} is outside 1..5")
        if self.interleave != "none" and self.rank < 3:
            out.append("an interleaved map needs rank 3 or more")
        if len(self.strides) != self.rank - 1:
            out.append(f"strides= needs {self.rank - 1} value(s) (dimensions 1..rank-1)")
        if len(self.box) != self.rank:
            out.append(f"box= needs {self.rank} value(s)")
        if self.estrides and len(self.estrides) != self.rank:
            out.append(f"estrides= needs {self.rank} value(s)")
        if any(not 1 <= d <= 1 << 32 for d in self.dims):
            out.append("dims must lie in [1, 2^32]")
        align = 32 if self.interleave == "32B" else 16
        if any(s % align or not 0 < s < 1 << 40 for s in self.strides):
            out.append(f"strides must be positive multiples of {align} below 2^40")
        if any(not 1 <= b <= 256 for b in self.box):
            out.append("box dims must lie in [1, 256]")
        if any(not 1 <= e <= 8 for e in self.element_strides):
            out.append("estrides must lie in [1, 8]")
        inner = (self.box[0] if self.box else 0) * self.element_bytes
        if self.interleave == "none" and inner % 16:
            out.append(f"the box's inner row is {inner} bytes: a multiple of 16 is needed")
        span = {"none": 0, "32B": 32, "64B": 64, "128B": 128}[self.swizzle]
        if self.interleave == "none" and span and inner > span:
            out.append(f"the box's inner row is {inner} bytes, more than the {self.swizzle} swizzle span")
        if self.oob == "nan" and not self.type.startswith(("f", "bf", "tf")):
            out.append("oob=nan needs a floating-point type")
        return tuple(out)


def element_bytes(type_: str) -> int:
    return _BYTES[type_]


@dataclass(frozen=True)
class Buffer:
    """A global buffer passed through the kernel parameter of the same name; or, with ``param``, whose
    address sits at byte ``at`` of that by-value struct parameter (CUTLASS's ``Params`` holds its
    tensors' pointers: ``BUFFER: NAME ... in=PARAM at=OFFSET``); or, named by no parameter, the
    memory a TENSORMAP describes (the maps inside CUTLASS's ``Params``: the driver holds their address).

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
    param: str = ""  # the by-value struct parameter whose bytes hold this buffer's address ("": its own parameter)
    at: int = 0  # byte offset of the address inside ``param``

    @property
    def nbytes(self) -> int:
        return self.count * element_bytes(self.type)


@dataclass(frozen=True)
class Launch:
    kernel: str
    grid: tuple[int, int, int] = (1, 1, 1)
    block: tuple[int, int, int] = (128, 1, 1)
    dynamic_smem: int = 0
    # CTAs per thread-block cluster (cuLaunchKernelEx's cluster-dimension attribute); 1,1,1: no
    # cluster attribute (a kernel's own ``.reqnctapercluster`` still applies)
    cluster: tuple[int, int, int] = (1, 1, 1)

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
    tensormaps: tuple[TensorMap, ...] = ()
    # where a plain file's header came from: ``inferred`` (no header, or the printed inferred
    # header pasted back: either way the launch is fuzzptx's guess, not the user's word), the file
    # it was read from, and the parameters a user or compiler gave a value (``fuzzptx.launch``)
    inferred: bool = field(default=False, compare=False)
    source: str | None = field(default=None, compare=False)
    given: tuple[str, ...] = field(default=(), compare=False)

    def tensormap(self, name: str) -> TensorMap:
        for t in self.tensormaps:
            if t.name == name:
                return t
        raise KeyError(name)

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
            + (f" smem={la.dynamic_smem}" if la.dynamic_smem else "")
            + (f" cluster={_triple(la.cluster)}" if la.cluster != (1, 1, 1) else ""),
        ]
        for b in self.buffers:
            seed = f" seed={b.seed}" if not b.init.startswith("hex:") and b.init in ("random", "small_int", "special") else ""
            inside = f" in={b.param} at={b.at}" if b.param else ""
            lines.append(f"BUFFER: {b.name} type={b.type} count={b.count} init={b.init}{seed}{inside}"
                         + (" output" if b.output else ""))
        # a by-value struct's bytes as one integer: hex past 64 bits (and past Python's 4300 decimal digits)
        lines += [f"PARAM: {k} value={v:#x}" if v >> 64 else f"PARAM: {k} value={v}" for k, v in self.scalars]
        lines += [f"TENSORMAP: {t.header_line()}" for t in self.tensormaps]
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
        program = Program.from_module(module, file, kernel)
        return replace(program, source=file) if not file.startswith("<") else program

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
    tmaps: list[tuple[TensorMap, int]] = []  # with their header lines
    expect: list[tuple[str, str]] = []
    notes: list[str] = []
    signature = None
    numerics = "spec"
    seen_magic = False
    once: dict[str, int] = {}  # LAUNCH, NUMERICS, SIGNATURE, and each BUFFER/PARAM name: the line that gave it
    for i, raw in enumerate(module.preamble):
        line = i + 1
        text = raw.strip()
        if not text:
            continue
        if text == MAGIC:
            seen_magic = True
            continue
        if re.fullmatch(r"fuzzptx-repro v\S*", text):
            raise ReproError(f"{text!r}: this fuzzptx reads {MAGIC!r} headers", file=file, line=line)
        key, sep, rest = text.partition(":")
        if not sep or key not in ("LAUNCH", "BUFFER", "PARAM", "TENSORMAP", "NUMERICS", "EXPECT", "SIGNATURE", "NOTE"):
            continue  # free comment text
        rest = rest.strip()
        what = key if key in ("LAUNCH", "NUMERICS", "SIGNATURE") else \
            f"a BUFFER or PARAM named {rest.split()[0]}" if key in ("BUFFER", "PARAM") and rest.split() else None
        if what is not None:
            if what in once:
                raise ReproError(f"{what} given twice (first on line {once[what]})", file=file, line=line)
            once[what] = line
        if key == "LAUNCH":
            _, kv = _fields(rest, file, line)
            if "kernel" not in kv:
                raise ReproError("LAUNCH needs kernel=<name>", file=file, line=line)
            launch = Launch(
                kv["kernel"],
                _dims(kv, "grid", file, line, (1, 1, 1)),
                _dims(kv, "block", file, line, (128, 1, 1)),
                _int(kv, "smem", file, line, 0),
                _dims(kv, "cluster", file, line, (1, 1, 1)),
            )
            if any(g % c for g, c in zip(launch.grid, launch.cluster)):
                raise ReproError(f"grid={_triple(launch.grid)} is not a multiple of cluster={_triple(launch.cluster)} "
                                 "(the driver refuses the launch)", file=file, line=line)
            if launch.cluster[0] * launch.cluster[1] * launch.cluster[2] > 16:
                raise ReproError(f"cluster={_triple(launch.cluster)}: at most 16 CTAs in a cluster", file=file, line=line)
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
            if count * element_bytes(btype) > MAX_BUFFER_BYTES:
                raise ReproError(f"BUFFER {words[0]}: count={count} of {btype} is {count * element_bytes(btype):,} bytes, "
                                 f"over the limit of {MAX_BUFFER_BYTES:,} (1 GiB) a judge materialises", file=file, line=line)
            inside = kv.get("in", "")
            at = _int(kv, "at", file, line, 0)
            if ("at" in kv) != bool(inside):
                raise ReproError(f"BUFFER {words[0]}: in=PARAM and at=OFFSET go together (a buffer whose address "
                                 "sits inside a by-value struct parameter)", file=file, line=line)
            buffers.append(Buffer(words[0], btype, count, init, _int(kv, "seed", file, line, 0), "output" in words[1:],
                                  inside, at))
        elif key == "PARAM":
            words, kv = _fields(rest, file, line)
            if not words:
                raise ReproError("PARAM needs a name", file=file, line=line)
            scalars.append((words[0], _int(kv, "value", file, line)))
        elif key == "TENSORMAP":
            tmaps.append((_tensormap(rest, file, line), line))
        elif key == "EXPECT":
            judge, sep2, verdict = rest.partition(":")
            if not sep2:
                raise ReproError("EXPECT needs '<judge>: <verdict>'", file=file, line=line)
            expect.append((judge.strip(), verdict.strip()))
        elif key == "SIGNATURE":
            if not rest:
                raise ReproError("SIGNATURE needs a finding signature (or drop the line)", file=file, line=line)
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
    by_name = {p.name: p for p in kernels[launch.kernel].params}
    for b in buffers:
        if b.param:
            p = by_name.get(b.param)
            size = _struct_bytes(p) if p is not None else 0
            if b.name in params:
                raise ReproError(f"BUFFER {b.name} in={b.param}: the name is a parameter of kernel {launch.kernel}; "
                                 "a buffer inside a struct needs a name of its own", file=file, line=1)
            if not size or b.param not in {n for n, _ in scalars}:
                raise ReproError(f"BUFFER {b.name}: in={b.param} is no by-value struct parameter with a PARAM line",
                                 file=file, line=1)
            if b.at % 8 or b.at < 0 or b.at + 8 > size:
                raise ReproError(f"BUFFER {b.name}: at={b.at}: a pointer sits 8-byte aligned, its 8 bytes inside "
                                 f"the {size}-byte parameter {b.param}", file=file, line=1)
        elif b.name not in params and b.name not in {t.buffer for t, _ in tmaps}:
            raise ReproError(f"BUFFER {b.name} names no parameter of kernel {launch.kernel} (nor is it a "
                             "TENSORMAP's buffer, or in=PARAM at=OFFSET inside a struct)", file=file, line=1)
    for name, _ in scalars:
        if name not in params:
            raise ReproError(f"PARAM {name} names no parameter of kernel {launch.kernel}", file=file, line=1)
    bnames = {b.name: b for b in buffers}
    for t, tline in tmaps:
        p = by_name.get(t.name)
        if p is None:
            raise ReproError(f"TENSORMAP {t.name} names no parameter of kernel {launch.kernel}", file=file, line=tline)
        size = p.dims[0] if p.dims and len(p.dims) == 1 and p.dims[0] else 0
        if p.space != ".param" or p.type != ".b8" or size < TMAP_BYTES:
            raise ReproError(f"TENSORMAP {t.name}: the parameter must be declared .param .align 64 .b8 "
                             f"{t.name}[{TMAP_BYTES}] (or a larger by-value struct holding the map at=)",
                             file=file, line=tline)
        if t.at % 64 or t.at < 0 or t.at + TMAP_BYTES > size:
            raise ReproError(f"TENSORMAP {t.name}: at={t.at}: a map sits 64-byte aligned, its {TMAP_BYTES} "
                             f"bytes inside the {size}-byte parameter", file=file, line=tline)
        b = bnames.get(t.buffer)
        if b is None:
            raise ReproError(f"TENSORMAP {t.name}: buffer={t.buffer} is no BUFFER of the header", file=file, line=tline)
        if t.offset % 16:
            raise ReproError(f"TENSORMAP {t.name}: offset={t.offset} must be a multiple of 16 (the driver's "
                             "global address alignment)", file=file, line=tline)
    missing = params - {b.name for b in buffers if not b.param} - {n for n, _ in scalars} - {t.name for t, _ in tmaps}
    if missing:
        raise ReproError(f"kernel {launch.kernel} parameter(s) {', '.join(sorted(missing))} have no BUFFER or PARAM line", file=file, line=1)
    # the printed inferred header pasted into the file: used as written, and still a guess
    inferred = any(n.startswith(INFERRED) for n in notes)
    return Program(module, launch, tuple(buffers), tuple(scalars), tuple(expect), signature, tuple(notes), numerics,
                   tuple(t for t, _ in tmaps), inferred=inferred)


def _struct_bytes(p) -> int:
    """The bytes of a one-dimensional array parameter (a by-value struct), 0 for any other."""
    if not p.dims or len(p.dims) != 1 or not p.dims[0]:
        return 0
    bits = re.search(r"(\d+)$", p.type)
    return p.dims[0] * max(1, int(bits.group(1)) // 8 if bits else 1)


def _ints(kv: dict[str, str], key: str, file: str, line: int, what: str) -> tuple[int, ...]:
    if key not in kv:
        return ()
    try:
        vals = tuple(int(p, 0) for p in kv[key].split(","))
    except ValueError:
        raise ReproError(f"TENSORMAP {what}: {key}={kv[key]!r}: expected comma-separated integers", file=file,
                         line=line) from None
    return vals


def _choice(kv: dict[str, str], key: str, allowed: tuple[str, ...], file: str, line: int, what: str) -> str:
    v = kv.get(key, allowed[0])
    if v not in allowed:
        raise ReproError(f"TENSORMAP {what}: {key}={v!r} is not one of {', '.join(allowed)}", file=file, line=line)
    return v


_TMAP_KEYS = {"buffer", "offset", "type", "dims", "strides", "box", "estrides", "interleave", "swizzle", "l2", "oob", "at"}


def _tensormap(rest: str, file: str, line: int) -> TensorMap:
    """One ``TENSORMAP:`` line; every problem is one ``file:line: message``."""
    words, kv = _fields(rest, file, line)
    if len(words) != 1:
        raise ReproError("TENSORMAP needs one parameter name, then key=value fields", file=file, line=line)
    name = words[0]
    unknown = sorted(set(kv) - _TMAP_KEYS)
    if unknown:
        raise ReproError(f"TENSORMAP {name}: unknown field {unknown[0]}= (have: {', '.join(sorted(_TMAP_KEYS))})",
                         file=file, line=line)
    for key in ("buffer", "type", "dims", "box"):
        if key not in kv:
            raise ReproError(f"TENSORMAP {name}: missing {key}=", file=file, line=line)
    t = TensorMap(
        name, kv["buffer"], _choice(kv, "type", TMAP_TYPES, file, line, name),
        _ints(kv, "dims", file, line, name), _ints(kv, "strides", file, line, name), _ints(kv, "box", file, line, name),
        _ints(kv, "estrides", file, line, name), _int(kv, "offset", file, line, 0),
        _choice(kv, "interleave", TMAP_INTERLEAVES, file, line, name), _choice(kv, "swizzle", TMAP_SWIZZLES, file, line, name),
        _choice(kv, "l2", TMAP_L2, file, line, name), _choice(kv, "oob", TMAP_OOB, file, line, name),
        _int(kv, "at", file, line, 0))
    if t.offset < 0:
        raise ReproError(f"TENSORMAP {name}: offset must not be negative", file=file, line=line)
    issues = t.encode_issues()
    if issues:
        raise ReproError(f"TENSORMAP {name}: {issues[0]}", file=file, line=line)
    return t


INFERRED = "header inferred"  # the note a program with an inferred header carries


def say_inferred(program: Program, file: str, command: str) -> None:
    """Print a program's inferred header (stderr), so the user sees it and can edit it into the file
    (not when the file holds it already: a pasted header is the user's own)."""
    if program.inferred and MAGIC not in (ln.strip() for ln in program.module.preamble):
        lines = "\n".join("  // " + ln for ln in program.header_lines())
        print(f"fuzzptx {command}: {file} has no fuzzptx header; inferred (put it at the top of the file to "
              f"change it):\n{lines}", file=sys.stderr)
INFERRED_COUNT = 4096  # elements of each inferred buffer: room for any single-CTA tensor-core kernel
_POINTERS = (".u64", ".b64", ".s64")


def inferred_header(module: Module, file: str, kernel: str | None = None) -> Program:
    """A header for plain PTX (no ``// fuzzptx-repro v1`` lines), so any PTX file can be checked,
    replayed and shrunk: the first kernel, launched as one CTA of its ``.reqntid`` or ``.maxntid``, else of
    128 threads (a warpgroup: every tensor-core form fits); each 64-bit parameter a buffer of ``INFERRED_COUNT`` random u32
    words (seed 0), each an output (what the kernel writes is compared); each other scalar
    parameter 0, and each array parameter (a by-value struct: CUTLASS's ``Params``) zero bytes,
    a ``PARAM`` whose value is the bytes read as one little-endian integer.  A ptxas-only signature needs none of it; the program's note says it was
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
    arrays: list[str] = []
    for p in k.params:
        if p.dims:
            arrays.append(p.name)  # a by-value struct (CUTLASS's Params, CuTe's TMA descriptors): zero bytes
            scalars.append((p.name, 0))
        elif p.type in _POINTERS:
            buffers.append(Buffer(p.name, "u32", INFERRED_COUNT, "random", 0, output=True))
        else:
            scalars.append((p.name, 0))
    block = _required_block(k)
    shape = f"{block[0]}" if block[1:] == (1, 1) else ",".join(map(str, block))
    note = (f"{INFERRED}: kernel {k.name}, one CTA of {shape} threads, {len(buffers)} buffer(s) of "
            f"{INFERRED_COUNT} random u32, scalars 0 (edit the header to change them)")
    if arrays:
        note += (f"; array parameter(s) {', '.join(arrays)}: zero bytes (pointers in them are null: ptxas-only "
                 "signatures need nothing more, a launch needs the header written by hand)")
    smem = dynamic_smem_need(module, k)
    if smem:
        note += (f"; dynamic shared memory {smem} bytes (.extern .shared: the sm_90 maximum of "
                 f"{SM90_MAX_SMEM} beside its static variables)")
    if len(names) > 1:
        note += f"; kernels in the file: {', '.join(names)} (--kernel NAME launches another)"
    return Program(module, Launch(k.name, block=block, dynamic_smem=smem), tuple(buffers), tuple(scalars), (), None,
                   (note,), "spec", inferred=True)


SM90_MAX_SMEM = 227 * 1024  # bytes of shared memory one CTA may have on sm_90 (opt-in), static and dynamic


def dynamic_smem_need(module: Module, kernel) -> int:
    """Dynamic shared memory for a kernel with ``.extern .shared`` arrays: all sm_90 allows a CTA
    beside its static variables (0: the kernel declares none)."""
    lay = shared_layout(module, kernel)
    if lay.dynamic_start is None:
        return 0
    return max(0, SM90_MAX_SMEM - (lay.dynamic_start - SHARED_RESERVED))


def _required_block(kernel) -> tuple[int, int, int]:
    """The kernel's ``.reqntid`` (a launch of any other shape fails), else its ``.maxntid`` (CUTLASS
    declares its block size so: 384 for a producer and two consumer warpgroups), else one warpgroup."""
    return kernel.ntid("reqntid") or kernel.ntid("maxntid") or (128, 1, 1)

