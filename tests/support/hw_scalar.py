"""The H100 against the reference, op by op: every scalar instruction form of
``oracles/reference/coverage.py`` (``FORMS``) in a small kernel of its own, on fresh random inputs
with edge values mixed in (0, -1, INT_MIN, INT_MAX, shift amounts at and past the width, NaN, Inf,
subnormals, ties), compared bit for bit; the record is ``tests/hw_records/scalar_ops_h100.json``.

    PYTHONPATH=$PWD:tests python3 tests/support/hw_scalar.py --out $OUT/scalar_ops_h100.json   # on the GPU machine
    PYTHONPATH=$PWD:tests python3 tests/support/hw_scalar.py --dry-run --out /tmp/scalar.json  # no GPU: ptxas + reference

Each kernel runs ``--threads`` threads (one CTA); thread i reads input k from ``inp[i * nin + k]``
(a 64-bit slot; 32- and 16-bit inputs take its low bytes, a predicate its low bit) and stores
output k to ``out[i * nout + k]`` (a zeroed 64-bit slot; a predicate as 0/1).  The seed of each
round is in the record, so any mismatch can be rebuilt (``program(form, seed)``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import re
import struct
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from fuzzptx.oracles.reference.coverage import FORMS, KIND_CLASS, Form
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.parse import parse

THREADS = 128

# ------------------------------------------------------------------ inputs

_I32 = [0, 1, 2, 0xFFFFFFFF, 0xFFFFFFFE, 0x80000000, 0x7FFFFFFF, 0x80000001, 0xFFFF, 0x10000, 0x8000, 0x7FFF,
        0xFF, 0x80, 0x7F, 0x100, 0xFFFF8000, 0x00FFFFFF, 0xFF800000]
_I64 = [0, 1, (1 << 64) - 1, 1 << 63, (1 << 63) - 1, (1 << 63) + 1, 0xFFFFFFFF, 1 << 32, (1 << 32) - 1 << 32,
        0x7FFFFFFF, 0x80000000, 0xFFFFFFFF80000000]
_I16 = [0, 1, 0xFFFF, 0x8000, 0x7FFF, 0x8001, 0xFF, 0x80, 0x7F, 0x100, 0xFFFE]
_SH = [0, 1, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256, 257, 0x1FF, 0xFFFFFFFF, 0x80000000]


def _f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


_F32 = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x00000001,
        0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x3F000000,
        _f32_bits(0.5), _f32_bits(1.5), _f32_bits(2.5), _f32_bits(-2.5), _f32_bits(-0.5), _f32_bits(2147483648.0),
        _f32_bits(-2147483904.0), _f32_bits(4294967296.0), _f32_bits(65504.0), _f32_bits(65520.0),
        _f32_bits(448.0), _f32_bits(464.0), _f32_bits(57344.0), _f32_bits(61440.0), _f32_bits(3.0e38),
        _f32_bits(1.0e-7), _f32_bits(6.0e-8), _f32_bits(-6.1e-5), _f32_bits(255.5), _f32_bits(-128.5),
        _f32_bits(9.2233720368547758e18), _f32_bits(1.8446744073709552e19), 0x33800000, 0x38800000, 0x3F801000,
        0x3F800FFF, 0x3F808000, 0x3F818000]
_F64 = [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0x7FF0000000000001, 1,
        0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, _f64_bits(0.5), _f64_bits(2.5),
        _f64_bits(-1.5), _f64_bits(3.4028235677973366e38), _f64_bits(3.4028236e38), _f64_bits(1.0e-45),
        _f64_bits(1.4e-45), _f64_bits(2147483647.5), _f64_bits(-2147483648.5), _f64_bits(9.223372036854775807e18),
        _f64_bits(1.8446744073709552e19), _f64_bits(65519.99), _f64_bits(4294967295.5), _f64_bits(1e300)]
_F16 = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF,
        0x3C00, 0xBC00, 0x3800, 0x5BF8, 0x5F00, 0x7800, 0x3E00, 0x4100]
_BF16 = [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F,
         0xFF7F, 0x3F80, 0xBF80, 0x3F00, 0x4F00, 0xCF00, 0x4380]
_F8 = list(range(0, 0x100, 7)) + [0x7F, 0xFF, 0x7E, 0xFE, 0x7C, 0xFC, 0x7B, 0x80, 0x00, 0x01, 0x81]


def draw(kind: str, rng: random.Random) -> int:
    """One input value of ``kind`` (a 64-bit slot's contents)."""
    edge = rng.random() < 0.45
    if kind == "u32":
        return rng.choice(_I32) if edge else rng.getrandbits(32)
    if kind == "u64":
        return rng.choice(_I64 + _I32) if edge else rng.getrandbits(64)
    if kind == "u16":
        return rng.choice(_I16) if edge else rng.getrandbits(16)
    if kind in ("div32", "div64", "div16"):
        w = {"div32": 32, "div64": 64, "div16": 16}[kind]
        pool = {32: _I32, 64: _I64, 16: _I16}[w]
        if rng.random() < 0.1:
            return 0  # division by zero: UNDEF in the reference
        if rng.random() < 0.3:
            return rng.choice(pool) & ((1 << w) - 1) or 1
        return rng.getrandbits(rng.choice((3, 8, w // 2, w))) or 1
    if kind in ("sh", "pos"):
        return rng.choice(_SH) if edge else rng.randrange(0, 80)
    if kind in ("small", "small16"):
        return rng.randrange(0, 4)
    if kind == "soff":  # a signed offset around the 32 bit positions
        return rng.randrange(-40, 41) & 0xFFFFFFFF
    if kind == "small64":
        return rng.choice([0, 1, 1 << 32, (1 << 32) + 1])
    if kind == "rare":  # one warp in two holds a single value
        return 5 if rng.random() < 0.97 else 6
    if kind == "lane":
        return rng.choice([0, 1, 31, 32, 33, 0xFFFFFFFF, 16, 15]) if edge else rng.randrange(0, 40)
    if kind == "shflc":
        seg = rng.choice([0, 0x18, 0x1C, 0x1E, 0x1F, 0x10, rng.randrange(32)])
        return (seg << 8) | rng.choice([0, 0x1F, 7, 15, rng.randrange(32)]) | (rng.getrandbits(1) << 16)
    if kind == "pred":
        return rng.getrandbits(1)
    if kind == "f32":
        if edge:
            return rng.choice(_F32)
        return _f32_bits(rng.choice([1.0, -1.0]) * 2.0 ** rng.uniform(-30, 66) * rng.random()) if rng.random() < 0.7 \
            else rng.getrandbits(32)
    if kind == "f64":
        if edge:
            return rng.choice(_F64)
        return _f64_bits(rng.choice([1.0, -1.0]) * 2.0 ** rng.uniform(-140, 140) * rng.random()) if rng.random() < 0.7 \
            else rng.getrandbits(64)
    if kind == "f16":
        return rng.choice(_F16) if edge else rng.getrandbits(16)
    if kind == "bf16":
        return rng.choice(_BF16) if edge else rng.getrandbits(16)
    if kind in ("f16x2", "bf16x2"):
        h = "f16" if kind == "f16x2" else "bf16"
        return draw(h, rng) | (draw(h, rng) << 16)
    if kind in ("e4m3x2", "e5m2x2"):
        return (rng.choice(_F8) if edge else rng.getrandbits(8)) | ((rng.choice(_F8) if edge else rng.getrandbits(8)) << 8)
    raise ValueError(kind)


# ------------------------------------------------------------------ kernels

_PROLOGUE = """.reg .b16 %hs<4>; .reg .b32 %rs<8>; .reg .b64 %rds<8>; .reg .pred %lead, %ps<2>;
.reg .b64 %own_global, %own_shared, %own_generic, %four_global, %four_shared;
.reg .b64 %loc_a, %loc_g, %loc_o; .reg .b32 %loc_i;"""


def program(form: Form, seed: int, threads: int = THREADS, name: str = "k") -> Program:
    """Form ``form``'s kernel on the inputs drawn from ``seed``."""
    rng = random.Random(seed)
    vals = [draw(k, rng) if form.ins else 0 for _ in range(threads) for k in (form.ins or ("u32",))]
    return program_on(form, vals, threads, name)


def program_on(form: Form, vals: list[int], threads: int = THREADS, name: str = "k") -> Program:
    """Form ``form``'s kernel on given inputs (``vals[i * nin + k]``: input k of thread i)."""
    nin, nout = max(len(form.ins), 1), max(len(form.outs), 1)
    inp = Buffer("inp", "u64", threads * nin, "hex:" + np.array(vals, np.uint64).tobytes().hex())
    out = Buffer("out", "u64", threads * nout, "zeros", output=True)
    scr = Buffer("scr", "u64", threads, "zeros", output=True)
    decl, load, store, subs = [], [], [], {}
    for k, kind in enumerate(form.ins):
        c = KIND_CLASS[kind]
        reg = f"%a{k}"
        decl.append(f".reg .{c} {reg};")
        subs[f"a{k}"] = reg
        if c == "pred":
            load.append(f"ld.global.u32 %rs1, [%rds2+{8 * k}]; and.b32 %rs1, %rs1, 1; setp.ne.u32 {reg}, %rs1, 0;")
        else:
            load.append(f"ld.global.{c} {reg}, [%rds2+{8 * k}];")
    for k, c in enumerate(form.outs):
        reg = f"%d{k}"
        decl.append(f".reg .{c} {reg};")
        subs[f"d{k}"] = reg
        if c == "pred":
            store.append(f"selp.u32 %rs2, 1, 0, {reg}; st.global.u32 [%rds3+{8 * k}], %rs2;")
        else:
            store.append(f"st.global.{c} [%rds3+{8 * k}], {reg};")
    body = form.text.format(**subs)
    uses_local = "loc" in body
    text = f""".version 8.5
.target sm_90a
.address_size 64

.visible .entry {name}(.param .u64 inp, .param .u64 out, .param .u64 scr)
{{
{_PROLOGUE}
{' '.join(decl)}
.shared .align 8 .b8 sm[{8 * threads}];
{'.local .align 16 .b8 loc[64];' if uses_local else ''}
mov.u32 %rs0, %tid.x;
ld.param.u64 %rds0, [inp]; ld.param.u64 %rds1, [out]; ld.param.u64 %rds4, [scr];
mul.wide.u32 %rds5, %rs0, {8 * nin}; add.s64 %rds2, %rds0, %rds5;
mul.wide.u32 %rds5, %rs0, {8 * nout}; add.s64 %rds3, %rds1, %rds5;
mul.wide.u32 %rds5, %rs0, 8; add.s64 %own_global, %rds4, %rds5;
mov.u64 %rds6, sm; add.s64 %own_shared, %rds6, %rds5; cvta.shared.u64 %own_generic, %own_shared;
and.b32 %rs3, %rs0, 0xFFFFFFFC; mul.wide.u32 %rds5, %rs3, 8; add.s64 %four_global, %rds4, %rds5;
add.s64 %four_shared, %rds6, %rds5; and.b32 %rs3, %rs0, 3; setp.eq.u32 %lead, %rs3, 0;
{chr(10).join(load)}
{body}
{chr(10).join(store)}
ret;
}}
"""
    return Program(parse(text, f"{_slug(form.label)}.ptx"), Launch(name, (1, 1, 1), (threads, 1, 1)), (inp, out, scr))


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]+", "_", s)[:80]


# ------------------------------------------------------------------ judging


def _judge(item):
    """(form index, seed, hw outputs or None, threads) -> row fields (run in a worker process)."""
    from fuzzptx.oracles.reference import Unsupported, compare, run_program
    from fuzzptx.oracles.reference.values import UNDEF

    i, seed, hw, threads = item
    form = FORMS[i]
    p = program(form, seed, threads)
    t0 = time.perf_counter()
    try:
        ref = run_program(p)
    except Unsupported as exc:
        return {"refused": str(exc)}
    except Exception as exc:  # a crash of the reference is a finding, never the end of the run
        return {"reference_error": f"{type(exc).__name__}: {exc}"[:300]}
    row = {"ref_s": round(time.perf_counter() - t0, 4),
           "undefined_elements": int(sum(int((o.kind == UNDEF).sum()) for o in ref.outputs.values())),
           "run_undefined": ref.undefined}
    if hw is not None:
        mism = compare(p, ref, hw)
        row["mismatches"] = len(mism)
        row["first"] = [str(x) for x in mism[:4]]
        if mism:
            row["examples"] = _examples(p, ref, hw, form)
    return row


def _examples(p: Program, ref, hw: dict, form: Form, limit: int = 4) -> list[dict]:
    """Inputs, reference and H100 outputs of the first differing threads."""
    nin, nout = max(len(form.ins), 1), max(len(form.outs), 1)
    inp = np.frombuffer(bytes.fromhex(p.buffers[0].init[4:]), np.uint64).reshape(-1, nin)
    r = np.frombuffer(ref.outputs["out"].data, np.uint64).reshape(-1, nout)
    h = np.frombuffer(hw["out"], np.uint64).reshape(-1, nout)
    bad = np.flatnonzero((r != h).any(axis=1) & (ref.outputs["out"].kind.reshape(-1, nout) == 0).any(axis=1))
    return [{"thread": int(t), "inputs": [hex(int(x)) for x in inp[t]], "reference": [hex(int(x)) for x in r[t]],
             "h100": [hex(int(x)) for x in h[t]]} for t in bad[:limit]]


def reexamine_row(form: Form, row: dict) -> dict:
    """Today's reference on a record's row: the record keeps, of each run, only the inputs and H100
    outputs of (at most four) differing threads, so those examples are what is judged again.  Each
    example becomes a one-thread kernel; it still disagrees if some output the reference defines
    (not UNDEF) differs from the H100's bits."""
    from fuzzptx.oracles.reference import Unsupported, run_program
    from fuzzptx.oracles.reference.values import UNDEF

    nout = max(len(form.outs), 1)
    runs = []
    for run in row["runs"]:
        still, seen = [], []
        for e in run.get("examples", []):
            p = program_on(form, [int(x, 16) for x in e["inputs"]] or [0], threads=1)
            try:
                ref = run_program(p)
            except Unsupported as exc:
                return {**row, "status": "refused", "reexamined": str(exc)}
            o = ref.outputs["out"]
            bits = np.frombuffer(o.data, np.uint64)[:nout]
            kind = o.kind[:nout]
            differs = ref.undefined is None and any(kind[j] != UNDEF and int(bits[j]) != int(e["h100"][j], 16)
                                                    for j in range(nout))
            now = [("UNDEF" if kind[j] == UNDEF else hex(int(bits[j]))) for j in range(nout)]
            seen.append({**e, "reference_now": now, "differs_now": bool(differs)})
            still += [e] if differs else []
        r = {**run, "examples": seen} if seen else dict(run)
        r["mismatches_recorded"] = run.get("mismatches", 0)
        r["mismatches"] = len(still) if seen else run.get("mismatches", 0)
        runs.append(r)
    status = row["status"]
    if status == "mismatch":
        status = "mismatch" if any(r["mismatches"] for r in runs) else "ok"
    return {**row, "runs": runs, "status": status}


def reexamine(path: str, out: str, only: str | None = None) -> dict:
    """Re-judge a record with today's reference, no GPU (see ``reexamine_row``); writes ``out``."""
    with open(path) as fh:
        rec = json.load(fh)
    forms = {f.label: f for f in FORMS}
    rows = [reexamine_row(forms[r["form"]], r) if r["form"] in forms and r["status"] == "mismatch"
            and (only is None or re.search(only, r["form"])) else r for r in rec["rows"]]
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    rec = {**rec, "rows": rows, "status_counts": counts,
           "mismatching_forms": [r["form"] for r in rows if r["status"] == "mismatch"],
           "reexamined": {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                          "what": "mismatching rows re-judged on their recorded examples only (the record keeps "
                                  "no other H100 outputs): a row with no example still differing is ok"}}
    with open(out, "w") as fh:
        json.dump(rec, fh, indent=1)
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--reexamine", metavar="RECORD", default=None,
                    help="no GPU: re-judge RECORD's mismatching examples with today's reference, write --out")
    ap.add_argument("--rounds", type=int, default=3, help="fresh input sets per form")
    ap.add_argument("--threads", type=int, default=THREADS)
    ap.add_argument("--seed", type=int, default=None, help="master seed (default: fresh)")
    ap.add_argument("--only", default=None, help="regex on form labels")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--dry-run", action="store_true", help="no GPU: the pinned ptxas and the reference only")
    args = ap.parse_args(argv)
    if args.reexamine:
        rec = reexamine(args.reexamine, args.out, args.only)
        print(json.dumps({"status_counts": rec["status_counts"], "mismatching_forms": rec["mismatching_forms"]}))
        return 0
    master = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    rng = random.Random(master)
    idx = [i for i, f in enumerate(FORMS) if args.only is None or re.search(args.only, f.label)]
    cases = [(i, rng.randrange(1 << 31)) for i in idx for _ in range(args.rounds)]
    timings = {}
    t0 = time.perf_counter()
    programs = [program(FORMS[i], s, args.threads, name=f"k{n}") for n, (i, s) in enumerate(cases)]
    timings["build_s"] = round(time.perf_counter() - t0, 1)
    from fuzzptx.oracles.ptxas import compile_parallel, ptxas_version

    t0 = time.perf_counter()
    comp = compile_parallel([p.to_ptx() for p in programs], batch_size=32, jobs=args.jobs, want_cubin=not args.dry_run)
    timings["ptxas_s"] = round(time.perf_counter() - t0, 1)
    print(f"{len(cases)} kernels ({len(idx)} forms x {args.rounds}), ptxas {timings['ptxas_s']}s, "
          f"{sum(not r.accepted for r in comp)} rejected", flush=True)
    hw_out: list = [None] * len(cases)
    faults: dict[int, str] = {}
    info: dict = {"dry_run": True}
    t0 = time.perf_counter()
    if not args.dry_run:
        from fuzzptx.oracles.hardware import HardwareWorker

        with HardwareWorker(timeout=30.0) as w:
            todo = [n for n in range(len(cases)) if comp[n].accepted]
            items = [(programs[n], comp[n].cubin, comp[n].kernel_map().get(f"k{n}", f"k{n}")) for n in todo]
            for n, r in zip(todo, w.run_many(items)):
                if r.fault:
                    faults[n] = r.fault
                else:
                    hw_out[n] = r.outputs
            info = dict(w.info, restarts=w.restarts, nvidia_smi=_nvidia_smi())
    timings["gpu_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    work = [(i, s, hw_out[n], args.threads) for n, (i, s) in enumerate(cases)]
    with ProcessPoolExecutor(max_workers=args.jobs) as ex:
        judged = list(ex.map(_judge, work, chunksize=8))
    timings["judge_s"] = round(time.perf_counter() - t0, 1)
    per_form: dict[str, dict] = {}
    for n, ((i, s), row) in enumerate(zip(cases, judged)):
        f = FORMS[i]
        e = per_form.setdefault(f.label, {"form": f.label, "chapter": f.chapter, "text": f.text, "runs": []})
        run = {"seed": s, "ptxas_accepted": comp[n].accepted, **row}
        if not comp[n].accepted:
            run["ptxas"] = [str(d) for d in comp[n].diagnostics][:2]
        if n in faults:
            run["fault"] = faults[n]
        e["runs"].append(run)
    forms = list(per_form.values())
    for e in forms:
        runs = e["runs"]
        e["status"] = ("rejected_by_ptxas" if not all(r["ptxas_accepted"] for r in runs) else
                       "refused" if any("refused" in r for r in runs) else
                       "reference_error" if any("reference_error" in r for r in runs) else
                       "fault" if any("fault" in r for r in runs) else
                       "mismatch" if any(r.get("mismatches") for r in runs) else
                       "ok" if not args.dry_run else "reference_ran")
    counts: dict[str, int] = {}
    for e in forms:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    out = {"what": __doc__.splitlines()[0],
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(["python3 tests/support/hw_scalar.py"] + (argv if argv is not None else sys.argv[1:])),
           "master_seed": master, "threads": args.threads, "rounds": args.rounds,
           "device": info, "ptxas": str(ptxas_version()), "python": platform.python_version(),
           "numpy": np.__version__, "cupy": _cupy_version(), "timings": timings,
           "forms": len(forms), "kernels": len(cases), "status_counts": counts,
           "compared_elements": sum(args.threads * max(len(FORMS[i].outs), 1) for i, _ in cases) if not args.dry_run else 0,
           "mismatching_forms": [e["form"] for e in forms if e["status"] == "mismatch"],
           "rejected_forms": [e["form"] for e in forms if e["status"] == "rejected_by_ptxas"],
           "refused_forms": [e["form"] for e in forms if e["status"] == "refused"],
           "reference_errors": [e["form"] for e in forms if e["status"] == "reference_error"],
           "faults": [e["form"] for e in forms if e["status"] == "fault"],
           "rows": forms}
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(json.dumps({k: v for k, v in out.items() if k != "rows"}))
    return 0


def _nvidia_smi() -> str | None:
    import subprocess
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip() or None
    except Exception:
        return None


def _cupy_version() -> str | None:
    try:
        import cupy
        return cupy.__version__
    except Exception:
        return None


if __name__ == "__main__":
    raise SystemExit(main())
