"""Probe: when does ptxas 13.0.88 report C7511/C7512 for straight-line wgmma sections?

The checker's ptxas model predicts C7512 ("insufficient register resources for the function")
from peak liveness (``oracles/checker/ptxas_pressure.py``: 236 live 32-bit registers) and C7511
only for accumulators rewritten after a scale-d 0 wgmma.  Campaign sweeps show ptxas reporting
both far below that liveness (`reports/findings/README.md`).  Each case here is one kernel of
sections run one after another, each ``[fence] [mov 0 to its accumulators] wgmma commit
wait_group 0 st.global (first accumulator)``, no two sections sharing registers; it prints what
real ptxas says and what the checker predicts, and writes them as JSON.

    python benchmarks/probe_c7512.py --out benchmarks/results/probe_c7512.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fuzzptx.oracles.checker import check_and_predict
from fuzzptx.oracles.ptxas import compile_batch, ptxas_version
from fuzzptx.ptx.parse import parse

# (accumulator type, N of each m64nNk16 section), fence per section, accumulators set first
CASES = [
    ((("f32", 256), ("f32", 200)), False, False), ((("f32", 256), ("f32", 208)), False, False),
    ((("f32", 256), ("f32", 256)), False, False), ((("f32", 128),) * 4, False, False),
    ((("f32", 256), ("f32", 200)), True, True), ((("f32", 256), ("f32", 224)), True, False),
    ((("f32", 256), ("f32", 224)), True, True), ((("f32", 256), ("f32", 248)), True, True),
    ((("f32", 248), ("f32", 248)), True, True), ((("f32", 256), ("f32", 256)), True, True),
    ((("f32", 192),) * 3, True, True), ((("f32", 128),) * 4, True, True), ((("f32", 240),) * 3, True, True),
    ((("f16", 256),) * 5, True, False), ((("f16", 256),) * 5, True, True),
]


def kernel(sections, fence: bool, init: bool) -> str:
    decls = [".reg .b64 %out;", ".reg .b64 %ad, %bd;"]
    body = ["wgmma.fence.sync.aligned;"] if not fence else []
    for k, (acc, n) in enumerate(sections):
        count = n // 2 if acc == "f32" else n // 4  # f16 accumulators: two per .f16x2 register
        decls.append(f".reg .{'f32' if acc == 'f32' else 'f16x2'} %d{k}_<{count}>;")
        regs = [f"%d{k}_{i}" for i in range(count)]
        body += [f"mov.b32 {r}, 0;" for r in regs] if init else []
        body += ["wgmma.fence.sync.aligned;"] if fence else []
        body.append(f"wgmma.mma_async.sync.aligned.m64n{n}k16.{acc}.f16.f16 {{{', '.join(regs)}}}, %ad, %bd, 1, 1, 1, 0, 0;")
        body += ["wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 0;", f"st.global.b32 [%out], {regs[0]};"]
    head = [".version 8.4", ".target sm_90a", ".address_size 64", ".visible .entry k()", "{"]
    return "\n".join(head + decls + body + ["ret;", "}", ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    texts = [kernel(*c) for c in CASES]
    rows = []
    for (sections, fence, init), text, r in zip(CASES, texts, compile_batch(texts)):
        _, pred = check_and_predict(parse(text, "probe.ptx"))
        acc_regs = sum(n // 2 if a == "f32" else n // 4 for a, n in sections)
        row = {"sections": [f"{a}:m64n{n}" for a, n in sections], "fence_per_section": fence, "accumulators_set_first": init,
               "accumulator_registers": acc_regs, "ptxas": list(r.codes()) if r.accepted else ["rejected"],
               "checker": [c for c, _ in pred.pairs() if c] if pred.accepted else ["rejected"]}
        rows.append(row)
        print(f"{' + '.join(row['sections']):36s} fence={fence!s:5s} set={init!s:5s} regs={acc_regs:3d} "
              f"ptxas={row['ptxas']} checker={row['checker']}")
    if args.out:
        Path(args.out).write_text(json.dumps({"ptxas": ptxas_version(), "cases": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
