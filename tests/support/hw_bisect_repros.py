"""Every given repro bisected over the cached ptxas releases and replayed on the GPU: which releases
miscompile it, and the outputs each build gives (a record under tests/hw_records/).

    python3 tests/support/hw_bisect_repros.py REPRO... --keep 'hardware:O3!=O0|mismatch' \\
        --ptxas 12.9.86,13.0.88,13.5.37 --out RECORD.json

Each repro runs ``fuzzptx bisect --json`` (the signature judged per release, the GPU running each
release's -O3 and -O0 builds) and ``fuzzptx replay --json`` (every judge with the pinned release);
without a GPU a hardware signature is no answer, which each command's JSON says."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from campaign_device import device_info  # noqa: E402 - the device record every hw script writes


def _run(cmd: list[str], timeout: float) -> dict:
    t = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"rc": None, "seconds": round(time.time() - t, 1), "error": f"timed out after {timeout} s"}
    out: dict = {"rc": p.returncode, "seconds": round(time.time() - t, 1)}
    try:
        out["json"] = json.loads(p.stdout)
    except json.JSONDecodeError:
        out["stdout"] = p.stdout[-2000:]
    if p.returncode not in (0, 1):
        out["stderr"] = p.stderr[-2000:]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repros", nargs="+")
    ap.add_argument("--keep", required=True)
    ap.add_argument("--ptxas", default="12.9.86,13.0.88,13.5.37")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    fz = [sys.executable, "-m", "fuzzptx.cli"]

    def one(path: str) -> dict:
        bisect = _run(fz + ["bisect", path, "--keep", args.keep, "--ptxas", args.ptxas, "--json"], args.timeout)
        replay = _run(fz + ["replay", path, "--json"], args.timeout)
        return {"repro": Path(path).name, "bisect": bisect, "replay": replay}

    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(one, args.repros))
    record = {"device": device_info(), "keep": args.keep, "releases": args.ptxas.split(","),
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "repros": rows}
    Path(args.out).write_text(json.dumps(record, indent=1))
    for r in rows:
        b = r["bisect"].get("json") or {}
        print(r["repro"], "first", b.get("first"), "last", b.get("last"), "replay", (r["replay"].get("json") or {}).get("status"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
