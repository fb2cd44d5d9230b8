"""Are repeated wgmmas lost by ptxas (fewer GMMAs in the SASS) or by the GPU (every GMMA in the SASS,
the result still C + AB)?  Plus any repro files given: each at -O3 and -O0 on the GPU, its GMMAs and
SASS hazards, and its outputs against the reference in spec and in hardware numerics.

Kernels: ``fuzzptx.builders.wgmma_program`` forms whose wgmma is repeated 1-3 times back to back
(``repeated_wgmma``) and, as the control, the same form over 3 K steps (3 different B tiles).
ptxas keeps identical copies of some shapes (m64n176, m64n256, m64n128) and drops them for others
(m64n32): the GPU's answer where every copy is in the SASS says whose the loss is.

    python3 benchmarks/hw_repeat_probe.py [FILES_DIR] --out $OUT/repeat_probe_h100.json   # on the GPU machine
"""
import argparse
import glob
import json
import os
from dataclasses import replace


def gmmas(lst, name):
    fn = lst.function(name)
    return [i for i in fn.instrs if i.gmma is not None] if fn else []


def main():
    from fuzzptx.builders import repeated_wgmma, wgmma_program
    from fuzzptx.judges.programs import collapsed_repeats_explain
    from fuzzptx.oracles.hardware import HardwareWorker
    from fuzzptx.oracles.ptxas import compile_batch, ptxas_version
    from fuzzptx.oracles.reference import compare, run_program
    from fuzzptx.oracles.sass import disassemble_all, disassembler, gmma_count_hazards, verify
    from fuzzptx.program import Program

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="?", help="a folder of repro .ptx files to run too")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(args.files, "*.ptx"))) if args.files else []
    items = [("file", os.path.basename(f), Program.from_file(f)) for f in files]
    forms = ["wgmma.mma_async.sync.aligned.m64n176k32.s32.s8.u8|a=reg",
             "wgmma.mma_async.sync.aligned.m64n256k32.s32.u8.u8|a=desc",
             "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16|a=desc",
             "wgmma.mma_async.sync.aligned.m64n32k32.s32.u8.u8|a=reg"]
    for f in forms:
        base = replace(wgmma_program(f, seed=11), numerics="hardware")
        short = f.split(".")[4] + "." + ".".join(f.split("|")[0].split(".")[5:]) + "|" + f.split("|")[1]
        for c in (1, 2, 3):
            items.append(("repeat", f"{short} x{c}", repeated_wgmma(base, c)))
        items.append(("repeat", f"{short} k_steps=3 (control: 3 different B)",
                      replace(wgmma_program(f, seed=11, k_steps=3), numerics="hardware")))
    tool = disassembler()
    comp = {}
    for opt in (3, 0):
        res = compile_batch([p.to_ptx() for _, _, p in items], want_cubin=True, opt_level=opt)
        lsts = disassemble_all([r.cubin for r in res if r.accepted], tool)
        it = iter(lsts)
        for (_, n, p), r in zip(items, res):
            if not r.accepted:
                comp[(n, opt)] = None
                continue
            lst = next(it)
            name = r.kernel(p.launch.kernel)
            g = gmmas(lst, name)
            rules = sorted({h.rule for h in verify(lst, name)} |
                           {c.rule for c in gmma_count_hazards(p.module, p.launch.kernel, lst, name)})
            comp[(n, opt)] = (r.cubin, name, len([x for x in g if not x.gmma.auxiliary]), rules,
                              [str(getattr(x, "text", x))[:90] for x in g][:8])
    rows = []
    with HardwareWorker(timeout=10.0) as w:
        for kind, n, p in items:
            row = {"set": kind, "kernel": n,
                   "ptx_wgmmas": sum(1 for line in p.to_ptx().splitlines() if line.strip().startswith("wgmma.mma_async"))}
            outs = {}
            for opt in (3, 0):
                c = comp[(n, opt)]
                if c is None:
                    row[f"O{opt}"] = "rejected"
                    continue
                row[f"O{opt}"] = {"sass_gmmas": c[2], "sass_rules": c[3], "gmma_lines": c[4]}
                runs = [w.run(p, cubin=c[0], kernel=c[1]) for _ in range(3)]
                row[f"O{opt}"]["faults"] = [r.fault for r in runs if r.fault]
                good = [r.outputs for r in runs if not r.fault]
                row[f"O{opt}"]["runs_identical"] = all(g == good[0] for g in good) if good else None
                if good:
                    outs[opt] = good[0]
            if 3 in outs and 0 in outs:
                row["O3_equals_O0"] = outs[3] == outs[0]
            for mode in ("spec", "hardware"):
                q = replace(p, numerics=mode)
                ref = run_program(q, mode=mode)
                for opt, o in outs.items():
                    mm = compare(q, ref, o, limit=100000)
                    byb = {}
                    for m in mm:
                        byb[m.buffer] = byb.get(m.buffer, 0) + 1
                    row[f"O{opt}"][mode] = {"mismatches": len(mm), "by_buffer": byb, "first": [str(m) for m in mm[:4]]}
                    if mm:
                        row[f"O{opt}"][mode]["collapsed_repeats_explain"] = collapsed_repeats_explain(q, o)
            print(json.dumps(row)[:3000], flush=True)
            rows.append(row)
    out = {"what": __doc__, "ptxas": str(ptxas_version()), "disassembler": str(tool), "rows": rows}
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
