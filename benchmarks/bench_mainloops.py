"""What a wgmma-consumer mainloop program (``strategies.mainloops.WgmmaLoopPlan``) costs to judge,
against the default campaign programs: ptxas -O3 (one process per program), the reference, and
the checker, per program, on the same machine in one run.

Draws ``-n`` mainloops (``wgmma_mainloop_programs()``, legal) and ``-n`` campaign programs
(``engine.generate.draw_direct``: the default mix, illegal quarter included) with the seeded
direct drawer (program i depends on (seed, i) alone), then times each judge program by program.

    PYTHONPATH=$PWD python3 benchmarks/bench_mainloops.py -n 100 --seed 5 --out benchmarks/results/mainloops_cost.json

``--agreement N`` instead scores the ptxas model (``oracles.checker.ptxas_compare.agreement``
through ``tests/support/agreement.score``) on N mainloops, four in five legal, the rest twins:

    PYTHONPATH=$PWD python3 benchmarks/bench_mainloops.py --agreement 200 --seed 7 --out benchmarks/results/mainloops_agreement.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from fuzzptx.engine.generate import draw_direct
from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.ptxas import compile_ptx, ptxas_version
from fuzzptx.oracles.reference import run_program
from fuzzptx.strategies.direct import draw, reproducible
from fuzzptx.strategies.mainloops import WGMMA_FAULTS, illegal_mainloop_programs, wgmma_mainloop_programs

from records import finish  # benchmarks/records.py, beside this script


def _stats(xs: list[float]) -> dict:
    return {"mean_ms": round(1000 * statistics.mean(xs), 1), "median_ms": round(1000 * statistics.median(xs), 1),
            "max_ms": round(1000 * max(xs), 1)}


def measure(progs: list) -> dict:
    ptxas, ref, chk, lines, accepted, ref_failed = [], [], [], [], 0, 0
    for p in progs:
        text = p.to_ptx()
        lines.append(text.count("\n"))
        t = time.perf_counter()
        accepted += compile_ptx(text, opt_level=3).accepted
        ptxas.append(time.perf_counter() - t)
        t = time.process_time()
        try:
            run_program(p)
        except Exception:  # noqa: BLE001 - a program the reference cannot run still cost this much
            ref_failed += 1
        ref.append(time.process_time() - t)
        t = time.process_time()
        check_module(p.module)
        chk.append(time.process_time() - t)
    return {"programs": len(progs), "ptxas_accepted": accepted, "reference_raised": ref_failed,
            "ptx_lines_mean": round(statistics.mean(lines), 1), "ptxas_wall": _stats(ptxas),
            "reference_cpu": _stats(ref), "checker_cpu": _stats(chk),
            "reference_over_ptxas": round(statistics.mean(ref) / statistics.mean(ptxas), 2)}


def agreement_record(n: int, seed: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from support.agreement import score

    legal, twins = wgmma_mainloop_programs(), illegal_mainloop_programs(WGMMA_FAULTS)
    with reproducible():
        progs = [draw(twins if i % 5 == 4 else legal, f"{seed}:{i}") for i in range(n)]
    items = [(f"#{i} " + " ".join(x for x in p.notes if x.startswith("mainloop")), p.to_ptx())
             for i, p in enumerate(progs)]
    t = score("wgmma mainloops", "four in five legal, the rest twins", items)
    return {"command": f"PYTHONPATH=$PWD python3 benchmarks/bench_mainloops.py --agreement {n} --seed {seed}",
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "ptxas": ptxas_version(),
            "programs": t.n, "twins": sum(i % 5 == 4 for i in range(n)), "exact": t.exact,
            "exact_percent": round(100 * t.rate, 2), "may_predicted_programs": t.may_predicted,
            "may_printed_by_ptxas": dict(t.may), "unreadable": t.unreadable,
            "mismatches": [list(m) for m in t.mismatches]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--agreement", type=int, metavar="N", help="score the ptxas model on N mainloops instead")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    if a.agreement:
        record = agreement_record(a.agreement, a.seed)
        print(json.dumps({k: v for k, v in record.items() if k != "mismatches"}, indent=1))
        if a.out:
            with open(a.out, "w") as f:
                f.write(json.dumps(record, indent=1) + "\n")
        return 0
    strategy = wgmma_mainloop_programs()
    with reproducible():
        loops = [draw(strategy, f"{a.seed}:{i}") for i in range(a.n)]
    campaign = draw_direct(a.n, a.seed)
    record = {
        "command": f"PYTHONPATH=$PWD python3 benchmarks/bench_mainloops.py -n {a.n} --seed {a.seed}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "device": f"CPU ({platform.machine()}, shared 2-core host), load {os.getloadavg()[0]:.1f} at start",
        "ptxas": ptxas_version(),
        "wgmma_mainloops": measure(loops),
        "campaign_programs": measure(campaign),
    }
    record["load_at_end"] = round(os.getloadavg()[0], 1)
    finish(record, a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
