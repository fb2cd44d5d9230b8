"""Prove that moving a command onto the engine's executor changed none of its outputs: take what
``fuzzptx replay --json`` says of every repro in ``reports/findings/`` and ``corpus/`` and a few
``tests/data`` kernels, ``fuzzptx check``, a small ``fuzzptx shrink`` (the result file's bytes),
the release matrix and ``fuzzptx bisect`` with two cached releases, and the pytest plugin's
``check_program`` on fixed-seed programs, into one JSON file; ``--compare OLD NEW`` then lists
every difference.

    python benchmarks/executor_snapshot.py --out before.json     # in the tree before the change
    python benchmarks/executor_snapshot.py --out after.json      # in the tree after
    python benchmarks/executor_snapshot.py --compare before.json after.json

Run from the repository root.  Times are left out (the shrink's ``done:`` line and its pass table
hold seconds: only the written file and the instruction counts are kept); the CPU's GPU judges
say "skipped" the same way on both sides.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

FUZZPTX = [sys.executable, "-m", "fuzzptx.cli"]
DATA = ("tests/data/wgmma_f16_regA.ptx", "tests/data/wgmma_s8_desc_loop.ptx", "tests/data/tiny_debug.ptx",
        "tests/data/plain_loops_call.ptx", "tests/data/repros/acc_write_site_not_reached.ptx",
        "tests/data/repros/sparse_chain_special_inputs.ptx")
RELEASES = "12.9.86,13.5.37"
MATRIX_FILE = "reports/findings/ptxas_O3_crash_immediate_descriptor.ptx"
BISECT = (("reports/findings/ptxas_O3_crash_immediate_descriptor.ptx", "ptxas:crash"),
          ("reports/findings/ptxas_O3_repeated_wgmma_gmma_dropped.ptx", "sass:gmma-dropped"))
SHRINK = (("reports/findings/ptxas_O3_crash_immediate_descriptor.ptx", "ptxas:crash"),
          ("corpus/spec_mma_sp_selector_2.ptx", "checker!=ptxas|reject"),
          ("tests/data/tiny_debug.ptx", "checker!=ptxas|accept"),
          ("reports/findings/ptxas_O3_repeated_wgmma_gmma_dropped.ptx", "sass:gmma-dropped"))
CHECK = ("corpus/spec_wait_group_8.ptx", "reports/findings/ptxas_O3_inflight_acc_call_small.ptx",
         "tests/data/wgmma_f16_regA.ptx")
PLUGIN_PROGRAMS = 24


def _run(args: list[str], timeout: float = 600) -> dict:
    r = subprocess.run(FUZZPTX + args, capture_output=True, text=True, timeout=timeout)
    out: dict = {"rc": r.returncode}
    try:
        out["json"] = json.loads(r.stdout)
    except ValueError:
        out["stdout"] = r.stdout
    if r.returncode not in (0, 1):
        out["stderr"] = r.stderr[-2000:]
    return out


def replays() -> dict:
    files = sorted(glob.glob("reports/findings/*.ptx")) + sorted(glob.glob("corpus/*.ptx")) + list(DATA)
    out = {f: _run(["replay", f, "--json"]) for f in files}
    for f in files[:3] + list(DATA[:2]):
        out[f + " --judges sass,metamorphic"] = _run(["replay", f, "--json", "--judges", "sass,metamorphic"])
    out[MATRIX_FILE + " --ptxas"] = _run(["replay", MATRIX_FILE, "--json", "--ptxas", RELEASES])
    return out


def checks() -> dict:
    return {f: _run(["check", f]) for f in CHECK}


def bisects() -> dict:
    return {f"{f} {keep}": _run(["bisect", f, "--keep", keep, "--ptxas", RELEASES, "--json"]) for f, keep in BISECT}


def shrinks() -> dict:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for f, keep in SHRINK:
            dest = Path(tmp) / "out.ptx"
            r = subprocess.run(FUZZPTX + ["shrink", f, "--keep", keep, "-o", str(dest), "--budget", "300"],
                               capture_output=True, text=True, timeout=400)
            done = re.search(r"done: (\d+) -> (\d+) instructions .*?\((\d+) candidates", r.stdout)
            # the file's one line with a time in it ("shrunk from 6 to 6 instructions in 19.0 s") is masked
            text = re.sub(r"instructions in [0-9.]+ s,", "instructions in S s,", dest.read_text()) if dest.exists() else None
            out[f"{f} {keep}"] = {"rc": r.returncode, "counts": done.groups() if done else r.stdout[-800:], "file": text}
    return out


def plugin() -> dict:
    """``check_program`` (the pytest plugin's judgement) on drawn programs and on the repro files:
    pass, or the failure's signature, class and the repro file it wrote."""
    from fuzzptx.engine.generate import draw_direct
    from fuzzptx.program import Program
    from fuzzptx.pytest_plugin import FindingFailure, FuzzConfig, check_program

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for judges in (("reference", "checker", "ptxas"), ("reference", "checker", "ptxas", "sass")):
            cfg = FuzzConfig.__new__(FuzzConfig)
            cfg.judges, cfg.repro_dir, cfg.fail_on, cfg.numerics, cfg.known = judges, tmp, None, None, ()
            files = sorted(glob.glob("reports/findings/*.ptx")) + sorted(glob.glob("corpus/*.ptx")) + list(DATA)
            drawn = [(f"seed {seed}", p) for seed, p in enumerate(draw_direct(PLUGIN_PROGRAMS, 5))]
            for name, program in drawn + [(f, Program.from_file(f)) for f in files]:
                key = f"{','.join(judges)} {name}"
                try:
                    check_program(program, cfg)
                    out[key] = "pass"
                except FindingFailure as exc:
                    out[key] = {"signature": exc.signature, "class": exc.kind, "cause": exc.cause,
                                "repro": Path(exc.repro).read_text()}
    return out


def compare(old: dict, new: dict, where: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        diffs = []
        for k in sorted(old.keys() | new.keys()):
            if k not in old or k not in new:
                diffs.append(f"{where}/{k}: only {'new' if k in new else 'old'}")
            else:
                diffs += compare(old[k], new[k], f"{where}/{k}")
        return diffs
    return [] if old == new else [f"{where}: {json.dumps(old)[:300]} -> {json.dumps(new)[:300]}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--only", default="replay,check,bisect,shrink,plugin")
    ap.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"))
    a = ap.parse_args(argv)
    if a.compare:
        old, new = (json.loads(Path(p).read_text()) for p in a.compare)
        for snap in (old, new):  # (records taken before the shrink's time was masked)
            for r in snap.get("shrink", {}).values():
                if r.get("file"):
                    r["file"] = re.sub(r"instructions in [0-9.]+ s,", "instructions in S s,", r["file"])
        diffs = compare(old, new)
        count = {k: len(v) for k, v in old.items()}
        print(f"{count} entries: {len(diffs)} differences")
        for d in diffs[:40]:
            print(" ", d)
        return 1 if diffs else 0
    os.environ.setdefault("FUZZPTX_PROGRESS", "0")
    parts = {"replay": replays, "check": checks, "bisect": bisects, "shrink": shrinks, "plugin": plugin}
    snap = {name: parts[name]() for name in a.only.split(",")}
    Path(a.out).write_text(json.dumps(snap, indent=1, sort_keys=True))
    print(f"wrote {a.out}: " + ", ".join(f"{k} {len(v)}" for k, v in snap.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
