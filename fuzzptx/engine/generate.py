"""Generation: the one path from a seed to programs.  Block ``b`` of a run with seed ``S`` holds
``block_size`` programs drawn under ``block_seed(S, b)`` -- straight from the strategies
(``draw_direct``, the default), through Hypothesis's engine (``draw_programs``), or files of a
``--corpus`` -- so any process rebuilds any block, and ``fuzzptx run --seed S`` and ``fuzzptx
campaign --seed S`` judge the same programs.  ``--plant-faults`` adds a kernel that traps and one
that hangs to one block."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hseed

import fuzzptx.strategies as S
from fuzzptx.errors import FuzzptxError
from fuzzptx import launch
from fuzzptx.inputs import read_text
from fuzzptx.judges.selection import JudgeSet
from fuzzptx.oracles.toolchains import Toolchain
from fuzzptx.program import Program
from fuzzptx.strategies.direct import DrawFailed, draw, reproducible
from fuzzptx.oracles.sass.real import real_kernel_files
from fuzzptx.strategies.real_kernels import real_kernel_mutants
from fuzzptx.strategies.scalar_kernels import scalar_kernels
from fuzzptx.strategies.steer import Steering, draw_recipe, fresh_recipe, steered_recipe


ILLEGAL_SHARE = 0.25  # a quarter of each block is mutated (illegal)
#: legal programs of a GPU campaign's block drawn as random integer kernels (``--scalar-share``): the
#: compile pairs' probe found three ptxas -O3 miscompiles in such kernels (71 of 1,500 differing,
#: tests/hw_records/pairs_probe_v2_h200.json), the wgmma programs none in a 10-minute campaign
#: (benchmarks/results/campaign_pairs_h200.json)
SCALAR_SHARE = 0.25


class GenerationError(FuzzptxError):
    """The strategies could not give a program (one line at the CLI)."""


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


@dataclass(frozen=True)
class BlockTask:
    """Everything a pool process needs to rebuild and judge one block (picklable)."""

    block: int
    seed: int
    size: int
    judges: JudgeSet  # resolved once by the command (names given here are resolved on construction)
    skip: frozenset[int] = frozenset()
    keep: int | None = None  # programs of the block inside --examples (None: all)
    plant: bool = False
    corpus: tuple[str, ...] | None = None  # this block's files in --corpus mode
    generator: str = "direct"  # "direct" (draw_direct), "hypothesis" (draw_programs) or "mutants" (draw_mutants)
    numerics: str | None = None  # the reference's numerics for every program (None: each program's own)
    illegal_share: float = ILLEGAL_SHARE  # mutated programs in the block
    avoid: frozenset[str] = frozenset()  # shapes of known bugs the strategies turn down (strategies.avoid)
    scalar_share: float = 0.0  # legal programs drawn as random integer kernels (``--scalar-share``)
    # programs given instead of drawn (``fuzzptx.engine.executor``: replay, the release matrix, bisect, the
    # reducer's predicate, the pytest plugin), each with the text the judges read (None: emitted) and its
    # IR as parsed from that text (None: parsed here where a judge needs it)
    given: tuple[tuple[Program, str | None, Program | None], ...] | None = None
    toolchain: Toolchain | None = None  # the compile stage's ptxas release (None: the pinned one)
    # every judge on every program: without it a judge that needs the compiler's acceptance is not asked
    # about a program the compiler rejects, nor the GPU about one labelled undefined (the fuzz loop's saving)
    every_verdict: bool = False
    steering: Steering | None = None  # a share of the programs drawn as mutants of kept ones (strategies.steer)
    kernels: tuple[str, ...] = ()  # the real kernels "mutants" starts from (empty: those of tests/data)

    def __post_init__(self) -> None:
        object.__setattr__(self, "judges", JudgeSet.of(self.judges))


def block_seed(seed: int, block: int) -> int:
    return (seed * 1_000_003 + block * 7919) % (2**31)


def recipes(n: int, seed: int, illegal_share: float = ILLEGAL_SHARE, steering: Steering | None = None,
            scalar_share: float = 0.0) -> list[tuple[str, bool]]:
    """(recipe, legal?) of each of the ``n`` programs ``draw_direct`` draws: how to draw each again
    (``strategies.steer``; ``s:`` a random integer kernel, never mutated); the engine learns from
    them what to keep, without the programs."""
    n_illegal = int(round(n * illegal_share))
    n_scalar = min(n - n_illegal, int(round(n * scalar_share)))
    out = []
    for i in range(n):
        legal = i < n - n_illegal
        key = f"{seed}:{i}"
        if i < n_scalar:
            out.append((f"s:{seed}:scalar:{i}", True))
        else:
            out.append((steered_recipe(steering, key, legal) if steering is not None else fresh_recipe(key), legal))
    return out


def draw_direct(n: int, seed: int, illegal_share: float = ILLEGAL_SHARE,
                avoid: frozenset[str] = frozenset(), scalar_share: float = 0.0,
                steering: Steering | None = None) -> list[Program]:
    """``n`` programs, each drawn straight from the strategies with its own random stream.

    Five times cheaper than running Hypothesis's engine (``draw_programs``): no
    example database, no mutation of earlier examples, no simplest-example-first,
    so no duplicate programs within or across blocks.  Program ``i`` depends on
    ``(seed, i)`` alone (and ``avoid``, the known bugs' shapes turned down).  A draw the
    strategies reject (a filter) is redrawn.  ``scalar_share``: the first legal programs of the
    block are random integer kernels instead (``scalar_kernels``, key ``seed:scalar:i``), the
    code the compile pairs on the GPU found ptxas miscompiling.  ``steering``: a share of the
    others are mutants of kept programs (``strategies.steer``; ``recipes`` says which).
    """
    n_illegal = int(round(n * illegal_share))
    n_scalar = min(n - n_illegal, int(round(n * scalar_share)))
    strategies = _strategies(avoid)
    scalar = scalar_kernels(avoid) if n_scalar else None
    out: list[Program] = []
    with reproducible():  # program i depends on (seed, i), not on what else the process imported
        for i, (recipe, legal) in enumerate(recipes(n, seed, illegal_share, steering, scalar_share)):
            try:
                if i < n_scalar:
                    out.append(draw(scalar, f"{seed}:scalar:{i}"))
                elif recipe.startswith("k:"):
                    out.append(draw(strategies[i >= n - n_illegal], f"{seed}:{i}"))
                else:  # a mutant of a kept program (``steering``)
                    out.append(draw_recipe(strategies[not legal], recipe))
            except DrawFailed as exc:
                raise GenerationError(f"program {i} of seed {seed}: {exc}") from exc
    return out


_STRATEGIES: dict = {}


def _strategies(avoid: frozenset[str]) -> tuple:
    """(legal, illegal) strategies, built once per ``avoid`` (a kept program's choices are cached
    per strategy object: ``strategies.steer.choices_of``)."""
    if avoid not in _STRATEGIES:
        _STRATEGIES[avoid] = (S.programs(avoid), S.illegal_programs(avoid=avoid))
    return _STRATEGIES[avoid]


def draw_programs(n: int, seed: int, illegal_share: float = ILLEGAL_SHARE,
                  avoid: frozenset[str] = frozenset()) -> list[Program]:
    """``n`` programs through Hypothesis's own engine (``--generator hypothesis``), reproducibly
    from ``seed``: legal ones, then mutated illegal ones."""
    legal = S.programs(avoid)
    illegal = S.illegal_programs(avoid=avoid)
    n_illegal = int(round(n * illegal_share))
    out: list[Program] = []

    def collect(strategy, count: int, s: int) -> None:
        """Exactly ``count`` programs: ask for what is missing until Hypothesis has given enough."""
        got: list[Program] = []
        for attempt in range(8):
            want = count - len(got)
            if want <= 0:
                break

            @hseed(s + 7919 * attempt)
            @settings(max_examples=want, database=None, deadline=None, phases=[Phase.generate],
                      suppress_health_check=list(HealthCheck), derandomize=False)
            @given(strategy)
            def draw_one(p: Program) -> None:
                if len(got) < count:
                    got.append(p)

            draw_one()
        out.extend(got)

    with reproducible():  # the same programs whatever else the process imported
        collect(legal, n - n_illegal, seed)
        if n_illegal:
            collect(illegal, n_illegal, seed + 1)
    return out[:n]


_PARENTS: dict = {}


def real_kernels(files: tuple[str, ...] = ()) -> tuple[Program, ...]:
    """The real kernels mutants start from, their launches resolved (``launch.load``, no search:
    a mutant keeps its parent's launch), once per process: ``files``, else those of the
    checkout's ``tests/data`` (``oracles/sass/real.py``).  A file that is no program is left out."""
    if files not in _PARENTS:
        out, first = [], None
        for f in files or tuple(str(p) for p in real_kernel_files()):
            try:
                out.append(launch.load(read_text(f, what="PTX file"), f, search_budget=(0, 0.0)))
            except FuzzptxError as exc:
                first = first or exc
                continue
        if not out:
            raise GenerationError("no real kernel to mutate" + (f" among {len(files)} file(s)" if files else
                                  " (tests/data is not here: give --kernels DIR)") + (f"; first: {first}" if first else ""))
        _PARENTS[files] = tuple(out)
    return _PARENTS[files]


def draw_mutants(n: int, seed: int, files: tuple[str, ...] = ()) -> list[Program]:
    """``n`` mutants of real kernels (``strategies.real_kernels``), program ``i`` a function of
    ``(seed, i)`` and the kernels."""
    strategy = real_kernel_mutants(real_kernels(files))
    out = []
    with reproducible():
        for i in range(n):
            try:
                out.append(draw(strategy, f"{seed}:{i}"))
            except DrawFailed as exc:
                raise GenerationError(f"mutant {i} of seed {seed}: {exc}") from exc
    return out


def block_programs(task: BlockTask) -> list[tuple[int, Program, str | None]]:
    """(index, program, planted kind or None) of a block, the same in every process and run."""
    if task.given is not None:
        return [(i, p, None) for i, (p, _, _) in enumerate(task.given)]
    if task.corpus is not None:
        progs = [launch.load(read_text(f, what="PTX file"), f) for f in task.corpus]  # a plain file's launch searched
    else:
        # A block cut short (the last of a run) is drawn at its own size, so it holds illegal
        # programs in proportion too (the mutants come last in a block).
        n = task.size if task.keep is None else min(task.keep, task.size)
        if task.generator == "hypothesis":
            progs = draw_programs(n, block_seed(task.seed, task.block), task.illegal_share, task.avoid)
        elif task.generator == "mutants":
            progs = draw_mutants(n, block_seed(task.seed, task.block), task.kernels)
        else:
            progs = draw_direct(n, block_seed(task.seed, task.block), task.illegal_share, task.avoid,
                                task.scalar_share, task.steering)
    if task.numerics is not None:  # stamped on the program: its repro file replays the same way
        progs = [replace(p, numerics=task.numerics) for p in progs]
    limit = len(progs) if task.keep is None else min(task.keep, len(progs))
    out: list[tuple[int, Program, str | None]] = [(i, p, None) for i, p in enumerate(progs[:limit])]
    if task.plant:
        out += [(task.size + k, p, kind) for k, (kind, p) in enumerate(planted_programs())]
    return [t for t in out if t[0] not in task.skip]


def block_programs_left(task: BlockTask) -> bool:
    """Whether a block has any program not yet in the record (cheap: no generation)."""
    n = task.size if task.keep is None else task.keep
    wanted = set(range(n)) | ({task.size, task.size + 1} if task.plant else set())
    return bool(wanted - task.skip)
