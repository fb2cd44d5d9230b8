"""How much of what ptxas emits for real kernels does the generator reach?  SASS forms (opcode
with modifiers, shape numbers dropped: ``oracles/sass/vocabulary.py``) of the compiler-made kernels
in ``tests/data/{triton,cutlass,nvcc}`` at -O3 against those of the first N programs ``fuzzptx run
--seed S`` draws (the same blocks, illegal mutants included: what ptxas accepts of them counts).

    python benchmarks/sass_vocabulary.py --programs 2000 --seed 11 --out benchmarks/results/sass_vocabulary.json
    python benchmarks/sass_vocabulary.py --programs 400 --ptxas 12.9.86,13.0.88,13.5.37

Target (issue 38): >= 95% of the real forms and >= 99% of the real opcodes, at every release 12.9-13.5.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from records import start  # noqa: E402

CORPORA = ("triton", "cutlass", "nvcc")
BLOCK = 32
CHUNK = 128  # cubins per disassembler run (below oracles/sass/listing.py's cache size)


def real_kernels() -> list[tuple[str, str]]:
    return [(str(p.relative_to(ROOT)), p.read_text()) for c in CORPORA
            for p in sorted((ROOT / "tests" / "data" / c).glob("*.ptx"))]


@functools.cache  # the same programs for every release: drawn once
def drawn_texts(n: int, seed: int) -> list[str]:
    """The PTX of the first ``n`` programs ``fuzzptx run --seed seed`` judges (its blocks, in order)."""
    from fuzzptx.engine.generate import BlockTask, block_programs

    out: list[str] = []
    block = 0
    while len(out) < n:
        out += [p.to_ptx() for _, p, planted in block_programs(BlockTask(block, seed, BLOCK, ("ptxas",)))
                if not planted]
        block += 1
    return out[:n]


def vocabulary(texts: list[str], ptxas, tool: list[str]) -> tuple[Counter, int]:
    """Form -> kernels it occurs in, over every accepted text; and how many were accepted."""
    from fuzzptx.oracles.ptxas import compile_parallel
    from fuzzptx.oracles.sass import disassemble_all
    from fuzzptx.oracles.sass.vocabulary import forms

    results = compile_parallel(texts, want_cubin=True, ptxas=ptxas)
    accepted = [r for r in results if r.accepted and r.cubin is not None]
    cubins = list({id(r.cubin): r.cubin for r in accepted}.values())
    out: Counter = Counter()
    # in chunks: one disassemble_all call of more cubins than its cache holds loses its own entries
    for i in range(0, len(cubins), CHUNK):
        for listing in disassemble_all(cubins[i:i + CHUNK], tool):
            for name in listing.functions:
                out.update(set(forms(listing, {name})))
    return out, len(accepted)


def measure(n: int, seed: int, release: str | None) -> dict:
    from fuzzptx.oracles import toolchains
    from fuzzptx.oracles.sass import disassembler
    from fuzzptx.oracles.sass.real import real_vocabulary
    from fuzzptx.oracles.sass.vocabulary import opcode

    tc = toolchains.resolve(release, fetch_missing=True)[0] if release else None
    ptxas = tc.ptxas if tc else None
    tool = disassembler()
    t0 = time.perf_counter()
    real_texts = real_kernels()
    # computed once per ptxas into the user cache (oracles/sass/real.py), as runs read it
    cached = real_vocabulary([ROOT / f for f, _ in real_texts], str(ptxas) if ptxas else None, compute=True)
    real, real_ok = Counter(cached["forms"]), cached["accepted"]
    drawn, drawn_ok = vocabulary(drawn_texts(n, seed), ptxas, tool)
    reached = set(real) & set(drawn)
    real_ops = {opcode(f) for f in real}
    drawn_ops = {opcode(f) for f in drawn}
    missing = sorted(set(real) - set(drawn), key=lambda f: (-real[f], f))
    return {
        "release": tc.release if tc else "pinned",
        "real_kernels": len(real_texts), "real_accepted": real_ok,
        "programs": n, "programs_accepted": drawn_ok,
        "real_forms": len(real), "reached_forms": len(reached),
        "forms_fraction": round(len(reached) / len(real), 4) if real else None,
        "real_opcodes": len(real_ops), "reached_opcodes": len(real_ops & drawn_ops),
        "opcodes_fraction": round(len(real_ops & drawn_ops) / len(real_ops), 4) if real_ops else None,
        "drawn_forms": len(drawn), "drawn_forms_not_in_real": len(set(drawn) - set(real)),
        "missing_forms": [f"{f} ({real[f]} kernels)" for f in missing],
        "missing_opcodes": sorted(real_ops - drawn_ops),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--ptxas", default=None, help="releases, comma-separated (default: the pinned one)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    bench = start()
    if args.programs <= 0:
        ap.error("--programs must be positive")
    releases = [r.strip() for r in args.ptxas.split(",")] if args.ptxas else [None]
    rows = []
    for release in releases:  # each release's row as soon as it is measured (a long run stopped keeps them)
        r = measure(args.programs, args.seed, release)
        rows.append(r)
        print(f"{r['release']}: {r['reached_forms']}/{r['real_forms']} forms ({r['forms_fraction']:.1%}), "
              f"{r['reached_opcodes']}/{r['real_opcodes']} opcodes ({r['opcodes_fraction']:.1%}); "
              f"{r['programs_accepted']}/{r['programs']} programs accepted; {r['seconds']} s", file=sys.stderr, flush=True)
        print(json.dumps(r), file=sys.stderr, flush=True)
    bench.finish({"what": __doc__.split("\n\n")[0], "command": " ".join(sys.argv),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "seed": args.seed, "rows": rows},
           args.out, echo=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
