"""Where CUTLASS's ``ws_f16_128x128x64`` hung on the GPU (``tests/hw_records/ws_f16_hang_h200.json``).

Each blocking ``mbarrier.try_wait`` spin loop of CUTLASS's inline assembly (``LAB_WAIT`` ...
``bra LAB_WAIT``) gets a time bound (argv[2] ns of ``%globaltimer``); a thread past it records
(site, parity, barrier) in a tail of the D buffer (``ptr832``, grown by 1280 words) and goes on as if
the wait had succeeded, so the kernel ends and the record comes back.  A passing wait records the
most tries it took per site.  With the launch of commit 89224f5 (the stage's expected bytes left at
the searched 128) the consumers gave up in their first full-barrier wait; the launch has matched the
barrier by value since (``launch.BarrierRef``), and the kernel runs.

    # the GPU machine, the package assembled in /tmp/pkg (docs/tma.md); with "orig" the kernel
    # also runs as it is (a hang shows as the worker's timeout)
    PYTHONPATH=/tmp/pkg python3 tests/support/hw_locate_hang.py gpu 2000000000 orig > $OUT/hang.json
    PYTHONPATH=$PWD python3 tests/support/hw_locate_hang.py dry   # no GPU: instrument and compile
"""
import json
import re
import sys

import numpy as np

from fuzzptx import launch
from fuzzptx.inputs import read_text
from fuzzptx.oracles.ptxas import compile_ptx
from fuzzptx.program import Program

PATH = "tests/data/cutlass/ws_f16_128x128x64.ptx"
LOOP = re.compile(r"LAB_WAIT: \n(\s*)(mbarrier\.try_wait\.parity\.shared::cta\.b64 P1, \[(%r\d+)\], (%r\d+), (%r\d+); )\n"
                  r"\s*@P1 bra DONE; \n\s*bra     LAB_WAIT; \n\s*DONE: ")
TAIL = """
ld.param.u64 dbgp, [{k}_param_0+832];
cvta.to.global.u64 dbgp, dbgp;
mov.u32 dbgt, %tid.x;
mul.wide.u32 dbga, dbgt, 4;
add.u64 dbga, dbgp, dbga;
"""


def instrument(text, kname, limit, sites):
    def sub(m):
        i = len(sites) + 1
        sites.append({"site": i, "line": text[:m.start()].count("\n") + 2, "bar": m.group(3), "parity": m.group(4)})
        return ("\n.reg .u32 dbgc, dbgt; .reg .pred dbgq; .reg .u64 dbgp, dbga, dbg0, dbg1;\n"
                "mov.u32 dbgc, 0;\nmov.u64 dbg0, %globaltimer;\nLAB_WAIT:\n" + m.group(2) + "\n@P1 bra OKW;\n"
                "add.u32 dbgc, dbgc, 1;\nmov.u64 dbg1, %globaltimer;\nsub.u64 dbg1, dbg1, dbg0;\n"
                f"setp.lt.u64 dbgq, dbg1, {limit};\n@dbgq bra LAB_WAIT;\n" + TAIL.format(k=kname) +
                f"st.global.u32 [dba+32768], {i};\nst.global.u32 [dba+33792], {m.group(4)};\n"
                f"st.global.u32 [dba+34816], {m.group(3)};\nbra DONE;\nOKW:\n" + TAIL.format(k=kname) +
                f"st.global.u32 [dba+35840], {i};\nred.global.max.u32 [dbgp+{36864 + 4 * i}], dbgc;\nDONE: ").replace("dba+", "dbga+")
    return LOOP.sub(sub, text)


def main():
    gpu = len(sys.argv) > 1 and sys.argv[1] == "gpu"
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000_000_000
    text = read_text(PATH, what="PTX file")
    prog = launch.load(text, PATH)
    header = list(prog.header_lines())
    kname = prog.launch.kernel
    sites = []
    inst = instrument(text, kname, limit, sites)
    hdr = [h.replace("count=8192 init=random seed=0 in=", "count=9472 init=zeros seed=0 in=", 1) if "ptr832" in h else h
           for h in header]
    program = Program.from_ptx("".join(f"// {ln}\n" for ln in hdr) + inst, "ws_dbg.ptx")
    orig = Program.from_ptx("".join(f"// {ln}\n" for ln in header) + text, "ws.ptx")
    print(json.dumps(sites), file=sys.stderr)
    items, names = [], []
    for what, src, p in (("orig", text, orig), ("inst", inst, program)):
        if what == "orig" and "orig" not in sys.argv:
            continue
        for o in (3, 0):
            r = compile_ptx(src, opt_level=o, want_cubin=True)
            print(f"{what} -O{o}: accepted {r.accepted} {'' if r.accepted else r.stderr[:300]}", file=sys.stderr)
            if r.accepted:
                items.append((p, r.cubin, r.kernel(kname)))
                names.append(f"{what}{o}")
    out = {"sites": sites, "limit_ns": limit, "runs": []}
    if gpu:
        from fuzzptx.oracles.hardware import run_programs_on_gpu
        hw, info = run_programs_on_gpu(items, timeout=40.0)
        out["device"] = info
        for name, h in zip(names, hw):
            row = {"run": name, "fault": h.fault}
            if not h.fault and name.startswith("inst"):
                d = np.frombuffer(h.outputs["ptr832"], np.uint32)[8192:]
                stuck, par, bar, ok = d[:256], d[256:512], d[512:768], d[768:1024]
                row["stuck"] = {str(t): [int(stuck[t]), int(par[t]), int(bar[t])] for t in range(256) if stuck[t]}
                row["max_tries"] = [int(x) for x in d[1024:1024 + 16]]
                row["last_ok"] = {str(t): int(ok[t]) for t in range(256) if ok[t]}
            out["runs"].append(row)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
