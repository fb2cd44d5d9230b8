"""The engine's side of SASS-coverage feedback: it counts the SASS forms each recorded program
reached (the records' ``sass_forms``, from the SASS judge's listing) and feeds the generator's
steering policy (``strategies.steer``) with them.

Block ``b`` is drawn with the corpus folded from the shard's blocks before ``b - lag`` (in block
order, whatever order they finished in), so a steered run is a function of its seed and its lag;
a block whose turn has not come waits to be submitted.  ``lag`` is fixed per run
(``steer_lag``): the blocks a pool keeps in flight.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from fuzzptx.strategies.steer import CoverageMap, Kept, Steering

from .generate import BlockTask, block_seed, recipes


class SassCoverage:
    """A run's SASS coverage: form -> programs that reached it and the first of them, and the
    points (seconds, programs, forms) where the count grew."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.first: dict[str, str] = {}
        self.programs = 0  # programs with forms (accepted and disassembled)
        self.timeline: list[tuple[float, int, int]] = []

    def add(self, forms: Iterable[str] | None, who: str, programs: int, seconds: float) -> None:
        if not forms:
            return
        n = len(self.counts)
        self.programs += 1
        for f in forms:
            self.counts[f] += 1
            self.first.setdefault(f, who)
        if len(self.counts) > n:
            self.timeline.append((round(seconds, 2), programs, len(self.counts)))

    def stats(self) -> dict:
        return {"sass_forms_reached": len(self.counts), "sass_programs": self.programs,
                "sass_coverage": {f: [n, self.first[f]] for f, n in self.counts.most_common()},
                "sass_timeline": self.timeline[:: max(1, len(self.timeline) // 400)]}


def steer_lag(tasks: int, group: int) -> int:
    """Blocks between a block and the last one its corpus reads: what the engine keeps in flight
    (``tasks`` pool tasks of ``group`` blocks), so that steering never holds the pool back."""
    return max(1, tasks * group)


@dataclass
class SteerFold:
    """The corpus and the map, folded block by block in block order, and each block's steering."""

    mode: str
    lag: int
    shard: tuple[int, int] = (0, 1)
    cov: CoverageMap = field(default_factory=CoverageMap)
    kept: Kept = None  # type: ignore[assignment]
    folded: int = 0  # the shard's blocks folded so far (they are blocks shard[0] + k * shard[1], k < folded)
    waiting: dict = field(default_factory=dict)  # block -> [(index, forms)] recorded, not yet folded
    drawn: dict = field(default_factory=dict)  # block -> the task it was drawn with (its recipes)
    _made: dict = field(default_factory=dict)  # block -> its recipes (computed once)
    history: dict = field(default_factory=dict)  # blocks folded -> the corpus then

    def __post_init__(self) -> None:
        if self.kept is None:
            self.kept = Kept(self.mode)
        self.history[self.folded] = self.kept

    def _k(self, block: int) -> int:
        return (block - self.shard[0]) // self.shard[1]

    def steering_for(self, block: int) -> Steering | None | bool:
        """The steering block ``block`` is drawn with: the corpus as it stood once exactly the shard's
        blocks before ``block - lag`` were folded, however many are folded now; False while those
        are not all folded."""
        need = max(0, self._k(block) - self.lag)
        if need > self.folded:
            return False
        kept = self.history[need]
        for k in [k for k in self.history if k < need]:  # blocks are asked for in order: older corpora are done with
            del self.history[k]
        return Steering(kept) if kept.parents else None

    def submitted(self, task: BlockTask) -> None:
        self.drawn[task.block] = task

    def _recipes(self, block: int) -> list[tuple[str, bool]]:
        task = self.drawn.get(block)
        if task is None or task.corpus is not None:
            return []
        if block not in self._made:
            self._made[block] = recipes(task.size if task.keep is None else min(task.keep, task.size),
                                        block_seed(task.seed, task.block), task.illegal_share, task.steering,
                                        task.scalar_share)
        return self._made[block]

    def record_fields(self, block: int, index: int) -> dict:
        """``draw``: how a mutant of a kept program was drawn (``strategies.steer``: its recipe rebuilds it)."""
        made = self._recipes(block)
        recipe = made[index][0] if index < len(made) else None
        return {"draw": recipe} if recipe is not None and recipe.startswith("m") else {}

    def recorded(self, block: int, programs: list[tuple[int, Iterable[str] | None]]) -> None:
        """A block's records (index, sass forms) are in; fold every block whose turn has come."""
        self.waiting.setdefault(block, []).extend(programs)
        self._fold()

    def skip_to(self, block: int) -> None:
        """Count the shard's blocks before ``block`` folded, recorded or not (a block never recorded)."""
        while self.folded < self._k(block):
            self.waiting.setdefault(self.shard[0] + self.folded * self.shard[1], [])
            self._fold()

    def _fold(self) -> None:
        while True:
            b = self.shard[0] + self.folded * self.shard[1]
            if b not in self.waiting:
                return
            got = self.waiting.pop(b)
            made = self._recipes(b)
            self.drawn.pop(b, None)
            self._made.pop(b, None)
            for index, forms in sorted(got, key=lambda x: x[0]):
                if not forms or index >= len(made):
                    continue
                recipe, legal = made[index]
                forms = frozenset(forms)
                if not recipe.startswith("s:"):  # a random integer kernel counts, but is no parent (another strategy)
                    self.kept = self.kept.offer(self.cov, forms, recipe, legal)
                self.cov = self.cov.add(forms, f"{b}:{index}")
            self.folded += 1
            self.history[self.folded] = self.kept
