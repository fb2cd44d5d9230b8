"""The one repro writer: a finding's program becomes a self-contained ``.ptx`` file whose header
says how to launch it and what each judge said of that very file (its EXPECT lines), shrunk
first when the run gives it a budget.

The file is written twice: at once, raw, so a killed run keeps the finding; then rewritten
(in a pool process) with its EXPECT lines -- the run's own verdicts moved to the final header
where the body is unchanged (``differ.finalize_repro``), so ``fuzzptx replay`` finds them
holding."""
from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

from fuzzptx.judges import differ, registry
from fuzzptx.judges.base import Verdicts
from fuzzptx.program import Program
from fuzzptx.reduce import shrink

from .predicate import signature_predicate


def judges_that_ran(v: Verdicts) -> tuple[str, ...]:
    """The CPU judges whose verdicts a repro's EXPECT lines repeat (the GPU's are a note: a replay
    may have no GPU)."""
    return tuple(name for name in v if registry.get(name).in_pool)


def repro_stem(block: int, index: int, k: int = 0) -> str:
    """``b<block>_<index>`` (``_<k>`` for the k-th new signature of one program)."""
    return f"b{block}_{index}" + (f"_{k}" if k else "")


def write_raw(path: Path, program: Program, signature: str) -> None:
    """The finding's program at once, before any judging of the file itself: kill-safe."""
    path.write_text(replace(program, signature=signature).to_ptx())


def finalize_repro_file(path: str, p: Program, judges: tuple[str, ...], signature: str, note: str | None,
                        verdicts: Verdicts | None = None, text: str | None = None,
                        shrink_budget: float = 0.0) -> float:
    """Rewrite a repro (shrunk for at most ``shrink_budget`` seconds while it keeps ``signature``,
    then with EXPECT lines taken on its final text); ``verdicts``: what the judges said of the
    program in the run, on ``text``: they size the header, and ptxas's verdict is moved to the
    final text rather than compiled again.  Returns the seconds it took; a shrink or a judge that
    fails leaves the raw file, never loses the finding."""
    t0 = time.perf_counter()
    program = p
    if shrink_budget > 0:
        try:
            program = shrink(p, signature_predicate(signature), budget_s=shrink_budget).program
        except Exception as exc:  # noqa: BLE001 - the unshrunk program is still the finding
            program = replace(p, notes=p.notes + (f"not shrunk: {type(exc).__name__}: {exc}",))
    if note:  # before the verdicts are placed: the note is a header line too, it moves the body
        program = replace(program, notes=program.notes + (note,))
    same_body = program.module is p.module
    try:
        prog = differ.finalize_repro(program, judges, signature, verdicts=verdicts if same_body else None,
                                     text=text if same_body else None)
    except Exception:  # noqa: BLE001 - never lose the finding over its bookkeeping: the raw file stays
        return time.perf_counter() - t0
    tmp = path + ".tmp"
    Path(tmp).write_text(prog.to_ptx())
    os.replace(tmp, path)
    return time.perf_counter() - t0
