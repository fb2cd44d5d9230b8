"""Bug yield: distinct root causes per CPU-hour and per GPU-hour, new and known, of a campaign with the
known-bug ledger's shapes avoided (the default) and, with ``--rediscover-too``, of the same campaign
without avoidance -- what the ledger and the avoidance buy.

Each run is ``fuzzptx campaign`` into its own directory; its ``stats.json`` holds the bug summary
(``fuzzptx.triage.bugs``: headline, rows, yield, saturation curve).  The record says the device, the
driver, the versions and every run's figures.

On the H100 (the lead's measurement; ~2 x TIME seconds)::

    python3 benchmarks/bug_yield.py --time 300 --seed 41 --gpus all --rediscover-too \\
        --out $OUT/bug_yield_h100.json

``--dry-run``: everything but the launch, on the CPU (``--gpus none``, judges checker,ptxas,sass).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import records  # noqa: E402  (benchmarks/records.py: the record's meta)
CPU_JUDGES = "checker,ptxas,sass"


def device() -> dict:
    """The GPU and driver (nvidia-smi), else the CPU machine."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True).stdout.strip().splitlines()
        name, driver = (x.strip() for x in out[0].split(","))
        return {"device": name, "gpus": len(out), "driver": driver}
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return {"device": f"CPU only ({os.cpu_count()} CPUs)", "gpus": 0, "driver": None}


def versions() -> dict:
    from fuzzptx.oracles.ptxas import PINNED_VERSION

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    return {"python": platform.python_version(), "ptxas": PINNED_VERSION, "fuzzptx_commit": commit or None}


def campaign(out: Path, args: argparse.Namespace, rediscover: bool) -> dict:
    cmd = [sys.executable, "-m", "fuzzptx.cli", "campaign", "--out", str(out), "--seed", str(args.seed),
           "--gpus", args.gpus, "--quiet", "--no-bundles"]
    cmd += ["--time", str(args.time)] if args.time else ["--examples", str(args.examples)]
    cmd += ["--judges", args.judges] if args.judges else []
    cmd += ["--rediscover"] if rediscover else []
    cmd += ["--known", args.known or str(ROOT / "reports" / "known_bugs.toml")]
    cmd += ["--workers", str(args.workers)] if args.workers else []
    cmd += args.campaign_args
    # from /tmp: the package comes from the installed fuzzptx (or PYTHONPATH), never the checkout's folders
    r = subprocess.run(cmd, capture_output=True, text=True, cwd="/tmp")
    if r.returncode != 0:
        raise SystemExit(f"bug_yield: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    st = json.loads((out / "stats.json").read_text())
    b = st["bugs"]
    return {"command": " ".join(cmd[2:]), "rediscover": rediscover, "avoid": st.get("avoid", []),
            "numerics": st.get("numerics"), "judges": st.get("judges"), "programs": st["programs"],
            "gpu_programs": st.get("gpu_programs"), "findings": st["findings"], "wall_seconds": st["wall_seconds"],
            "programs_per_second": st.get("programs_per_second"), "gpu_idle_share": st.get("gpu_idle_share"),
            "evidence": st.get("evidence"),  # finding signatures (each compile pair's among them) and their counts
            "headline": b["headline"], "yield": b["yield"],
            "known_findings": sum(x["count"] for x in b["bugs"] if not x["new"]),
            "bugs": [{k: x[k] for k in ("cause", "class", "count", "new", "known", "first_seen_programs")}
                     for x in b["bugs"]],
            "saturation": b["saturation"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    lim = ap.add_mutually_exclusive_group(required=True)
    lim.add_argument("--time", help="campaign duration (300, 5m)")
    lim.add_argument("--examples", type=int, help="programs per campaign")
    ap.add_argument("--seed", type=int, default=41)
    ap.add_argument("--gpus", default="all")
    ap.add_argument("--judges", default=None, help="default: the campaign's (with the GPU) or checker,ptxas,sass")
    ap.add_argument("--known", default=None, help="ledger (default: reports/known_bugs.toml)")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--rediscover-too", action="store_true", help="also run the campaign without avoidance")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: --gpus none, judges checker,ptxas,sass")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bug_yield.json"))
    ap.add_argument("--keep", type=Path, default=None,
                    help="write the campaigns' directories here (results, repros) instead of a temporary one")
    ap.add_argument("campaign_args", nargs="*", help="after --: more fuzzptx campaign options (--pairs none, ...)")
    run = records.start(argv)
    args = ap.parse_args(argv)
    if args.dry_run:
        args.gpus, args.judges = "none", args.judges or CPU_JUDGES
    elif args.gpus == "none" and not args.judges:
        args.judges = CPU_JUDGES
    runs = []
    with tempfile.TemporaryDirectory(prefix="bug_yield_") as tmp:
        where = args.keep or Path(tmp)
        for rediscover in ([False, True] if args.rediscover_too else [False]):
            runs.append(campaign(where / ("rediscover" if rediscover else "avoid"), args, rediscover))
    rec = {"what": "bug yield: distinct root causes per CPU-hour and GPU-hour, new and known (fuzzptx.triage.bugs)",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           **device(), **versions(), "dry_run": args.dry_run, "seed": args.seed, "runs": runs}
    run.finish(rec, args.out, echo=False)
    for r in runs:
        y = r["yield"]
        print(f"{'--rediscover' if r['rediscover'] else 'avoiding   '}  {r['programs']} programs, {r['headline']}; "
              f"known-bug findings {r['known_findings']}/{r['findings']}; per CPU-hour {y['distinct_per_cpu_hour']} "
              f"(new {y['new_per_cpu_hour']}), per GPU-hour {y['distinct_per_gpu_hour']} (new {y['new_per_gpu_hour']})")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
