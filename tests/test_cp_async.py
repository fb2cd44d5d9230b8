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


def _result_bytes(p) -> tuple | str:
    try:
        r = run_program(p)
    except Exception as exc:  # noqa: BLE001 - an error is a result too: the same one both ways
        return f"{type(exc).__name__}: {exc}"
    return (r.summary(), r.notes, {k: (b.data, b.kind.tobytes(), b.lo.tobytes(), b.hi.tobytes(), b.flags.tobytes())
                                   for k, b in r.outputs.items()})


def _one_thread_at_a_time(monkeypatch) -> None:
    """The reference with its all-threads paths off: cp.async's copy and landing, mbarrier's
    arrive, wait and observe as loops over threads and landings."""
    import fuzzptx.oracles.reference.cp_async as cpa
    import fuzzptx.oracles.reference.mbarrier as mb

    monkeypatch.setattr(cpa, "_copy_all", lambda *a: None)
    monkeypatch.setattr(mb, "_one_barrier", lambda *a: None)
    monkeypatch.setattr(mb, "_exact", lambda words: False)

    def land(landed):
        for t, p in landed:
            for d_off, bits, sh in p.words:
                p.region.write(d_off, 4, [(bits, sh)],
                               writers=np.full(d_off.size, t, np.int32) if p.region.dirty is not None else None)
    monkeypatch.setattr(cpa, "_land", land)


def _pipelines() -> list:
    from fuzzptx.engine.generate import draw_direct

    progs = [program(n) for n in sorted(KERNELS)]
    return progs + [p for p in draw_direct(48, 5) if any(
        i.opcode.startswith(("cp.async", "mbarrier")) for f in p.module.functions() if f.body for i in f.instructions())]


def test_all_threads_at_once_as_one_at_a_time(monkeypatch):
    """The all-threads paths (one resolve, read and write per copy; one step per barrier) leave what
    the per-thread loops leave: outputs, shadows and notes (in-flight wgmma reads poisoned in order)."""
    progs = _pipelines()
    assert len(progs) > len(KERNELS)  # drawn pipelines with cp.async or mbarriers among them
    fast = [_result_bytes(p) for p in progs]
    _one_thread_at_a_time(monkeypatch)
    slow = [_result_bytes(p) for p in progs]
    assert fast == slow
