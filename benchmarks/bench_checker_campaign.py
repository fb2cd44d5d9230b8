"""The checker on campaign programs, next to ptxas on the same programs (the target: the checker
at least 10x faster than ptxas per program).

A campaign's pool process judges thousands of programs, so this measures a warm process: it
first judges ``--warm`` programs of another seed, then times ``check_and_predict`` (what the
differ calls) on ``--n`` fresh programs per seed of ``--seeds``, each emitted located as the
campaign emits it (``Program.to_ptx_located``).  ptxas (CPU time of its child processes) runs on
the programs of the first seed: batched as the campaign runs it (``compile_batch``, blocks of
32, cubins kept) and one process per program.

To compare two trees, run it under each (e.g. an older checkout on ``PYTHONPATH``) one after the
other, more than once: on a shared machine single runs vary by ~10%.

    python benchmarks/bench_checker_campaign.py [--n 300] [--seeds 7,8,9] [--ptxas 320] [--out F]

``ratio_checker_over_batched`` is the target's figure (benchmarks/README.md row 3b: at most 0.1).
"""
from __future__ import annotations

import argparse
import gc
import resource
import sys
import time

from records import start  # benchmarks/records.py, beside this script


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main(argv: list[str] | None = None) -> int:
    bench = start(None if argv is None else [__file__, *argv])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="programs per seed")
    ap.add_argument("--seeds", default="7,8,9")
    ap.add_argument("--warm", type=int, default=300, help="programs of seed 5 judged first")
    ap.add_argument("--ptxas", type=int, default=320, help="programs compiled by ptxas (0: none)")
    ap.add_argument("--out", help="write the figures as JSON here")
    args = ap.parse_args(argv)

    from fuzzptx.engine.generate import draw_direct
    from fuzzptx.oracles.checker import check_and_predict
    from fuzzptx.oracles.ptxas import compile_batch, compile_ptx, ptxas_version
    from fuzzptx.perf import tune_gc

    for p in draw_direct(args.warm, 5):
        check_and_predict(p.to_ptx_located()[1].module)
    tune_gc()
    seeds = [int(s) for s in args.seeds.split(",")]
    per_seed = {}
    for seed in seeds:
        modules = [p.to_ptx_located()[1].module for p in draw_direct(args.n, seed)]
        gc.collect()
        t = time.process_time()
        for m in modules:
            check_and_predict(m)
        per_seed[seed] = round((time.process_time() - t) / len(modules) * 1e3, 2)
    checker = round(sum(per_seed.values()) / len(per_seed), 2)
    rec = {"python": sys.version.split()[0], "checker_ms_per_program_by_seed": per_seed,
           "checker_ms_per_program": checker}
    print(f"checker: {checker} ms/program CPU (by seed {per_seed})")
    if args.ptxas:
        located = [p.to_ptx_located() for p in draw_direct(args.ptxas, seeds[0])]
        t = time.process_time()
        for _, p in located:
            check_and_predict(p.module)
        ck = (time.process_time() - t) / len(located) * 1e3
        c0 = _children_cpu()
        for k in range(0, len(located), 32):
            compile_batch([text for text, _ in located[k:k + 32]], want_cubin=True)
        batched = (_children_cpu() - c0) / len(located) * 1e3
        c0 = _children_cpu()
        for text, _ in located:
            compile_ptx(text)
        solo = (_children_cpu() - c0) / len(located) * 1e3
        rec.update(ptxas=ptxas_version(), ptxas_programs=len(located), checker_same_programs_ms=round(ck, 2),
                   ptxas_batched_ms=round(batched, 1), ptxas_solo_ms=round(solo, 1),
                   ratio_batched=round(batched / ck, 1), ratio_solo=round(solo / ck, 1),
                   ratio_checker_over_batched=round(ck / batched, 3), ratio_checker_over_solo=round(ck / solo, 3))
        print(f"same {len(located)} programs: checker {ck:.2f} ms; ptxas batched {batched:.1f} ms "
              f"({batched / ck:.1f}x the checker); one process per program {solo:.1f} ms ({solo / ck:.1f}x)")
    bench.finish(rec, args.out, echo=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
