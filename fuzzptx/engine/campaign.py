"""``fuzzptx campaign``: long, batched, resumable, shardable fuzzing with the GPU judge.

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
import sys
import threading
import time
from collections import Counter
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from fuzzptx.judges import differ
from fuzzptx.errors import FuzzptxError
from fuzzptx.program import Program

STAGES = ("generate", "ptxas", "checker", "reference", "gpu")
_CPU_JUDGES = ("reference", "checker", "ptxas", "mmasim", "sass")  # judged in the pool; the GPU runs in the main process
# A hardware campaign's judges unless told otherwise: the nightly route
# (``--fuzzptx-judges reference,ptxas,hardware``).  The checker is a static judge whose only
# differential partner is ptxas, which the CPU fuzz runs in CI already cover; on a GPU node it
# costs ~8-10% of the throughput and its findings (ptxas-model gaps) are not the hardware team's.
NIGHTLY_JUDGES = ("reference", "ptxas", "hardware")
_IR_JUDGES = ("checker", "reference", "mmasim", "sass")  # the judges that read the program's IR, not only its text


class CampaignError(FuzzptxError):
    """A bad flag or an unusable campaign directory (one line at the CLI)."""


# ----------------------------------------------------------------- planted faults

_PLANT_HEAD = """// fuzzptx-repro v1
// LAUNCH: kernel={k} grid=1,1,1 block=32,1,1
// BUFFER: out type=u32 count=32 init=zeros output
// NOTE: planted fault: {what}
.version 8.0
.target sm_90a
.address_size 64

.visible .entry {k}(.param .u64 out)
{{
  .reg .u64 %rd<2>;
  .reg .u32 %r<2>;
  .reg .pred %p<1>;
  ld.param.u64 %rd0, [out];
  cvta.to.global.u64 %rd1, %rd0;
"""
PLANTED = {
    # `trap;` aborts the kernel: the context is poisoned, the worker must be replaced.
    "trap": "  mov.u32 %r0, 1;\n  st.global.u32 [%rd1], %r0;\n  trap;\n  ret;\n}\n",
    # Spins until `out[0]` becomes non-zero, which never happens: only the watchdog ends it.
    "hang": "LOOP:\n  ld.volatile.global.u32 %r0, [%rd1];\n  setp.eq.u32 %p0, %r0, 0;\n  @%p0 bra LOOP;\n  ret;\n}\n",
}


def planted_programs() -> list[tuple[str, Program]]:
    """(kind, program) for the kernels ``--plant-faults`` adds: one traps, one never returns."""
    return [(kind, Program.from_ptx(_PLANT_HEAD.format(k=f"planted_{kind}", what=kind) + body, f"<planted {kind}>"))
            for kind, body in PLANTED.items()]


# ----------------------------------------------------------------- one block


@dataclass(frozen=True)
class BlockTask:
    """Everything a pool process needs to rebuild and judge one block (picklable)."""

    block: int
    seed: int
    size: int
    judges: tuple[str, ...]
    skip: frozenset[int] = frozenset()
    keep: int | None = None  # programs of the block inside --examples (None: all)
    plant: bool = False
    corpus: tuple[str, ...] | None = None  # this block's files in --corpus mode
    generator: str = "direct"  # "direct" (draw_direct) or "hypothesis" (fuzz.draw_programs)
    numerics: str | None = None  # the reference's numerics for every program (None: each program's own)


@dataclass
class Prepared:
    """One block after the CPU stages: ready for the GPU (or already final without one)."""

    block: int
    indices: list[int]
    programs: list[Program]  # as ``shipped``: the launched kernel's signature, no bodies
    verdicts: list[differ.Verdicts]
    cubins: list[bytes | None]  # per program; programs of one ptxas run share one bytes object
    kernel_names: list[str]
    records: list[dict]  # record fields the pool computes (family, forms, coverage, ...)
    seconds: dict[str, float]
    # per program: metamorphic.PreparedPairs for the GPU to judge, a Checked already judged on
    # the reference (no GPU), or None (no metamorphic judge)
    metamorphic: list = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # the PTX every judge saw, per program
    wall: float = 0.0  # seconds the pool process spent on the block, stages and all

    def program(self, j: int) -> Program:
        """Program ``j`` in full, as the judges saw it (parsed back from its text: only a repro needs it)."""
        from fuzzptx.ptx.parse import parse

        return replace(self.programs[j], module=parse(self.texts[j], "<program>"))


def shipped(program: Program) -> Program:
    """What the main process needs of a judged program: its header, and of its module the
    launched kernel's signature (the GPU fills the arguments from it).  The whole IR costs the
    pool several ms per program to pickle and the main process more to unpickle; the text
    travels instead (``Prepared.program``)."""
    from fuzzptx.ptx.ir import Function, Module

    m = program.module
    kernels = tuple(Function(f.kind, f.name, f.params, f.returns, (), f.linkage)
                    for f in m.functions() if f.name == program.launch.kernel and f.body is not None)
    return replace(program, module=Module(m.version, m.target, m.address_size, kernels))


def block_seed(seed: int, block: int) -> int:
    return (seed * 1_000_003 + block * 7919) % (2**31)


ILLEGAL_SHARE = 0.25  # as ``fuzzptx.engine.run.draw_programs``: a quarter of each block is mutated (illegal)


def draw_direct(n: int, seed: int, illegal_share: float = ILLEGAL_SHARE) -> list[Program]:
    """``n`` programs, each drawn straight from the strategies with its own random stream.

    Five times cheaper than running Hypothesis's engine (``draw_programs``): no
    example database, no mutation of earlier examples, no simplest-example-first,
    so no duplicate programs within or across blocks.  Program ``i`` depends on
    ``(seed, i)`` alone.  A draw the strategies reject (a filter) is redrawn.
    """
    import fuzzptx.strategies as S
    from fuzzptx.strategies.reproducible import reproducible

    n_illegal = int(round(n * illegal_share))
    strategies = (S.programs(), S.illegal_programs())
    out: list[Program] = []
    with reproducible():  # program i depends on (seed, i), not on what else the process imported
        _draw_direct(out, n, n_illegal, seed, strategies)
    return out


def _draw_direct(out: list[Program], n: int, n_illegal: int, seed: int, strategies) -> None:
    import random

    from hypothesis.control import BuildContext
    from hypothesis.errors import HypothesisException, StopTest, UnsatisfiedAssumption
    from hypothesis.internal.conjecture.data import ConjectureData

    for i in range(n):
        strategy = strategies[i >= n - n_illegal]
        for attempt in range(50):
            data = ConjectureData(random=random.Random(f"{seed}:{i}:{attempt}"))
            try:
                with BuildContext(data, is_final=False, wrapped_test=None):
                    out.append(data.draw(strategy))
                break
            except (StopTest, UnsatisfiedAssumption):
                continue
            except HypothesisException as exc:  # e.g. a filter that rejects everything
                raise CampaignError(f"program {i} of seed {seed}: the strategies failed: {exc}") from exc
        else:
            raise CampaignError(f"program {i} of seed {seed}: no valid draw in 50 attempts")


def block_programs(task: BlockTask) -> list[tuple[int, Program, str | None]]:
    """(index, program, planted kind or None) of a block, the same in every process and run."""
    if task.corpus is not None:
        progs = [Program.from_file(f) for f in task.corpus]
    elif task.generator == "hypothesis":
        from fuzzptx.engine.run import draw_programs

        progs = draw_programs(task.size, block_seed(task.seed, task.block))
    else:
        progs = draw_direct(task.size, block_seed(task.seed, task.block))
    if task.numerics is not None:  # stamped on the program: its repro file replays the same way
        progs = [replace(p, numerics=task.numerics) for p in progs]
    limit = len(progs) if task.keep is None else min(task.keep, len(progs))
    out: list[tuple[int, Program, str | None]] = [(i, p, None) for i, p in enumerate(progs[:limit])]
    if task.plant:
        out += [(task.size + k, p, kind) for k, (kind, p) in enumerate(planted_programs())]
    return [t for t in out if t[0] not in task.skip]


def gpu_worthy(program: Program, v: differ.Verdicts, planted: bool = False) -> bool:
    """Whether the GPU should run a program: it targets sm_90 (an sm_100a/sm_120a cubin cannot
    load on Hopper), and it is not labelled undefined by its mutation (such a program may hang
    or fault by design, and each fault costs a worker restart: that would make the GPU the
    bottleneck for nothing the spec defines).  Planted fault kernels always run."""
    if planted:
        return True
    if not program.module.target.split(",")[0].strip().startswith("sm_90"):
        return False
    return differ._expects_defined(program)


def gpu_skip_reason(program: Program) -> str:
    """Why ``gpu_worthy`` keeps an accepted program off the GPU, in words for the record."""
    target = program.module.target.split(",")[0].strip()
    if not target.startswith("sm_90"):
        return f"targets {target}: its cubin cannot load on Hopper"
    label = next((f"{j}: {v}" for j, v in program.expect
                  if j in ("checker", "reference", "ptxas") and v.startswith(("undefined", "illegal", "rejected"))), "")
    return f"labelled by its mutation ({label})" if label else "labelled undefined by its mutation"


def prepare_block(task: BlockTask) -> Prepared:
    """The CPU stages for one block (runs in a pool process)."""
    from fuzzptx.engine.run import _forms_in, coverage_of
    from fuzzptx.reduce import instruction_count

    t_block = time.perf_counter()
    secs: Counter = Counter()
    t0 = time.perf_counter()
    items = block_programs(task)
    secs["generate"] += time.perf_counter() - t0
    programs = [p for _, p, _ in items]
    t0 = time.perf_counter()
    if any(j in task.judges for j in _IR_JUDGES):
        # the text and the located IR the judges read, from one emission: no parse back
        emitted = [p.to_ptx_located() for p in programs]
        secs["emit+parse"] += time.perf_counter() - t0
    else:
        emitted = [(p.to_ptx(), None) for p in programs]
        secs["emit"] += time.perf_counter() - t0
    texts = [t for t, _ in emitted]
    hw = "hardware" in task.judges
    ptxas: list[Any] = [None] * len(programs)
    early: list[Any] = [None] * len(programs)  # verdicts taken while ptxas compiles
    ran: list[tuple[str, ...]] = [()] * len(programs)  # ... and by which judges
    if "ptxas" in task.judges or hw:
        ptxas = _compile_block(texts, hw, secs, lambda done: _judge_early(task, items, emitted, early, ran, done))
    verdicts, cubins, names, records = [], [], [], []
    for (idx, p, planted), (text, judged), r, v0, before in zip(items, emitted, ptxas, early, ran):
        judges = [j for j in task.judges if j in _CPU_JUDGES and j not in before]
        if planted or (r is not None and not r.accepted):
            # The reference's values only matter for a program the GPU can run (and a
            # planted kernel is not one the reference should interpret: it never ends).
            judges = [j for j in judges if j not in ("reference", "mmasim", "sass") and not (planted and j == "checker")]
            if "reference" in before:  # taken before ptxas said no: the verdicts stay as they were
                v0.forget_reference()
        if any(j in judges for j in _IR_JUDGES):
            v = differ.judge(p, judges, ptxas_result=r, text=text, judged=judged, into=v0)
        else:  # ptxas alone needs no parse of the emitted text
            v = v0 if v0 is not None else differ.Verdicts()
            v.ptxas = r
        for k, s in v.seconds.items():
            secs[k] += s
        ok = (hw and r is not None and r.accepted and r.cubin is not None
              and gpu_worthy(p, v, planted))
        cubins.append(r.cubin if ok else None)
        names.append(r.kernel(p.launch.kernel) if ok else "")
        if r is not None:  # cubins travel once, in ``cubins``; a plain dict pickles
            v.ptxas = replace(r, cubin=None, kernel_names=dict(r.kernel_names))
        verdicts.append(v)
        rec = {"family": differ.program_family(p), "forms": sorted(_forms_in(p)), "coverage": coverage_of(p),
               "instructions": instruction_count(p)}
        if planted:
            rec["planted"] = planted
        if hw and r is not None and r.accepted and not ok:
            rec["gpu_skipped"] = gpu_skip_reason(p)  # why the record has no hardware verdict
        records.append(rec)
    pairs = _metamorphic_block(task, programs, texts, ptxas, cubins, [p for _, _, p in items], secs) \
        if "metamorphic" in task.judges else []
    light = [shipped(p) for p in programs]
    return Prepared(task.block, [i for i, _, _ in items], light, verdicts, cubins, names, records, dict(secs), pairs,
                    texts, time.perf_counter() - t_block)


def _compile_block(texts: list[str], hw: bool, secs: Counter, meanwhile: Callable[[Callable[[], bool]], None]) -> list:
    """``compile_batch`` of the block's texts in a thread, running ``meanwhile(ptxas_done)``
    (judges that need no ptxas result) in this one: the pool process would otherwise sit idle
    while its ptxas runs, and a campaign's pool of N processes then keeps N + 1 cores or more
    busy at times (measured: benchmarks/README.md, "checker beside ptxas", "reference beside ptxas")."""
    from fuzzptx.oracles.ptxas import compile_batch

    took: dict = {}

    def run() -> list:
        t0 = time.perf_counter()
        try:
            return compile_batch(texts, want_cubin=hw)
        finally:
            took["ptxas"] = time.perf_counter() - t0

    with cf.ThreadPoolExecutor(1) as ex:
        t0 = time.perf_counter()
        fut = ex.submit(run)
        meanwhile(fut.done)
        beside = time.perf_counter() - t0
        out = fut.result()
    secs["ptxas"] += took["ptxas"]
    # stage time that ran at once with ptxas's (counted in both stages, once in the block's wall)
    secs["overlapped"] += min(beside, took["ptxas"])
    return out


def _judge_early(task: BlockTask, items, emitted, early: list, ran: list, ptxas_done: Callable[[], bool]) -> None:
    """The judges that read the program alone, on each of the block's programs (not the planted
    ones), while ptxas compiles (``_compile_block``): the checker on every one; the reference
    until ptxas is done (after that it waits for ptxas's verdict, and skips what ptxas rejected:
    a reference run on a program ptxas then rejects is ~13% of them, the price of the overlap)."""
    wanted = tuple(j for j in ("checker", "reference") if j in task.judges)
    if not wanted:
        return
    for k, ((_, p, planted), (text, judged)) in enumerate(zip(items, emitted)):
        if planted or judged is None:
            continue
        js = wanted if not ptxas_done() else tuple(j for j in wanted if j != "reference")
        if js:
            early[k] = differ.judge(p, js, text=text, judged=judged)
            ran[k] = js


def _metamorphic_block(task: BlockTask, programs, texts, ptxas, cubins, planted, secs: Counter) -> list:
    """Each GPU-bound program's metamorphic pairs, every side compiled here in the pool (the
    original's -O3 build reused); without the hardware judge, judged at once on the reference."""
    from fuzzptx.judges import metamorphic

    t0 = time.perf_counter()
    out: list = []
    for p, text, r, cubin, plant in zip(programs, texts, ptxas, cubins, planted):
        if plant or r is None or not r.accepted or ("hardware" in task.judges and cubin is None):
            out.append(None)
            continue
        try:
            pairs = metamorphic.prepare_pairs(p)
            if isinstance(pairs, metamorphic.PreparedPairs):
                pairs = pairs.compile({(text, 3): r}) if "hardware" in task.judges else \
                    pairs.judge(metamorphic.ReferenceJudge())
        except Exception as exc:  # noqa: BLE001 - never lose the block's other verdicts
            pairs = metamorphic.Checked(skipped=f"metamorphic judge failed: {type(exc).__name__}: {exc}")
        out.append(pairs)
    secs["metamorphic (CPU)"] += time.perf_counter() - t0
    return out


# ----------------------------------------------------------------- the record


def done_keys(path: Path) -> Counter:
    """(block, index) -> how often it is in the record; a torn last line (kill -9) is ignored."""
    keys: Counter = Counter()
    if not path.exists():
        return keys
    with path.open() as fh:
        for line in fh:
            try:
                rec = json.loads(line)
                keys[(int(rec["block"]), int(rec["index"]))] += 1
            except (ValueError, KeyError, TypeError):
                continue
    return keys


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


def parse_gpus(text: str) -> list[int]:
    if text == "none":
        return []
    if text == "all":
        from fuzzptx.pytest_plugin import _visible_gpu_count

        env = os.environ.get("CUDA_VISIBLE_DEVICES")
        if env is not None:
            return list(range(len([d for d in env.split(",") if d.strip() and d.strip() != "-1"])))
        return list(range(_visible_gpu_count()))
    try:
        gpus = [int(x) for x in text.split(",")]
    except ValueError:
        raise CampaignError(f"--gpus {text!r}: expected all, none or a list like 0,1") from None
    if any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
        raise CampaignError(f"--gpus {text!r}: expected distinct GPU indices >= 0")
    return gpus


def parse_judges(text: str) -> tuple[str, ...]:
    judges = tuple(j.strip() for j in text.split(",") if j.strip())
    bad = [j for j in judges if j not in differ.JUDGES]
    if bad or not judges:
        raise CampaignError(f"--judges {text!r}: unknown judge(s) {', '.join(bad) or '(none given)'}; "
                            f"have {', '.join(differ.JUDGES)}")
    return judges


def corpus_files(directory: str) -> list[str]:
    d = Path(directory)
    if not d.is_dir():
        raise CampaignError(f"--corpus {directory}: not a directory")
    files = sorted(str(p) for p in d.rglob("*.ptx"))
    if not files:
        raise CampaignError(f"--corpus {directory}: no .ptx files in it")
    return files


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
    buckets: Counter = field(default_factory=Counter)
    smallest: dict = field(default_factory=dict)  # signature -> fewest instructions so far
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

    def wall(self) -> float:
        return time.perf_counter() - self.start

    def rates(self) -> dict[str, float]:
        """Programs per second each stage could sustain with the processes it has."""
        out = {}
        for s in STAGES:
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
    from fuzzptx.oracles.hardware import HardwareWorker

    return SparedWorker(lambda: HardwareWorker(device=gpu, timeout=timeout))


# ----------------------------------------------------------------- the campaign


@dataclass(frozen=True)
class Plan:
    """What to judge: seed, blocks, limits (fixed for a campaign directory across --resume)."""

    seed: int = 0
    block_size: int = 32
    shard: tuple[int, int] = (0, 1)
    examples: int | None = None
    seconds: float | None = None
    judges: tuple[str, ...] = NIGHTLY_JUDGES
    corpus: tuple[str, ...] | None = None
    plant: int | None = None  # block for the planted faults; -1: chosen in the middle of the run
    generator: str = "direct"
    numerics: str | None = None  # spec or hardware for every program; None: each program's own (spec if none)

    def total_blocks(self) -> int | None:
        n = self.examples if self.corpus is None else min(self.examples or len(self.corpus), len(self.corpus))
        return None if n is None else -(-n // self.block_size)

    def limit(self) -> int | None:
        return self.examples if self.corpus is None else min(self.examples or len(self.corpus), len(self.corpus))

    def blocks(self):
        b, total = self.shard[0], self.total_blocks()
        while total is None or b < total:
            yield b
            b += self.shard[1]

    def task(self, block: int, skip: frozenset[int], plant: bool) -> BlockTask:
        lim = self.limit()
        keep = None if lim is None else max(0, min(self.block_size, lim - block * self.block_size))
        files = None
        if self.corpus is not None:
            files = self.corpus[block * self.block_size:(block + 1) * self.block_size]
        return BlockTask(block, self.seed, self.block_size, self.judges, skip, keep, plant, files, self.generator,
                         self.numerics)


def _check_meta(out: Path, plan: Plan, resume: bool) -> dict:
    meta = {"seed": plan.seed, "block_size": plan.block_size, "shard": f"{plan.shard[0]}/{plan.shard[1]}",
            "corpus": None if plan.corpus is None else len(plan.corpus), "generator": plan.generator,
            "numerics": plan.numerics, "planted_block": None}
    path = out / "campaign.json"
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except ValueError:
            raise CampaignError(f"{path}: not a campaign record (bad JSON)") from None
        for k in ("seed", "block_size", "shard", "corpus", "generator", "numerics"):
            if old.get(k, meta[k]) != meta[k]:
                raise CampaignError(f"--resume with {k}={meta[k]} but the campaign in {out} used {old.get(k)}")
        meta["planted_block"] = old.get("planted_block")
    return meta


def run_campaign(out: Path, plan: Plan, *, gpus: list[int], resume: bool = False, workers: int = 1,
                 gpu_timeout: float = 5.0, gpu_workers: int = 0, progress: bool = True) -> dict:
    """Run (or resume) a campaign into ``out``; returns the stats also written to stats.json."""
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    if results.exists() and results.stat().st_size and not resume:
        raise CampaignError(f"{results} exists: pass --resume to carry on, or choose another --out")
    meta = _check_meta(out, plan, resume)
    _truncate_torn_tail(results)
    done = done_keys(results)
    done_by_block: dict[int, set[int]] = {}
    for b, i in done:
        done_by_block.setdefault(b, set()).add(i)
    (out / "repros").mkdir(exist_ok=True)
    use_gpu = "hardware" in plan.judges and bool(gpus)
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
            hw: list[Any] = []
            for p, cubin, name in zip(item.programs, item.cubins, item.kernel_names):
                if cubin is None:
                    hw.append(None)
                    continue
                live.gpu_enter(idx)
                try:
                    hw.append(runner.run(p, cubin=cubin, kernel=name))
                except Exception as exc:  # the worker could not start: no verdict, never a lost block
                    live.gpu_errors.append(f"gpu {gpus[idx]}: {type(exc).__name__}: {exc}")
                    hw.append(None)
                finally:
                    live.gpu_leave(idx)
            for j, pairs in enumerate(item.metamorphic):
                if pairs is not None and not hasattr(pairs, "skipped"):  # PreparedPairs: sides on this GPU
                    live.gpu_enter(idx)
                    t0 = time.perf_counter()
                    try:
                        item.metamorphic[j] = pairs.judge(_meta_judge(runner, pairs.built))
                    except Exception as exc:  # noqa: BLE001
                        item.metamorphic[j] = _meta_failed(exc)
                    finally:
                        live.gpu_leave(idx)
                        live.stage["gpu (metamorphic)"] += time.perf_counter() - t0
            live.restarts[id(runner)] = runner.restarts
            live.runner_stats[id(runner)] = (list(getattr(runner, "start_seconds", ())), getattr(runner, "waited", 0.0))
            events.put(("gpu", item, hw))

    threads = [threading.Thread(target=gpu_loop, args=(i, r), daemon=True, name=f"gpu{i}.{k}")
               for k, (i, r) in enumerate(runners)]
    for t in threads:
        t.start()

    ctx = pool_context()
    pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_warm)
    repro_futs: list[cf.Future] = []
    pending: dict[cf.Future, BlockTask] = {}
    block_iter = plan.blocks()
    state = {"exhausted": False, "in_gpu": 0, "last_draw": 0.0, "last_stats": time.monotonic()}
    log = results.open("a")

    def submit(task: BlockTask) -> None:
        fut = pool.submit(_pool_block, task)
        pending[fut] = task
        fut.add_done_callback(lambda f: events.put(("cpu", f)))

    def submit_more() -> None:
        nonlocal plant_block
        while not state["exhausted"] and len(pending) < workers + 2:
            now = time.monotonic()
            if deadline is not None and now > deadline:
                state["exhausted"] = True
                return
            try:
                b = next(block_iter)
            except StopIteration:
                state["exhausted"] = True
                return
            if plan.plant == -1 and plant_block is None and deadline is not None and now > deadline - plan.seconds / 2:
                plant_block = meta["planted_block"] = b  # the middle of a timed campaign
                _write_json(out / "campaign.json", meta)
            task = plan.task(b, frozenset(done_by_block.get(b, ())), b == plant_block)
            if not block_programs_left(task):
                continue
            submit(task)

    def finish(item: Prepared, hw: list[Any] | None) -> None:
        t_main = time.perf_counter()
        for k, s in item.seconds.items():
            live.stage[k] += s
        live.pool_blocks += item.wall
        lines = []
        for j, (p, v, idx, base) in enumerate(zip(item.programs, item.verdicts, item.indices, item.records)):
            pairs = item.metamorphic[j] if item.metamorphic else None
            if pairs is not None and hasattr(pairs, "skipped"):
                v.metamorphic = pairs
            if hw is not None and hw[j] is not None:
                v.hardware = hw[j]
                live.stage["gpu"] += hw[j].seconds
                live.gpu_programs += 1
                if hw[j].fault:
                    live.faults[hw[j].fault] += 1
            try:
                findings = differ.compare(p, v, family=base["family"], full=lambda j=j: item.program(j))
            except Exception as exc:  # a comparison that breaks is a finding, never the end of the campaign
                findings = [differ.Finding(f"differ:crash|{base['family']}", f"compare failed: {type(exc).__name__}: {exc}")]
            repros: dict[str, str] = {}  # signature -> its repro file (one file per signature)
            full = sizing = None
            for f in findings:
                live.buckets[f.signature] += 1
                live.findings += 1
                n = base["instructions"]
                if f.signature not in live.smallest or n < live.smallest[f.signature]:
                    live.smallest[f.signature] = n
                    stem = f"b{item.block}_{idx}" + (f"_{len(repros)}" if repros else "")
                    repro = repros[f.signature] = str(out / "repros" / f"{stem}.ptx")
                    note = f"hardware when found: {v.summary()['hardware']}" if v.hardware is not None else None
                    full = full or item.program(j)
                    Path(repro).write_text(replace(full, signature=f.signature).to_ptx())  # at once: kill-safe
                    # EXPECT lines from the campaign's own verdicts, moved to the final header
                    # (differ.finalize_repro: a few ms, so every repro file gets them, even one
                    # a smaller repro of its signature supersedes later)
                    sizing = sizing or replace(v, hardware=None, mmasim=None, metamorphic=None)
                    fut = pool.submit(finalize_repro_file, repro, full, _judges_that_ran(v), f.signature, note, sizing,
                                      item.texts[j])
                    fut.add_done_callback(lambda x: _add_repro_seconds(live, x))
                    repro_futs.append(fut)
            rec = {"block": item.block, "index": idx, "id": f"{item.block}:{idx}", "t": time.time(), **base,
                   "verdicts": v.summary(),
                   "findings": [{"signature": f.signature, "message": f.message, "repro": repros.get(f.signature)}
                                for f in findings],
                   "repro": next(iter(repros.values()), None)}
            lines.append(json.dumps(rec) + "\n")
            live.programs += 1
        log.write("".join(lines))
        log.flush()
        live.stage["record (main process)"] += time.perf_counter() - t_main
        live.timeline.append((round(live.wall(), 2), live.programs))

    try:
        submit_more()
        # While the pool prepares the first blocks, this process loads what comparing and
        # recording need (else the first block waits ~1.5 s for those imports).
        threading.Thread(target=_warm_main, daemon=True, name="warm").start()
        while pending or state["in_gpu"]:
            try:
                ev = events.get(timeout=0.5)
            except queue.Empty:
                ev = None
            if ev is not None and ev[0] == "cpu":
                fut = ev[1]
                task = pending.pop(fut, None)
                if task is not None and not fut.cancelled():
                    try:
                        item = fut.result()
                    except BrokenProcessPool:  # a pool process died (OOM, signal): redo its blocks
                        state["pool_restarts"] = state.get("pool_restarts", 0) + 1
                        if state["pool_restarts"] > 5:
                            raise CampaignError("the CPU pool keeps dying; giving up (the record is kept)") from None
                        tasks = [task] + [pending.pop(f) for f in list(pending)]
                        pool = _restart_pool(pool, ctx, workers)
                        for t in tasks:
                            submit(t)
                        item = None
                    except Exception as exc:  # a block that cannot be prepared: say so, carry on
                        live.block_errors.append(f"block {task.block}: {type(exc).__name__}: {exc}")
                        _say(f"fuzzptx campaign: block {task.block} failed: {type(exc).__name__}: {exc}")
                        item = None
                    if item is not None:
                        if use_gpu and any(c is not None for c in item.cubins):
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
                for f in [f for f, t in pending.items() if not t.plant and f.cancel()]:
                    pending.pop(f, None)
                state["in_gpu"] -= _drop_queued(gpu_q, plant_block, live)
            now = time.monotonic()
            if progress and now - state["last_draw"] > (0.5 if sys.stderr.isatty() else 15):
                state["last_draw"] = now
                _progress(live, gpu_q.qsize())
            if now - state["last_stats"] > 10:
                state["last_stats"] = now
                _write_json(out / "stats.json", _stats(live, plan, gpus if use_gpu else [], len(done), meta, results))
        cf.wait(repro_futs, timeout=120)  # EXPECT lines for the repros of this run
    finally:
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
    stats = _stats(live, plan, gpus if use_gpu else [], len(done), meta, results)
    _write_json(out / "stats.json", stats)
    if progress:
        _progress(live, 0)
        sys.stderr.write("\n")
    return stats


def _meta_judge(runner, built: dict):
    from fuzzptx.judges.metamorphic import HardwareJudge

    return HardwareJudge(runner, _built=built)


def _meta_failed(exc: Exception):
    from fuzzptx.judges.metamorphic import Checked

    return Checked(skipped=f"metamorphic judge failed: {type(exc).__name__}: {exc}")


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


def block_programs_left(task: BlockTask) -> bool:
    """Whether a block has any program not yet in the record (cheap: no generation)."""
    n = task.size if task.keep is None else task.keep
    wanted = set(range(n)) | ({task.size, task.size + 1} if task.plant else set())
    return bool(wanted - task.skip)


def _close_pool(pool) -> None:
    """Cancel what is queued, stop what still runs (nothing wants its result any more), and wait
    for the pool to wind down.  A pool left shutting down in the background races the
    interpreter's exit hook: CPython then prints a traceback ('OSError: Bad file descriptor' from
    concurrent.futures' _python_exit) at the end of a finished campaign."""
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        if proc.is_alive():
            proc.terminate()
    pool.shutdown(wait=True)


def _restart_pool(pool, ctx, workers: int):
    _close_pool(pool)
    _say("fuzzptx campaign: a pool process died; restarting the pool")
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_warm)


def _stats(live: Live, plan: Plan, gpus: list[int], resumed: int, meta: dict, results: Path) -> dict:
    wall = live.wall()
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
        "seed": plan.seed, "block_size": plan.block_size, "shard": f"{plan.shard[0]}/{plan.shard[1]}",
        "findings": live.findings,
        "faults": dict(live.faults),
        "worker_restarts": sum(live.restarts.values()),
        "gpu_worker_start_seconds_mean": _mean([x for st, _ in live.runner_stats.values() for x in st]),
        "gpu_seconds_waiting_for_a_worker_start": round(sum(w for _, w in live.runner_stats.values()), 1),
        "gpu_errors": live.gpu_errors.items, "gpu_errors_total": live.gpu_errors.count,
        "block_errors": live.block_errors.items, "block_errors_total": live.block_errors.count,
        "planted_block": meta.get("planted_block"),
        "buckets": dict(live.buckets.most_common()),
        "resumed_skipping": resumed,
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


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def _judges_that_ran(v: differ.Verdicts) -> tuple[str, ...]:
    ran = {"ptxas": v.ptxas is not None, "checker": v.checker is not None or v.checker_error is not None,
           "reference": v.reference is not None or v.reference_error is not None or v.reference_skipped is not None}
    return tuple(j for j in differ.CPU_JUDGES if ran[j])


def finalize_repro_file(path: str, p: Program, judges: tuple[str, ...], signature: str, note: str | None,
                        verdicts: differ.Verdicts | None = None, text: str | None = None) -> float:
    """Rewrite a repro with EXPECT lines taken on its final text (runs in a pool process; ``verdicts``:
    what the judges said of the program in the campaign, on ``text``: they size the header, and
    ptxas's verdict is moved to the final text rather than compiled again); returns the
    seconds it took."""
    t0 = time.perf_counter()
    if note:  # before the verdicts are placed: the note is a header line too, it moves the body
        p = replace(p, notes=p.notes + (note,))
    try:
        prog = differ.finalize_repro(p, judges, signature, verdicts=verdicts, text=text)
    except Exception:  # never lose the finding over its bookkeeping: the raw file stays
        return time.perf_counter() - t0
    tmp = path + ".tmp"
    Path(tmp).write_text(prog.to_ptx())
    os.replace(tmp, path)
    return time.perf_counter() - t0


def _add_repro_seconds(live: "Live", fut: cf.Future) -> None:
    if not fut.cancelled() and fut.exception() is None:
        with live.lock:
            live.pool_repros += fut.result()


# Imported once by the forkserver, so every pool process starts with them loaded (a spawned
# process spent 1.2-1.5 s importing them, and all of them did so at once at the start).
POOL_PRELOAD = ["fuzzptx.engine.campaign", "fuzzptx.engine.run", "fuzzptx.strategies", "fuzzptx.reduce",
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


def _warm_main() -> None:
    """The campaign process's imports for ``differ.compare`` and the records (see ``run_campaign``)."""
    try:
        from fuzzptx import isa
        from fuzzptx.oracles.reference import compare  # noqa: F401
        from fuzzptx.oracles.reference.values import UNDEF  # noqa: F401
        from fuzzptx.strategies.mutations import verdict_holds  # noqa: F401

        isa.forms()
    except Exception:  # only a head start: the first use imports them again and says what fails
        pass


def _warm() -> None:
    """Pool initializer: imports and catalogue built before the clock of any stage starts."""
    draw_direct(1, 0)
    from fuzzptx.oracles import ptxas  # noqa: F401
    from fuzzptx.oracles.checker import check_module  # noqa: F401
    from fuzzptx.oracles.reference import run_program  # noqa: F401
    from fuzzptx.perf import POOL_YOUNG_THRESHOLD, tune_gc

    tune_gc(POOL_YOUNG_THRESHOLD)  # (collected between blocks: _pool_block)


def _pool_block(task: BlockTask) -> Prepared:
    """``prepare_block`` as a pool task: the process collects its garbage after each block
    (``perf.between_blocks``; stage ``gc``)."""
    from fuzzptx.perf import between_blocks

    out = prepare_block(task)
    took = between_blocks()
    out.seconds["gc"] = took
    out.wall += took
    return out


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
    ap = _Parser(prog="fuzzptx campaign", description="Batched, isolated, resumable hardware campaign.")
    lim = ap.add_mutually_exclusive_group()
    lim.add_argument("--time", help="duration: 300, 5m, 2h")
    lim.add_argument("--examples", type=int, help="programs in the whole campaign (all shards together)")
    ap.add_argument("--gpus", default="all", help="all, none, or a list like 0,1")
    ap.add_argument("--out", required=True, help="campaign directory (results.jsonl, repros/, stats.json)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shard", default="0/1", help="i/n: this process takes blocks b with b %% n == i")
    ap.add_argument("--resume", action="store_true", help="carry on from the record in --out")
    ap.add_argument("--judges", default=",".join(NIGHTLY_JUDGES),
                    help="comma-separated (default: %(default)s, the nightly hardware set); add checker for its "
                         "ptxas-model verdicts too, at ~8-10%% of the throughput on an H100 node: "
                         "the CPU fuzz runs (fuzzptx run, pytest) already set the checker against ptxas")
    ap.add_argument("--numerics", choices=("spec", "hardware"), default=None,
                    help="the reference's numerics: spec (the PTX ISA's error bounds, the default) or hardware "
                         "(the bit-exact H100 model: any GPU mismatch is then a reference or hardware bug); "
                         "repro files carry it (NUMERICS line); with --corpus, default: each file's own")
    ap.add_argument("--block-size", type=int, default=32, help="programs per block (one ptxas module)")
    ap.add_argument("--workers", type=int, default=0, help="CPU processes (default: cores, one fewer with a GPU)")
    ap.add_argument("--generator", choices=("direct", "hypothesis"), default="direct",
                    help="direct: each program drawn straight from the strategies (fast); "
                         "hypothesis: through Hypothesis's engine (fuzz.draw_programs)")
    ap.add_argument("--corpus", help="judge the .ptx repro files under this directory instead of generating")
    ap.add_argument("--plant-faults", nargs="?", type=int, const=-1, default=None, metavar="BLOCK",
                    help="add a kernel that traps and one that hangs to one block (default: the middle one)")
    ap.add_argument("--gpu-timeout", type=float, default=5.0,
                    help="seconds before a kernel counts as hung (1 s turned a planted trap into a timeout "
                         "under contention on the H100: benchmarks/results/campaign_h100.json)")
    ap.add_argument("--gpu-workers", type=int, default=0,
                    help="isolated GPU worker threads per GPU, each with a warm spare process "
                         "(a hang's watchdog or a restart stalls only one; default: 3, or 2 below 12 cores a GPU)")
    ap.add_argument("--quiet", action="store_true")
    return ap


class _Parser(argparse.ArgumentParser):
    """argparse that raises (one line at the CLI) instead of printing usage and exiting."""

    def error(self, message: str):
        raise CampaignError(message)


def main_campaign(argv: list[str]) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.time is None and args.examples is None and args.corpus is None:
        raise CampaignError("say how much to do: --time DURATION or --examples N (or --corpus DIR)")
    if args.examples is not None and args.examples <= 0:
        raise CampaignError(f"--examples {args.examples}: expected a positive number of programs")
    if args.block_size <= 0:
        raise CampaignError(f"--block-size {args.block_size}: expected a positive number")
    if args.workers < 0:
        raise CampaignError(f"--workers {args.workers}: expected 0 (one per core) or more")
    if args.gpu_workers < 0:
        raise CampaignError(f"--gpu-workers {args.gpu_workers}: expected 0 (sized to the machine) or more")
    if args.gpu_timeout <= 0:
        raise CampaignError(f"--gpu-timeout {args.gpu_timeout}: expected a positive number of seconds")
    judges = parse_judges(args.judges)
    shard = parse_shard(args.shard)
    seconds = parse_duration(args.time) if args.time else None
    gpus = parse_gpus(args.gpus)
    corpus = tuple(corpus_files(args.corpus)) if args.corpus else None
    if "hardware" in judges and not gpus:
        if args.gpus != "none":  # asked for all and found none: say so
            _say("fuzzptx campaign: no GPU found: running without the hardware judge")
        judges = tuple(j for j in judges if j != "hardware")
    if "hardware" in judges:
        from fuzzptx.oracles.hardware import gpu_available

        reason = gpu_available()
        if reason:
            _say(f"fuzzptx campaign: hardware judge unavailable ({reason}); running without it")
            judges = tuple(j for j in judges if j != "hardware")
    workers = args.workers or max(1, (os.cpu_count() or 2) - (1 if "hardware" in judges else 0))
    plan = Plan(seed=args.seed, block_size=args.block_size, shard=shard, examples=args.examples, seconds=seconds,
                judges=judges, corpus=corpus, plant=args.plant_faults, generator=args.generator, numerics=args.numerics)
    stats = run_campaign(Path(args.out), plan, gpus=gpus, resume=args.resume, workers=workers,
                         gpu_timeout=args.gpu_timeout, gpu_workers=args.gpu_workers, progress=not args.quiet)
    print(json.dumps({k: v for k, v in stats.items() if k != "timeline"}, indent=1))
    return 0
