"""Proof run (issue 3): every dense wgmma form of the catalogue, reference vs an H100.

Plan: for each type mix (atype, btype, dtype, satfinite) a greedy covering array
over the variant axes the mix allows (A source, A/B swizzle, A/B major-ness i.e.
imm-trans, scale-d imm/pred, imm-scale-a/b negation, k_steps, input distribution)
that covers every pair of axis values and every full layout combination
(A source x A swizzle x A major x B swizzle x B major); the rows are spread over
the mix's forms so every form (every N, both A sources) runs at least
``--per-form`` times, once with ``init=random`` and once with ``init=small_int``.

Pipeline: build (fuzzptx.builders.wgmma_program) -> ptxas batches
(oracles.ptxas.compile_parallel, shared cubins) -> GPU (oracles.hardware.HardwareWorker)
-> judges on all CPU cores: ``--oracle reference`` (fuzzptx.oracles.reference
run_program + compare: the proof) and/or ``direct`` (a layout decode through
oracles.reference.layouts + wgmma_math.wgmma_dense spec bounds: a cross-check that
does not use the interpreter).  Writes a JSON record (``--out``).

    python benchmarks/hw_dense_wgmma.py --out tests/hw_records/dense_wgmma.json
    python benchmarks/hw_dense_wgmma.py --dry-run --limit 40   # no GPU: plan+build+ptxas+judges on nominal values
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import itertools
import json
import os
import platform
import random
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from fuzzptx import isa
from fuzzptx.builders import wgmma_variants

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests"))  # test-only tooling: tests/support
from support.dense_wgmma import Case, direct_check, u32_words  # noqa: E402

INITS = ("random", "small_int")
K_STEPS = (1, 2, 4)
LAYOUT_AXES = ("a_source", "a_swizzle", "a_major", "b_swizzle", "b_major")


def mix_of(f) -> str:
    return f"{f.dtype}.{f.atype}.{f.btype}" + (".satfinite" if f.satfinite else "")


# ---------------------------------------------------------------- covering array


def _row_axes(f, kw: dict, init: str, k_steps: int) -> dict:
    row = {"a_source": f.a_source, **kw, "init": init, "k_steps": k_steps}
    if f.a_source == "reg":
        row["a_swizzle"] = row["a_major"] = "reg"
    return row


def _pairs(row: dict) -> set:
    items = sorted((k, str(v)) for k, v in row.items())
    out = {frozenset(p) for p in itertools.combinations(items, 2)}
    out.add(("layout",) + tuple(str(row[a]) for a in LAYOUT_AXES))
    return out


def _all_rows(forms, inits=INITS) -> list[tuple]:
    """Every (form-independent) variant row a mix allows, with the A source."""
    rows = []
    for src in sorted({f.a_source for f in forms}):
        f = next(x for x in forms if x.a_source == src)
        axes = wgmma_variants(f)
        names = sorted(axes)
        for vals in itertools.product(*(axes[n] for n in names)):
            kw = dict(zip(names, vals))
            for init in inits:
                for ks in K_STEPS:
                    rows.append((src, kw, init, ks))
    return rows


def plan_cases(per_form: int = 2, seed: int = 0, inits: tuple[str, ...] = INITS) -> list[Case]:
    """Covering-array cases for every dense form (deterministic for a seed)."""
    rnd = random.Random(seed)
    groups: dict[str, list] = defaultdict(list)
    for f in isa.forms("wgmma"):
        groups[mix_of(f)].append(f)
    cases: list[Case] = []
    for mix in sorted(groups):
        forms = groups[mix]
        universe = _all_rows(forms, inits)
        need = set()
        for src, kw, init, ks in universe:
            f = next(x for x in forms if x.a_source == src)
            need |= _pairs(_row_axes(f, kw, init, ks))
        covered: set = set()

        def pick(f, init_fixed=None):
            cands = [r for r in universe if r[0] == f.a_source and (init_fixed is None or r[2] == init_fixed)]
            best, best_gain = None, -1
            for r in rnd.sample(cands, min(60, len(cands))):
                gain = len(_pairs(_row_axes(f, r[1], r[2], r[3])) & (need - covered))
                if gain > best_gain:
                    best, best_gain = r, gain
            return best

        def add(f, r):
            _, kw, init, ks = r
            covered.update(_pairs(_row_axes(f, kw, init, ks)) & need)
            pv = kw.get("scale_d") == "pred" and rnd.random() < 0.5
            cases.append(Case(f.key, tuple(sorted(kw.items(), key=lambda x: x[0])), init,
                              rnd.randrange(1 << 30), ks, pv))

        for rep in range(per_form):
            for f in forms:
                add(f, pick(f, inits[rep % len(inits)]))
        # Extra rows until every pair and layout combination is covered (smallest N first: cheap).
        small = sorted(forms, key=lambda x: (x.shape.n, x.a_source))
        i = 0
        while need - covered:
            missing = next(iter(need - covered))
            want_src = None
            if isinstance(missing, tuple) and missing and missing[0] == "layout":
                want_src = missing[1]
            else:
                for k, v in missing:
                    if k == "a_source":
                        want_src = v
                    if k in ("a_swizzle", "a_major") and v != "reg":
                        want_src = "desc"
                    if k in ("a_swizzle", "a_major") and v == "reg":
                        want_src = "reg"
            f = next(x for x in small[i % 8:] + small if want_src in (None, x.a_source))
            i += 1
            cands = [r for r in universe if r[0] == f.a_source
                     and (_pairs(_row_axes(f, r[1], r[2], r[3])) & {missing})]
            best = max(rnd.sample(cands, min(60, len(cands))),
                       key=lambda r: len(_pairs(_row_axes(f, r[1], r[2], r[3])) & (need - covered)))
            add(f, best)
    return cases


def base_offset_cases(seed: int = 0) -> list[Case]:
    """Exploration (not the proof): swizzle patterns that start off their repeat boundary.

    Seed 000 says the descriptor's base offset must then be ``(pattern start >> 7) & 7``;
    FACTS.md lists it as unchecked.  For one desc form per type family, each swizzle,
    each start line j, the tile (A or B) starts j*128 bytes past a 1024-aligned array with
    base offset = the spec's value, 0, or (j = 0) a non-zero value on an aligned tile.
    ``direct`` reads the tiles as layouts.py does (phase = line - base_offset),
    ``direct_absolute`` with the phase from the absolute address alone.
    """
    from fuzzptx.builders import PATTERN_LINES

    rnd = random.Random(seed)
    picks = {}
    for f in isa.forms("wgmma"):
        if f.a_source == "desc" and f.shape.n == 32 and not f.satfinite:
            picks.setdefault((f.atype, f.btype, f.dtype), f)
    want = [("f16", "f16", "f32"), ("bf16", "bf16", "f32"), ("tf32", "tf32", "f32"), ("e4m3", "e5m2", "f16"),
            ("s8", "u8", "s32"), ("b1", "b1", "s32")]
    cases = []
    for key in want:
        f = picks[key]
        v = wgmma_variants(f)
        for major in v["b_major"]:
            for swz in ("32B", "64B", "128B"):
                lines = PATTERN_LINES[swz]
                offs = [(j, None) for j in range(1, lines)] + [(j, 0) for j in range(1, lines)] + [(0, 1), (0, 3)]
                for (j, bo), side in itertools.product(offs, ("a", "b")):
                    kw = {"a_swizzle": "none", "b_swizzle": "none", "a_major": "K", "b_major": "K",
                          "scale_d": True, "scale_a": 1, "scale_b": 1}
                    kw[side + "_swizzle"] = swz
                    kw[side + "_major"] = major
                    extra = {side + "_start_line": j}
                    if bo is not None:
                        extra[side + "_base_offset"] = bo
                    cases.append(Case(f.key, tuple(sorted(kw.items())), "small_int", rnd.randrange(1 << 30), 2,
                                      False, tuple(sorted(extra.items()))))
    return cases


# ---------------------------------------------------------------- direct judge (layouts + wgmma_math)


def nominal_outputs(case: Case, program) -> dict[str, bytes]:
    """The direct model's nominal D as output bytes (dry runs: exercise the judges without a GPU)."""
    from fuzzptx.data import buffer_bytes
    from fuzzptx.isa import Shape
    from fuzzptx.oracles.reference import layouts as L
    from fuzzptx.oracles.reference import wgmma_math as WM

    f = isa.by_key(case.key)
    kw = case.kwargs()
    n, ks, kstep = f.shape.n, case.k_steps, f.shape.k
    bufs = {b.name: buffer_bytes(b) for b in program.buffers}
    a_plan, b_plan = case.plans()
    bt = np.concatenate([L.read_tile(bufs["b"], b_plan.layouts[s], n, kstep).T for s in range(ks)], axis=0)
    if f.a_source == "desc":
        at = np.concatenate([L.read_tile(bufs["a"], a_plan.layouts[s], 64, kstep) for s in range(ks)], axis=1)
    else:
        words = u32_words(bufs["a"].tobytes()).reshape(128, 4 * ks)
        lay = L.a_fragment_layout(f.atype)
        at = np.concatenate([L.scatter(lay, words[:, 4 * s: 4 * s + 4]) for s in range(ks)], axis=1)
    acc = L.accumulator_layout(f.dtype, n)
    c = L.scatter(acc, u32_words(bufs["c"].tobytes()).reshape(128, acc.nregs))
    sd = kw["scale_d"] if kw["scale_d"] != "pred" else case.pred_value
    big = dataclasses.replace(f, shape=Shape(64, n, kstep * ks))
    r = WM.wgmma_dense(big, at, bt, c, scale_d=bool(sd), scale_a=kw["scale_a"], scale_b=kw["scale_b"])
    regs = L.gather(acc, r.bits)
    return {"d": regs.astype(np.uint32).tobytes()}


# ---------------------------------------------------------------- reference judge (the interpreter)


def reference_check(program, outputs: dict[str, bytes], mode: str = "spec") -> dict | None:
    """The proof's judge: the reference interpreter's allowed outputs vs the hardware's bytes.

    ``mode="hardware"`` asks the interpreter for its bit-exact sm_90a model (oracle ``reference_hw``).
    """
    from fuzzptx.oracles import reference

    ref = reference.run_program(program, mode=mode)
    if ref.undefined:
        return {"undefined": ref.undefined}
    mism = reference.compare(program, ref, outputs)
    if not mism:
        return None
    return {"wrong": len(mism), "wrong_is_capped": len(mism) >= 100, "first": [str(m) for m in mism[:5]]}


FP8 = ("e4m3", "e5m2")
E8M13_FRACTION_BITS = 13


def f32_min_trailing_zeros(case: Case, outputs: dict[str, bytes]) -> int | None:
    """Fewest trailing zero fraction bits over the finite non-zero f32 outputs (None: not f32)."""
    f = isa.by_key(case.key)
    if f.dtype != "f32":
        return None
    bits = np.frombuffer(outputs["d"], dtype=np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    frac = (bits & 0x007FFFFF)[finite & ((bits & 0x7FFFFFFF) != 0)].astype(np.int64)
    if frac.size == 0:
        return None
    low = frac & -frac
    tz = np.where(frac == 0, 23, np.log2(np.where(low == 0, 1, low)).astype(np.int64))
    return int(tz.min())


def explain_numerics(case: Case, program, outputs: dict[str, bytes]) -> str | None:
    """Name a known hardware numerics behaviour that explains a spec-mode disagreement, if one does.

    fp8 x fp8 with .f32 accumulators: the H100 keeps 13 fraction bits (FACTS.md: e8m13,
    DeepSeek-V3 / MMA-Sim), below the spec's "at least single precision".  Explained when
    every f32 output has >= 10 trailing zero fraction bits AND the outputs are inside the
    spec bounds recomputed for a 14-significand-bit accumulator.
    """
    f = isa.by_key(case.key)
    if not (f.atype in FP8 and f.dtype == "f32"):
        return None
    tz = f32_min_trailing_zeros(case, outputs)
    if tz is None or tz < 23 - E8M13_FRACTION_BITS:
        return None
    if direct_check(case, program, outputs, accum_precision=E8M13_FRACTION_BITS + 1) is not None:
        return None
    return "fp8-f32-accumulator-e8m13"


def _verdict_ok(v) -> bool:
    for attr in ("ok", "agree", "passed", "match"):
        if hasattr(v, attr):
            return bool(getattr(v, attr))
    if isinstance(v, (list, tuple, dict)):
        return len(v) == 0
    return bool(v)


def _jsonable(v):
    if dataclasses.is_dataclass(v):
        return {k: _jsonable(x) for k, x in dataclasses.asdict(v).items()}
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v][:20]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, np.ndarray):
        return v.ravel()[:20].tolist()
    return str(v)[:500]


# ---------------------------------------------------------------- judging in parallel


def _judge(args) -> tuple[int, dict]:
    idx, case, outputs, oracles = args
    program = case.program(name=f"k{idx}")
    res: dict = {"f32_min_trailing_zeros": f32_min_trailing_zeros(case, outputs)}
    for o in oracles:
        t0 = time.perf_counter()
        try:
            if o == "direct":
                v = direct_check(case, program, outputs)
            elif o == "direct_absolute":
                v = direct_check(case, program, outputs, base_offset_model="absolute")
            elif o == "reference_hw":
                v = reference_check(program, outputs, mode="hardware")
            else:
                v = reference_check(program, outputs)
            if v is not None and "wrong" in v and o in ("reference", "direct"):  # spec-mode judges only
                why = explain_numerics(case, program, outputs)
                if why:
                    v["explained_by"] = why
            res[o] = v
        except Exception as exc:  # a judge that cannot decide is reported, not fatal
            res[o] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        res[o + "_seconds"] = time.perf_counter() - t0
    return idx, res


def save_outputs(path: str, cases: list[Case], results: list) -> None:
    """Raw D bytes of small random float cases; inputs are regenerated from each case's header."""
    keep = {}
    for i, c in enumerate(cases):
        f = isa.by_key(c.key)
        r = results[i]
        if r and not r[1] and c.init == "random" and f.dtype != "s32" and f.shape.n <= 16:
            keep[f"case{i}"] = np.frombuffer(r[0]["d"], dtype=np.uint8)
    meta = {k: cases[int(k[4:])].describe() for k in keep}
    np.savez_compressed(path, cases_json=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **keep)


def versions() -> dict:
    import importlib.metadata as md

    import shutil
    import subprocess

    out = {"python": platform.python_version()}
    if shutil.which("nvidia-smi"):
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        out["nvidia_smi"] = q.stdout.strip()
    for pkg in ("numpy", "ml_dtypes", "cupy-cuda13x", "cupy", "hypothesis"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    try:
        from fuzzptx.oracles.ptxas import find_ptxas, ptxas_version

        out["ptxas"] = ptxas_version()
        out["ptxas_path"] = str(find_ptxas())
    except Exception as exc:
        out["ptxas"] = f"unavailable: {exc}"
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "dense_wgmma.json"))
    ap.add_argument("--oracle", default="reference",
                    help="comma list of reference (spec mode: the proof), reference_hw, direct, direct_absolute")
    ap.add_argument("--per-form", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="only the first N cases (spread over mixes)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--dry-run", action="store_true", help="no GPU: judge the direct model's nominal outputs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save-outputs", default="",
                    help="npz of raw hardware outputs of the random-input float cases with N <= 16 (numerics data)")
    ap.add_argument("--explore", choices=["base-offset"], help="an exploration plan instead of the proof's")
    ap.add_argument("--inits", default=",".join(INITS), help="input distributions (the proof: random,small_int)")
    ns = ap.parse_args(argv)
    oracles = [o for o in ns.oracle.split(",") if o]
    if not ns.dry_run:
        from fuzzptx.oracles.hardware import gpu_available

        reason = gpu_available()
        if reason is not None:
            print(f"hw_dense_wgmma: no GPU judge here: {reason} (use --dry-run)", file=sys.stderr)
            return 2
    t_start = time.perf_counter()
    if ns.explore == "base-offset":
        cases = base_offset_cases(ns.seed)
        ns.inits = "small_int"
    else:
        cases = plan_cases(ns.per_form, ns.seed, tuple(ns.inits.split(",")))
    if ns.limit:
        step = max(1, len(cases) // ns.limit)
        cases = cases[::step][: ns.limit]
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    programs = [c.program(name=f"k{i}") for i, c in enumerate(cases)]
    ptxs = [p.to_ptx() for p in programs]
    timings["build_s"] = time.perf_counter() - t0
    from fuzzptx.oracles.ptxas import compile_parallel

    t0 = time.perf_counter()
    comp = compile_parallel(ptxs, batch_size=32, jobs=ns.jobs, want_cubin=True)
    timings["ptxas_s"] = time.perf_counter() - t0
    rejected = [{"case": cases[i].describe(), "diagnostics": [str(d) for d in r.diagnostics][:5]}
                for i, r in enumerate(comp) if not r.accepted]
    print(f"{len(cases)} cases built in {timings['build_s']:.1f}s, ptxas {timings['ptxas_s']:.1f}s, "
          f"{len(rejected)} rejected", flush=True)
    info: dict = {}
    results: list = [None] * len(cases)
    t0 = time.perf_counter()
    if ns.dry_run:
        for i, c in enumerate(cases):
            results[i] = ({"d": nominal_outputs(c, programs[i])["d"]}, None)
        info = {"device": "dry-run (no GPU): outputs are the direct model's nominal values"}
    else:
        from fuzzptx.oracles.hardware import HardwareWorker

        with HardwareWorker(timeout=30.0) as w:
            items = [(programs[i], comp[i].cubin, comp[i].kernel_map().get(f"k{i}", f"k{i}"))
                     for i in range(len(cases)) if comp[i].accepted]
            idxs = [i for i in range(len(cases)) if comp[i].accepted]
            for i, r in zip(idxs, w.run_many(items)):
                results[i] = (r.outputs, r.fault)
            info = dict(w.info, restarts=w.restarts)
    timings["gpu_s"] = time.perf_counter() - t0
    print(f"gpu {timings['gpu_s']:.1f}s {info}", flush=True)
    faults = [{"case": cases[i].describe(), "fault": r[1]} for i, r in enumerate(results) if r and r[1]]
    if ns.save_outputs:
        save_outputs(ns.save_outputs, cases, results)
    t0 = time.perf_counter()
    work = [(i, cases[i], r[0], oracles) for i, r in enumerate(results) if r and not r[1]]
    verdicts: dict[int, dict] = {}
    with ProcessPoolExecutor(max_workers=ns.jobs) as ex:
        for i, res in ex.map(_judge, work, chunksize=4):
            verdicts[i] = res
    timings["judge_s"] = time.perf_counter() - t0
    per_mix: dict[str, Counter] = defaultdict(Counter)
    variants_run: dict[str, set] = defaultdict(set)
    mismatches, judge_errors, numerics = [], [], []
    tz_by_mix: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(cases):
        f = isa.by_key(c.key)
        mix = mix_of(f)
        per_mix[mix]["cases"] += 1
        v = verdicts.get(i)
        if v is None:
            continue
        per_mix[mix]["run"] += 1
        per_mix[mix]["init_" + c.init] += 1
        if v["f32_min_trailing_zeros"] is not None and c.init == "random":
            tz_by_mix[mix].append(v["f32_min_trailing_zeros"])
        variants_run[mix].add(json.dumps({k: str(x) for k, x in c.describe().items() if k not in ("form", "seed")},
                                         sort_keys=True))
        for o in oracles:
            if v[o] is None:
                per_mix[mix][o + "_agree"] += 1
            elif "error" in v[o] or "undefined" in v[o]:
                judge_errors.append({"oracle": o, "case": c.describe(), **v[o]})
            elif "explained_by" in v[o]:
                per_mix[mix][o + "_numerics_finding"] += 1
                numerics.append({"oracle": o, "case": c.describe(), **v[o]})
            else:
                mismatches.append({"oracle": o, "case": c.describe(), **v[o]})
    dense = sorted(f.key for f in isa.forms("wgmma"))
    ran = sorted({c.key for i, c in enumerate(cases) if i in verdicts})
    layouts_run = sorted({"|".join(str(dict(_row_axes(isa.by_key(c.key), c.kwargs(), c.init, c.k_steps))[a])
                                   for a in LAYOUT_AXES) + "|" + mix_of(isa.by_key(c.key))
                          for i, c in enumerate(cases) if i in verdicts})
    timings["total_s"] = time.perf_counter() - t_start
    record = {
        "record": "dense_wgmma",
        "explore": ns.explore,
        "format": 1,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "oracles": oracles,
        "inits": ns.inits.split(","),
        "dry_run": ns.dry_run,
        "device": info,
        "versions": versions(),
        "command": "python benchmarks/hw_dense_wgmma.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "catalogue_dense_forms": len(dense),
        "forms_run": ran,
        "forms_missing": sorted(set(dense) - set(ran)),
        "cases_planned": len(cases),
        "cases_run": len(verdicts),
        "per_mix": {m: dict(per_mix[m], distinct_variants=len(variants_run[m])) for m in sorted(per_mix)},
        "layout_combinations_run": layouts_run,
        "mismatches": mismatches,
        "numerics_findings": {
            "count": len(numerics),
            "by": dict(Counter(n["explained_by"] for n in numerics)),
            "note": "spec-mode disagreements explained by a named hardware numerics behaviour (see explain_numerics)",
            "examples": numerics[:8],
        },
        "f32_min_trailing_zero_bits_random_inputs": {m: min(v) for m, v in sorted(tz_by_mix.items())},
        "faults": faults,
        "ptxas_rejected": rejected,
        "judge_errors": judge_errors,
        "timings": timings,
    }
    os.makedirs(os.path.dirname(os.path.abspath(ns.out)), exist_ok=True)
    with open(ns.out, "w") as fh:
        json.dump(record, fh, indent=1, default=str)
    print(json.dumps({k: record[k] for k in ("cases_planned", "cases_run", "catalogue_dense_forms", "timings")}
                     | {"forms_run": len(ran), "mismatches": len(mismatches), "numerics_findings": len(numerics), "faults": len(faults),
                        "rejected": len(rejected), "judge_errors": len(judge_errors)}, indent=1), flush=True)
    return 0 if not (mismatches or faults or rejected or judge_errors) else 1


if __name__ == "__main__":
    sys.exit(main())
