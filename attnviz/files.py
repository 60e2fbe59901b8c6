"""Safe reading and atomic writing of the files attnviz touches.

Reading never unpickles: ``np.load(..., allow_pickle=False)`` refuses object arrays, which is how
a malicious ``.npy``/``.npz`` would run code. Every problem becomes a FileProblem or OutputProblem
whose message names the file and the fix. Writing goes to a temporary file in the same folder
and is renamed into place, so a failed or interrupted run leaves no half-written file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from attnviz.errors import FileProblem, OutputProblem


def require_readable(path: Path, what: str) -> None:
    """Raise FileProblem unless ``path`` is an existing, readable file."""
    if not path.exists():
        raise FileProblem(f"{what} file not found: {path}. Check the path.")
    if path.is_dir():
        raise FileProblem(f"{what} path {path} is a folder; give a file.")
    if not os.access(path, os.R_OK):
        raise FileProblem(f"{what} file {path} is not readable; check its permissions.")


def _check_magic(path: Path, what: str, magic: bytes, kind: str) -> None:
    """Refuse a file whose first bytes are not ``magic``: np.load would otherwise try pickle."""
    try:
        with path.open("rb") as handle:
            start = handle.read(len(magic))
    except OSError as error:
        raise FileProblem(f"Cannot read {what} file {path}: {error.strerror}.") from None
    if start != magic:
        raise FileProblem(
            f"{what} file {path} is not a valid {kind} file (wrong header); "
            f"save it with numpy's {'np.save' if kind == '.npy' else 'np.savez'}."
        )


def _unreadable(path: Path, what: str, kind: str, error: Exception) -> FileProblem:
    """The message for an array file numpy could not read; pickled objects get their own."""
    if isinstance(error, ValueError) and "pickle" in str(error).lower():
        return FileProblem(
            f"{what} file {path} holds Python objects, which would need pickle to load; "
            "attnviz refuses pickle. Save plain numbers with np.save or np.savez."
        )
    reason = "it claims an array too large for memory" if isinstance(error, MemoryError) else error
    return FileProblem(f"{what} file {path} is not a valid {kind} file ({reason}).")


def load_npy(path: Path, what: str) -> np.ndarray:
    """Load one array from a ``.npy`` file without pickle."""
    require_readable(path, what)
    _check_magic(path, what, b"\x93NUMPY", ".npy")
    try:
        with path.open("rb") as handle:
            array = np.load(handle, allow_pickle=False)
    except Exception as error:  # numpy's reader on bytes from outside: see load_npz
        raise _unreadable(path, what, ".npy", error) from None
    if not isinstance(array, np.ndarray):
        raise FileProblem(f"{what} file {path} is not a .npy array file.")
    return array


def load_npz(path: Path, what: str, keys: Iterable[str] | None = None) -> dict[str, np.ndarray]:
    """Load every array of a ``.npz`` file, without pickle, into a plain dict; with ``keys``,
    only those of them that it has (each array is stored apart, so the others are not read)."""
    require_readable(path, what)
    _check_magic(path, what, b"PK", ".npz")
    try:
        with path.open("rb") as handle, np.load(handle, allow_pickle=False) as archive:
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise FileProblem(
                    f"{what} file {path} is not a .npz archive; save it with np.savez."
                )
            wanted = archive.files if keys is None else [k for k in keys if k in archive.files]
            return {name: archive[name] for name in wanted}
    except FileProblem:
        raise
    except Exception as error:
        # Only zipfile and numpy's format reader run in this block, on bytes from outside; a
        # damaged archive makes them raise BadZipFile, zlib.error, NotImplementedError (an
        # unknown zip version or method), RuntimeError (an "encrypted" entry), MemoryError (a
        # header claiming terabytes), ValueError, EOFError… All mean one thing: a broken file.
        raise _unreadable(path, what, ".npz", error) from None


class JsonData(NamedTuple):
    """A parsed JSON file and the keys its outermost object repeats (the first of each is kept)."""

    value: Any
    repeated_keys: list[str]


def load_json(path: Path, what: str) -> JsonData:
    """Parse a JSON file (UTF-8, with or without a byte-order mark).

    Python's json keeps the last of repeated keys; attnviz keeps the first, as for the other
    vocabulary formats, and reports the repeated ones so the caller can say so.
    """
    import json

    require_readable(path, what)
    repeated: list[str] = []

    def first_wins(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        kept: dict[str, Any] = {}
        twice: list[str] = []
        for key, value in pairs:
            if key in kept:
                twice.append(key)
            else:
                kept[key] = value
        # Objects are decoded innermost first, so the last call is the outermost object: only
        # its keys (the words, or W_Q … W_O) are reported.
        repeated[:] = twice
        return kept

    try:
        with path.open(encoding="utf-8-sig") as handle:
            value = json.load(handle, object_pairs_hook=first_wins)
    except json.JSONDecodeError as error:
        raise FileProblem(
            f"{what} file {path} is not valid JSON: {error.msg} at line {error.lineno}, "
            f"column {error.colno}."
        ) from None
    except UnicodeDecodeError as error:
        raise FileProblem(
            f"{what} file {path} is not UTF-8 text (byte {error.start}); save it as UTF-8."
        ) from None
    except RecursionError:
        raise FileProblem(f"{what} file {path} nests JSON too deeply to hold arrays.") from None
    except OSError as error:
        raise FileProblem(f"Cannot read {what} file {path}: {error.strerror}.") from None
    return JsonData(value=value, repeated_keys=list(dict.fromkeys(repeated)))


def finite_matrix(value: Any, *, name: str, source: Path | str, ndim: int) -> np.ndarray:
    """``value`` as a float64 array with ``ndim`` dimensions and only finite numbers."""
    name = name[:1].upper() + name[1:]  # it starts the message: "The array in …"
    if np.iscomplexobj(value):
        raise FileProblem(
            f"{name} in {source} holds complex numbers; attention needs real numbers."
        )
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise FileProblem(
            f"{name} in {source} is not a {ndim}-d array of numbers of equal length."
        ) from None
    if array.ndim != ndim:
        raise FileProblem(
            f"{name} in {source} has {array.ndim} dimensions {list(array.shape)}; expected {ndim}."
        )
    if not np.isfinite(array).all():
        bad = np.argwhere(~np.isfinite(array))[0].tolist()
        raise FileProblem(
            f"{name} in {source} holds NaN or infinity (first at index {bad}); "
            "replace it with finite numbers."
        )
    return array


def check_output_path(path: Path, extensions: Iterable[str], what: str) -> str:
    """Check that ``path`` can be written and has a known extension; return the extension.

    Called before any computation, so a bad path fails fast and nothing is written.
    """
    allowed = tuple(extensions)
    extension = path.suffix.lower()
    if path.is_dir():
        example = path / f"out{allowed[0]}"
        raise OutputProblem(f"{what} {path} is a folder; give a file name in it, e.g. {example}.")
    if extension not in allowed:
        raise OutputProblem(
            f"{what} {path}: unknown extension {extension or '(none)'!r}; "
            + (f"use {allowed[0]}." if len(allowed) == 1 else f"use one of {', '.join(allowed)}.")
        )
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OutputProblem(f"{what} {path}: folder {folder} does not exist; create it first.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputProblem(f"{what} {path}: folder {folder} is not writable; choose another.")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputProblem(f"{what} {path} exists and is read-only; choose another name.")
    return extension


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Call ``write(temporary_path)`` then rename the result onto ``path``.

    The temporary file lives in the same folder (so the rename is atomic) and is removed if
    ``write`` fails, so ``path`` is either untouched or complete.
    """
    import tempfile

    folder = path.parent if str(path.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise OutputProblem(f"Cannot write {path}: {error.strerror or error}.") from None
    os.close(handle)
    temporary_path = Path(temporary)
    try:
        write(temporary_path)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary_path, 0o666 & ~umask)
        os.replace(temporary_path, path)
    except OSError as error:
        temporary_path.unlink(missing_ok=True)
        raise OutputProblem(f"Cannot write {path}: {error.strerror or error}.") from None
    except BaseException:
        temporary_path.unlink(missing_ok=True)
        raise
