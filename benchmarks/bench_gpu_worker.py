"""A GPU worker's CPU per program, by how it waits for its kernel (``FUZZPTX_GPU_SYNC``), and its profile.

Draws ``N`` campaign programs (``draw_direct``, seed 7), compiles them in blocks of 32 as a
campaign does and runs the ones a campaign sends to the GPU (``gpu_worthy``) through one
``HardwareWorker`` per sync mode (spin, block, spin, block, yield), reading the worker
process's CPU from /proc around the run; then once more under ``FUZZPTX_HW_PROFILE`` and
prints the worker's profile.  Needs a GPU (run it on the device):

    python3 benchmarks/bench_gpu_worker.py OUTDIR [N]
"""
import json
import os
import sys
import time
import pstats
import io
from fuzzptx.engine.generate import draw_direct
from fuzzptx.engine.block import gpu_worthy
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.oracles.hardware import HardwareWorker

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_split import proc_stat  # noqa: E402



def cpu_of(pid: int) -> float:
    """The process's own CPU seconds so far (``cpu_split``'s /proc reader)."""
    return proc_stat(pid)[2]



def main():
    out = sys.argv[1]
    progs = draw_direct(int(sys.argv[2]) if len(sys.argv) > 2 else 640, 7)
    items = []
    for k in range(0, len(progs), 32):
        blk = progs[k:k + 32]
        res = compile_batch([p.to_ptx() for p in blk], want_cubin=True)
        for p, r in zip(blk, res):
            if r.accepted and r.cubin is not None and gpu_worthy(p, None):
                items.append((p, r.cubin, r.kernel(p.launch.kernel)))
    print("gpu programs", len(items), flush=True)
    from fuzzptx.oracles.ptxas import ptxas_version

    rec = {"what": "one GPU worker's CPU and wall per campaign program, by sync mode",
           "ptxas": ptxas_version(), "python": sys.version.split()[0], "programs": len(items), "runs": []}
    ref = None
    for mode in ["spin", "block", "spin", "block", "yield"]:
        os.environ["FUZZPTX_GPU_SYNC"] = mode
        w = HardwareWorker(device=0, timeout=5)
        ts = time.perf_counter()
        info = w.start()
        start_wall = time.perf_counter() - ts
        pid = w._proc.pid
        time.sleep(0.5)
        start_cpu = cpu_of(pid)  # CuPy import, CUDA context: what each (re)start costs
        c0, p0, t0 = cpu_of(pid), time.process_time(), time.perf_counter()
        rs = [w.run(p, cubin=c, kernel=k) for p, c, k in items]
        c1, p1, t1 = cpu_of(pid), time.process_time(), time.perf_counter()
        w.close()
        outs = [(r.fault, r.outputs) for r in rs]
        same = None if ref is None else sum(a == b for a, b in zip(outs, ref))
        ref = ref or outs
        n = len(items)
        rec.setdefault("device", {k: info.get(k) for k in ("device", "driver", "runtime", "cupy")})
        row = {"mode": mode, "sync_reported": info.get("sync"), "start_cpu_s": round(start_cpu, 2),
               "start_wall_s": round(start_wall, 2), "worker_cpu_ms": round((c1 - c0) / n * 1e3, 3),
               "parent_cpu_ms": round((p1 - p0) / n * 1e3, 3), "wall_ms": round((t1 - t0) / n * 1e3, 3),
               "faults": sum(r.fault is not None for r in rs), "same_as_first": same}
        print(row, flush=True)
        rec["runs"].append(row)
    os.makedirs(f"{out}/prof", exist_ok=True)
    os.environ["FUZZPTX_GPU_SYNC"] = "block"
    os.environ["FUZZPTX_HW_PROFILE"] = f"{out}/prof"
    w = HardwareWorker(device=0, timeout=5); w.start()
    for p, c, k in items:
        w.run(p, cubin=c, kernel=k)
    w.close()
    del os.environ["FUZZPTX_HW_PROFILE"]
    for f in os.listdir(f"{out}/prof"):
        s = io.StringIO()
        pstats.Stats(f"{out}/prof/{f}", stream=s).sort_stats("tottime").print_stats(25)
        print(s.getvalue()[:6000])
    json.dump(rec, open(f"{out}/gpu_cpu.json", "w"), indent=1)


if __name__ == '__main__':
    main()
