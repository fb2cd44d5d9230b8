"""SASS of a cubin and one hazard read from it: a register of a wgmma still in flight written by
another instruction.

ptxas 13.0.88 -O3 was seen to reuse the accumulator registers of a GMMA issued with ``gsb0``
(committed, not yet waited for) for a loop counter and a call's return address, once a later
scale-d 0 wgmma made their old values dead (``reports/findings/README.md``); the GMMA then writes
its result over them.  ``inflight_writes`` finds that in the disassembly, with no GPU and no
dependence on timing.  The disassembler is ``cuobjdump -sass`` where CUDA is installed, else
``nvdisasm`` from the ``nvidia-cuda-nvdisasm`` wheel (``pip install 'fuzzptx[sass]'``).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)\s*(.*?)\s*;")
_GMMA = re.compile(r"GMMA\.64x(\d+)x\d+\.(\w+)")
_NOT_A_WRITE = ("ST", "BRA", "BSSY", "BSYNC", "CALL", "RET", "EXIT", "ISETP", "FSETP", "WARPSYNC", "BAR", "NOP")


def disassembler() -> list[str] | None:
    """``cuobjdump -sass`` where CUDA is installed, else ``nvdisasm`` from the nvidia-cuda-nvdisasm
    wheel, else None."""
    for cand in (shutil.which("cuobjdump"), "/usr/local/cuda/bin/cuobjdump"):
        if cand and os.path.exists(cand):
            return [cand, "-sass"]
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        nvd = Path(root) / "cu13" / "bin" / "nvdisasm"
        if nvd.exists():
            return [str(nvd), "-c"]
    found = shutil.which("nvdisasm")
    return [found, "-c"] if found else None


def sass(cubin: bytes, tool: list[str]) -> list[str]:
    """The instruction lines (``/*addr*/ OP args ;``) of a cubin's disassembly."""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
    try:
        out = subprocess.run(tool + [f.name], check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    return [m.group(0) for m in map(_LINE.search, out.splitlines()) if m]


def inflight_writes(lines: list[str]) -> list[str]:
    """Non-GMMA writes to a register of a GMMA issued with gsb0 before the next WARPGROUP.DEPBAR."""
    busy: set[int] = set()
    found = []
    for line in lines:
        addr, _, op, args = _LINE.match(line).groups()
        if op.startswith("WARPGROUP.DEPBAR"):
            busy = set()
        elif "GMMA" in op:
            shape, dst = _GMMA.search(op), re.match(r"R(\d+)", args)
            if shape and dst and "gsb0" in args:
                n = int(shape.group(1)) // (4 if shape.group(2).startswith("F16") else 2)
                busy |= set(range(int(dst.group(1)), int(dst.group(1)) + n))
        else:
            dst = re.match(r"R(\d+)", args)
            if busy and dst and int(dst.group(1)) in busy and not op.startswith(_NOT_A_WRITE):
                found.append(f"{addr}: {op} {args}")
    return found
