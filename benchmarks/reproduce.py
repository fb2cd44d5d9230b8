"""Rerun a target row of benchmarks/README.md and print its figure beside the recorded one.

    python benchmarks/reproduce.py 1          # the row's committed command, into a temporary record
    python benchmarks/reproduce.py 3a 4b      # several rows, one after the other
    python benchmarks/reproduce.py --list     # every row: its command, record and where it runs

The rerun writes to a temporary file (``--keep DIR`` keeps it), never over the committed record.
Rows measured on a GPU machine print their device command instead (exit 2).  A CPU figure on a
shared machine moves with the load: both loads are printed beside the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rows import BY_ID, CPU, ROWS, Row  # benchmarks/rows.py, beside this script

ROOT = Path(__file__).resolve().parent.parent


def _load(record: dict) -> str:
    meta = record.get("meta") or {}
    load = meta.get("load") or {}
    first = [(load.get(k) or ["?"])[0] for k in ("before", "after")]
    return f"load {first[0]} -> {first[1]}" if load else "load not recorded"


def _when(record: dict) -> str:
    meta = record.get("meta") or {}
    sha = (meta.get("commit") or {}).get("sha") if isinstance(meta.get("commit"), dict) else meta.get("commit")
    return f"{meta.get('date') or record.get('date') or 'undated'}, commit {str(sha)[:10] if sha else 'unrecorded'}"


def reproduce(row: Row, keep: Path | None) -> int:
    """Rerun ``row``'s command; print recorded and new figure.  0 when it ran, 2 when it cannot here."""
    recorded = json.loads(row.path.read_text())
    print(f"row {row.id}: recorded {row.figure(recorded)} ({_when(recorded)}, {_load(recorded)})", flush=True)
    if row.device != CPU or row.rerun is None:
        print(f"row {row.id} runs on {row.device}: {row.command}")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        out = (keep or Path(tmp)) / f"row_{row.id}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable if a == "python" else a.replace("{out}", str(out)) for a in row.rerun]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]
                                                           + [p for p in [os.environ.get("PYTHONPATH")] if p])}
        t0 = time.perf_counter()
        done = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0 or not out.exists():
            print(f"row {row.id}: the command failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
            return 1
        now = json.loads(out.read_text())
        print(f"row {row.id}: now      {row.figure(now)} ({_when(now)}, {_load(now)}; "
              f"{time.perf_counter() - t0:.0f} s)" + (f"; record kept in {out}" if keep else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="*", help="row ids of the README's target table (1, 2a, 3a, ...)")
    ap.add_argument("--list", action="store_true", help="list the rows")
    ap.add_argument("--keep", type=Path, help="keep the new records in this directory")
    a = ap.parse_args(argv)
    if a.list or not a.rows:
        for r in ROWS:
            print(f"{r.id:>3}  [{r.device}]  {r.command}\n     record benchmarks/{r.record}")
        return 0
    unknown = [r for r in a.rows if r not in BY_ID]
    if unknown:
        print(f"reproduce.py: no row {', '.join(unknown)} (rows: {', '.join(BY_ID)})", file=sys.stderr)
        return 2
    return max(reproduce(BY_ID[r], a.keep) for r in a.rows)


if __name__ == "__main__":
    sys.exit(main())
