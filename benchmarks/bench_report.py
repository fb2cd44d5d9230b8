"""``fuzzptx report`` on a nightly-sized record: wall time and peak memory.

A nightly campaign writes ~110 programs/s for hours (millions of ~0.8 KB JSON lines).  This
runs a small real CPU campaign (or takes ``--from DIR``), copies its records ``--programs`` times
over (new block numbers and times, the same findings), then times ``fuzzptx report`` on it in a
child process and reads that process's peak resident memory.

    python benchmarks/bench_report.py --programs 200000 [--from DIR] [--out F]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from records import finish  # benchmarks/records.py, beside this script


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=200_000)
    ap.add_argument("--from", dest="source", help="a campaign directory to copy records from (default: run one)")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="fuzzptx-report-"))
    src = Path(args.source) if args.source else work / "small"
    if not args.source:
        subprocess.run([sys.executable, "-m", "fuzzptx.cli", "campaign", "--gpus", "none", "--examples", "128",
                        "--workers", "2", "--quiet", "--judges", "reference,checker,ptxas", "--out", str(src)],
                       check=True, capture_output=True)
    base = [json.loads(x) for x in (src / "results.jsonl").read_text().splitlines()]
    big = work / "big"
    big.mkdir()
    if (src / "repros").is_dir():
        shutil.copytree(src / "repros", big / "repros")
    span = max(r["block"] for r in base) + 1
    n = 0
    with (big / "results.jsonl").open("w") as fh:
        for k in range(-(-args.programs // len(base))):
            for r in base:
                if n == args.programs:
                    break
                r = dict(r, block=r["block"] + k * span, t=r["t"] + k)
                r["id"] = f"{r['block']}:{r['index']}"
                fh.write(json.dumps(r) + "\n")
                n += 1
    size = (big / "results.jsonl").stat().st_size
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "fuzzptx.cli", "report", str(big)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak, not the campaign's before it
    wall = time.perf_counter() - t0
    if status:
        raise SystemExit(f"fuzzptx report failed (wait status {status})")
    rss_mb = usage.ru_maxrss / 1024
    rec = {"programs": n, "record_mb": round(size / 2**20, 1), "report_seconds": round(wall, 2),
           "report_peak_rss_mb": round(rss_mb, 1), "python": sys.version.split()[0]}
    finish(rec, args.out)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
