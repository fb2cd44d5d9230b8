"""Reading a wgmma operand through its matrix descriptor; the descriptor itself is ``fuzzptx.isa.layouts``."""
from __future__ import annotations

import numpy as np

from fuzzptx.isa.layouts import (  # noqa: F401 - re-exported: readers of the reference take them here
    PATTERN_ALIGN, RESERVED_MASK, SWIZZLE_CODES, SWIZZLE_NAMES, MatrixDescriptor, decode, descriptor_encode,
)

from .layouts import read_tile


def read_operand(smem: np.ndarray, desc: "MatrixDescriptor | int", major: str, element_bits: int,
                 mn_extent: int, k_extent: int) -> np.ndarray:
    """Element bits ``uint32[mn_extent, k_extent]`` of a wgmma operand a descriptor points at.

    ``major``: "K" for imm-trans 0, "MN" for imm-trans 1.  B (K x N) comes back as [N, K].
    """
    d = desc if isinstance(desc, MatrixDescriptor) else MatrixDescriptor.decode(int(desc))
    return read_tile(smem, d.smem_layout(major, element_bits), mn_extent, k_extent)
