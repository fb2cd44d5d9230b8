"""Do the default programs of a fixed-seed run reach both known ptxas 13.0.88 -O3 miscompiles?

Rebuilds the programs ``fuzzptx run --examples N --seed S`` judges (same blocks, same seeds:
``engine.generate.block_programs``), and for every wgmma program the checker finds legal
(no isa/spec error) compiles it with the pinned ptxas at -O3, disassembles the cubin and records

* ``inflight``: non-GMMA writes to a register of a GMMA in flight (``oracles.sass.inflight_writes``,
  what the current ``sass`` judge reports) -- miscompile (b);
* ``gmma_deficit``: wgmma.mma_async instructions in the PTX minus GMMA instructions in the SASS,
  beyond what a scale-d 0 restart may legally remove (``killable``: for each wgmma with an
  immediate scale-d 0, the earlier wgmmas on the same accumulator vector, whose results it may
  make dead).  A positive excess is miscompile (a): a wgmma that must run is gone.  Loops that
  ptxas unrolls only add GMMAs, so the count errs towards missing a drop, never inventing one;
* the ptxas -O3 wall time of each program, and the ``shapes:`` note (``strategies.shapes``).

The checker's isa/spec layers run on every legal wgmma program: an error there on a program the
generator labels legal is a checker false alarm, listed under ``checker_false_alarms``.

    PYTHONPATH=$PWD python3 benchmarks/shapes_find_known.py --seed 3 --examples 320 \\
        --out benchmarks/results/shapes_find_known_cpu.json
"""
from __future__ import annotations

import argparse
import json
import platform
import re
import time
from collections import Counter

from fuzzptx.engine.generate import BlockTask, block_programs
from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.ptxas import compile_ptx, ptxas_version
from fuzzptx.oracles.sass import disassembler, inflight_writes, sass
from fuzzptx.oracles.toolchains import local_nvdisasm
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Instr, Label, walk

_GMMA_OP = re.compile(r"\*/\s+(?:@!?U?P\w+\s+)?[A-Z]*GMMA\.")


def wgmma_counts(p: Program) -> tuple[int, int]:
    """(wgmma.mma_async instructions, how many of them a later scale-d 0 wgmma on the same accumulator
    vector may make dead: one with an immediate 0 that no forward branch opened after the earlier
    wgmma can skip)."""
    seen: list[tuple[str, frozenset[str]]] = []
    killable = 0
    for f in p.module.functions():
        if f.body is None:
            continue
        placed: set[str] = set()
        open_fwd: set[str] = set()  # forward branch targets not reached yet: code here may be skipped
        for s in walk(f.body):
            if isinstance(s, Label):
                placed.add(s.name)
                open_fwd.discard(s.name)
                continue
            if not isinstance(s, Instr):
                continue
            if s.opcode.startswith("bra") and s.operands and str(s.operands[-1]) not in placed:
                open_fwd.add(str(s.operands[-1]))
            if not s.opcode.startswith("wgmma.mma_async"):
                continue
            d = str(s.operands[0])
            if _scale_d(s) == "0":  # kills an earlier one unless a branch taken since may skip it
                killable += sum(1 for d0, open0 in seen if d0 == d and open_fwd <= open0)
            seen.append((d, frozenset(open_fwd)))
    return len(seen), killable


def _scale_d(ins) -> str:
    """The scale-d operand as written: the one after the descriptors (dense: d, a, b, scale-d;
    sparse: d, a, b, meta, sel, scale-d)."""
    k = 5 if ".sp." in ins.opcode else 3
    return str(ins.operands[k]) if len(ins.operands) > k else "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--examples", type=int, required=True)
    ap.add_argument("--batch", type=int, default=32, help="block size (fuzzptx run's --batch)")
    ap.add_argument("--out", help="write the record here (JSON)")
    a = ap.parse_args(argv)
    nvd = local_nvdisasm()
    tool = [str(nvd), "-c"] if nvd else disassembler()
    if tool is None:
        raise SystemExit("shapes_find_known: no nvdisasm (pip install 'fuzzptx[sass]')")
    t0 = time.time()
    rows, false_alarms = [], []
    shapes: Counter = Counter()
    ptxas_s: list[float] = []
    n_blocks = -(-a.examples // a.batch)
    for b in range(n_blocks):
        keep = min(a.batch, a.examples - b * a.batch)
        for i, p, _ in block_programs(BlockTask(b, a.seed, a.batch, (), keep=None if keep == a.batch else keep)):
            if dict(p.expect).get("checker") != "legal":
                continue
            n_ptx, killable = wgmma_counts(p)
            if not n_ptx:
                continue
            note = next((n.split(":", 1)[1].split() for n in p.notes if n.startswith("shapes:")), [])
            shapes.update(note)
            errors = [f.text() for f in check_module(p.module, layers=("isa", "spec")) if f.severity == "error"]
            if errors:
                false_alarms.append({"block": b, "program": i, "shapes": note, "errors": errors[:3]})
                continue
            t = time.time()
            r = compile_ptx(p.to_ptx(), want_cubin=True, opt_level=3)
            ptxas_s.append(time.time() - t)
            if not r.accepted or not r.cubin:
                rows.append({"block": b, "program": i, "shapes": note, "accepted": False,
                             "codes": list(r.codes)})
                continue
            lines = sass(r.cubin, tool)
            n_sass = sum(1 for ln in lines if _GMMA_OP.search(ln))
            writes = inflight_writes(lines)
            excess = (n_ptx - n_sass) - killable
            rows.append({"block": b, "program": i, "shapes": note, "accepted": True, "ptx_wgmma": n_ptx,
                         "sass_gmma": n_sass, "killable": killable, "dropped_excess": max(excess, 0),
                         "inflight": writes[:4]})
    dropped = [r for r in rows if r.get("dropped_excess")]
    inflight = [r for r in rows if r.get("inflight")]
    judged = sum(1 for r in rows if r["accepted"])
    record = {
        "command": f"PYTHONPATH=$PWD python3 benchmarks/shapes_find_known.py --seed {a.seed} --examples {a.examples}",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "device": f"CPU ({platform.machine()}, shared 2-core host), no GPU",
        "ptxas": ptxas_version(), "opt_level": 3, "disassembler": tool[0],
        "seed": a.seed, "examples": a.examples, "batch": a.batch,
        "legal_wgmma_programs": len(rows) + len(false_alarms),
        "ptxas_accepted": judged,
        "ptxas_rejected": [{k: r[k] for k in ("block", "program", "codes")} for r in rows if not r["accepted"]],
        "shape_counts": dict(sorted(shapes.items())),
        "inflight_write_programs": [{k: r[k] for k in ("block", "program", "shapes", "inflight")} for r in inflight],
        "dropped_gmma_programs": [{k: r[k] for k in ("block", "program", "shapes", "ptx_wgmma", "sass_gmma", "killable")}
                                  for r in dropped],
        "checker_false_alarms": false_alarms,
        "ptxas_seconds_per_program": {"mean": round(sum(ptxas_s) / max(len(ptxas_s), 1), 3),
                                      "max": round(max(ptxas_s, default=0.0), 3)},
        "wall_seconds": round(time.time() - t0, 1),
    }
    text = json.dumps(record, indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(json.dumps({k: record[k] for k in ("seed", "examples", "legal_wgmma_programs", "ptxas_accepted",
                                             "shape_counts", "ptxas_seconds_per_program", "wall_seconds")}))
    print(f"inflight-write programs: {len(inflight)}  dropped-GMMA programs: {len(dropped)}  "
          f"checker false alarms: {len(false_alarms)}  rejected: {len(record['ptxas_rejected'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
