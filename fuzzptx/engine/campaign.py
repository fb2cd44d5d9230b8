"""The engine: ``fuzzptx campaign`` (long, batched, resumable, shardable, with the GPU) and, at
a small scale, ``fuzzptx run`` (``fuzzptx.engine.run``: the same engine inline or on a small pool,
shrinking each new finding).

Work is cut into *blocks*: block ``b`` holds ``block_size`` programs drawn from
the strategies under seed ``(S, b)`` (or files ``b*size ..`` of a ``--corpus``),
so any process can rebuild any block and the work is a deterministic function of
the seed.  ``--shard i/n`` takes the blocks with ``b % n == i``; ``--resume``
rereads ``results.jsonl`` and skips every (block, index) already judged.

A pool of CPU processes prepares blocks (generate, one batched ptxas run that also
yields the cubins, checker, reference on what ptxas accepted, record fields); the
pool forks from a forkserver that preloaded the judges, so it starts in well under a
second.  Threads per GPU feed isolated ``HardwareWorker``s, each with a warm spare
(a trap or hang kills and restarts only that worker, in the background, while the
spare runs on; the program becomes a finding, the rest of the block runs on); the
main process compares, appends each record (one JSON line, flushed) and draws the
progress line.  A finding that is the smallest of its signature so far is written to
``repros/`` at once (kill-safe), then rewritten in the pool with EXPECT lines: the
campaign's own verdicts moved to the file's final header (``differ.finalize_repro``), so
``fuzzptx replay`` finds them holding.  ``--plant-faults`` adds a
kernel that traps and one that hangs to one block in the middle of the campaign.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing as mp
import os
import queue
import re
import signal
import sys
import threading
import time
from collections import Counter
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzzptx.errors import FuzzptxError
from fuzzptx.inputs import InputError, read_jsonl, read_text
from fuzzptx.judges.finding import MODEL
from fuzzptx.judges.base import COMPILE, DEVICE, GPU, Judge
from fuzzptx.judges.registry import by_stage
from fuzzptx.judges.selection import JudgeSet
from fuzzptx.oracles.hardware import HardwareWorker, visible_gpu_count
from fuzzptx.program import Program

from .block import Prepared, deferrable, gpu_stages, pool_block, pool_blocks, warm
from .config import RunConfig
from .options import (GENERATOR_HELP, GENERATORS, Parser, add_examples, add_judges, add_kernels, add_numerics, add_pairs,
                      add_out, add_ptxas, add_seed, add_steer, add_workers, count_or_zero, positive_int, positive_seconds,
                      share)
from .generate import SCALAR_SHARE, BlockTask, block_programs_left
from .steering import SassCoverage, SteerFold, steer_lag
from .outlock import DEFAULT_STALE_AFTER, OutLock, acquire
from .records import findings_of, record
from .repro import finalize_repro_file, judges_that_ran, repro_stem, write_raw

# Stage seconds that are not a stage a program goes through (time counted twice, bookkeeping).
NOT_RATED = ("overlapped", "gc", "emit", "emit+parse")
# blocks one pool task prepares together when a judge has once-per-block work (``block.deferrable``:
# the SASS judge's disassembler run, ~0.25 s of CPU at start-up whatever its input): one run
# serves the group, and the group's verdicts wait for its last block
GROUP_BLOCKS = 4
# seconds the blocks in flight get to finish into the record after Ctrl-C or SIGTERM
STOP_GRACE_S = 3.0


class CampaignError(FuzzptxError):
    """A bad flag or an unusable campaign directory (one line at the CLI)."""


Plan = RunConfig  # the name the campaign's callers knew it by


# ----------------------------------------------------------------- one block


# ----------------------------------------------------------------- the record


def done_keys(path: Path, problems: list[str] | None = None) -> Counter:
    """(block, index) -> how often it is in the record.  A line that is not a record of this
    campaign (corrupt, or foreign) is left out and named in ``problems``; a file that is not a
    record at all (binary, a PTX file) is an ``InputError``."""
    keys: Counter = Counter()
    if not path.exists():
        return keys
    for lineno, rec in read_jsonl(path, on_bad="skip", problems=problems):
        try:
            keys[(int(rec["block"]), int(rec["index"]))] += 1
        except (ValueError, KeyError, TypeError, OverflowError):
            if problems is not None:
                problems.append(f"{path}:{lineno}: skipped: not a program of this campaign (no integer block and index)")
    return keys


def _recorded_sass_forms(path: Path) -> dict[int, list]:
    """block -> [(index, sass forms)] of the record (what a resumed steered run folds again)."""
    out: dict[int, list] = {}
    for _, rec in read_jsonl(path, on_bad="skip"):
        try:
            out.setdefault(int(rec["block"]), []).append((int(rec["index"]), rec.get("sass_forms")))
        except (ValueError, KeyError, TypeError, OverflowError):
            continue
    return out


def check_record(path: Path) -> None:
    """Refuse a ``results.jsonl`` that is not a campaign record (binary, a PTX file) with one
    line, before ``--resume`` touches it; a file of one torn line (a kill during the first
    write) passes, for the torn-tail cut to clear."""
    if not path.exists():
        return
    with path.open("rb") as fh:
        head = fh.read(1 << 20)
    # a NUL in the first line: binary; one in a later line is that line's problem (``done_keys``
    # skips and counts it, as triage and report do)
    nul = head.split(b"\n", 1)[0].find(b"\0")
    if nul >= 0:
        raise InputError(f"binary data (NUL byte at offset {nul}), not a campaign record "
                         "(--resume reads the results.jsonl of an earlier campaign)", str(path))
    if b"\n" in head:
        next(read_jsonl(path), None)  # the first line must be a record


def _truncate_torn_tail(path: Path, chunk: int = 1 << 16) -> None:
    """Drop a partial last line left by a kill, so appends start on a fresh line.  Reads back
    from the end only as far as the last newline: a night's record runs to gigabytes."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as fh:
        end = fh.seek(0, 2)
        fh.seek(end - 1)
        if fh.read(1) == b"\n":
            return
        pos = end
        while pos > 0:
            start = max(0, pos - chunk)
            fh.seek(start)
            nl = fh.read(pos - start).rfind(b"\n")
            if nl >= 0:
                fh.truncate(start + nl + 1)
                return
            pos = start
        fh.truncate(0)  # no complete line at all


# ----------------------------------------------------------------- flags


def parse_duration(text: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", text.strip())
    if not m or float(m.group(1)) <= 0:
        raise CampaignError(f"--time {text!r}: expected a positive duration like 300, 300s, 5m or 2h")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def parse_shard(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not m or not int(m.group(2)) or int(m.group(1)) >= int(m.group(2)):
        raise CampaignError(f"--shard {text!r}: expected i/n with 0 <= i < n")
    return int(m.group(1)), int(m.group(2))


SHARD_COUNT_ENV = "FUZZPTX_SHARD_COUNT"


def shard_from_env(env: dict[str, str] | None = None) -> tuple[tuple[int, int], str] | None:
    """The shard a batch system gives this process when ``--shard`` is not: (shard, where from), or None.

    * Slurm job array: ``SLURM_ARRAY_TASK_ID`` less ``SLURM_ARRAY_TASK_MIN`` (0 if unset: an
      ``--array=1-3`` is shards 0..2) of ``SLURM_ARRAY_TASK_COUNT``.
    * Kubernetes indexed Job: ``JOB_COMPLETION_INDEX`` of ``FUZZPTX_SHARD_COUNT`` (Kubernetes does
      not export the Job's ``completions``: the manifest sets this variable to the same number).
    """
    env = os.environ if env is None else env

    def num(name: str) -> int:
        text = env[name].strip()
        if not re.fullmatch(r"\d+", text):
            raise CampaignError(f"{name}={env[name]!r}: expected a non-negative integer (the shard comes from it)")
        return int(text)

    if "SLURM_ARRAY_TASK_ID" in env:
        if "SLURM_ARRAY_TASK_COUNT" not in env:
            raise CampaignError("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not: pass --shard i/n")
        i = num("SLURM_ARRAY_TASK_ID") - (num("SLURM_ARRAY_TASK_MIN") if "SLURM_ARRAY_TASK_MIN" in env else 0)
        n = num("SLURM_ARRAY_TASK_COUNT")
        where = "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT"
    elif "JOB_COMPLETION_INDEX" in env:
        if SHARD_COUNT_ENV not in env:
            raise CampaignError(f"JOB_COMPLETION_INDEX is set but {SHARD_COUNT_ENV} is not: set it to the Job's "
                                "completions, or pass --shard i/n")
        i, n = num("JOB_COMPLETION_INDEX"), num(SHARD_COUNT_ENV)
        where = f"JOB_COMPLETION_INDEX/{SHARD_COUNT_ENV}"
    else:
        return None
    if not 0 <= i < n:
        raise CampaignError(f"shard {i}/{n} from {where}: expected 0 <= i < n")
    return (i, n), where


def parse_gpus(text: str) -> list[int]:
    if text == "none":
        return []
    if text == "all":
        env = os.environ.get("CUDA_VISIBLE_DEVICES")
        if env is not None:
            return list(range(len([d for d in env.split(",") if d.strip() and d.strip() != "-1"])))
        return list(range(visible_gpu_count()))
    try:
        gpus = [int(x) for x in text.split(",")]
    except ValueError:
        raise CampaignError(f"--gpus {text!r}: expected all, none or a list like 0,1") from None
    if any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
        raise CampaignError(f"--gpus {text!r}: expected distinct GPU indices >= 0")
    return gpus


def corpus_files(directory: str) -> list[str]:
    d = Path(directory)
    if not d.is_dir():
        raise CampaignError(f"--corpus {directory}: not a directory")
    files = sorted(str(p) for p in d.rglob("*.ptx"))
    if not files:
        raise CampaignError(f"--corpus {directory}: no .ptx files in it")
    return files


def usable_corpus(files: list[str]) -> tuple[list[str], list[str]]:
    """(the corpus files that read and parse as fuzzptx programs, one line per file that does
    not).  Checked once, before any block: a bad file becomes a named skip in stats.json instead
    of losing its block or killing pool processes."""
    good: list[str] = []
    skipped: list[str] = []
    for f in files:
        try:
            Program.from_ptx(read_text(f, what="PTX file"), f)
        except FuzzptxError as exc:
            skipped.append(str(exc))
            continue
        except (RecursionError, MemoryError, ValueError) as exc:  # a parser limit, not a verdict
            skipped.append(f"{f}: cannot be parsed ({type(exc).__name__})")
            continue
        good.append(f)
    return good, skipped


# ----------------------------------------------------------------- live counters


@dataclass
class FirstFew:
    """The first ``keep`` messages of a kind, and how many there were: a GPU that cannot start
    would otherwise leave one message per program in memory for a whole night."""

    keep: int = 20
    items: list = field(default_factory=list)
    count: int = 0

    def append(self, message: str) -> None:
        self.count += 1
        if len(self.items) < self.keep:
            self.items.append(message)


@dataclass
class Live:
    """Counters behind the progress line and stats.json."""

    workers: int = 1
    gpus: int = 0
    start: float = field(default_factory=time.perf_counter)
    programs: int = 0
    findings: int = 0
    stage: Counter = field(default_factory=Counter)  # CPU-process seconds per stage (gpu: kernel-job seconds)
    gpu_busy: Counter = field(default_factory=Counter)  # per GPU: seconds with at least one job running on it
    gpu_active: Counter = field(default_factory=Counter)
    gpu_since: dict = field(default_factory=dict)
    lock: Any = field(default_factory=threading.Lock)
    gpu_programs: int = 0
    buckets: Counter = field(default_factory=Counter)  # root cause (str) -> findings
    evidence: Counter = field(default_factory=Counter)  # signature -> findings it is evidence of
    first_seen: dict = field(default_factory=dict)  # root cause -> (programs, seconds) when first found
    smallest: dict = field(default_factory=dict)  # root cause -> fewest instructions so far
    faults: Counter = field(default_factory=Counter)
    restarts: Counter = field(default_factory=Counter)
    gpu_errors: FirstFew = field(default_factory=FirstFew)
    block_errors: FirstFew = field(default_factory=FirstFew)
    gpu_workers: int = 0
    runner_stats: dict = field(default_factory=dict)  # runner -> (start seconds, seconds waited for a worker to start)
    dropped_at_deadline: int = 0  # prepared programs left unjudged (not recorded) when --time ran out
    timeline: list = field(default_factory=list)  # (seconds, programs) every few seconds
    pool_blocks: float = 0.0  # pool-process seconds spent preparing the blocks judged so far
    pool_repros: float = 0.0  # pool-process seconds spent finalising repros
    illegal: int = 0  # programs labelled by a mutation
    accepted: Counter = field(default_factory=Counter)  # compiling judge (a ptxas release) -> programs it accepted
    families: Counter = field(default_factory=Counter)
    forms: set = field(default_factory=set)  # catalogue forms reached
    sass: SassCoverage = field(default_factory=SassCoverage)  # SASS forms reached (the records' sass_forms)
    repros: dict = field(default_factory=dict)  # root cause -> its repro file
    record_problems: list = field(default_factory=list)  # lines of results.jsonl --resume left out, named

    def wall(self) -> float:
        return time.perf_counter() - self.start

    def rates(self) -> dict[str, float]:
        """Programs per second each stage could sustain with the processes it has."""
        out = {}
        for s in [k for k in self.stage if k not in NOT_RATED and not k.startswith(("record", "gpu ")) and "(" not in k]:
            if self.stage[s] > 0:
                n = self.gpu_programs if s == "gpu" else self.programs
                par = max(self.gpus, 1) if s == "gpu" else self.workers
                out[s] = round(n * par / self.stage[s], 1)
        return out

    def pool_accounting(self) -> dict[str, float | None]:
        """Where the CPU pool's time went: its busy share (blocks and repros over workers x wall),
        and per program the block time no stage timer covers (emitting, records, pickling)."""
        wall = self.wall()
        busy = (self.pool_blocks + self.pool_repros) / (self.workers * wall) if wall else None
        staged = sum(v for k, v in self.stage.items() if k not in ("gpu", "overlapped")
                     and not k.startswith(("gpu ", "record"))) - self.stage.get("overlapped", 0.0)
        return {
            "pool_busy_share": round(busy, 3) if busy is not None else None,
            "pool_repro_seconds": round(self.pool_repros, 2),
            "pool_unstaged_ms_per_program": round((self.pool_blocks - staged) / self.programs * 1000, 2)
            if self.programs else None,
        }

    def ms_per_program(self) -> dict[str, float]:
        out = {}
        for s, v in self.stage.items():
            n = self.gpu_programs if s == "gpu" else self.programs
            if n:
                out[s] = round(1000 * v / n, 2)
        return out

    def gpu_enter(self, gpu: int) -> None:
        with self.lock:
            if not self.gpu_active[gpu]:
                self.gpu_since[gpu] = time.perf_counter()
            self.gpu_active[gpu] += 1

    def gpu_leave(self, gpu: int) -> None:
        with self.lock:
            self.gpu_active[gpu] -= 1
            if not self.gpu_active[gpu]:
                self.gpu_busy[gpu] += time.perf_counter() - self.gpu_since.pop(gpu)

    def gpu_idle_share(self) -> float | None:
        wall = self.wall()
        if not self.gpus or not wall:
            return None
        return round(max(0.0, 1 - sum(self.gpu_busy.values()) / (wall * self.gpus)), 4)


class SparedWorker:
    """A GPU worker with a warm spare: after a fault (the worker process is killed) the spare,
    already started, runs the next program while the dead one restarts in the background, so
    a restart (CuPy import, CUDA context) never holds up the queue.  Both start in the
    background as soon as the campaign starts (while the CPU pool prepares the first blocks),
    so the first GPU job does not pay a start either."""

    def __init__(self, make):
        self.active, self.spare = make(), make()
        self.start_seconds: list[float] = []  # how long each background (re)start took
        self.waited = 0.0  # seconds the queue waited for a worker still starting
        self._starting: dict[int, threading.Thread] = {}
        self._warm(self.active)
        self._warm(self.spare)

    def _warm(self, worker) -> None:
        def start() -> None:
            t0 = time.perf_counter()
            try:
                worker.start()
                self.start_seconds.append(time.perf_counter() - t0)
            except Exception:  # its next run starts it again (and reports why it cannot)
                pass

        t = threading.Thread(target=start, daemon=True)
        self._starting[id(worker)] = t
        t.start()

    def _ready(self, worker) -> None:
        t = self._starting.pop(id(worker), None)
        if t is not None:
            t0 = time.perf_counter()
            t.join()
            self.waited += time.perf_counter() - t0

    @property
    def restarts(self) -> int:
        return self.active.restarts + self.spare.restarts

    def run(self, program: Program, *, cubin: bytes, kernel: str):
        self._ready(self.active)
        before = self.active.restarts
        result = self.active.run(program, cubin=cubin, kernel=kernel)
        if self.active.restarts != before:  # killed after a fault: swap in the warm spare
            self.active, self.spare = self.spare, self.active
            self._warm(self.spare)
        return result

    def request_stop(self) -> None:
        """Ask both workers to exit (one still starting is asked by ``close``)."""
        for w in (self.active, self.spare):
            t = self._starting.get(id(w))
            if t is None or not t.is_alive():
                w.request_stop()

    def close(self) -> None:
        for t in list(self._starting.values()):
            t.join(timeout=30)
        self.active.close()
        self.spare.close()


def _hardware_runner(gpu: int, timeout: float):
    return SparedWorker(lambda: HardwareWorker(device=gpu, timeout=timeout))


# ----------------------------------------------------------------- the campaign


def _check_meta(out: Path, plan: RunConfig, resume: bool) -> dict:
    meta = {"seed": plan.seed, "block_size": plan.block_size, "shard": f"{plan.shard[0]}/{plan.shard[1]}",
            "corpus": None if plan.corpus is None else len(plan.corpus), "generator": plan.generator,
            "numerics": plan.numerics, "planted_block": None, "avoid": sorted(plan.avoid),
            "scalar_share": plan.scalar_share, "steer": plan.steer}
    path = out / "campaign.json"
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except ValueError:
            raise CampaignError(f"{path}: not a campaign record (bad JSON)") from None
        for k in ("seed", "block_size", "shard", "corpus", "generator", "numerics", "avoid", "scalar_share"):
            if old.get(k, 0.0 if k == "scalar_share" else meta[k]) != meta[k]:
                raise CampaignError(f"--resume with {k}={meta[k]} but the campaign in {out} used {old.get(k)}")
        meta["planted_block"] = old.get("planted_block")
    return meta


def run_campaign(out: Path, plan: RunConfig, *, gpus: list[int], resume: bool = False, workers: int = 1,
                 gpu_timeout: float = 5.0, gpu_workers: int = 0, progress: bool = True, inline: bool = False,
                 force_takeover: bool = False, stale_after: float = DEFAULT_STALE_AFTER) -> dict:
    """Run (or resume) a campaign into ``out``; returns the stats also written to stats.json.
    ``inline``: prepare each block in this process instead of a pool (a small run: no pool start).
    The directory is locked first (``outlock``): a second campaign on it is refused, naming the
    holder; a crashed holder's lock is taken over (``force_takeover``/``stale_after``: another host's)."""
    lock = acquire(out, force_takeover=force_takeover, stale_after=stale_after)
    if lock.took_over is not None and progress:
        _say(f"fuzzptx campaign: took over the lock of a campaign that is gone ({lock.took_over.describe()})")
    try:
        return _run_locked(out, plan, lock, gpus=gpus, resume=resume, workers=workers, gpu_timeout=gpu_timeout,
                           gpu_workers=gpu_workers, progress=progress, inline=inline)
    finally:
        lock.release()


def _run_locked(out: Path, plan: RunConfig, lock: OutLock, *, gpus: list[int], resume: bool, workers: int,
                gpu_timeout: float, gpu_workers: int, progress: bool, inline: bool) -> dict:
    results = out / "results.jsonl"
    if results.exists() and results.stat().st_size and not resume:
        raise CampaignError(f"{results} exists: pass --resume to carry on, or choose another --out")
    meta = _check_meta(out, plan, resume)
    check_record(results)  # before the torn-tail cut: a foreign file is refused, never truncated
    _truncate_torn_tail(results)
    record_problems: list[str] = []
    done = done_keys(results, record_problems)
    for p in record_problems[:10]:
        _say(f"fuzzptx campaign: --resume: {p}")
    if len(record_problems) > 10:
        _say(f"fuzzptx campaign: --resume: ... {len(record_problems) - 10} more lines skipped")
    done_by_block: dict[int, set[int]] = {}
    for b, i in done:
        done_by_block.setdefault(b, set()).add(i)
    (out / "repros").mkdir(exist_ok=True)
    use_gpu = bool(plan.judges.needing(DEVICE)) and bool(gpus)
    gpu_judges = plan.judges.on_gpu_stages()
    compilers = {j.name: j for j in plan.judges.judges + (by_stage(COMPILE),) if type(j).accepted is not Judge.accepted}
    plant_block = meta["planted_block"]
    if plan.plant is not None and plant_block is None and plan.plant >= 0:
        plant_block = plan.plant
    elif plan.plant == -1 and plant_block is None and plan.total_blocks() is not None:
        mine = list(plan.blocks())
        plant_block = mine[len(mine) // 2]
    meta["planted_block"] = plant_block
    _write_json(out / "campaign.json", meta)

    gpu_workers = gpu_workers or default_gpu_workers(len(gpus))
    live = Live(workers=workers, gpus=len(gpus) if use_gpu else 0, gpu_workers=gpu_workers)
    live.record_problems = record_problems
    deadline = None if plan.seconds is None else time.monotonic() + plan.seconds
    events: queue.Queue = queue.Queue()
    gpu_q: queue.Queue = queue.Queue()
    runners = [(i, _hardware_runner(g, gpu_timeout)) for i, g in enumerate(gpus) for _ in range(gpu_workers)] \
        if use_gpu else []

    def gpu_loop(idx: int, runner) -> None:
        """One of ``gpu_workers`` threads of GPU ``idx``: several per GPU, so a hang's watchdog
        or a worker's restart after a fault never stalls that GPU."""
        while True:
            item = gpu_q.get()
            if item is None:
                return
            hw: list[dict[str, Any]] = [{} for _ in item.programs]
            busy = (lambda: live.gpu_enter(idx), lambda: live.gpu_leave(idx))
            for judge, j, verdict, took in gpu_stages(gpu_judges, item.programs, item.gpu, runner, busy):
                if isinstance(verdict, Exception):  # the worker could not start: no verdict, never a lost block
                    live.gpu_errors.append(f"gpu {gpus[idx]}: {type(verdict).__name__}: {verdict}")
                    continue
                if verdict is None:
                    continue
                hw[j][judge.name] = verdict
                if judge.stage == GPU:  # kernel-job seconds where the verdict has them
                    live.stage["gpu"] += getattr(verdict, "seconds", took)
                    live.gpu_programs += 1
                    if getattr(verdict, "fault", None):
                        live.faults[verdict.fault] += 1
                else:
                    live.stage[f"gpu ({judge.name})"] += took
            live.restarts[id(runner)] = runner.restarts
            live.runner_stats[id(runner)] = (list(getattr(runner, "start_seconds", ())), getattr(runner, "waited", 0.0))
            events.put(("gpu", item, hw))

    threads = [threading.Thread(target=gpu_loop, args=(i, r), daemon=True, name=f"gpu{i}.{k}")
               for k, (i, r) in enumerate(runners)]
    for t in threads:
        t.start()

    ctx = None if inline else pool_context()
    pool = InlineExecutor() if inline else cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=warm)
    repro_futs: list[cf.Future] = []
    pending: dict[cf.Future, list[BlockTask]] = {}
    block_iter = plan.blocks()
    # SASS-coverage steering (strategies.steer): block b is drawn from the corpus of the blocks
    # before b - lag; on --resume the record's blocks are folded again from their lines
    fold = SteerFold(plan.steer, steer_lag(1 if inline else workers + 2, GROUP_BLOCKS if deferrable(plan.judges) else 1),
                                  plan.shard) \
        if plan.steer != "none" and plan.generator == "direct" and plan.corpus is None else None  # (draw_direct's recipes)
    recorded_forms = _recorded_sass_forms(results) if fold is not None and done else {}
    total = plan.total_blocks()
    state = {"exhausted": False, "in_gpu": 0, "last_draw": 0.0, "last_stats": time.monotonic(), "drawn": 0,
             "finished": 0}
    log = results.open("a")
    grouped = bool(deferrable(plan.judges))

    def submit(tasks: list[BlockTask]) -> None:
        fut = pool.submit(pool_blocks, tasks) if grouped else pool.submit(pool_block, tasks[0])
        pending[fut] = tasks
        fut.add_done_callback(lambda f: events.put(("cpu", f)))

    def group_size(now: float) -> int:
        """Blocks for the next pool task: ``GROUP_BLOCKS`` while every worker has that many
        blocks or more still to come after it, fewer towards the end (a group runs on one
        worker: a big one last would leave the others idle, and a short run still records
        block by block), one near a ``--time`` deadline."""
        if not grouped:
            return 1
        k = GROUP_BLOCKS
        if total is not None:
            left = len(range(plan.shard[0] + state["drawn"] * plan.shard[1], total, plan.shard[1]))
            k = min(k, (left - workers) // workers)
        if deadline is not None:
            # a group submitted now may wait behind the groups queued before it, then runs its
            # blocks one after another: groups only while that ends well before the deadline
            # (and not before a block's time is known)
            per_block = live.pool_blocks / state["finished"] if state["finished"] else None
            if per_block is None or now + 3 * GROUP_BLOCKS * per_block > deadline:
                k = 1
        return max(1, k)

    def submit_more() -> None:
        nonlocal plant_block
        while not state["exhausted"] and len(pending) < (1 if inline else workers + 2):
            group: list[BlockTask] = []
            now = time.monotonic()
            want = group_size(now)
            while len(group) < want:
                if deadline is not None and now > deadline:
                    state["exhausted"] = True
                    break
                try:
                    b = state.pop("held") if "held" in state else next(block_iter)
                except StopIteration:
                    state["exhausted"] = True
                    break
                steering = fold.steering_for(b) if fold is not None else None
                if steering is False:  # its corpus is not folded yet: after the blocks in flight
                    if not pending and not group:  # nothing left to wait for (a block never recorded)
                        fold.skip_to(b - fold.lag * plan.shard[1])
                        steering = fold.steering_for(b)
                    if steering is False:
                        state["held"] = b
                        break
                state["drawn"] += 1
                if plan.plant == -1 and plant_block is None and deadline is not None and now > deadline - plan.seconds / 2:
                    plant_block = meta["planted_block"] = b  # the middle of a timed campaign
                    _write_json(out / "campaign.json", meta)
                task = plan.task(b, frozenset(done_by_block.get(b, ())), b == plant_block, steering or None)
                if fold is not None:
                    fold.submitted(task)
                if block_programs_left(task):
                    group.append(task)
                elif fold is not None:  # judged before a --resume: folded from its lines
                    fold.recorded(b, recorded_forms.get(b, []))
            if group:
                submit(group)

    def finish(item: Prepared, hw: list[Any] | None) -> None:
        t_main = time.perf_counter()
        for k, s in item.seconds.items():
            live.stage[k] += s
        live.pool_blocks += item.wall
        state["finished"] += 1
        lines = []
        folded: list = []  # (index, sass forms) for the steering
        for j, (p, v, idx, base) in enumerate(zip(item.programs, item.verdicts, item.indices, item.records)):
            if hw is not None:
                v.update(hw[j])
            findings = findings_of(p, v, base["family"], full=lambda j=j: item.program(j))
            repros: dict[str, str] = {}  # root cause -> its repro file (one file per cause)
            full = sizing = None
            for f in findings:
                key = str(f.root_cause)  # the bucket: findings of one cause are one bug
                live.buckets[key] += 1
                live.evidence.update(f.signatures)
                live.first_seen.setdefault(key, (live.programs + 1, round(live.wall(), 2)))
                live.findings += 1
                n = base["instructions"]
                # a new cause gets a repro; without shrinking, a smaller program of it replaces
                # the one before (the smallest so far), with shrinking the first one is shrunk
                new = key not in live.smallest
                if new or (plan.shrink_budget <= 0 and n < live.smallest[key]):
                    live.smallest[key] = n
                    repro = repros[key] = str(out / "repros" / f"{repro_stem(item.block, idx, len(repros))}.ptx")
                    live.repros[key] = repro
                    on_gpu = [k for j_ in gpu_judges if j_.name in v for k in j_.summary(v[j_.name])]
                    note = "; ".join(f"{k} when found: {v.summary()[k]}" for k in on_gpu) or None
                    full = full or item.program(j)
                    write_raw(Path(repro), full, f.signature)  # at once: kill-safe
                    # EXPECT lines from the run's own verdicts, moved to the final header
                    # (differ.finalize_repro: a few ms, so every repro file gets them, even one
                    # a smaller repro of its signature supersedes later)
                    sizing = sizing or v.replace(**{j_.name: None for j_ in gpu_judges})
                    budget = plan.shrink_budget if plan.shrink_model_gaps or f.kind != MODEL else 0.0
                    fut = pool.submit(finalize_repro_file, repro, full, judges_that_ran(sizing), f.signature, note,
                                      sizing, item.texts[j], budget)
                    fut.add_done_callback(lambda x: _add_repro_seconds(live, x))
                    repro_futs.append(fut)
            rec = record(item.block, idx, base, v, findings, repros)
            if fold is not None:
                rec.update(fold.record_fields(item.block, idx))
            lines.append(json.dumps(rec) + "\n")
            live.sass.add(rec.get("sass_forms"), rec["id"], live.programs + 1, live.wall())
            folded.append((idx, rec.get("sass_forms")))
            live.programs += 1
            live.illegal += base.get("mutation") is not None
            for name, j_ in compilers.items():  # every compiler that ran: the compile stage's, each release's
                said = j_.accepted(v[name]) if name in v else None
                if said is not None:
                    live.accepted[name] += said
            live.families[base["family"]] += 1
            live.forms.update(base["forms"])
        log.write("".join(lines))
        log.flush()
        if fold is not None:
            fold.recorded(item.block, folded + recorded_forms.get(item.block, []))
        live.stage["record (main process)"] += time.perf_counter() - t_main
        live.timeline.append((round(live.wall(), 2), live.programs))

    stop = threading.Event()
    restore = _stop_on_signals(stop)
    try:
        submit_more()
        while pending or state["in_gpu"]:
            if stop.is_set():  # SIGINT/SIGTERM: the blocks in flight get STOP_GRACE_S to finish into
                # the record (it ends on whole blocks); the rest are stopped, for a --resume to redo
                if "stop_at" not in state:
                    state["exhausted"] = True
                    state["stop_at"] = time.monotonic() + STOP_GRACE_S
                    for f in [f for f in pending if f.cancel()]:
                        pending.pop(f, None)
                if time.monotonic() > state["stop_at"] or not (pending or state["in_gpu"]):
                    left = sum(len(ts) for ts in pending.values()) + state["in_gpu"]
                    if left:
                        _say(f"fuzzptx campaign: {left} block(s) in flight stopped, not recorded "
                             "(--resume judges them)")
                    raise KeyboardInterrupt
            try:
                ev = events.get(timeout=0.5)
            except queue.Empty:
                ev = None
            if ev is not None and ev[0] == "cpu":
                fut = ev[1]
                tasks = pending.pop(fut, None)
                if tasks is not None and not fut.cancelled():
                    items: list[Prepared | str] = []
                    try:
                        items = fut.result() if grouped else [fut.result()]
                    except BrokenProcessPool:  # a pool process died (OOM, signal): redo its blocks
                        state["pool_restarts"] = state.get("pool_restarts", 0) + 1
                        if state["pool_restarts"] > 5:
                            raise CampaignError("the CPU pool keeps dying; giving up (the record is kept)") from None
                        groups = [tasks] + [pending.pop(f) for f in list(pending)]
                        pool = _restart_pool(pool, ctx, workers)
                        for g in groups:
                            submit(g)
                    except Exception as exc:  # blocks that cannot be prepared: say so, carry on
                        items = [f"{type(exc).__name__}: {exc}"] * len(tasks)
                    for task, item in zip(tasks, items):
                        if isinstance(item, str):
                            live.block_errors.append(f"block {task.block}: {item}")
                            if fold is not None:
                                fold.recorded(task.block, [])
                            _say(f"fuzzptx campaign: block {task.block} failed: {item}")
                        elif use_gpu and item.for_gpu():
                            gpu_q.put(item)
                            state["in_gpu"] += 1
                        else:
                            finish(item, None)
                submit_more()
            elif ev is not None:
                state["in_gpu"] -= 1
                finish(ev[1], ev[2])
            if deadline is not None and time.monotonic() > deadline:
                state["exhausted"] = True
                for f in [f for f, ts in pending.items() if not any(t.plant for t in ts) and f.cancel()]:
                    pending.pop(f, None)
                state["in_gpu"] -= _drop_queued(gpu_q, plant_block, live)
            now = time.monotonic()
            if progress and now - state["last_draw"] > (0.5 if sys.stderr.isatty() else 15):
                state["last_draw"] = now
                _progress(live, gpu_q.qsize())
            lock.heartbeat()
            if now - state["last_stats"] > 10:
                state["last_stats"] = now
                _write_json(out / "stats.json", _stats(live, plan, gpus if use_gpu else [], len(done), meta, results))
        repro_deadline = time.monotonic() + 120 + 2 * plan.shrink_budget * len(repro_futs)
        while not stop.is_set() and time.monotonic() < repro_deadline:  # the repros of this run
            if not cf.wait(repro_futs, timeout=0.5).not_done:
                break
        if stop.is_set():
            raise KeyboardInterrupt
        if "stop_at" in state:  # every block in flight finished within the grace: still an interruption
            raise KeyboardInterrupt
        state["complete"] = True
    finally:
        restore()
        log.close()
        _close_pool(pool)
        for _ in threads:
            gpu_q.put(None)
        for t in threads:
            t.join(timeout=gpu_timeout + 5)
        for _, r in runners:  # every worker asked first: their exits overlap (~2 s of 16 workers' teardowns)
            r.request_stop()
        for _, r in runners:
            r.close()
        # the last thing written on every exit path (SIGINT, SIGTERM, an error): the record is
        # closed, so these counts are exactly the lines this run appended
        stats = _stats(live, plan, gpus if use_gpu else [], len(done), meta, results)
        stats["interrupted"] = not state.get("complete", False)
        _write_json(out / "stats.json", stats)
    if progress:
        _progress(live, 0)
        sys.stderr.write("\n")
    return stats


def _stop_on_signals(stop: threading.Event):
    """SIGINT and SIGTERM set ``stop``, which the main loop turns into KeyboardInterrupt between
    blocks, so the record and stats.json end on the same whole block; a second signal interrupts
    at once.  Returns the function that puts the old handlers back (a no-op off the main thread,
    where Python cannot install handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    return lambda: [signal.signal(sig, h) for sig, h in old.items()]


def _drop_queued(gpu_q: queue.Queue, keep_block: int | None, live: Live) -> int:
    """At the deadline: blocks still waiting for a GPU are left for a later --resume (they are
    not in the record, so nothing is lost); the planted block stays.  Returns blocks dropped."""
    kept, dropped = [], 0
    while True:
        try:
            item = gpu_q.get_nowait()
        except queue.Empty:
            break
        if item is None or item.block == keep_block:
            kept.append(item)
        else:
            dropped += 1
            live.dropped_at_deadline += len(item.programs)
    for item in kept:
        gpu_q.put(item)
    return dropped


class InlineExecutor(cf.Executor):
    """An executor that runs each task at once in this process: the engine at its smallest scale
    (a short run or a test pays no pool start)."""

    def submit(self, fn, /, *args, **kwargs) -> cf.Future:
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever reads the future, as a pool would
            fut.set_exception(exc)
        return fut


def _close_pool(pool) -> None:
    """Cancel what is queued, stop what still runs (nothing wants its result any more), and wait
    for the pool to wind down.  A pool left shutting down in the background races the
    interpreter's exit hook: CPython then prints a traceback ('OSError: Bad file descriptor' from
    concurrent.futures' _python_exit) at the end of a finished campaign."""
    if isinstance(pool, InlineExecutor):
        return
    # taken before shutdown, which forgets them: stopped here, a block in a worker would otherwise
    # run to its end while the interpreter's exit hook waits for it (14-70 s after a Ctrl-C)
    procs = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
    if manager is not None:
        manager.join(timeout=10)


def _dead_workers(pool) -> str:
    """How the pool's dead processes ended (``killed by SIGKILL`` is most often the kernel's
    out-of-memory killer), for the message that restarts the pool."""
    import signal

    manager = getattr(pool, "_executor_manager_thread", None)
    if manager is not None:  # it reaps the dead: read their ends after it, not racing its waitpid
        manager.join(timeout=10)
    ends = []
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        code = proc.exitcode
        if code is None or code == 0:
            continue
        if code < 0:
            try:
                ends.append(f"killed by {signal.Signals(-code).name}")
            except ValueError:
                ends.append(f"killed by signal {-code}")
        else:
            ends.append(f"exit status {code}")
    return f" ({', '.join(sorted(set(ends)))})" if ends else ""


def _restart_pool(pool, ctx, workers: int):
    how = _dead_workers(pool)
    _close_pool(pool)
    _say(f"fuzzptx campaign: a pool process died{how}; restarting the pool")
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=warm)


def _stats(live: Live, plan: RunConfig, gpus: list[int], resumed: int, meta: dict, results: Path) -> dict:
    wall = live.wall()
    compile_name = (plan.judges.compiler() or by_stage(COMPILE)).name
    accepted = dict(sorted(live.accepted.items()))
    return {
        "programs": live.programs,
        "wall_seconds": round(wall, 2),
        "programs_per_second": round(live.programs / wall, 2) if wall else 0,
        "stage_rates_programs_per_second": live.rates(),
        "stage_ms_per_program": live.ms_per_program(),
        "stage_cpu_seconds": {k: round(v, 2) for k, v in live.stage.items()},
        "gpu_idle_share": live.gpu_idle_share(),
        **live.pool_accounting(),
        "gpu_programs": live.gpu_programs,
        "gpu_workers_per_gpu": live.gpu_workers if gpus else 0,
        "dropped_at_deadline_for_resume": live.dropped_at_deadline,
        "gpus": gpus,
        "cpu_workers": live.workers,
        "judges": list(plan.judges),
        "numerics": plan.numerics or "spec",
        "avoid": sorted(plan.avoid),
        "seed": plan.seed, "block_size": plan.block_size, "shard": f"{plan.shard[0]}/{plan.shard[1]}",
        "findings": live.findings,
        "faults": dict(live.faults),
        "worker_restarts": sum(live.restarts.values()),
        "gpu_worker_start_seconds_mean": _mean([x for st, _ in live.runner_stats.values() for x in st]),
        "gpu_seconds_waiting_for_a_worker_start": round(sum(w for _, w in live.runner_stats.values()), 1),
        "gpu_errors": live.gpu_errors.items, "gpu_errors_total": live.gpu_errors.count,
        "block_errors": live.block_errors.items, "block_errors_total": live.block_errors.count,
        "planted_block": meta.get("planted_block"),
        "buckets": dict(live.buckets.most_common()),  # by root cause (finding.RootCause, as str)
        "evidence": dict(live.evidence.most_common()),  # by signature
        "first_seen": live.first_seen,  # root cause -> [programs, seconds] when first found
        # what the campaign held, for bug yield (distinct root causes per CPU-hour and GPU-hour)
        "cpu_hours": round(live.workers * wall / 3600, 6), "gpu_hours": round(live.gpus * wall / 3600, 6),
        "illegal_programs": live.illegal,
        # the compile stage's acceptances, or where it did not run (--ptxas naming only other releases) the first release's
        "ptxas_accepted": accepted.get(compile_name, next(iter(accepted.values()), 0)),
        "accepted": accepted,  # per compiling judge that ran (ptxas, ptxas@R...)
        "families": dict(live.families.most_common()),
        "forms_reached": len(live.forms),
        **live.sass.stats(),
        "repros": dict(live.repros),
        "resumed_skipping": resumed,
        **({"record_lines_skipped": len(live.record_problems), "record_problems": live.record_problems[:20]}
           if live.record_problems else {}),
        **({"corpus_skipped": list(plan.corpus_skipped)} if plan.corpus is not None else {}),
        "timeline": live.timeline[:: max(1, len(live.timeline) // 200)],
    }


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 3) if xs else None


def default_gpu_workers(gpus: int) -> int:
    """Worker threads per GPU: three (two on a machine of fewer than 12 cores per GPU).

    One thread keeps up with any pool: a GPU program costs its worker ~0.6 ms CPU and its
    thread ~1.5 ms wall (measured on the H100: ``benchmarks/README.md``, "GPU worker CPU"), so
    one thread judges ~600 programs/s against a 16-core pool's ~130.  The others are there for
    faults: a hang holds its thread for the watchdog's timeout, and two hangs at once still
    leave one running.  Each thread owns two CUDA processes (the worker and its warm spare),
    and each costs ~1.6 s of CPU to start: the eight threads sized to the cores before cost a
    16-core campaign ~26 s of CPU at start (4 ms a program over a minute's run)."""
    return 3 if (os.cpu_count() or 2) // max(gpus, 1) >= 12 else 2


def _add_repro_seconds(live: "Live", fut: cf.Future) -> None:
    if not fut.cancelled() and fut.exception() is None:
        with live.lock:
            live.pool_repros += fut.result()


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


# Imported once by the forkserver, so every pool process starts with them loaded (a spawned
# process spent 1.2-1.5 s importing them, and all of them did so at once at the start).
POOL_PRELOAD = ["fuzzptx.engine.campaign", "fuzzptx.engine.block", "fuzzptx.strategies", "fuzzptx.reduce",
                "fuzzptx.oracles.ptxas", "fuzzptx.oracles.checker", "fuzzptx.oracles.reference"]


def pool_context():
    """The CPU pool's start method: ``forkserver`` with the judges preloaded where there is one
    (a fork of a clean server process: safe although this process runs GPU threads, and
    the pool's processes start in milliseconds); ``spawn`` elsewhere."""
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(POOL_PRELOAD)
        return ctx
    return mp.get_context("spawn")


def _say(text: str) -> None:
    sys.stderr.write(("\n" if sys.stderr.isatty() else "") + text + "\n")
    sys.stderr.flush()


def _progress(live: Live, gpu_queue: int) -> None:
    wall = live.wall()
    rates = " ".join(f"{k} {v:g}/s" for k, v in live.rates().items())
    idle = live.gpu_idle_share()
    faults = sum(live.faults.values())
    line = (f"{live.programs} programs {live.programs / wall if wall else 0:.1f}/s | {rates} | findings {live.findings}"
            + (f" | gpu idle {idle:.0%} queue {gpu_queue} faults {faults}" if idle is not None else ""))
    if sys.stderr.isatty():
        sys.stderr.write("\r" + line + "   ")
    else:
        sys.stderr.write(f"[{wall:6.0f}s] {line}\n")
    sys.stderr.flush()


# ----------------------------------------------------------------- CLI


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(prog="fuzzptx campaign", description="Batched, isolated, resumable hardware campaign.")
    lim = ap.add_mutually_exclusive_group()
    lim.add_argument("--time", help="duration: 300, 5m, 2h")
    add_examples(lim, None, "programs in the whole campaign (all shards together)")
    ap.add_argument("--gpus", default="all", help="all, none, or a list like 0,1")
    add_out(ap, required=True, help="campaign directory (results.jsonl, repros/, stats.json)")
    add_seed(ap, "the campaign's seed: block b is drawn under (seed, b)")
    ap.add_argument("--shard", default=None,
                    help="i/n: this process takes blocks b with b %% n == i (default: from a Slurm job array, "
                         "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT, or a Kubernetes indexed Job, "
                         f"JOB_COMPLETION_INDEX/{SHARD_COUNT_ENV}; else 0/1)")
    ap.add_argument("--resume", action="store_true", help="carry on from the record in --out")
    ap.add_argument("--force-takeover", action="store_true",
                    help="take over the --out lock of a campaign on another host whose heartbeat is older than "
                         "--stale-after (a dead holder on this host is taken over without it)")
    ap.add_argument("--stale-after", type=positive_seconds, default=DEFAULT_STALE_AFTER,
                    help="seconds without a heartbeat (the holder touches campaign.lock every 10 s) after which "
                         "--force-takeover may take another host's lock")
    add_judges(ap, "campaign", "comma-separated (default: %(default)s, the nightly hardware set); add checker for "
                               "its ptxas-model verdicts too, at ~8-10%% of the throughput on an H100 node: the CPU "
                               "fuzz runs (fuzzptx run, pytest) already set the checker against ptxas")
    add_ptxas(ap)
    add_pairs(ap, "campaign")
    add_numerics(ap, None, "the reference's numerics: spec (the PTX ISA's error bounds) or hardware (the bit-exact "
                           "H100 model: any GPU mismatch is then a reference or hardware bug); default: the model of "
                           "the GPU that judges -- hardware with the hardware judge (it runs on sm_90a, the H100's "
                           "model), else spec; repro files carry it (NUMERICS line); with --corpus, default: each "
                           "file's own")
    ap.add_argument("--known", metavar="FILE", default=None,
                    help="known-bug ledger (TOML) the campaign's root causes are matched to (headline: distinct "
                         "bugs, new ones first, their bundles written into --out); default: the checkout's "
                         "reports/known_bugs.toml when there is one; 'none': no ledger")
    ap.add_argument("--rediscover", action="store_true",
                    help="do not turn down the shapes of the ledger's known bugs (by default the generator avoids "
                         "them, so the campaign's programs go to what is not known yet)")
    ap.add_argument("--no-bundles", action="store_true", help="do not write a bundle of each new bug into --out")
    ap.add_argument("--scalar-share", type=share, default=None,
                    help="share of each block's legal programs drawn as random integer kernels "
                         "(fuzzptx.strategies.scalar_kernels), each judged by a compile pair on the GPU "
                         f"(default: {SCALAR_SHARE} with a GPU judge, else 0; --generator direct only)")
    ap.add_argument("--block-size", type=positive_int, default=32, help="programs per block (one ptxas module)")
    add_workers(ap, 0, "CPU processes (0: one per core, one fewer with a GPU)")
    ap.add_argument("--generator", choices=GENERATORS, default="direct", help=GENERATOR_HELP)
    add_kernels(ap)
    add_steer(ap)
    ap.add_argument("--corpus", help="judge the .ptx repro files under this directory instead of generating")
    ap.add_argument("--plant-faults", nargs="?", type=count_or_zero, const=-1, default=None, metavar="BLOCK",
                    help="add a kernel that traps and one that hangs to one block (default: the middle one)")
    ap.add_argument("--gpu-timeout", type=positive_seconds, default=5.0,
                    help="seconds before a kernel counts as hung (1 s turned a planted trap into a timeout "
                         "under contention on the H100: benchmarks/results/campaign_h100.json)")
    ap.add_argument("--gpu-workers", type=count_or_zero, default=0,
                    help="isolated GPU worker threads per GPU, each with a warm spare process "
                         "(a hang's watchdog or a restart stalls only one; default: 3, or 2 below 12 cores a GPU)")
    ap.add_argument("--quiet", action="store_true", help="no progress line on stderr (stats still print at the end)")
    return ap


def gpu_judges_usable(judges: JudgeSet, gpus: list[int], asked_all: bool, say) -> JudgeSet:
    """``judges`` less those that need a GPU where there is none to use (said in one line)."""
    need = judges.needing(DEVICE)
    if not need:
        return judges
    names = ", ".join(j.name for j in need)
    if not gpus:
        if asked_all:  # asked for all and found none: say so
            say(f"no GPU found: running without the {names} judge")
        return judges.without_device()
    reason = next((why for j in need if (why := j.available())), None)
    if reason:
        say(f"{names} judge unavailable ({reason}); running without it")
        return judges.without_device()
    return judges
