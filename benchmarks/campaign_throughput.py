"""Campaign throughput against bare batched ptxas on the same programs and the same cores.

1. Pre-generate the campaign's own blocks (seed S, blocks of B) and write them as a corpus.
2. Bare: ``compile_batch`` of each block (one ptxas module per block, cubins kept when a GPU
   judges) on a pool of W workers, nothing else.
3. The campaign on W CPU processes (and the GPUs): with every judge on generated programs
   (the same ones: same seed), with reference + ptxas (+GPU) (``hardware-judges``: the
   judges of a nightly hardware run), with ptxas (+GPU) alone on generated programs, and with
   ptxas (+GPU) alone on the corpus (the campaign's machinery: pool, batching, GPU feed,
   record).  Ratio = campaign programs/s over bare programs/s; per-stage ms/program and the
   GPU idle share come from each run's stats.json.

Two ratios per run, both honest: ``ratio_to_bare_ptxas`` over the whole run (pool start-up
and the first blocks' latency included: it dominates short runs), and
``steady_ratio_to_bare_ptxas`` between the first and the last finished block (the rate a
long campaign holds).  ``--examples 4000`` makes the start-up a small share of the run.
A name given twice in ``--only`` runs twice; ``pooled`` in the record pools each configuration's
runs and all bare runs (alternate them with ``--bare-after`` so drift falls on both sides).
``--bare-after`` measures bare ptxas again after each run and gives that run's ratio against the
mean of the two bare runs around it too (the machine's ptxas speed was seen to drift by ~10%
within one invocation).  ``--budget S`` skips (and records as skipped) a run unless the time spent plus 1.5x the
previous run's time fits in S seconds, and the JSON is rewritten after every run, so a time
limit still leaves a record.

    python benchmarks/campaign_throughput.py --examples 256 --workers 2 --gpus none \\
        --out benchmarks/results/campaign_throughput.json
    # on the H100 machine (< 9 minutes; writes $OUT/campaign_throughput_h100_3000.json):
    python3 benchmarks/campaign_throughput.py --examples 3000 --gpus all --budget 420 \\
        --only ptxas-corpus,full-cpu,full --out $OUT/campaign_throughput_h100_3000.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from fuzzptx.engine.block import deferrable
from fuzzptx.engine.generate import BlockTask, block_programs

from fuzzptx.commands import campaign_config
from fuzzptx.engine.campaign import GROUP_BLOCKS, Plan, build_parser, run_campaign
from fuzzptx.judges.selection import JudgeSet

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_split import CpuSplit  # noqa: E402
from records import start  # noqa: E402


def _gen_block(task: BlockTask) -> list[str]:
    return [p.to_ptx() for _, p, _ in block_programs(task)]


def pregenerate(config: Plan, blocks: int, workers: int, corpus: Path) -> tuple[list[list[str]], float]:
    """The programs the campaigns draw (the CLI's generation settings: avoided shapes, scalar
    kernels, numerics), as texts: what bare ptxas compiles."""
    t0 = time.perf_counter()
    tasks = [replace(config.task(b, frozenset(), False), judges=JudgeSet.of(("ptxas",))) for b in range(blocks)]
    with ProcessPoolExecutor(workers) as pool:
        texts = list(pool.map(_gen_block, tasks))
    secs = time.perf_counter() - t0
    corpus.mkdir(parents=True, exist_ok=True)
    for b, block in enumerate(texts):
        for i, t in enumerate(block):
            (corpus / f"b{b:05d}_{i:03d}.ptx").write_text(t)
    return texts, secs


def bare_ptxas(blocks: list[list[str]], workers: int, want_cubin: bool) -> dict:
    from fuzzptx.oracles.ptxas import compile_batch

    t0 = time.perf_counter()
    with CpuSplit() as cpu, ThreadPoolExecutor(workers) as pool:  # each thread waits on its own ptxas process
        results = list(pool.map(lambda texts: compile_batch(texts, want_cubin=want_cubin), blocks))
    secs = time.perf_counter() - t0
    n = sum(len(b) for b in blocks)
    return {"programs": n, "seconds": round(secs, 2), "programs_per_second": round(n / secs, 2),
            "accepted": sum(r.accepted for part in results for r in part), "cpu": cpu.result(n)}


def _gpu_devices() -> list[str]:
    """``name, driver`` of each GPU nvidia-smi sees (none without it): the record names its device."""
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()] if out.returncode == 0 else []


def first_block_seconds(stats: dict) -> float | None:
    """Seconds from the campaign's start to its first finished block (start-up + one block's latency)."""
    tl = stats.get("timeline") or []
    return tl[0][0] if tl else None


def steady_rate(stats: dict, first_wave: int) -> float | None:
    """Programs/s from the end of the first wave of blocks (``first_wave`` programs: one block
    per worker, all started together) to the last finished block: no pool start-up, no tail.
    (Measuring from the first finished block instead, as before 2026-11-23 04:30, counted the
    rest of the first wave -- work done before that block -- and ran ~(workers-1)/blocks high.)"""
    tl = stats.get("timeline") or []
    start = next((k for k, (_, n) in enumerate(tl) if n >= first_wave), None)
    if start is None or len(tl) - start < 3:
        return None
    (t0, n0), (t1, n1) = tl[start], tl[-1]
    return round((n1 - n0) / (t1 - t0), 2) if t1 > t0 else None


def campaign(name: str, work: Path, plan: Plan, gpus: list[int], workers: int, bare_pps: float,
             gpu_workers: int = 0) -> dict:
    out = work / name
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    with CpuSplit() as cpu:
        stats = run_campaign(out, plan, gpus=gpus, workers=workers, gpu_workers=gpu_workers, progress=False)
    wall = time.perf_counter() - t0
    pps = stats["programs"] / wall
    # the first wave: one pool task per worker, a group of blocks each where the SASS judge
    # defers its disassembly (campaign.GROUP_BLOCKS, smaller only in a run of few blocks)
    blocks = plan.total_blocks() or 0
    group = max(1, min(GROUP_BLOCKS, (blocks - workers) // workers)) if deferrable(plan.judges) else 1
    steady = steady_rate(stats, workers * plan.block_size * group)
    return {"judges": list(plan.judges), "source": "corpus" if plan.corpus else "generated",
            "programs": stats["programs"], "seconds": round(wall, 2), "programs_per_second": round(pps, 2),
            "ratio_to_bare_ptxas": round(pps / bare_pps, 3),
            "first_block_after_seconds": first_block_seconds(stats),
            "steady_programs_per_second": steady,
            "steady_ratio_to_bare_ptxas": None if steady is None else round(steady / bare_pps, 3),
            "stage_ms_per_program": stats["stage_ms_per_program"], "gpu_idle_share": stats["gpu_idle_share"],
            "pool_busy_share": stats.get("pool_busy_share"), "pool_repro_seconds": stats.get("pool_repro_seconds"),
            "pool_unstaged_ms_per_program": stats.get("pool_unstaged_ms_per_program"),
            "gpu_programs": stats["gpu_programs"], "findings": stats["findings"], "faults": stats["faults"],
            "gpu_workers_per_gpu": stats.get("gpu_workers_per_gpu"),
            "gpu_worker_start_seconds_mean": stats.get("gpu_worker_start_seconds_mean"),
            "cpu": cpu.result(stats["programs"]), "timeline": stats.get("timeline")}


def pooled(result: dict) -> dict:
    """Each campaign configuration's runs pooled (programs over seconds, all its runs) against every
    bare run of the invocation pooled the same way: with runs alternating (``--only a,a,a
    --bare-after``) the machine's drift within the invocation falls on both sides alike."""
    bares = [result["bare_ptxas"]] + result.get("bare_after_runs", [])
    bare_pps = sum(b["programs"] for b in bares) / sum(b["seconds"] for b in bares)
    out: dict = {"bare_runs": len(bares), "bare_programs_per_second": round(bare_pps, 2)}
    for key, r in result["campaigns"].items():
        if "programs" not in r:
            continue
        c = out.setdefault(key.split("#")[0], {"runs": 0, "programs": 0, "seconds": 0.0, "ratios_to_bare_around": []})
        c["runs"] += 1
        c["programs"] += r["programs"]
        c["seconds"] = round(c["seconds"] + r["seconds"], 2)
        if "ratio_to_bare_before_and_after" in r:
            c["ratios_to_bare_around"].append(r["ratio_to_bare_before_and_after"])
    for _name, c in out.items():
        if isinstance(c, dict):
            c["programs_per_second"] = round(c["programs"] / c["seconds"], 2)
            c["ratio_to_pooled_bare"] = round(c["programs_per_second"] / bare_pps, 3)
    return out


def main(argv: list[str] | None = None) -> int:
    bench = start(None if argv is None else [__file__, *argv])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--examples", type=int, default=256)
    ap.add_argument("--block-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workers", type=int, default=0, help="processes for both sides (default: cores, -1 with a GPU)")
    ap.add_argument("--gpus", default="none", help="none, all, or 0,1")
    ap.add_argument("--only", default="full,full-cpu,ptxas-generated,ptxas-corpus", help="which campaign runs")
    ap.add_argument("--out", default="benchmarks/results/campaign_throughput.json")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--bare-after", action="store_true",
                    help="measure bare ptxas again after each run; each run's ratio is also given against the "
                         "mean of the bare runs just before and after it")
    ap.add_argument("--gpu-workers", type=int, default=0, help="GPU worker threads per GPU (default: the campaign's)")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="seconds: a run that would likely end later is skipped (0: no limit)")
    args = ap.parse_args(argv)
    from fuzzptx.engine.campaign import parse_gpus

    gpus = parse_gpus(args.gpus)
    if gpus:
        from fuzzptx.oracles.hardware import gpu_available

        if gpu_available():
            print(f"no GPU judge: {gpu_available()}", file=sys.stderr)
            gpus = []
    hw = ("hardware",) if gpus else ()
    workers = args.workers or max(1, (os.cpu_count() or 2) - (1 if gpus else 0))
    blocks = -(-args.examples // args.block_size)
    n = blocks * args.block_size
    work = Path(args.workdir or tempfile.mkdtemp(prefix="fuzzptx-bench-"))
    load = os.getloadavg()[0]
    # the campaign a user runs with the default settings: ``fuzzptx campaign`` resolves it (judges and
    # their pairs, avoided shapes, scalar kernels with a GPU judge); every run below draws alike
    cli, _ = campaign_config(build_parser().parse_args(
        ["--examples", str(n), "--seed", str(args.seed), "--block-size", str(args.block_size), "--gpus",
         args.gpus if gpus else "none", "--workers", str(workers), "--out", str(work / "defaults"), "--quiet"]))
    drawn = dict(numerics=cli.numerics, avoid=cli.avoid, scalar_share=cli.scalar_share)
    texts, gen_s = pregenerate(cli, blocks, workers, work / "corpus")
    bare = bare_ptxas(texts, workers, want_cubin=bool(gpus))
    print(f"bare ptxas: {bare['programs_per_second']} programs/s on {workers} workers", file=sys.stderr)
    corpus = tuple(sorted(str(p) for p in (work / "corpus").glob("*.ptx")))
    runs = {
        "full": Plan(seed=args.seed, block_size=args.block_size, examples=n,
                     judges=("reference", "checker", "ptxas") + hw, **drawn),
        "full-cpu": Plan(seed=args.seed, block_size=args.block_size, examples=n,
                         judges=("reference", "checker", "ptxas"), **drawn),
        # the judges of the nightly pytest route: the checker is a static judge a
        # hardware night can leave to the CPU fuzz runs
        "hardware-judges": Plan(seed=args.seed, block_size=args.block_size, examples=n,
                                judges=("reference", "ptxas") + hw, **drawn),
        # a campaign as ``fuzzptx campaign --examples N --seed S`` runs it: every default judge (the
        # SASS verifier, the metamorphic judge with the campaign's pairs, share and input sets)
        "defaults": cli,
        "ptxas-generated": Plan(seed=args.seed, block_size=args.block_size, examples=n, judges=("ptxas",) + hw,
                                **drawn),
        "ptxas-corpus": Plan(block_size=args.block_size, corpus=corpus, judges=("ptxas",) + hw),
    }
    from fuzzptx.oracles.ptxas import ptxas_version

    result = {
        "what": "campaign throughput vs bare batched ptxas on the same programs and the same number of processes",
        "host": platform.node(), "cpus": os.cpu_count(), "gpu_devices": _gpu_devices(),
        "ptxas": ptxas_version(), "python": sys.version.split()[0], "load_at_start": round(load, 2), "workers": workers,
        "gpus": gpus, "programs": n, "block_size": args.block_size, "seed": args.seed,
        # blocks a pool task prepares together where a judge has once-per-block work (the SASS judge)
        "group_blocks": GROUP_BLOCKS,
        "drawn": {"numerics": cli.numerics, "avoid": sorted(cli.avoid), "scalar_share": cli.scalar_share},
        "defaults_judges": [f"{j.name}" + (f"(pairs={','.join(j.pairs)}, share={j.share}, inputs={j.inputs})"
                                           if j.name == "metamorphic" else "") for j in cli.judges.judges],
        "generation_seconds_on_pool": round(gen_s, 2), "bare_ptxas": bare, "campaigns": {},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic() - gen_s - bare["seconds"]
    last_run = 0.0
    seen: dict[str, int] = {}
    for name in args.only.split(","):
        seen[name] = seen.get(name, 0) + 1  # a name given again is run again: key name#2, name#3, ...
        key = name if seen[name] == 1 else f"{name}#{seen[name]}"
        elapsed = time.monotonic() - started
        if args.budget and elapsed + 1.5 * last_run > args.budget:  # the next run would likely overrun: say so
            result["campaigns"][key] = {"skipped": f"budget: {elapsed:.0f} s spent, the last run took {last_run:.0f} s"}
            print(f"{key}: skipped (budget)", file=sys.stderr)
            continue
        t0 = time.monotonic()
        r = campaign(name, work, runs[name], gpus if "hardware" in runs[name].judges else [], workers,
                     bare["programs_per_second"], args.gpu_workers)
        last_run = time.monotonic() - t0
        if args.bare_after:  # the machine's ptxas speed drifts within an invocation: bracket each run
            after = bare_ptxas(texts, workers, want_cubin=bool(gpus))
            mean = (bare["programs_per_second"] + after["programs_per_second"]) / 2
            r.update(bare_before=bare["programs_per_second"], bare_after=after["programs_per_second"],
                     ratio_to_bare_before_and_after=round(r["programs_per_second"] / mean, 3))
            print(f"bare ptxas after {name}: {after['programs_per_second']} programs/s; {name} = "
                  f"{r['ratio_to_bare_before_and_after']:.0%} of the mean of the bare runs around it", file=sys.stderr)
            bare = after
            result.setdefault("bare_after_runs", []).append(after)
        result["campaigns"][key] = r
        print(f"{name}: {r['programs_per_second']} programs/s = {r['ratio_to_bare_ptxas']:.0%} of bare ptxas "
              f"(steady {r['steady_ratio_to_bare_ptxas']}, first block after {r['first_block_after_seconds']} s); "
              f"ms/program {r['stage_ms_per_program']}; gpu idle {r['gpu_idle_share']}", file=sys.stderr)
        Path(args.out).write_text(json.dumps(result, indent=1))
    result["pooled"] = pooled(result)
    result["seconds_total"] = round(time.monotonic() - started, 1)
    bench.finish(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
