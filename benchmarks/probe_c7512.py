"""Probe: when does ptxas 13.0.88 report C7511/C7512 for straight-line wgmma sections?

The checker's ptxas model predicts C7512 ("insufficient register resources for the function")
from peak liveness (``oracles/checker/ptxas_pressure.py``: 236 live 32-bit registers) and C7511
only for accumulators rewritten after a scale-d 0 wgmma.  Campaign sweeps show ptxas reporting
both far below that liveness (`reports/findings/README.md`).  Each case here is one kernel of
sections run one after another, each ``[fence] [mov 0 to its accumulators] wgmma commit
wait_group 0 st.global (first accumulator)``, no two sections sharing registers; it prints what
real ptxas says and what the checker predicts, and writes them as JSON.

    python benchmarks/probe_c7512.py --grid --out benchmarks/results/probe_c7512.json

``--grid`` adds two tables ptxas fills in: k equal sections (k = 2, 3, 4, 6; f32 and f16
accumulators; N = 8..256) and every pair of f32 sections (N1 >= N2), all fenced and set first.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fuzzptx.oracles.checker import check_and_predict
from fuzzptx.oracles.ptxas import compile_batch, compile_parallel, ptxas_version
from fuzzptx.ptx.parse import parse

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test-only tooling: tests/support
from support.experiments import wgmma_sections as kernel  # noqa: E402

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


def _mark(r) -> str:
    """One character per ptxas verdict: R rejected, 2 C7512, 1 C7511, . neither."""
    return "R" if not r.accepted else "2" if "C7512" in r.codes() else "1" if "C7511" in r.codes() else "."


def grids() -> dict:
    """ptxas's verdicts on equal sections and on f32 pairs (fenced, accumulators set first)."""
    ns = list(range(8, 257, 8))
    out: dict = {"N": ns, "equal_sections": {}, "f32_pairs": {}}
    equal = [(acc, k, n) for acc in ("f32", "f16") for k in (2, 3, 4, 6) for n in ns]
    res = compile_parallel([kernel(((acc, n),) * k, True, True) for acc, k, n in equal], batch_size=32)
    for (acc, k, _n), r in zip(equal, res):
        out["equal_sections"].setdefault(f"{acc} x{k}", "")
        out["equal_sections"][f"{acc} x{k}"] += _mark(r)
    pairs = [(a, b) for a in ns for b in ns if b <= a]
    res = compile_parallel([kernel((("f32", a), ("f32", b)), True, True) for a, b in pairs], batch_size=32)
    for (a, _b), r in zip(pairs, res):
        out["f32_pairs"].setdefault(f"m64n{a}", "")
        out["f32_pairs"][f"m64n{a}"] += _mark(r)
    print("N/8:      " + "".join(f"{n // 8:>3}" for n in ns))
    for name, row in out["equal_sections"].items():
        print(f"{name:9s} " + "".join(f"{c:>3}" for c in row))
    odd = {k: v for k, v in out["f32_pairs"].items() if set(v) != {"."}}
    print("f32 pairs with a diagnostic (row: N1, column: N2 <= N1):", odd or "none")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--grid", action="store_true", help="also the equal-sections and pairs tables")
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
    record = {"ptxas": ptxas_version(), "cases": rows}
    if args.grid:
        record["grids"] = grids()
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
