"""Reference vs an H100 on mbarrier / bulk-copy / elect / setmaxnreg kernels (issue 27).

Each legal shape runs with fresh random inputs (seeds from the clock, recorded): a single bulk
copy ordered by expect_tx before or after it; a ring of two stages over several K tiles whose
waits flip parity; every thread arriving and waiting on its state token (try_wait and
test_wait); elect.sync's leader lane and predicate per thread; setmaxnreg in a two-warpgroup
kernel; three drawn mainloops (strategies/mainloops.py: 1-4 stages, 5-8 tiles, 1-3 warpgroups,
every thread arriving, setmaxnreg), when hypothesis is importable.  Outputs are compared with ``compare`` (the reference's allowed values).

    PYTHONPATH=/tmp/pkg python tests/support/hw_tma.py --out $OUT/tma_h100.json [--dry-run]
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
except ImportError:  # pragma: no cover - recorded in the JSON as skipped
    MainloopPlan = kernel_text = None

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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--dry-run", action="store_true", help="no GPU: the reference against itself")
    args = ap.parse_args(argv)
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
