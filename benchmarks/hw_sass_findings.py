"""Which SASS hazards become wrong results or faults on the GPU?  (Issue 26's hardware evidence.)

The ``sass`` judge (``fuzzptx.oracles.sass``, docs/sass.md) flags pipeline hazards in the SASS
ptxas emitted, with no GPU.  A hazard is a hazard whatever the timing; this script asks what the
H100 makes of each one.  Kernels:

- ``findings``: the four ``reports/findings/ptxas_O3_*.ptx`` (three in-flight register reuses,
  one repeated-wgmma collapse);
- ``repeated``: the 49 repeated-wgmma kernels of ``benchmarks/probe_dup_wgmma.py`` (7 forms x
  7 variants, bit-exact hardware numerics), flagged or not -- the unflagged ones are the control:
  a kernel the verifier passes should run right.

Each kernel is compiled at -O3 and -O0 by the ptxas in use (``FUZZPTX_PTXAS`` or the pinned
wheel), every cubin disassembled once and checked with every rule (``verify`` and
``gmma_count_hazards``), then each cubin run ``--repeats`` times on the GPU (a 10 s watchdog) and
compared with the reference (``oracles.reference.compare``: elements outside what the reference
allows) and -O3's output bytes with -O0's.  The summary crosses the rules with what the GPU did.

    python3 benchmarks/hw_sass_findings.py --out $OUT/sass_findings_h100.json      # on the GPU machine
    python benchmarks/hw_sass_findings.py --dry-run --out /tmp/sass_findings.json   # no GPU: SASS half only
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from campaign_device import device_info  # noqa: E402  (a sibling benchmark script)
from probe_dup_wgmma import FORMS, VARIANTS  # noqa: E402

from fuzzptx.builders import repeated_wgmma, wgmma_program  # noqa: E402
from fuzzptx.oracles.ptxas import compile_batch, ptxas_version  # noqa: E402
from fuzzptx.oracles.sass import disassemble_all, disassembler, gmma_count_hazards, verify  # noqa: E402
from fuzzptx.program import Program  # noqa: E402

FINDINGS = sorted((ROOT / "reports" / "findings").glob("ptxas_O3_*.ptx"))


def kernels() -> list[tuple[str, str, Program]]:
    """(set, name, program) for every kernel judged."""
    out = [("findings", f.name, Program.from_file(str(f))) for f in FINDINGS]
    for key in FORMS:
        for copies, commit, zero in VARIANTS:
            base = replace(wgmma_program(key, seed=7, scale_d=not zero), numerics="hardware")
            form = key.split("|")[0].split(".")
            name = f"{form[4]}_{'.'.join(form[5:])}_{key.split('=')[1]}_x{copies}" \
                   f"{'_commit' if commit else ''}{'_zero_first' if zero else ''}"
            out.append(("repeated", name, repeated_wgmma(base, copies, commit, zero)))
    return out


def sass_half(items: list[tuple[str, str, Program]]) -> tuple[list[dict], list[dict[str, tuple[bytes, str] | None]]]:
    """Compile every kernel at -O3 and -O0, check every rule; the rows and each row's cubins."""
    tool = disassembler()
    if tool is None:
        raise SystemExit("hw_sass_findings: no nvdisasm (pip install nvidia-cuda-nvdisasm or set FUZZPTX_NVDISASM)")
    texts = [p.to_ptx() for _, _, p in items]
    rows = [{"set": s, "kernel": n} for s, n, _ in items]
    cubins: list[dict[str, tuple[bytes, str] | None]] = [{} for _ in items]
    for opt in (3, 0):
        t0 = time.perf_counter()
        results = compile_batch(texts, want_cubin=True, opt_level=opt)
        compile_s = time.perf_counter() - t0
        unique = list({id(r.cubin): r.cubin for r in results if r.accepted and r.cubin}.values())
        t0 = time.perf_counter()
        listings = dict(zip(map(id, unique), disassemble_all(unique, tool)))
        disasm_s = time.perf_counter() - t0
        for row, cub, (_, _, p), r in zip(rows, cubins, items, results):
            tag = f"O{opt}"
            if not (r.accepted and r.cubin):
                row[tag] = {"accepted": False, "ptxas": r.stderr.strip()[:300]}
                cub[tag] = None
                continue
            name = r.kernel(p.launch.kernel)
            lst = listings[id(r.cubin)]
            fn = lst.function(name)
            found = [(h.rule, h.line()) for h in verify(lst, name)] + \
                [(c.rule, c.line()) for c in gmma_count_hazards(p.module, p.launch.kernel, lst, name)]
            row[tag] = {"accepted": True,
                        "gmma": sum(1 for ins in fn.instrs if ins.gmma is not None and not ins.gmma.auxiliary) if fn else None,
                        "rules": sorted({rule for rule, _ in found}),
                        "hazards": [line for _, line in found][:6]}
            cub[tag] = (r.cubin, name)
        print(f"O{opt}: compiled {len(texts)} in {compile_s:.1f} s, {len(unique)} module(s) disassembled in {disasm_s:.2f} s",
              flush=True)
    return rows, cubins


def gpu_half(items, rows, cubins, repeats: int) -> None:
    """Run every cubin ``repeats`` times; compare with the reference and -O3 with -O0."""
    from fuzzptx.oracles.hardware import HardwareWorker
    from fuzzptx.oracles.reference import compare, run_program

    with HardwareWorker(timeout=10.0) as w:
        for (_, _, p), row, cub in zip(items, rows, cubins):
            t0 = time.perf_counter()
            ref = run_program(p, mode=p.numerics)
            row["reference_seconds"] = round(time.perf_counter() - t0, 2)
            first: dict[str, dict[str, bytes] | None] = {}
            for tag in ("O3", "O0"):
                if cub.get(tag) is None:
                    continue
                cubin, name = cub[tag]
                runs = []
                for _ in range(repeats):
                    hw = w.run(p, cubin=cubin, kernel=name)
                    if hw.fault:
                        runs.append(f"fault: {hw.fault}")
                        first.setdefault(tag, None)
                        continue
                    first.setdefault(tag, hw.outputs)
                    mism = compare(p, ref, hw.outputs)
                    runs.append(f"{len(mism)}{'+' if len(mism) >= 100 else ''} element(s) outside the reference; first: {mism[0]}"
                                if mism else "matches the reference")
                row[tag]["gpu"] = runs
                row[tag]["outcome"] = _outcome(runs)
            if first.get("O3") is not None and first.get("O0") is not None:
                row["O3_bytes_equal_O0"] = first["O3"] == first["O0"]
            print(row["kernel"], row["O3"].get("rules"), row["O3"].get("outcome"), "|", row["O0"].get("rules"),
                  row["O0"].get("outcome"), flush=True)


def _outcome(runs: list[str]) -> str:
    """One word for a cubin's runs: fault, wrong, right, or mixed when runs differ."""
    kinds = {"fault" if r.startswith("fault") else "right" if r == "matches the reference" else "wrong" for r in runs}
    return kinds.pop() if len(kinds) == 1 else "mixed (" + ", ".join(sorted(kinds)) + ")"


def summarise(rows: list[dict]) -> dict:
    """For each rule at each level: kernels flagged and what the GPU did with them; and the unflagged."""
    out: dict = {}
    for tag in ("O3", "O0"):
        per: dict[str, dict[str, int]] = {}
        for row in rows:
            lvl = row.get(tag, {})
            if not lvl.get("accepted"):
                continue
            for rule in lvl["rules"] or ["(no hazard)"]:
                per.setdefault(rule, {})
                outcome = lvl.get("outcome", "not run")
                per[rule][outcome] = per[rule].get(outcome, 0) + 1
        out[tag] = per
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dry-run", action="store_true", help="no GPU: compile and check the SASS only")
    a = ap.parse_args()
    t0 = time.perf_counter()
    items = kernels()
    rows, cubins = sass_half(items)
    if not a.dry_run:
        gpu_half(items, rows, cubins, a.repeats)
    tool = disassembler()
    record = {"what": __doc__.split("\n\n")[0],
              "command": "python3 benchmarks/hw_sass_findings.py " + " ".join(sys.argv[1:]),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "device": device_info(), "ptxas": ptxas_version(), "disassembler": tool[0] if tool else None,
              "repeats": 0 if a.dry_run else a.repeats, "seconds": round(time.perf_counter() - t0, 1),
              "summary": summarise(rows), "rows": rows}
    Path(a.out).write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
