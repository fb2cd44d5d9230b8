"""Does ptxas keep every copy of a repeated wgmma.mma_async?  (An H100 campaign finding.)

A 130 s hardware-numerics campaign on the H100 (seed 2) found an s32 wgmma result at 3/4 of
what the reference computes: the program issued one ``m64n32k32.s32.u8.u8`` wgmma four times on
one accumulator (same A registers, same B descriptor: three in one stage, the first with a
scale-d predicate, then one after a wait; D += A*B each time, an order the PTX ISA guarantees
for chained wgmmas of one shape), and the -O3 SASS held three IGMMAs where -O0 held four
(``reports/findings/ptxas_O3_repeated_wgmma_campaign.ptx``).  This probe asks the question over forms:
a kernel from ``fuzzptx.builders.wgmma_program`` (accumulators loaded from ``c``), its one
wgmma repeated ``n`` times back to back (``n`` = 1..4), or twice with a commit between; each
compiled at -O3 and -O0 with ptxas, the GMMA instructions in each cubin counted with
cuobjdump, both cubins run on the GPU and compared with the reference (bit-exact hardware
numerics, so only a lost or added product can differ by much).

    python3 benchmarks/probe_dup_wgmma.py --out $OUT/probe_dup_wgmma.json --files $OUT/dup   # on the GPU machine
    python benchmarks/probe_dup_wgmma.py --out /tmp/p.json --dry-run                         # no GPU: build and compile
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

FORMS = (
    "wgmma.mma_async.sync.aligned.m64n32k32.s32.u8.u8|a=reg",
    "wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8|a=desc",
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16|a=desc",
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16|a=reg",
    "wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16|a=desc",
    "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32|a=reg",
    "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3|a=desc",
)
# (copies, commit between, first zeroes: the first wgmma has scale-d 0 and the copies scale-d 1,
# as in the campaign's program)
VARIANTS = ((1, False, False), (2, False, False), (3, False, False), (4, False, False), (2, True, False),
            (2, False, True), (3, False, True))


def gmma_counts(cubin: bytes) -> dict[str, int] | None:
    """GMMA instructions in the SASS of each kernel of a cubin (None without cuobjdump)."""
    tool = shutil.which("cuobjdump") or ("/usr/local/cuda/bin/cuobjdump" if Path("/usr/local/cuda/bin/cuobjdump").exists() else None)
    if tool is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        sass = subprocess.run([tool, "-sass", fh.name], capture_output=True, text=True, timeout=60).stdout
    out: dict[str, int] = {}
    name = None
    for line in sass.splitlines():
        if "Function : " in line:
            name = line.split("Function : ")[1].strip()
            out[name] = 0
        elif name is not None and "GMMA." in line:
            out[name] += 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--files", help="write each variant's repro file here")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: build, compile and count only")
    args = ap.parse_args()

    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from campaign_device import device_info

    from fuzzptx.builders import repeated_wgmma, wgmma_program
    from fuzzptx.oracles.ptxas import compile_batch
    from fuzzptx.oracles.reference import compare, run_program

    progs, rows = [], []
    for key in FORMS:
        for copies, commit, zero in VARIANTS:
            base = replace(wgmma_program(key, seed=7, scale_d=not zero), numerics="hardware")
            p = repeated_wgmma(base, copies, commit, zero)
            name = f"{key.split('.')[4]}_{'.'.join(key.split('|')[0].split('.')[5:])}_{key.split('=')[1]}_x{copies}" \
                   f"{'_commit' if commit else ''}{'_zero_first' if zero else ''}"
            progs.append(p)
            rows.append({"form": key, "copies": copies, "commit_between": commit, "first_scale_d_0": zero,
                         "file": f"{name}.ptx"})
    texts = [p.to_ptx() for p in progs]
    o3 = compile_batch(texts, want_cubin=True)
    o0 = compile_batch(texts, want_cubin=True, opt_level=0)
    counts: dict = {}  # one cubin per ptxas batch: count it once
    for p, row, r3, r0 in zip(progs, rows, o3, o0):
        row["accepted_O3"], row["accepted_O0"] = r3.accepted, r0.accepted
        row["diagnostics_O3"] = [str(d) for d in r3.diagnostics][:4]
        for tag, r in (("O3", r3), ("O0", r0)):
            if r.cubin and id(r.cubin) not in counts:
                counts[id(r.cubin)] = gmma_counts(r.cubin)
            per = counts.get(id(r.cubin)) if r.cubin else None
            row[f"gmma_{tag}"] = None if per is None else per.get(r.kernel(p.launch.kernel))
        row["wgmma_in_ptx"] = row["copies"]
    if args.files:
        Path(args.files).mkdir(parents=True, exist_ok=True)
        for row, text in zip(rows, texts):
            (Path(args.files) / row["file"]).write_text(text)
    if not args.dry_run:
        from fuzzptx.oracles.hardware import run_programs_on_gpu

        items = []
        for p, r3, r0 in zip(progs, o3, o0):
            items += [(p, r3.cubin, r3.kernel(p.launch.kernel)), (p, r0.cubin, r0.kernel(p.launch.kernel))]
        results, dev = run_programs_on_gpu(items)
        for k, (row, p) in enumerate(zip(rows, progs)):
            ref = run_program(p, mode="hardware")
            for tag, hw in (("O3", results[2 * k]), ("O0", results[2 * k + 1])):
                mism = compare(p, ref, hw.outputs) if hw.ok else None
                row[f"gpu_{tag}"] = hw.fault or ("matches the reference" if not mism else f"{len(mism)}+ elements differ; first: {mism[0]}")
    record = {"what": __doc__.split("\n\n")[0], "device": device_info(), "variants": rows,
              "summary": {"variants": len(rows),
                          "O3_fewer_gmma_than_O0": sum(1 for r in rows if r.get("gmma_O3") is not None and r.get("gmma_O0") is not None
                                                       and r["gmma_O3"] < r["gmma_O0"]),
                          "O3_differs_from_reference": sum(1 for r in rows if "differ" in str(r.get("gpu_O3", ""))),
                          "O0_differs_from_reference": sum(1 for r in rows if "differ" in str(r.get("gpu_O0", "")))}}
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["summary"]))
    for r in rows:
        print(r["file"], r.get("gmma_O3"), r.get("gmma_O0"), r.get("gpu_O3", "-")[:60], "|", r.get("gpu_O0", "-")[:60])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
