"""Run a short campaign, then ``fuzzptx replay`` the smallest repro of every bucket: the repro contract end to end.

Each repro's EXPECT lines were moved to its final header from the campaign's own verdicts
(``differ.finalize_repro``); replay reruns every judge (the GPU too, where there is one) and
must find each expectation holding.  Writes a JSON record: campaign stats, repros, replay
exit codes, and the first lines of any replay that did not hold.

    python benchmarks/campaign_replay_check.py --time 60 --gpus all --out /tmp/crc --record rec.json

Replays run ``--jobs`` at a time (each is a fresh process: imports, a CUDA context, a solo
ptxas run); ``--all`` replays every repro file instead of one per bucket.
"""
from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
import platform
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time", type=float, default=60.0)
    ap.add_argument("--gpus", default="all")
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--out", required=True)
    ap.add_argument("--record", required=True)
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--all", action="store_true", help="every repro file, not the smallest of each bucket")
    a = ap.parse_args(argv)
    from fuzzptx.oracles.ptxas import ptxas_version

    out = Path(a.out)
    t0 = time.time()
    camp = subprocess.run([sys.executable, "-m", "fuzzptx.cli", "campaign", "--time", str(int(a.time)), "--gpus", a.gpus,
                           "--seed", str(a.seed), "--out", str(out), "--quiet"], capture_output=True, text=True)
    stats = json.loads((out / "stats.json").read_text()) if (out / "stats.json").exists() else {}
    smallest: dict[str, tuple[int, str]] = {}  # signature -> (instructions, repro): what triage links
    for line in (out / "results.jsonl").read_text().splitlines() if (out / "results.jsonl").exists() else ():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        for f in r.get("findings", ()):
            if f.get("repro") and (f["signature"] not in smallest or r["instructions"] < smallest[f["signature"]][0]):
                smallest[f["signature"]] = (r["instructions"], f["repro"])
    files = sorted((out / "repros").glob("*.ptx")) if a.all else sorted({Path(p) for _, p in smallest.values()})

    def replay(f: Path):
        r = subprocess.run([sys.executable, "-m", "fuzzptx.cli", "replay", "--json", str(f)], capture_output=True,
                           text=True)
        return f, r

    codes: Counter = Counter()
    failed = []
    hardware_rows: Counter = Counter()
    t_replay = time.time()
    with ThreadPoolExecutor(a.jobs) as pool:
        for f, r in pool.map(replay, files):
            codes[r.returncode] += 1
            try:
                obj = json.loads(r.stdout)
                hardware_rows[str(next(j["verdict"] for j in obj["judges"] if j["judge"] == "hardware"))] += 1
            except (ValueError, KeyError, StopIteration):
                pass
            if r.returncode != 0:
                failed.append({"file": f.name, "rc": r.returncode, "out": (r.stdout + r.stderr)[-1500:]})
    rec = {"what": "campaign repros replayed with every judge", "host": platform.node(), "ptxas": ptxas_version(),
           "campaign_rc": camp.returncode, "campaign_stderr_tail": camp.stderr[-800:], "seconds": round(time.time() - t0, 1),
           "programs": stats.get("programs"), "gpu_programs": stats.get("gpu_programs"), "findings": stats.get("findings"),
           "buckets": len(stats.get("buckets", {})), "pool_repro_seconds": stats.get("pool_repro_seconds"),
           "repro_files": len(list((out / "repros").glob("*.ptx"))), "replayed": sum(codes.values()),
           "replay_seconds": round(time.time() - t_replay, 1), "replay_exit_codes": dict(codes), "hardware_verdicts_on_replay": dict(hardware_rows),
           "replays_not_holding": failed[:20]}
    try:
        import cupy

        rec["device"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception as exc:  # noqa: BLE001 - a record without a GPU says so
        rec["device"] = f"none ({type(exc).__name__})"
    Path(a.record).write_text(json.dumps(rec, indent=1))
    print(json.dumps({k: v for k, v in rec.items() if k != "replays_not_holding"}, indent=1))
    return 0 if camp.returncode == 0 and set(codes) <= {0} else 1


if __name__ == "__main__":
    sys.exit(main())
