"""The ``fuzzptx`` command: one entry point, subcommands loaded lazily.

Every subcommand turns a ``FuzzptxError`` into one line on stderr (``file:line: message``)
and exit status 2, so bad input never shows a traceback.
"""
from __future__ import annotations

import importlib
import os
import sys
from typing import Callable

from fuzzptx.errors import FuzzptxError
from fuzzptx.inputs import default_limit
from fuzzptx.oracles.ptxas import PINNED_VERSION, ptxas_timeout
from fuzzptx.perf import tune_gc

# name -> (module, function, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("fuzzptx.commands", "main_run", "CPU fuzz run over reference, checker and ptxas, with a summary"),
    "catalogue": ("fuzzptx.isa.listing", "main_catalogue", "list the ISA catalogue (--json for machines)"),
    "conformance": ("fuzzptx.conformance", "main", "every catalogue form and its illegal neighbours through real ptxas"),
    "check": ("fuzzptx.oracles.checker.cli", "main_check", "static checker: ISA rules, spec pipeline rules, ptxas model"),
    "replay": ("fuzzptx.engine.replay", "main_replay", "rerun every judge on a repro file and say whether it still holds"),
    "shrink": ("fuzzptx.triage.shrink_command", "main_shrink", "reduce a repro file while it keeps a signature"),
    "bisect": ("fuzzptx.engine.matrix", "main_bisect", "which ptxas releases reproduce a signature: first and last"),
    "triage": ("fuzzptx.triage.buckets", "main_triage", "group campaign findings by signature; smallest repro per bucket"),
    "campaign": ("fuzzptx.commands", "main_campaign", "batched, isolated hardware campaign (GPU)"),
    "report": ("fuzzptx.triage.report", "main_report", "HTML/JSON/JUnit report of a campaign directory"),
    "bundle": ("fuzzptx.triage.bundle", "main_bundle", "one directory for a compiler team: PTX, commands, SASS, releases, outputs"),
    "toolchains": ("fuzzptx.oracles.toolchains", "main_toolchains", "ptxas releases: list, fetch into the cache, pack for offline machines"),
}


def version() -> str:
    """fuzzptx's version and the ptxas release it judges with by default."""
    from importlib.metadata import PackageNotFoundError, version as dist_version

    try:
        mine = dist_version("fuzzptx")
    except PackageNotFoundError:  # run from a source tree that is not installed
        mine = "(not installed)"
    return f"fuzzptx {mine} (pinned ptxas {PINNED_VERSION})"


def _usage() -> str:
    width = max(len(n) for n in COMMANDS)
    lines = ["usage: fuzzptx <command> [options]   (fuzzptx --version)", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {help_}" for name, (_, _, help_) in COMMANDS.items()]
    return "\n".join(lines)


def _load(name: str) -> Callable[[list[str]], int]:
    module, func, _ = COMMANDS[name]
    return getattr(importlib.import_module(module), func)


def _check_environment() -> None:
    """The ``FUZZPTX_*`` settings every command may read, checked before any work: a malformed one
    is one line at once, not a failure of every block of a run that goes on."""
    default_limit()
    ptxas_timeout(0)


def main(argv: list[str] | None = None) -> int:
    # numpy's OpenBLAS would spread each small matrix product over every core and spin;
    # fuzzptx parallelises across programs instead (set before numpy is imported).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if argv[0] in ("-V", "--version"):
        print(version())
        return 0
    name, rest = argv[0], argv[1:]
    tune_gc()  # every subcommand judges programs (fuzzptx.perf says why)
    if name not in COMMANDS:
        print(f"fuzzptx: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    try:
        _check_environment()
        return int(_load(name)(rest) or 0)
    except FuzzptxError as exc:
        print(f"fuzzptx {name}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"fuzzptx {name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # the file system refused (a full disk, a path that cannot be written): one line
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"fuzzptx {name}: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
