"""Strategies at scale: generation speed, ptxas acceptance of legal programs, mutation labels, coverage.

    python benchmarks/bench_strategies.py --legal 1000 --mutation-bases 60 --coverage 20000

Prints one line per figure and writes benchmarks/results/strategies.json.
``--coverage N`` draws N programs with ``programs()`` (the coverage CLI's measure).
"""
from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter, defaultdict
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings, strategies as st


def collect(strategy, n: int, seed: int) -> tuple[list, float, float]:
    """(examples, wall seconds, CPU seconds: the 2 shared cores make wall time noisy)."""
    from hypothesis import seed as hseed

    out: list = []

    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(x):
        out.append(x)

    t, cpu = time.perf_counter(), time.process_time()
    hseed(seed)(run)()
    return out, time.perf_counter() - t, time.process_time() - cpu


def compile_all(progs):
    from fuzzptx.oracles.ptxas import compile_batch

    by_target = defaultdict(list)
    for i, p in enumerate(progs):
        by_target[p.module.target].append(i)
    res = [None] * len(progs)
    t = time.perf_counter()
    for target, idxs in by_target.items():
        for start in range(0, len(idxs), 64):
            part = idxs[start:start + 64]
            for i, r in zip(part, compile_batch([progs[i].to_ptx() for i in part], arch=target)):
                res[i] = r
    return res, time.perf_counter() - t


def main() -> int:
    from fuzzptx.strategies import coverage
    from fuzzptx.strategies.mutations import MUTATIONS, apply
    from fuzzptx.strategies.programs import programs, wgmma_programs

    ap = argparse.ArgumentParser()
    ap.add_argument("--legal", type=int, default=300)
    ap.add_argument("--mutation-bases", type=int, default=30)
    ap.add_argument("--coverage", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out: dict = {"load": os.getloadavg()[0]}

    progs, gen_s, gen_cpu_s = collect(programs(), args.legal, args.seed)
    res, ptxas_s = compile_all(progs)
    rejected = [p for p, r in zip(progs, res) if not r.accepted]
    wg = sum(1 for p in progs if any(i.base == "wgmma" for i in p.module.function(p.launch.kernel).instructions()))
    instrs = sum(len(p.module.function(p.launch.kernel).instructions()) for p in progs)
    gen_cpu_ms = 1000 * gen_cpu_s / len(progs)
    out["legal"] = dict(n=len(progs), wgmma_programs=wg, rejected=len(rejected), gen_ms=1000 * gen_s / len(progs),
                        gen_cpu_ms=gen_cpu_ms,
                        ptxas_ms=1000 * ptxas_s / len(progs), mean_instructions=instrs / len(progs))
    print(f"legal programs: {len(progs)} ({wg} wgmma), rejected by ptxas: {len(rejected)}; "
          f"generate {out['legal']['gen_ms']:.1f} ms/program ({gen_cpu_ms:.1f} ms CPU), ptxas (batched) {out['legal']['ptxas_ms']:.1f} ms/program, "
          f"{instrs / len(progs):.0f} instructions/program")
    for p in rejected[:3]:
        print("  rejected:", "; ".join(p.notes))

    bases, _, _ = collect(st.tuples(wgmma_programs(max_units=2), st.integers(0, 7)), args.mutation_bases, args.seed + 1)
    cases = [(m, q) for m in MUTATIONS for p, c in bases if (q := apply(m, p, c)) is not None]
    mres, mptxas_s = compile_all([q for _, q in cases])
    agree, tried, seen = Counter(), Counter(), defaultdict(Counter)
    for (m, _q), r in zip(cases, mres):
        tried[m.name] += 1
        agree[m.name] += m.ptxas_agrees(r.accepted, r.codes())
        seen[m.name][("accepted " + " ".join(sorted(set(r.codes())))).strip() if r.accepted else "rejected"] += 1
    out["mutations"] = {k: dict(tried=tried[k], agree=agree[k], seen=dict(seen[k])) for k in tried}
    total = sum(tried.values())
    print(f"mutations: {total} mutants of {len(bases)} programs, label holds for {sum(agree.values())}/{total} "
          f"(ptxas {1000 * mptxas_s / max(1, total):.1f} ms/mutant)")
    for k in tried:
        print(f"  {k:26s} {agree[k]:4d}/{tried[k]:<4d} {dict(seen[k])}")

    if args.coverage:
        t = time.perf_counter()
        cov = coverage.draw(args.coverage, programs(), args.seed + 2)
        out["coverage"] = dict(cov.summary(), seconds=time.perf_counter() - t)
        print(cov.report())
        print(f"coverage run: {time.perf_counter() - t:.0f} s")
    Path("benchmarks/results").mkdir(parents=True, exist_ok=True)
    Path("benchmarks/results/strategies.json").write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
