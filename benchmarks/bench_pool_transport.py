"""What one prepared block costs to send from a campaign's pool process to the main process.

    python benchmarks/bench_pool_transport.py --blocks 2 --size 32

Prints, per block, the pickled size of ``prepare_block``'s result and the ms/program to pickle
(in the pool) and unpickle (in the main process), and the share of each field.
"""
from __future__ import annotations

import argparse
import pickle
import time


def main() -> None:
    from fuzzptx.engine.generate import BlockTask
    from fuzzptx.engine.block import prepare_block

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    for b in range(a.blocks):
        prep = prepare_block(BlockTask(b, a.seed, a.size, ("reference", "checker", "ptxas")))
        t0 = time.perf_counter()
        wire = pickle.dumps(prep, protocol=pickle.HIGHEST_PROTOCOL)
        t1 = time.perf_counter()
        pickle.loads(wire)
        t2 = time.perf_counter()
        n = len(prep.programs)
        parts = {f: len(pickle.dumps(getattr(prep, f), protocol=pickle.HIGHEST_PROTOCOL))
                 for f in ("programs", "texts", "verdicts", "records")}
        print(f"block {b}: {len(wire) / 1e6:.2f} MB; pickle {(t1 - t0) / n * 1000:.2f} ms/program, "
              f"unpickle {(t2 - t1) / n * 1000:.2f} ms/program; bytes by field {parts}")


if __name__ == "__main__":
    main()
