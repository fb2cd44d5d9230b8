"""How check / replay / triage / shrink grow with the number of kernels in one module (issue 29).

The module: one generated wgmma pipeline kernel (``tests/data/repros/acc_write_site_not_reached.ptx``:
~290 PTX lines, a sparse wgmma chain, a helper function, an extern declaration) repeated N times
under distinct entry names, with its repro header (the first kernel launches).  Linear scaling
means the seconds per kernel stay flat from N=1,000 to N=10,000.

Measured, each in a fresh ``fuzzptx`` process (wall seconds, as a user waits):
``check`` (all checker layers) on the file; ``replay`` (every judge, ptxas included) on it;
``triage`` of a results.jsonl whose record names it; ``shrink`` with a budget that grows with the
module (``--shrink-seconds-per-kernel``: a fixed budget ends while the input is still parsed or
judged at every size, which shows only that the budget holds, tests/test_shrink_budget.py) and the
times its progress lines give for its phases -- the input parsed, the input judged (ptxas on the
whole module), the end -- at ``--shrink-kernels`` sizes (ptxas on the whole module is most of a
shrink's time: 3,000 kernels would take minutes); and the pinned ptxas alone on the file (most of
``replay``'s time is ptxas's own).

    python benchmarks/bench_scaling.py --kernels 1000,3000 --shrink-kernels 100,300,1000 [--skip replay,ptxas]

A 10,000-kernel module is 93 MB, over the input layer's 64 MiB limit (``FUZZPTX_MAX_INPUT_MB``
raises it); ``--kernels 10000`` sets that variable for its commands.

Writes benchmarks/results/scaling.json (``--out``).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import resource
import subprocess
import sys
import time

from fuzzptx.oracles.ptxas import find_ptxas
from records import start  # benchmarks/records.py, beside this script

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "repros" / "acc_write_site_not_reached.ptx"
OUT = ROOT / "benchmarks" / "results" / "scaling.json"


def module_text(kernels: int, source: pathlib.Path = SOURCE) -> str:
    """``kernels`` copies of the source's entry (``k``, ``k_1``, ...), its header, helpers once."""
    text = source.read_text()
    start = text.index(".visible .entry k(")
    head, entry = text[:start], text[start:]
    # its EXPECT lines are the one-kernel program's verdicts (ptxas prints C7510 once per kernel): replay
    # then judges the module afresh
    head = "".join(line for line in head.splitlines(True) if not line.startswith("// EXPECT:"))
    copies = [entry] + [entry.replace(".visible .entry k(", f".visible .entry k_{i}(", 1) for i in range(1, kernels)]
    return head + "\n".join(copies)


def _timed(cmd: list[str], env: dict) -> tuple[float, float, int, str, str]:
    """(wall seconds, CPU seconds of the command and its children, exit, last stderr line, stdout):
    on a shared machine the CPU seconds are the steadier measure of the work done."""
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    return time.perf_counter() - t0, cpu, r.returncode, (r.stderr.strip().splitlines() or [""])[-1], r.stdout


WHAT = "CPU and wall time per kernel of fuzzptx commands on one module of N kernels"
_PROGRESS = re.compile(r"^\[\s*([\d.]+) s / [\d.]+ s\] (.*)$")


def shrink_phases(stdout: str, path: str) -> dict:
    """Seconds into the shrink (its own clock) at which the input was parsed (the ``shrinking
    FILE:`` line), judged (the first line after it that is not the judging progress line) and done,
    and the instructions before and after, from ``fuzzptx shrink``'s progress lines."""
    lines = [(float(m[1]), m[2]) for m in map(_PROGRESS.match, stdout.splitlines()) if m]
    parsed = next((t for t, text in lines if text.startswith(f"shrinking {path}:")), None)
    judged = next((t for t, text in lines if parsed is not None and t >= parsed and not text.startswith(
        ("shrinking ", "judging the input"))), None)
    done = re.search(r"^done: (\d+) -> (\d+) instructions in ([\d.]+) s", stdout, re.M)
    return {"parsed_at": parsed, "judged_at": judged, "done_at": float(done[3]) if done else None,
            "instructions_before": int(done[1]) if done else None, "instructions_after": int(done[2]) if done else None}


def main(argv: list[str] | None = None) -> int:
    bench = start(None if argv is None else [__file__, *argv])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="1000,10000", help="comma-separated kernel counts")
    ap.add_argument("--shrink-kernels", default="100,300,1000", help="kernel counts shrink runs at")
    ap.add_argument("--shrink-seconds-per-kernel", type=float, default=0.3,
                    help="shrink's --budget per kernel (at least 10 s)")
    ap.add_argument("--skip", default="", help="commands to leave out: check,replay,triage,shrink,ptxas")
    ap.add_argument("--tmp", default="/tmp/fuzzptx_scaling")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    tmp = pathlib.Path(args.tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    # ptxas's time limit grows with the input but is wall time: on a loaded machine a 100-kernel module
    # ran out of it while shrink judged its input ("the signature does not hold on the input"); the
    # benchmark measures growth, not the machine, so its commands get an hour unless told otherwise
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FUZZPTX_MAX_INPUT_MB": os.environ.get("FUZZPTX_MAX_INPUT_MB", "256"),
           "FUZZPTX_PTXAS_TIMEOUT": os.environ.get("FUZZPTX_PTXAS_TIMEOUT", "3600")}
    fz = [sys.executable, "-m", "fuzzptx.cli"]
    rows = []
    sizes = {int(x) for x in args.kernels.split(",")}
    shrink_sizes = {int(x) for x in args.shrink_kernels.split(",")} if "shrink" not in skip else set()
    for n in sorted(sizes | shrink_sizes):
        path = tmp / f"k{n}.ptx"
        path.write_text(module_text(n))
        rec = tmp / f"k{n}.jsonl"
        rec.write_text(json.dumps({"id": "0:0", "family": "wgmma", "instructions": None, "repro": str(path),
                                   "findings": [{"signature": "big", "repro": str(path)}]}) + "\n")
        row = {"kernels": n, "bytes": path.stat().st_size,
               "lines": path.read_text().count("\n")}
        plan = {"check": fz + ["check", str(path)], "replay": fz + ["replay", str(path)],
                "triage": fz + ["triage", str(rec)],
                "shrink": fz + ["shrink", str(path), "--keep", "ptxas:C7510", "--budget",
                                f"{max(10.0, args.shrink_seconds_per_kernel * n):g}", "-o", str(tmp / f"k{n}.min.ptx")],
                # the pinned ptxas alone on the file: the part of replay that is not fuzzptx's
                "ptxas": [str(find_ptxas()), "-arch=sm_90a", str(path), "-o", os.devnull]}
        for name, cmd in plan.items():
            if name in skip or n not in (shrink_sizes if name == "shrink" else sizes):
                continue
            secs, cpu, rc, last, stdout = _timed(cmd, env)
            row[name] = {"seconds": round(secs, 2), "cpu_seconds": round(cpu, 2),
                         "ms_per_kernel": round(1000 * secs / n, 3), "cpu_ms_per_kernel": round(1000 * cpu / n, 3),
                         "exit": rc, "last_line": last[:200]}
            if name == "shrink":
                phases = shrink_phases(stdout, str(path))
                row[name].update(budget=float(cmd[cmd.index("--budget") + 1]), **phases, per_kernel_ms={
                    k: round(1000 * phases[k] / n, 2) for k in ("parsed_at", "judged_at", "done_at") if phases[k]})
            print(f"{n:>6} kernels  {name:<7} {secs:8.2f} s wall {cpu:8.2f} s CPU  {1000 * cpu / n:7.2f} CPU ms/kernel  "
                  f"exit {rc}", flush=True)
            # written after every command: a run cut short still leaves what it measured
            bench.finish({"what": WHAT, "rows": rows + [row]}, args.out, echo=False)
        rows.append(row)
    bench.finish({"what": WHAT, "rows": rows}, args.out, echo=False)
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
