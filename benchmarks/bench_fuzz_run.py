"""The CPU fuzz run's cost against the ptxas time of the same programs (target: at most 1.15x).

Runs ``fuzzptx.engine.run.run`` (generation, reference, checker, batched ptxas in a background
thread, differ and bookkeeping; no shrinking and no repro files, which are paid once per
new finding signature, not per program) and reports,
per stage, the seconds spent, and two ratios against ptxas alone on the very same PTX texts
(one ``compile_batch`` per batch, one after the other, nothing else running in this process):

* ``ratio_run_wall_over_ptxas_alone``: the run's wall time over ptxas alone -- what a user waits for, ptxas using one core and the
  other judges the other (the target: at most 1.15x);
* ``ratio_cpu_over_ptxas_alone_cpu``: CPU seconds (this process and its ptxas children,
  from ``getrusage``) of the run over those of ptxas alone -- the cost if nothing
  overlapped, and the figure that holds on a loaded machine, where wall times do not;
* ``ratio_stages_over_ptxas_stage``: the stage timers (wall clock) over the ptxas stage.

``--ab R`` instead times the judging path alone on the same programs, in this process,
interleaved R times (CPU, best of R): the path before the speed work (one parse, then
``check_module`` and ``predict_ptxas``, each running the ptxas model, and the reference on
every program) against ``fuzz.judge_texts`` (one model run, the reference on what ptxas
accepted); ptxas runs once beforehand and is not timed.

    python benchmarks/bench_fuzz_run.py --examples 200 --seed 0
    python benchmarks/bench_fuzz_run.py --examples 128 --seed 0 --ab 3 --out /tmp/ab.json
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def cpu_seconds() -> tuple[float, float]:
    """(this process, its finished children) user+system CPU seconds."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, ch.ru_utime + ch.ru_stime


def judge_ab(programs: list, repeat: int) -> dict:
    """CPU ms/program of the old and the new judging path on ``programs`` (see the module doc)."""
    from fuzzptx.judges import differ
    from fuzzptx.engine.run import judge_texts
    from fuzzptx.oracles.checker import check_module, predict_ptxas
    from fuzzptx.oracles.ptxas import compile_batch
    from fuzzptx.oracles.reference import run_program

    texts = [p.to_ptx() for p in programs]
    results = [r for lo in range(0, len(texts), 32) for r in compile_batch(texts[lo:lo + 32])]

    def old() -> None:
        for p, t in zip(programs, texts):
            q, _ = differ.as_judged(p, t)
            check_module(q.module)
            predict_ptxas(q.module)
            try:
                run_program(q)
            except Exception:  # as differ.judge: any outcome is a verdict
                pass

    def new() -> None:
        judge_texts(programs, texts, ("reference", "checker"), (results, 0.0))

    old(), new()  # imports and catalogue
    times: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(repeat):
        for name, fn in (("old", old), ("new", new)):
            t0 = time.process_time()
            fn()
            times[name].append(time.process_time() - t0)
    n = len(programs)
    return {"programs": n, "ptxas_accepted": sum(r.accepted for r in results), "repeat": repeat,
            "cpu_ms_per_program_best": {k: round(1000 * min(v) / n, 1) for k, v in times.items()},
            "cpu_ms_per_program_all": {k: [round(1000 * x / n, 1) for x in v] for k, v in times.items()}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--generator", choices=("direct", "hypothesis"), default="direct")
    ap.add_argument("--ab", type=int, default=0, help="time the old vs the new judging path, best of this many")
    ap.add_argument("--out", default="benchmarks/results/fuzz_run.json")
    args = ap.parse_args()
    from fuzzptx.perf import tune_gc

    tune_gc()  # as the CLI does for every subcommand
    if args.ab:
        from fuzzptx.engine.run import batch_programs, draw_programs

        programs = ([p for b in range(-(-args.examples // args.batch))
                     for p in batch_programs(b, args.seed, args.batch, args.examples, 0.25)]
                    if args.generator == "direct" else draw_programs(args.examples, args.seed))
        load0 = os.getloadavg()[0]
        result = {"what": "judging path A/B", "generator": args.generator, "seed": args.seed,
                  **judge_ab(programs, args.ab), "load_before": round(load0, 2),
                  "load_after": round(os.getloadavg()[0], 2)}
        Path(args.out).write_text(json.dumps(result, indent=1))
        print(json.dumps(result, indent=1))
        return
    from fuzzptx.engine.run import batch_programs, draw_programs, run
    from fuzzptx.oracles.ptxas import compile_batch

    with tempfile.TemporaryDirectory() as tmp:  # imports and catalogue first, as in a long run
        run(2, args.seed + 1, ("reference", "checker", "ptxas"), Path(tmp), progress=False,
            generator=args.generator, repros=False)
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        c0 = cpu_seconds()
        t0 = time.perf_counter()
        stats = run(args.examples, args.seed, ("reference", "checker", "ptxas"), Path(tmp), batch=args.batch,
                    shrink_budget=0.0, progress=False, generator=args.generator, repros=False)
        wall = time.perf_counter() - t0
        c1 = cpu_seconds()
    if args.generator == "direct":
        programs = [p for b in range(-(-args.examples // args.batch))
                    for p in batch_programs(b, args.seed, args.batch, args.examples, 0.25)]
    else:
        programs = draw_programs(args.examples, args.seed)
    texts = [p.to_ptx() for p in programs]
    c2 = cpu_seconds()
    t0 = time.perf_counter()
    for lo in range(0, len(texts), args.batch):
        compile_batch(texts[lo:lo + args.batch])
    ptxas_alone = time.perf_counter() - t0
    c3 = cpu_seconds()
    run_cpu = (c1[0] - c0[0]) + (c1[1] - c0[1])
    ptxas_cpu = (c3[0] - c2[0]) + (c3[1] - c2[1])
    s = stats.as_dict()
    stage = s["stage_seconds"]
    result = {
        "examples": args.examples, "seed": args.seed, "batch": args.batch, "generator": args.generator,
        "load_before": round(load0, 2), "load_after": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
        "run_wall_seconds": round(wall, 2),
        "stage_seconds": stage,
        "ptxas_alone_seconds": round(ptxas_alone, 2),
        "ratio_run_wall_over_ptxas_alone": round(wall / ptxas_alone, 2),
        "run_cpu_seconds": {"self": round(c1[0] - c0[0], 2), "ptxas_children": round(c1[1] - c0[1], 2)},
        "ptxas_alone_cpu_seconds": round(ptxas_cpu, 2),
        "ratio_cpu_over_ptxas_alone_cpu": round(run_cpu / ptxas_cpu, 2),
        "ratio_stages_over_ptxas_stage": s["overhead_vs_ptxas"],
        "ms_per_program": {k: round(1000 * v / args.examples, 2) for k, v in stage.items()},
        "findings": sum(s["findings_by_bucket"].values()),
    }
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
