"""The README main job, ``fuzzptx run --examples 100``, timed as a user runs it (the target: it
ends within 60 s on 2 cores).

A fresh ``fuzzptx`` process (the interpreter's start, imports and catalogue included) with the
default judges, its run directory in a temporary folder; the record holds the wall seconds, the
CPU of the process and its children (ptxas, nvdisasm), and the run's own summary.

    python benchmarks/bench_main_job.py --examples 100 [--out benchmarks/results/main_job_2core.json]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from records import start  # benchmarks/records.py, beside this script

RESULTS = Path(__file__).resolve().parent / "results"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main(argv: list[str] | None = None) -> int:
    bench = start(argv if argv is None else [__file__, *argv])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=100)
    ap.add_argument("--out", default=str(RESULTS / "main_job_2core.json"))
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "fuzzptx.cli", "run", "--examples", str(a.examples), "--out", f"{tmp}/run"]
        c0, t0 = _children_cpu(), time.perf_counter()
        done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
        if done.returncode not in (0, 1):  # 1: findings, a normal end
            print(done.stderr, file=sys.stderr)
            return done.returncode
        summary = json.loads(Path(f"{tmp}/run/summary.json").read_text())
    keep = ("programs", "illegal_programs", "ptxas_accepted", "wall_seconds", "programs_per_second", "stage_seconds",
            "judges", "findings_by_class")
    bench.finish({"what": "the README main job, fuzzptx run --examples N, in a fresh process",
                  "run": "fuzzptx run --examples %d --out TMP" % a.examples, "exit": done.returncode,
                  "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2), "target_seconds": 60,
                  "summary": {k: summary[k] for k in keep if k in summary}}, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
