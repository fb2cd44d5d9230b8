"""The compile pairs' probe kernels (``tests/support/hw_pairs.py --probe``): the generator is
``fuzzptx.strategies.scalar_kernels``; here ``avoid`` also takes the ledger's ids
(``ptxas-o3-bfe-s32-position-beyond-31``), as the probe's records name them."""
from __future__ import annotations

from fuzzptx.strategies.scalar_kernels import KINDS, OUTS, SCALAR_AVOIDABLE, THREADS
from fuzzptx.strategies.scalar_kernels import kernel as _kernel

#: ledger id -> the generator's avoid name
AVOIDABLE = {f"ptxas-o3-{name}": name for name in SCALAR_AVOIDABLE}


def kernel(seed: int, ops: int = 24, mix: str = "v1", avoid: frozenset = frozenset()) -> str:
    return _kernel(seed, ops, mix, frozenset(AVOIDABLE.get(a, a) for a in avoid))


__all__ = ["AVOIDABLE", "KINDS", "OUTS", "THREADS", "kernel"]
