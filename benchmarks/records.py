"""How a benchmark script ends: its JSON record printed and, with ``--out``, written (one format
for every record under benchmarks/results/ and tests/hw_records/).

Every record carries a ``meta`` block (``start()`` at the top of ``main``, ``finish`` at the end):
the command line that made it, the commit it ran on (and whether the tree had changes), the date,
the machine and its load before and after, and the versions a figure depends on (Python,
Hypothesis, numpy, ptxas, nvdisasm, the GPU driver where there is a GPU).  A figure in
``benchmarks/README.md`` is only as good as the means to tell why a rerun differs from it;
``tests/test_benchmark_rows.py`` checks that every target row's record holds one.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
META_FIELDS = ("command", "commit", "date", "machine", "load", "versions")
VERSION_FIELDS = ("python", "hypothesis", "numpy", "ptxas", "nvdisasm")


def _quiet(cmd: list[str], cwd: Path | None = None) -> str:
    """stdout of ``cmd`` (trailing newlines dropped), or "" where it cannot run (no git, no
    nvidia-smi, no nvdisasm)."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30, cwd=cwd).stdout.rstrip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def command_line(argv: list[str] | None = None) -> str:
    """The command as one would type it from the repository root: ``python benchmarks/x.py ...``."""
    argv = list(sys.argv if argv is None else argv)
    if argv and argv[0].endswith(".py"):
        script = Path(argv[0]).resolve()
        argv[0] = str(script.relative_to(ROOT)) if script.is_relative_to(ROOT) else argv[0]
        return "python " + shlex.join(argv)
    return shlex.join(argv)


def commit() -> dict:
    """HEAD and whether tracked files differ from it (a dirty tree's figure names no commit)."""
    head = _quiet(["git", "rev-parse", "HEAD"], ROOT)
    changed = _quiet(["git", "status", "--porcelain", "--untracked-files=no"], ROOT)
    return {"sha": head or None, "dirty": bool(changed), "changed": changed.splitlines()[:20]}


def machine() -> dict:
    """Host, cores, CPU model, and the GPUs with their driver where ``nvidia-smi`` answers."""
    cpu = ""
    try:
        cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                    if ln.startswith("model name")), "")
    except OSError:
        pass
    gpus = [ln.strip() for ln in _quiet(["nvidia-smi", "--query-gpu=name,driver_version",
                                         "--format=csv,noheader"]).splitlines() if ln.strip()]
    return {"host": platform.node(), "cpus": os.cpu_count(), "cpu": cpu, "platform": platform.platform(),
            "gpus": gpus}


def _nvdisasm_version() -> str | None:
    try:
        from fuzzptx.oracles.sass import disassembler
    except ImportError:
        return None
    tool = disassembler()
    m = re.search(r"\bV(\d+\.\d+\.\d+)\b", _quiet([tool[0], "--version"])) if tool else None
    return m[1] if m else None


def versions() -> dict:
    """The versions a figure depends on; None where the tool is absent (nvdisasm, a GPU driver)."""
    import hypothesis
    import numpy

    try:
        from fuzzptx.oracles.ptxas import ptxas_version
        ptxas = ptxas_version()
    except Exception:  # noqa: BLE001 -- no ptxas is a fact to record, not a reason to lose the record
        ptxas = None
    gpus = machine()["gpus"]
    return {"python": platform.python_version(), "hypothesis": hypothesis.__version__, "numpy": numpy.__version__,
            "ptxas": ptxas, "nvdisasm": _nvdisasm_version(),
            "driver": gpus[0].rsplit(",", 1)[1].strip() if gpus else None}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


@dataclass
class Run:
    """One benchmark invocation: started at ``start()``, its record's ``meta`` made at ``meta()``."""

    command: str
    started: float
    load_before: list[float]
    commit: dict  # at the start: the tree the run imported, whatever is committed while it runs
    extra: dict = field(default_factory=dict)

    def meta(self) -> dict:
        when = datetime.datetime.fromtimestamp(self.started, datetime.timezone.utc)
        return {"command": self.command, "commit": self.commit, "date": when.strftime("%Y-%m-%d %H:%M UTC"),
                "seconds": round(time.time() - self.started, 1), "machine": machine(),
                "load": {"before": self.load_before, "after": _load()}, "versions": versions(), **self.extra}

    def finish(self, record: dict, out: str | Path | None, *, echo: bool = True) -> dict:
        """``record`` with its ``meta``, printed (unless ``echo`` is off) and written to ``out``."""
        record = {**record, "meta": self.meta()}
        finish(record, out, echo=echo)
        return record


def start(argv: list[str] | None = None, **extra) -> Run:
    """Call first thing in ``main``: the command line, the clock and the load before any work."""
    return Run(command_line(argv), time.time(), _load(), commit(), dict(extra))


def finish(record: dict, out: str | Path | None, *, echo: bool = True) -> None:
    """Print ``record`` (unless ``echo`` is off) and write it to ``out`` when given."""
    text = json.dumps(record, indent=1) + "\n"
    if echo:
        print(text, end="")
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text)


def missing_meta(record: dict) -> list[str]:
    """The ``meta`` fields (and versions) a record lacks: what a rerun must supply."""
    meta = record.get("meta") or {}
    gone = [f for f in META_FIELDS if not meta.get(f)]
    if isinstance(meta.get("commit"), dict) and not meta["commit"].get("sha"):
        gone.append("commit")
    have = meta.get("versions") or {}
    gone += [f"versions.{v}" for v in VERSION_FIELDS if not have.get(v)]
    if (meta.get("machine") or {}).get("gpus") and not have.get("driver"):
        gone.append("versions.driver")
    return gone
