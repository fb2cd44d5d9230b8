"""``fuzzptx replay`` on the GPU machine of files ptxas rejects or crashes on: no traceback.

    # on the GPU machine (the device tool's copy of the tree; the record to $OUT)
    python3 tests/support/hw_replay_rejected.py --out $OUT/replay_rejected_h100.json
    # here, no GPU: the GPU judge is faked as available (it returns before it touches a GPU,
    # since ptxas gives it no kernel), each replay runs in this process
    python tests/support/hw_replay_rejected.py --dry-run --out /tmp/replay_rejected.json

Each file is replayed as ``fuzzptx replay FILE --json`` and as ``fuzzptx replay FILE`` (on the GPU
machine: the CLI in a fresh process, as a user runs it).  A replay passes when it ends with exit
status 0, 1 or 2, prints no traceback, and (with ``--json``) gives a row for the GPU judge.  Before
the engine's run configuration (bdace3d) the --json replay of a rejected file ended in
``KeyError: 'hardware'`` (engine/replay.py:138) wherever a GPU was available.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

FILES = (
    "corpus/spec_wmma_f64_one_register.ptx",  # ptxas rejects it
    "corpus/spec_mma_m8n8k4_f16_d_f32_c.ptx",  # ptxas rejects it
    "reports/findings/ptxas_O3_crash_immediate_descriptor.ptx",  # crashes ptxas 13.0.88 at -O3
    "reports/findings/ptxas_regalloc_failure_wgmma_sweep.ptx",  # ptxas's register allocator gives up
)


def device_info() -> dict:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from campaign_device import device_info as info

    return info()


def replay_cli(path: Path, json_out: bool, timeout: float) -> tuple[int, str, str]:
    cmd = [sys.executable, "-m", "fuzzptx.cli", "replay", str(path)] + (["--json"] if json_out else [])
    try:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s"
    return r.returncode, r.stdout, r.stderr


def replay_here(path: Path, json_out: bool) -> tuple[int, str, str]:
    """The CLI in this process (``--dry-run``: the GPU judge faked as available)."""
    import traceback

    from fuzzptx import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main(["replay", str(path)] + (["--json"] if json_out else []))
        except BaseException:  # noqa: BLE001 - what a user would see as a traceback
            traceback.print_exc()
            rc = 99
    return rc, out.getvalue(), err.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the JSON record")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: fake the GPU judge's availability")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per replay")
    a = ap.parse_args(argv)
    if a.dry_run:
        from fuzzptx.judges import registry

        type(registry.get("hardware")).available = lambda self: None
    t0 = time.time()
    cases = []
    for rel in FILES:
        path = ROOT / rel
        for json_out in (True, False):
            rc, out, err = replay_here(path, json_out) if a.dry_run else replay_cli(path, json_out, a.timeout)
            case = {"file": rel, "json": json_out, "rc": rc, "traceback": "Traceback" in err or "Traceback" in out,
                    "stderr_tail": err[-600:]}
            if json_out and rc in (0, 1):
                rows = {r["judge"]: r for r in json.loads(out)["judges"]}
                case["hardware_row"] = rows.get("hardware")
                case["ptxas_row"] = rows.get("ptxas")
            case["ok"] = rc in (0, 1, 2) and not case["traceback"] and (not json_out or rc == 2 or
                                                                          case.get("hardware_row") is not None)
            cases.append(case)
            print(f"{'ok ' if case['ok'] else 'BAD'} rc={rc} {'--json ' if json_out else ''}{rel}", file=sys.stderr)
    record = {"what": "fuzzptx replay of files ptxas rejects or crashes on, with the GPU judge available",
              "dry_run": a.dry_run, "device": device_info(), "seconds": round(time.time() - t0, 1),
              "replays": len(cases), "bad": sum(not c["ok"] for c in cases), "cases": cases}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(record, indent=1) + "\n")
    print(f"{len(cases)} replays, {record['bad']} bad -> {a.out}", file=sys.stderr)
    return 1 if record["bad"] else 0


if __name__ == "__main__":
    sys.exit(main())
