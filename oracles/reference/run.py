"""The reference's entry point: one CTA (or the CTAs of one cluster) of a program through the interpreter (``interp``) and its
dispatch (``control``), outputs as a ``RefResult``."""
from __future__ import annotations

import numpy as np

import fuzzptx.oracles.reference.cluster as cluster
import fuzzptx.oracles.reference.control as control
from .blas import single_thread
from .errors import Undefined, Unsupported
from .interp import Machine
from .result import RefResult, output_from_region


def run_program(program, *, mode: str = "spec"):
    """Run the launch's kernel for one CTA; returns a ``RefResult`` (raises ``ReferenceError_``)."""
    if mode not in ("spec", "hardware"):
        raise ValueError(f"mode must be 'spec' or 'hardware', not {mode!r}")
    ctas = machines(program, mode)
    m = ctas[0]
    undefined = None
    old = np.seterr(all="ignore")
    try:
        with single_thread():  # small matrix products: threads only spin (see blas)
            run_ctas(ctas)
    except Undefined as u:
        undefined = u.reason
    finally:
        np.seterr(**old)
    outs = {b.name: output_from_region(b, m.buffers[b.name], undefined is not None) for b in program.outputs()}
    notes = tuple(dict.fromkeys(n for c in ctas for n in c.notes))[:20]
    return RefResult(outs, undefined, notes, sum(c.steps for c in ctas),
                     frozenset().union(*(c.branches_taken for c in ctas)), frozenset().union(*(c.blocks_run for c in ctas)))


def run_in_numerics(program, mode: str) -> tuple[RefResult, str]:
    """``run_program`` in ``mode``, else in the spec's numerics where the H100 model does not run
    the program (``Unsupported``): the result and the numerics it came from.  The one fallback
    of every caller that wants the GPU's numerics where they are modelled (the compile pairs'
    eligibility and their CPU stand-in, the real-kernel GPU comparison)."""
    try:
        return run_program(program, mode=mode), mode
    except Unsupported:
        if mode == "spec":
            raise
    return run_program(program, mode="spec"), "spec"


def machines(program, mode: str = "spec", memory=None) -> list[Machine]:
    """The machine of each CTA of the launch's one cluster, by rank (one: a CTA alone); ``memory``:
    a ``Memory`` subclass each machine's memory becomes (the launch search's tracking)."""
    first = Machine(program, mode)
    ctas = [first] + [Machine(program, mode, rank=r) for r in range(1, first.cluster.size)]
    if memory is not None:
        for c in ctas:
            c.mem.__class__ = memory
    if len(ctas) > 1:  # sharing the global buffers and parameters
        share_globals(ctas)
    return ctas


def run_ctas(ctas: list[Machine]) -> None:
    """Run the kernel in every CTA of ``ctas`` (``machines``): alone, or the cluster's CTAs together."""
    if len(ctas) == 1:
        control.run_kernel(ctas[0])
    else:
        cluster.Group(ctas).run(control.run_kernel)


def share_globals(ctas: list[Machine]) -> None:
    """The CTAs of one cluster see rank 0's global buffers and variables (each machine made its own,
    at the same addresses) and each other's shared memory (``.shared::cluster``)."""
    first = ctas[0].mem
    regions = tuple(c.mem.shared for c in ctas)
    for c in ctas:
        if c is not ctas[0]:
            c.mem.globals, c.mem._gbases, c.mem._gbase_list = first.globals, first._gbases, first._gbase_list
            c.mem._last = None
            c.buffers = ctas[0].buffers
        c.mem.cluster_shared = regions
