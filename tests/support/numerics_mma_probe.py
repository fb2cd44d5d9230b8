"""Proof run for the warp-level ``mma`` forms ptxas emulates on sm_90a (issue 9).

``mma.sync`` with fp8 inputs and the Volta-era m8n8k4 f16 shapes have no tensor-core
instruction on sm_90a: ptxas lowers them to F2FP + HMMA + FADD, resp. FFMA/FADD chains (the
record carries each cubin's SASS opcode counts).  This script runs every runnable such form
(``benchmarks/hw_warp_forms.mma_program``: one mma per warp, fragments loaded from global
memory) many times on the GPU with adversarial inputs (moderate, wide exponent spread, few
far-apart terms, few-bit values with ties, cancellation against C, special values) and
compares D bit for bit with ``oracles/reference/mma_emulation`` on all cores.  It writes a
JSON record and ``*_sample.npz`` (inputs and the H100's D for a few mmas per form, replayed
by ``tests/test_mma_emulation.py``); ``--dump-all`` keeps every launch for exploring
hypotheses offline (that is how the model was found, with the SASS as the lead).

The matrices are written into the fragment buffers through the reference's own fragment
layouts: the buffers are filled with element *indices* once, run through the interpreter
with a capturing ``mma_dense``, and that gives the register-to-matrix map for every launch.

    python3 benchmarks/numerics_mma_probe.py --launches 1100 --seed 11 --out $OUT/mma_emulation.json  # GPU
    python benchmarks/numerics_mma_probe.py --launches 3 --dry-run --out /tmp/p.json                  # no GPU
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np


from fuzzptx import isa  # noqa: E402
from fuzzptx.oracles.reference import formats as F  # noqa: E402

DISTS = ("moderate", "wide", "fewterms", "fewbits", "cancel", "special")
_FP8 = ("e4m3", "e5m2")
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def probe_forms() -> list:
    """Every runnable float mma form with fp8 inputs, and the f16 m8n8k4 row.col forms."""
    from support import hw_warp_forms as WF

    out = []
    for f in isa.forms("mma"):
        if not WF.runnable(f) or f.dtype not in ("f32", "f16"):
            continue
        if f.atype in _FP8 or (f.shape.m == 8 and f.shape.k == 4 and f.atype == "f16"):
            out.append(f)
    return out


def _vals(t: str, shape, rng, lo: int, hi: int, man: int | None = None) -> np.ndarray:
    fmt = F.FLOATS[t]
    mb = fmt.man_bits if man is None else man
    e = rng.integers(lo, hi + 1, size=shape)
    frac = rng.integers(0, 1 << mb, size=shape) / float(1 << mb)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    with np.errstate(over="ignore"):
        return F.encode(t, sign * np.ldexp(1.0 + frac, e)).astype(np.uint32)


def matrices(f, dist: str, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A [M,K], B [K,N], C [M,N] element bits for one mma (C in the form's C type)."""
    m, n, k = f.shape.m, f.shape.n, f.shape.k
    at, bt, ct = f.atype, f.btype, f.ctype or f.dtype
    fa, fb, fc = F.FLOATS[at], F.FLOATS[bt], F.FLOATS[ct]
    if dist == "wide":
        a = _vals(at, (m, k), rng, fa.emin - fa.man_bits, fa.emax)
        b = _vals(bt, (k, n), rng, fb.emin - fb.man_bits, fb.emax)
        c = _vals(ct, (m, n), rng, -20, 20)
    elif dist == "fewterms":  # two or three nonzero products per dot, far apart in exponent
        a = _vals(at, (m, k), rng, fa.emin, fa.emax)
        b = _vals(bt, (k, n), rng, -2, 2)
        keep = rng.random((m, k)) < 3.0 / k
        a = np.where(keep, a, 0).astype(np.uint32)
        c = np.where(rng.random((m, n)) < 0.5, 0, _vals(ct, (m, n), rng, -10, 10)).astype(np.uint32)
    elif dist == "fewbits":
        a = _vals(at, (m, k), rng, -3, 3, man=min(2, fa.man_bits))
        b = _vals(bt, (k, n), rng, -3, 3, man=min(2, fb.man_bits))
        c = _vals(ct, (m, n), rng, -4, 6, man=min(4, fc.man_bits))
    else:
        a = _vals(at, (m, k), rng, -3, 3)
        b = _vals(bt, (k, n), rng, -3, 3)
        c = _vals(ct, (m, n), rng, -3, 3)
        if dist == "cancel":
            with np.errstate(over="ignore", invalid="ignore"):
                exact = F.decode(at, a) @ F.decode(bt, b)
            c = F.encode(ct, -exact * (1 + np.ldexp(rng.integers(-4, 5, (m, n)).astype(float), -20))).astype(np.uint32)
        elif dist == "special":
            for x, t, p in ((a, at, 0.03), (b, bt, 0.03), (c, ct, 0.05)):
                sp = np.array(list(F.special_values(t).values()), np.uint32)
                use = rng.random(x.shape) < p
                x[use] = sp[rng.integers(0, len(sp), int(use.sum()))]
    return a, b, c


@dataclasses.dataclass(frozen=True)
class FragmentMap:
    """Where each buffer element of a, b, c, d sits in the matrices (-1: padding/unused)."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    d: np.ndarray
    calls: int  # mma products per launch (2 warps; m8n8k4 computes 4 per warp)


def _tagged_run(program, digit: int):
    """Interpreter run with buffer element i of a/b/c holding digit ``digit`` of i (base 2^w - 1) + 1.

    Returns the A/B/C tags each mma product saw and the D buffer, whose element j holds the
    number of the (product, row, column) that wrote it."""
    from fuzzptx.oracles import reference
    from fuzzptx.oracles.reference import mma_math as MM
    from fuzzptx.oracles.reference import warp_exec
    from fuzzptx.oracles.reference import wgmma_math as W

    seen = []
    bufs = []
    for b in program.buffers:
        if b.name in ("a", "b", "c"):
            base = (1 << F.bits_per_element(b.type)) - 1
            tag = (np.arange(b.count) // base ** digit) % base + 1
            width = F.bits_per_element(b.type)
            bufs.append(dataclasses.replace(b, init="hex:" + tag.astype(_UINT[max(1, width // 8)]).tobytes().hex()))
        else:
            bufs.append(b)
    orig = MM.mma_dense

    def capture(form, a, b, c, *, scale_d=True, op="", mode="spec"):
        call = len(seen)
        seen.append(tuple(np.asarray(x).astype(np.int64) for x in (a, b, c)))
        m, n = np.shape(c)
        d = (np.arange(m * n).reshape(m, n) + 1 + call * m * n).astype(np.uint64)
        z, t = np.zeros((m, n)), np.ones((m, n), bool)
        v = d.astype(np.float64)  # marked "integer" so the interpreter stores these bits as they are
        return W.Result(form.dtype, d, v, v, v, v, z, t, ~t, ~t, ~t, True)

    MM.mma_dense = capture
    try:
        with warp_exec.install():
            out = reference.run_program(dataclasses.replace(program, buffers=tuple(bufs)))
    finally:
        MM.mma_dense = orig
    return seen, out


def fragment_map(f, program) -> FragmentMap:
    """Learn the register-to-matrix layouts by running the program with index-tagged buffers."""
    counts = {b.name: b.count for b in program.buffers}
    narrow = min(F.bits_per_element(b.type) for b in program.buffers if b.name in ("a", "b", "c"))
    digits = 1
    while ((1 << narrow) - 1) ** digits < max(counts[n] for n in "abc"):
        digits += 1
    index = None
    for digit in range(digits):
        seen, out = _tagged_run(program, digit)
        if index is None:
            index = [[np.zeros_like(s[j]) for s in seen] for j in range(3)]
            width = F.bits_per_element(f.dtype)
            dmap = np.frombuffer(out.bytes("d"), _UINT[width // 8]).astype(np.int64) - 1
        for j, name in enumerate("abc"):
            base = (1 << F.bits_per_element(next(b.type for b in program.buffers if b.name == name))) - 1
            for call, s in enumerate(seen):
                index[j][call] += np.where(s[j] > 0, (s[j] - 1) * base ** digit, 0)
    maps = []
    for j, name in enumerate("abc"):
        mp = np.full(counts[name], -1, np.int64)
        size = index[j][0].size
        for call, idx in enumerate(index[j]):
            mp[idx.reshape(-1)] = np.arange(size) + call * size
        maps.append(mp)
    return FragmentMap(*maps, dmap, len(seen))


def fill(program, fmap: FragmentMap, mats: list[tuple[np.ndarray, np.ndarray, np.ndarray]]):
    """The program with buffers a, b, c holding the given per-warp matrices (through the maps)."""
    bufs = []
    for b in program.buffers:
        if b.name in ("a", "b", "c"):
            j = "abc".index(b.name)
            flat = np.concatenate([m[j].reshape(-1) for m in mats])
            mp = getattr(fmap, b.name)
            vals = np.where(mp >= 0, flat[np.clip(mp, 0, None)], 0)
            width = F.bits_per_element(b.type)
            b = dataclasses.replace(b, init="hex:" + vals.astype(_UINT[max(1, width // 8)]).tobytes().hex())
        bufs.append(b)
    return dataclasses.replace(program, buffers=tuple(bufs))


def sass_summary(cubin: bytes) -> dict[str, int] | None:
    """Opcode counts of the tensor/FP instructions in a cubin (``cuobjdump -sass``), if available."""
    import re
    import shutil
    import subprocess
    import tempfile

    tool = shutil.which("cuobjdump") or ("/usr/local/cuda/bin/cuobjdump" if os.path.exists("/usr/local/cuda/bin/cuobjdump") else None)
    if not tool:
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        out = subprocess.run([tool, "-sass", fh.name], capture_output=True, text=True).stdout
    ops = re.findall(r"^\s*/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", out, re.M)
    keep = ("HMMA", "F2FP", "FFMA", "FADD", "HADD2", "HFMA2")
    counts: dict[str, int] = {}
    for op in ops:
        if op.split(".")[0] in keep:
            counts[op] = counts.get(op, 0) + 1
    return counts


def judge(job) -> dict:
    """Mismatch counts of the emulation model against the H100's D for one form's launches."""
    from fuzzptx.oracles.reference import mma_emulation as E

    key, A, B, C, D, dist = job
    f = isa.by_key(key)
    per = np.zeros(len(DISTS), np.int64)
    examples = []
    for i in range(len(A)):
        m = E.mma(f, A[i], B[i], C[i])
        hw = D[i].astype(np.uint32)
        with np.errstate(invalid="ignore"):
            ok = (m == hw) | (np.isnan(F.decode(f.dtype, m)) & np.isnan(F.decode(f.dtype, hw)))
        if not ok.all():
            per[dist[i]] += int((~ok).sum())
            if len(examples) < 3:
                r, c = (int(x) for x in np.argwhere(~ok)[0])
                examples.append({"mma": i, "dist": DISTS[dist[i]], "row": r, "col": c, "hw": hex(int(hw[r, c])),
                                 "model": hex(int(m[r, c]))})
    return {"form": key, "dots": int(D.size), "mismatches": int(per.sum()),
            "mismatches_by_dist": dict(zip(DISTS, per.tolist())), "examples": examples}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", type=int, default=300, help="launches per form (2 warps; 2 mmas each, 8 for m8n8k4)")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--dry-run", action="store_true", help="no GPU: D from the emulation model itself")
    ap.add_argument("--sample", type=int, default=8, help="mmas per form kept (inputs + H100 D) in OUT_sample.npz")
    ap.add_argument("--dump-all", action="store_true", help="also keep every launch (OUT_<group>.npz, large)")
    ap.add_argument("--out", required=True, help="record path (.json); the .npz files go beside it")
    args = ap.parse_args(argv)
    import platform
    from concurrent.futures import ProcessPoolExecutor

    from support import hw_warp_forms as WF
    from fuzzptx.data import buffer_bytes
    from fuzzptx.oracles.ptxas import compile_parallel, ptxas_version
    from fuzzptx.oracles.reference import mma_emulation as E

    t0 = time.time()
    forms = probe_forms()
    progs = [WF.mma_program(f, seed=args.seed, warps=2) for f in forms]
    res = compile_parallel([p.to_ptx() for p in progs], want_cubin=True)
    gpu = None
    if not args.dry_run:
        from hw_numerics_proof import Gpu

        gpu = Gpu()
    arrays, jobs, sass, rejected = {}, [], {}, {}
    t_gpu = 0.0
    for i, (f, p, r) in enumerate(zip(forms, progs, res)):
        if not r.accepted:
            rejected[f.key] = [d.message for d in r.diagnostics[:2]]
            continue
        sass[f.key] = sass_summary(r.cubin)
        fmap = fragment_map(f, p)
        if gpu:
            gpu.load(i, r.cubin, r.kernel_map().get(p.launch.kernel, p.launch.kernel))
        rng = np.random.default_rng([args.seed, i])
        A, B, C, D, dist_ix = [], [], [], [], []
        for launch in range(args.launches):
            dist = DISTS[launch % len(DISTS)]
            mats = [matrices(f, dist, rng) for _ in range(fmap.calls)]
            prog = fill(p, fmap, mats)
            bufs = {b.name: buffer_bytes(b) for b in prog.buffers}
            m, n = f.shape.m, f.shape.n
            if gpu:
                t1 = time.time()
                d_bytes = gpu.run(i, prog, bufs, prog.launch.block[0])  # two warps, not a warpgroup
                t_gpu += time.time() - t1
                width = F.bits_per_element(f.dtype)
                dflat = np.frombuffer(d_bytes, _UINT[width // 8]).astype(np.uint32)
                dm = np.zeros(fmap.calls * m * n, np.uint32)
                ok = fmap.d >= 0
                dm[fmap.d[ok]] = dflat[ok]
                dms = [dm[w * m * n:(w + 1) * m * n].reshape(m, n) for w in range(fmap.calls)]
            else:
                dms = [E.mma(f, *mat) for mat in mats]
            for w in range(fmap.calls):
                A.append(mats[w][0]); B.append(mats[w][1]); C.append(mats[w][2]); D.append(dms[w])
                dist_ix.append(DISTS.index(dist))
        tag = f.key.replace(".", "_").replace(":", "_")
        stacked = []
        for _name, mats, t in (("a", A, f.atype), ("b", B, f.btype), ("c", C, f.ctype or f.dtype), ("d", D, f.dtype)):
            stacked.append(np.stack(mats).astype(_UINT[max(1, F.bits_per_element(t) // 8)]))
        dist_arr = np.array(dist_ix, np.uint8)
        jobs.append((f.key, *stacked, dist_arr))
        for name, arr in zip("abcd", stacked):
            arrays[f"{tag}__{name}"] = arr
        arrays[tag + "__dist"] = dist_arr
    t_judge = time.time()
    with ProcessPoolExecutor() as pool:
        per_form = list(pool.map(judge, jobs))
    t_judge = time.time() - t_judge
    stem = os.path.splitext(args.out)[0]
    sample = {}
    for k, v in arrays.items():
        sample[k] = v[:args.sample]
    np.savez_compressed(stem + "_sample.npz", **sample)
    if args.dump_all:
        for group in ("m8n8k4", "k16", "k32"):  # the device returns files of <= 16 MB each
            np.savez_compressed(f"{stem}_{group}.npz", **{k: v for k, v in arrays.items() if group in k})
    per_mix: dict[str, dict[str, int]] = {}
    for rec in per_form:
        f = isa.by_key(rec["form"])
        mix = f"{f.atype}.{f.btype}" if f.atype in E.FP8 else "m8n8k4 f16"
        agg = per_mix.setdefault(mix, {"dots": 0, "mismatches": 0, "forms": 0})
        agg["dots"] += rec["dots"]; agg["mismatches"] += rec["mismatches"]; agg["forms"] += 1
        rec["sass"] = sass.get(rec["form"])
    record = {
        "what": "warp-level mma forms ptxas emulates on sm_90a (fp8 inputs, m8n8k4 f16) vs mma_emulation",
        "command": "python3 benchmarks/numerics_mma_probe.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "device": _device(gpu), "versions": {"ptxas": ptxas_version(), "numpy": np.__version__,
                                            "python": platform.python_version()},
        "dry_run": args.dry_run, "dists": DISTS, "rejected": rejected,
        "total_dots": sum(r["dots"] for r in per_form), "total_mismatches": sum(r["mismatches"] for r in per_form),
        "per_mix": per_mix, "per_form": per_form,
        "seconds": {"total": round(time.time() - t0, 1), "gpu": round(t_gpu, 1), "judge": round(t_judge, 1)},
    }
    with open(stem + ".json", "w") as fh:
        json.dump(record, fh, indent=1)
    print(json.dumps({k: record[k] for k in ("total_dots", "total_mismatches", "per_mix", "seconds")}))
    return 0


def _device(gpu) -> dict | None:
    if gpu is None:
        return None
    p = gpu.cp.cuda.runtime.getDeviceProperties(0)
    name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
    return {"name": name, "cc": f"{p['major']}.{p['minor']}", "cupy": gpu.cp.__version__}


if __name__ == "__main__":
    sys.exit(main())
