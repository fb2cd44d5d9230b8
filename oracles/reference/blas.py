"""One BLAS thread while the reference runs: its matrix products are small.

numpy's OpenBLAS splits even a 64x32 @ 32x256 product over every core and spins
its threads while waiting; on a machine shared by several fuzz workers that made
one such product cost 0.7 ms of CPU instead of 0.04 ms (and up to 30 ms of wall
time).  ``single_thread()`` sets OpenBLAS to one thread for the duration and puts
the old count back, through OpenBLAS's own C entry points (what ``threadpoolctl``
calls); where no OpenBLAS is loaded it does nothing.
"""
from __future__ import annotations

import contextlib
import ctypes

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
            "openblas_get_num_threads")
_API: list = []  # [(get, set)] once looked up; [None] when there is none


def _openblas():
    """(get, set) of the OpenBLAS that numpy loaded, or None."""
    if _API:
        return _API[0]
    import numpy  # noqa: F401  (loads its BLAS)

    found = None
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({line.split()[-1] for line in fh if "openblas" in line.lower() and "/" in line})
    except OSError:
        paths = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        get = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        set_ = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        if get is not None and set_ is not None:
            get.restype, get.argtypes = ctypes.c_int, []
            set_.restype, set_.argtypes = None, [ctypes.c_int]
            found = (get, set_)
            break
    _API.append(found)
    return found


@contextlib.contextmanager
def single_thread():
    """OpenBLAS on one thread inside the block (the previous count restored after)."""
    api = _openblas()
    if api is None:
        yield
        return
    get, set_ = api
    old = get()
    if old == 1:
        yield
        return
    set_(1)
    try:
        yield
    finally:
        set_(old)
