"""Process-level settings for the processes that judge programs.

Judging allocates many small, short-lived objects (IR nodes, tuples, numpy scalars) and few
reference cycles, so CPython's default cyclic-GC threshold (700 allocations) makes it walk
the young generation thousands of times per program. A higher threshold, with what was
imported before judging starts frozen out of the collector, cut parse + checker + reference
by about a sixth (median 66 -> 55 ms/program; benchmarks/bench_judge_gc.py, benchmarks/README.md).
"""
from __future__ import annotations

import functools
import gc
from typing import Callable, TypeVar

T = TypeVar("T")

YOUNG_THRESHOLD = 50_000
# A campaign pool process collects between blocks (``between_blocks``); this threshold only
# guards against a block that allocates without end
POOL_YOUNG_THRESHOLD = 1_000_000


def tune_gc(young: int = YOUNG_THRESHOLD) -> None:
    """Freeze what is alive now (imports, the ISA catalogue) and collect the young generation
    rarely; call once per judging process, after its imports."""
    gc.freeze()
    _, mid, old = gc.get_threshold()
    gc.set_threshold(young, max(mid, 50), max(old, 100))


FULL_EVERY = 50  # blocks between two full collections in a pool process
_blocks = [0]


def between_blocks() -> float:
    """A campaign pool process between two blocks: forget the ``per_object`` answers, then collect
    the young generation while the finished block's programs are already gone.  A collection in
    the middle of a block walks its whole live IR instead: with ``YOUNG_THRESHOLD`` that was two
    collections a block and ~3 ms/program, this is one of ~1.5 ms (benchmarks/bench_pool_gc.py).
    Every ``FULL_EVERY`` blocks the collection is a full one, as CPython's own schedule would
    make it: cycles among the older objects (the memo tables' entries) are freed too.  Returns
    the seconds it took."""
    import time

    t0 = time.perf_counter()
    release()
    _blocks[0] += 1
    gc.collect(2 if _blocks[0] % FULL_EVERY == 0 else 0)
    return time.perf_counter() - t0


_KEPT: list[dict] = []  # every per_object table, for ``release``


def release() -> None:
    """Forget every ``per_object`` answer: a pool process calls it when a block is judged, so
    the block's programs die by reference counting there and then, instead of staying alive in
    these tables until evicted -- the cycle collector would otherwise walk each block's whole
    IR once more (measured: benchmarks/bench_pool_gc.py)."""
    for kept in _KEPT:
        kept.clear()


def per_object(limit: int) -> Callable[[Callable[[object], T]], Callable[[object], T]]:
    """Keep ``f(obj)`` per object *identity* for the last ``limit`` or so objects: frozen IR
    nodes that compare equal may still differ (source locations), and hashing a whole
    function per lookup would cost more than it saves.  Exceptions are not kept."""
    def wrap(f: Callable[[object], T]) -> Callable[[object], T]:
        kept: dict[int, tuple[object, T]] = {}
        _KEPT.append(kept)

        @functools.wraps(f)
        def get(obj: object) -> T:
            hit = kept.get(id(obj))
            if hit is not None and hit[0] is obj:
                return hit[1]
            if len(kept) > limit:
                kept.clear()
            out = f(obj)
            kept[id(obj)] = (obj, out)
            return out

        return get
    return wrap


def kept_on_node(key: str) -> Callable[[Callable[[object], T]], Callable[[object], T]]:
    """Keep ``f(node)`` in the frozen IR node's own ``__dict__`` under ``key`` (as
    ``functools.cached_property`` does, without its lock): for value-only answers that judges ask
    of one instruction many times (its defs/uses, its wgmma roles, the symbols it names).
    ``fuzzptx.ptx.emit.emit_located`` seeds a new instruction with the answers kept on an earlier
    one of the same text, so such keys must depend on the compared fields alone."""
    def wrap(f: Callable[[object], T]) -> Callable[[object], T]:
        @functools.wraps(f)
        def get(node: object) -> T:
            d = node.__dict__
            try:
                return d[key]
            except KeyError:
                out = d[key] = f(node)
                return out

        return get
    return wrap


def die_with_parent() -> None:
    """A pool or GPU worker ends when the process that started it dies, even by ``kill -9`` (which
    runs no clean-up there): otherwise it lives on under pid 1, holding its memory.  A forkserver's
    worker cannot count on its forkserver for this: each worker holds the write end of the
    forkserver's "parent alive" pipe, so the forkserver never sees the parent go while a worker
    lives, and the worker waits on a queue no one writes.  So a daemon thread waits on
    multiprocessing's parent sentinel (a pipe the starting process holds open, readable once it
    is gone; fork, spawn and forkserver all give one) and ends the process; elsewhere (no
    sentinel) Linux's ``PR_SET_PDEATHSIG``, else a thread watching the parent's pid."""
    import multiprocessing
    import os
    import signal
    import sys
    import threading

    parent = multiprocessing.parent_process()
    if parent is not None and getattr(parent, "sentinel", None) is not None:
        def wait_for_parent() -> None:
            parent.join()
            os._exit(1)

        threading.Thread(target=wait_for_parent, name="die-with-parent", daemon=True).start()
        return
    ppid = os.getppid()
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
        else:
            if os.getppid() != ppid:  # the parent died before the request took effect
                os._exit(1)
            return

    def watch() -> None:
        import time

        while os.getppid() == ppid:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()
