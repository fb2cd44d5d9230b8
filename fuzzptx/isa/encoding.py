"""wgmma's encoding constants as plain integers (no numpy), for readers that only need the bits.

The static checker decodes descriptor bits with these; ``fuzzptx.isa.layouts`` builds the
``MatrixDescriptor``/``Swizzle``/``SmemLayout`` values on top of them.
"""
from __future__ import annotations

SWIZZLE_MODES = ("none", "32B", "64B", "128B")
K_STEP_BYTES = 32  # every dense wgmma reads 32 bytes of K per row (k16 f16, k8 tf32, k32 8-bit, k256 b1)
PATTERN_LINES = {"none": 1, "32B": 2, "64B": 4, "128B": 8}  # 128-byte lines per swizzle pattern repeat

# Descriptor bit fields: (low bit, width).  Address fields hold ``descriptor_encode(bytes)``.
START_FIELD = (0, 14)
LBO_FIELD = (16, 14)
SBO_FIELD = (32, 14)
BASE_OFFSET_FIELD = (49, 3)
SWIZZLE_FIELD = (62, 2)

SWIZZLE_CODES = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
SWIZZLE_NAMES = {v: k for k, v in SWIZZLE_CODES.items()}
# Where a swizzle pattern must start for base_offset = 0 (seed 000's table).
PATTERN_ALIGN = {"128B": 1024, "64B": 512, "32B": 256}

FIELD14 = (1 << 14) - 1
_DEFINED = sum(((1 << width) - 1) << lo for lo, width in (START_FIELD, LBO_FIELD, SBO_FIELD, BASE_OFFSET_FIELD, SWIZZLE_FIELD))
RESERVED_MASK = ((1 << 64) - 1) & ~_DEFINED


def descriptor_encode(x: int) -> int:
    """The spec's ``matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4``."""
    return (x & 0x3FFFF) >> 4


def descriptor_field(value: int, where: tuple[int, int]) -> int:
    """The raw bits of one descriptor field (``where`` = one of the ``*_FIELD`` pairs)."""
    lo, width = where
    return (value >> lo) & ((1 << width) - 1)
