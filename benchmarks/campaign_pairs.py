"""A campaign with compile pairs against the same campaign without them (issue 37): programs per
second, the GPU's idle share, and per pair kind how many programs it judged and how many findings
it gave.  It reads campaign directories written on the GPU machine (``stats.json`` of each
invocation, the whole ``results.jsonl``) and writes one record.

On the GPU machine (a 10-minute campaign in two parts with ``--resume``, then 120 s without pairs)::

    fuzzptx campaign --time 420 --seed 47 --gpus all --out /tmp/camp47 --known reports/known_bugs.toml
    fuzzptx campaign --time 180 --seed 47 --gpus all --out /tmp/camp47 --resume --known reports/known_bugs.toml
    fuzzptx campaign --time 120 --seed 47 --gpus all --pairs none --out /tmp/np47 --known reports/known_bugs.toml

Here, from the directories that came back (each part's ``stats.json`` kept apart)::

    python benchmarks/campaign_pairs.py --part P1/camp47 --part P2/camp47 --without P3/np47 \\
        --device P1/device.txt --out benchmarks/results/campaign_pairs_h200.json
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import records  # noqa: E402

_VERDICT = re.compile(r"(\d+) pair\(s\) \(([^)]*)\), (\d+) differ")


def _stats(d: Path) -> dict:
    s = json.loads((d / "stats.json").read_text())
    return {k: s.get(k) for k in ("programs", "wall_seconds", "programs_per_second", "gpu_idle_share", "gpu_programs",
                                  "findings", "ptxas_accepted", "cpu_hours", "gpu_hours", "judges", "seed",
                                  "resumed_skipping")} | {"headline": (s.get("bugs") or {}).get("headline")}


def pairs(results: Path) -> dict:
    """Per pair kind: the programs that took a pair, pairs run and differing; findings per pair."""
    kinds: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    findings: collections.Counter = collections.Counter()
    other: collections.Counter = collections.Counter()
    n = 0
    with results.open(errors="replace") as fh:
        for line in fh:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            n += 1
            v = (r.get("verdicts") or {}).get("metamorphic")
            if v is not None:
                m = _VERDICT.match(str(v))
                if m:
                    c = kinds[m.group(2)]
                    c["programs"] += 1
                    c["pairs"] += int(m.group(1))
                    c["differ"] += int(m.group(3))
                else:
                    other[str(v)[:80]] += 1
            for f in r.get("findings") or []:
                sig = f.get("signature", "") if isinstance(f, dict) else str(f)
                if sig.startswith("hardware:") and "!=" in sig.split("|", 1)[0]:
                    findings[sig.split("|", 1)[0]] += 1
    return {"records": n, "by_kind": {k: dict(c) for k, c in sorted(kinds.items())},
            "other_verdicts": dict(other), "findings_by_pair": dict(findings)}


def main(argv: list[str] | None = None) -> int:
    run = records.start(argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", type=Path, action="append", required=True,
                    help="a campaign directory after one invocation (the last holds the whole results.jsonl)")
    ap.add_argument("--without", type=Path, required=True, help="the same campaign with --pairs none")
    ap.add_argument("--device", type=Path, help="nvidia-smi line, versions and cores written on the GPU machine")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    parts = [_stats(d) for d in args.part]
    programs = sum(p["programs"] for p in parts)
    seconds = sum(p["wall_seconds"] for p in parts)
    gpu_busy = sum((1 - p["gpu_idle_share"]) * p["wall_seconds"] for p in parts)
    without = _stats(args.without)
    with_rate = programs / seconds
    record = {
        "what": "issue 37: a campaign with the default compile pairs against the same campaign without pairs",
        "device": args.device.read_text().strip().splitlines() if args.device else None,
        "with_pairs": {"parts": parts, "programs": programs, "seconds": round(seconds, 1),
                       "programs_per_second": round(with_rate, 2),
                       "gpu_idle_share": round(1 - gpu_busy / seconds, 3),
                       "pairs": pairs(args.part[-1] / "results.jsonl")},
        "without_pairs": without | {"pairs": pairs(args.without / "results.jsonl")},
        "rate_with_over_without": round(with_rate / without["programs_per_second"], 3),
    }
    run.finish(record, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
