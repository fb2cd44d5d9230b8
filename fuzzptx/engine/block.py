"""One block's CPU stages -- the unit of work of both ``fuzzptx run`` and ``fuzzptx campaign``.

A block is generated, emitted once, compiled by one batched ptxas run (which also yields the
cubins the GPU runs), and judged by every CPU judge the run asks for (from the registry: each
judge's class attributes say whether it reads the IR, may run while ptxas compiles, or needs
ptxas's acceptance).  What travels back to the engine is light: each program's header, its
text, its verdicts, its cubin and its record fields.
"""
from __future__ import annotations

import concurrent.futures as cf
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from fuzzptx import launch
from fuzzptx.judges import differ, metamorphic, registry
from fuzzptx.judges.base import Judge, Verdicts
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.perf import POOL_YOUNG_THRESHOLD, between_blocks, die_with_parent, tune_gc
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Function, Module
from fuzzptx.ptx.parse import parse

from .generate import BlockTask, block_programs, draw_direct
from .records import base_record


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
        return replace(self.programs[j], module=parse(self.texts[j], "<program>"))


@dataclass
class Deferred:
    """The judges ``prepare_block_deferring`` left for later (its ``defer``) and what they read:
    each program's IR, text and ptxas result (cubin kept).  ``judge_deferred`` runs them once several
    blocks are compiled, so the SASS judge's one disassembler run (~0.25 s of start-up) serves
    them all."""

    judges: tuple[str, ...]
    ptxas: list[Any]  # the block's ptxas results, cubins included
    programs: list[tuple[int, Program, str, Program, Any]]  # (position in the block, program, text, judged, ptxas)


def shipped(program: Program) -> Program:
    """What the main process needs of a judged program: its header, and of its module the
    launched kernel's signature (the GPU fills the arguments from it).  The whole IR costs the
    pool several ms per program to pickle and the main process more to unpickle; the text
    travels instead (``Prepared.program``)."""
    m = program.module
    kernels = tuple(Function(f.kind, f.name, f.params, f.returns, (), f.linkage)
                    for f in m.functions() if f.name == program.launch.kernel and f.body is not None)
    return replace(program, module=Module(m.version, m.target, m.address_size, kernels))


def gpu_worthy(program: Program, v: differ.Verdicts, planted: bool = False) -> bool:
    """Whether the GPU should run a program: it targets sm_90 (an sm_100a/sm_120a cubin cannot
    load on Hopper), and it is not labelled undefined by its mutation (such a program may hang
    or fault by design, and each fault costs a worker restart: that would make the GPU the
    bottleneck for nothing the spec defines).  Planted fault kernels always run."""
    if planted:
        return True
    if not program.module.target.split(",")[0].strip().startswith("sm_90"):
        return False
    return differ.expects_defined(program)


def gpu_skip_reason(program: Program) -> str:
    """Why ``gpu_worthy`` keeps an accepted program off the GPU, in words for the record."""
    target = program.module.target.split(",")[0].strip()
    if not target.startswith("sm_90"):
        return f"targets {target}: its cubin cannot load on Hopper"
    label = next((f"{j}: {v}" for j, v in program.expect
                  if j in ("checker", "reference", "ptxas") and v.startswith(("undefined", "illegal", "rejected"))), "")
    return f"labelled by its mutation ({label})" if label else "labelled undefined by its mutation"


def prepare_block(task: BlockTask) -> Prepared:
    """The CPU stages for one block (in a pool process, or inline for a small run): generate, emit
    once, one batched ptxas run with the judges that need no ptxas verdict beside it, then every
    other CPU judge, and the record fields."""
    return prepare_block_deferring(task, ())[0]


def prepare_block_deferring(task: BlockTask, defer: tuple[str, ...]) -> tuple[Prepared, Deferred]:
    """``prepare_block`` with the judges named in ``defer`` left out of the per-program verdicts:
    ``judge_deferred`` adds theirs, before the block leaves the process."""
    t_block = time.perf_counter()
    secs: Counter = Counter()
    t0 = time.perf_counter()
    items = block_programs(task)
    secs["generate"] += time.perf_counter() - t0
    programs = [p for _, p, _ in items]
    judges = registry.resolve(task.judges)
    cpu = [j for j in judges if j.cpu]
    later = Deferred(tuple(j.name for j in cpu if j.name in defer), [], [])
    t0 = time.perf_counter()
    written = [launch.as_written(p) for p in programs]  # a --corpus file: judged as its bytes are
    if any(j.reads_ir for j in cpu):
        # the text and the located IR the judges read, from one emission: no parse back
        emitted = [(w, p) if w is not None else p.to_ptx_located() for w, p in zip(written, programs)]
        secs["emit+parse"] += time.perf_counter() - t0
    else:
        emitted = [(w, None) if w is not None else (p.to_ptx(), None) for w, p in zip(written, programs)]
        secs["emit"] += time.perf_counter() - t0
    texts = [t for t, _ in emitted]
    gpu_cubins = any(not j.cpu and j.wants_cubin for j in judges)  # the GPU runs ptxas's own cubins
    cpu_cubins = any(j.cpu and j.wants_cubin for j in judges)  # a CPU judge reads them (the SASS judge)
    ptxas: list[Any] = [None] * len(programs)
    early: list[Any] = [None] * len(programs)  # verdicts taken while ptxas compiles
    ran: list[tuple[str, ...]] = [()] * len(programs)  # ... and by which judges
    if "ptxas" in task.judges or gpu_cubins:
        ptxas = _compile_block(texts, gpu_cubins or cpu_cubins, secs,
                               lambda done: _judge_early(task, cpu, items, emitted, early, ran, done))
    later.ptxas = ptxas
    for j in cpu:  # a judge's once-per-block work on ptxas's results (one disassembly of the block)
        if type(j).warm is not Judge.warm and j.name not in later.judges:
            t0 = time.perf_counter()
            j.warm(ptxas)
            secs[j.name] += time.perf_counter() - t0
    # judges that judge a whole block in one go (other ptxas releases: one batched run each)
    batched: dict[str, list[Any]] = {}
    for j in cpu:
        if hasattr(j, "judge_batch") and j.name != "ptxas":
            t0 = time.perf_counter()
            batched[j.name] = j.judge_batch(programs, texts)
            secs[j.name] += time.perf_counter() - t0
    verdicts, cubins, names, records = [], [], [], []
    for k, ((_idx, p, planted), (text, judged), r, v0, before) in enumerate(zip(items, emitted, ptxas, early, ran)):
        todo = [j for j in cpu if j.name not in before]
        given = {name: vs[k] for name, vs in batched.items()}
        if planted or (r is not None and not r.accepted):
            # What a judge that needs acceptance says only matters for a program ptxas turns into
            # a kernel (and a planted kernel is not one any judge should interpret: it never ends).
            todo = [j for j in todo if not j.needs_accepted and not (planted and j.name != "ptxas")]
            for name in before:  # taken before ptxas said no: the verdicts stay as they were
                if registry.get(name).needs_accepted:
                    v0.pop(name, None)
        given = {name: verdict for name, verdict in given.items() if name in {j.name for j in todo}}
        if any(j.name in later.judges for j in todo):
            later.programs.append((k, p, text, judged, r))
            todo = [j for j in todo if j.name not in later.judges]
        if any(j.reads_ir for j in todo):
            v = differ.judge(p, [j.name for j in todo], ptxas_result=r, text=text, judged=judged, into=v0, given=given)
        else:  # ptxas alone needs no parse of the emitted text
            v = v0 if v0 is not None else Verdicts()
            v.update(given)
        if r is not None:  # cubins travel once, in ``cubins``; a plain dict pickles
            v.ptxas = r
        for k, s in v.seconds.items():
            secs[k] += s
        ok = (gpu_cubins and r is not None and r.accepted and r.cubin is not None
              and gpu_worthy(p, v, planted))
        cubins.append(r.cubin if ok else None)
        names.append(r.kernel(p.launch.kernel) if ok else "")
        if r is not None:
            v.ptxas = replace(r, cubin=None, kernel_names=dict(r.kernel_names))
        verdicts.append(v)
        rec = base_record(p)
        rec.update(launch.record_fields(p, v))  # where it came from, what of its tensor cores ran
        if planted:
            rec["planted"] = planted
        if gpu_cubins and r is not None and r.accepted and not ok:
            rec["gpu_skipped"] = gpu_skip_reason(p)  # why the record has no hardware verdict
        records.append(rec)
    pairs = _metamorphic_block(task, programs, texts, ptxas, cubins, [p for _, _, p in items], secs) \
        if "metamorphic" in task.judges else []
    light = [shipped(p) for p in programs]
    return Prepared(task.block, [i for i, _, _ in items], light, verdicts, cubins, names, records, dict(secs), pairs,
                    texts, time.perf_counter() - t_block), later


def deferrable(judges: tuple[str, ...]) -> tuple[str, ...]:
    """The judges of ``judges`` worth deferring: those with once-per-block work (``Judge.warm``,
    the SASS judge's disassembler run), which one run can then do for several blocks."""
    return tuple(j.name for j in registry.resolve(judges) if j.cpu and type(j).warm is not Judge.warm)


def warm_deferred(blocks: list[tuple[Prepared, Deferred]]) -> None:
    """Each deferred judge's once-per-block work (``Judge.warm``) for all ``blocks`` in one go;
    each block's stage seconds and wall get a share in proportion to its programs."""
    names = tuple(dict.fromkeys(n for _, d in blocks for n in d.judges))
    shares = [max(1, len(d.programs)) for _, d in blocks]
    for j in registry.resolve(names) if names else ():
        if type(j).warm is not Judge.warm:
            t0 = time.perf_counter()
            j.warm([r for _, d in blocks if j.name in d.judges for r in d.ptxas])
            took = time.perf_counter() - t0
            for (prep, _), n in zip(blocks, shares):
                prep.seconds[j.name] = prep.seconds.get(j.name, 0.0) + took * n / sum(shares)
                prep.wall += took * n / sum(shares)


def judge_deferred(prep: Prepared, later: Deferred) -> None:
    """The deferred judges' verdicts on one prepared block, into its verdicts and stage seconds."""
    t_block = time.perf_counter()
    for k, p, text, judged, r in later.programs:
        v = prep.verdicts[k]
        differ.judge(p, (("ptxas",) if r is not None else ()) + later.judges, ptxas_result=r, text=text,
                     judged=judged, into=v)
        if r is not None:  # as prepare_block ships it (None: the run has no pinned ptxas judge)
            v.ptxas = replace(r, cubin=None, kernel_names=dict(r.kernel_names))
        for name in later.judges:
            prep.seconds[name] = prep.seconds.get(name, 0.0) + v.seconds.get(name, 0.0)
    prep.wall += time.perf_counter() - t_block


def _compile_block(texts: list[str], hw: bool, secs: Counter, meanwhile: Callable[[Callable[[], bool]], None]) -> list:
    """``compile_batch`` of the block's texts in a thread, running ``meanwhile(ptxas_done)``
    (judges that need no ptxas result) in this one: the pool process would otherwise sit idle
    while its ptxas runs, and a campaign's pool of N processes then keeps N + 1 cores or more
    busy at times (measured: benchmarks/README.md, "checker beside ptxas", "reference beside ptxas")."""
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


def _judge_early(task: BlockTask, cpu: list, items, emitted, early: list, ran: list,
                 ptxas_done: Callable[[], bool]) -> None:
    """The judges that read the program alone (``Judge.early``: the checker, the reference) on each
    of the block's programs (not the planted ones), while ptxas compiles (``_compile_block``); a
    judge that needs ptxas's acceptance runs only until ptxas is done (after that it waits for
    ptxas's verdict, and skips what ptxas rejected: a reference run on a program ptxas then
    rejects is ~13% of them, the price of the overlap)."""
    wanted = tuple(j.name for j in cpu if j.early)
    if not wanted:
        return
    after_ptxas = tuple(n for n in wanted if not registry.get(n).needs_accepted)
    for k, ((_, p, planted), (text, judged)) in enumerate(zip(items, emitted)):
        if planted or judged is None:
            continue
        js = wanted if not ptxas_done() else after_ptxas
        if js:
            early[k] = differ.judge(p, js, text=text, judged=judged)
            ran[k] = js


def _metamorphic_block(task: BlockTask, programs, texts, ptxas, cubins, planted, secs: Counter) -> list:
    """Each GPU-bound program's metamorphic pairs, every side compiled here in the pool (the
    original's -O3 build reused); without the hardware judge, judged at once on the reference."""
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


def warm() -> None:
    """Pool initializer: the process ends with its parent (``perf.die_with_parent``); the catalogue
    and the strategies built before the clock of any stage starts."""
    die_with_parent()
    draw_direct(1, 0)
    tune_gc(POOL_YOUNG_THRESHOLD)  # (collected between blocks: pool_block)


def pool_block(task: BlockTask) -> Prepared:
    """``prepare_block`` as a pool task: the process collects its garbage after each block
    (``perf.between_blocks``; stage ``gc``)."""
    out = prepare_block(task)
    took = between_blocks()
    out.seconds["gc"] = took
    out.wall += took
    return out


def pool_blocks(tasks: list[BlockTask]) -> list[Prepared | str]:
    """Several blocks as one pool task: each prepared with its ``deferrable`` judges left out,
    then those judges' once-per-block work done once for all of them (one disassembler run for
    the SASS judge instead of one per block), then their verdicts.  Each block is a ``Prepared``
    as ``pool_block`` makes it, with the same verdicts, or the one line saying why it failed."""
    parts: list[tuple[Prepared, Deferred] | str] = []
    for task in tasks:
        try:
            parts.append(prepare_block_deferring(task, deferrable(task.judges)))
        except Exception as exc:  # noqa: BLE001 - one block's failure is that block's, not the group's
            parts.append(f"{type(exc).__name__}: {exc}")
    warm_deferred([x for x in parts if not isinstance(x, str)])
    out: list[Prepared | str] = []
    for x in parts:
        if not isinstance(x, str):
            try:
                judge_deferred(*x)
                x = x[0]
            except Exception as exc:  # noqa: BLE001
                x = f"{type(exc).__name__}: {exc}"
        out.append(x)
    took = between_blocks() / max(1, len(tasks))
    for item in out:
        if not isinstance(item, str):
            item.seconds["gc"] = took
            item.wall += took
    return out
