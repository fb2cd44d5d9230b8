"""The real kernels' SASS vocabulary, computed once per ptxas and cached in the user cache, and a
run's SASS coverage measured against it (``fuzzptx run``/``campaign`` summaries, ``fuzzptx report``,
``benchmarks/steer_coverage.py``).

The real kernels are the compiler-made sm_90a kernels of the checkout's ``tests/data/{triton,
cutlass,nvcc}`` (Triton 3.9, CUTLASS, nvcc), compiled at -O3 and disassembled; their forms
(``oracles/sass/vocabulary.py``) are what ptxas emits for the code real kernels wrap around the
tensor cores.  The vocabulary is keyed by the ptxas release and the kernels' text: the pinned
release's ships with the package (``real_vocabulary.json``, written by ``python -m
fuzzptx.oracles.sass.real --write``, checked by ``tests/test_sass_real.py``); another release's is
computed on request (``compute=True``: ``benchmarks/sass_vocabulary.py``, ``steer_coverage.py``)
into ``$XDG_CACHE_HOME/fuzzptx/sass_vocabulary/``, never into the checkout.  A run's summary never
computes it (85 kernels through ptxas and nvdisasm take a minute and a half on 2 cores).
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Iterable

from ..ptxas import _version_of, compile_parallel, find_ptxas
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


PACKAGED = Path(__file__).with_name("real_vocabulary.json")


def _packaged(release: str) -> dict | None:
    try:
        got = json.loads(PACKAGED.read_text())
    except (OSError, ValueError):
        return None
    return got if got.get("release") == release else None


def key_of(texts: list[str], release: str) -> str:
    return hashlib.blake2b(("\0".join([release] + texts)).encode(), digest_size=12).hexdigest()


def real_vocabulary(files: Iterable[Path] | None = None, ptxas: str | None = None, *,
                    compute: bool = False) -> dict | None:
    """``{"forms": {form: kernels}, "kernels": n, "accepted": n}`` of the real kernels (None: no
    kernels at hand, or not known for this release and ``compute`` off): the packaged one for the
    pinned release, else the user cache's, else computed and cached when ``compute``."""
    binary = str(ptxas or find_ptxas())
    given = files is not None
    files = list(files) if given else real_kernel_files()
    if not files:  # outside a checkout (an installed fuzzptx): the packaged vocabulary of its release
        return None if given else _packaged(_version_of(binary))
    texts = [f.read_text() for f in files]
    key = key_of(texts, _version_of(binary))
    for path in (PACKAGED, cache_dir() / f"{key}.json"):
        try:
            got = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if got.get("key") == key:
            return got
    if not compute:
        return None
    path = cache_dir() / f"{key}.json"
    counts, accepted = vocabulary(texts, ptxas)
    out = {"key": key, "release": _version_of(binary), "forms": dict(counts.most_common()), "kernels": len(texts),
           "accepted": accepted}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    os.replace(tmp, path)
    return out


def against_real(reached: Iterable[str], real: dict | None) -> dict | None:
    """How many of the real kernels' forms a run reached, and those it did not (most common first)."""
    if real is None or not real.get("forms"):
        return None
    got = set(reached)
    forms = real["forms"]
    missing = sorted((f for f in forms if f not in got), key=lambda f: (-forms[f], f))
    return {"real_forms": len(forms), "reached": len(forms) - len(missing),
            "fraction": round((len(forms) - len(missing)) / len(forms), 4), "missing": missing}


def main(argv: list[str] | None = None) -> int:
    """``--write``: compute the pinned release's vocabulary of the checkout's real kernels into the
    package (``PACKAGED``); without it, say whether the packaged one is current."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m fuzzptx.oracles.sass.real", description=main.__doc__)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    files = real_kernel_files()
    texts = [f.read_text() for f in files]
    key = key_of(texts, _version_of(str(find_ptxas())))
    if not args.write:
        current = PACKAGED.exists() and json.loads(PACKAGED.read_text()).get("key") == key
        print(f"{PACKAGED.name}: {'current' if current else 'stale or missing: rerun with --write'}")
        return 0 if current else 1
    counts, accepted = vocabulary(texts)
    out = {"key": key, "release": _version_of(str(find_ptxas())), "forms": dict(sorted(counts.most_common())),
           "kernels": len(texts), "accepted": accepted}
    PACKAGED.write_text(json.dumps(out, indent=0, sort_keys=True) + "\n")
    print(f"wrote {PACKAGED}: {len(counts)} forms of {accepted} of {len(texts)} kernels")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
