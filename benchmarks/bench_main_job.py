"""The README main job, ``fuzzptx run --examples 100``, timed as a user runs it (the target: it
ends within 60 s on 2 cores).

A fresh ``fuzzptx`` process (the interpreter's start, imports and catalogue included) with the
default judges, its run directory in a temporary folder; the record holds the wall seconds and the
run's own summary (its stage seconds: the pool's workers are the forkserver's children, not this
script's, so ``getrusage`` cannot total their CPU).

    python benchmarks/bench_main_job.py --examples 100 [--out benchmarks/results/main_job_2core.json]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from records import start  # benchmarks/records.py, beside this script

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> int:
    bench = start(argv if argv is None else [__file__, *argv])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=100)
    ap.add_argument("--out", default=str(RESULTS / "main_job_2core.json"))
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "fuzzptx.cli", "run", "--examples", str(a.examples), "--out", f"{tmp}/run"]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if done.returncode not in (0, 1):  # 1: findings, a normal end
            print(done.stderr, file=sys.stderr)
            return done.returncode
        summary = json.loads(Path(f"{tmp}/run/summary.json").read_text())
    keep = ("programs", "illegal_programs", "ptxas_accepted", "wall_seconds", "programs_per_second", "stage_seconds",
            "judges", "findings_by_class")
    bench.finish({"what": "the README main job, fuzzptx run --examples N, in a fresh process",
                  "run": "fuzzptx run --examples %d --out TMP" % a.examples, "exit": done.returncode,
                  "wall_seconds": round(wall, 2), "target_seconds": 60,
                  "summary": {k: summary[k] for k in keep if k in summary}}, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
