"""Prove that a refactor changed no verdict and no finding: compare two run or campaign records.

    python benchmarks/verdict_snapshot.py OLD/results.jsonl NEW/results.jsonl [--batch 32] [--out diff.json]

Each record is keyed by (block, index) -- a ``fuzzptx run`` record from before the engines were
one engine has an integer ``id`` (block = id // batch) -- and reduced to what a judge or the differ
decides: the verdict lines, the finding signatures (as a set: their order in a record is not a
verdict), the family, forms, coverage and instruction count.  Times and repro paths are left
out.  Exit status 1 when any program differs or is missing on one side.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

FIELDS = ("family", "forms", "coverage", "instructions", "verdicts")


def load(path: Path, batch: int) -> dict[tuple[int, int], dict]:
    out = {}
    with path.open() as fh:
        for line in fh:
            rec = json.loads(line)
            if "block" in rec:
                key = (int(rec["block"]), int(rec["index"]))
            else:
                key = divmod(int(rec["id"]), batch)
            norm = {k: rec.get(k) for k in FIELDS}
            norm["findings"] = sorted(f["signature"] for f in rec.get("findings", []))
            out[key] = norm
    return out


def digest(snap: dict) -> str:
    return hashlib.sha256(json.dumps(sorted((list(k), v) for k, v in snap.items()), sort_keys=True).encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--batch", type=int, default=32, help="block size of the runs (for old integer ids)")
    ap.add_argument("--out", help="write the comparison as JSON here")
    a = ap.parse_args(argv)
    old, new = load(Path(a.old), a.batch), load(Path(a.new), a.batch)
    differ = sorted(k for k in old.keys() & new.keys() if old[k] != new[k])
    only_old, only_new = sorted(old.keys() - new.keys()), sorted(new.keys() - old.keys())
    findings_old = sum(len(v["findings"]) for v in old.values())
    findings_new = sum(len(v["findings"]) for v in new.values())
    result = {"old": a.old, "new": a.new, "programs_old": len(old), "programs_new": len(new),
              "findings_old": findings_old, "findings_new": findings_new,
              "digest_old": digest(old), "digest_new": digest(new),
              "differ": [{"key": list(k), "old": old[k], "new": new[k]} for k in differ[:20]],
              "differ_count": len(differ), "only_old": [list(k) for k in only_old[:20]],
              "only_new": [list(k) for k in only_new[:20]], "identical": not (differ or only_old or only_new)}
    print(f"{len(old)} / {len(new)} programs, findings {findings_old} / {findings_new}: "
          f"{len(differ)} differ, {len(only_old)} only old, {len(only_new)} only new"
          + (" -- identical" if result["identical"] else ""))
    for k in differ[:5]:
        print(f"  {k}: old {old[k]}\n  {' ' * len(str(k))}  new {new[k]}")
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0 if result["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
