"""Root causes of a campaign's findings, counted again with today's judges and ledger: what a campaign
found, known against new, after the fixes and the shapes learned from shrinking its findings.

    python3 benchmarks/campaign_rootcauses.py CAMPAIGN_DIR [--out JSON] [--gpus N]

A campaign's headline counts buckets by the diagnoses of its own commit.  This reads every finding
of ``results.jsonl`` and says what it is now:

* a ``reference!=hardware`` mismatch whose first element the GPU left inside the reference's bounds,
  read as the f32 the bounds are in (``oracles/reference/result.py``: a float stored through an
  integer-typed buffer was compared as exact bits before 63b811c): ours, not a bug;
* an integer kernel's compile-pair mismatch: the kernel is drawn again from its seed (the draw of
  the campaign's commit, without today's redraw of avoided shapes) and diagnosed with today's shapes
  (``strategies/scalar_shapes.py``), then matched to the ledger;
* anything else keeps the cause the campaign gave it, matched to the ledger.

GPU-hours are the campaign's wall seconds (``stats.json`` of each part, or ``--walls``) times its GPUs.
"""
from __future__ import annotations

import argparse
import json
import re
import struct
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import records  # noqa: E402

from fuzzptx.judges import differ  # noqa: E402
from fuzzptx.judges.finding import Finding, cause_of as cause_of_signature  # noqa: E402
from fuzzptx.strategies.scalar_shapes import SHAPES  # noqa: E402
from fuzzptx.program import Program  # noqa: E402
from fuzzptx.strategies.scalar_kernels import SCALAR_AVOIDABLE, _kernel  # noqa: E402
from fuzzptx.triage.known import DEFAULT_LEDGER, load_known  # noqa: E402

CURRENT = load_known(DEFAULT_LEDGER)  # today's ledger: which shapes' bugs the newest release still has

_BOUNDS = re.compile(r"expected \[(?:np\.float64\()?([-\d.e+inf]+)\)?, (?:np\.float64\()?([-\d.e+inf]+)\)?\], "
                     r"observed \d+ \(0x([0-9a-f]{8})\)")


def inside_bounds(message: str) -> bool:
    """The first mismatch's observed word, read as an f32, lies in the bounds the message gives."""
    m = _BOUNDS.search(message)
    if not m:
        return False
    value = struct.unpack("<f", struct.pack("<I", int(m[3], 16)))[0]
    return float(m[1]) <= value <= float(m[2])


def cause_of(row: dict, finding: dict, avoid: frozenset[str], known) -> dict:
    sig, msg = finding["signature"], finding.get("message", "")
    also = [a["signature"].split("|")[0] for a in finding.get("also", [])]
    live_newest = not any(a.startswith("hardware:") and "!=" in a and "." in a.split(":")[1] for a in also)
    if sig.startswith("reference!=hardware|mismatch|") and inside_bounds(msg):
        return {"cause": "ours: float stored through an integer buffer compared as bits (fixed 63b811c)",
                "known": None, "ours": True}
    source = row.get("source") or ""
    seed = re.search(r"scalar_kernel_(\d+)", source)
    if seed:
        program = Program.from_ptx(_kernel(int(seed[1]), 24, "v3", avoid & frozenset(SCALAR_AVOIDABLE)), source)
        (f,) = differ.diagnose([Finding(sig, msg)], program)
        f = _consistent(f, program, live_newest, sig, msg)
    else:
        f = Finding(sig, msg)
    ids = [k.id for k in known if k.matches(f.root_cause)]
    pattern = f.root_cause.pattern or f"(no known shape: {f.root_cause})"
    return {"cause": ids[0] if ids else pattern, "known": bool(ids), "ours": False,
            "live_in_newest_release": live_newest if seed else None}


def _consistent(f: Finding, program: Program, live_newest: bool, sig: str, msg: str) -> Finding:
    """The diagnosis, checked against the release pair: a kernel holds several shapes at times, and
    the first (``SHAPES``'s order) may be a bug the newest release still has while this kernel is
    right there, or the other way round.  The shape whose bug (today's ledger: ``last_seen`` the
    newest release or not) agrees with the pair is taken, where one does."""
    holding = [name for name, test in SHAPES if test(program)]
    if len(holding) < 2:
        return f
    newest = max((k.last_seen for k in CURRENT), key=_release_key)
    live = {dict(k.cause).get("pattern"): k.last_seen == newest for k in CURRENT if dict(k.cause).get("pattern")}
    agree = [name for name in holding if live.get(name) == live_newest]
    if not agree or agree[0] == f.root_cause.pattern:
        return f
    return Finding(sig, msg, cause=cause_of_signature(sig, agree[0]))


def _release_key(release: str) -> tuple:
    return tuple(int(x) for x in release.split(".") if x.isdigit()) if release[:1].isdigit() else ()


def _ledger(spec: str) -> Path:
    """``--known``: a ledger file, or ``git:REV`` for the repository's ledger at a commit (what was
    known when the campaign ran)."""
    if not spec.startswith("git:"):
        return Path(spec)
    text = subprocess.run(["git", "show", f"{spec[4:]}:reports/known_bugs.toml"], capture_output=True, text=True,
                          check=True, cwd=records.ROOT).stdout
    path = Path(tempfile.mkdtemp()) / "known_bugs.toml"
    path.write_text(text)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("campaign")
    ap.add_argument("--walls", default="", help="the parts' wall seconds, comma-separated (default: stats.json's)")
    ap.add_argument("--gpus", type=int, default=0, help="GPUs of the campaign (default: stats.json's)")
    ap.add_argument("--known", default=str(DEFAULT_LEDGER), help="a ledger, or git:REV (the ledger at a commit)")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    run = records.start(argv)
    out = Path(args.campaign)
    stats = json.loads((out / "stats.json").read_text())
    walls = [float(w) for w in args.walls.split(",") if w] or [stats["wall_seconds"]]
    gpus = args.gpus or len(stats.get("gpus", [])) or 1
    avoid = frozenset(stats.get("avoid", ()))
    known = load_known(_ledger(args.known))
    rows, programs = [], 0
    full = out / "results.jsonl"
    lines = full.open() if full.exists() else (out / "findings.jsonl").open()
    for line in lines:
        row = json.loads(line)
        programs += 1
        for finding in row.get("findings", ()):
            rows.append({"id": row["id"], "signature": finding["signature"], **cause_of(row, finding, avoid, known)})
    if not full.exists():  # a committed campaign keeps its findings' lines and its summary
        programs = json.loads((out / "summary.json").read_text())["programs"]
    causes = Counter(r["cause"] for r in rows)
    bugs = {c for c, r in ((r["cause"], r) for r in rows) if not r["ours"]}
    known_bugs = sorted({r["cause"] for r in rows if r["known"]})
    new_bugs = sorted(bugs - set(known_bugs))
    live = defaultdict(set)
    for r in rows:
        if r.get("live_in_newest_release") is not None:
            live[r["cause"]].add(r["live_in_newest_release"])
    gpu_hours = sum(walls) * gpus / 3600
    findings_of_bugs = sum(n for c, n in causes.items() if c in bugs)
    record = {
        "campaign": str(out), "programs": programs, "findings": len(rows), "gpus": gpus, "walls_s": walls,
        "gpu_hours": round(gpu_hours, 4), "causes": dict(causes.most_common()),
        "ours": sum(1 for r in rows if r["ours"]),
        "distinct_bugs": len(bugs), "known_bugs": known_bugs, "new_or_unexplained": new_bugs,
        "known_findings_share": round(sum(causes[c] for c in known_bugs) / max(findings_of_bugs, 1), 4),
        "distinct_per_gpu_hour": round(len(bugs) / gpu_hours, 2) if gpu_hours else None,
        "live_in_newest_release": {c: sorted(v) for c, v in live.items()},
        "rows": rows,
    }
    run.finish(record, args.out, echo=False)
    print(f"{programs} programs, {len(rows)} findings: {record['ours']} ours; {len(bugs)} distinct bugs "
          f"({len(known_bugs)} known, {len(new_bugs)} new or unexplained), {record['distinct_per_gpu_hour']} per "
          f"GPU-hour over {gpu_hours:.3f} GPU-hours")
    for c, n in causes.most_common():
        print(f"  {n:4d}  {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
