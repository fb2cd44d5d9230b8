"""The metamorphic judge inside a hardware campaign: every GPU-bound program's pairs (-O3/-O0,
pipelined/serialised, with/without dead uniform branches) compiled in the CPU pool and run on
the GPU beside the program itself. Writes a record JSON: device, versions, programs, pairs per
relation, metamorphic findings, and the campaign's throughput with and without the judge.

    python3 benchmarks/hw_campaign_metamorphic.py --time 120 --out "$OUT"          # on the GPU machine
    python benchmarks/hw_campaign_metamorphic.py --time 20 --gpus none --out /tmp/m  # CPU smoke test
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from campaign_device import device_info  # noqa: E402 (one device record for every device script)

from fuzzptx.judges.metamorphic import is_metamorphic  # noqa: E402

PAIRS = re.compile(r"^(\d+) pair\(s\) \(([^)]*)\), (\d+) differ$")


def campaign(out: Path, seconds: int, gpus: str, judges: str) -> dict:
    cmd = [sys.executable, "-m", "fuzzptx.cli", "campaign", "--time", f"{seconds}s", "--gpus", gpus,
           "--judges", judges, "--seed", "11", "--out", str(out)]
    t0 = time.time()
    r = subprocess.run(cmd, cwd="/tmp", capture_output=True, text=True, timeout=seconds + 240)
    stats = json.loads((out / "stats.json").read_text()) if (out / "stats.json").exists() else {}
    return {"command": " ".join(cmd[1:]), "rc": r.returncode, "wall_s": round(time.time() - t0, 1),
            "stderr_tail": r.stderr[-1500:], "stats": stats}


def tally(results: Path) -> dict:
    """Per relation: pairs judged; metamorphic verdicts by kind; metamorphic findings by signature."""
    rel, kinds, sigs = Counter(), Counter(), Counter()
    programs = 0
    for line in results.read_text().splitlines():
        rec = json.loads(line)
        programs += 1
        verdict = rec.get("verdicts", {}).get("metamorphic")
        if verdict is None:
            kinds["not judged (rejected, planted, or not GPU-bound)"] += 1
            continue
        m = PAIRS.match(verdict)
        if m:
            kinds["judged"] += 1
            rel.update(x.strip() for x in m.group(2).split(",") if x.strip() and x.strip() != "none")
        else:
            kinds[verdict.split(":")[0] + ": " + verdict.split(": ", 2)[-1][:60]] += 1
        sigs.update(f["signature"] for f in rec.get("findings", []) if is_metamorphic(f["signature"]))
    return {"programs": programs, "pairs_by_relation": dict(rel), "verdicts": dict(kinds), "findings": dict(sigs)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=int, default=120)
    ap.add_argument("--gpus", default="all")
    ap.add_argument("--out", default="/tmp/hw_campaign_metamorphic")
    ap.add_argument("--record", default=None, help="record JSON path (default OUT/campaign_metamorphic.json)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    hw = ",hardware" if args.gpus != "none" else ""
    rec = {"device": device_info(), "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    rec["with_metamorphic"] = campaign(out / "meta", args.time, args.gpus, f"reference,checker,ptxas{hw},metamorphic")
    rec["with_metamorphic"]["tally"] = tally(out / "meta" / "results.jsonl")
    rec["without_metamorphic"] = campaign(out / "plain", args.time, args.gpus, f"reference,checker,ptxas{hw}")
    a = rec["with_metamorphic"]["stats"].get("programs_per_second") or 0
    b = rec["without_metamorphic"]["stats"].get("programs_per_second") or 0
    rec["throughput_ratio_with_over_without"] = round(a / b, 3) if b else None
    path = Path(args.record) if args.record else out / "campaign_metamorphic.json"
    path.write_text(json.dumps(rec, indent=1, default=str))
    print(json.dumps({k: rec[k] for k in ("throughput_ratio_with_over_without",)} | {"tally": rec["with_metamorphic"]["tally"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
