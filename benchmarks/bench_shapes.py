"""How often the default programs hold each GMMA-pipeline shape (``strategies.shapes``), and what
ptxas costs per program.

Draws N programs the way ``fuzzptx run --seed S`` does (``engine.generate.draw_direct``, legal and
mutated alike), reads each program's ``shapes:`` note (written by ``render`` from the plan's
script and pipeline states: ``strategies.shapes.shapes_of``) and prints the share of programs
holding each shape; then compiles the first ``--ptxas-sample`` programs with the pinned ptxas at
-O3, one by one, and reports the mean and largest wall time.  The script needs nothing newer than
the notes, so run with ``PYTHONPATH`` at an older checkout it measures that generator's ptxas
cost (the "before" of a README row).

    PYTHONPATH=$PWD python3 benchmarks/bench_shapes.py -n 1000 --seed 3 --out benchmarks/results/bench_shapes.json
"""
from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections import Counter

from fuzzptx.engine.generate import draw_direct
from fuzzptx.oracles.ptxas import compile_ptx, ptxas_version

from records import finish  # benchmarks/records.py, beside this script


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--ptxas-sample", type=int, default=120)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    t0 = time.time()
    progs = draw_direct(a.n, a.seed)
    draw_s = time.time() - t0
    counts: Counter = Counter()
    any_shape = 0
    for p in progs:
        names = next((n.split(":", 1)[1].split() for n in p.notes if n.startswith("shapes:")), [])
        counts.update(names)
        any_shape += bool(names)
    times, lines, accepted = [], [], 0
    for p in progs[:a.ptxas_sample]:
        text = p.to_ptx()
        t = time.time()
        r = compile_ptx(text, opt_level=3)
        times.append(time.time() - t)
        lines.append(text.count("\n"))
        accepted += r.accepted
    record = {
        "command": f"PYTHONPATH=$PWD python3 benchmarks/bench_shapes.py -n {a.n} --seed {a.seed} --ptxas-sample {a.ptxas_sample}",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "device": f"CPU ({platform.machine()}, shared 2-core host)",
        "ptxas": ptxas_version(),
        "programs": a.n, "seed": a.seed, "draw_seconds": round(draw_s, 2),
        # the names the notes hold (strategies.shapes.SHAPES), none where the generator has none
        "shape_programs": dict(counts.most_common()),
        "shape_share": {s: round(k / a.n, 4) for s, k in counts.most_common()},
        "programs_with_any_shape": any_shape,
        "ptxas_sample": len(times), "ptxas_accepted": accepted,
        "ptxas_seconds_mean": round(statistics.mean(times), 3) if times else None,
        "ptxas_seconds_median": round(statistics.median(times), 3) if times else None,
        "ptxas_seconds_max": round(max(times), 3) if times else None,
        "ptx_lines_mean": round(statistics.mean(lines), 1) if lines else None,
    }
    finish(record, a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
