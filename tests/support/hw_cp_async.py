"""The H100 against the reference on the ``cp.async`` kernels (``support.cp_async_kernels``), each on
several fresh random inputs; the record is ``tests/hw_records/cp_async_h100.json``.

    PYTHONPATH=$PWD:tests python3 tests/support/hw_cp_async.py --out $OUT/cp_async_h100.json   # on the GPU machine
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import random

from fuzzptx.oracles.hardware import run_programs_on_gpu
from fuzzptx.oracles.ptxas import ptxas_version
from fuzzptx.oracles.reference import compare, run_program
from support.cp_async_kernels import KERNELS, program


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args(argv)
    rng = random.Random()
    cases = [(name, program(name, seed=rng.randrange(1 << 30))) for name in sorted(KERNELS) for _ in range(args.rounds)]
    hw, info = run_programs_on_gpu([(p, None, None) for _, p in cases])
    rows = []
    for (name, p), h in zip(cases, hw):
        ref = run_program(p)
        mism = [] if h.fault else compare(p, ref, h.outputs)
        rows.append({"kernel": name, "seed": p.buffers[0].seed, "expects": KERNELS[name][1], "fault": h.fault,
                     "mismatches": len(mism), "first": [str(x) for x in mism[:3]]})
    legal = [r for r in rows if r["expects"] == "values"]
    out = {"what": __doc__.splitlines()[0], "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "device": info, "ptxas": str(ptxas_version()), "python": platform.python_version(),
           "runs": len(rows), "faults": sum(1 for r in rows if r["fault"]),
           "legal_runs": len(legal), "legal_runs_with_mismatches": sum(1 for r in legal if r["mismatches"]),
           "rows": rows}
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(json.dumps({k: v for k, v in out.items() if k != "rows"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
