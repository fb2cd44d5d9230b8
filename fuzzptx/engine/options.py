"""The options several commands share, each defined once: ``--judges``, ``--ptxas``, ``--out``,
``--seed``, ``--workers``, ``--json``, ``--examples``, ``--numerics``; and the argument parser every
command uses, whose errors are one line (``fuzzptx <command>: message``, exit 2), never a usage
dump or a traceback.

A count, a time or a worker number that cannot be (negative, or zero where zero means nothing)
is refused here, before any work.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any, Callable

from fuzzptx.errors import FuzzptxError
from fuzzptx.helptext import Formatter
from fuzzptx.judges import compile_pairs
from fuzzptx.judges.base import METAMORPHIC
from fuzzptx.judges.selection import JudgeSet, default_names, select

from .config import NUMERICS
from .generate import GenerationError, real_kernels


class OptionError(FuzzptxError):
    """A bad command-line option (one line at the CLI)."""


class Parser(argparse.ArgumentParser):
    """argparse that raises ``OptionError`` (one line at the CLI) instead of printing usage and exiting."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        # "argument --examples: -5: expected ..." reads "--examples -5: expected ..."
        m = re.fullmatch(r"argument ([^:]+): (.*)", message, re.S)
        raise OptionError(f"{m.group(1)} {m.group(2)}" if m else message)


def _number(kind: type, least: float, what: str, *, strict: bool = False) -> Callable[[str], Any]:
    """An argparse type: a ``kind`` number >= ``least`` (> ``least`` where ``strict``)."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: expected {what}") from None
        if value < least or (strict and value == least) or value != value:  # (NaN)
            raise argparse.ArgumentTypeError(f"{text}: expected {what}")
        return value

    parse.__name__ = what  # argparse names the type in its message
    return parse


positive_int = _number(int, 1, "a positive integer")
count_or_zero = _number(int, 0, "0 or a positive integer")
positive_seconds = _number(float, 0.0, "a positive number of seconds", strict=True)
non_negative_seconds = _number(float, 0.0, "0 or a positive number of seconds")
share = _number(float, 0.0, "a share between 0 and 1")

PTXAS_HELP = ("the ptxas releases that judge: a release (13.5.37), a list, a range (12.4-13.5), latest, all, default "
              "(the pinned one) or a path to a ptxas binary; releases are fetched into the user cache on demand "
              "(fuzzptx toolchains). Each release is a judge (ptxas@R) and releases that disagree are a finding; "
              "the pinned release stays the judge named ptxas, whose cubins the GPU runs")


def add_judges(ap: argparse.ArgumentParser, route: str | None, help: str = "") -> None:
    """``--judges``: the route's default set (``judges.builtin.DEFAULT_JUDGES``) unless ``route`` is
    None (judges added to a command's own)."""
    default = ",".join(default_names(route)) if route else ""
    ap.add_argument("--judges", default=default, metavar="LIST",
                    help=help or "comma-separated judge names, built-in or from an installed plugin")


def add_ptxas(ap: argparse.ArgumentParser, default: str | None = None, help: str = PTXAS_HELP) -> None:
    ap.add_argument("--ptxas", metavar="SPEC", dest="releases", default=default, help=help)


def add_out(ap: argparse.ArgumentParser, *, required: bool = False, help: str) -> None:
    ap.add_argument("--out", required=required, metavar="DIR", help=help)


def add_seed(ap: argparse.ArgumentParser, help: str = "the run is a function of the seed") -> None:
    ap.add_argument("--seed", type=int, default=0, help=help)


def add_workers(ap: argparse.ArgumentParser, default: int | None, help: str) -> None:
    ap.add_argument("--workers", type=count_or_zero, default=default, metavar="N", help=help)


def add_json(ap: argparse.ArgumentParser, help: str = "print one JSON object") -> None:
    ap.add_argument("--json", action="store_true", help=help)


def add_examples(ap: Any, default: int | None, help: str) -> None:
    """``--examples N`` (N >= 1); ``ap`` may be a mutually exclusive group."""
    ap.add_argument("--examples", type=positive_int, default=default, metavar="N", help=help)


def add_numerics(ap: argparse.ArgumentParser, default: str | None, help: str = "") -> None:
    ap.add_argument("--numerics", choices=NUMERICS, default=default,
                    help=help or "the reference's numerics: spec (the PTX ISA's error bounds) or hardware "
                                 "(the bit-exact H100 model)")


def add_pairs(ap: argparse.ArgumentParser, route: str) -> None:
    """``--pairs``, ``--pair-share``, ``--inputs``: the metamorphic judge's compile pairs and
    transforms (``fuzzptx.judges.compile_pairs``; docs/metamorphic.md says how the defaults were
    chosen).  A campaign gives one pair to a share of its programs; other routes every pair to each."""
    campaign = route == "campaign"
    ap.add_argument("--pairs", default="default" if campaign else "all", metavar="LIST",
                    help="the metamorphic judge's pairs: compile pairs (" + ", ".join(compile_pairs.ALL[:-2])
                         + "), transforms (" + ", ".join(compile_pairs.TRANSFORMS) + "), all, default (the "
                         "campaign's: " + ", ".join(compile_pairs.CAMPAIGN_DEFAULT) + ") or none")
    ap.add_argument("--pair-share", type=share, default=compile_pairs.CAMPAIGN_SHARE if campaign else 1.0,
                    metavar="X", help="share of the programs that get a compile pair (one, drawn by measured yield)")
    ap.add_argument("--inputs", type=positive_int, default=compile_pairs.CAMPAIGN_INPUTS if campaign else 1,
                    metavar="N", help="input sets each pair is compared on (the GPU runs each build again on new data)")


STEER_DEFAULT = "none"
GENERATORS = ("direct", "hypothesis", "mutants")
GENERATOR_HELP = ("direct: each program drawn straight from the strategies (fast); hypothesis: through Hypothesis's "
                  "engine; mutants: mutants of real kernels (the Triton, CUTLASS and nvcc kernels of tests/data, or "
                  "--kernels DIR): operands, orders, epilogue code changed")


def keep_signature(text: str) -> str:
    """``--keep`` of ``bisect`` and ``shrink``: a signature (prefix) or a judge outcome, never empty
    (an empty prefix matches everything: bisect tried every release for it)."""
    if not text.strip():
        raise OptionError("--keep '': name a signature (prefix) or a judge outcome, e.g. ptxas:C7519")
    return text


def add_kernels(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--kernels", metavar="PATH", default=None,
                    help="with --generator mutants: the .ptx kernels to start from, a directory (searched) or one "
                         "file (default: tests/data's)")


def kernel_files(path: str | None) -> tuple[str, ...]:
    """The .ptx files of ``--kernels PATH``: the file itself, or those under a directory (one line
    when there are none)."""
    if path is None:
        return ()
    p = Path(path)
    files = (str(p),) if p.is_file() else tuple(sorted(str(f) for f in p.rglob("*.ptx")))
    if not files:
        raise OptionError(f"--kernels {path}: " + ("no .ptx file there" if p.is_dir() else "no such file or directory"))
    try:
        real_kernels(files)  # read once here: a set with no usable kernel is one line, not a failure of every block
    except GenerationError as exc:
        raise OptionError(f"--kernels {path}: {exc}") from None
    return files


def add_steer(ap: argparse.ArgumentParser) -> None:
    """``--steer``: SASS-coverage feedback (``strategies.steer``; benchmarks/README.md measures the modes)."""
    ap.add_argument("--steer", choices=("none", "corpus", "target"), default=STEER_DEFAULT,
                    help="steer generation toward programs whose SASS holds rare or new forms: corpus (programs "
                         "that reached a new or rare form are kept and mutated further), target (the programs of "
                         "highest rarity score are kept and hill-climbed, as Hypothesis's target() does) or none")


def judges_of(args: argparse.Namespace, route: str | None = None) -> JudgeSet:
    """The judge set ``--judges`` and ``--ptxas`` ask for, resolved once (``judges.selection.select``),
    with the metamorphic stage's judges configured by ``--pairs``/``--pair-share``/``--inputs`` where given."""
    text = args.judges if args.judges.strip() or route is None else ",".join(default_names(route))
    judges = select(text, getattr(args, "releases", None))
    if getattr(args, "pairs", None) is not None:
        try:
            pairs = compile_pairs.parse_pairs(args.pairs)
        except compile_pairs.PairsError as exc:
            raise OptionError(str(exc)) from None
        judges = judges.configured(METAMORPHIC, pairs=pairs, share=min(1.0, args.pair_share), inputs=args.inputs)
    return judges
