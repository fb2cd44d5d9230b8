"""One run's configuration, built once per command (the CLI or the pytest plugin) and frozen.

``RunConfig`` is plain data: the judges resolved to judge objects (``JudgeSet``: a ptxas release's
judge carries its toolchain), the reference's numerics, the seed, the budgets (programs, seconds,
shrinking), the pool and the GPUs, and the output directory.  It is shipped as it is to the pool
processes (each block's ``BlockTask`` carries its judges) and read by the GPU threads; nothing
downstream turns a judge name into a judge again.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fuzzptx.errors import FuzzptxError
from fuzzptx.judges.builtin import NUMERICS
from fuzzptx.judges.selection import JudgeSet, default_names

from fuzzptx.strategies.steer import MODES as STEER_MODES, Steering

from .generate import ILLEGAL_SHARE, BlockTask


class ConfigError(FuzzptxError):
    """A run configuration that cannot be (one line at the CLI)."""


@dataclass(frozen=True)
class RunConfig:
    """What to judge and how: judges, seed, blocks, limits (the part fixed for a campaign
    directory across --resume is written to its campaign.json), the pool and the output."""

    seed: int = 0
    block_size: int = 32
    shard: tuple[int, int] = (0, 1)
    examples: int | None = None
    seconds: float | None = None
    judges: JudgeSet = None  # type: ignore[assignment]  # names are resolved on construction
    corpus: tuple[str, ...] | None = None
    corpus_skipped: tuple[str, ...] = ()  # one line per --corpus file left out (unreadable, not a program)
    plant: int | None = None  # block for the planted faults; -1: chosen in the middle of the run
    generator: str = "direct"
    numerics: str | None = None  # spec or hardware for every program; None: each program's own (spec if none)
    illegal_share: float = ILLEGAL_SHARE  # mutated programs per block
    shrink_budget: float = 0.0  # seconds to shrink each new signature's first program (0: keep the smallest, unshrunk)
    shrink_model_gaps: bool = False  # shrink findings that are gaps in our own models too (checker vs ptxas...)
    avoid: frozenset[str] = frozenset()  # shapes of known bugs the strategies turn down (triage.known.avoided)
    scalar_share: float = 0.0  # legal programs drawn as random integer kernels (strategies.scalar_kernels)
    out: Path | None = None  # the run's directory (results.jsonl, repros/, stats.json)
    workers: int = 1  # CPU pool processes
    inline: bool = False  # judge in this process, no pool
    gpus: tuple[int, ...] = ()  # the GPUs the GPU stages use
    steer: str = "none"  # SASS-coverage steering (strategies.steer.MODES)
    kernels: tuple[str, ...] = ()  # the real kernels --generator mutants starts from (empty: tests/data's)

    def __post_init__(self) -> None:
        judges = JudgeSet.of(default_names("campaign") if self.judges is None else self.judges)
        object.__setattr__(self, "judges", judges)
        object.__setattr__(self, "gpus", tuple(self.gpus))
        if self.out is not None:
            object.__setattr__(self, "out", Path(self.out))
        if self.steer not in STEER_MODES:
            raise ConfigError(f"steer {self.steer!r}: expected one of {', '.join(STEER_MODES)}")
        if self.numerics is not None and self.numerics not in NUMERICS:
            raise ConfigError(f"numerics {self.numerics!r}: expected one of {', '.join(NUMERICS)}")
        for name, value, least in (("examples", self.examples, 1), ("block_size", self.block_size, 1),
                                   ("workers", self.workers, 1), ("seconds", self.seconds, 0)):
            if value is not None and (value < least or (least == 0 and value == 0)):
                raise ConfigError(f"{name} {value}: expected a positive number")

    def total_blocks(self) -> int | None:
        n = self.limit()
        return None if n is None else -(-n // self.block_size)

    def limit(self) -> int | None:
        return self.examples if self.corpus is None else min(self.examples or len(self.corpus), len(self.corpus))

    def blocks(self):
        b, total = self.shard[0], self.total_blocks()
        while total is None or b < total:
            yield b
            b += self.shard[1]

    def task(self, block: int, skip: frozenset[int], plant: bool, steering: Steering | None = None) -> BlockTask:
        lim = self.limit()
        keep = None if lim is None else max(0, min(self.block_size, lim - block * self.block_size))
        files = None
        if self.corpus is not None:
            files = self.corpus[block * self.block_size:(block + 1) * self.block_size]
        return BlockTask(block, self.seed, self.block_size, self.judges, skip, keep, plant, files, self.generator,
                         self.numerics, self.illegal_share, self.avoid, self.scalar_share, steering=steering,
                         kernels=self.kernels)
