"""The parts of a cubin's ELF64 that judges read directly: sections, symbols, and the per-kernel
attributes of ``.nv.info`` (the register count).

One reader for the SASS verifier's listing (``oracles/sass/listing.py``: code sections, function
symbols, call relocations) and the compile pairs (``--maxrregcount`` below the register count
ptxas chose): nothing else in fuzzptx parses ELF headers.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

SHT_PROGBITS, SHT_SYMTAB, SHT_RELA = 1, 2, 4
STT_FUNC = 2
# ``.nv.info`` attribute ids (CUDA's EIATTR_*): REGCOUNT is (symbol index, registers)
EIATTR_REGCOUNT = 0x2F
# ``.nv.info`` entry formats: 1 none, 2 one byte, 3 two bytes (in the size field), 4 sized payload
_EIFMT_SVAL = 4


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    offset: int
    size: int
    link: int
    info: int


@dataclass(frozen=True)
class Symbol:
    name: str
    info: int
    shndx: int
    value: int
    size: int

    @property
    def is_function(self) -> bool:
        return self.info & 0xF == STT_FUNC


@dataclass(frozen=True)
class Elf:
    """A cubin's sections and symbols (``data`` is the whole file)."""

    data: bytes
    sections: tuple[Section, ...]
    symbols: tuple[Symbol, ...]

    def section_bytes(self, s: Section) -> bytes:
        return self.data[s.offset:s.offset + s.size]

    def relocations(self, index: int) -> list[tuple[int, int]]:
        """(offset, symbol index) of every RELA entry that applies to section ``index``."""
        out = []
        for s in self.sections:
            if s.type == SHT_RELA and s.info == index:
                for k in range(s.size // 24):
                    r_offset, r_info, _addend = struct.unpack_from("<QQq", self.data, s.offset + 24 * k)
                    out.append((r_offset, r_info >> 32))
        return out


def read(cubin: bytes) -> Elf:
    """The sections and symbols of an ELF64 cubin (``ValueError`` for anything else)."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise ValueError("not an ELF64 cubin")
    shoff = struct.unpack_from("<Q", cubin, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]

    def cstr(base: int, off: int) -> str:
        end = cubin.index(b"\0", base + off)
        return cubin[base + off:end].decode("latin-1")

    names_at = hdrs[shstrndx][4]
    sections = tuple(Section(cstr(names_at, h[0]), h[1], h[4], h[5], h[6], h[7]) for h in hdrs)
    symbols: list[Symbol] = []
    symtab = next((s for s in sections if s.type == SHT_SYMTAB), None)
    if symtab is not None:
        strbase = sections[symtab.link].offset
        for k in range(symtab.size // 24):
            st_name, st_info, _other, st_shndx, st_value, st_size = struct.unpack_from("<IBBHQQ", cubin,
                                                                                        symtab.offset + 24 * k)
            symbols.append(Symbol(cstr(strbase, st_name), st_info, st_shndx, st_value, st_size))
    return Elf(cubin, sections, tuple(symbols))


def registers(cubin: bytes) -> dict[str, int]:
    """Kernel or function name -> the registers per thread ptxas gave it (``EIATTR_REGCOUNT`` in
    ``.nv.info``): what ``ptxas -v`` prints as "Used N registers", read from any cubin, a batched
    module's included, without running ptxas again."""
    elf = read(cubin)
    out: dict[str, int] = {}
    for s in elf.sections:
        if s.name != ".nv.info":
            continue
        d, i = elf.section_bytes(s), 0
        while i + 4 <= len(d):
            fmt, attr, size = d[i], d[i + 1], struct.unpack_from("<H", d, i + 2)[0]
            if fmt != _EIFMT_SVAL:
                i += 4
                continue
            if attr == EIATTR_REGCOUNT and size >= 8:
                sym, count = struct.unpack_from("<II", d, i + 4)
                if sym < len(elf.symbols):
                    out[elf.symbols[sym].name] = count
            i += 4 + size
    return out
