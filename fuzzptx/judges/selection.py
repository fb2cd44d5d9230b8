"""The judges of a run, resolved once: the one place a ``--judges`` list and a ``--ptxas`` SPEC
become judge objects.

A ``JudgeSet`` holds the judge objects themselves (a ptxas release's judge with its toolchain),
so it travels to pool and GPU processes as data: a process that receives one installs it in its
registry (``install``) and never turns a name into a judge again.  It reads as the tuple of the
names asked for (``name in judges``, ``list(judges)``), in the order given.
"""
from __future__ import annotations

from dataclasses import dataclass
import copy
from typing import Any, Iterable, Iterator

from . import registry
from .base import COMPILE, DEVICE, GPU_STAGES, Judge
from .builtin import DEFAULT_JUDGES, with_releases as builtin_with_releases


@dataclass(frozen=True, eq=False)
class JudgeSet:
    """Judge objects in the order they run (each after the judges it reads), and the names in
    the order they were asked for.  Equal to another set or a tuple of the same names."""

    judges: tuple[Judge, ...]
    asked: tuple[str, ...]

    @classmethod
    def of(cls, names: Iterable[str] | "JudgeSet") -> "JudgeSet":
        """The judges for these names (each checked: ``registry.UnknownJudge`` names a bad one)."""
        if isinstance(names, JudgeSet):
            return names
        asked = tuple(dict.fromkeys(names))
        return cls(tuple(registry.resolve(asked)), asked)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (JudgeSet, tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.asked)

    def __repr__(self) -> str:
        return repr(self.asked)  # reads as the names it was asked for

    def __iter__(self) -> Iterator[str]:
        return iter(self.asked)

    def __len__(self) -> int:
        return len(self.asked)

    def __contains__(self, name: object) -> bool:
        return name in self.asked

    def __getitem__(self, k: int) -> str:
        return self.asked[k]

    def install(self) -> None:
        """Register these very judge objects in this process (a pool process that received the
        set): every name of the run then reads back as the judge the command resolved."""
        for j in self.judges:
            if registry.registered(j.name) is not j:
                registry.register(j)

    def at(self, *stages: str) -> list[Judge]:
        """The judges of these stages, in run order."""
        return [j for j in self.judges if j.stage in stages]

    def in_pool(self) -> list[Judge]:
        return [j for j in self.judges if j.stage not in GPU_STAGES]

    def on_gpu_stages(self) -> list[Judge]:
        """The GPU stages' judges in stage order (GPU, then METAMORPHIC)."""
        return [j for s in GPU_STAGES for j in self.judges if j.stage == s]

    def needing(self, what: str) -> list[Judge]:
        return [j for j in self.judges if what in j.needs]

    def compiler(self) -> Judge | None:
        """The judge of the compile stage (whose batched run gives the cubins), if asked for."""
        return next(iter(self.at(COMPILE)), None)

    def configured(self, stage: str, **attrs: Any) -> "JudgeSet":
        """The set with each judge of ``stage`` replaced by a copy carrying ``attrs`` (a command's
        options for that stage's judges, such as the metamorphic stage's ``--pairs``)."""
        if not self.at(stage):
            return self
        out = []
        for j in self.judges:
            if j.stage == stage:
                j = copy.copy(j)
                for k, v in attrs.items():
                    setattr(j, k, v)
            out.append(j)
        return JudgeSet(tuple(out), self.asked)

    def without(self, names: Iterable[str]) -> "JudgeSet":
        drop = set(names)
        return JudgeSet(tuple(j for j in self.judges if j.name not in drop),
                        tuple(n for n in self.asked if n not in drop))

    def without_device(self) -> "JudgeSet":
        """The set less the judges that cannot run without a GPU."""
        return self.without(j.name for j in self.needing(DEVICE))


def default_names(route: str) -> tuple[str, ...]:
    """The judges a route (``run``, ``campaign``, ``pytest``, ``replay``, ``matrix``) uses unless told."""
    return DEFAULT_JUDGES[route]


def with_releases(judges: tuple[str, ...], spec: str | None) -> tuple[str, ...]:
    """``judges`` with the releases of ``--ptxas SPEC`` (``builtin.with_releases``: ``ptxas@R`` for the
    compiler, ``sass@R`` for the SASS verifier); none: as given."""
    return builtin_with_releases(judges, spec)


def select(text: str | Iterable[str], ptxas: str | None = None, *, option: str = "--judges") -> JudgeSet:
    """The judges a command asked for: a comma-separated list (or names), each checked, with the
    releases of a ``--ptxas`` SPEC (fetched into the cache if missing) -- resolved here, once."""
    return JudgeSet.of(with_releases(registry.parse(text, option), ptxas))
