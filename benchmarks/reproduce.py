"""Rerun a target row of benchmarks/README.md and print its figure beside the recorded one.

    python benchmarks/reproduce.py 1          # the row's committed command, into a temporary record
    python benchmarks/reproduce.py 3a 4b      # several rows, one after the other
    python benchmarks/reproduce.py 5a --sample   # the row's fixed subset (a tenth of 5a's half hour)
    python benchmarks/reproduce.py --list     # every row: its command, record and where it runs

The rerun writes to a temporary file (``--keep DIR`` keeps it), never over the committed record.
Rows measured on a GPU machine print their device command instead (exit 2).  A third line says
whether the new figure lies within the row's noise band (``rows.Band``: its width and the runs it
comes from) -- exit 3 when it does not -- and what could explain a difference: the files of the
package changed since the record's commit, and, for a time that grows with the load, the two loads.
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


def _first_load(record: dict) -> float | None:
    before = ((record.get("meta") or {}).get("load") or {}).get("before")
    return before[0] if before else None


def changed_since(record: dict) -> str:
    """The package files (fuzzptx/, strategies/, oracles/, tests/support/) that differ between the
    record's commit and this tree: where a count or a time can have moved since."""
    meta = record.get("meta") or {}
    sha = (meta.get("commit") or {}).get("sha") if isinstance(meta.get("commit"), dict) else None
    if not sha:
        return "the record names no commit"
    done = subprocess.run(["git", "diff", "--name-only", sha, "--", "fuzzptx", "strategies", "oracles", "tests/support"],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        return f"the record's commit {sha[:10]} is not in this repository"
    files = done.stdout.split()
    dirty = " (the record's tree had uncommitted changes)" if (meta.get("commit") or {}).get("dirty") else ""
    return (f"{len(files)} package files changed since the record's commit {sha[:10]}{dirty}"
            + (f": {', '.join(files[:6])}{', ...' if len(files) > 6 else ''}" if files else ""))


def verdict(row: Row, recorded: dict, now: dict, recorded_figure: str, now_figure: str) -> tuple[bool, str]:
    """Whether ``now`` reproduces ``recorded`` within the row's band, and the line that says so."""
    band = row.band
    if band.relative == 0 or row.value is None:
        ok = now_figure == recorded_figure
        text = f"band: exact ({band.why}): {'the same' if ok else 'DIFFERENT'}"
    else:
        was, new = row.value(recorded), row.value(now)
        off = (new - was) / was if was else float("inf")
        ok = abs(off) <= band.relative
        text = (f"band: ±{100 * band.relative:.0f}% of {was:g} ({band.why}): {new:g} is {100 * off:+.0f}%, "
                + ("within" if ok else "OUTSIDE"))
    loads = (_first_load(recorded), _first_load(now))
    if band.load_bound and None not in loads and max(loads) > 2 * max(min(loads), 1.0):
        text += f"; the loads differ ({loads[0]} then, {loads[1]} now): this time is comparable only at a like load"
    return ok, text


def reproduce(row: Row, keep: Path | None, sample: bool = False) -> int:
    """Rerun ``row``'s command (its fixed subset with ``sample``); print recorded and new figure and
    whether they agree within the row's band.  0 within, 3 outside, 1 failed, 2 cannot run here."""
    recorded = json.loads(row.path.read_text())
    figure = row.sample_figure if sample and row.sample_figure else row.figure
    subset = " of the fixed subset" if sample and row.sample else ""
    print(f"row {row.id}: recorded {figure(recorded)}{subset} ({_when(recorded)}, {_load(recorded)})", flush=True)
    if row.device != CPU or row.rerun is None:
        print(f"row {row.id} runs on {row.device}: {row.command}")
        return 2
    if sample and row.sample is None:
        print(f"row {row.id}: no sampled rerun; the whole command runs")
    with tempfile.TemporaryDirectory() as tmp:
        out = (keep or Path(tmp)) / f"row_{row.id}{'_sample' if subset else ''}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        command = row.sample if subset else row.rerun
        argv = [sys.executable if a == "python" else a.replace("{out}", str(out)) for a in command]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]
                                                           + [p for p in [os.environ.get("PYTHONPATH")] if p])}
        t0 = time.perf_counter()
        done = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0 or not out.exists():
            print(f"row {row.id}: the command failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
            return 1
        now = json.loads(out.read_text())
        print(f"row {row.id}: now      {row.figure(now)}{subset} ({_when(now)}, {_load(now)}; "
              f"{time.perf_counter() - t0:.0f} s)" + (f"; record kept in {out}" if keep else ""))
        ok, text = verdict(row, recorded, now, figure(recorded), row.figure(now))
        print(f"row {row.id}: {text}; {changed_since(recorded)}")
    return 0 if ok else 3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="*", help="row ids of the README's target table (1, 2a, 3a, ...)")
    ap.add_argument("--list", action="store_true", help="list the rows")
    ap.add_argument("--keep", type=Path, help="keep the new records in this directory")
    ap.add_argument("--sample", action="store_true",
                    help="rerun the row's fixed subset where it has one (5a-5c: every 10th program), compared with "
                         "that subset's figure in the full record")
    a = ap.parse_args(argv)
    if a.list or not a.rows:
        for r in ROWS:
            print(f"{r.id:>3}  [{r.device}]  {r.command}\n     record benchmarks/{r.record}"
                  + ("; --sample: a fixed subset" if r.sample else ""))
        return 0
    unknown = [r for r in a.rows if r not in BY_ID]
    if unknown:
        print(f"reproduce.py: no row {', '.join(unknown)} (rows: {', '.join(BY_ID)})", file=sys.stderr)
        return 2
    return max(reproduce(BY_ID[r], a.keep, a.sample) for r in a.rows)


if __name__ == "__main__":
    sys.exit(main())
