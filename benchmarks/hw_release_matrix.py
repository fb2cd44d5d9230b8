"""The findings of ``reports/findings/`` against every ptxas release, on the CPU and on the GPU.

Two steps, because the GPU machine has no internet and no other ptxas:

    # here (CPU): every release compiles every finding at -O3 and -O0; the cubins, what each
    # release said, and the SASS facts (GMMA count, writes to registers of a GMMA in flight)
    python benchmarks/hw_release_matrix.py build --ptxas 12.4.131,12.8.93,12.9.86,13.0.88,13.2.86,13.5.37 \
        --out .toolchains/cubins
    # on the GPU machine: each cubin the driver loads runs (3 times) against the reference
    python benchmarks/hw_release_matrix.py run --cubins .toolchains/cubins --out tests/hw_records/release_matrix_h100.json

``build`` writes ``manifest.json`` beside the cubins (the CPU half of the record); ``run`` adds the
device, driver, and per release and level: loaded or refused, faults, elements outside the
reference's bounds.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FINDINGS = sorted((ROOT / "reports" / "findings").glob("ptxas_O3_*.ptx"))


def build(spec: str, out: Path) -> dict:
    from fuzzptx.judges.builtin import ReleasePtxasJudge
    from fuzzptx.oracles import toolchains
    from fuzzptx.oracles.ptxas import compile_ptx
    from fuzzptx.oracles.sass import disassemble, disassembler, verify
    from fuzzptx.program import Program

    out.mkdir(parents=True, exist_ok=True)
    nvdisasm = toolchains.local_nvdisasm()
    tool = [str(nvdisasm), "-c"] if nvdisasm else disassembler()
    rows = []
    for tc in toolchains.resolve(spec):
        for f in FINDINGS:
            program = Program.from_file(str(f))
            text = f.read_text()
            why = ReleasePtxasJudge(tc).not_applicable(program)
            for opt in (3, 0):
                row = {"finding": f.name, "release": tc.release, "opt": opt}
                if why is not None:
                    rows.append({**row, "not_applicable": why})
                    continue
                r = compile_ptx(text, want_cubin=True, opt_level=opt, ptxas=tc.ptxas)
                row["accepted"] = r.accepted
                row["ptxas"] = " ".join(r.codes()) or ("accepted" if r.accepted else r.stderr.strip()[:200])
                if r.accepted and r.cubin:
                    name = f"{f.stem}.{tc.release}.O{opt}.cubin"
                    (out / name).write_bytes(r.cubin)
                    row["cubin"], row["kernel"] = name, r.kernel(program.launch.kernel)
                    if tool:
                        listing = disassemble(r.cubin, tool)
                        fn = listing.function(row["kernel"])
                        row["gmma"] = sum(1 for ins in fn.instrs if ins.gmma is not None) if fn else 0
                        row["sass_inflight_writes"] = [h.line() for h in verify(listing, row["kernel"])
                                                       if h.rule == "inflight-write"][:4]
                rows.append(row)
    manifest = {"what": "reports/findings against ptxas releases (CPU half)", "spec": spec,
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "host": platform.node(), "disassembler": tool[0] if tool else None,
                "findings": [f.name for f in FINDINGS], "rows": rows}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def run(cubins: Path, out: Path, repeats: int) -> dict:
    from fuzzptx.oracles.hardware import HardwareWorker
    from fuzzptx.oracles.reference import compare, run_program
    from fuzzptx.program import Program

    manifest = json.loads((cubins / "manifest.json").read_text())
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    refs: dict[str, object] = {}
    rows = []
    with HardwareWorker(timeout=10.0) as w:
        for row in manifest["rows"]:
            row = dict(row)
            if "cubin" in row:
                f = ROOT / "reports" / "findings" / row["finding"]
                program = Program.from_file(str(f))
                if row["finding"] not in refs:
                    refs[row["finding"]] = run_program(program)
                ref = refs[row["finding"]]
                runs = []
                for _ in range(repeats):
                    try:
                        hw = w.run(program, cubin=(cubins / row["cubin"]).read_bytes(), kernel=row["kernel"])
                    except Exception as exc:  # noqa: BLE001 - a cubin the driver refuses is a row, not the end
                        runs.append({"error": f"{type(exc).__name__}: {exc}"[:300]})
                        continue
                    if hw.fault:
                        runs.append({"fault": hw.fault})
                    else:
                        mism = compare(program, ref, hw.outputs)
                        runs.append({"outside_reference": len(mism), "first": str(mism[0]) if mism else None})
                row["gpu"] = runs
            rows.append(row)
    record = {**manifest, "what": "reports/findings against ptxas releases: CPU build and H100 runs",
              "device": smi, "python": sys.version.split()[0], "repeats": repeats, "rows": rows,
              "run_date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    out.write_text(json.dumps(record, indent=1) + "\n")
    return record


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    b = sub.add_parser("build")
    b.add_argument("--ptxas", default="12.4.131,12.8.93,12.9.86,13.0.88,13.2.86,13.5.37")
    b.add_argument("--out", default="fuzzptx-out/release-cubins")
    r = sub.add_parser("run")
    r.add_argument("--cubins", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    if a.mode == "build":
        m = build(a.ptxas, Path(a.out))
        for row in m["rows"]:
            print(row["finding"], row["release"], f"O{row['opt']}",
                  row.get("not_applicable") or row.get("ptxas"), "gmma", row.get("gmma"),
                  "inflight", len(row.get("sass_inflight_writes") or []))
    else:
        rec = run(Path(a.cubins), Path(a.out), a.repeats)
        for row in rec["rows"]:
            print(row["finding"], row["release"], f"O{row['opt']}", row.get("gpu"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
