"""How much of a campaign pool process's CPU goes to CPython's cycle collector, and what makes
the cyclic garbage it collects.

A warm process (``campaign.warm``, as a pool process runs) prepares ``--blocks`` blocks with the
Python judges (generation, emission, checker, reference; no ptxas), timing every collection
through ``gc.callbacks``: ``--mode pool`` as a campaign pool process does now (``_pool_block``:
a young collection between blocks, ``perf.POOL_YOUNG_THRESHOLD``), ``--mode young`` as before
2026-11-26 (``prepare_block`` alone, collections at ``perf.YOUNG_THRESHOLD`` in mid-block).  Then, with the
collector off and ``gc.DEBUG_SAVEALL``, it prepares ``--garbage-blocks`` more and counts what
the one collection after them finds, by type, and the functions among it by name (a closure
that refers to itself, or to a sibling through its enclosing scope, only dies in a collection).

    python benchmarks/bench_pool_gc.py [--mode pool|young] [--blocks 40] [--garbage-blocks 5] [--out F]
"""
from __future__ import annotations

import argparse
import collections
import gc
import sys
import time

from records import finish  # benchmarks/records.py, beside this script


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=40)
    ap.add_argument("--garbage-blocks", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--mode", choices=("pool", "young"), default="pool")
    ap.add_argument("--out")
    args = ap.parse_args(argv)

    from fuzzptx.engine.generate import BlockTask

    from fuzzptx.engine.block import pool_block, warm, prepare_block
    from fuzzptx.perf import YOUNG_THRESHOLD, tune_gc

    judges = ("reference", "checker")
    warm()  # (tune_gc with the pool's threshold)
    if args.mode == "young":
        tune_gc(YOUNG_THRESHOLD)
    run = pool_block if args.mode == "pool" else prepare_block
    spent: collections.Counter = collections.Counter()
    count: collections.Counter = collections.Counter()
    started: dict = {}

    def timed(phase: str, info: dict) -> None:
        if phase == "start":
            started["t"] = time.perf_counter()
        else:
            spent[info["generation"]] += time.perf_counter() - started["t"]
            count[info["generation"]] += 1

    gc.callbacks.append(timed)
    t0 = time.process_time()
    for b in range(args.blocks):
        run(BlockTask(b, args.seed, 32, judges))
    cpu = time.process_time() - t0
    gc.callbacks.remove(timed)
    n = args.blocks * 32
    rec = {"python": sys.version.split()[0], "mode": args.mode, "programs": n, "threshold": gc.get_threshold(),
           "cpu_ms_per_program": round(cpu / n * 1e3, 2),
           "gc_ms_per_program": {g: round(s / n * 1e3, 3) for g, s in sorted(spent.items())},
           "collections": dict(sorted(count.items()))}
    rec["gc_share"] = round(sum(spent.values()) / cpu, 3)

    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    for b in range(args.garbage_blocks):
        prepare_block(BlockTask(args.blocks + b, args.seed, 32, judges))
    found = gc.collect()
    kinds: collections.Counter = collections.Counter(type(o).__name__ for o in gc.garbage)
    funcs: collections.Counter = collections.Counter(
        f"{o.__module__}.{o.__qualname__}" for o in gc.garbage if type(o).__name__ == "function")
    gc.set_debug(0)
    gc.garbage.clear()
    gc.enable()
    m = args.garbage_blocks * 32
    rec.update(cyclic_garbage_per_program=round(found / m), cyclic_garbage_by_type=dict(kinds.most_common(12)),
               cyclic_functions=dict(funcs.most_common(10)))
    finish(rec, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
