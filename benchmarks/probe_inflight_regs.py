"""Probe: does ptxas 13.0.88 -O3 hand out the registers of a wgmma still in flight?

A campaign kernel (seed 26, block 780, program 9) faulted on the H100 with an illegal
instruction at -O3 and ran at -O0.  Its SASS shows why: after a QGMMA issued with ``gsb0``
(committed, not yet waited for) ptxas reuses that GMMA's accumulator registers -- whose old
values a later scale-d 0 wgmma on the same accumulators never reads -- for a loop counter and
for a call's return address; the GMMA then writes its result over them asynchronously and the
``RET`` jumps to a float.

For each PTX file this compiles at -O3 and -O0 with the project's ptxas, disassembles the cubin
and lists every non-GMMA instruction that writes a register of a GMMA in flight
(``fuzzptx.oracles.sass``'s ``inflight-write`` rule, on every path of the kernel and its calls).  With ``--run`` (a GPU and CuPy) it also runs
each file three times per level through the hardware judge and records what the GPU did.

    python benchmarks/probe_inflight_regs.py reports/findings/ptxas_O3_inflight_*.ptx
    python3 benchmarks/probe_inflight_regs.py FILES --run --out $OUT/probe_inflight_regs.json   # on the device
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--run", action="store_true", help="run each file 3 times per level on the GPU")
    ap.add_argument("--out", help="write the record here")
    a = ap.parse_args(argv)
    from fuzzptx.oracles.ptxas import compile_ptx, ptxas_version
    from fuzzptx.program import Program
    from fuzzptx.oracles.sass import disassembler, hazards

    tool = disassembler()
    if tool is None:
        raise SystemExit("probe_inflight_regs: no nvdisasm (pip install nvidia-cuda-nvdisasm)")
    worker = None
    if a.run:
        from fuzzptx.oracles.hardware import HardwareWorker

        worker = HardwareWorker()
    rows = []
    for path in a.files:
        p = Program.from_file(path)
        text = p.to_ptx()
        row: dict = {"file": Path(path).name}
        for opt in (3, 0):
            r = compile_ptx(text, want_cubin=True, opt_level=opt)
            level: dict = {"accepted": r.accepted, "inflight_writes": [h.line() for h in hazards(r.cubin, r.kernel(p.launch.kernel), tool)
                                                            if h.rule == "inflight-write"] if r.cubin else []}
            if worker is not None and r.cubin:
                level["gpu_runs"] = [worker.run(p, cubin=r.cubin, kernel=r.kernel(p.launch.kernel), timeout=20).fault or "ran"
                                     for _ in range(3)]
            row[f"O{opt}"] = level
        rows.append(row)
        print(json.dumps(row), flush=True)
    if worker is not None:
        worker.close()
    if a.out:
        device = None
        if a.run:
            try:
                device = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                        capture_output=True, text=True).stdout.strip()
            except OSError:
                pass
        Path(a.out).write_text(json.dumps({"ptxas": ptxas_version(), "disassembler": Path(tool[0]).name, "device": device,
                                           "files": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
