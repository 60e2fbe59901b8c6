"""Training's matrices are small (64 sentences × 11 words × 32 numbers): one BLAS thread does
them as fast as two, and when another program keeps a core busy, OpenBLAS's second thread
waits for it on every product, which made a 0.1 s training run take 1.5 s and a 1 s run 47 s.
So training asks numpy's OpenBLAS for one thread, and gives back the count it had."""

from __future__ import annotations

import ctypes
import glob
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

#: The entry points of numpy's bundled OpenBLAS (scipy-openblas), newest naming first.
NAMES = ("scipy_openblas{}_num_threads64_", "openblas{}_num_threads64_", "openblas{}_num_threads")


def _openblas() -> tuple[Any, Any] | None:
    """(get, set) of the OpenBLAS numpy loaded, or None (another BLAS: nothing to do)."""
    folder = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in glob.glob(os.path.join(folder, "*openblas*")):
        try:
            library = ctypes.CDLL(path)  # already loaded by numpy: the same handle
        except OSError:
            continue
        for name in NAMES:
            getter, setter = name.format("_get"), name.format("_set")
            if hasattr(library, getter) and hasattr(library, setter):
                return getattr(library, getter), getattr(library, setter)
    return None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Within the block numpy's products use one thread; the previous count after it."""
    with blas_threads(1):
        yield


def idle_blas_threads(most: int = 2) -> int:
    """How many BLAS threads a run should take: up to ``most``, one per core this process may
    use that the other programs leave idle, and never fewer than one.

    The rule: threads = max(1, min(most, cores, cores − ⌈load⌉ + 1)), load the 1-minute load
    average (os.getloadavg: the runnable processes, averaged) and cores those of
    os.sched_getaffinity. Our own thread is the "+ 1": on 2 cores, 2 threads while the load is
    at most 1, else 1, since a second thread that waits for a busy core makes each product
    several times slower, and on an idle core makes it faster."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not known: the safe choice
        return 1
    return max(1, min(most, cores, cores - math.ceil(load) + 1))


@contextmanager
def blas_threads(count: int) -> Iterator[None]:
    """Within the block numpy's products use ``count`` threads (at most OpenBLAS's own count,
    the cores it found); the previous count after it."""
    found = _openblas()
    if found is None:
        yield
        return
    get, set_threads = found
    before = int(get())
    set_threads(max(1, min(count, before)))
    try:
        yield
    finally:
        set_threads(before)
