"""The reducer's predicate: whether a candidate keeps a signature, judged by the engine's executor.

``fuzzptx.reduce`` shrinks with any predicate; the one for ``--keep SIGNATURE`` (``fuzzptx
shrink``, a campaign's shrinking, the corpus builder) judges each batch of candidates as one
block of the executor (``fuzzptx.engine.executor``: one batched compile, then each candidate's
other judges in turn, up to the first that holds), with the judges the signature needs.
"""
from __future__ import annotations

from typing import Sequence

from fuzzptx.judges import differ, metamorphic
from fuzzptx.judges.base import DEVICE, Verdicts
from fuzzptx.judges.registry import get as get_judge
from fuzzptx.program import Program
from fuzzptx.reduce import Predicate

from .executor import Executor


def signature_predicate(signature: str, toolchain=None) -> Predicate:
    """Judge candidates for ``--keep SIGNATURE`` (``toolchain``: another ptxas release to judge
    with, as ``fuzzptx shrink --ptxas``).

    A corpus signature's own predicate (what its hand-written entry keeps) is
    ``fuzzptx.triage.corpus.keep_predicate``, which falls back to this one."""
    if metamorphic.is_metamorphic(signature) and toolchain is None:
        return metamorphic_predicate(signature)
    # with another release (``fuzzptx shrink --ptxas``), a compile pair's signature is judged by the
    # executor, whose metamorphic judge builds both sides with that release (the pair predicate
    # alone builds with the pinned one)
    keep = differ.keep_predicate(signature)
    executor = Executor(differ.judges_for(signature), toolchain=toolchain)

    def holds(programs: Sequence[Program]) -> list[bool]:
        hit: list[int] = []

        def until(k: int, p: Program, v: Verdicts) -> bool:
            if keep(differ.compare(p, v), v):
                hit.append(k)  # the reducer takes the first candidate that holds: judging the rest is waste
                return True
            return False

        executor.verdicts(programs, [p.to_ptx() for p in programs], until=until)
        return [k in hit for k in range(len(programs))]

    return holds


def metamorphic_predicate(signature: str) -> Predicate:
    """``--keep`` of a metamorphic signature: its pairs, on the GPU or the reference (``metamorphic.predicate``)."""
    return metamorphic.predicate(signature)


def rejudged(program: Program, signature: str) -> Program:
    """The program with EXPECT lines (and signature) saying what the CPU judges say of it now."""
    judges = tuple(j for j in differ.JUDGES if DEVICE not in get_judge(j).needs or j in signature)
    v = Executor(judges).judge(program, program.to_ptx())
    findings = differ.compare(program, v)
    found = [f.signature for f in findings if f.signature.startswith(signature)]
    # the signature the program came with, where it still holds: ``--keep`` is often a prefix that
    # findings of another family match too
    # (stated by ``fuzzptx shrink`` in the header when it changes); with none left, what was kept
    sig = program.signature if program.signature in found else (found[0] if found else signature)
    return differ.finalize_repro(program, judges, sig)
