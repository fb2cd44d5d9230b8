"""The H100 against the reference on the synchronisation kernels of ``support.sync_kernels`` (named
barriers with thread counts, griddepcontrol) on fresh random inputs, and on drawn tensor-copy
kernels that ``prefetch.tensormap`` their maps first; the record is ``tests/hw_records/sync_h100.json``.

    PYTHONPATH=/tmp/pkg:$PWD/tests python3 tests/support/hw_sync.py --out $OUT/sync_h100.json   # on the GPU machine
    PYTHONPATH=$PWD:tests python3 tests/support/hw_sync.py --dry-run --out /tmp/sync.json    # no GPU: the reference only
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import random

from fuzzptx.oracles.ptxas import compile_batch, ptxas_version
from fuzzptx.oracles.reference import compare, run_program
from fuzzptx.oracles.reference.values import UNDEF
from fuzzptx.strategies.direct import draw, reproducible
from fuzzptx.strategies.tensor_copies import copy_plans, render
from support.sync_kernels import KERNELS, prefetch_tensormap, program


def cases(rounds: int, drawn: int, rng: random.Random) -> list:
    out = [(name, program(name, seed=rng.randrange(1 << 30))) for name in sorted(KERNELS) for _ in range(rounds)]
    with reproducible():
        for _ in range(drawn):
            key = f"sync:{rng.randrange(1 << 30)}"
            out.append((f"prefetch_tensormap:{key}", prefetch_tensormap(render(draw(copy_plans(), key)))))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--drawn", type=int, default=12)
    ap.add_argument("--dry-run", action="store_true", help="no GPU: ptxas and the reference only")
    args = ap.parse_args(argv)
    rng = random.Random()
    todo = cases(args.rounds, args.drawn, rng)
    accepted = [r.accepted for r in compile_batch([p.to_ptx() for _, p in todo])]
    if args.dry_run:
        hw, info = [None] * len(todo), {"dry_run": True}
    else:
        from fuzzptx.oracles.hardware import run_programs_on_gpu
        hw, info = run_programs_on_gpu([(p, None, None) for _, p in todo])
    rows = []
    for (name, p), h, ok in zip(todo, hw, accepted):
        ref = run_program(p)
        undefined = sum(int((o.kind == UNDEF).sum()) for o in ref.outputs.values())
        mism = [] if h is None or h.fault else compare(p, ref, h.outputs)
        rows.append({"kernel": name, "seeds": [b.seed for b in p.buffers if b.seed is not None], "ptxas_accepted": ok,
                     "reference_error": ref.undefined, "undefined_elements": undefined, "fault": None if h is None else h.fault,
                     "mismatches": len(mism), "first": [str(x) for x in mism[:3]],
                     "ptx": p.to_ptx() if name.startswith("prefetch") else None})
    out = {"what": __doc__.splitlines()[0], "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": f"python3 tests/support/hw_sync.py --out $OUT/sync_h100.json --rounds {args.rounds} --drawn {args.drawn}"
                      + (" --dry-run" if args.dry_run else ""),
           "device": info, "ptxas": str(ptxas_version()), "python": platform.python_version(),
           "runs": len(rows), "rejected_by_ptxas": [r["kernel"] for r in rows if not r["ptxas_accepted"]],
           "faults": sum(1 for r in rows if r["fault"]),
           # the hand kernels define every output; a drawn tensor copy may leave elements the ISA
           # does not fix (compare() lets them be anything), as in tests/hw_records/tma_tensor_h100.json
           "hand_kernels_with_undefined_elements": sum(1 for r in rows if r["undefined_elements"] and r["ptx"] is None),
           "reference_errors": sum(1 for r in rows if r["reference_error"]),
           "runs_with_mismatches": sum(1 for r in rows if r["mismatches"]), "rows": rows}
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(json.dumps({k: v for k, v in out.items() if k != "rows"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
