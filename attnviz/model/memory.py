"""Freed memory kept for the next forward pass instead of handed back to the system.

A forward pass keeps every intermediate of every layer (21 MB for all-MiniLM-L6-v2 at 128 tokens),
and a loop over sentences frees one pass's trace as the next pass makes its own. glibc's malloc
gives the top of its heap back to the system once more than its trim threshold is free there, and
serves the largest blocks from mappings it unmaps when they are freed; its defaults move with the
sizes it has seen. Whether a freed trace goes back to the system then depends on where in the heap
it happened to lie, and when it does, the next pass faults every page in again, zeroed: 10.6 MB of
page faults per pass, 4 ms of a 30 ms MiniLM pass, appeared or vanished with a change of a module's
path. Training a toy model (attnviz.train) frees and makes again arrays of a few MB at every step
and every held-out check the same way. So model mode and training ask glibc, once, to serve blocks
of up to 32 MB from the heap and to keep up to 64 MB of freed memory at its top for reuse: the pages
of one pass are those of the next, whatever the layout. Memory in use is the same; freed memory
beyond 64 MB at the top of the heap still goes back to the system.

Other C libraries (macOS, musl, Windows) have no such thresholds or no ``mallopt``: nothing to do.
Nor when the process was started with malloc settings of its own (MALLOC_* variables or glibc's
malloc tunables): those are left as they were set.
"""

from __future__ import annotations

import ctypes
import functools
import os

#: mallopt's parameters, from glibc's malloc.h.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from the heap (glibc's own ceiling for its moving threshold).
MMAP_THRESHOLD = 32 * 1024 * 1024
#: Freed memory at the top of the heap up to this size stays for reuse.
TRIM_THRESHOLD = 64 * 1024 * 1024


@functools.cache
def keep_freed_memory() -> bool:
    """Ask glibc, once per process, to keep freed blocks for reuse; True when it agreed. Model
    mode's run (attnviz.model.run.LoadedModel) calls it before each pass, outside the
    families' forward passes, and so does a Trainer when it is made."""
    if not _is_glibc() or _tuned_by_the_user():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the process already uses
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # Both: setting either one ends glibc's moving thresholds for both.
    heap = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    kept = mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    return bool(heap and kept)


def _tuned_by_the_user() -> bool:
    """Whether whoever started the process set malloc's behaviour themselves (MALLOC_TRIM_
    THRESHOLD_ and the like, or glibc.malloc tunables), which mallopt would override."""
    if any(name.startswith("MALLOC_") for name in os.environ):
        return True
    return "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", "")


def _is_glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (AttributeError, ValueError, OSError):  # no confstr, or no such name here
        return False
