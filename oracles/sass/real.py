"""The real kernels' SASS vocabulary, computed once per ptxas and cached in the user cache, and a
run's SASS coverage measured against it (``fuzzptx run``/``campaign`` summaries, ``fuzzptx report``,
``benchmarks/steer_coverage.py``).

The real kernels are the compiler-made sm_90a kernels of the checkout's ``tests/data/{triton,
cutlass,nvcc}`` (Triton 3.9, CUTLASS, nvcc), compiled at -O3 and disassembled; their forms
(``oracles/sass/vocabulary.py``) are what ptxas emits for the code real kernels wrap around the
tensor cores.  The cache file is keyed by the ptxas binary and the kernels' text
(``$XDG_CACHE_HOME/fuzzptx/sass_vocabulary/``), never written into the checkout.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Iterable

from ..ptxas import compile_parallel, find_ptxas
from . import disassembler
from .listing import disassemble_all
from .vocabulary import forms

CORPORA = ("triton", "cutlass", "nvcc")
CHUNK = 128  # cubins per disassembler run (below the listing cache's size)


def real_kernel_files(root: Path | None = None) -> list[Path]:
    """The real kernels of the checkout (none where fuzzptx runs outside one)."""
    root = root or Path(__file__).resolve().parents[2] / "tests" / "data"
    return [p for c in CORPORA for p in sorted((root / c).glob("*.ptx"))]


def cache_dir() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "fuzzptx" / "sass_vocabulary"


def vocabulary(texts: list[str], ptxas: str | None = None) -> tuple[Counter, int]:
    """Form -> kernels it occurs in, over the texts ptxas accepts; and how many it accepted."""
    tool = disassembler()
    results = compile_parallel(texts, want_cubin=True, ptxas=ptxas)
    accepted = [r for r in results if r.accepted and r.cubin is not None]
    out: Counter = Counter()
    if tool is None:
        return out, len(accepted)
    cubins = list({id(r.cubin): r.cubin for r in accepted}.values())
    for i in range(0, len(cubins), CHUNK):
        for listing in disassemble_all(cubins[i:i + CHUNK], tool):
            for name in listing.functions:
                out.update(set(forms(listing, {name})))
    return out, len(accepted)


def real_vocabulary(files: Iterable[Path] | None = None, ptxas: str | None = None) -> dict | None:
    """``{"forms": {form: kernels}, "kernels": n, "accepted": n}`` of the real kernels (None: no
    kernels at hand), from the user cache when this ptxas has seen these kernels before."""
    files = list(real_kernel_files() if files is None else files)
    if not files:
        return None
    texts = [f.read_text() for f in files]
    binary = str(ptxas or find_ptxas())
    key = hashlib.blake2b(("\0".join([binary, str(_mtime(binary))] + texts)).encode(), digest_size=12).hexdigest()
    path = cache_dir() / f"{key}.json"
    if path.exists():
        try:
            return json.loads(path.read_text())
        except ValueError:
            pass
    counts, accepted = vocabulary(texts, ptxas)
    out = {"forms": dict(counts.most_common()), "kernels": len(texts), "accepted": accepted, "ptxas": binary}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    os.replace(tmp, path)
    return out


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def against_real(reached: Iterable[str], real: dict | None) -> dict | None:
    """How many of the real kernels' forms a run reached, and those it did not (most common first)."""
    if real is None or not real.get("forms"):
        return None
    got = set(reached)
    forms = real["forms"]
    missing = sorted((f for f in forms if f not in got), key=lambda f: (-forms[f], f))
    return {"real_forms": len(forms), "reached": len(forms) - len(missing),
            "fraction": round((len(forms) - len(missing)) / len(forms), 4), "missing": missing}
