"""How fast the ptxas judge is: one ptxas process per kernel vs merged batches vs
batches on a thread pool of all CPUs.

Kernels: N small programs (one to three wgmma of a catalogue form with N <= 32, dense,
accepted by ptxas), each a whole module named ``k`` so merging must rename.
Writes benchmarks/results/ptxas_batch.json and prints a table.

    python benchmarks/bench_ptxas_batch.py [--n 256] [--seed 0] [--repeat 3]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import random
import time

from fuzzptx import isa
from fuzzptx.oracles import ptxas

OUT = pathlib.Path(__file__).parent / "results" / "ptxas_batch.json"


def _operand(spec: isa.OperandSpec, prefix: str, decls: list[str], inits: list[str]) -> str:
    if spec.kind in ("imm", "pred_or_imm"):
        return str(spec.values[-1])
    ty = ".b32" if ".b32" in spec.reg_types else spec.reg_types[0]
    names = [f"{prefix}{i}" for i in range(spec.count)]
    decls.append(f".reg {ty} {', '.join(names)};")
    bits = 64 if ty.endswith("64") else 32
    inits += [f"mov.b{bits} {n}, {'0x0000001000080000' if bits == 64 else 0};" for n in names]
    return "{" + ", ".join(names) + "}" if spec.kind == "vec" else names[0]


def small_kernel(form: isa.Form, count: int) -> str:
    """One module: ``count`` wgmma of ``form`` in one stage, accumulators stored."""
    decls: list[str] = []
    inits: list[str] = []
    ops = [_operand(s, s.role.replace("_", ""), decls, inits) for s in form.operands]
    d = form.operand("d")
    dregs = ops[0].strip("{}").split(", ")
    stores = [f"st.global.b32 [base+{4 * i}], {r};" for i, r in enumerate(dregs)]
    wg = f"{form.opcode} {', '.join(ops)};"
    assert d.io == "inout"
    body = "\n  ".join(decls + [".reg .b64 base;", "ld.param.u64 base, [pD];"] + inits
                       + ["wgmma.fence.sync.aligned;"] + [wg] * count
                       + ["wgmma.commit_group.sync.aligned;", "wgmma.wait_group.sync.aligned 0;"]
                       + stores + ["ret;"])
    return (".version 8.5\n.target sm_90a\n.address_size 64\n"
            f".visible .entry k(.param .u64 pD)\n{{\n  {body}\n}}\n")


def kernels(n: int, seed: int) -> list[str]:
    forms = [f for f in isa.forms("wgmma") if f.ptxas_accepts and f.shape.n <= 32
             and not f.satfinite and f.a_source in ("reg", "desc")]
    rng = random.Random(seed)
    return [small_kernel(rng.choice(forms), rng.randint(1, 3)) for _ in range(n)]


REPEAT = 3


def timed(fn) -> tuple[float, list]:
    """Best of REPEAT runs: the machine is shared, the minimum is the least disturbed."""
    best, out = float("inf"), []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs per mode")
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    args = ap.parse_args()
    global REPEAT
    REPEAT = args.repeat
    ptxs = kernels(args.n, args.seed)
    cpus = os.cpu_count() or 1
    load_before = os.getloadavg()[0]
    rows: dict[str, float] = {}
    single_s, ref = timed(lambda: [ptxas.compile_ptx(p, want_cubin=False) for p in ptxs])
    assert all(r.accepted for r in ref), [r.stderr for r in ref if not r.accepted][:1]
    rows["one process per kernel"] = single_s
    sub = ptxs[: max(1, args.n // 4)]  # costs of options, on a quarter of the kernels
    scale = len(ptxs) / len(sub)
    rows["one per kernel, cubin written"] = timed(lambda: [ptxas.compile_ptx(p) for p in sub])[0] * scale
    rows["one per kernel, -v"] = timed(
        lambda: [ptxas.compile_ptx(p, want_cubin=False, extra_args=("-v",)) for p in sub])[0] * scale
    rows[f"one per kernel, pool of {cpus}"] = timed(
        lambda: ptxas.compile_parallel(ptxs, batch_size=1, want_cubin=False))[0]
    for b in (16, 32, 64, 128):
        s, got = timed(lambda: [r for i in range(0, len(ptxs), b)
                                for r in ptxas.compile_batch(ptxs[i:i + b])])
        assert [g.verdict() for g in got] == [r.verdict() for r in ref]
        rows[f"batched {b}/module"] = s
    for b in (32, 64):
        s, got = timed(lambda: ptxas.compile_parallel(ptxs, batch_size=b))
        assert [g.verdict() for g in got] == [r.verdict() for r in ref]
        rows[f"batched {b}/module, pool of {cpus}"] = s
    ms = {k: v / len(ptxs) * 1e3 for k, v in rows.items()}
    result = {
        "date": datetime.date.today().isoformat(),
        "ptxas_version": ptxas.ptxas_version(),
        "cpu_count": cpus,
        "kernels": len(ptxs),
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "repeat": REPEAT,
        "ms_per_kernel": {k: round(v, 3) for k, v in ms.items()},
        "speedup_vs_one_process": {k: round(single_s / v, 2) for k, v in rows.items()},
        "command": f"python benchmarks/bench_ptxas_batch.py --n {args.n} --seed {args.seed} --repeat {REPEAT}",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"ptxas {result['ptxas_version']}, {cpus} CPUs, {len(ptxs)} kernels, "
          f"load {result['load_average_1min']} (before, after)")
    print(f"{'mode':40s} {'ms/kernel':>10s} {'speedup':>8s}")
    for k, v in ms.items():
        print(f"{k:40s} {v:10.2f} {result['speedup_vs_one_process'][k]:8.2f}")


if __name__ == "__main__":
    main()
