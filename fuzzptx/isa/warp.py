"""Warp-level forms: mma.sync, mma.sp, wmma.load/store/mma, ldmatrix, stmatrix (in progress)."""
from __future__ import annotations

from .model import Form


def warp_forms() -> tuple[Form, ...]:
    return ()
