"""``fuzzptx campaign``: long, batched, resumable, shardable fuzzing with the GPU judge.

Work is cut into *blocks*: block ``b`` holds ``block_size`` programs drawn from
the strategies under seed ``(S, b)``, so any process can rebuild any block and
the work is a deterministic function of the seed.  ``--shard i/n`` takes the
blocks with ``b % n == i``; ``--resume`` rereads ``results.jsonl`` and skips
every (block, index) already judged.  A pool of CPU processes prepares blocks
(generate, reference, checker, one batched ptxas run that also yields the
block's cubin); one isolated GPU worker per GPU runs the programs; the main
process compares, appends each record (flushed) and draws the progress line.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing as mp
import os
import queue
import re
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzzptx import differ
from fuzzptx.errors import FuzzptxError
from fuzzptx.program import Program

STAGES = ("generate", "reference", "checker", "ptxas", "gpu")


@dataclass
class Prepared:
    """One block after the CPU stages: ready for the GPU (or already final without one)."""

    block: int
    programs: list[Program]
    indices: list[int]
    verdicts: list[differ.Verdicts]
    cubins: list[bytes | None]  # per program; programs of one ptxas run share one bytes object
    kernel_names: list[str]
    seconds: dict[str, float]


def block_seed(seed: int, block: int) -> int:
    return (seed * 1_000_003 + block * 7919) % (2**31)


def prepare_block(block: int, seed: int, size: int, judges: tuple[str, ...], skip: frozenset[int]) -> Prepared:
    """CPU stages for one block (runs in a pool process)."""
    from fuzzptx.fuzz import draw_programs

    secs: Counter = Counter()
    t0 = time.perf_counter()
    programs = draw_programs(size, block_seed(seed, block))
    secs["generate"] += time.perf_counter() - t0
    keep = [i for i in range(len(programs)) if i not in skip]
    programs = [programs[i] for i in keep]
    texts = [p.to_ptx() for p in programs]
    verdicts = [differ.judge(p, [j for j in judges if j in ("reference", "checker")], text=t) for p, t in zip(programs, texts)]
    for v in verdicts:
        for k, s in v.seconds.items():
            secs[k] += s
    cubins: list[bytes | None] = [None] * len(programs)
    names: list[str] = [""] * len(programs)
    if "ptxas" in judges or "hardware" in judges:
        from fuzzptx.oracles.ptxas import compile_batch

        t0 = time.perf_counter()
        results = compile_batch(texts, want_cubin="hardware" in judges)
        secs["ptxas"] += time.perf_counter() - t0
        for v, r in zip(verdicts, results):
            v.ptxas = r
        if "hardware" in judges:
            for i, (p, r) in enumerate(zip(programs, results)):
                if r.accepted and r.cubin:
                    cubins[i] = r.cubin
                    names[i] = r.kernel(p.launch.kernel)
    return Prepared(block, programs, keep, verdicts, cubins, names, dict(secs))


# --------------------------------------------------------------- the record


def done_keys(path: Path) -> set[tuple[int, int]]:
    """(block, index) pairs already judged; a torn last line (kill -9) is ignored."""
    keys: set[tuple[int, int]] = set()
    if not path.exists():
        return keys
    with path.open() as fh:
        for line in fh:
            try:
                rec = json.loads(line)
                keys.add((int(rec["block"]), int(rec["index"])))
            except (ValueError, KeyError, TypeError):
                continue
    return keys


def _truncate_torn_tail(path: Path) -> None:
    """Drop a partial last line left by a kill, so appends start on a fresh line."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return
        data = path.read_bytes()
        fh.seek(0)
        fh.truncate(data.rfind(b"\n") + 1)


def parse_duration(text: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", text.strip())
    if not m:
        raise FuzzptxError(f"--time {text!r}: expected a duration like 300, 300s, 5m or 2h")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def parse_shard(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)/(\d+)", text)
    if not m or not int(m.group(2)) or int(m.group(1)) >= int(m.group(2)):
        raise FuzzptxError(f"--shard {text!r}: expected i/n with 0 <= i < n")
    return int(m.group(1)), int(m.group(2))


def parse_gpus(text: str) -> list[int]:
    if text == "none":
        return []
    if text == "all":
        from fuzzptx.pytest_plugin import _visible_gpu_count

        env = os.environ.get("CUDA_VISIBLE_DEVICES")
        if env is not None:
            return list(range(len([d for d in env.split(",") if d.strip()])))
        return list(range(_visible_gpu_count()))
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise FuzzptxError(f"--gpus {text!r}: expected all, none or a list like 0,1") from None


@dataclass
class Live:
    """Counters behind the progress line and stats.json."""

    start: float = field(default_factory=time.perf_counter)
    programs: int = 0
    findings: int = 0
    stage: Counter = field(default_factory=Counter)
    gpu_busy: Counter = field(default_factory=Counter)
    buckets: Counter = field(default_factory=Counter)
    faults: Counter = field(default_factory=Counter)
    workers: int = 1

    def rates(self) -> dict[str, float]:
        """Programs per second each stage could sustain with the processes it has."""
        out = {}
        for s in STAGES:
            if self.stage[s] > 0:
                par = 1 if s == "gpu" else self.workers
                out[s] = round(self.programs * par / self.stage[s], 1)
        return out

    def gpu_idle_share(self, gpus: int) -> float | None:
        if not gpus:
            return None
        wall = time.perf_counter() - self.start
        return round(1 - sum(self.gpu_busy.values()) / (wall * gpus), 3) if wall else None


def _hardware_runner(gpu: int):
    from fuzzptx.oracles.hardware import HardwareWorker

    return HardwareWorker(device=gpu)


def run_campaign(out: Path, *, seed: int, examples: int | None, seconds: float | None, gpus: list[int],
                 shard: tuple[int, int], resume: bool, judges: tuple[str, ...], block_size: int, workers: int,
                 progress: bool = True) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    if results.exists() and not resume:
        raise FuzzptxError(f"{results} exists: pass --resume to carry on, or choose another --out")
    _truncate_torn_tail(results)
    done = done_keys(results)
    (out / "repros").mkdir(exist_ok=True)
    meta = {"seed": seed, "block_size": block_size, "shard": f"{shard[0]}/{shard[1]}", "judges": list(judges)}
    meta_path = out / "campaign.json"
    if meta_path.exists():
        old = json.loads(meta_path.read_text())
        for k in ("seed", "block_size", "shard"):
            if old.get(k) != meta[k]:
                raise FuzzptxError(f"--resume with {k}={meta[k]} but the campaign in {out} used {old.get(k)}")
    meta_path.write_text(json.dumps(meta, indent=1))
    live = Live(workers=workers)
    total_blocks = None if examples is None else -(-examples // block_size)
    deadline = None if seconds is None else time.monotonic() + seconds

    def blocks():
        b = shard[0]
        while total_blocks is None or b < total_blocks:
            yield b
            b += shard[1]

    use_gpu = "hardware" in judges and gpus
    gpu_q: queue.Queue = queue.Queue(maxsize=max(2, 2 * len(gpus)))
    done_q: queue.Queue = queue.Queue()
    runners = [_hardware_runner(g) for g in gpus] if use_gpu else []

    def gpu_loop(idx: int, runner) -> None:
        while True:
            item = gpu_q.get()
            if item is None:
                return
            t0 = time.perf_counter()
            hw = []
            for p, cubin, name in zip(item.programs, item.cubins, item.kernel_names):
                hw.append(runner.run(p, cubin=cubin, kernel=name) if cubin else None)
            live.gpu_busy[idx] += time.perf_counter() - t0
            done_q.put((item, hw))

    threads = [threading.Thread(target=gpu_loop, args=(i, r), daemon=True) for i, r in enumerate(runners)]
    for t in threads:
        t.start()

    ctx = mp.get_context("spawn")
    with results.open("a") as log, cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        pending: set[cf.Future] = set()
        block_iter = blocks()
        in_gpu = 0
        exhausted = False

        def submit_more() -> None:
            nonlocal exhausted
            while not exhausted and len(pending) < workers * 2:
                if deadline is not None and time.monotonic() > deadline:
                    exhausted = True
                    return
                try:
                    b = next(block_iter)
                except StopIteration:
                    exhausted = True
                    return
                skip = frozenset(i for (bb, i) in done if bb == b)
                if len(skip) >= block_size:
                    continue
                pending.add(pool.submit(prepare_block, b, seed, block_size, judges, skip))

        def finish(item: Prepared, hw: list[Any] | None) -> None:
            for k, s in item.seconds.items():
                live.stage[k] += s
            for j, (p, v, idx) in enumerate(zip(item.programs, item.verdicts, item.indices)):
                if examples is not None and item.block * block_size + idx >= examples:
                    continue
                if hw is not None:
                    v.hardware = hw[j]
                    if hw[j] is not None:
                        live.stage["gpu"] += hw[j].seconds
                        if hw[j].fault:
                            live.faults[hw[j].fault] += 1
                findings = differ.compare(p, v)
                repro = None
                for f in findings:
                    live.buckets[f.signature] += 1
                    live.findings += 1
                    if live.buckets[f.signature] == 1 or f.pair.startswith("hardware"):
                        repro = _save_repro(out, p, v, f, item.block, idx)
                rec = _record(item.block, idx, p, v, findings, repro)
                log.write(json.dumps(rec) + "\n")
                log.flush()
                live.programs += 1
            if progress:
                _progress(live, len(gpus) if use_gpu else 0)

        submit_more()
        while pending or in_gpu:
            if pending:
                finished, _ = cf.wait(pending, timeout=0.05, return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    pending.discard(fut)
                    item = fut.result()
                    if use_gpu:
                        gpu_q.put(item)
                        in_gpu += 1
                    else:
                        finish(item, None)
                submit_more()
            while True:
                try:
                    item, hw = done_q.get_nowait() if pending else done_q.get(timeout=0.05)
                except queue.Empty:
                    break
                in_gpu -= 1
                finish(item, hw)
    for _ in threads:
        gpu_q.put(None)
    for t in threads:
        t.join(timeout=5)
    for r in runners:
        r.close()
    wall = time.perf_counter() - live.start
    stats = {
        "programs": live.programs,
        "wall_seconds": round(wall, 2),
        "programs_per_second": round(live.programs / wall, 2) if wall else 0,
        "stage_rates_programs_per_second": live.rates(),
        "stage_cpu_seconds": {k: round(v, 2) for k, v in live.stage.items()},
        "gpu_idle_share": live.gpu_idle_share(len(gpus) if use_gpu else 0),
        "gpus": gpus if use_gpu else [],
        "cpu_workers": workers,
        "findings": live.findings,
        "faults": dict(live.faults),
        "buckets": dict(live.buckets.most_common()),
        "resumed_skipping": len(done),
    }
    (out / "stats.json").write_text(json.dumps(stats, indent=1))
    if progress:
        sys.stderr.write("\n")
    return stats


def _record(block: int, idx: int, p: Program, v: differ.Verdicts, findings: list[differ.Finding], repro: str | None) -> dict:
    from fuzzptx.fuzz import coverage_of, _forms_in
    from fuzzptx.shrink import instruction_count

    return {
        "block": block, "index": idx, "id": f"{block}:{idx}", "t": time.time(),
        "family": differ.program_family(p), "forms": sorted(_forms_in(p)), "coverage": coverage_of(p),
        "instructions": instruction_count(p), "verdicts": v.summary(),
        "findings": [{"signature": f.signature, "message": f.message} for f in findings], "repro": repro,
    }


def _save_repro(out: Path, p: Program, v: differ.Verdicts, f: differ.Finding, block: int, idx: int) -> str:
    judges = tuple(j for j in differ.CPU_JUDGES)
    try:
        prog = differ.finalize_repro(p, judges, f.signature)
    except Exception:  # never lose the finding over its bookkeeping
        from dataclasses import replace

        prog = replace(p, signature=f.signature)
    if v.hardware is not None:
        from dataclasses import replace

        prog = replace(prog, notes=prog.notes + (f"hardware when found: {v.summary().get('hardware', '?')}",))
    path = out / "repros" / f"b{block}_{idx}.ptx"
    path.write_text(prog.to_ptx())
    return str(path)


def _progress(live: Live, gpus: int) -> None:
    wall = time.perf_counter() - live.start
    rates = " ".join(f"{k} {v}/s" for k, v in live.rates().items())
    idle = live.gpu_idle_share(gpus)
    sys.stderr.write(f"\r{live.programs} programs {live.programs / wall:.1f}/s | {rates} | findings {live.findings}"
                     + (f" | gpu idle {idle:.0%}" if idle is not None else "") + "   ")
    sys.stderr.flush()


def main_campaign(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fuzzptx campaign", description="Batched, isolated, resumable hardware campaign.")
    lim = ap.add_mutually_exclusive_group(required=True)
    lim.add_argument("--time", help="duration: 300, 5m, 2h")
    lim.add_argument("--examples", type=int)
    ap.add_argument("--gpus", default="all", help="all, none, or a list like 0,1")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shard", default="0/1")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--judges", default="reference,checker,ptxas,hardware")
    ap.add_argument("--block-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=0, help="CPU processes (default: cores minus one per GPU)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    judges = tuple(j.strip() for j in args.judges.split(",") if j.strip())
    gpus = parse_gpus(args.gpus)
    if "hardware" in judges and not gpus:
        print("fuzzptx campaign: no GPU selected: running without the hardware judge", file=sys.stderr)
        judges = tuple(j for j in judges if j != "hardware")
    if "hardware" in judges:
        from fuzzptx.oracles.hardware import gpu_available

        reason = gpu_available()
        if reason:
            print(f"fuzzptx campaign: hardware judge unavailable ({reason}); running without it", file=sys.stderr)
            judges = tuple(j for j in judges if j != "hardware")
    workers = args.workers or max(1, (os.cpu_count() or 2) - (len(gpus) if "hardware" in judges else 0))
    stats = run_campaign(Path(args.out), seed=args.seed, examples=args.examples,
                         seconds=parse_duration(args.time) if args.time else None, gpus=gpus,
                         shard=parse_shard(args.shard), resume=args.resume, judges=judges,
                         block_size=args.block_size, workers=workers, progress=not args.quiet)
    print(json.dumps(stats, indent=1))
    return 0
