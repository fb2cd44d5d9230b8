"""The H100 against the reference on the code real kernels wrap around tensor cores (issue 38,
``strategies/surround.py``): every construct kind (``NOUNS``) placed in wgmma programs drawn
with seeds from the clock (fresh random inputs: every buffer's seed comes from the draw), whole
drawn wgmma programs (several constructs each, between stages and inside loops), wgmma
mainloops with the try_wait suspend hint and ``prefetch.tensormap``, and the constructs'
illegal twins (``div_by_zero``, ``outside_membermask``, ``carry_in_undefined``).

The constructs' own outputs (buffers ``y<j>``, ``z<j>``, ``w<j>``) must equal the reference bit
for bit; the wgmma outputs are compared too (the reference's allowed values) and counted apart.
Programs with ``approx`` constructs (``ex2.approx``, ``rcp.approx``: the reference refuses them)
only run: no fault allowed.  A twin must run without a fault; its undefined outputs are free.

    PYTHONPATH=$PWD python3 tests/support/hw_constructs.py --out $OUT/constructs_h100.json       # on the GPU machine
    PYTHONPATH=$PWD python3 tests/support/hw_constructs.py --dry-run --out /tmp/constructs.json  # no GPU: ptxas + reference
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

from fuzzptx.oracles.ptxas import compile_batch, ptxas_version
from fuzzptx.oracles.reference import compare, run_program
from fuzzptx.strategies.control import Loop
from fuzzptx.strategies.direct import draw, reproducible
from fuzzptx.strategies.mainloops import render_wgmma, wgmma_loop_plans
from fuzzptx.strategies.mutations import illegal_programs
from fuzzptx.strategies.programs import wgmma_plans, wgmma_programs
from fuzzptx.strategies.render import render
from fuzzptx.strategies.surround import NOUNS, Around, place

TWINS = ("div_by_zero", "outside_membermask", "carry_in_undefined")
OWN = re.compile(r"[yzw]\d+")  # a construct's output buffers


def cases(seed: int, per_noun: int, drawn: int, twins: int,
          avoid: frozenset[str] = frozenset()) -> list[tuple[str, object]]:
    """(name, program): ``per_noun`` programs of each construct kind, ``drawn`` whole wgmma
    programs, 4 mainloops with wait hints, ``twins`` of each twin; ``avoid``: the known bugs'
    shapes turned down, as a campaign does (a known miscompile is not the constructs' fault)."""
    out: list[tuple[str, object]] = []
    with reproducible():
        for noun, strategy in sorted(NOUNS.items()):
            for i in range(per_noun):
                plan = draw(wgmma_plans(avoid=avoid), f"{seed}:plan:{noun}:{i}")
                plan = replace(plan, script=tuple(op for op in plan.script if not isinstance(op, Around)))
                c = draw(strategy(), f"{seed}:construct:{noun}:{i}")
                out.append((f"{noun}/{i}", render(replace(plan, script=place(plan.script, ((5 * i + 2, c),), Loop)))))
        for i in range(drawn):
            out.append((f"drawn/{i}", draw(wgmma_programs(avoid=avoid), f"{seed}:drawn:{i}")))
        for i in range(4):
            pl = draw(wgmma_loop_plans(), f"{seed}:mainloop:{i}")
            out.append((f"mainloop-hint/{i}", render_wgmma(replace(pl, wait_hint=(1000, 0x989680)[i % 2],
                                                                  prefetch=True))))
        for name in TWINS:
            for i in range(twins):
                out.append((f"twin-{name}/{i}", draw(illegal_programs((name,)), f"{seed}:twin:{name}:{i}", attempts=400)))
    return out


def _reference(job):
    p, mode = job
    return run_program(p, mode=mode)  # an approximate op's value is a bound (oracles/reference/approx.py)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--per-noun", type=int, default=8, help="programs of each construct kind")
    ap.add_argument("--drawn", type=int, default=24, help="whole drawn wgmma programs")
    ap.add_argument("--twins", type=int, default=3, help="programs of each twin")
    ap.add_argument("--seed", type=int, default=None, help="default: the clock")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: ptxas and the reference only")
    ap.add_argument("--numerics", choices=("hardware", "spec"), default="hardware",
                    help="the reference's numerics: hardware (the bit-exact sm_90a model a campaign with the GPU "
                         "uses) or spec (the ISA's bounds: the H100's e8m13 fp8 accumulation then shows as "
                         "wgmma mismatches, a known hardware behaviour)")
    ap.add_argument("--rediscover", action="store_true",
                    help="draw the known bugs' shapes too (default: the ledger's avoided shapes, as a campaign)")
    args = ap.parse_args(argv)
    from fuzzptx.triage.known import avoided, ledger

    checkout_ledger = Path(__file__).resolve().parents[2] / "reports" / "known_bugs.toml"  # also from a copied tree
    avoid = frozenset() if args.rediscover else avoided(ledger(str(checkout_ledger)), {"numerics": args.numerics})
    seed = int(time.time()) if args.seed is None else args.seed
    t0 = time.time()
    all_cases = cases(seed, args.per_noun, args.drawn, args.twins, avoid)
    compiled = compile_batch([p.to_ptx() for _, p in all_cases])
    rejected = [{"case": n, "stderr": r.stderr[:400]} for (n, _), r in zip(all_cases, compiled) if not r.accepted]
    runs = [(n, p) for (n, p), r in zip(all_cases, compiled) if r.accepted]
    t1 = time.time()
    with ProcessPoolExecutor(max_workers=max(1, min(16, os.cpu_count() or 1))) as pool:
        refs = list(pool.map(_reference, [(p, args.numerics) for _, p in runs], chunksize=2))
    ref_seconds = time.time() - t1
    if args.dry_run:
        hw: list = [None] * len(runs)
        info: dict = {"dry_run": True}
    else:
        from fuzzptx.oracles.hardware import run_programs_on_gpu

        hw, info = run_programs_on_gpu([(p, None, None) for _, p in runs])
    rows = []
    for (name, p), ref, h in zip(runs, refs, hw):
        fault = None if h is None else h.fault
        mm = [] if (h is None or fault or ref is None) else compare(p, ref, h.outputs)
        own = [m for m in mm if OWN.fullmatch(str(getattr(m, "buffer", "")) or "")]
        rows.append({
            "case": name, "twin": next((n for n in p.notes if n.startswith("mutation:")), None),
            "constructs": next((n for n in p.notes if n.startswith("around:")), None),
            "approx": ref is None, "fault": fault,
            "reference_undefined": None if ref is None else ref.undefined,
            "construct_mismatches": [str(m) for m in own[:6]],
            "wgmma_mismatches": [str(m) for m in mm if m not in own][:6],
        })
    legal = [r for r in rows if r["twin"] is None]
    record = {
        "what": "issue 38: reference vs H100 on the code around tensor cores (strategies/surround.py constructs in "
                "wgmma programs, mainloops with try_wait hints, the constructs' twins), fresh random data",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "PYTHONPATH=$PWD python3 tests/support/hw_constructs.py --out $OUT/constructs_h100.json"
                   f" --per-noun {args.per_noun} --drawn {args.drawn} --twins {args.twins} --numerics {args.numerics}"
                   + (" --rediscover" if args.rediscover else ""),
        "numerics": args.numerics, "avoided": sorted(avoid),
        "device": info, "ptxas": ptxas_version(), "python": platform.python_version(), "seed": seed,
        "nouns": sorted(NOUNS), "twins": list(TWINS),
        "programs": len(all_cases), "rejected_by_ptxas": rejected, "runs": len(rows), "legal_runs": len(legal),
        "approx_runs": sum(r["approx"] for r in rows), "twin_runs": len(rows) - len(legal),
        "legal_reference_undefined": sum(bool(r["reference_undefined"]) for r in legal),
        "faults": sum(bool(r["fault"]) for r in rows),
        "programs_with_construct_mismatches": sum(bool(r["construct_mismatches"]) for r in legal),
        "programs_with_wgmma_mismatches": sum(bool(r["wgmma_mismatches"]) for r in legal),
        "reference_seconds": round(ref_seconds, 1), "seconds": round(time.time() - t0, 1), "results": rows,
    }
    with open(args.out, "w") as fh:
        json.dump(record, fh, indent=1)
    keys = ("device", "programs", "runs", "legal_runs", "approx_runs", "twin_runs", "faults",
            "legal_reference_undefined", "programs_with_construct_mismatches", "programs_with_wgmma_mismatches",
            "reference_seconds", "seconds")
    print(json.dumps({k: record[k] for k in keys} | {"rejected_by_ptxas": len(rejected)}, indent=1))
    bad = rejected or record["faults"] or record["legal_reference_undefined"] \
        or record["programs_with_construct_mismatches"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
