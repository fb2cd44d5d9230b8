"""What the SASS verifier costs, and what it finds per ptxas release.

Cost: a fixed-seed CPU run in one process (``fuzzptx run --workers 0``) with the checker, ptxas and
the sass judge: the verifier's time (one nvdisasm run per group of up to 4 blocks, the rules on
each checker-clean accepted program) against ptxas's time for the same programs, batched as the
run batches them.  Target: at most 0.2x.  Two clocks: ``ratio_cpu`` (the figure) counts CPU
seconds -- the calling thread's and those of the child processes (ptxas, nvdisasm) reaped during
the ptxas judge's ``judge_batch`` and the sass judge's ``warm`` and ``judge`` calls, which this
script wraps in the run's process; ``ratio`` divides the run's own stage seconds, wall clock.  The
wall ratio moves with the machine (0.124 to 0.151 for the same programs at loads 12 to 20): the run
compiles a block in a thread while its main thread runs the checker, so ptxas's wall seconds count
the time the two wait for each other's core, while the SASS stage runs alone.  ptxas's CPU seconds
moved by 0.2% between two such runs.

Findings per release: the run's legal programs that the checker finds defined and that have a
wgmma, compiled with each cached ptxas release (batched, -O3), each module disassembled once, the
rules applied; a count per rule and per 1,000 programs.  The same programs at -O0 with the pinned
release are the control: -O0 reuses no register of a GMMA in flight and drops no wgmma (the H100
runs every -O0 build right, tests/hw_records/sass_findings_h100.json), so a hazard there would be
the verifier's false positive.

    python benchmarks/bench_sass.py [--examples 512] [--seed 3] [--releases 12.4.131,12.9.86,13.0.88,13.5.37]
    python benchmarks/bench_sass.py --examples 512 --seed 3 --skip-releases   # the cost alone

Writes benchmarks/results/sass_cost.json and benchmarks/results/sass_releases.json.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fuzzptx.engine.generate import draw_direct
from fuzzptx.oracles import toolchains
from fuzzptx.oracles.checker import check_module
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.oracles.sass import disassemble_all, disassembler, gmma_count_hazards, verify
from records import start  # benchmarks/records.py, beside this script

RESULTS = Path(__file__).parent / "results"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _cpu_now() -> float:
    """CPU seconds of the calling thread and of every child process reaped so far."""
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.thread_time() + ch.ru_utime + ch.ru_stime


def _clocked(cls: type, method: str, into: dict, key: str) -> None:
    """Wrap ``cls.method`` so that its CPU seconds (``_cpu_now``) add up in ``into[key]``.  In a
    ``--workers 0`` run no other thread starts a child process while ptxas's batch or the sass
    judge runs (the checker beside the compile starts none), so the children reaped meanwhile are
    that call's own."""
    inner = getattr(cls, method)

    def timed(self, *args, **kwargs):
        t0 = _cpu_now()
        try:
            return inner(self, *args, **kwargs)
        finally:
            into[key] = into.get(key, 0.0) + _cpu_now() - t0

    setattr(cls, method, timed)


def clocked_run(out: str, run_args: list[str]) -> int:
    """``fuzzptx run RUN_ARGS`` in this process with the ptxas and sass judges' CPU seconds written to ``out``."""
    from fuzzptx.cli import main as fuzzptx_main
    from fuzzptx.judges.builtin import PtxasJudge, SassJudge

    cpu: dict[str, float] = {}
    _clocked(PtxasJudge, "judge_batch", cpu, "ptxas")
    _clocked(PtxasJudge, "judge", cpu, "ptxas")
    _clocked(SassJudge, "warm", cpu, "sass")
    _clocked(SassJudge, "judge", cpu, "sass")
    code = fuzzptx_main(["run", *run_args])
    Path(out).write_text(json.dumps({k: round(v, 2) for k, v in cpu.items()}))
    return code


def cost(examples: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        args = ["--examples", str(examples), "--seed", str(seed), "--judges", "checker,ptxas,sass", "--workers", "0",
                "--shrink-budget", "0"]
        cmd = [sys.executable, __file__, "--clocked-run", f"{d}/cpu.json", *args, "--out", f"{d}/run"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode not in (0, 1):  # 1: findings, a normal end
            raise SystemExit(f"bench_sass: the run failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        s = json.loads(Path(f"{d}/run/summary.json").read_text())
        cpu = json.loads(Path(f"{d}/cpu.json").read_text())
    st = s["stage_seconds"]
    return {"command": "fuzzptx run " + " ".join(args), "programs": s["programs"], "ptxas_accepted": s["ptxas_accepted"],
            "ptxas_cpu_seconds": cpu["ptxas"], "sass_cpu_seconds": cpu["sass"],
            "ratio_cpu": round(cpu["sass"] / cpu["ptxas"], 3),
            "ptxas_seconds": st["ptxas"], "sass_seconds": st["sass"], "ratio": round(st["sass"] / st["ptxas"], 3),
            "target": 0.2}


def releases(examples: int, seed: int, wanted: list[str], control: str | None = "13.0.88") -> dict:
    progs = [p for p in draw_direct(examples, seed, 0.0)
             if any(i.opcode.startswith("wgmma.mma_async") for f in p.module.functions() if f.body is not None
                    for i in f.instructions())
             and not any(f.severity == "error" for f in check_module(p.module, layers=("isa", "spec")))]
    texts = [p.to_ptx() for p in progs]
    tool = disassembler()
    rows = []
    for spec, opt in [(r, 3) for r in wanted] + ([(control, 0)] if control else []):
        tc = toolchains.resolve(spec)[0]
        t0 = time.perf_counter()
        results = []
        for i in range(0, len(texts), 32):
            results += compile_batch(texts[i:i + 32], want_cubin=True, ptxas=tc.ptxas, opt_level=opt)
        t_ptxas = time.perf_counter() - t0
        t0 = time.perf_counter()
        cubins = list({id(r.cubin): r.cubin for r in results if r.accepted and r.cubin}.values())
        listings = {id(c): lst for c, lst in zip(cubins, disassemble_all(cubins, tool))}
        rules: collections.Counter = collections.Counter()
        programs_with: collections.Counter = collections.Counter()
        examples_of: dict[str, int] = {}
        judged = 0
        for k, (p, r) in enumerate(zip(progs, results)):
            if not (r.accepted and r.cubin) or listings[id(r.cubin)].function(r.kernel(p.launch.kernel)) is None:
                continue
            judged += 1
            lst, name = listings[id(r.cubin)], r.kernel(p.launch.kernel)
            found = {h.rule for h in verify(lst, name)} | {c.rule for c in gmma_count_hazards(p.module, p.launch.kernel, lst, name)}
            for rule in found:
                programs_with[rule] += 1
                examples_of.setdefault(rule, k)
            rules.update(found)
        rows.append({"release": tc.release, "opt": opt, "programs_judged": judged, "ptxas_seconds": round(t_ptxas, 2),
                     "verify_seconds": round(time.perf_counter() - t0, 2),
                     "programs_with_hazard": dict(programs_with),
                     "per_1000": {rule: round(1000 * n / max(judged, 1), 2) for rule, n in programs_with.items()},
                     "first_program_index": examples_of})
        print(rows[-1], flush=True)
    shaped = sum(1 for p in progs if "// NOTE: shapes:" in p.to_ptx())
    return {"seed": seed, "examples_drawn": examples, "programs": len(progs), "programs_with_inflight_windows": shaped,
            "what": "legal generated programs with a wgmma that the checker finds defined", "releases": rows}


def main() -> int:
    if sys.argv[1:2] == ["--clocked-run"]:  # cost()'s child: the run itself, its judges' CPU clocked
        return clocked_run(sys.argv[2], sys.argv[3:])
    bench = start()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=512)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--releases", default="12.4.131,12.9.86,13.0.88,13.5.37")
    ap.add_argument("--control", default="13.0.88", help="the release whose -O0 builds are the control ('' for none)")
    ap.add_argument("--skip-cost", action="store_true")
    ap.add_argument("--skip-releases", action="store_true", help="the cost alone (sass_cost.json)")
    ap.add_argument("--out", default=str(RESULTS / "sass_cost.json"), help="where the cost record goes")
    a = ap.parse_args()
    RESULTS.mkdir(exist_ok=True)
    env = {"date": _now(), "device": f"{platform.node()} ({os.cpu_count()} CPUs, CPU only)", "python": platform.python_version()}
    if not a.skip_cost:
        load = os.getloadavg()
        c = {**env, **cost(a.examples, a.seed)}
        # the CPU machines are shared: the load says how far the seconds are an upper bound
        c["load_average_before"] = [round(x, 2) for x in load]
        c["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        bench.finish(c, a.out)
    if a.skip_releases:
        return 0
    r = {**env, **releases(a.examples, a.seed, a.releases.split(","), a.control or None)}
    bench.finish(r, RESULTS / "sass_releases.json", echo=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
