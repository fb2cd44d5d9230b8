"""Probe programs (issue 9): inputs that expose how the H100's tensor cores add.

Fasi/Higham/Mikaitis-style: each probe is one dot product (A row, B column, C)
chosen so that competing hypotheses give different bits, e.g. one large product
plus a small one placed just inside or just outside the alignment window.  64
probes run per launch of a real ``wgmma`` program (m64n64, A and B by
descriptor), probe i on D[i, i]; the other D elements (mixtures of probe rows
and columns) are compared with the model too.  Each probe's record holds its
inputs, the exact value, the H100's bits, ``hw_numerics``' bits and (with
``--mmasim``) MMA-Sim's.

    python benchmarks/numerics_probes.py --out $OUT/numerics_probes.json [--mmasim]
    python benchmarks/numerics_probes.py --dry-run      # model only, no GPU
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from support import hw_numerics_proof as P  # noqa: E402

from fuzzptx.oracles.reference import formats as F  # noqa: E402


class Bits(int):
    """An input given as raw bits (NaN payloads, tf32 low bits) instead of a value."""


def split(x: float, ta: str, tb: str) -> tuple[float, float] | None:
    """a, b with a*b == x exactly and both representable (powers of two and simple mantissas)."""
    if x == 0 or not math.isfinite(x):
        return (x, 1.0) if _rep(ta, x) and _rep(tb, 1.0) else None
    m, e = math.frexp(abs(x))
    mant = m * 2  # [1, 2)
    e -= 1
    for ea in sorted(range(e // 2 - 40, e // 2 + 41), key=lambda v: (abs(v - e // 2), v)):
        for a_m, b_m in ((mant, 1.0), (1.0, mant)):
            a = math.copysign(a_m * 2.0 ** ea, x)
            b = b_m * 2.0 ** (e - ea)
            if _rep(ta, a) and _rep(tb, b):
                return a, b
    return None


def _rep(t: str, v: float) -> bool:
    with np.errstate(over="ignore", invalid="ignore"):
        back = F.decode(t, F.encode(t, np.array([v])))[0]
    return bool(back == v or (math.isnan(v) and math.isnan(back)))


def probes(at: str, bt: str, dt: str, K: int) -> list[tuple[str, list, list, object]]:
    """(name, a[K], b[K], c) probe dot products for one type mix; None entries are zeros."""
    fp8 = at in ("e4m3", "e5m2")
    F_ = 13 if fp8 else 25
    out = []

    def add(name, products, c=0.0, positions=None):
        a, b = [0.0] * K, [0.0] * K
        pos = positions or list(range(len(products)))
        for k, p in zip(pos, products):
            if isinstance(p, tuple):
                a[k], b[k] = p
                continue
            ab = split(p, at, bt)
            if ab is None:
                return
            a[k], b[k] = ab
        if not isinstance(c, Bits) and not _rep(dt, c):
            return
        out.append((name, a, b, c))

    # alignment window: 1 + 2^-j - 1 (C = -1): the small term survives iff j <= window
    for j in range(F_ - 6, F_ + 4):
        add(f"align_pos_j{j}", [1.0, 2.0 ** -j], -1.0)
        add(f"align_neg_j{j}", [1.0, -(2.0 ** -j)], -1.0)  # sign-magnitude vs two's complement truncation
        add(f"align_c_j{j}", [1.0, -1.0], 2.0 ** -j)  # C as the small term
        add(f"align_3q_j{j}", [1.0, 3 * 2.0 ** -(j + 1)], -1.0)  # 1.5 * 2^-j: one bit past
    # a subnormal input's exponent is clamped: does the window move up (product 1 = 2^(emin-1) * 2^(1-emin))?
    fa0 = F.FLOATS[at]
    one_sub = (2.0 ** (fa0.emin - 1), 2.0 ** (1 - fa0.emin))
    if _rep(at, one_sub[0]) and _rep(bt, one_sub[1]):
        for j in (F_ - 2, F_ - 1, F_, F_ + 1):
            add(f"align_subnormal_j{j}", [one_sub, 2.0 ** -j], -1.0)
    # final rounding of the f32 / f16 / e8m13 result
    p = {"f32": 23 if not fp8 else 13, "f16": 10}[dt]
    for name, tail in (("half", [2.0 ** -(p + 1)]), ("above_half", [2.0 ** -(p + 1), 2.0 ** -(p + 3)]),
                       ("below_half", [2.0 ** -(p + 2)]), ("odd_half", [2.0 ** -p, 2.0 ** -(p + 1)])):
        add(f"round_{name}", [1.0] + tail, 0.0)
        add(f"round_{name}_neg", [-1.0] + [-t for t in tail], 0.0)
        add(f"round_{name}_c", tail, 1.0)
    # fused step size: big product at k=0 cancelled by C, small product at k=j
    big, small = (2.0 ** 6, 2.0 ** -9) if fp8 else (2.0 ** 10, 2.0 ** -17)
    for j in range(1, K):
        add(f"step_pos{j}", [big, small], -big, positions=[0, j])
    # does C join the fused sum or get added after the products?
    tiny = 2.0 ** -(F_ + 1)
    add("c_entry_many_tiny", [tiny] * min(K, 16), 1.0)
    add("c_entry_many_tiny_all", [tiny] * K, 1.0)
    add("c_entry_product_big", [1.0] + [tiny] * (min(K, 16) - 1), 0.0)
    # C's own low bits (fp8 with f32 D: does C keep 23 bits?)
    for j in (10, 12, 13, 14, 16, 20, 23):
        add(f"c_lowbits_j{j}", [], 1.0 + 2.0 ** -j)
        add(f"c_lowbits_plus1_j{j}", [1.0], 1.0 + 2.0 ** -j)
    # subnormal inputs and results
    fa, fb = F.FLOATS[at], F.FLOATS[bt]
    sub_a = 2.0 ** (fa.emin - fa.man_bits)
    add("subnormal_a_times_1", [(sub_a, 1.0)], 0.0)
    add("subnormal_a_times_2", [(sub_a, 2.0)], 0.0)
    add("subnormal_a_max", [((2.0 ** fa.emin) - sub_a, 1.0)], 0.0)
    sub_b = 2.0 ** (fb.emin - fb.man_bits)
    add("subnormal_ab", [(sub_a, sub_b)], 0.0)
    fd = F.FLOATS[dt]
    sub_d = 2.0 ** (fd.emin - fd.man_bits)
    add("subnormal_c", [], sub_d)
    add("subnormal_c_plus_1", [1.0], sub_d)
    for e in (fd.emin - 1, fd.emin - 5, fd.emin - fd.man_bits, fd.emin - fd.man_bits - 1):
        add(f"subnormal_out_2^{e}", [2.0 ** e], 0.0)
        add(f"subnormal_out_neg_2^{e}", [-(2.0 ** e)], 0.0)
        add(f"subnormal_out_sum_2^{e}", [2.0 ** (e + 1), -(2.0 ** e)], 0.0)
    # e_zero: does a zero product take part in alignment?
    add("ezero_f16_tie", [2.0 ** -25, 2.0 ** -47], 0.0)
    add("ezero_f16_tie_full", [2.0 ** -25, 2.0 ** -47] + [2.0 ** -60] * (K - 2), 0.0)
    add("ezero_f32", [-(2.0 ** -149), 2.0 ** -170], 0.0)
    add("ezero_f32_full", [-(2.0 ** -149), 2.0 ** -170] + [2.0 ** -200] * (K - 2), 0.0)
    # overflow
    big_v = {"f32": 2.0 ** 127, "f16": 2.0 ** 15}[dt]
    add("overflow_2x", [big_v, big_v], 0.0)
    add("overflow_c", [big_v], float(fd.max_finite))
    add("overflow_below_2^128", [float(fd.max_finite), 2.0 ** (fd.emax - fd.man_bits - 1)], 0.0)
    add("overflow_products_cancel", [2.0 ** 200, -(2.0 ** 200)], 1.0)
    add("overflow_products_cancel_f16", [2.0 ** 20, -(2.0 ** 20)], 1.0)
    add("f16_max_plus_half_ulp", [65504.0, 16.0], 0.0)
    add("f16_max_plus_less", [65504.0, 8.0], 0.0)
    # zeros and signs
    add("neg_zero_c_neg_zero_products", [(-0.0, 1.0)], -0.0)
    add("neg_zero_c_only", [], -0.0)
    add("exact_cancel", [1.0, -1.0], 0.0)
    add("neg_tiny_rz", [-1.0, 2.0 ** -30], 1.0)
    # specials
    inf = math.inf
    nan_a = Bits(F.special_values(at)["nan"])
    add("inf_times_zero", [(inf, 0.0)], 0.0) if fa.has_inf else None
    add("inf_minus_inf", [(inf, 1.0), (-inf, 1.0)], 0.0) if fa.has_inf else None
    add("inf_plus_finite", [(inf, 1.0), (1.0, 1.0)], 0.0) if fa.has_inf else None
    add("neg_inf", [(-inf, 1.0)], 0.0) if fa.has_inf else None
    add("inf_c_minus_inf", [(-inf, 1.0)], inf) if fa.has_inf else None
    add("c_inf", [(1.0, 1.0)], inf)
    add("c_neg_inf", [(1.0, 1.0)], -inf)
    add("c_nan", [(1.0, 1.0)], Bits(F.special_values(dt)["nan"]))
    add("a_nan", [(nan_a, 1.0)], 0.0)
    if "nan_other" in F.special_values(at):
        add("a_nan_other", [(Bits(F.special_values(at)["nan_other"]), 1.0)], 0.0)
    add("nan_times_zero", [(nan_a, 0.0)], 0.0)
    if at == "tf32":  # low 13 bits of tf32 inputs: ignored or rounded?
        add("tf32_lowbits", [(Bits(0x3F801FFF), 1.0)], 0.0)
        add("tf32_lowbits_half", [(Bits(0x3F801000), 1.0)], 0.0)
        add("tf32_lowbits_neg", [(Bits(0xBF801FFF), 1.0)], 0.0)
    return out


def _bits_of(t: str, v) -> int:
    if isinstance(v, Bits):
        return int(v)
    with np.errstate(over="ignore", invalid="ignore"):
        return int(F.encode(t, np.array([v]))[0])


def probe_launches(mix_forms: dict) -> list[tuple]:
    """(Kernel, [names], a, b, c) launches holding every mix's probes, 64 per launch."""
    out = []
    for _mix, forms in mix_forms.items():
        f = next(x for x in forms if x.shape.n == 64 and x.a_source == "desc")
        k = P.Kernel(f.key, 1)
        ps = probes(f.atype, f.btype, f.dtype, f.shape.k)
        for i in range(0, len(ps), 64):
            chunk = ps[i:i + 64]
            a = np.zeros((64, f.shape.k), np.uint32)
            b = np.zeros((f.shape.k, 64), np.uint32)
            c = np.zeros((64, 64), np.uint32)
            for r, (_, av, bv, cv) in enumerate(chunk):
                a[r] = [_bits_of(f.atype, x) for x in av]
                b[:, r] = [_bits_of(f.btype, x) for x in bv]
                c[r, r] = _bits_of(f.dtype, cv)
            out.append((k, [p[0] for p in chunk], a, b, c))
    return out


def exact_value(f, a, b, c) -> float:
    with np.errstate(invalid="ignore", over="ignore"):
        av, bv = F.decode(f.atype, a), F.decode(f.btype, b)
        return float(np.sum(av * bv) + F.decode(f.dtype, c))


def run(args) -> dict:
    from fuzzptx.oracles import mmasim_judge as MS

    launches = probe_launches(P.mixes())
    kernels = sorted({k for k, *_ in launches}, key=lambda k: k.key)
    index = {k: i for i, k in enumerate(kernels)}
    gpu = None
    if not args.dry_run:
        progs, cubins = P.compile_kernels(kernels)
        gpu = P.Gpu()
        for i, (cb, name) in enumerate(cubins):
            gpu.load(i, cb, name)
    sim_ok = args.mmasim and MS.available() is None
    rec = {"device": P.device_info(gpu) if gpu else None, "versions": P.versions(),
           "mmasim": (MS.available() or "ok") if args.mmasim else "not asked", "probes": [], "mixes": {}}
    for k, names, a, b, c in launches:
        f = k.form
        ref = P.model(k, a, b, c)
        if gpu:
            prog = progs[index[k]]
            hw = P.decode_d(k, gpu.run(index[k], prog, P.encode_buffers(k, prog, a, b, c)))
        else:
            hw = ref
        sim = MS.wgmma(f.atype, f.btype, f.dtype, a, b, c, k_step=f.shape.k) if sim_ok else None
        mix = k.mix()
        st = rec["mixes"].setdefault(mix, {"probes": 0, "probe_mismatches": 0, "all_elements": 0,
                                           "all_element_mismatches": 0, "mmasim_vs_hw": 0})
        st["all_elements"] += int(hw.size)
        st["all_element_mismatches"] += int((hw != ref).sum())
        if sim is not None:
            st["mmasim_vs_hw"] += int((sim != hw).sum())
        for r, name in enumerate(names):
            st["probes"] += 1
            st["probe_mismatches"] += int(hw[r, r] != ref[r, r])
            row = {"mix": mix, "probe": name, "c": hex(int(c[r, r])),
                   "a": [hex(int(x)) for x in a[r]], "b": [hex(int(x)) for x in b[:, r]],
                   "exact": repr(exact_value(f, a[r], b[:, r], c[r, r])),
                   "hw": hex(int(hw[r, r])), "hw_value": repr(float(F.decode(f.dtype, hw[r, r]))),
                   "model": hex(int(ref[r, r]))}
            if sim is not None:
                row["mmasim"] = hex(int(sim[r, r]))
            rec["probes"].append(row)
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--mmasim", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    rec = run(args)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(rec, fh, indent=1)
    for mix, st in rec["mixes"].items():
        print(mix, json.dumps(st))
    bad = [p for p in rec["probes"] if p["hw"] != p["model"]]
    print(f"{len(rec['probes'])} probes, {len(bad)} differ from the model")
    for p in bad[:40]:
        print(" ", p["mix"], p["probe"], "hw", p["hw"], "model", p["model"], "exact", p["exact"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
