"""How many mutants of the real kernels (``fuzzptx run --generator mutants``: the kernels of
``tests/data``, ``strategies/real_kernels.py``) ptxas accepts, and which SASS forms they reach
that neither their parents nor ``N`` programs of the generator's own draw reach.

    python benchmarks/real_kernel_mutants.py --mutants 400 --drawn 400 --seed 11 --out benchmarks/results/real_kernel_mutants.json
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from records import start  # noqa: E402

BLOCK = 32


def texts(n: int, seed: int, generator: str) -> list[str]:
    """The PTX of the first ``n`` programs ``fuzzptx run --seed seed --generator generator`` judges."""
    from fuzzptx.engine.generate import BlockTask, block_programs

    out: list[str] = []
    block = 0
    while len(out) < n:
        out += [p.to_ptx() for _, p, _ in block_programs(BlockTask(block, seed, BLOCK, ("ptxas",), generator=generator))]
        block += 1
    return out[:n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutants", type=int, default=400)
    ap.add_argument("--drawn", type=int, default=400)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    bench = start()
    from fuzzptx.oracles.sass.real import real_vocabulary, vocabulary

    t0 = time.perf_counter()
    real = set(real_vocabulary(compute=True)["forms"])
    mutant_texts = texts(args.mutants, args.seed, "mutants")
    mutants, accepted = vocabulary(mutant_texts)
    drawn, drawn_ok = vocabulary(texts(args.drawn, args.seed, "direct")) if args.drawn else ({}, 0)
    got = set(mutants)
    row = {
        "mutants": len(mutant_texts), "ptxas_accepted": accepted,
        "acceptance": round(accepted / max(1, len(mutant_texts)), 4),
        "mutant_forms": len(got), "real_forms": len(real), "real_forms_reached": len(got & real),
        "new_forms_vs_real_kernels": sorted(got - real),
        "drawn_programs": args.drawn, "drawn_accepted": drawn_ok, "drawn_forms": len(drawn),
        "new_forms_vs_drawn": sorted(got - set(drawn)),
        "real_forms_only_mutants_reach": sorted((got & real) - set(drawn)),
        "real_forms_drawn_reach": len(set(drawn) & real),
        "real_forms_either_reaches": len((got | set(drawn)) & real),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    print(f"{accepted}/{len(mutant_texts)} mutants accepted; {len(got)} SASS forms, {len(got & real)}/{len(real)} of the "
          f"real kernels', {len(got - real)} not in them; {len(got - set(drawn))} not reached by {args.drawn} drawn "
          f"programs; real forms reached: drawn {row['real_forms_drawn_reach']}, either {row['real_forms_either_reaches']}",
          file=sys.stderr)
    bench.finish({"what": __doc__.split("\n\n")[0], "command": " ".join(sys.argv),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "seed": args.seed, "rows": [row]},
           args.out, echo=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
