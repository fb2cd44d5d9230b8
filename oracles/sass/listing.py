"""The SASS of a cubin as values: functions, instructions with the registers they write and read,
and each function's control flow.

One ``nvdisasm -c`` run per cubin: a batched module's cubin holds every program of the batch, and
``disassemble`` caches its listing by the cubin's hash, so each program's verdict reads its own
function out of one disassembly.  The register model is the part of SASS syntax the pipeline rules
need (``oracles/sass/pipeline.py``): the destination is the first operand when it is a general
register (``R12``), its width comes from the opcode (``.64``, ``.128``, ``.WIDE``, ``CS2R``, double
precision, ``LDSM .2/.4``, the MMA shapes), and every other ``R`` operand is read (``[R8.64]`` reads two).
Uniform registers (``UR``) and predicates are not tracked: the GMMA pipeline holds general registers only.
"""
from __future__ import annotations

import hashlib
import os
import re
import struct
import subprocess
import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field
from threading import Lock

from fuzzptx.ptx.ir import cached_once

from ..elf import SHT_PROGBITS, read as elf_read

_INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(?:(@!?U?P(?:\d|T))\s+)?([A-Z][A-Za-z0-9_.]*)\s*(.*?)\s*;")
_REG = re.compile(r"(?<![\w.])(-|!|\|)?R(\d+)(\.64|\.reuse)?")
_GMMA = re.compile(r"^([HIQB]?GMMA)\.(?:SP\.)?64x(\d+)x(\d+)(?:\.(\w+))?")

# opcodes whose first register operand is read, not written
_FIRST_IS_SOURCE = ("RET", "BRX", "JMX", "WARPSYNC", "BAR", "CALL", "BRA", "EXIT", "NANOSLEEP", "YIELD",
                    "BSYNC", "BSSY", "BREAK", "KILL", "RTT")
# opcodes that write no general register whatever their operands look like
_NO_WRITE = ("ST", "STG", "STS", "STL", "STSM", "RED", "REDG", "REDS", "CCTL", "MEMBAR", "FENCE", "ERRBAR",
             "DEPBAR", "WARPGROUP", "UTMALDG", "UTMASTG", "UTMAPF", "UTMACCTL", "UBLKCP", "UBLKRED", "UBLKPF",
             "NOP", "LDGDEPBAR", "ARRIVES", "ELECT", "USETMAXREG", "SETMAXREG", "ACQBULK", "BPT", "PMTRIG")


def _width_of_dest(opcode: str) -> int:
    """How many consecutive registers the destination of ``opcode`` spans."""
    base = opcode.split(".")[0]
    mods = opcode.split(".")[1:]
    if base in ("HMMA", "IMMA", "DMMA"):
        return 2 if "F16" in mods[1:2] else 4
    if base == "LDSM":
        return 4 if ("4" in mods) else 2 if ("2" in mods) else 1
    if base == "CS2R":
        return 1 if "32" in mods else 2
    if base in ("DADD", "DMUL", "DFMA", "DMNMX", "DSETP") or base.startswith("D") and base in ("DRCP",):
        return 1 if base == "DSETP" else 2
    if "128" in mods:
        return 4
    if "64" in mods or "WIDE" in mods:
        return 2
    if base in ("F2F", "I2F", "F2I", "I2I") and mods and mods[0] in ("F64", "S64", "U64"):
        return 2
    return 1


@dataclass(frozen=True)
class Gmma:
    """One warpgroup MMA as issued: what it writes and reads asynchronously."""

    acc: frozenset[int]  # accumulator registers, written (and read unless the input is RZ)
    a: frozenset[int]  # A-operand registers when A is in registers, read
    reads_acc: bool  # the accumulator input is the registers themselves, not RZ
    closes_group: bool  # ``gsb0``: the last GMMA of a commit group
    shape: str  # "64x64x16.F32" -- for messages
    nk: tuple[int, int]  # (N, K): the PTX wgmma's shape m64nNkK
    # no PTX wgmma of its own: ``!UPT`` with a register input (the GMMA -O0 adds after each wgmma), or
    # ``RZ, gdesc[URZ], RZ`` (writes nothing: -O3 leaves one to close a commit group whose wgmma it dropped)
    auxiliary: bool


@dataclass(frozen=True)
class Instruction:
    addr: int
    guard: str | None
    opcode: str
    operands: str
    text: str  # the line as disassembled, for excerpts
    target: int | None = None  # the address a branch or call goes to

    @cached_once
    def base(self) -> str:
        return self.opcode.split(".")[0]

    @cached_once
    def gmma(self) -> Gmma | None:
        m = _GMMA.match(self.opcode)
        if m is None:
            return None
        kind, n, k, acc_type = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        ops = [o.strip() for o in self.operands.split(",")]
        dst = int(ops[0][1:]) if re.fullmatch(r"R\d+", ops[0]) else None
        per = n // 4 if (acc_type == "F16" and kind in ("HGMMA", "QGMMA")) else n // 2
        acc = frozenset(range(dst, dst + per)) if dst is not None else frozenset()
        a = frozenset()
        if len(ops) > 1 and re.fullmatch(r"R\d+", ops[1]):
            a0 = int(ops[1][1:])
            a = frozenset(range(a0, a0 + 4))
        desc_at = next((i for i, o in enumerate(ops) if o.startswith("gdesc")), None)
        acc_in = ops[desc_at + 1] if desc_at is not None and desc_at + 1 < len(ops) else "RZ"
        return Gmma(acc=acc, a=a, reads_acc=acc_in != "RZ", closes_group="gsb0" in ops,
                    shape=f"{n}x{k}" + (f".{acc_type}" if acc_type else ""), nk=(n, int(k)),
                    auxiliary=dst is None or ("!UPT" in ops and acc_in != "RZ"))

    @cached_once
    def writes(self) -> frozenset[int]:
        """General registers this instruction writes (a GMMA's are in ``gmma``, not here)."""
        if self.gmma is not None or self.base in _NO_WRITE or self.base in _FIRST_IS_SOURCE:
            return frozenset()
        first = self.operands.split(",")[0].strip()
        m = re.fullmatch(r"R(\d+)", first)
        if m is None:
            ops = [o.strip() for o in self.operands.split(",")]
            # a leading predicate output (SHFL PT, R3, ...): the register after it is the destination
            if self.base == "SHFL" and len(ops) > 1 and re.fullmatch(r"R\d+", ops[1]):
                m = re.fullmatch(r"R(\d+)", ops[1])
            if m is None:
                return frozenset()
        r = int(m.group(1))
        return frozenset(range(r, r + _width_of_dest(self.opcode)))

    @cached_once
    def reads(self) -> frozenset[int]:
        """General registers this instruction reads (a GMMA's asynchronous reads are in ``gmma``)."""
        if self.gmma is not None:
            return frozenset()
        out: set[int] = set()
        skip_first = bool(self.writes)
        for i, m in enumerate(_REG.finditer(self.operands)):
            if i == 0 and skip_first:
                continue
            r = int(m.group(2))
            out.update(range(r, r + (2 if m.group(3) == ".64" else 1)))
        if self.base in ("STG", "STS", "STL", "ST", "STSM", "RED", "ATOM", "ATOMG", "ATOMS") and out:
            mods = self.opcode.split(".")
            last = [int(m.group(2)) for m in _REG.finditer(self.operands)][-1]
            out.update(range(last, last + (4 if "128" in mods else 2 if "64" in mods else 1)))
        return frozenset(out)



@dataclass(frozen=True)
class SassFunction:
    """One function of a cubin (a kernel, or a subroutine ptxas kept), in address order; addresses
    are offsets in its ``.text`` section, as ``nvdisasm`` prints them for the cubin."""

    name: str
    instrs: tuple[Instruction, ...]
    at: dict[int, int] = field(compare=False)  # address -> index
    calls: dict[int, str] = field(compare=False)  # index of a CALL -> the function it calls ("" through a register)
    subroutines: tuple[str, ...] = ()  # the other functions of its section: where a call through a register may go

    def successors(self, i: int) -> tuple[int, ...]:
        """Indices that may run after instruction ``i`` inside this function (a call falls through:
        its callee runs in between, see ``pipeline``); none after RET or an unpredicated EXIT/BRA.
        A branch whose target is not an instruction of this function may go to any of them."""
        ins = self.instrs[i]
        nxt = (i + 1,) if i + 1 < len(self.instrs) else ()
        if ins.base in ("EXIT", "RET", "KILL"):
            return nxt if ins.guard else ()
        if ins.base in ("BRA", "JMP", "BRX", "JMX"):
            t = self.at.get(ins.target) if ins.target is not None else None
            if t is None:
                return tuple(range(len(self.instrs)))
            return (t,) + nxt if ins.guard else (t,)
        return nxt

    @cached_once
    def successor_table(self) -> tuple[tuple[int, ...], ...]:
        """``successors(i)`` of every instruction, worked out once: the rules walk them many times."""
        return tuple(self.successors(i) for i in range(len(self.instrs)))

    def excerpt(self, i: int, before: int = 3, after: int = 1) -> tuple[str, ...]:
        lo, hi = max(0, i - before), min(len(self.instrs), i + after + 1)
        return tuple(self.instrs[k].text for k in range(lo, hi))


@dataclass(frozen=True)
class Listing:
    """The functions of one cubin, by their symbol names."""

    functions: dict[str, SassFunction] = field(compare=False)

    def function(self, name: str) -> SassFunction | None:
        return self.functions.get(name)


# ---------------------------------------------------------------- the cubin's ELF, read directly

@dataclass(frozen=True)
class _Text:
    section: str
    code: bytes
    functions: tuple[tuple[str, int, int], ...]  # (name, offset, size) of each function symbol in it
    calls: dict[int, str]  # offset of a call instruction -> the function its relocation names


def _text_sections(cubin: bytes) -> list[_Text]:
    """The ``.text.*`` sections of an ELF64 cubin with their function symbols and call relocations."""
    elf = elf_read(cubin)
    out = []
    for i, sec in enumerate(elf.sections):
        if not sec.name.startswith(".text.") or sec.type != SHT_PROGBITS:
            continue
        funcs = tuple(sorted(((y.name, y.value, y.size) for y in elf.symbols if y.shndx == i and y.is_function),
                             key=lambda f: f[1]))
        calls: dict[int, str] = {}
        for r_offset, sym_index in elf.relocations(i):
            sym = elf.symbols[sym_index] if sym_index < len(elf.symbols) else None
            if sym is not None and sym.is_function:
                calls[r_offset] = sym.name
        out.append(_Text(sec.name, elf.section_bytes(sec), funcs or ((sec.name[len(".text."):], 0, sec.size),), calls))
    return out


def _function_listings(texts_by_cubin: list[list[_Text]], sass: str) -> list[Listing]:
    """Cut the raw disassembly of the concatenated sections back into each cubin's functions."""
    by_addr: dict[int, tuple[str, str, str]] = {}
    for line in sass.splitlines():
        m = _INSTR.match(line)
        if m:
            by_addr[int(m.group(1), 16)] = (m.group(2), m.group(3), m.group(4))
    listings, base = [], 0
    for texts in texts_by_cubin:
        functions: dict[str, SassFunction] = {}
        for t in texts:
            starts = {off: name for name, off, _ in t.functions}
            for name, off, size in t.functions:
                instrs, at, calls = [], {}, {}
                for rel in range(off, off + (size or len(t.code) - off), 16):
                    got = by_addr.get(base + rel)
                    if got is None:
                        continue
                    guard, op, args = got
                    target = None
                    tm = re.search(r"(?<![\w\[])0x([0-9a-f]+)\b", args) if op.split(".")[0] in (
                        "BRA", "CALL", "JMP", "BRX", "JMX", "BSSY", "RET") else None
                    if tm:
                        target = int(tm.group(1), 16) - base
                        args = args[:tm.start()] + f"0x{target:x}" + args[tm.end():]
                    at[rel] = len(instrs)
                    if op.startswith("CALL"):
                        if re.match(r"\s*R\d+", args):  # through a register: any subroutine of the section
                            calls[len(instrs)] = ""
                        else:
                            callee = t.calls.get(rel) or (starts.get(target) if target is not None else None)
                            if callee is not None:
                                calls[len(instrs)] = callee
                    text = f"/*{rel:04x}*/ {(guard + ' ') if guard else ''}{op} {args} ;".replace("  ;", " ;")
                    instrs.append(Instruction(rel, guard, op, args, text, target))
                functions[name] = SassFunction(name, tuple(instrs), at, calls,
                                               tuple(n for n, o, _ in t.functions if o != 0 and n != name))
            base += _aligned(len(t.code))
        listings.append(Listing(functions))
    return listings


def _aligned(n: int) -> int:
    return (n + 127) // 128 * 128


_CACHE: OrderedDict[str, Listing] = OrderedDict()
_CACHE_SIZE = 256
_LOCK = Lock()


def cubin_sm(cubin: bytes) -> int:
    """The SM a cubin is for (90 for sm_90a), from its ELF header's flags: bits 8-15 in the ELF ABI
    of ptxas 13 (OS ABI 0x41), bits 0-7 in the older one of ptxas 12 (0x33)."""
    flags = struct.unpack_from("<I", cubin, 0x30)[0]
    return (flags >> 8) & 0xFF if cubin[7] == 0x41 else flags & 0xFF


def _key(cubin: bytes, tool: list[str]) -> str:
    return hashlib.blake2b(cubin, digest_size=16).hexdigest() + "\0" + tool[0]


def disassemble_all(cubins: list[bytes], tool: list[str]) -> list[Listing]:
    """The listings of ``cubins`` from one disassembler run: their ``.text`` sections concatenated
    and read as raw sm_90a code (``nvdisasm -b SM90a``), cut back by the ELF's function symbols.
    The disassembler's start-up (~0.25 s) is most of its cost, so a block's modules share one run.
    A cubin for another SM than sm_90 has an empty listing (the GMMA pipeline is Hopper's)."""
    keys = [_key(c, tool) for c in cubins]
    found: dict[str, Listing] = {}  # this call's listings: the cache may evict them before it returns
    with _LOCK:
        missing = {k: c for k, c in zip(keys, cubins) if k not in _CACHE and cubin_sm(c) == 90}
        for k, c in zip(keys, cubins):
            if cubin_sm(c) != 90:
                found[k] = Listing({})
            elif k in _CACHE:
                _CACHE.move_to_end(k)
                found[k] = _CACHE[k]
    if missing:
        texts = [_text_sections(c) for c in missing.values()]
        blob = b"".join(t.code + b"\0" * (_aligned(len(t.code)) - len(t.code)) for ts in texts for t in ts)
        sass = run_disassembler(blob, [tool[0], "-b", "SM90a", "-c", "-ndf"]) if blob else ""
        found.update(zip(missing, _function_listings(texts, sass)))
    with _LOCK:
        for k in keys:
            _CACHE[k] = found[k]
            _CACHE.move_to_end(k)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return [found[k] for k in keys]


def cached(cubin: bytes, tool: list[str]) -> Listing | None:
    """The listing ``disassemble`` made of ``cubin`` if it is still cached, else None (never a
    disassembler run: what reads SASS only where it is already at hand, as coverage does)."""
    if cubin_sm(cubin) != 90:
        return None
    with _LOCK:
        return _CACHE.get(_key(cubin, tool))


def disassemble(cubin: bytes, tool: list[str]) -> Listing:
    """The listing of one cubin (cached: the programs of a batch share their module's cubin)."""
    return disassemble_all([cubin], tool)[0]


def run_disassembler(data: bytes, tool: list[str]) -> str:
    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
        f.write(data)
    try:
        return subprocess.run(tool + [f.name], check=True, capture_output=True, text=True, timeout=300).stdout
    finally:
        os.unlink(f.name)
