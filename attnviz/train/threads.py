"""Training's matrices are small (64 sentences × 11 words × 32 numbers): one BLAS thread does
them as fast as two, and when another program keeps a core busy, OpenBLAS's second thread
waits for it on every product, which made a 0.1 s training run take 1.5 s and a 1 s run 47 s.
So training asks numpy's OpenBLAS for one thread, and gives back the count it had."""

from __future__ import annotations

import ctypes
import glob
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
    found = _openblas()
    if found is None:
        yield
        return
    get, set_threads = found
    before = int(get())
    set_threads(1)
    try:
        yield
    finally:
        set_threads(before)
