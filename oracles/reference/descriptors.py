"""The 64-bit wgmma matrix descriptor (seed 000, 9.7.15.5.1.2.2): encode, decode, validate.

Bit fields (all checked on an H100, base offset included: tests/hw_records/dense_wgmma_base_offset_explore.json):
  0-13 start >> 4 | 16-29 LBO >> 4 | 32-45 SBO >> 4 | 49-51 base offset | 62-63 swizzle
where each address field is ``matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4``.
All other bits are reserved; ``reserved`` keeps them so decode/encode round-trip any
64-bit value (a fuzzer may set them on purpose).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .layouts import SWIZZLES, SmemLayout, read_tile

SWIZZLE_CODES = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
SWIZZLE_NAMES = {v: k for k, v in SWIZZLE_CODES.items()}
# Where a swizzle pattern must start for base_offset = 0 (seed 000's table).
PATTERN_ALIGN = {"128B": 1024, "64B": 512, "32B": 256}

_FIELD14 = (1 << 14) - 1
_DEFINED = (_FIELD14 | (_FIELD14 << 16) | (_FIELD14 << 32) | (0x7 << 49) | (0x3 << 62))
RESERVED_MASK = ((1 << 64) - 1) & ~_DEFINED


def descriptor_encode(x: int) -> int:
    """The spec's ``matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4``."""
    return (x & 0x3FFFF) >> 4


@dataclass(frozen=True)
class MatrixDescriptor:
    """A wgmma matrix descriptor, byte-valued fields (``start``, ``lbo``, ``sbo`` in bytes)."""

    start: int
    lbo: int
    sbo: int
    base_offset: int = 0
    swizzle: str = "none"  # 'none' | '128B' | '64B' | '32B'
    reserved: int = 0  # raw bits outside the defined fields

    def __post_init__(self) -> None:
        if self.swizzle not in SWIZZLE_CODES:
            raise ValueError(f"swizzle must be one of {tuple(SWIZZLE_CODES)}, not {self.swizzle!r}")

    def encode(self) -> int:
        """The 64-bit value, fields encoded exactly as the spec's formula (masking, not checking)."""
        return (
            descriptor_encode(self.start)
            | descriptor_encode(self.lbo) << 16
            | descriptor_encode(self.sbo) << 32
            | (self.base_offset & 0x7) << 49
            | SWIZZLE_CODES[self.swizzle] << 62
            | (self.reserved & RESERVED_MASK)
        )

    @staticmethod
    def decode(value: int) -> "MatrixDescriptor":
        """Fields of a 64-bit descriptor (address fields back in bytes)."""
        if not 0 <= value < 1 << 64:
            value &= (1 << 64) - 1  # a signed .s64 register holds the same bits
        return MatrixDescriptor(
            start=(value & _FIELD14) << 4,
            lbo=((value >> 16) & _FIELD14) << 4,
            sbo=((value >> 32) & _FIELD14) << 4,
            base_offset=(value >> 49) & 0x7,
            swizzle=SWIZZLE_NAMES[(value >> 62) & 0x3],
            reserved=value & RESERVED_MASK,
        )

    @property
    def representable(self) -> bool:
        """True when ``decode(encode())`` gives this descriptor back (fields fit their encodings)."""
        return MatrixDescriptor.decode(self.encode()) == self

    def smem_layout(self, major: str, element_bits: int) -> SmemLayout:
        """The canonical shared-memory layout this descriptor describes for an operand."""
        return SmemLayout(major, self.swizzle, element_bits, self.lbo, self.sbo, self.start, self.base_offset)

    def issues(self) -> tuple[str, ...]:
        """Rule violations of the descriptor alone, as ``"rule-id: reason"`` strings (empty = fine).

        The start is assumed to be the tile's first element (row 0 of a swizzle pattern).
        """
        out: list[str] = []
        for name in ("start", "lbo", "sbo"):
            v = getattr(self, name)
            if v % 16:
                out.append(f"desc.align16.{name}: {name}={v:#x} is not 16-byte aligned (low 4 bits are dropped)")
            if not 0 <= v < 1 << 18:
                out.append(f"desc.range.{name}: {name}={v:#x} does not fit 18 bits (encode masks it)")
        if not 0 <= self.base_offset <= 7:
            out.append(f"desc.range.base_offset: base_offset={self.base_offset} does not fit 3 bits")
        if self.reserved:
            out.append(f"desc.reserved: reserved bits set ({self.reserved:#x})")
        if self.swizzle == "none":
            if self.base_offset:
                out.append("desc.base_offset.no_swizzle: base offset is only valid with a swizzling mode")
        else:
            out.extend(self.pattern_issues())
        return tuple(out)

    def pattern_issues(self) -> list[str]:
        """Seed 000: base offset is 0 iff the pattern starts on its boundary, else (start >> 7) & 7.

        Only the line bits the mode uses are compared (bit 7 for 32B, 7-8 for 64B, 7-9 for
        128B): e.g. a 64B pattern at 1536 is 512-aligned although ``(1536 >> 7) & 7 == 4``.
        """
        swz = SWIZZLES[self.swizzle]
        phase = int(swz.phase(self.start, self.base_offset))
        if phase == 0:
            return []
        want = (self.start >> 7) & 0x7
        align = PATTERN_ALIGN[self.swizzle]
        if self.base_offset == 0:
            return [f"desc.base_offset.misaligned: {self.swizzle} pattern at {self.start:#x} is not "
                    f"{align}-byte aligned; base offset must be {want}, not 0"]
        return [f"desc.base_offset.mismatch: base offset {self.base_offset} does not match the "
                f"pattern start {self.start:#x} (expected {want})"]


def decode(value: int) -> MatrixDescriptor:
    return MatrixDescriptor.decode(value)


def read_operand(smem: np.ndarray, desc: "MatrixDescriptor | int", major: str, element_bits: int,
                 mn_extent: int, k_extent: int) -> np.ndarray:
    """Element bits ``uint32[mn_extent, k_extent]`` of a wgmma operand a descriptor points at.

    ``major``: "K" for imm-trans 0, "MN" for imm-trans 1.  B (K x N) comes back as [N, K].
    """
    d = desc if isinstance(desc, MatrixDescriptor) else MatrixDescriptor.decode(int(desc))
    return read_tile(smem, d.smem_layout(major, element_bits), mn_extent, k_extent)
