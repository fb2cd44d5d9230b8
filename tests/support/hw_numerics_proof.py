"""Proof run (issue 9): the reference's hardware numerics vs an H100, bit for bit.

Every dense floating-point wgmma type mix (f16/bf16/tf32/e4m3/e5m2 inputs, all A/B
fp8 mixes, f32 and f16 accumulators) runs through real wgmma programs
(``fuzzptx.builders.wgmma_program``: descriptors, canonical layouts with every
swizzle and major-ness, A from registers or shared memory, N from 8 to 256,
1 to 4 chained wgmma, scale-d on/off, imm-scale negation).  The matrices are
drawn from several distributions (moderate, wide exponent spread with
subnormals, cancellation against C, few-bit values with rounding ties, special
values, raw random bits) and written into the program's buffers through the
layouts (``layouts.write_tile`` / ``gather``); D comes back through the
accumulator fragment and is compared bit for bit with
``hw_numerics.mma`` chained over the wgmma steps, on all CPU cores.
Optionally the same sample runs through MMA-Sim (``--mmasim``).

    python benchmarks/hw_numerics_proof.py --dots 1000000 --out $OUT/numerics_proof.json
    python benchmarks/hw_numerics_proof.py --dry-run --dots 20000     # no GPU: model vs itself
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from fuzzptx import isa
from fuzzptx.builders import tile_plan, wgmma_program
from fuzzptx.data import element_bytes
from fuzzptx.isa import ELEMENT_BITS
from fuzzptx.oracles.reference import formats as F
from fuzzptx.oracles.reference import hw_numerics as H
from fuzzptx.oracles.reference import layouts as L

DISTS = ("moderate", "wide", "cancel", "fewbits", "special", "raw")
N_CHOICES = (8, 24, 64, 128, 256)


@dataclasses.dataclass(frozen=True)
class Kernel:
    """One compiled wgmma program variant (launched many times with different data)."""

    key: str
    k_steps: int
    a_major: str = "K"
    b_major: str = "K"
    a_swizzle: str = "none"
    b_swizzle: str = "none"
    scale_d: bool = True
    scale_a: int = 1
    scale_b: int = 1

    @property
    def form(self):
        return isa.by_key(self.key)

    def program(self, name: str = "k"):
        return wgmma_program(self.key, a_swizzle=self.a_swizzle, b_swizzle=self.b_swizzle, a_major=self.a_major,
                             b_major=self.b_major, scale_d=self.scale_d, scale_a=self.scale_a,
                             scale_b=self.scale_b, k_steps=self.k_steps, name=name)

    def mix(self) -> str:
        f = self.form
        return f"{f.dtype}.{f.atype}.{f.btype}"


def mixes() -> dict[str, list]:
    """Dense floating-point wgmma forms grouped by type mix (the catalogue is the source)."""
    out = defaultdict(list)
    for f in isa.forms():
        if f.opcode.startswith("wgmma.mma_async.sync") and f.dtype in ("f32", "f16") and not f.satfinite:
            out[f"{f.dtype}.{f.atype}.{f.btype}"].append(f)
    return dict(sorted(out.items()))


def plan_kernels(seed: int = 0) -> dict[str, list[Kernel]]:
    """Per mix: every N choice x A source, layouts/scales/k_steps varied deterministically."""
    rng = np.random.default_rng(seed)
    plan = {}
    for mix, forms in mixes().items():
        ks = []
        for i, (n, src) in enumerate([(n, s) for n in N_CHOICES for s in ("desc", "reg")]):
            cand = [f for f in forms if f.shape.n == n and f.a_source == src]
            if not cand:
                continue
            f = cand[0]
            trans = f.has_operand("imm_trans_b")
            neg = f.has_operand("imm_scale_a")
            sw = ("none", "32B", "64B", "128B")
            ks.append(Kernel(
                f.key, int((1, 2, 4)[i % 3]),
                a_major=("MN" if trans and src == "desc" and rng.random() < 0.4 else "K"),
                b_major=("MN" if trans and rng.random() < 0.4 else "K"),
                a_swizzle=(sw[int(rng.integers(4))] if src == "desc" else "none"),
                b_swizzle=sw[int(rng.integers(4))],
                scale_d=bool(i % 5 != 3),
                scale_a=int(-1 if neg and rng.random() < 0.3 else 1),
                scale_b=int(-1 if neg and rng.random() < 0.3 else 1)))
        plan[mix] = ks
    return plan


# ---------------------------------------------------------------- data


def _values(type_: str, shape, rng, lo: int, hi: int, man: int | None = None) -> np.ndarray:
    """Element bits of sign * 2^e * (1+f), e uniform in [lo, hi] (RNE-encoded: subnormals, zeros, Inf)."""
    e = rng.integers(lo, hi + 1, size=shape)
    fmt = F.FLOATS[type_]
    mb = fmt.man_bits if man is None else man
    frac = rng.integers(0, 1 << mb, size=shape) / float(1 << mb)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    with np.errstate(over="ignore"):
        return F.encode(type_, sign * np.ldexp(1.0 + frac, e)).astype(np.uint32)


def _raw(type_: str, shape, rng) -> np.ndarray:
    w = F.bits_per_element(type_)
    return rng.integers(0, 1 << w, size=shape, dtype=np.uint64).astype(np.uint32)


def _sprinkle(type_: str, x: np.ndarray, rng, p: float) -> np.ndarray:
    sp = F.special_values(type_)
    vals = np.array(list(sp.values()), dtype=np.uint32) if isinstance(sp, dict) else np.asarray(sp, np.uint32)
    use = rng.random(x.shape) < p
    return np.where(use, vals[rng.integers(0, len(vals), x.shape)], x).astype(np.uint32)


def gen_data(k: Kernel, dist: str, seed: int):
    """A [64, K*steps], B [K*steps, N], C [64, N] element bits for one launch."""
    f = k.form
    rng = np.random.default_rng([seed, 9])
    kk, n = f.shape.k * k.k_steps, f.shape.n
    at, bt, dt = f.atype, f.btype, f.dtype
    fa, fb, fd = F.FLOATS[at], F.FLOATS[bt], F.FLOATS[dt]
    if dist == "raw":
        a, b, c = _raw(at, (64, kk), rng), _raw(bt, (kk, n), rng), _raw(dt, (64, n), rng)
    elif dist == "wide":
        a = _values(at, (64, kk), rng, fa.emin - fa.man_bits - 1, fa.emax)
        b = _values(bt, (kk, n), rng, fb.emin - fb.man_bits - 1, fb.emax)
        c = _values(dt, (64, n), rng, fd.emin - fd.man_bits - 1, fd.emax)
        c = np.where(rng.random((64, n)) < 0.3, 0, c).astype(np.uint32)
    elif dist == "fewbits":
        a = _values(at, (64, kk), rng, -3, 3, man=min(2, fa.man_bits))
        b = _values(bt, (kk, n), rng, -3, 3, man=min(2, fb.man_bits))
        c = _values(dt, (64, n), rng, -4, 6, man=min(4, fd.man_bits))
    else:
        span = 3 if at in ("e4m3", "e5m2") else 6
        a = _values(at, (64, kk), rng, -span, span)
        b = _values(bt, (kk, n), rng, -span, span)
        c = _values(dt, (64, n), rng, -span, span)
        if dist == "special":
            a, b, c = _sprinkle(at, a, rng, 0.02), _sprinkle(bt, b, rng, 0.02), _sprinkle(dt, c, rng, 0.05)
        elif dist == "cancel":  # C = -(A.B) (with the kernel's negations): massive cancellation
            sign = k.scale_a * k.scale_b
            with np.errstate(over="ignore", invalid="ignore"):
                exact = F.decode(at, a) @ F.decode(bt, b) * sign
            pert = np.ldexp(rng.integers(-4, 5, (64, n)).astype(float), -30)
            c = F.encode(dt, -exact * (1 + pert)).astype(np.uint32)
            if rng.random() < 0.5:  # cancel inside the products instead: duplicate rows negated
                half = kk // 2
                a[:, half:half * 2] = a[:, :half] ^ np.uint32(1 << (F.bits_per_element(at) - 1))
                b[half:half * 2] = b[:half]
    return a, b, c


# ---------------------------------------------------------------- buffers <-> matrices


def plans(k: Kernel):
    f = k.form
    b_plan = tile_plan(f.shape.n, ELEMENT_BITS[f.btype], k.k_steps, k.b_major, k.b_swizzle)
    a_plan = tile_plan(64, ELEMENT_BITS[f.atype], k.k_steps, k.a_major, k.a_swizzle) if f.a_source == "desc" else None
    return a_plan, b_plan


def encode_buffers(k: Kernel, program, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> dict[str, np.ndarray]:
    """The program's input buffers (uint8) holding A, B, C through its layouts."""
    f = k.form
    kstep = f.shape.k
    sizes = {bf.name: bf.count * element_bytes(bf.type) for bf in program.buffers}
    bufs = {name: np.zeros(size, np.uint8) for name, size in sizes.items()}
    a_plan, b_plan = plans(k)
    for s in range(k.k_steps):
        L.write_tile(bufs["b"], b_plan.layouts[s], b[s * kstep:(s + 1) * kstep].T)
        if a_plan is not None:
            L.write_tile(bufs["a"], a_plan.layouts[s], a[:, s * kstep:(s + 1) * kstep])
    if a_plan is None:
        lay = L.a_fragment_layout(f.atype)
        words = np.concatenate([L.gather(lay, a[:, s * kstep:(s + 1) * kstep]) for s in range(k.k_steps)], axis=1)
        bufs["a"][:] = np.ascontiguousarray(words.astype(np.uint32)).view(np.uint8).ravel()
    acc = L.accumulator_layout(f.dtype, f.shape.n)
    bufs["c"][:] = np.ascontiguousarray(L.gather(acc, c).astype(np.uint32)).view(np.uint8).ravel()
    return bufs


def decode_d(k: Kernel, d_bytes: bytes) -> np.ndarray:
    acc = L.accumulator_layout(k.form.dtype, k.form.shape.n)
    return L.scatter(acc, np.frombuffer(d_bytes, np.uint32).reshape(128, acc.nregs))


def model(k: Kernel, a, b, c) -> np.ndarray:
    """hw_numerics chained over the kernel's wgmma steps (scale-d on the first only)."""
    f = k.form
    kstep = f.shape.k
    cur = c
    for s in range(k.k_steps):
        cur = H.mma(f.atype, f.btype, f.dtype, a[:, s * kstep:(s + 1) * kstep], b[s * kstep:(s + 1) * kstep], cur,
                    scale_d=k.scale_d or s > 0, scale_a=k.scale_a, scale_b=k.scale_b)
    return cur


# ---------------------------------------------------------------- GPU


def compile_kernels(kernels: list[Kernel]):
    from fuzzptx.oracles.ptxas import compile_parallel

    progs = [k.program() for k in kernels]
    res = compile_parallel([p.to_ptx() for p in progs], want_cubin=True)
    bad = [(k.key, r.diagnostics[:1]) for k, r in zip(kernels, res) if not r.accepted]
    if bad:
        raise SystemExit(f"ptxas rejected {len(bad)} kernels: {bad[:3]}")
    return progs, [(r.cubin, r.kernel_map().get(p.launch.kernel, p.launch.kernel)) for p, r in zip(progs, res)]


class Gpu:
    """Loads cubins with CuPy and launches one CTA of 128 threads per instance."""

    def __init__(self):
        import cupy

        self.cp = cupy
        self.dir = os.environ.get("TMPDIR", "/tmp")
        self.fns = {}

    def load(self, idx: int, cubin: bytes, kernel: str):
        path = os.path.join(self.dir, f"numerics_{os.getpid()}_{idx}.cubin")
        with open(path, "wb") as fh:
            fh.write(cubin)
        self.fns[idx] = self.cp.RawModule(path=path).get_function(kernel)

    def run(self, idx: int, program, bufs: dict[str, np.ndarray], threads: int = 128) -> bytes:
        """One CTA of ``threads`` threads; returns buffer ``d``."""
        cp = self.cp
        fn = program.module.function(program.launch.kernel)
        dev = {name: cp.asarray(arr) for name, arr in bufs.items()}
        args = []
        for p in fn.params:
            if p.name in dev:
                args.append(dev[p.name])
            else:
                args.append(np.uint32(dict(program.scalars)[p.name]))
        self.fns[idx]((1, 1, 1), (threads, 1, 1), tuple(args))
        return cp.asnumpy(dev["d"]).tobytes()


# ---------------------------------------------------------------- judging


def judge(job):
    """(mix, dist, dots, mismatches, examples) for one launch, re-generating its data from the seed."""
    k, dist, seed, d_bytes, explicit = job
    a, b, c = explicit if explicit is not None else gen_data(k, dist, seed)
    hw = decode_d(k, d_bytes)
    ref = model(k, a, b, c)
    bad = np.argwhere(hw != ref)
    ex = []
    for m, n in bad[:4]:
        ex.append({"kernel": dataclasses.asdict(k), "dist": dist, "seed": seed, "m": int(m), "n": int(n),
                   "hw": hex(int(hw[m, n])), "model": hex(int(ref[m, n]))})
    return k.mix(), dist, int(hw.size), len(bad), ex, (hw if len(bad) else None)


def mmasim_judge(job):
    from fuzzptx.oracles import mmasim_judge as MS

    k, dist, seed, d_bytes, explicit = job
    a, b, c = explicit if explicit is not None else gen_data(k, dist, seed)
    f = k.form
    hw = decode_d(k, d_bytes)
    sim = MS.wgmma(f.atype, f.btype, f.dtype, a, b, c, k.scale_d, k.scale_a, k.scale_b, k_step=f.shape.k)
    ref = model(k, a, b, c)
    bad = np.argwhere(sim != hw)
    ex = [{"kernel": dataclasses.asdict(k), "dist": dist, "seed": seed, "m": int(m), "n": int(n),
           "hw": hex(int(hw[m, n])), "mmasim": hex(int(sim[m, n])), "model": hex(int(ref[m, n]))}
          for m, n in bad[:3]]
    return k.mix(), dist, int(hw.size), len(bad), int((sim != ref).sum()), ex


def versions() -> dict:
    out = {"python": platform.python_version(), "numpy": np.__version__, "host": platform.node()}
    try:
        from fuzzptx.oracles.ptxas import ptxas_version

        out["ptxas"] = ptxas_version()
    except Exception as exc:  # noqa: BLE001
        out["ptxas"] = str(exc)
    return out


def device_info(gpu) -> dict:
    try:
        p = gpu.cp.cuda.runtime.getDeviceProperties(0)
        return {"name": p["name"].decode() if isinstance(p["name"], bytes) else p["name"],
                "cc": f"{p['major']}.{p['minor']}"}
    except Exception as exc:  # noqa: BLE001
        return {"error": str(exc)}


def launches_for(plan: dict[str, list], dots: int, seed: int, dots_per_launch=None):
    """(kernel index, kernel, dist, seed) until every mix has at least ``dots`` dot products
    (``dots_per_launch(kernel)``; default: one dense wgmma's 64 x N) and every kernel has run
    with every distribution."""
    dots_per_launch = dots_per_launch or (lambda k: 64 * k.form.shape.n)
    out = []
    flat = [k for ks in plan.values() for k in ks]
    index = {k: i for i, k in enumerate(flat)}
    for _mix, ks in plan.items():
        total, j = 0, 0
        while total < dots or j < len(ks) * len(DISTS):
            k = ks[j % len(ks)]
            dist = DISTS[(j // len(ks)) % len(DISTS)]
            out.append((index[k], k, dist, seed * 1_000_003 + len(out)))
            total += dots_per_launch(k)
            j += 1
    return flat, out


def run(args) -> dict:
    t0 = time.time()
    plan = plan_kernels(args.seed)
    flat, launches = launches_for(plan, args.dots, args.seed)
    progs, cubins = compile_kernels(flat)
    t_build = time.time() - t0
    jobs = []
    gpu = None if args.dry_run else Gpu()
    t1 = time.time()
    if gpu:
        for i, (cb, name) in enumerate(cubins):
            gpu.load(i, cb, name)
    for idx, k, dist, seed in launches:
        a, b, c = gen_data(k, dist, seed)
        if gpu:
            d = gpu.run(idx, progs[idx], encode_buffers(k, progs[idx], a, b, c))
        else:
            d = L.gather(L.accumulator_layout(k.form.dtype, k.form.shape.n), model(k, a, b, c)).astype(np.uint32).tobytes()
        jobs.append((k, dist, seed, d, None))
    t_gpu = time.time() - t1
    t2 = time.time()
    per = defaultdict(Counter)
    examples, bad_launches = [], []
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for (mix, dist, n, bad, ex, hw), job in zip(pool.map(judge, jobs, chunksize=4), jobs):
            per[mix]["dots"] += n
            per[mix]["mismatches"] += bad
            per[mix][f"dots.{dist}"] += n
            per[mix][f"mismatches.{dist}"] += bad
            examples.extend(ex[:2])
            if bad and len(bad_launches) < args.keep:
                bad_launches.append((job[0], dist, job[2], hw))
    t_judge = time.time() - t2
    rec = {
        "what": "hw_numerics (mode='hardware') vs the GPU, bit for bit, dense wgmma float forms",
        "command": " ".join(sys.argv), "seed": args.seed, "dry_run": args.dry_run,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "versions": versions(),
        "device": device_info(gpu) if gpu else None,
        "kernels": len(flat), "launches": len(launches),
        "per_mix": {m: dict(c) for m, c in per.items()},
        "total_dots": sum(c["dots"] for c in per.values()),
        "total_mismatches": sum(c["mismatches"] for c in per.values()),
        "examples": examples[:200],
        "seconds": {"build": round(t_build, 1), "gpu": round(t_gpu, 1), "judge": round(t_judge, 1)},
    }
    if args.mmasim:
        from fuzzptx.oracles import mmasim_judge as MS

        why = MS.available()
        if why:
            rec["mmasim"] = {"skipped": why}
        else:
            t3 = time.time()
            sample = jobs[:: max(1, len(jobs) // args.mmasim)]
            mper = defaultdict(Counter)
            mex = []
            with ProcessPoolExecutor(max_workers=args.jobs) as pool:
                for mix, dist, n, bad, vs_model, ex in pool.map(mmasim_judge, sample, chunksize=2):
                    mper[mix]["dots"] += n
                    mper[mix]["mmasim_vs_hw_mismatches"] += bad
                    mper[mix]["mmasim_vs_model_mismatches"] += vs_model
                    mper[mix][f"mmasim_vs_hw_mismatches.{dist}"] += bad
                    mex.extend(ex[:2])
            rec["mmasim"] = {"per_mix": {m: dict(c) for m, c in mper.items()}, "examples": mex[:100],
                             "seconds": round(time.time() - t3, 1)}
    if args.dump and bad_launches:
        np.savez_compressed(args.dump, **{f"l{i}": hw for i, (_, _, _, hw) in enumerate(bad_launches)})
        rec["dumped"] = [{"kernel": dataclasses.asdict(k), "dist": d, "seed": s} for k, d, s, _ in bad_launches]
    return rec


# ---------------------------------------------------------------- the exploration run's programs
# Sparse wgmma, mma.sync, mma.sp and wmma.mma are proved by benchmarks/hw_sparse_mma_proof.py.  The
# third device call's exploration (record: warp_exploration) ran the programs below; they stay so that
# its data can be regenerated from the seeds (hw_sparse_mma_proof.py --recheck-exploration).

FLOAT_IN = ("f16", "bf16", "tf32", "e4m3", "e5m2")
EXPLORATION_DISTS = ("moderate", "wide", "fewbits", "special", "raw")


def exploration_cases(seed: int = 3, reps: int = 80) -> list[tuple]:
    """(family, form, dist, seed) of every exploration launch (device call 3: seed 3, 80 reps per form)."""
    cases = []
    for fam, f in warp_forms():
        for r in range(reps if fam != "wgmma.sp" else max(1, reps // 4)):
            cases.append((fam, f, EXPLORATION_DISTS[r % len(EXPLORATION_DISTS)], seed * 7919 + len(cases)))
    return cases


def warp_forms() -> list:
    """Float sparse wgmma (a few N per mix) and every runnable float mma / mma.sp form."""
    from support import hw_warp_forms as WF

    out, seen = [], set()
    for f in isa.forms("wgmma.sp"):
        if f.atype in FLOAT_IN and f.dtype in ("f32", "f16") and f.shape.n in (8, 64, 256):
            out.append(("wgmma.sp", f))
    for fam in ("mma", "mma.sp"):
        for f in isa.forms(fam):
            if WF.runnable(f) and f.atype in FLOAT_IN and f.dtype in ("f32", "f16") and f.key not in seen:
                seen.add(f.key)
                out.append((fam, f))
    return out


def _flat(type_: str, count: int, dist: str, rng) -> np.ndarray:
    fmt = F.FLOATS[type_]
    if dist == "raw":
        return _raw(type_, (count,), rng)
    if dist == "wide":
        return _values(type_, (count,), rng, fmt.emin - fmt.man_bits - 1, fmt.emax)
    if dist == "fewbits":
        return _values(type_, (count,), rng, -3, 3, man=min(2, fmt.man_bits))
    span = 3 if type_ in ("e4m3", "e5m2") else 6
    x = _values(type_, (count,), rng, -span, span)
    return _sprinkle(type_, x, rng, 0.03) if dist == "special" else x


def warp_program(fam: str, f, dist: str, seed: int):
    """The family's proof-run program with buffers a, b, c refilled from ``dist`` (hex)."""
    from support import hw_warp_forms as WF

    rng = np.random.default_rng([seed, 11])
    if fam == "wgmma.sp":
        kw = dict(b_swizzle=("none", "64B", "128B")[seed % 3], scale_d=bool(seed % 4),
                  sel=tuple(f.attr("sp_sel_defined"))[seed % len(f.attr("sp_sel_defined"))])
        if f.has_operand("imm_scale_a"):
            kw.update(scale_a=(1, -1)[(seed // 3) % 2], scale_b=(1, -1)[(seed // 5) % 2])
        prog = WF.wgmma_sp_program(f, seed=seed, **kw)
    else:
        sel = tuple(f.attr("sp_sel_defined"))[seed % len(f.attr("sp_sel_defined"))] if fam == "mma.sp" else 0
        prog = WF.mma_program(f, seed=seed, sel=sel)
    bufs = []
    for b in prog.buffers:
        if b.name in ("a", "b", "c") and b.type in F.FLOATS:
            bits = _flat(b.type, b.count, dist, rng)
            raw = bits.astype({8: np.uint8, 16: np.uint16, 32: np.uint32}[8 * element_bytes(b.type)])
            b = dataclasses.replace(b, init="hex:" + raw.tobytes().hex())
        bufs.append(b)
    return dataclasses.replace(prog, buffers=tuple(bufs))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dots", type=int, default=1_000_000, help="dot products per type mix (at least)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--mmasim", type=int, default=0, help="launches to also run through MMA-Sim")
    ap.add_argument("--keep", type=int, default=64, help="mismatching launches to dump")
    ap.add_argument("--dump", default=None, help=".npz for the D of mismatching launches")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    rec = run(args) if args.dots else {"per_mix": {}, "total_dots": 0, "total_mismatches": 0, "seconds": {}}
    text = json.dumps(rec, indent=1)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    print(json.dumps({k: rec[k] for k in ("total_dots", "total_mismatches", "seconds")}))
    for m, c in rec["per_mix"].items():
        print(m, c["dots"], c["mismatches"])
    if "mmasim" in rec:
        print("mmasim", json.dumps(rec["mmasim"].get("per_mix", rec["mmasim"]))[:2000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
