"""Proof run (issue 4): sparse wgmma, mma.sync, mma.sp, wmma, ldmatrix/stmatrix: reference vs an H100.

Every catalogue form of these families that an sm_90a H100 runs gets at least one
single-CTA kernel with fresh random inputs: ``wgmma.mma_async.sp`` (every shape,
type, A source; B/A swizzle, major-ness, scale-d, negation, selector and metadata
ordering cycled), ``mma`` and ``mma.sp`` (every row; every defined selector;
metadata ordered and unordered; non-supplying threads hold garbage metadata),
``wmma`` (every mma form x state space x C/D layout, default and padded strides:
load a, b, c -> mma -> store d), ``ldmatrix``/``stmatrix`` ``.m8n8`` (every count,
.trans and space).  The 8-bit ldmatrix/stmatrix shapes need sm_100a: not run.

Pipeline: build (KernelBuilder) -> ptxas (compile_parallel) -> GPU (HardwareWorker)
-> the reference interpreter with ``warp_exec.install()`` on all cores -> a JSON
record.  ``--dry-run`` skips the GPU and judges the reference against itself
(build + ptxas + interpreter smoke test).

    python benchmarks/hw_warp_forms.py --out tests/hw_records/warp_forms.json
    python benchmarks/hw_warp_forms.py --dry-run --limit 60
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from fuzzptx import isa
from fuzzptx.warp_builders import (  # noqa: F401 - the proof launches these; tests read them here too
    FP8, _BUF, _D_REG, _bits, _buf, _hex_words, _load_regs, _regtype, _store_regs, _stride, _target, _version, _wmma_load_form, mma_program, move_program, wgmma_sp_program, wmma_program)

# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Case:
    family: str
    key: str
    kwargs: tuple

    def program(self, name: str = "k"):
        f = isa.by_key(self.key)
        kw = dict(self.kwargs)
        build = {"mma": mma_program, "mma.sp": mma_program, "wgmma.sp": wgmma_sp_program,
                 "ldmatrix": move_program, "stmatrix": move_program, "wmma": wmma_program}[self.family]
        return build(f, name=name, **kw)

    def describe(self) -> dict:
        return {"family": self.family, "form": self.key, **dict(self.kwargs)}


def runnable(f) -> bool:
    """Forms an sm_90a H100 runs (sm_100a shapes excluded) and ptxas accepts."""
    from fuzzptx.isa.warp import target_rank

    return f.ptxas_accepts and target_rank(f.target) <= target_rank("sm_90a")


def plan_cases(seed: int = 0) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    s = lambda: int(rng.integers(0, 1 << 20))  # noqa: E731
    for f in isa.forms("mma"):
        if runnable(f):
            for init in ("random", "small_int"):
                cases.append(Case("mma", f.key, (("seed", s()), ("init", init))))
    for f in isa.forms("mma.sp"):
        if not runnable(f):
            continue
        for sel in f.attr("sp_sel_defined"):
            cases.append(Case("mma.sp", f.key, (("seed", s()), ("sel", sel), ("ordered", True))))
        cases.append(Case("mma.sp", f.key, (("seed", s()), ("sel", f.attr("sp_sel_defined")[-1]), ("ordered", False))))
    for i, f in enumerate(isa.forms("wgmma.sp")):
        trans = f.has_operand("imm_trans_b")
        b_major = ("K", "MN")[i % 2] if trans else "K"
        b_sw = (("none", "64B", "128B") if b_major == "K" else ("none", "32B", "64B", "128B"))
        a_major = ("K", "MN")[(i // 2) % 2] if (trans and f.a_source == "desc") else "K"
        kw = dict(seed=s(), init=("random", "small_int")[(i // 3) % 2],
                  b_swizzle=b_sw[(i // 4) % len(b_sw)], b_major=b_major, a_major=a_major,
                  a_swizzle=("none", "32B", "64B", "128B")[(i // 5) % 4] if f.a_source == "desc" else "none",
                  scale_d=(True, False, "pred")[i % 3], pred_value=bool((i // 3) % 2),
                  sel=tuple(f.attr("sp_sel_defined"))[(i // 7) % len(f.attr("sp_sel_defined"))],
                  ordered=(i % 5) != 0)
        if f.has_operand("imm_scale_a"):
            kw.update(scale_a=(1, -1)[(i // 11) % 2], scale_b=(1, -1)[(i // 13) % 2])
        cases.append(Case("wgmma.sp", f.key, tuple(sorted(kw.items()))))
    for f in isa.forms("ldmatrix") + isa.forms("stmatrix"):
        if runnable(f):
            cases.append(Case(f.family, f.key, (("seed", s()),)))
    i = 0
    for f in isa.forms("wmma.mma"):
        if not runnable(f):
            continue
        for space in ("", "global", "shared", "shared::cta"):
            i += 1
            cases.append(Case("wmma", f.key, (("c_layout", ("row", "col")[i % 2]), ("d_layout", ("row", "col")[(i // 2) % 2]),
                                               ("padded", bool((i // 4) % 2)), ("seed", s()), ("space", space))))
    for op in ALIGN_PROBES:
        cases.append(Case("wmma", isa.by_opcode(op)[0].key, (("align_probe", True), ("c_layout", "row"),
                                                              ("d_layout", "row"), ("padded", True), ("seed", s()),
                                                              ("space", "shared"))))
    return cases


# Spec-legal shared-memory rows aligned to an 8-byte (or 4-byte) fragment but not to 16 bytes:
# the first device run saw 'misaligned address' traps for such cases (42 of them).
ALIGN_PROBES = (
    "wmma.mma.sync.aligned.row.col.m16n16k16.s32.s8.s8.s32",
    "wmma.mma.sync.aligned.row.col.m8n32k16.f32.bf16.bf16.f32",
    "wmma.mma.sync.aligned.row.col.m8n8k32.s32.s4.s4.s32",
    "wmma.mma.xor.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32",
)


# ---------------------------------------------------------------- judging


def reference_check(program, outputs: dict[str, bytes], acc_f32: int | None = None) -> dict | None:
    from fuzzptx.oracles import reference
    from fuzzptx.oracles.reference import warp_exec, wgmma_math

    old = dict(wgmma_math.ACC_PRECISION)
    if acc_f32:
        wgmma_math.ACC_PRECISION["f32"] = acc_f32
    try:
        with warp_exec.install():
            ref = reference.run_program(program)
    finally:
        wgmma_math.ACC_PRECISION.update(old)
    if ref.undefined:
        return {"undefined": ref.undefined, "notes": list(ref.notes)[:3]}
    from fuzzptx.oracles.reference.result import compare

    mism = compare(program, ref, outputs)
    undef = {k: int((ob.kind == 3).sum()) for k, ob in ref.outputs.items() if (ob.kind == 3).any()}
    if not mism:
        return {"undef_elements": undef, "notes": list(ref.notes)[:3]} if undef else None
    return {"wrong": len(mism), "first": [str(x) for x in mism[:6]], "notes": list(ref.notes)[:3]}


def _judge(args):
    idx, case, outputs = args
    t0 = time.perf_counter()
    try:
        program = case.program(name=f"k{idx}")
        v = reference_check(program, outputs)
        f = isa.by_key(case.key)
        if v is not None and "wrong" in v and f.atype in FP8 and f.dtype == "f32":
            if reference_check(program, outputs, acc_f32=14) is None:
                v["explained_by"] = "fp8-f32-accumulator-e8m13"
    except Exception as exc:
        v = {"error": f"{type(exc).__name__}: {exc}"[:400]}
    return idx, v, time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "warp_forms.json"))
    ap.add_argument("--raw", default="", help="also write failing cases' raw outputs here (hex JSON)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--families", default="", help="comma list (default: all)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ns = ap.parse_args(argv)
    t_start = time.perf_counter()
    cases = plan_cases(ns.seed)
    if ns.families:
        fam = set(ns.families.split(","))
        cases = [c for c in cases if c.family in fam]
    if ns.limit:
        step = max(1, len(cases) // ns.limit)
        cases = cases[::step][: ns.limit]
    timings = {}
    t0 = time.perf_counter()
    programs = [c.program(name=f"k{i}") for i, c in enumerate(cases)]
    timings["build_s"] = time.perf_counter() - t0
    from fuzzptx.oracles.ptxas import compile_parallel

    t0 = time.perf_counter()
    comp = compile_parallel([p.to_ptx() for p in programs], batch_size=32, jobs=ns.jobs, want_cubin=not ns.dry_run)
    timings["ptxas_s"] = time.perf_counter() - t0
    rejected = [{"case": cases[i].describe(), "diagnostics": [str(d) for d in r.diagnostics][:3]}
                for i, r in enumerate(comp) if not r.accepted]
    print(f"{len(cases)} cases, build {timings['build_s']:.1f}s, ptxas {timings['ptxas_s']:.1f}s, "
          f"{len(rejected)} rejected", flush=True)
    results: list = [None] * len(cases)
    info: dict = {}
    t0 = time.perf_counter()
    if ns.dry_run:
        from fuzzptx.oracles import reference
        from fuzzptx.oracles.reference import warp_exec

        for i, p in enumerate(programs):
            if comp[i].accepted:
                try:
                    with warp_exec.install():
                        ref = reference.run_program(p)
                    results[i] = ({k: ob.data for k, ob in ref.outputs.items()}, None)
                except Exception as exc:
                    results[i] = ({}, f"reference: {type(exc).__name__}: {exc}"[:300])
        info = {"device": "dry-run: outputs are the reference's own nominal values"}
    else:
        from fuzzptx.oracles.hardware import HardwareWorker

        with HardwareWorker(timeout=30.0) as w:
            idxs = [i for i in range(len(cases)) if comp[i].accepted]
            items = [(programs[i], comp[i].cubin, comp[i].kernel_map().get(f"k{i}", f"k{i}")) for i in idxs]
            for i, r in zip(idxs, w.run_many(items)):
                results[i] = (r.outputs, r.fault)
            info = dict(w.info, restarts=w.restarts)
    timings["gpu_s"] = time.perf_counter() - t0
    print(f"run {timings['gpu_s']:.1f}s {info}", flush=True)
    faults, hw_findings = [], []
    for i, r in enumerate(results):
        if r and r[1]:
            item = {"case": cases[i].describe(), "fault": r[1]}
            if dict(cases[i].kwargs).get("align_probe") and r[1] == "misaligned address":
                hw_findings.append(dict(item, finding="wmma-shared-rows-need-16-byte-alignment"))
            else:
                faults.append(item)
    work = [(i, cases[i], r[0]) for i, r in enumerate(results) if r and not r[1]]
    t0 = time.perf_counter()
    verdicts = {}
    with ProcessPoolExecutor(max_workers=ns.jobs) as ex:
        for i, v, sec in ex.map(_judge, work, chunksize=2):
            verdicts[i] = (v, sec)
    timings["judge_s"] = time.perf_counter() - t0
    per_family: dict = {}
    mismatches, errors, numerics, undefs = [], [], [], []
    raw = {}
    for i, c in enumerate(cases):
        pf = per_family.setdefault(c.family, Counter())
        pf["cases"] += 1
        if i not in verdicts:
            continue
        v, _ = verdicts[i]
        pf["run"] += 1
        if v is None:
            pf["agree"] += 1
        elif "error" in v or "undefined" in v:
            errors.append({"case": c.describe(), **v})
        elif "explained_by" in v:
            pf["numerics_finding"] += 1
            numerics.append({"case": c.describe(), **v})
        elif "wrong" in v:
            mismatches.append({"case": c.describe(), **v})
            if ns.raw and sum(len(x) for r in raw.values() for x in r.values()) < 12_000_000:
                raw[str(i)] = {"case": c.describe(), **{k: b.hex() for k, b in results[i][0].items()}}
        else:
            pf["agree_with_undef"] += 1
            undefs.append({"case": c.describe(), **v})
    families = {"mma": "mma", "mma.sp": "mma.sp", "wgmma.sp": "wgmma.sp", "ldmatrix": "ldmatrix",
                "stmatrix": "stmatrix", "wmma": "wmma.mma"}
    forms_run = {fam: sorted({c.key for i, c in enumerate(cases) if c.family == fam and i in verdicts})
                 for fam in families}
    forms_missing = {fam: sorted({f.key for f in isa.forms(cf) if runnable(f)} - set(forms_run[fam]))
                     for fam, cf in families.items()}
    timings["total_s"] = time.perf_counter() - t_start
    record = {
        "record": "warp_forms", "format": 1,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "dry_run": ns.dry_run, "device": info, "python": platform.python_version(),
        "command": "python benchmarks/hw_warp_forms.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "cases_planned": len(cases), "cases_run": len(verdicts),
        "per_family": {k: dict(v) for k, v in per_family.items()},
        "forms_run": {k: len(v) for k, v in forms_run.items()},
        "forms_missing": forms_missing,
        "not_runnable_on_sm_90a": sorted(f.key for fam in ("ldmatrix", "stmatrix") for f in isa.forms(fam)
                                         if not runnable(f)),
        "mismatches": mismatches, "numerics_findings": numerics, "faults": faults,
        "hardware_findings": {
            "wmma-shared-rows-need-16-byte-alignment": "spec (seed 002): each row must be aligned to the "
            "fragment size; H100: wmma.load/store on .shared rows aligned to 8 (or 4) bytes but not 16 trap "
            "'misaligned address' (global memory accepts them)",
            "fp8-f32-accumulator-e8m13": "fp8 x fp8 with .f32 D keeps 13 fraction bits (below the spec's "
            "'at least single precision'); every such case agrees with a 14-bit accumulator",
            "cases": hw_findings}, "ptxas_rejected": rejected,
        "judge_errors": errors, "agree_with_undefined_elements": undefs[:50], "timings": timings,
    }
    os.makedirs(os.path.dirname(os.path.abspath(ns.out)), exist_ok=True)
    with open(ns.out, "w") as fh:
        json.dump(record, fh, indent=1, default=str)
    if ns.raw:
        with open(ns.raw, "w") as fh:
            json.dump(raw, fh)
    print(json.dumps({"cases": len(cases), "run": len(verdicts), "mismatches": len(mismatches),
                      "hw_findings": len(hw_findings),
                      "numerics": len(numerics), "faults": len(faults), "rejected": len(rejected),
                      "errors": len(errors), "per_family": record["per_family"], "timings": timings}, indent=1),
          flush=True)
    return 0 if not (mismatches or faults or rejected or errors) else 1


if __name__ == "__main__":
    sys.exit(main())
