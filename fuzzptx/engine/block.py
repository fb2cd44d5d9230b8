"""One block's pool stages -- the unit of work of every run: ``fuzzptx run``, ``fuzzptx campaign``
and their tests.

The engine is a table of named stages (``POOL_STAGES`` here, the GPU stages in the campaign's GPU
threads, compare and record in its main process), as a compiler backend keeps its passes in a
dict.  A judge joins the stage it declares (``Judge.stage``) with what it needs (``Judge.needs``:
the parsed program, the compiler's acceptance, its cubin, a GPU); the engine reads those
declarations, never a judge's name.  A block is generated, emitted once, compiled by one batched
run of the compile-stage judge (which also yields the cubins the GPU runs; the early judges run
beside it), warmed (a judge's once-per-block work), judged by the batch and per-program judges,
and prepared for the GPU stages.  What travels back to the main process is light: each program's
header, its text, its verdicts, the GPU stages' inputs and its record fields.
"""
from __future__ import annotations

import concurrent.futures as cf
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

from fuzzptx import launch
from fuzzptx.errors import FuzzptxError
from fuzzptx.judges import differ
from fuzzptx.judges.base import ACCEPTED, BATCH, COMPILE, CUBIN, DEVICE, EARLY, GPU, IR, Done, Judge, Verdicts
from fuzzptx.judges.programs import as_judged, undefined_label
from fuzzptx.judges.registry import by_stage
from fuzzptx.judges.selection import JudgeSet
from fuzzptx.perf import POOL_YOUNG_THRESHOLD, between_blocks, die_with_parent, tune_gc
from fuzzptx.program import Program
from fuzzptx.ptx.ir import Function, Module
from fuzzptx.ptx.parse import parse

from .generate import BlockTask, block_programs, draw_direct
from .records import base_record


@dataclass
class Prepared:
    """One block after the pool stages: ready for the GPU stages (or already final without them)."""

    block: int
    indices: list[int]
    programs: list[Program]  # as ``shipped``: the launched kernel's signature, no bodies
    verdicts: list[Verdicts]
    # per program: GPU-stage judge name -> what its ``on_gpu`` needs (``Judge.prepare``; a cubin is
    # one bytes object for all programs of one compile, pickled once)
    gpu: list[dict[str, Any]]
    records: list[dict]  # record fields the pool computes (family, forms, coverage, ...)
    seconds: dict[str, float]
    texts: list[str] = field(default_factory=list)  # the PTX every judge saw, per program
    wall: float = 0.0  # seconds the pool process spent on the block, stages and all

    def program(self, j: int) -> Program:
        """Program ``j`` in full, as the judges saw it (parsed back from its text: only a repro needs it)."""
        return replace(self.programs[j], module=parse(self.texts[j], "<program>"))

    def for_gpu(self) -> bool:
        return any(self.gpu)


@dataclass
class Deferred:
    """The judges ``prepare_block_deferring`` left for later (its ``defer``) and what they read:
    each program's IR, text and compile result (cubin kept).  ``judge_deferred`` runs them once
    several blocks are compiled, so the SASS judge's one disassembler run (~0.25 s of start-up)
    serves them all."""

    judges: tuple[str, ...]
    compiled: list[Any]  # the block's compile results, cubins included
    programs: list[tuple[int, Program, str, Program, Any]]  # (position in the block, program, text, judged, compiled)
    compiler: Judge | None = None
    warmers: tuple[Judge, ...] = ()  # the deferred judges themselves


@dataclass
class BlockState:
    """What the pool stages hand each other for one block."""

    task: BlockTask
    defer: tuple[str, ...]
    secs: Counter = field(default_factory=Counter)
    items: list = field(default_factory=list)  # (index, program, planted kind or None)
    programs: list[Program] = field(default_factory=list)
    emitted: list[tuple[str, Program | None]] = field(default_factory=list)  # (text, located IR or None)
    compiled: list[Any] = field(default_factory=list)  # the compile stage's result per program (or None)
    early: list[Any] = field(default_factory=list)  # verdicts taken beside the compile ...
    ran: list[tuple[str, ...]] = field(default_factory=list)  # ... and by which judges
    batched: dict[str, list[Any]] = field(default_factory=dict)  # BATCH judge -> verdict per program
    verdicts: list[Verdicts] = field(default_factory=list)
    gpu: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)
    later: Deferred | None = None
    # the executor's: ``until(k, program, verdicts)`` true ends the block after program k (the reducer's
    # first candidate that holds); ``failed``, one dict per program, takes a judge's ImportError or
    # FuzzptxError (judge name -> exception: ``fuzzptx replay`` shows it as skipped) instead of raising it
    until: Callable[[int, Program, Verdicts], bool] | None = None
    failed: list[dict[str, BaseException]] | None = None

    @property
    def judges(self) -> JudgeSet:
        return self.task.judges

    @property
    def pool(self) -> list[Judge]:
        return self.task.judges.in_pool()

    @property
    def compiler(self) -> Judge | None:
        """The compile stage's judge: the one asked for, else (a GPU stage needs cubins) the registered one."""
        return self.task.judges.compiler() or (by_stage(COMPILE) if self.gpu_cubins else None)

    @property
    def gpu_run(self) -> bool:
        """Whether the run's programs go to a GPU (a judge that needs one is asked for)."""
        return bool(self.task.judges.needing(DEVICE))

    @property
    def gpu_cubins(self) -> bool:
        return any(CUBIN in j.needs and not j.in_pool for j in self.task.judges.judges)

    @property
    def cpu_cubins(self) -> bool:
        return any(CUBIN in j.needs for j in self.pool)


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


def prepare_block(task: BlockTask) -> Prepared:
    """The pool stages for one block (in a pool process, or inline for a small run)."""
    return prepare_block_deferring(task, ())[0]


def prepare_block_deferring(task: BlockTask, defer: tuple[str, ...]) -> tuple[Prepared, Deferred]:
    """The pool stages with the judges named in ``defer`` left out of the per-program verdicts:
    ``judge_deferred`` adds theirs, before the block leaves the process."""
    t_block = time.perf_counter()
    st = pool_stages(BlockState(task, defer))
    light = [shipped(p) for p in st.programs]
    return Prepared(task.block, [i for i, _, _ in st.items], light, st.verdicts, st.gpu, st.records, dict(st.secs),
                    [t for t, _ in st.emitted], time.perf_counter() - t_block), st.later


def pool_stages(st: BlockState) -> BlockState:
    """Every stage of ``POOL_STAGES`` on one block, in order."""
    st.task.judges.install()  # the command's judge objects, as shipped: no name is resolved here
    for stage in POOL_STAGES.values():
        stage(st)
    return st


def _judge(st: BlockState, k: int, p: Program, judges: Any, **kw: Any) -> Verdicts:
    """``differ.judge`` of program ``k`` with the block's release, its failures kept where the block keeps them."""
    return differ.judge(p, judges, toolchain=st.task.toolchain,
                        failed=None if st.failed is None else st.failed[k], **kw)


def _generate(st: BlockState) -> None:
    t0 = time.perf_counter()
    st.items = block_programs(st.task)
    st.secs["generate"] += time.perf_counter() - t0
    st.programs = [p for _, p, _ in st.items]
    if st.failed is not None:
        st.failed[:] = [{} for _ in st.programs]
    deferred = tuple(j for j in st.pool if j.name in st.defer)
    st.later = Deferred(tuple(j.name for j in deferred), [], [], warmers=deferred)


def _emit(st: BlockState) -> None:
    t0 = time.perf_counter()
    given = st.task.given or [(p, None, None) for p in st.programs]
    # a --corpus file (or a given program read from a file): judged as its bytes are
    written = [t if t is not None else launch.as_written(p) for p, t, _ in given]
    if any(IR in j.needs for j in st.pool):
        # the text and the located IR the judges read, from one emission: no parse back (a given text
        # is parsed, unless its IR came with it)
        st.emitted = [p.to_ptx_located() if w is None else (w, ir) if ir is not None
                      else (w, p) if t is None else as_judged(p, w)[::-1]
                      for (p, t, ir), w in zip(given, written)]
        st.secs["emit+parse"] += time.perf_counter() - t0
    else:
        st.emitted = [(w, None) if w is not None else (p.to_ptx(), None) for (p, _, _), w in zip(given, written)]
        st.secs["emit"] += time.perf_counter() - t0


def _compile(st: BlockState) -> None:
    """One batched run of the compile-stage judge over the block, the early judges beside it."""
    n = len(st.programs)
    st.compiled, st.early, st.ran = [None] * n, [None] * n, [()] * n
    compiler = st.compiler
    if compiler is not None:
        st.compiled = _compile_block(st, compiler, st.gpu_cubins or st.cpu_cubins, lambda done: _judge_early(st, done))
    st.later.compiled = st.compiled
    st.later.compiler = compiler


def _warm(st: BlockState) -> None:
    """A judge's once-per-block work on the compile results (one disassembly of the block)."""
    for j in st.pool:
        if j.warms and j.name not in st.later.judges:
            t0 = time.perf_counter()
            j.warm(st.compiled, *(() if st.task.toolchain is None else (st.task.toolchain,)))
            st.secs[j.name] += time.perf_counter() - t0


def _batch(st: BlockState) -> None:
    """Judges that judge a whole block in one call (other ptxas releases: one batched run each)."""
    texts = [t for t, _ in st.emitted]
    for j in st.judges.at(BATCH):
        t0 = time.perf_counter()
        st.batched[j.name] = j.judge_batch(st.programs, texts)
        st.secs[j.name] += time.perf_counter() - t0


def _per_program(st: BlockState) -> None:
    """Every other pool judge on each program, then what the GPU stages need of it."""
    compiler = st.compiler
    pool = st.pool
    by_name = {j.name: j for j in st.judges.judges}
    gpu_judges = st.judges.on_gpu_stages()
    for k, ((_idx, p, planted), (text, judged), r, v0, before) in enumerate(
            zip(st.items, st.emitted, st.compiled, st.early, st.ran)):
        todo = [j for j in pool if j.name not in before]
        given = {name: vs[k] for name, vs in st.batched.items()}
        if planted or (r is not None and not r.accepted and not st.task.every_verdict):
            # What a judge that needs acceptance says only matters for a program the compiler turns
            # into a kernel (and a planted kernel is not one any judge should interpret: it never ends).
            todo = [j for j in todo if ACCEPTED not in j.needs and not (planted and j is not compiler)]
            for name in before:  # taken before the compiler said no: the verdicts stay as they were
                if ACCEPTED in by_name[name].needs:
                    v0.pop(name, None)
        names = {j.name for j in todo}
        given = {name: verdict for name, verdict in given.items() if name in names}
        if r is not None:
            given[compiler.name] = r
        if any(j.name in st.later.judges for j in todo):
            st.later.programs.append((k, p, text, judged, r))
            todo = [j for j in todo if j.name not in st.later.judges]
        if any(IR in j.needs for j in todo):
            v = _judge(st, k, p, todo, text=text, judged=judged, into=v0, given=given)
        else:  # the compiler alone needs no parse of the emitted text
            v = v0 if v0 is not None else Verdicts()
            v.update({name: verdict for name, verdict in given.items() if name in names})
            if st.task.toolchain is not None:
                v.release = st.task.toolchain.release
        if r is not None:  # cubins travel once, in ``Prepared.gpu``
            v[compiler.name] = r
        for name, s in v.seconds.items():
            st.secs[name] += s
        to_gpu = (st.gpu_run and r is not None and r.accepted and r.cubin is not None
                  and (st.task.every_verdict or gpu_worthy(p, v, planted)))
        work: dict[str, Any] = {}
        ready = r is not None and r.accepted and (to_gpu or not st.gpu_run)
        if st.task.every_verdict and not st.gpu_run:
            ready = True  # (without a GPU a GPU-stage judge judges at once, whatever the compiler said)
        if gpu_judges and ready:
            # a planted kernel goes to the GPU stage's own judges only: it traps or never ends, so
            # a compile pair of it would say nothing; the campaign shows its GPU worker surviving it
            for j in gpu_judges if not planted else [j for j in gpu_judges if j.stage == GPU]:
                t0 = time.perf_counter()
                prepared = j.prepare(p, text, r, gpu=st.gpu_run, verdicts=v)
                if isinstance(prepared, Done):  # judged at once (no GPU in the run)
                    v[j.name] = prepared.verdict
                elif prepared is not None:
                    work[j.name] = prepared
                st.secs[f"{j.name} (CPU)"] += time.perf_counter() - t0
        st.gpu.append(work)
        if r is not None:
            v[compiler.name] = compiler.light(r)
        st.verdicts.append(v)
        rec = base_record(p)
        rec.update(launch.record_fields(p, v))  # where it came from, what of its tensor cores ran
        if planted:
            rec["planted"] = planted
        if st.gpu_run and r is not None and r.accepted and not to_gpu:
            rec["gpu_skipped"] = gpu_skip_reason(p)  # why the record has no GPU verdict
        st.records.append(rec)
        if st.until is not None and st.until(k, p, v):
            break
    for j in gpu_judges:  # once per block: what every program's ``prepare`` left to do together
        t0 = time.perf_counter()
        j.prepare_block([work[j.name] for work in st.gpu if j.name in work])
        st.secs[f"{j.name} (CPU)"] += time.perf_counter() - t0


def gpu_stages(judges: list[Judge], programs: list[Program], work: list[dict[str, Any]], runner: Any,
               busy: tuple[Callable[[], None], Callable[[], None]] | None = None) -> Iterator[tuple[Judge, int, Any, float]]:
    """The GPU stages of one prepared block beside one GPU worker: stage by stage (``judges`` in the
    order of ``JudgeSet.on_gpu_stages``: GPU, then METAMORPHIC), each over the block's programs with
    what the pool prepared for it (``work``).  Yields (judge, program index, verdict or the exception
    it raised, seconds); ``busy``: told when the GPU starts and stops a program."""
    for judge in judges:
        for j, p in enumerate(programs):
            prepared = work[j].get(judge.name)
            if prepared is None:
                continue
            if busy is not None:
                busy[0]()
            t0 = time.perf_counter()
            try:
                verdict = judge.on_gpu(p, prepared, runner)
            except Exception as exc:  # noqa: BLE001 - the caller's to judge (the campaign keeps its block)
                verdict = exc
            finally:
                if busy is not None:
                    busy[1]()
            yield judge, j, verdict, time.perf_counter() - t0


# The pool's stages, in order (the GPU stages run in the campaign's GPU threads, compare and
# record in its main process: ``fuzzptx.engine.campaign``).
POOL_STAGES: dict[str, Callable[[BlockState], None]] = {
    "generate": _generate,
    "emit": _emit,
    "compile": _compile,  # with the early judges beside it
    "warm": _warm,
    "batch": _batch,
    "program": _per_program,  # and each program's GPU-stage inputs
}


def gpu_skip_reason(program: Program) -> str:
    """Why ``gpu_worthy`` keeps an accepted program off the GPU, in words for the record."""
    target = program.module.target.split(",")[0].strip()
    if not target.startswith("sm_90"):
        return f"targets {target}: its cubin cannot load on Hopper"
    label = undefined_label(program)
    return f"labelled by its mutation ({label})" if label else "labelled undefined by its mutation"


def deferrable(judges: JudgeSet) -> tuple[str, ...]:
    """The judges of ``judges`` worth deferring: those with once-per-block work (``Judge.warm``,
    the SASS judge's disassembler run), which one run can then do for several blocks."""
    return tuple(j.name for j in JudgeSet.of(judges).in_pool() if j.warms)


def warm_deferred(blocks: list[tuple[Prepared, Deferred]]) -> None:
    """Each deferred judge's once-per-block work (``Judge.warm``) for all ``blocks`` in one go;
    each block's stage seconds and wall get a share in proportion to its programs."""
    judges = {j.name: j for _, d in blocks for j in d.warmers}
    shares = [max(1, len(d.programs)) for _, d in blocks]
    for j in judges.values():
        if j.warms:
            t0 = time.perf_counter()
            j.warm([r for _, d in blocks if j.name in d.judges for r in d.compiled])
            took = time.perf_counter() - t0
            for (prep, _), n in zip(blocks, shares):
                prep.seconds[j.name] = prep.seconds.get(j.name, 0.0) + took * n / sum(shares)
                prep.wall += took * n / sum(shares)


def judge_deferred(prep: Prepared, later: Deferred) -> None:
    """The deferred judges' verdicts on one prepared block, into its verdicts and stage seconds."""
    t_block = time.perf_counter()
    c = later.compiler
    for k, p, text, judged, r in later.programs:
        v = prep.verdicts[k]
        if r is not None:
            differ.judge(p, (c,) + later.warmers, text=text, judged=judged, into=v, given={c.name: r})
            v[c.name] = c.light(r)  # as the per-program stage ships it
        else:
            differ.judge(p, later.warmers, text=text, judged=judged, into=v)
        for name in later.judges:
            prep.seconds[name] = prep.seconds.get(name, 0.0) + v.seconds.get(name, 0.0)
    prep.wall += time.perf_counter() - t_block


def _compile_block(st: BlockState, compiler: Judge, cubins: bool, meanwhile: Callable[[Callable[[], bool]], None]) -> list:
    """The compile stage's batch in a thread, running ``meanwhile(compile_done)`` (judges that need
    no compile result) in this one: the pool process would otherwise sit idle while its ptxas
    runs, and a campaign's pool of N processes then keeps N + 1 cores or more busy at times
    (measured: benchmarks/README.md, "checker beside ptxas", "reference beside ptxas")."""
    took: dict = {}
    texts = [t for t, _ in st.emitted]
    release = {} if st.task.toolchain is None else {"toolchain": st.task.toolchain}

    def run() -> list:
        t0 = time.perf_counter()
        try:
            return compiler.judge_batch(st.programs, texts, cubins=cubins, **release)
        except (ImportError, FuzzptxError) as exc:
            if st.failed is None:
                raise
            for failed in st.failed:
                failed[compiler.name] = exc
            return [None] * len(texts)
        finally:
            took["compile"] = time.perf_counter() - t0

    secs = st.secs
    if st.task.every_verdict or st.until is not None:
        # a command's executor (replay, the reducer's predicate...): the compile in this thread, where
        # a signal stops it (fuzzptx shrink --budget: its ptxas is killed, not waited for), then the
        # early judges (every one of them, the compile done or not: the same verdicts)
        out = run()
        meanwhile(lambda: True)
        secs[compiler.name] += took["compile"]
        return out
    with cf.ThreadPoolExecutor(1) as ex:
        t0 = time.perf_counter()
        fut = ex.submit(run)
        meanwhile(fut.done)
        beside = time.perf_counter() - t0
        out = fut.result()
    secs[compiler.name] += took["compile"]
    # stage time that ran at once with the compile's (counted in both stages, once in the block's wall)
    secs["overlapped"] += min(beside, took["compile"])
    return out


def _judge_early(st: BlockState, compile_done: Callable[[], bool]) -> None:
    """The judges that read the program alone (stage EARLY: the checker, the reference) on each of
    the block's programs (not the planted ones), while the block compiles (``_compile_block``); a
    judge that needs the compiler's acceptance runs only until the compile is done (after that it
    waits for the verdict, and skips what the compiler rejected), and not on a program an earlier
    judge foresees the compiler rejecting (``Judge.foresees_rejection``): it waits for the
    verdict there too (a reference run on a program ptxas then rejects was ~16% of its CPU)."""
    wanted = tuple(j for j in st.pool if j.stage == EARLY)
    if not wanted or st.until is not None:  # judged in turn, up to the first program ``until`` takes
        return
    after_compile = tuple(j for j in wanted if ACCEPTED not in j.needs)
    for k, ((_, p, planted), (text, judged)) in enumerate(zip(st.items, st.emitted)):
        if planted or judged is None:
            continue
        js = wanted if st.task.every_verdict or not compile_done() else after_compile
        if not js:
            continue
        names = tuple(j.name for j in js)
        v, ran, later = None, [], set()
        for j in js:
            if (not st.task.every_verdict and (ACCEPTED in j.needs or later.intersection(j.after)) and (later or any(
                    by.foresees_rejection(v[by.name]) for by in js if by.name in ran and by.name in v))):
                later.add(j.name)  # judged after the compile, if the compiler accepts
                continue
            v = _judge(st, k, p, (j,), text=text, judged=judged, into=v, alongside=names)
            ran.append(j.name)
        st.early[k] = v
        st.ran[k] = tuple(ran)


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
