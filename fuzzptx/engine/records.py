"""The record of one judged program (a line of ``results.jsonl``) and the one place that turns
its verdicts into findings, for ``fuzzptx run`` and ``fuzzptx campaign`` alike."""
from __future__ import annotations

import time
from typing import Any, Callable

from fuzzptx import isa
from fuzzptx.judges import differ
from fuzzptx.judges.base import Verdicts
from fuzzptx.judges.finding import Finding
from fuzzptx.judges.programs import family_of_forms
from fuzzptx.program import Program
from fuzzptx.reduce import instruction_count


def forms_in(program: Program) -> set[str]:
    """The catalogue forms the program uses (coverage)."""
    keys = set()
    for fn in program.module.functions():
        for ins in fn.instructions():
            f = isa.form_for(ins)
            if f is not None:
                keys.add(f.key)
    return keys


def coverage_of(program: Program) -> dict[str, list[str]]:
    """Coverage tags the strategies left in the program's notes (``coverage: swizzle=128B,none control=loop``)."""
    tags: dict[str, list[str]] = {}
    for note in program.notes:
        if note.startswith("coverage:"):
            for item in note[len("coverage:"):].split():
                key, _, vals = item.partition("=")
                tags.setdefault(key, []).extend(v for v in vals.split(",") if v)
    return {k: sorted(set(v)) for k, v in tags.items()}


def base_record(program: Program) -> dict[str, Any]:
    """The record fields that depend on the program alone (computed where the whole program is:
    in the pool, before only its header travels on).  Its family and forms from one walk over
    its instructions (``differ.program_family`` and ``forms_in`` give the same)."""
    forms = [f for fn in program.module.functions() for ins in fn.instructions()
             if (f := isa.form_for(ins)) is not None]
    return {"family": family_of_forms(forms), "forms": sorted({f.key for f in forms}),
            "coverage": coverage_of(program), "instructions": instruction_count(program),
            "mutation": differ.mutation_of(program)}


def findings_of(program: Program, v: Verdicts, family: str, full: Callable[[], Program] | None = None) -> list[Finding]:
    """Every finding of one judged program; a comparison that breaks is a finding too, never the
    end of a run."""
    try:
        return differ.compare(program, v, family=family, full=full)
    except Exception as exc:  # noqa: BLE001
        return [Finding(f"differ:crash|{family}", f"compare failed: {type(exc).__name__}: {exc}")]


def finding_record(f: Finding, repro: str | None) -> dict[str, Any]:
    """A finding as the record holds it: its evidence (signature, message, and those of the findings
    of the same cause it merged, ``also``), its root cause, and its repro file."""
    out: dict[str, Any] = {"signature": f.signature, "message": f.message, "repro": repro,
                           "cause": f.root_cause.as_dict()}
    if f.also:
        out["also"] = [{"signature": x.signature, "message": x.message} for x in f.also]
    return out


def record(block: int, index: int, base: dict[str, Any], v: Verdicts, findings: list[Finding],
           repros: dict[str, str]) -> dict[str, Any]:
    """One line of ``results.jsonl``: where the program is (block, index: the seed rebuilds it),
    what it is, what each judge said, its findings (one per root cause) and their repro files
    (``repros``: by root cause, ``str(f.root_cause)``)."""
    return {"block": block, "index": index, "id": f"{block}:{index}", "t": time.time(), **base,
            "verdicts": v.summary(), **v.record_fields(),
            "findings": [finding_record(f, repros.get(str(f.root_cause)) or repros.get(f.signature)) for f in findings],
            "repro": next(iter(repros.values()), None)}
