"""SASS forms: what ptxas emitted, as a vocabulary to cover.

A form is an instruction's opcode with its modifiers and without shape numbers
(``HGMMA.64x128x16.F32`` is ``HGMMA.F32``; ``LDG.E.128`` keeps its width): the unit in which the
generator's reach is compared with what ptxas emits for real kernels (``benchmarks/sass_vocabulary.py``)
and in which runs count the SASS they reached.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from .listing import Instruction, Listing

_SHAPE = re.compile(r"^\d+x\d+(x\d+)?$")
_SUFFIX = re.compile(r"_fzb\d+_")  # a merged module's renaming (``oracles/ptxas_merge.py``)


def form(ins: Instruction) -> str:
    """``ins``'s opcode with every shape token (``64x128x16``) dropped."""
    return ".".join(t for t in ins.opcode.split(".") if not _SHAPE.match(t))


def opcode(form_: str) -> str:
    return form_.split(".")[0]


def forms(listing: Listing, functions: Iterable[str] | None = None) -> Counter:
    """Form -> how often it occurs in ``listing`` (in ``functions`` only, when given)."""
    out: Counter = Counter()
    for name, fn in listing.functions.items():
        if functions is None or name in functions:
            out.update(form(i) for i in fn.instrs)
    return out


def program_forms(listing: Listing, kernels: Iterable[str]) -> frozenset[str]:
    """The forms of one program's functions in ``listing``, given its kernels' names there: in a
    batched module's cubin those of its own renaming (``k_fzb3_`` and every ``*_fzb3_``), in a
    cubin of the program alone every function."""
    marks = {m.group(0) for k in kernels for m in [_SUFFIX.search(k)] if m}
    out: set[str] = set()
    for name, fn in listing.functions.items():
        if not marks or any(m in name for m in marks):
            out.update(form(i) for i in fn.instrs)
    return frozenset(out)
