"""The inferred launch of every compiler-made kernel in ``tests/data`` and how much of its tensor
cores the reference reaches with it: the table in ``docs/inputs.md``.

``python -m support.inferred_launches [--json FILE] [--only SUBSTR]`` (from ``tests/``):
each kernel is read as a user's plain file is (``fuzzptx.launch.load``: the header inferred, the
launch given beside it or searched) and run once more in the reference; the row gives the launch
(block, dynamic shared memory, the scalar value), the tensor-core instructions executed of those
the kernel has, and why a run stopped short; a launch in a cluster names its shape (the grid is
that one cluster).  ``--json`` writes the rows (with each program's
header lines) for ``support.hw_kernels``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from fuzzptx import launch
from fuzzptx.inputs import read_text

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ("triton", "cutlass", "nvcc")


def kernel_files() -> list[Path]:
    """The compiler-made kernels: 68 Triton (39, then 29 of issue 40's slice), 11 CUTLASS, 6 nvcc."""
    return [p for c in CORPORA for p in sorted((ROOT / "tests" / "data" / c).glob("*.ptx"))]


def row(path: Path) -> dict:
    t0 = time.perf_counter()
    text = read_text(path, what="PTX file")
    program = launch.load(text, str(path.relative_to(ROOT)))
    t = launch.trial(program, None)
    value = next((n.split("every integer scalar ")[1].split(",")[0] for n in program.notes
                  if "every integer scalar " in n), "")
    return {"file": str(path.relative_to(ROOT / "tests" / "data")), "kernel": program.launch.kernel,
            "block": program.launch.threads, "smem": program.launch.dynamic_smem, "scalars": value,
            "cluster": ",".join(map(str, program.launch.cluster)) if program.launch.cluster != (1, 1, 1) else "",
            "executed": t.coverage.ran, "of": t.coverage.of, "coverage": t.coverage.text(),
            "stops": t.error or "", "seconds": round(time.perf_counter() - t0, 1),
            "header": list(program.header_lines())}


def markdown(rows: list[dict]) -> str:
    lines = ["| kernel | block | cluster | dynamic smem | scalars | tensor-core instructions executed | stops at |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        stops = r["stops"].split(": ", 1)[-1][:110].replace("|", "\\|") if r["stops"] else ""
        lines.append(f"| `{r['file']}` | {r['block']} | {r.get('cluster') or '-'} | {r['smem']} | {r['scalars'] or '-'} | "
                     f"{r['executed']} of {r['of']} ({r['coverage']}) | {stops} |")
    lines.append("")
    sliced = _slice_of_issue_40()
    first = [r for r in rows if r["file"] not in sliced]
    for what, some in (("", rows), (" (the 56 before issue 40's slice)", first)):
        if some and (not what or len(some) < len(rows)):
            ran = sum(r["executed"] for r in some)
            of = sum(r["of"] for r in some)
            reached = sum(1 for r in some if r["executed"])
            lines.append(f"{reached} of {len(some)} kernels{what} execute at least one tensor-core instruction; "
                         f"{ran} of {of} tensor-core instructions executed ({100 * ran / max(of, 1):.1f}%).")
    return "\n".join(lines)


def _slice_of_issue_40() -> set[str]:
    """The Triton kernels ``tests/data/triton/MANIFEST.json`` lists with ``"slice": "issue40"``."""
    man = ROOT / "tests" / "data" / "triton" / "MANIFEST.json"
    data = json.loads(man.read_text()) if man.is_file() else {}
    return {f"triton/{k['file']}" for k in data.get("kernels", []) if k.get("slice") == "issue40"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m support.inferred_launches", description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the rows (with each header) here")
    ap.add_argument("--only", default="", help="only the files whose path contains this")
    ap.add_argument("--from-json", type=Path, help="print the table of rows an earlier --json wrote (no runs)")
    a = ap.parse_args(argv)
    if a.from_json:
        print(markdown(json.loads(a.from_json.read_text())))
        return 0
    os.chdir(ROOT)  # the files by their paths in the repository (a JSON beside each is found by it)
    rows = []
    for p in kernel_files():
        if a.only in str(p.relative_to(ROOT)):  # the path in the repository, not the checkout's
            rows.append(row(p))
            print(f"{rows[-1]['file']}: {rows[-1]['executed']} of {rows[-1]['of']} ({rows[-1]['seconds']} s)",
                  file=sys.stderr, flush=True)
    print(markdown(rows))
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
