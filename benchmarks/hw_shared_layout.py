"""Proof run: where shared variables land in the CTA's shared window, reference vs an H100.

Each case is a small kernel that writes the shared addresses of its ``.shared`` variables
(``mov.u32 %r, var``) to a global buffer and then touches each variable.  The same program
runs on the GPU (``HardwareWorker``) and on the reference; the record keeps both address
lists and whether they agree.  The last cases store to shared offset 0, inside the bytes
the hardware reserves below the first variable: the record says what the GPU did there,
and what the reference says (an out-of-bounds error).

    python benchmarks/hw_shared_layout.py --out tests/hw_records/shared_layout.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test-only tooling: tests/support
from support.shared_layout import CASES  # noqa: E402


def reference_side(text: str) -> tuple[list[int] | None, str | None]:
    from fuzzptx.oracles.reference import run_program
    from fuzzptx.program import Program

    try:
        res = run_program(Program.from_ptx(text))
    except Exception as exc:  # noqa: BLE001 - the reference's error is part of the record
        return None, f"{type(exc).__name__}: {exc}"
    return [int(x) for x in np.frombuffer(res.bytes("out"), np.uint32)], None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from campaign_device import device_info

    from fuzzptx.oracles.hardware import run_programs_on_gpu
    from fuzzptx.program import Program

    texts = [c.text() for c in CASES]
    results, _ = run_programs_on_gpu([(Program.from_ptx(t), None, None) for t in texts], timeout=20.0)
    rows = []
    for c, t, hw in zip(CASES, texts, results):
        ref, ref_error = reference_side(t)
        got = None if hw.fault else [int(x) for x in np.frombuffer(hw.outputs["out"], np.uint32)]
        n = len(c.names())
        read_back = got[-1] if c.touch_reserved and got else None
        rows.append({"case": c.name, "declarations": list(c.module_vars + c.kernel_vars), "dynamic_smem": c.dynamic,
                     "touches_reserved": c.touch_reserved, "hardware_fault": hw.fault,
                     "hardware_addresses": got[:n] if got else got, "reference_addresses": ref[:n] if ref else ref,
                     "reference_error": ref_error,
                     "reserved_read_back": read_back,  # thread 0 stored tid + 7 = 7 at offset 0 and loaded it
                     "addresses_agree": bool(got is not None and ref is not None and got[:n] == ref[:n]),
                     "kernel": t})
    rec = {"what": __doc__.split("\n")[0], "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "device": device_info(), "cases": rows,
           "agree": sum(r["addresses_agree"] for r in rows if not r["touches_reserved"]),
           "layout_cases": sum(not r["touches_reserved"] for r in rows)}
    Path(args.out).write_text(json.dumps(rec, indent=1) + "\n")
    for r in rows:
        print(r["case"], "hw", r["hardware_fault"] or r["hardware_addresses"], "ref", r["reference_error"] or r["reference_addresses"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
