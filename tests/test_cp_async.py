"""``cp.async`` (non-bulk) in the reference: bytes taken at the issue, undefined until the wait that
covers their group, zero-filled past src-size; ptxas accepts the kernels (real ptxas)."""
from __future__ import annotations

import numpy as np
import pytest

from fuzzptx.data import buffer_bytes
from fuzzptx.oracles.ptxas import compile_batch
from fuzzptx.oracles.reference import run_program
from fuzzptx.oracles.reference.values import UNDEF
from support.cp_async_kernels import KERNELS, program


def _g(p) -> np.ndarray:
    return buffer_bytes(p.buffers[0]).view(np.uint32)


def _out(r) -> np.ndarray:
    return np.frombuffer(r.bytes("o"), np.uint32)


NEXT = (np.arange(128) + 1) % 128  # each thread reads its neighbour's 16 bytes


def test_ptxas_accepts_every_kernel():
    assert all(r.accepted for r in compile_batch([program(n).to_ptx() for n in KERNELS]))


def test_a_copy_lands_at_the_wait():
    p = program("cg16")
    r = run_program(p)
    assert (r.outputs["o"].kind[:128] != UNDEF).all()
    assert np.array_equal(_out(r)[:128], _g(p)[NEXT * 4 + 1])


def test_ca_sizes_and_wait_all():
    p = program("ca4_ca8")
    r = run_program(p)
    g = _g(p)
    assert np.array_equal(_out(r)[:128], (g[NEXT * 4] + g[NEXT * 4 + 3]).astype(np.uint32))


def test_src_size_zero_fills_the_rest():
    p = program("zero_fill")
    r = run_program(p)
    assert np.array_equal(_out(r)[:128], _g(p)[NEXT * 4 + 1]) and not _out(r)[128:].any()
    assert (r.outputs["o"].kind != UNDEF).all()


def test_wait_group_1_leaves_the_newest_group_pending():
    older = run_program(program("two_groups_wait1"))
    assert (older.outputs["o"].kind[:128] != UNDEF).all()
    newer = run_program(program("read_before_wait"))
    assert (newer.outputs["o"].kind[:128] == UNDEF).all()


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_what_each_kernel_promises(name):
    r = run_program(program(name))
    undefined = bool((r.outputs["o"].kind[:128] == UNDEF).any())
    assert undefined == (KERNELS[name][1] == "undefined")
