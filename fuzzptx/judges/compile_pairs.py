"""Compile pairs: two builds of one program that must give the same bytes on one GPU.

The compiler is its own oracle: a program free of undefined behaviour computes what the PTX
says whatever ptxas options built it, so the pinned ptxas at ``-O3`` (``BASE``) and each build of
``COMPILE_PAIRS`` (or another ptxas release) must agree byte for byte.  No reference model is
needed, so the pairs judge any program the checker finds defined, a plain kernel the reference
cannot run included.  ``docs/metamorphic.md`` says why each option qualifies; ``--fmad false``
does not (it changes float results by design) and is not in the table.

This module is the one table of builds: ``fuzzptx.judges.metamorphic`` turns its rows into
pairs, the engine compiles them in batches per build, and ``--pairs`` names them.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from fuzzptx.errors import FuzzptxError
from fuzzptx.oracles import toolchains
from fuzzptx.oracles.ptxas import PINNED_VERSION


class PairsError(FuzzptxError):
    """A ``--pairs`` list naming no pair we know (one line at the CLI)."""


@dataclass(frozen=True)
class Build:
    """How one side of a pair is compiled: opt level, extra ptxas options, and the ptxas release
    (None: the pinned one)."""

    opt_level: int = 3
    options: tuple[str, ...] = ()
    release: str | None = None

    def ptxas(self) -> Path | None:
        """The ptxas binary of ``release`` from the local cache (None: the pinned one)."""
        return None if self.release is None else _local_ptxas(self.release)

    def args(self) -> str:
        """The command-line form, as a bundle's README writes it."""
        return " ".join((f"-O{self.opt_level}",) + self.options)

    def __str__(self) -> str:
        return self.args() + (f" (ptxas {self.release})" if self.release else "")


@dataclass(frozen=True)
class CompilePair:
    """One row of the table: the name ``--pairs`` takes and the side goes by in a finding's
    signature (``hardware:O3!=<name>|...``), the other build, and why it may not change results."""

    name: str
    build: Build
    why: str


#: the side every compile pair is compared with: what campaigns run on the GPU anyway
BASE = Build()
BASE_NAME = "O3"

COMPILE_PAIRS: tuple[CompilePair, ...] = (
    CompilePair("O0", Build(0), "no optimisation: ptxas also serialises wgmma pipelines itself (C7511)"),
    CompilePair("O1", Build(1), "other optimisation passes; measured: -O1 drops one of two repeated wgmmas"),
    CompilePair("O2", Build(2), "other optimisation passes"),
    CompilePair("rul0", Build(3, ("--register-usage-level", "0")), "register usage heuristic only"),
    CompilePair("rul10", Build(3, ("--register-usage-level", "10")), "register usage heuristic only"),
    CompilePair("aeo", Build(3, ("--allow-expensive-optimizations", "true")), "more optimisation effort"),
    CompilePair("nomerge", Build(3, ("--dont-merge-basicblocks",)), "control flow layout only"),
    CompilePair("noconst", Build(3, ("--disable-optimizer-constants",)), "constant bank use only"),
    CompilePair("lineinfo", Build(3, ("-lineinfo",)), "debug line tables only"),
    CompilePair("O0g", Build(0, ("-g",)), "debug information (ptxas refuses -g with optimisation)"),
    CompilePair("pic", Build(3, ("--position-independent-code", "true")), "code addressing only"),
)
_BY_NAME = {p.name: p for p in COMPILE_PAIRS}

#: ``--maxrregcount`` below the registers ptxas chose for the base build (read from its cubin):
#: the allocator must spill or rematerialise around the pipeline. Its build is per program.
MAXRREG = "maxrreg"
#: the same program built by the newest cached ptxas release (driver 580 runs 13.5 cubins)
RELEASE = "release"
#: program transforms (``fuzzptx.judges.metamorphic``): they need the reference's defined mask
TRANSFORMS = ("serialise", "dead-branch")
ALL = tuple(_BY_NAME) + (MAXRREG, RELEASE) + TRANSFORMS

#: what ``replay`` runs on one file: everything
REPLAY_DEFAULT = ALL
#: a campaign's default: the pairs that found bugs per CPU-second spent compiling them
#: (docs/metamorphic.md, "Choosing the default"); every other pair is one ``--pairs`` away
CAMPAIGN_DEFAULT = ("O0", RELEASE, "O1", MAXRREG)
#: how often ``choose`` draws each pair: its measured findings per CPU-second of its build, rounded
WEIGHTS = {"O0": 3, RELEASE: 3, "O1": 1, MAXRREG: 1}
#: the share of a campaign's GPU-bound programs that get a compile pair by default: the one
#: extra ptxas build each costs (0.6x of -O3 for O0 and release) must leave the campaign at
#: >= 0.80 of bare batched ptxas (benchmarks/README.md, row 2b)
CAMPAIGN_SHARE = 0.125
#: input sets each pair is compared on in a campaign (the GPU is otherwise idle)
CAMPAIGN_INPUTS = 3
#: the pairs every random integer kernel of a campaign gets (``strategies.scalar_kernels``): the
#: compile pairs' integer probe found ptxas -O3 wrong where -O0 was right (three bugs, one live in
#: the newest release) and the newest release right where the pinned one was wrong (two of them)
SCALAR_PAIRS = ("O0", RELEASE)
#: input sets a random integer kernel's pairs are compared on in a campaign: its one set already
#: holds each edge value (0, 1, -1, INT_MIN, INT_MAX...) in about 20 of its 256 words, so more
#: sets mostly rerun the same cases, and each costs every side a GPU launch; with the kernel
#: race-free by construction (each thread writes its own words, no shared memory) the two-run
#: determinism check is skipped too: 4 launches a kernel instead of 12
SCALAR_INPUTS = 1

MAXRREG_FLOOR = 24  # below this ptxas cannot hold a warpgroup's addresses and predicates


def pair(name: str) -> CompilePair:
    return _BY_NAME[name]


def maxrreg_build(registers: int) -> Build | None:
    """``--maxrregcount`` a quarter (at least 8) below ``registers``; None when that is under the floor."""
    n = registers - max(8, registers // 4)
    return Build(3, ("--maxrregcount", str(n))) if n >= MAXRREG_FLOOR else None


def choose(pairs: tuple[str, ...], key: int, share: float) -> tuple[str, ...]:
    """The pairs one program gets in a campaign: none for most, one compile pair (drawn by
    ``WEIGHTS``) for a ``share`` of them, and every transform named; a pure function of ``key``
    (the program's seed), so a replay or a rerun of the block chooses the same."""
    import random

    rng = random.Random(key)
    transforms = tuple(p for p in pairs if p in TRANSFORMS)
    compiled = [p for p in pairs if p not in TRANSFORMS]
    if not compiled or rng.random() >= share:
        return transforms
    return (rng.choices(compiled, weights=[WEIGHTS.get(p, 1) for p in compiled])[0],) + transforms


def choose_for(pairs: tuple[str, ...], key: int, share: float, *, scalar_kernel: bool) -> tuple[str, ...]:
    """``choose``, except that a random integer kernel gets every ``SCALAR_PAIRS`` pair named
    (any one compile pair where none is)."""
    if share < 1 and scalar_kernel:
        return tuple(p for p in pairs if p in SCALAR_PAIRS) or choose(pairs, key, 1.0)
    return choose(pairs, key, share) if share < 1 else pairs


def parse_pairs(text: str, option: str = "--pairs") -> tuple[str, ...]:
    """Pair names from a comma list (``all``, ``none``, ``default``: the campaign's set)."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    out: list[str] = []
    for item in items:
        if item == "all":
            out += ALL
        elif item == "default":
            out += CAMPAIGN_DEFAULT
        elif item == "none":
            continue
        elif item in ALL:
            out.append(item)
        else:
            raise PairsError(f"{option}: unknown pair {item!r} (have {', '.join(ALL)}, all, default, none)")
    return tuple(dict.fromkeys(out))


def side_names() -> frozenset[str]:
    """Every name a compile-pair side goes by in a signature (release sides are version numbers)."""
    return frozenset(_BY_NAME) | {BASE_NAME, MAXRREG}


@functools.lru_cache(maxsize=None)
def _local_ptxas(release: str) -> Path | None:
    try:
        return toolchains.resolve(release, fetch_missing=False)[0].ptxas
    except toolchains.ToolchainError:
        return None


@functools.lru_cache(maxsize=1)
def newest_release() -> str | None:
    """The newest ptxas release newer than the pinned one that is here without the network
    (cache or ``$FUZZPTX_TOOLCHAINS``); None when there is none (the release pair is then skipped)."""
    pinned = toolchains.known(PINNED_VERSION)
    for r in reversed(toolchains.RELEASES):
        if pinned is not None and r.key <= pinned.key:
            break
        if _local_ptxas(r.version) is not None:
            return r.version
    return None
