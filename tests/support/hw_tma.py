"""Reference vs an H100 on mbarrier / bulk-copy / elect / setmaxnreg kernels (issue 27).

Each legal shape runs with fresh random inputs (seeds from the clock, recorded): a single bulk
copy ordered by expect_tx before or after it; a ring of two stages over several K tiles whose
waits flip parity; every thread arriving and waiting on its state token (try_wait and
test_wait); elect.sync's leader lane and predicate per thread; setmaxnreg in a two-warpgroup
kernel; three drawn mainloops (strategies/mainloops.py: 1-4 stages, 5-8 tiles, 1-3 warpgroups,
every thread arriving, setmaxnreg), when hypothesis is importable.  Outputs are compared with ``compare`` (the reference's allowed values).

    PYTHONPATH=/tmp/pkg python tests/support/hw_tma.py --out $OUT/tma_h100.json [--dry-run]

``--tensor`` runs the tensor-map kernels instead (strategies/tensor_copies.py; maps encoded by the
driver's cuTensorMapEncodeTiled in the worker): a fixed grid of forms (every swizzle with 1-, 2-, 4-
and 8-byte elements, ranks 1-3, boxes overhanging both edges, zero and NaN fill, loads then TMA
stores, integer add/min/max reductions, a box row narrower than its swizzle span, an element stride
of 2) over fresh data, plus drawn plans, and records which forms ran and the NaN fill's bits:

    PYTHONPATH=/tmp/pkg python tests/support/hw_tma.py --tensor --out $OUT/tma_tensor_h100.json

``--tensor --reexamine RECORD`` judges such a record again with the current reference (no GPU).

``--cluster`` runs clusters and multicast (``CLUSTER_HAND``: hand kernels in a cluster of one judged
against the reference, probes of what it refuses, clusters of two CTAs checked by hand; tensor plans
in both cluster forms of strategies/tensor_copies.py), and ``--cluster --reexamine RECORD`` judges
such a record again from the programs and outputs it keeps:

    PYTHONPATH=/tmp/pkg python tests/support/hw_tma.py --cluster --out $OUT/tma_cluster_h100.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
import time

from fuzzptx.oracles.hardware import run_programs_on_gpu
from fuzzptx.oracles.ptxas import compile_ptx, ptxas_version
from fuzzptx.oracles.reference import compare, run_program
from fuzzptx.program import Buffer, Launch, Program
from fuzzptx.ptx.emit import emit
from fuzzptx.ptx.parse import parse

HEAD = """.version 8.4
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 o, .param .u64 o2)
.reqntid {ntid}
{{
	.reg .pred 	%p<8>;
	.reg .b32 	%r<40>;
	.reg .b64 	%rd<12>;
	.shared .align 128 .b8 buf[{smem}];
	.shared .align 8 .b64 bar[2];
	ld.param.u64 	%rd1, [a];
	ld.param.u64 	%rd2, [o];
	ld.param.u64 	%rd3, [o2];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, buf;
	mov.u32 	%r3, bar;
	add.s32 	%r9, %r3, 8;
	shr.u32 	%r4, %r1, 5;
	setp.eq.u32 	%p1, %r4, 0;
	elect.sync 	%r5|%p2, -1;
	and.pred 	%p3, %p1, %p2;
	shl.b32 	%r6, %r1, 2;
	cvt.u64.u32 	%rd4, %r6;
	add.s64 	%rd5, %rd2, %rd4;
	add.s64 	%rd6, %rd3, %rd4;
"""
TAIL = "\tret;\n}\n"
WAIT = """W{n}:
	mbarrier.try_wait.parity.shared::cta.b64 	%p4, [{bar}], {parity};
	@!%p4 bra 	W{n};
"""


def _init(count: int, both: bool = False) -> str:
    s = f"\t@%p3 mbarrier.init.shared::cta.b64 	[%r3], {count};\n"
    if both:
        s += f"\t@%p3 mbarrier.init.shared::cta.b64 	[%r9], {count};\n"
    return s + "\tfence.mbarrier_init.release.cluster;\n\tbar.sync 	0;\n"


def single_copy(copy_first: bool) -> str:
    copy = "\t@%p3 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[%r2], [%rd1], 512, [%r3];\n"
    expect = "\t@%p3 mbarrier.arrive.expect_tx.shared::cta.b64 	_, [%r3], 512;\n"
    body = _init(1) + (copy + expect if copy_first else expect + copy) + WAIT.format(n=0, bar="%r3", parity=0)
    body += "\tadd.s32 	%r7, %r2, %r6;\n\tld.shared.u32 	%r8, [%r7];\n\tst.global.u32 	[%rd5], %r8;\n"
    body += "\tst.global.u32 	[%rd6], %r5;\n\tbar.sync 	0;\n\t@%p3 mbarrier.inval.shared::cta.b64 	[%r3];\n"
    return HEAD.format(ntid=128, smem=512) + body + TAIL


def ring(tiles: int) -> str:
    """Two stages, ``tiles`` K tiles of 512 bytes: tile i lands in stage i % 2 under bar[i % 2]
    and is waited for with parity (i // 2) % 2; each thread sums word tid of every tile."""
    body = _init(1, both=True) + "\tmov.u32 	%r20, 0;\n"
    for i in range(tiles):
        b = "%r3" if i % 2 == 0 else "%r9"
        dst = f"%r2+{512 * (i % 2)}" if i % 2 else "%r2"
        body += f"\t@%p3 mbarrier.arrive.expect_tx.shared::cta.b64 	_, [{b}], 512;\n"
        body += (f"\tadd.s64 	%rd7, %rd1, {512 * i};\n"
                 f"\t@%p3 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[{dst}], [%rd7], 512, [{b}];\n")
        body += WAIT.format(n=i, bar=b, parity=(i // 2) % 2)
        body += (f"\tadd.s32 	%r7, %r2, %r6;\n\tld.shared.u32 	%r8, [%r7+{512 * (i % 2)}];\n"
                 "\tadd.s32 	%r20, %r20, %r8;\n\tbar.sync 	0;\n")
    body += "\tst.global.u32 	[%rd5], %r20;\n\tst.global.u32 	[%rd6], %r5;\n"
    return HEAD.format(ntid=128, smem=1024) + body + TAIL


def every_thread() -> str:
    """128 expected arrivals, each thread arrives and waits on its token, then test_wait again."""
    body = _init(128) + "\tmbarrier.arrive.shared::cta.b64 	%rd8, [%r3];\n"
    body += ("T0:\n\tmbarrier.try_wait.shared::cta.b64 	%p5, [%r3], %rd8;\n\t@!%p5 bra 	T0;\n"
             "\tmbarrier.test_wait.shared::cta.b64 	%p6, [%r3], %rd8;\n"
             "\tselp.u32 	%r10, 1, 0, %p6;\n\tst.global.u32 	[%rd5], %r10;\n"
             "\tselp.u32 	%r11, 1, 0, %p2;\n\tst.global.u32 	[%rd6], %r11;\n")
    return HEAD.format(ntid=128, smem=16) + body + TAIL


def setmaxnreg() -> str:
    """Two warpgroups: the first gives registers up, the second takes more; then a copy as above."""
    body = ("\tshr.u32 	%r12, %r1, 7;\n\tsetp.eq.u32 	%p7, %r12, 0;\n\t@!%p7 bra 	HI;\n"
            "\tsetmaxnreg.dec.sync.aligned.u32 	40;\n\tbra.uni 	GO;\nHI:\n\tsetmaxnreg.inc.sync.aligned.u32 	232;\nGO:\n")
    body += _init(1) + "\t@%p3 mbarrier.arrive.expect_tx.shared::cta.b64 	_, [%r3], 1024;\n"
    body += "\t@%p3 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes 	[%r2], [%rd1], 1024, [%r3];\n"
    body += WAIT.format(n=0, bar="%r3", parity=0)
    body += "\tadd.s32 	%r7, %r2, %r6;\n\tld.shared.u32 	%r8, [%r7];\n\tst.global.u32 	[%rd5], %r8;\n"
    body += "\tst.global.u32 	[%rd6], %r5;\n"
    return HEAD.format(ntid=256, smem=1024) + body + TAIL


try:  # the drawn mainloops (strategies need hypothesis, which a bare device may lack)
    from fuzzptx.strategies.mainloops import MainloopPlan, kernel_text
    from fuzzptx.strategies import tensor_copies as tc
except ImportError:  # pragma: no cover - recorded in the JSON as skipped
    MainloopPlan = kernel_text = tc = None

SHAPES = {
    "expect-then-copy": (lambda: single_copy(False), 128, 128),
    "copy-then-expect": (lambda: single_copy(True), 128, 128),
    "ring-2-stages-6-tiles": (lambda: ring(6), 128, 6 * 128),
    "every-thread-arrives-token-wait": (every_thread, 128, 128),
    "setmaxnreg-two-warpgroups": (setmaxnreg, 256, 256),
}


if kernel_text is not None:
    for _n, _s, _k, _cf, _all, _regs in ((384, 4, 8, False, True, True), (256, 3, 7, True, False, True),
                                           (128, 1, 5, True, True, False)):
        SHAPES[f"mainloop-{_n}t-{_s}s-{_k}k{'-all' if _all else ''}{'-setmaxnreg' if _regs else ''}"] = (
            lambda n=_n, s=_s, k=_k, cf=_cf, a=_all, r=_regs: kernel_text(MainloopPlan(n, s, k, cf, a, r, 0)), _n, _n * _k)


def programs(seed: int):
    out = []
    for name, (make, ntid, words) in SHAPES.items():
        module = parse(make(), f"{name}.ptx")
        bufs = (Buffer("a", "u32", words, "random", seed), Buffer("o", "u32", ntid, "zeros", output=True),
                Buffer("o2", "u32", ntid, "zeros", output=True))
        out.append((name, Program(module, Launch("k", (1, 1, 1), (ntid, 1, 1)), bufs, ())))
    return out


# ---------------------------------------------------------------- tensor maps (--tensor)

_EB = {"u8": 1, "u16": 2, "f16": 2, "bf16": 2, "u32": 4, "s32": 4, "f32": 4, "u64": 8, "f64": 8}


def _map(etype: str, swizzle: str, rank: int, inner: int, rows: tuple[int, ...], over: tuple[int, ...],
         oob: str = "zero", estrides: tuple[int, ...] = ()):
    """A map whose box has an inner row of ``inner`` bytes and ``rows`` in the outer dimensions, over a
    tensor ``over`` elements (dim 0: bytes // eb extra) larger or smaller than the box."""
    from fuzzptx.program import TensorMap
    eb = _EB[etype]
    box = (inner // eb,) + rows[:rank - 1]
    dims = tuple(max(1, b + o) for b, o in zip(box, over))
    strides, row = [], -(-dims[0] * eb // 16) * 16 + 16
    for k in range(1, rank):
        strides.append(row)
        row *= dims[k]
    return TensorMap("tm", "g", etype, dims, tuple(strides), box, estrides, 0, "none", swizzle, "128B", oob)


def tensor_grid() -> list[tuple[str, object]]:
    """(form name, CopyPlan): the fixed forms every run covers."""
    out = []
    span = {"none": 64, "32B": 32, "64B": 64, "128B": 128}
    for sw in ("none", "32B", "64B", "128B"):
        for et in ("u8", "f16", "u32", "f64"):
            for rank, rows, over in ((1, (), (5,)), (2, (8,), (3, -3)), (3, (4, 3), (-2, 1, -1))):
                tm = _map(et, sw, rank, span[sw], rows, over)
                b, eb = tm.box, tm.element_bytes
                lo = tuple(-(x // 2) for x in b)  # overhangs the low edges
                hi = tuple(d - x // 2 for d, x in zip(tm.dims, b))  # ... and the high ones
                lo, hi = (tc.aligned(lo[0], eb),) + lo[1:], (tc.aligned(hi[0], eb),) + hi[1:]
                out.append((f"load-store-{et}-{sw}-{rank}d", tc.CopyPlan(128, tm, ((0,) * rank, lo, hi), hi, None,
                                                                          True, 0x9E3779B9, 0)))
        if sw != "none":  # a box row narrower than the span: padded to it (TensorMap.smem_row_bytes)
            for et in ("u8", "f16", "f32"):
                tm = _map(et, sw, 2, 16 if sw == "32B" else span[sw] // 2, (6,), (24, -1))
                q = 16 // tm.element_bytes
                out.append((f"inner-row-under-span-{et}-{sw}", tc.CopyPlan(
                    128, tm, ((q, 0), (-q, 2), (0, -2)), (q, 1), None, False, 0x1234567, 0)))
    for et in ("f16", "bf16", "f32", "f64"):
        tm = _map(et, "128B", 2, 128, (4,), (-5, -1), oob="nan")
        q = 16 // tm.element_bytes
        out.append((f"nan-fill-{et}-128B", tc.CopyPlan(256, tm, ((-q, -1), (q, 1)), (q, 0), None, True, 0x55, 0)))
    for et, red in (("u32", "add"), ("s32", "min"), ("s32", "max"), ("u64", "add")):
        tm = _map(et, "64B", 2, 64, (4,), (3, 2))
        q = 16 // tm.element_bytes
        out.append((f"reduce-{red}-{et}", tc.CopyPlan(128, tm, ((q, 1),), (-q, -1), red, False, 0xF0F0F0F, 0)))
        out.append((f"reduce-inside-{red}-{et}", tc.CopyPlan(128, tm, ((q, 1),), (q, 3), red, False, 0xF0F0F0F, 0)))
    for et in ("u32", "f16"):  # a store at a negative coordinate: the reference says fault
        tm = _map(et, "none", 2, 32, (4,), (8, 0))
        out.append((f"negative-store-coordinate-{et}", tc.CopyPlan(128, tm, ((0, 0),), (0, -1), None, True, 1, 0)))
    tm = _map("u32", "none", 2, 32, (6,), (0, 4), estrides=(1, 2))
    out.append(("estride-2-u32", tc.CopyPlan(128, tm, ((0, 1),), None, None, True, 1, 0)))
    for et in ("u8", "f16", "u32", "f64"):  # a misaligned innermost coordinate: the reference says fault
        tm = _map(et, "none", 2, 32, (4,), (8, 0))
        out.append((f"misaligned-coordinate-{et}", tc.CopyPlan(128, tm, ((1, 0),), None, None, True, 1, 0)))
    return out


def drawn_plans(n: int, seed: int) -> list:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    plans = []

    @hseed(seed)
    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(tc.copy_plans())
    def collect(plan):
        plans.append(plan)

    collect()
    return plans[:n]


def _forms(plan) -> list[str]:
    tm = plan.tmap
    f = [f"swizzle={tm.swizzle}", f"rank={tm.rank}", f"type={tm.type}", f"oob={tm.oob}"]
    if any(plan.inside_bytes(c) < plan.box_bytes for c in plan.loads):
        f.append("load overhangs the tensor")
    if plan.store is not None:
        f.append("store" + (" overhangs" if plan.inside_bytes(plan.store) < plan.box_bytes else ""))
        f.append("wait_group.read" if plan.wait_read else "wait_group")
    if plan.reduce:
        f.append(f"reduce.{plan.reduce}")
    if tm.swizzle != "none" and tm.box[0] * tm.element_bytes < tc.SPAN[tm.swizzle]:
        f.append("inner row < swizzle span")
    if any(e != 1 for e in tm.element_strides):
        f.append("element stride > 1")
    return f


def _nan_bits(plan, program, ref, hw_out: bytes) -> list[str]:
    """The hardware's bits where the reference put its NaN fill."""
    import numpy as np
    from fuzzptx.oracles.reference.tma import NAN_FILL
    if plan.tmap.oob != "nan":
        return []
    eb = plan.tmap.element_bytes
    dt = {2: np.uint16, 4: np.uint32, 8: np.uint64}[eb]
    want = np.frombuffer(ref.bytes("o"), dt)
    got = np.frombuffer(hw_out, dt)
    at = want == NAN_FILL[eb]
    return sorted({f"{int(v):#x}" for v in got[at]})


STRUCT_PROBE = r"""struct __align__(64) S { unsigned long long w[16]; };
extern "C" __global__ void k(int a, S s, unsigned long long* o) { o[threadIdx.x] = s.w[threadIdx.x] + a; }"""


def cupy_struct_probe() -> str:
    """Whether CuPy passes a 128-byte, 64-aligned struct by value (how the worker passes tensor maps)."""
    try:
        import cupy
        import numpy as np
        o = cupy.zeros(16, cupy.uint64)
        v = np.frombuffer(np.arange(16, dtype=np.uint64).tobytes(), dtype=np.dtype([("words", "<u8", (16,))]))[0]
        cupy.RawKernel(STRUCT_PROBE, "k")((1,), (16,), (np.int32(100), v, o))
        got = cupy.asnumpy(o).tolist()
        return "ok" if got == list(range(100, 116)) else f"wrong bytes: {got}"
    except Exception as exc:  # recorded, not raised: the record says what failed
        return f"{type(exc).__name__}: {exc}"[:300]


def _judge(named: list[tuple[str, Program]], dry_run: bool) -> tuple[list, list, list, dict]:
    """Each program through ptxas (the rejected ones with their stderr), the reference (its result,
    or the text of why it refused the form) and the GPU (None each in a dry run)."""
    rejected, refs = [], []
    for name, p in named:
        res = compile_ptx(p.to_ptx())
        if not res.accepted:
            rejected.append({"case": name, "stderr": res.stderr[:400]})
    for _, p in named:
        try:
            refs.append(run_program(p))
        except Exception as exc:  # recorded: a form the reference refuses
            refs.append(f"{type(exc).__name__}: {exc}")
    if dry_run:
        return rejected, refs, [None] * len(named), {"dry_run": True}
    hw, info = run_programs_on_gpu([(p, None, None) for _, p in named])
    return rejected, refs, hw, info


def tensor_main(args) -> int:
    import dataclasses
    from collections import Counter
    base = int(time.time())
    cases = []
    for r in range(args.rounds):
        for name, plan in tensor_grid():
            cases.append((name, dataclasses.replace(plan, seed=base + r)))
    for i, plan in enumerate(drawn_plans(args.drawn, base)):
        cases.append((f"drawn-{i}", dataclasses.replace(plan, seed=base + 1000 + i)))
    progs = [tc.render(plan) for _, plan in cases]
    rejected, refs, hw, info = _judge([(name, p) for (name, _), p in zip(cases, progs)], args.dry_run)
    rows, forms, mism_forms = [], Counter(), Counter()
    mismatched = faults = unsupported = predicted_faults = unexplained = 0
    nan_bits: set[str] = set()
    for (name, plan), p, ref, h in zip(cases, progs, refs, hw):
        fault = h.fault if h is not None else None
        ref_fault = isinstance(ref, str) and ref.startswith("BadAddress")
        if isinstance(ref, str):
            unsupported += not ref_fault
            mm = []
        else:
            mm = [] if h is None or fault else compare(p, ref, h.outputs)
            if h is not None and not fault:
                nan_bits.update(_nan_bits(plan, p, ref, h.outputs["o"]))
        faults += fault is not None
        predicted_faults += ref_fault and fault is not None
        mismatched += bool(mm)
        # a disagreement: outputs differ, the GPU faults where the reference ran, or runs where it said fault
        bad = bool(mm) or (fault is not None and not ref_fault) or (h is not None and ref_fault and fault is None)
        unexplained += bad
        for f in _forms(plan):
            forms[f] += 1
            mism_forms[f] += bad
        rows.append({"case": name, "seed": plan.seed, "map": p.tensormaps[0].header_line(), "forms": _forms(plan),
                     "plan": {"ntid": plan.ntid, "loads": plan.loads, "store": plan.store, "reduce": plan.reduce,
                              "wait_read": plan.wait_read, "xor": plan.xor},
                     "fault": fault, "reference": ref if isinstance(ref, str) else (ref.undefined or "ran"),
                     "mismatches": [str(x) for x in mm[:6]]})
    record = {
        "what": "issue 27: reference vs H100 on tensor-map (TMA) loads, stores and reductions",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "PYTHONPATH=/tmp/pkg python tests/support/hw_tma.py --tensor --out $OUT/tma_tensor_h100.json",
        "device": info, "ptxas": ptxas_version(), "python": platform.python_version(),
        "runs": len(cases), "rejected_by_ptxas": rejected, "reference_refused": unsupported,
        "faults": faults, "faults_the_reference_predicted": predicted_faults, "programs_with_mismatches": mismatched,
        "disagreements": unexplained,
        "forms": dict(sorted(forms.items())), "forms_with_disagreements": {k: v for k, v in sorted(mism_forms.items()) if v},
        "nan_fill_bits_seen": sorted(nan_bits),
        "cupy_struct_by_value": "dry run" if args.dry_run else cupy_struct_probe(), "results": rows,
    }
    with open(args.out, "w") as fh:
        json.dump(record, fh, indent=1)
    print(json.dumps({k: record[k] for k in ("device", "runs", "faults", "faults_the_reference_predicted",
                                             "programs_with_mismatches", "disagreements", "reference_refused",
                                             "forms_with_disagreements", "nan_fill_bits_seen")}))
    print(json.dumps([r for r in rows if r["mismatches"] or (r["fault"] and not r["reference"].startswith("BadAddress"))][:12]))
    return 0 if not (unexplained or rejected or unsupported) else 1


def reexamine(args) -> int:
    """Judge a recorded ``--tensor`` run again with the current reference: its programs are rebuilt
    from the record (grid rows by name and seed, drawn rows by the hypothesis seed; each rebuilt map
    must equal the recorded one), and every recorded fault and listed mismatch is checked: a fault
    the reference now predicts, or a mismatching element the reference now leaves undefined, is
    explained.  Only the record's listed mismatches (at most 6 a program) can be checked: the GPU's
    full outputs were not kept."""
    import dataclasses
    import re
    from fuzzptx.oracles.reference.values import UNDEF
    with open(args.reexamine) as fh:
        rec = json.load(fh)
    grid_of, drawn_of, render = tensor_grid, drawn_plans, tc.render
    if args.code_at:  # the grid and the strategy as they were when the record was made
        import subprocess
        import types
        root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                              check=True).stdout.strip()

        def source(path: str) -> str:
            return subprocess.run(["git", "show", f"{args.code_at}:{path}"], capture_output=True, text=True,
                                  check=True, cwd=root).stdout

        old_tc = sys.modules["tensor_copies_at"] = types.ModuleType("tensor_copies_at")  # dataclasses look it up
        exec(compile(source("strategies/tensor_copies.py"), f"tensor_copies.py@{args.code_at}", "exec"), old_tc.__dict__)
        old_hw = sys.modules["hw_tma_at"] = types.ModuleType("hw_tma_at")
        exec(compile(source("tests/support/hw_tma.py"), f"hw_tma.py@{args.code_at}", "exec"), old_hw.__dict__)
        ns = old_hw.__dict__
        ns["tc"] = old_tc
        grid_of, drawn_of, render = ns["tensor_grid"], ns["drawn_plans"], old_tc.render
    grid = dict(grid_of())
    drawn_rows = [r for r in rec["results"] if r["case"].startswith("drawn-")]
    drawn = drawn_of(len(drawn_rows), drawn_rows[0]["seed"] - 1000) if drawn_rows else []
    rows, counts = [], {"rows": 0, "rebuilt": 0, "faults_predicted": 0, "fault_not_predicted": 0,
                        "predicted_fault_did_not_happen": 0, "listed_mismatches": 0,
                        "listed_mismatches_now_undefined": 0, "listed_mismatches_with_the_spill_bits": 0}
    for r in rec["results"]:
        counts["rows"] += 1
        if "plan" in r:  # recorded with the run
            base = grid.get(r["case"]) or drawn[int(r["case"].split("-")[1])] if r["case"].startswith("drawn-") \
                else grid.get(r["case"])
            if base is None:
                rows.append({"case": r["case"], "verdict": "not rebuilt (form no longer in the grid)"})
                continue
            pl = r["plan"]
            plan = dataclasses.replace(base, ntid=pl["ntid"], loads=tuple(map(tuple, pl["loads"])), reduce=pl["reduce"],
                                       store=tuple(pl["store"]) if pl["store"] is not None else None,
                                       wait_read=pl["wait_read"], xor=pl["xor"])
        elif r["case"].startswith("drawn-"):
            plan = drawn[int(r["case"].split("-")[1])]
        elif r["case"] in grid:
            plan = grid[r["case"]]
        else:
            rows.append({"case": r["case"], "verdict": "not rebuilt (form no longer in the grid)"})
            continue
        plan = dataclasses.replace(plan, seed=r["seed"])
        prog = render(plan)
        if prog.tensormaps[0].header_line() != r["map"]:
            rows.append({"case": r["case"], "verdict": "not rebuilt (map differs)"})
            continue
        counts["rebuilt"] += 1
        try:
            ref, ref_err = run_program(prog), None
        except Exception as exc:  # BadAddress: the reference predicts a fault
            ref, ref_err = None, f"{type(exc).__name__}: {exc}"
        fault = r["fault"]
        predicted = ref_err is not None and ref_err.startswith("BadAddress")
        verdict = "clean"
        if fault and predicted:
            counts["faults_predicted"] += 1
            verdict = "fault predicted"
        elif fault:
            counts["fault_not_predicted"] += 1
            verdict = f"fault not predicted ({ref_err or 'reference ran'})"
        elif ref_err:
            counts["predicted_fault_did_not_happen"] += 1
            verdict = f"reference says {ref_err[:120]}; the GPU ran it"
        else:
            for m in r["mismatches"]:
                mm = re.match(r"(\w+)\[(\d+)\]: expected .*observed .*\((0x[0-9a-f]+)\)$", m)
                buf, i, seen = mm.group(1), int(mm.group(2)), int(mm.group(3), 16)
                out = ref.outputs[buf]
                eb = len(out.data) // out.count
                counts["listed_mismatches"] += 1
                counts["listed_mismatches_now_undefined"] += bool(out.kind[i] == UNDEF)
                counts["listed_mismatches_with_the_spill_bits"] += int.from_bytes(out.data[i * eb:(i + 1) * eb], "little") == seen
            if r["mismatches"]:
                verdict = "mismatches explained" if all(
                    ref.outputs[re.match(r"(\w+)\[", m).group(1)].kind[int(re.search(r"\[(\d+)\]", m).group(1))] == UNDEF
                    for m in r["mismatches"]) else "mismatches NOT explained"
        rows.append({"case": r["case"], "verdict": verdict, "notes": list(ref.notes) if ref is not None else []})
    unexplained = counts["fault_not_predicted"] + counts["predicted_fault_did_not_happen"] + \
        counts["listed_mismatches"] - counts["listed_mismatches_now_undefined"]
    record = {
        "what": "a recorded --tensor H100 run judged again by the current reference (no GPU)",
        "record": args.reexamine, "code_at": args.code_at, "recorded_date": rec["date"],
        "recorded_device": rec["device"],
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": f"python tests/support/hw_tma.py --tensor --reexamine {args.reexamine}"
                   + (f" --code-at {args.code_at}" if args.code_at else "") + f" --out {args.out}",
        **counts, "unexplained": unexplained,
        "verdicts": {v: sum(1 for x in rows if x["verdict"] == v) for v in sorted({x["verdict"] for x in rows})},
        "results": rows,
    }
    with open(args.out, "w") as fh:
        json.dump(record, fh, indent=1)
    print(json.dumps({k: record[k] for k in list(counts) + ["unexplained", "verdicts"]}))
    return 0 if unexplained == 0 else 1


# ---------------------------------------------------------------- clusters and multicast (--cluster)

# One kernel shape for the hand-written cluster programs: rank 0's elected thread multicasts 512 bytes
# of ``a`` (a bulk copy, ``mask``) to the CTAs of its cluster, each CTA waits on its own barrier (at most
# ``SPIN`` test_waits, so a copy that never lands cannot hang the GPU), reads its buffer through the
# ``.shared::cluster`` address of CTA ``peer`` (mapa) and writes it to o[ctaid.x * 128 + tid]; o2 gets
# 16 words per thread: the cluster registers, mapa's results and whether the wait completed.
CLUSTER_HEAD = """.version 8.4
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 o, .param .u64 o2)
.reqntid 128
{directives}{{
	.reg .pred 	%p<10>;
	.reg .b16 	%rs<4>;
	.reg .b32 	%r<64>;
	.reg .b64 	%rd<20>;
	.shared .align 128 .b8 buf[512];
	.shared .align 8 .b64 bar;
	ld.param.u64 	%rd1, [a];
	ld.param.u64 	%rd2, [o];
	ld.param.u64 	%rd3, [o2];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, buf;
	mov.u32 	%r3, bar;
	shr.u32 	%r4, %r1, 5;
	setp.eq.u32 	%p1, %r4, 0;
	elect.sync 	%r5|%p2, -1;
	and.pred 	%p3, %p1, %p2;
	mov.u32 	%r10, %cluster_ctarank;
	mov.u32 	%r40, %ctaid.x;
	setp.eq.u32 	%p7, %r10, 0;
	and.pred 	%p8, %p3, %p7;
	{peer}
	@%p3 mbarrier.init.shared::cta.b64 	[%r3], 1;
	fence.mbarrier_init.release.cluster;
	barrier.cluster.arrive.relaxed.aligned;
	barrier.cluster.wait.aligned;
	@%p3 mbarrier.arrive.expect_tx.shared::cta.b64 	_, [%r3], 512;
	mov.u16 	%rs1, {mask};
	@%p8 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster 	[%r2], [%rd1], 512, [%r3], %rs1;
	mov.u32 	%r30, 0;
SPIN:
	mbarrier.test_wait.parity.shared::cta.b64 	%p4, [%r3], 0;
	@%p4 bra 	DONE;
	add.u32 	%r30, %r30, 1;
	setp.lt.u32 	%p6, %r30, {spin};
	@%p6 bra 	SPIN;
DONE:
	selp.u32 	%r31, 1, 0, %p4;
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	shl.b32 	%r6, %r1, 2;
	mapa.shared::cluster.u32 	%r7, %r2, %r12;
	add.s32 	%r8, %r7, %r6;
	{load}
	mad.lo.u32 	%r41, %r40, 128, %r1;
	mul.wide.u32 	%rd4, %r41, 4;
	add.s64 	%rd5, %rd2, %rd4;
	st.global.u32 	[%rd5], %r9;
	mapa.shared::cluster.u32 	%r11, %r2, %r10;
	cvt.u64.u32 	%rd9, %r2;
	cvta.shared.u64 	%rd10, %rd9;
	mapa.u64 	%rd11, %rd10, %r12;
	cvt.u64.u32 	%rd12, %r6;
	add.s64 	%rd13, %rd11, %rd12;
	{gload}
	sub.s64 	%rd14, %rd11, %rd10;
	mov.b64 	{{%r43, %r44}}, %rd14;
	mov.u32 	%r13, %cluster_nctarank;
	mov.u32 	%r14, %clusterid.x;
	mov.u32 	%r15, %cluster_ctaid.x;
	mov.u32 	%r16, %cluster_nctaid.x;
	mov.pred 	%p5, %is_explicit_cluster;
	selp.u32 	%r17, 1, 0, %p5;
	mov.u32 	%r18, %nclusterid.x;
	mov.u32 	%r19, %cluster_ctaid.y;
	mov.u32 	%r20, %cluster_nctaid.y;
	mov.u32 	%r21, %nclusterid.y;
	mul.wide.u32 	%rd6, %r41, 64;
	add.s64 	%rd7, %rd3, %rd6;
	st.global.v4.u32 	[%rd7], {{%r10, %r13, %r14, %r15}};
	st.global.v4.u32 	[%rd7+16], {{%r16, %r17, %r18, %r11}};
	st.global.v4.u32 	[%rd7+32], {{%r31, %r7, %r19, %r20}};
	st.global.v4.u32 	[%rd7+48], {{%r42, %r43, %r44, %r21}};
	barrier.cluster.arrive.release.aligned;
	barrier.cluster.wait.acquire.aligned;
	ret;
}}
"""
SPIN = 200000
RC11 = ".reqnctapercluster 1, 1, 1\n"
SAME = "mov.u32 \t%r12, %r10;"  # mapa to the own rank
OTHER = "xor.b32 \t%r12, %r10, 1;"  # mapa to rank ^ 1 (the other CTA of a pair; outside a cluster of one)

# name -> (directives, mask, peer, grid, what, loads through mapa's addresses): "judged" rows are compared with the reference; "probe"
# rows ask the H100 what the reference refuses; "hand" rows (clusters of two CTAs, which the reference
# refuses) are checked against what the ISA says (``_hand_check``)
CLUSTER_HAND = {
    "cluster1-explicit": (RC11, 1, SAME, 1, "judged"),
    "cluster1-explicitcluster-directive": (".explicitcluster\n" + RC11, 1, SAME, 1, "judged"),
    "cluster1-implicit": ("", 1, SAME, 1, "judged"),
    "cluster1-mask-0x3": (RC11, 3, SAME, 1, "probe"),
    "cluster1-mask-0x2": (RC11, 2, SAME, 1, "probe"),
    "cluster1-mask-0x0": (RC11, 0, SAME, 1, "probe"),
    "cluster1-mask-0xffff": (RC11, 0xFFFF, SAME, 1, "probe"),
    "cluster1-mapa-rank1-value": (RC11, 1, OTHER, 1, "probe", False),
    "cluster1-mapa-rank1-load": (RC11, 1, OTHER, 1, "probe"),
    "explicitcluster-without-dims": (".explicitcluster\n", 1, SAME, 1, "probe"),
    "cluster2-multicast-dsmem": (".reqnctapercluster 2, 1, 1\n", 3, OTHER, 2, "hand"),
    "cluster2-multicast-grid4": (".reqnctapercluster 2, 1, 1\n", 3, OTHER, 4, "hand"),
    "cluster2-grid3": (".reqnctapercluster 2, 1, 1\n", 3, OTHER, 3, "probe"),
}


def cluster_hand_program(name: str, seed: int) -> Program:
    directives, mask, peer, grid, _, *deref = CLUSTER_HAND[name]
    load = ("ld.shared::cluster.u32 \t%r9, [%r8];", "ld.u32 \t%r42, [%rd13];") if deref in ([], [True]) else \
        ("mov.u32 \t%r9, 0;", "mov.u32 \t%r42, 0;")
    text = CLUSTER_HEAD.format(directives=directives, mask=mask, peer=peer, spin=SPIN, load=load[0], gload=load[1])
    bufs = (Buffer("a", "u32", 128, "random", seed), Buffer("o", "u32", 128 * grid, "zeros", output=True),
            Buffer("o2", "u32", 16 * 128 * grid, "zeros", output=True))
    return Program(parse(text, f"{name}.ptx"), Launch("k", (grid, 1, 1), (128, 1, 1)), bufs, ())


def _hand_check(name: str, program: Program, outputs: dict[str, bytes]) -> list[str]:
    """What a cluster of two CTAs must give by the ISA: every CTA holds ``a`` (multicast to ranks 0 and
    1), reads it from its peer's shared memory too (mapa), and sees its rank, 2 CTAs, its cluster index
    (ctaid.x // 2) and an explicit cluster.  Returns the differences (an empty list: it holds)."""
    import numpy as np
    from fuzzptx.data import buffer_bytes
    grid = program.launch.grid[0]
    a = buffer_bytes(program.buffers[0]).view(np.uint32)
    o = np.frombuffer(outputs["o"], np.uint32).reshape(grid, 128)
    o2 = np.frombuffer(outputs["o2"], np.uint32).reshape(grid, 128, 16)
    bad = []
    for c in range(grid):
        if not np.array_equal(o[c], a):
            bad.append(f"CTA {c}: o (its peer's buffer through mapa) is not a")
        if not np.array_equal(o2[c, :, 12], a):
            bad.append(f"CTA {c}: the generic mapa load is not a")
        want = {0: c % 2, 1: 2, 2: c // 2, 3: c % 2, 4: 2, 5: 1, 6: grid // 2, 8: 1, 10: 0, 11: 1, 15: 1}
        for k, v in want.items():
            got = set(o2[c, :, k].tolist())
            if got != {v}:
                bad.append(f"CTA {c}: word {k} is {sorted(got)[:4]}, want {v}")
    return bad


def cluster_tensor_plans(drawn: int, seed: int) -> list[tuple[str, object]]:
    """(name, CopyPlan) of the tensor-map multicast forms: fixed grid forms in both cluster forms, then
    drawn plans (those drawn without a cluster form get one, alternately)."""
    import dataclasses
    out = []
    keep = ("load-store-f16-128B-2d", "load-store-u32-none-3d", "load-store-u8-64B-1d", "nan-fill-f32-128B",
            "reduce-inside-add-u32", "inner-row-under-span-f16-64B")
    grid = dict(tensor_grid())
    for k in keep:
        for form in tc.CLUSTER_FORMS[1:]:
            out.append((f"{k}-{form}", dataclasses.replace(grid[k], cluster=form)))
    for i, plan in enumerate(drawn_plans(drawn, seed)):
        if not plan.multicast:
            plan = dataclasses.replace(plan, cluster=tc.CLUSTER_FORMS[1 + i % 2])
        out.append((f"drawn-{i}", plan))
    return out


def _tensor_mask_probe(plan) -> Program:
    """A tensor multicast whose ctaMask is 0x3 (rank 0 and a rank the cluster of one does not have)."""
    import dataclasses
    text = tc.kernel_text(plan)
    assert "shl.b32 %r25, 1, %r24;" in text  # (the emitter's form: the kernel is built as IR)
    module = parse(text.replace("shl.b32 %r25, 1, %r24;", "mov.u32 %r25, 3;"), "tensor-mask-0x3.ptx")
    return dataclasses.replace(tc.render(plan), module=module)


def _pack(data: bytes) -> str:
    import base64
    import zlib
    return base64.b64encode(zlib.compress(data, 9)).decode()


def unpack(text: str) -> bytes:
    """The bytes ``_pack`` stored (programs and outputs in a --cluster record)."""
    import base64
    import zlib
    return zlib.decompress(base64.b64decode(text))


def _opcodes(program: Program) -> set[str]:
    return {i.opcode for fn in program.module.functions() for i in fn.instructions()}


CLUSTER_OPCODES = ("mapa", "barrier.cluster", "multicast::cluster", "shared::cluster.b64", "ld.shared::cluster",
                   "fence.mbarrier_init", "L2::cache_hint")


def cluster_main(args) -> int:
    import dataclasses
    import hashlib
    from collections import Counter
    base = int(time.time())
    cases = []  # (name, kind, program, plan or None)
    for r in range(args.rounds):
        for name, (_, _, _, _, kind, *_) in CLUSTER_HAND.items():
            if r and kind == "probe":
                continue  # probes once
            cases.append((name if not r else f"{name}#{r}", kind, cluster_hand_program(name, base + r), None))
    for name, plan in cluster_tensor_plans(args.drawn, base):
        plan = dataclasses.replace(plan, seed=base + 2000 + len(cases))
        cases.append((f"tensor-{name}", "judged", tc.render(plan), plan))
    probe_plan = dict(tensor_grid())["load-store-u32-none-3d"]
    cases.append(("tensor-mask-0x3", "probe", _tensor_mask_probe(dataclasses.replace(probe_plan, cluster="implicit",
                                                                                     seed=base)), None))
    rejected, refs, hw, info = _judge([(name, p) for name, _, p, _ in cases], args.dry_run)
    rows, ran = [], Counter()
    counts = Counter()
    for (name, kind, p, plan), ref, h in zip(cases, refs, hw):
        fault = h.fault if h is not None else None
        outputs = h.outputs if h is not None and not fault else {}
        row = {"case": name, "kind": kind, "fault": fault,
               "reference": ref if isinstance(ref, str) else (ref.undefined or "ran"),
               "notes": [] if isinstance(ref, str) else list(ref.notes), "program_z": _pack(p.to_ptx().encode())}
        counts["runs"] += 1
        counts["faults"] += fault is not None
        if kind == "judged":
            counts["judged"] += 1
            if isinstance(ref, str):
                counts["judged_refused_by_reference"] += 1
                row["verdict"] = "reference refused"
            elif h is None:
                row["verdict"] = "dry run"
            elif fault:
                counts["judged_faults"] += 1
                row["verdict"] = "GPU fault"
            else:
                mm = compare(p, ref, h.outputs)
                counts["judged_with_mismatches"] += bool(mm)
                row["mismatches"] = [str(x) for x in mm[:8]]
                row["verdict"] = "mismatch" if mm else "agrees"
        elif kind == "hand":
            counts["hand"] += 1
            bad = _hand_check(name.split("#")[0], p, outputs) if outputs else ([fault] if fault else [])
            counts["hand_failed"] += bool(bad) and h is not None
            row["hand_check"] = bad[:8] if h is not None else "dry run"
            row["verdict"] = "hand check holds" if h is not None and not bad else ("dry run" if h is None else "hand check fails")
        else:
            counts["probe_runs"] += 1
            row["verdict"] = "probe"
        if kind != "judged" or plan is None:  # small outputs: kept whole, to judge again offline
            row["outputs_z"] = {k: _pack(v) for k, v in outputs.items()}
        else:
            row["outputs_sha256"] = {k: hashlib.sha256(v).hexdigest() for k, v in outputs.items()}
            row["forms"] = _forms(plan) + [f"cluster={plan.cluster}"]
        if h is not None and not fault:
            for op in _opcodes(p):
                for key in CLUSTER_OPCODES:
                    if key in op:
                        ran[op] += 1
        rows.append(row)
    unexplained = counts["judged_with_mismatches"] + counts["judged_faults"] + counts["hand_failed"]
    record = {
        "what": "issue 27: clusters and multicast TMA on the H100 against the reference (a cluster of one CTA), "
                "hardware probes of what the reference refuses, and clusters of two CTAs checked by hand",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "PYTHONPATH=/tmp/pkg python tests/support/hw_tma.py --cluster --out $OUT/tma_cluster_h100.json",
        "device": info, "ptxas": ptxas_version(), "python": platform.python_version(),
        **dict(counts), "rejected_by_ptxas": rejected, "unexplained": unexplained,
        "cluster_instructions_run_without_fault": dict(sorted(ran.items())),
        "probes": {r["case"]: {"fault": r["fault"], "reference": r["reference"],
                               "o2_words_of_thread_0": _words0(r)} for r in rows if r["kind"] == "probe"},
        "results": rows,
    }
    with open(args.out, "w") as fh:
        json.dump(record, fh, indent=1)
    print(json.dumps({k: record[k] for k in ("device", "unexplained", "rejected_by_ptxas", "probes")
                      } | dict(counts), indent=1))
    print(json.dumps([{k: r.get(k) for k in ("case", "verdict", "fault", "reference", "mismatches", "hand_check")}
                      for r in rows if r["verdict"] not in ("agrees", "hand check holds", "probe", "dry run")][:12]))
    return 0 if not (unexplained or rejected) else 1


def _words0(row) -> list[int] | None:
    """The 16 o2 words of thread 0 (the hand kernels' cluster registers) and o[0], where recorded."""
    import numpy as np
    z = row.get("outputs_z") or {}
    if "o2" not in z:
        return None
    return np.frombuffer(unpack(z["o2"]), np.uint32)[:16].tolist() + np.frombuffer(unpack(z["o"]), np.uint32)[:1].tolist()


def cluster_reexamine(args) -> int:
    """Judge a recorded ``--cluster`` run again with the current reference (no GPU): every program is
    rebuilt from the record (``program_z``); a fault is explained when the reference now predicts it
    (``BadAddress``), refuses the launch the driver refused, or leaves the run undefined; outputs kept
    whole (``outputs_z``) are compared again, and so are hashed ones where every element of the
    reference's outputs is defined (else the run's own comparison stands); the hand rows are checked
    again."""
    import hashlib
    from collections import Counter
    import numpy as np
    from fuzzptx.oracles.reference.values import UNDEF
    with open(args.reexamine) as fh:
        rec = json.load(fh)
    counts, rows = Counter(), []
    for r in rec["results"]:
        p = Program.from_ptx(unpack(r["program_z"]).decode(), r["case"] + ".ptx")
        try:
            ref, err = run_program(p), None
        except Exception as exc:  # BadAddress: a predicted fault; Unsupported: refused
            ref, err = None, f"{type(exc).__name__}: {exc}"
        fault = r["fault"]
        if r["kind"] == "hand":
            outs = {k: unpack(v) for k, v in r["outputs_z"].items()}
            bad = _hand_check(r["case"].split("#")[0], p, outs) if outs else [fault]
            verdict = "hand check holds" if not bad else "hand check fails"
        elif fault is not None:
            if err and err.startswith("BadAddress"):
                verdict = "fault predicted"
            elif fault.startswith("load error") and "CLUSTER_SIZE" in fault and err and err.startswith(("Unsupported", "MissingInput")):
                verdict = "launch refused by the driver and by the reference"
            elif ref is not None and ref.undefined:
                verdict = "fault where the reference says undefined"
            else:
                verdict = "fault NOT explained"
        elif err is not None and err.startswith("StepLimit") and "outputs_z" in r and \
                not np.frombuffer(unpack(r["outputs_z"]["o2"]), np.uint32)[8::16].any():
            # the hand kernels' word 8: whether the bounded test_wait loop saw the phase complete
            verdict = "hang predicted: the GPU's bounded wait gave up, the phase never completed"
        elif err is not None:
            verdict = f"reference refuses what the GPU ran: {err[:160]}"
        elif "outputs_z" in r:
            mm = compare(p, ref, {k: unpack(v) for k, v in r["outputs_z"].items()})
            verdict = "agrees" if not mm else "mismatch"
            r = dict(r, mismatches=[str(x) for x in mm[:8]])
        elif all((ref.outputs[k].kind != UNDEF).all() for k in r["outputs_sha256"]) and not ref.undefined:
            same = all(hashlib.sha256(ref.bytes(k)).hexdigest() == h for k, h in r["outputs_sha256"].items())
            verdict = "agrees (hash)" if same else "mismatch (hash)"
        else:
            verdict = "agreed at the run (outputs not kept, some elements undefined)" if r["verdict"] == "agrees" \
                else f"recorded {r['verdict']}"
        counts[verdict] += 1
        rows.append({"case": r["case"], "kind": r["kind"], "fault": fault, "reference": err or (ref.undefined or "ran"),
                     "verdict": verdict, "notes": list(ref.notes) if ref is not None else [],
                     **({"mismatches": r["mismatches"]} if r.get("mismatches") else {})})
    explained = ("agrees", "agrees (hash)", "hand check holds", "fault predicted",
                 "hang predicted: the GPU's bounded wait gave up, the phase never completed",
                 "launch refused by the driver and by the reference", "fault where the reference says undefined",
                 "agreed at the run (outputs not kept, some elements undefined)")
    unexplained = sum(v for k, v in counts.items() if k not in explained)
    record = {
        "what": "a recorded --cluster H100 run judged again by the current reference (no GPU)",
        "record": args.reexamine, "recorded_date": rec["date"], "recorded_device": rec["device"],
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": f"python tests/support/hw_tma.py --cluster --reexamine {args.reexamine} --out {args.out}",
        "rows": len(rows), "verdicts": dict(sorted(counts.items())), "unexplained": unexplained, "results": rows,
    }
    with open(args.out, "w") as fh:
        json.dump(record, fh, indent=1)
    print(json.dumps({k: record[k] for k in ("rows", "verdicts", "unexplained")}, indent=1))
    return 0 if unexplained == 0 else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--dry-run", action="store_true", help="no GPU: the reference against itself")
    ap.add_argument("--tensor", action="store_true", help="the tensor-map kernels (tma_tensor_h100.json)")
    ap.add_argument("--cluster", action="store_true", help="clusters and multicast (tma_cluster_h100.json)")
    ap.add_argument("--drawn", type=int, default=60, help="--tensor: drawn plans besides the fixed forms")
    ap.add_argument("--reexamine", metavar="RECORD", help="--tensor / --cluster: judge a recorded run again (no GPU)")
    ap.add_argument("--code-at", metavar="COMMIT", help="--reexamine: rebuild the programs with the grid and "
                    "strategy of this commit (the code the record was made with)")
    args = ap.parse_args(argv)
    if args.tensor and args.reexamine:
        return reexamine(args)
    if args.tensor:
        return tensor_main(args)
    if args.cluster and args.reexamine:
        return cluster_reexamine(args)
    if args.cluster:
        return cluster_main(args)
    base = int(time.time())
    cases = [(name, base + r, p) for r in range(args.rounds) for name, p in programs(base + r)]
    rejected = []
    for name, _, p in cases[:len(SHAPES)]:
        res = compile_ptx(emit(p.module))
        if not res.accepted:
            rejected.append({"shape": name, "stderr": res.stderr[:400]})
    refs = [run_program(p) for _, _, p in cases]
    if args.dry_run:
        hw, info = [None] * len(cases), {"dry_run": True}
    else:
        hw, info = run_programs_on_gpu([(p, None, None) for _, _, p in cases])
    rows, mismatched, faults = [], 0, 0
    for (name, seed, p), ref, h in zip(cases, refs, hw):
        if h is None:
            mm, fault = [], None
        else:
            fault = h.fault
            mm = [] if fault else compare(p, ref, h.outputs)
        faults += fault is not None
        mismatched += bool(mm)
        rows.append({"shape": name, "seed": seed, "fault": fault, "undefined": ref.undefined,
                     "mismatches": [str(x) for x in mm[:8]]})
    record = {
        "what": "issue 27: reference vs H100 on mbarrier / cp.async.bulk / elect.sync / setmaxnreg kernels",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "PYTHONPATH=/tmp/pkg python tests/support/hw_tma.py --out $OUT/tma_h100.json",
        "device": info, "ptxas": ptxas_version(), "python": platform.python_version(),
        "shapes": sorted(SHAPES), "mainloop_shapes": "run" if kernel_text is not None else "skipped (no hypothesis)",
        "runs": len(cases), "rejected_by_ptxas": rejected,
        "faults": faults, "programs_with_mismatches": mismatched, "results": rows,
    }
    with open(args.out, "w") as fh:
        json.dump(record, fh, indent=1)
    print(json.dumps({k: record[k] for k in ("device", "runs", "faults", "programs_with_mismatches", "rejected_by_ptxas")}))
    return 0 if not (mismatched or faults or rejected) else 1


if __name__ == "__main__":
    sys.exit(main())
