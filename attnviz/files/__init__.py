"""Safe reading and atomic writing of the files attnviz touches.

- ``reading``: only regular files are opened (a FIFO would block, ``/dev/zero`` never ends),
  sizes are checked before they are spent, JSON keeps the first of repeated keys, and what is
  read must be finite numbers (``finite_matrix``);
- ``numpy_files``: ``.npy`` and ``.npz`` read without pickle, each array's size checked from its
  headers before a byte of it is decompressed;
- ``writing``: output paths checked before any work, then written to a temporary file and
  renamed into place; within ``staged_writes()`` a run's outputs are all or nothing;
- ``replacing``: what a rename may replace (never a link, a file with a second name or another
  user's file), and when two outputs of one run are one file.

Every problem becomes a FileProblem or OutputProblem whose message names the file and the fix.
"""

from attnviz.files.numpy_files import (
    NPZ_FLOOR_BYTES,
    NPZ_MAX_RATIO,
    ArrayHeader,
    HeaderCheck,
    load_npy,
    load_npz,
    npz_names,
)
from attnviz.files.reading import (
    MAX_JSON_BYTES,
    JsonData,
    finite_matrix,
    human_size,
    load_json,
    open_regular,
    present,
    require_readable,
)
from attnviz.files.writing import (
    TEMPORARY_PREFIX,
    TEMPORARY_SUFFIX,
    Outputs,
    atomic_write,
    check_output_path,
    check_path_length,
    check_writable_folder,
    staged_writes,
)

__all__ = [
    "MAX_JSON_BYTES",
    "NPZ_FLOOR_BYTES",
    "NPZ_MAX_RATIO",
    "TEMPORARY_PREFIX",
    "TEMPORARY_SUFFIX",
    "ArrayHeader",
    "HeaderCheck",
    "JsonData",
    "Outputs",
    "atomic_write",
    "check_output_path",
    "check_path_length",
    "check_writable_folder",
    "finite_matrix",
    "human_size",
    "load_json",
    "load_npy",
    "load_npz",
    "npz_names",
    "open_regular",
    "present",
    "require_readable",
    "staged_writes",
]
