"""A verifier of the GMMA pipeline over the SASS ptxas emitted: no GPU, no timing.

ptxas -O3 has been seen to hand the registers of a GMMA still in flight to other values and to drop
repeated wgmmas (``reports/findings/README.md``).  Both are plain in the SASS.  ``listing`` reads a
cubin's disassembly (``nvdisasm`` from the ``nvidia-cuda-nvdisasm`` wheel, a dependency of fuzzptx;
``FUZZPTX_NVDISASM`` names another), ``pipeline`` checks the register rules of the GMMA pipeline on
every path, and ``counts`` compares the tensor-core operations on each SASS path with the PTX
wgmmas that must execute.  The ``sass`` judge (``fuzzptx.judges.builtin``) runs them on every
program the checker finds defined; docs/sass.md describes the rules beside the SASS they read.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from .counts import CountHazard, gmma_count_hazards, must_execute_wgmmas
from .listing import Instruction, Listing, SassFunction, cubin_sm, disassemble, disassemble_all, run_disassembler
from .pipeline import RULES, Hazard, verify

__all__ = ["RULES", "CountHazard", "cubin_sm", "Hazard", "Instruction", "Listing", "SassFunction", "disassemble",
           "disassemble_all", "disassembler", "gmma_count_hazards", "hazards", "must_execute_wgmmas",
           "run_disassembler", "verify"]


def disassembler() -> list[str] | None:
    """``nvdisasm -c``: ``FUZZPTX_NVDISASM`` if set, else the one of the nvidia-cuda-nvdisasm wheel
    (a newer nvdisasm reads every older sm_90a cubin), else None."""
    given = os.environ.get("FUZZPTX_NVDISASM")
    if given:
        return [given, "-c"]
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for sub in ("cu13", "cuda_nvdisasm"):
            nvd = Path(root) / sub / "bin" / "nvdisasm"
            if nvd.exists():
                return [str(nvd), "-c"]
    return None


def hazards(cubin: bytes, kernel: str, tool: list[str]) -> list[Hazard]:
    """The pipeline hazards of ``kernel`` (its name inside ``cubin``) and of what it calls."""
    return verify(disassemble(cubin, tool), kernel)
