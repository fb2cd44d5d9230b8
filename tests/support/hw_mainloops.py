"""Reference vs an H100 on the wgmma-consumer mainloops (issue 27, strategies/mainloops.py).

Every axis value of ``WgmmaLoopPlan`` runs at least once in a fixed shape list (A by descriptor,
in registers through ld.shared or ldmatrix; one or two consumer warpgroups; a producer warpgroup
or warp 0's elected lane; setmaxnreg; wait_group depth 0 and 1; persistent tiles; st.global and
stmatrix epilogues; f32, f16 and s32 accumulators; swizzles), then ``--drawn`` plans drawn with
seeds from the clock, and the illegal twins (early_read, missing_expect_tx, producer_overwrite;
wrong_parity last, with a short timeout: on hardware it may hang, see ``MAY_HANG``).  Inputs are
fresh random data (seeds from the clock, recorded), small integers and uniform random values.
Outputs go through ``compare`` (the reference's allowed values: a twin's undefined elements are
free).  A twin must run without a fault (wrong_parity: a fault is its expected hang, counted
apart).

    PYTHONPATH=/tmp/pkg python tests/support/hw_mainloops.py --out $OUT/mainloops_h100.json [--dry-run]
    PYTHONPATH=$PWD python tests/support/hw_mainloops.py --explain tests/hw_records/mainloops_h100.json

``--fills`` runs the other fills instead (``WgmmaLoopPlan.fill``: cp.async, TMA tensor boxes,
ld.global + st.shared): ``FILL_SHAPES`` (each fill with A by descriptor and in registers, every
cp.async option), ``FILL_TWINS`` (unfenced_fill, producer_overwrite and missing_expect_tx with
the new fills, each beside its legal sibling), and ``--drawn`` plans of each fill:

    PYTHONPATH=/tmp/pkg python tests/support/hw_mainloops.py --fills --out $OUT/mainloops_fills_h100.json

``--explain`` checks a record's mismatches against the reference in hardware numerics (the
H100's own fp8 accumulator, a known spec deviation) and writes the result into the record.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import re
import sys
import time
from dataclasses import replace

import numpy as np

from fuzzptx.oracles.hardware import run_programs_on_gpu
from fuzzptx.oracles.ptxas import compile_batch, ptxas_version
from fuzzptx.oracles.reference import compare, run_program
from fuzzptx.strategies.descriptors import SmemTile, canonical_layout
from fuzzptx.strategies.direct import draw, reproducible
from fuzzptx.strategies.mainloops import MAY_HANG, WgmmaLoopPlan, render_wgmma, wgmma_loop_plans, with_fill

F16_DESC = "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16|a=desc"
F16_REG = "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16|a=reg"
F16F16_REG = "wgmma.mma_async.sync.aligned.m64n{n}k16.f16.f16.f16|a=reg"
BF16_DESC = "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16|a=desc"
S8_DESC = "wgmma.mma_async.sync.aligned.m64n{n}k32.s32.s8.s8|a=desc"
E4M3_REG = "wgmma.mma_async.sync.aligned.m64n{n}k32.f32.e4m3.e4m3|a=reg"


def _tile(elem: str, mn: int, k: int, major: str = "K", swizzle: str = "none") -> SmemTile:
    return SmemTile(elem, mn, k, canonical_layout(elem, mn, k, major, swizzle))


def plan(form: str, n: int, a_load: str, **kw) -> WgmmaLoopPlan:
    key = form.format(n=n)
    elem = key.split(".")[-1].split("|")[0]
    k = int(key.split(".m64n")[1].split("k")[1].split(".")[0])
    b = kw.pop("b_tile", None) or _tile(elem, n, k, kw.pop("b_major", "K"), kw.pop("b_swizzle", "none"))
    a = kw.pop("a_tile", None)
    if a_load == "desc" and a is None:
        a = _tile(elem, 64, k, kw.pop("a_major", "K"), kw.pop("a_swizzle", "none"))
    base = dict(consumers=1, producer_wg=False, setmaxnreg=False, depth=0, stages=2, ktiles=3, tiles=1,
                all_release=False, epilogue="st.global", seed=0)
    base.update(kw)
    return WgmmaLoopPlan(key, b, a, a_load, **base)


# name -> plan: together they take every axis value at least once
SHAPES: dict[str, WgmmaLoopPlan] = {
    "desc-1c-lane-producer-depth0": plan(F16_DESC, 16, "desc"),
    "desc-1c-depth1-3stages-5k-2tiles": plan(F16_DESC, 32, "desc", depth=1, stages=3, ktiles=5, tiles=2),
    "desc-2c-depth1-all-release-stmatrix": plan(F16_DESC, 24, "desc", consumers=2, depth=1, all_release=True,
                                                epilogue="stmatrix", tiles=2),
    "desc-32B-swizzle-k-major": plan(F16_DESC, 8, "desc", a_swizzle="32B", b_swizzle="32B", ktiles=4),
    "desc-mn-major-64B": plan(BF16_DESC, 64, "desc", a_major="MN", b_major="MN", a_swizzle="64B",
                              b_swizzle="64B", depth=1),
    "ldshared-1c-producer-wg": plan(F16_REG, 16, "ld.shared", producer_wg=True, tiles=3),
    "ldmatrix-2c-producer-wg-setmaxnreg": plan(F16_REG, 32, "ldmatrix", consumers=2, producer_wg=True,
                                               setmaxnreg=True, stages=3, ktiles=4, tiles=2),
    "ldmatrix-1c-producer-wg-setmaxnreg-stmatrix": plan(F16F16_REG, 40, "ldmatrix", producer_wg=True,
                                                        setmaxnreg=True, epilogue="stmatrix", tiles=2),
    "ldmatrix-depth1-4stages": plan(F16_REG, 8, "ldmatrix", depth=1, stages=4, ktiles=5),
    "s32-desc-2c-producer-wg-all-release": plan(S8_DESC, 32, "desc", consumers=2, producer_wg=True,
                                               all_release=True, stages=1, ktiles=3, tiles=2),
    "e4m3-ldshared-depth1-stmatrix": plan(E4M3_REG, 64, "ld.shared", depth=1, epilogue="stmatrix", tiles=2),
    "one-stage-one-k": plan(F16_DESC, 8, "desc", stages=1, ktiles=1),
}
TWINS: dict[str, WgmmaLoopPlan] = {
    "twin-early-read": replace(SHAPES["desc-1c-depth1-3stages-5k-2tiles"], fault="early_read", fault_k=2),
    "twin-early-read-producer-wg": replace(SHAPES["ldshared-1c-producer-wg"], fault="early_read", fault_k=0),
    "twin-missing-expect-tx": replace(SHAPES["desc-1c-depth1-3stages-5k-2tiles"], fault="missing_expect_tx",
                                      fault_k=4),
    "twin-producer-overwrite": replace(SHAPES["desc-1c-depth1-3stages-5k-2tiles"], fault="producer_overwrite",
                                       fault_k=1),
    "twin-producer-overwrite-ldmatrix": replace(SHAPES["ldmatrix-depth1-4stages"], fault="producer_overwrite",
                                                fault_k=0),
    "twin-wrong-parity": replace(SHAPES["desc-1c-lane-producer-depth0"], fault="wrong_parity", fault_k=1),
}


# name -> plan: each new fill with A by descriptor and in registers (ld.shared, ldmatrix), every
# cp.async chunk size, cache operator and completion, every swizzle under a tensor box
FILL_SHAPES: dict[str, WgmmaLoopPlan] = {
    "cpasync-cg16-wait_group-desc-depth1": with_fill(
        plan(F16_DESC, 32, "desc", depth=1, stages=3, ktiles=5, tiles=2), "cp.async", 16, "cg", "wait_group"),
    "cpasync-ca8-wait_all-ldmatrix-2c-producer-wg": with_fill(
        plan(F16_REG, 32, "ldmatrix", consumers=2, producer_wg=True, setmaxnreg=True, stages=3, ktiles=4, tiles=2),
        "cp.async", 8, "ca", "wait_all"),
    "cpasync-ca4-noinc-ldshared-e4m3-depth1-stmatrix": with_fill(
        plan(E4M3_REG, 64, "ld.shared", depth=1, epilogue="stmatrix", tiles=2), "cp.async", 4, "ca", "noinc"),
    "cpasync-cg16-noinc-desc-2c-producer-wg": with_fill(
        plan(F16_DESC, 24, "desc", consumers=2, producer_wg=True, all_release=True, epilogue="stmatrix", tiles=2),
        "cp.async", 16, "cg", "noinc"),
    "cpasync-ca16-wait_group-s32-swizzled": with_fill(
        plan(S8_DESC, 32, "desc", a_swizzle="64B", b_swizzle="128B", ktiles=4, tiles=2), "cp.async", 16, "ca",
        "wait_group"),
    "tensor-desc-none-1c": with_fill(plan(F16_DESC, 16, "desc", ktiles=4), "tensor"),
    "tensor-desc-32B-2c-producer-wg": with_fill(
        plan(BF16_DESC, 64, "desc", consumers=2, producer_wg=True, a_swizzle="32B", b_swizzle="32B", tiles=2), "tensor"),
    "tensor-desc-128B-64B-s32": with_fill(
        plan(S8_DESC, 32, "desc", a_swizzle="128B", b_swizzle="64B", ktiles=4, tiles=2), "tensor"),
    "tensor-ldmatrix-producer-wg-setmaxnreg-stmatrix": with_fill(
        plan(F16F16_REG, 40, "ldmatrix", producer_wg=True, setmaxnreg=True, epilogue="stmatrix", tiles=2), "tensor"),
    "tensor-desc-128B-depth1-stmatrix": with_fill(
        plan(F16_DESC, 32, "desc", depth=1, stages=3, ktiles=5, tiles=2, a_swizzle="128B", b_swizzle="64B",
             epilogue="stmatrix"), "tensor"),
    "tensor-ldmatrix-depth1": with_fill(plan(F16_REG, 32, "ldmatrix", depth=1, stages=2, ktiles=4, tiles=2), "tensor"),
    "tensor-ldshared-e4m3-2c-128B": with_fill(
        plan(E4M3_REG, 16, "ld.shared", consumers=2, b_swizzle="128B", tiles=3), "tensor"),
    "ldst16-desc-32B-depth1-4stages": with_fill(
        plan(F16_DESC, 8, "desc", depth=1, stages=4, ktiles=5, a_swizzle="32B", b_swizzle="32B"), "ld.st", 16),
    "ldst8-ldmatrix-2c-producer-wg": with_fill(
        plan(F16_REG, 16, "ldmatrix", consumers=2, producer_wg=True, tiles=2), "ld.st", 8),
    "ldst4-ldshared-depth1": with_fill(plan(F16_REG, 24, "ld.shared", depth=1, tiles=2), "ld.st", 4),
    "ldst16-desc-mn-major-64B": with_fill(
        plan(BF16_DESC, 64, "desc", a_major="MN", b_major="MN", a_swizzle="64B", b_swizzle="64B", depth=1), "ld.st", 16),
}
FILL_TWINS: dict[str, WgmmaLoopPlan] = {
    "twin-unfenced-cpasync": replace(FILL_SHAPES["cpasync-cg16-wait_group-desc-depth1"], fault="unfenced_fill"),
    "twin-unfenced-ldst-producer-wg": replace(FILL_SHAPES["ldst8-ldmatrix-2c-producer-wg"], fault="unfenced_fill"),
    "twin-producer-overwrite-cpasync": replace(FILL_SHAPES["cpasync-cg16-wait_group-desc-depth1"],
                                               fault="producer_overwrite", fault_k=1),
    "twin-producer-overwrite-tensor": replace(FILL_SHAPES["tensor-desc-128B-depth1-stmatrix"],
                                              fault="producer_overwrite", fault_k=1),
    "twin-missing-expect-tx-tensor": replace(FILL_SHAPES["tensor-desc-128B-64B-s32"], fault="missing_expect_tx",
                                             fault_k=3),
}


def _with_siblings(named: list[tuple[str, WgmmaLoopPlan]], seed: int, out: list) -> None:
    """Each plan with small integers and with random values; a twin followed by its legal sibling."""
    for name, p in named:
        for j, init in enumerate(("small_int", "random")):
            s = seed + 7 * len(out) + j
            out.append((name + "/" + init, s, render_wgmma(replace(p, seed=s, init=init))))
            if p.fault is not None and p.fault not in MAY_HANG:
                out.append((name + "/" + init + "/legal-sibling", s, render_wgmma(replace(p, seed=s, init=init,
                                                                                         fault=None, fault_k=0))))


def fill_cases(seed: int, drawn: int) -> list[tuple[str, int, object]]:
    """(name, seed, Program) of ``--fills``: the fill shapes and twins (as ``cases``), then for each
    new fill ``drawn`` plans of ``wgmma_loop_plans`` with that fill (random values)."""
    out: list = []
    _with_siblings(list(FILL_SHAPES.items()) + list(FILL_TWINS.items()), seed, out)
    with reproducible():
        for fill in ("cp.async", "tensor", "ld.st"):
            i = got = 0
            while got < drawn:
                p = draw(wgmma_loop_plans(), f"{seed}:{fill}:{i}")
                i += 1
                if p.fill == fill:
                    out.append((f"drawn-{fill}/{got}", seed + got,
                                render_wgmma(replace(p, seed=seed + 3000 + 100 * len(out), init="random"))))
                    got += 1
    return out


def cases(seed: int, drawn: int) -> list[tuple[str, int, object]]:
    """(name, seed, Program): each shape and twin with small integers and with random values
    (each fixed twin followed by its legal sibling: the same plan and data without the fault),
    then ``drawn`` plans of ``wgmma_loop_plans`` and of each twin (random values)."""
    out: list = []
    _with_siblings(list(SHAPES.items()) + list(TWINS.items()), seed, out)
    with reproducible():
        for i in range(drawn):
            p = draw(wgmma_loop_plans(), f"{seed}:{i}")
            out.append((f"drawn/{i}", seed + i, render_wgmma(replace(p, seed=seed + 1000 + i, init="random"))))
        for fault in ("early_read", "missing_expect_tx", "producer_overwrite"):
            for i in range(max(1, drawn // 10)):
                p = draw(wgmma_loop_plans(fault=fault), f"{seed}:{fault}:{i}")
                out.append((f"drawn-twin-{fault}/{i}", seed + i, render_wgmma(replace(p, seed=seed + 2000 + i))))
    return out


FP8_F32 = re.compile(r"\.f32\.e[45]m[23]\.e[45]m[23]")


def explain(record: dict) -> dict:
    """Each mismatch of a record against the reference in hardware numerics (docs/numerics.md: the
    H100's fp8 accumulator is e8m13, below the spec's single precision; reports/known_bugs.toml: h100-fp8-f32-accumulator-e8m13):
    the programs are rebuilt from the record's seed (same generator code), and every GPU value the
    record lists must equal the hardware-numerics reference bit for bit."""
    build = fill_cases if record.get("mode") == "fills" else cases
    progs = {n: p for n, _, p in build(record["seed"], record.get("drawn", 40))}
    rows = []
    for r in record["results"]:
        if not r["mismatches"]:
            continue
        p = progs[r["case"]]
        if not p.notes[0].startswith(r["plan"][:120]) and r["plan"] not in p.notes:
            raise SystemExit(f"{r['case']}: the rebuilt program is not the one run (the generator changed)")
        hw = run_program(p, mode="hardware").outputs["d"]
        vals = hw.values()
        words = vals.view(f"u{vals.dtype.itemsize}")
        same = 0
        for m in r["mismatches"]:
            i, bits = re.match(r"d\[(\d+)\]: .*\((0x[0-9a-f]+)\)$", m).groups()
            same += int(int(words[int(i)]) == int(bits, 16) and hw.kind[int(i)] == 0)
        form = r["plan"].split()[1]
        rows.append({"case": r["case"], "form": form, "fp8_f32_accumulator": bool(FP8_F32.search(form)),
                     "listed_gpu_values": len(r["mismatches"]), "equal_to_hardware_numerics": same})
    return {"how": "python tests/support/hw_mainloops.py --explain RECORD (rebuilds each mismatched program from the "
                   "record's seed; the reference in hardware numerics, docs/numerics.md)",
            "mismatched_programs": len(rows), "all_fp8_with_f32_accumulator": all(x["fp8_f32_accumulator"] for x in rows),
            "listed_gpu_values": sum(x["listed_gpu_values"] for x in rows),
            "equal_to_hardware_numerics": sum(x["equal_to_hardware_numerics"] for x in rows),
            "known_finding": "reference!=hardware|mismatch|wgmma*.f32.e[45]m[23]* numerics=spec "
                             "(reports/known_bugs.toml: the H100's e8m13 fp8 accumulator)",
            "programs": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--drawn", type=int, default=40, help="drawn plans (with --fills: of each new fill)")
    ap.add_argument("--fills", action="store_true", help="the cp.async, tensor and ld.st fills (FILL_SHAPES)")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: the reference and ptxas only")
    ap.add_argument("--explain", metavar="RECORD", help="add the explanation of RECORD's mismatches to it (no GPU)")
    args = ap.parse_args(argv)
    if args.explain:
        with open(args.explain) as fh:
            record = json.load(fh)
        record["mismatches_explained"] = ex = explain(record)
        with open(args.explain, "w") as fh:
            json.dump(record, fh, indent=1)
        print(json.dumps({k: v for k, v in ex.items() if k != "programs"}, indent=1))
        return 0 if ex["equal_to_hardware_numerics"] == ex["listed_gpu_values"] and ex["all_fp8_with_f32_accumulator"] \
            else 1
    if not args.out:
        ap.error("--out is required (or --explain RECORD)")
    seed = int(time.time())
    all_cases = (fill_cases if args.fills else cases)(seed, args.drawn)
    hang_ok = [c for c in all_cases if any(f in c[0] for f in ("wrong-parity",))]
    runs = [c for c in all_cases if c not in hang_ok]
    compiled = compile_batch([p.to_ptx() for _, _, p in all_cases])
    rejected = [{"case": n, "stderr": r.stderr[:400]} for (n, _, _), r in zip(all_cases, compiled) if not r.accepted]
    t0 = time.time()
    refs = {n: run_program(p) for n, _, p in all_cases}
    ref_seconds = time.time() - t0
    if args.dry_run:
        hw = [None] * len(runs)
        hw_hang: list = [None] * len(hang_ok)
        info: dict = {"dry_run": True}
    else:
        hw, info = run_programs_on_gpu([(p, None, None) for _, _, p in runs])
        hw_hang, info2 = run_programs_on_gpu([(p, None, None) for _, _, p in hang_ok], timeout=10.0)
        info = dict(info, may_hang_worker=info2)
    rows, mismatched, faults, hangs = [], 0, 0, 0
    for (name, s, p), h in list(zip(runs, hw)) + list(zip(hang_ok, hw_hang)):
        ref = refs[name]
        fault = None if h is None else h.fault
        mm = [] if h is None or fault else compare(p, ref, h.outputs)
        may_hang = (name, s, p) in hang_ok
        if fault and may_hang:
            hangs += 1
        elif fault:
            faults += 1
        mismatched += bool(mm)
        out = ref.outputs["d"]
        rows.append({"case": name, "seed": s, "twin": next((n for n in p.notes if n.startswith("mutation:")), None),
                     "plan": p.notes[1 if p.notes[0].startswith("mutation:") else 0], "fault": fault,
                     "reference_undefined": ref.undefined, "undefined_elements": int((out.kind == 3).sum()),
                     "elements": int(out.kind.size), "mismatches": [str(x) for x in mm[:6]]})
    # a twin's undefined behaviour seen on the GPU: output words that differ from its legal sibling's
    got = {r["case"]: h for r, h in zip(rows, list(hw) + list(hw_hang))}
    for r in rows:
        sib = got.get(r["case"] + "/legal-sibling")
        h = got.get(r["case"])
        if r["twin"] and sib is not None and h is not None and not (h.fault or sib.fault):
            a, b = np.frombuffer(h.outputs["d"], np.uint8), np.frombuffer(sib.outputs["d"], np.uint8)
            r["bytes_differing_from_legal_sibling"] = int(np.count_nonzero(a != b)) if a.size == b.size else None
    legal = [r for r in rows if r["twin"] is None]
    what = "issue 27: reference vs H100 on wgmma-consumer mainloops (strategies/mainloops.py WgmmaLoopPlan) " + \
        ("filled by cp.async, TMA tensor boxes and ld.global+st.shared (WgmmaLoopPlan.fill), " if args.fills else "") + \
        "and their illegal twins, fresh random data"
    record = {
        "what": what, "mode": "fills" if args.fills else "bulk",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "PYTHONPATH=/tmp/pkg python tests/support/hw_mainloops.py "
                   + ("--fills --out $OUT/mainloops_fills_h100.json" if args.fills else "--out $OUT/mainloops_h100.json")
                   + f" --drawn {args.drawn}",
        "device": info, "ptxas": ptxas_version(), "python": platform.python_version(), "seed": seed,
        "drawn": args.drawn,
        "shapes": sorted(FILL_SHAPES if args.fills else SHAPES), "twins": sorted(FILL_TWINS if args.fills else TWINS),
        "runs": len(rows), "legal_runs": len(legal), "twin_runs": len(rows) - len(legal),
        "legal_with_undefined_elements": sum(r["undefined_elements"] > 0 for r in legal),
        "rejected_by_ptxas": rejected, "faults": faults, "may_hang_twins_that_hung": hangs,
        "programs_with_mismatches": mismatched, "reference_seconds": round(ref_seconds, 1), "results": rows,
    }
    with open(args.out, "w") as fh:
        json.dump(record, fh, indent=1)
    print(json.dumps({k: record[k] for k in ("device", "runs", "legal_runs", "twin_runs", "faults",
                                             "may_hang_twins_that_hung", "programs_with_mismatches",
                                             "legal_with_undefined_elements", "rejected_by_ptxas")}, indent=1))
    return 0 if not (mismatched or faults or rejected or record["legal_with_undefined_elements"]) else 1


if __name__ == "__main__":
    sys.exit(main())
