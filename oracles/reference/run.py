"""The reference's entry point: one CTA of a program through the interpreter (``interp``) and its
dispatch (``control``), outputs as a ``RefResult``."""
from __future__ import annotations

import numpy as np

import fuzzptx.oracles.reference.control as control
from .blas import single_thread
from .errors import Undefined
from .interp import Machine
from .result import RefResult, output_from_region


def run_program(program, *, mode: str = "spec"):
    """Run the launch's kernel for one CTA; returns a ``RefResult`` (raises ``ReferenceError_``)."""
    if mode not in ("spec", "hardware"):
        raise ValueError(f"mode must be 'spec' or 'hardware', not {mode!r}")
    m = Machine(program, mode)
    undefined = None
    old = np.seterr(all="ignore")
    try:
        with single_thread():  # small matrix products: threads only spin (see blas)
            control.run_kernel(m)
    except Undefined as u:
        undefined = u.reason
    finally:
        np.seterr(**old)
    outs = {b.name: output_from_region(b, m.buffers[b.name], undefined is not None) for b in program.outputs()}
    return RefResult(outs, undefined, tuple(m.notes), m.steps, frozenset(m.branches_taken), frozenset(m.blocks_run))
