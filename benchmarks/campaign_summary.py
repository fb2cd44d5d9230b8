"""Summarise a campaign directory: programs by kind, findings by class, and every hardware-class
finding crossed with the SASS verifier's findings on the same program.

    python3 benchmarks/campaign_summary.py CAMPAIGN_DIR OUT.json

The mainloop and tensor-copy kernels have no catalogue form, so the first 2,000 programs (and every
one with a GPU finding) are rebuilt from the campaign's seed to tell their kind."""
import json
import re
import sys
from collections import Counter
from pathlib import Path

from fuzzptx.engine.generate import block_seed, draw_direct
from fuzzptx.judges.finding import classify


def _kind(text: str) -> str:
    """A rebuilt program's kind: wgmma mainloops by fill (cp.async, TMA tensor boxes, ld.st, bulk),
    tensor copies with or without a cluster, plain mainloops, other wgmma programs; twins apart."""
    fill = re.search(r"fill=([\w.]+)", text)
    if "mbarrier" in text and "wgmma.mma_async" in text:
        kind = "mainloop-wgmma " + (fill.group(1) if fill else "bulk")
    elif "cp.async.bulk.tensor" in text:
        kind = "tensor-copy" + (" cluster" if "multicast::cluster" in text or "reqnctapercluster" in text else "")
    else:
        kind = "mainloop" if "mbarrier" in text else "wgmma" if "wgmma.mma_async" in text else "other"
    return kind + (" (illegal twin)" if "mutation:" in text else "")


d = Path(sys.argv[1])
stats = json.loads((d / "stats.json").read_text())
recs = [json.loads(line) for line in (d / "results.jsonl").read_text().splitlines() if line.strip()]
kinds = Counter()
for r in recs:
    forms = " ".join(r.get("forms", []))
    k = ("tensor-copy" if "cp.async.bulk.tensor" in forms else
         "mainloop-wgmma" if "mbarrier" in forms and "wgmma" in forms else
         "mainloop" if "mbarrier" in forms else r.get("family", "?").split(".")[0])
    kinds[k] += 1
# the mainloop and tensor-copy kernels have no catalogue form: rebuild a sample of the "other" programs
size = stats.get("block_size", 32)
blocks = {}
other = Counter()
others = [r for r in recs if r.get("family") == "other"]
sample = recs[:2000] + [r for r in recs[2000:] if any(f["signature"].startswith(("reference!=hardware", "hardware:")) for f in r.get("findings", []))]
for r in sample:
    b = r["block"]
    if b not in blocks:
        blocks[b] = draw_direct(size, block_seed(stats["seed"], b))
    text = blocks[b][r["index"]].to_ptx()
    other[_kind(text)] += 1
by_class = Counter()
gpu = []
for r in recs:
    sigs = [f["signature"] for f in r.get("findings", [])]
    for s in sigs:
        by_class[classify(s)] += 1
    hw = [s for s in sigs if s.startswith(("reference!=hardware", "hardware:"))]
    if hw:
        gpu.append({"id": r["id"], "family": r.get("family"), "findings": sigs,
                    "sass_hazard": any(s.startswith("sass:") for s in sigs),
                    "mutation": r.get("mutation"), "verdicts": {k: v for k, v in r.get("verdicts", {}).items() if k in ("hardware", "sass", "reference")}})
out = {"programs": len(recs), "stats_programs": stats.get("programs"), "programs_per_second": stats.get("programs_per_second"),
       "gpu_programs": stats.get("gpu_programs"), "judges": stats.get("judges"), "numerics": stats.get("numerics"),
       "seed": stats.get("seed"), "kinds": dict(kinds),
       "other_programs": len(others), "sample": len(sample), "sample_kinds": dict(other), "findings_by_class": dict(by_class),
       "buckets": stats.get("buckets"), "faults": stats.get("faults"),
       "gpu_findings": len(gpu), "gpu_findings_with_sass_hazard": sum(g["sass_hazard"] for g in gpu),
       "gpu_findings_without_sass_hazard": [g for g in gpu if not g["sass_hazard"]][:60],
       "gpu_findings_with_sass_hazard_sample": [g for g in gpu if g["sass_hazard"]][:10]}
print(json.dumps({k: v for k, v in out.items() if k not in ("buckets", "gpu_findings_without_sass_hazard", "gpu_findings_with_sass_hazard_sample")}, indent=1))
json.dump(out, open(sys.argv[2], "w"), indent=1)
