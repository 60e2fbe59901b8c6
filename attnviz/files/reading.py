"""Reading guards: only regular files are opened, sizes are checked before they are spent, and
what is read is checked to be finite numbers before attnviz computes with it.

A FIFO would block and ``/dev/zero`` never ends, so only regular files are opened, and a JSON
file is refused by its size before it is parsed. Every problem becomes a FileProblem whose
message names the file and the fix.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from attnviz.arguments import only_numbers
from attnviz.errors import FileProblem
from attnviz.files.working_folder import refuse_if_gone


def present(path: Path) -> bool:
    """Whether there is something at ``path``, a link to nothing included; True also when it
    cannot be looked at (a folder on the way that may not be entered): reading it then says
    why, in one line, where ``Path.exists`` would raise PermissionError."""
    try:
        return path.exists() or path.is_symlink()
    except OSError:
        return True


def require_readable(path: Path, what: str) -> None:
    """Raise FileProblem unless ``path`` is an existing, readable regular file.

    Looks without opening: a FIFO, a device (``/dev/zero``), a socket or a folder, or a link to
    one, is refused at once rather than read forever.
    """
    try:
        mode = path.stat().st_mode  # follows a symbolic link, to what would be read
    except FileNotFoundError:
        refuse_if_gone(path, f"{what} file", reading=True)
        if path.is_symlink():
            raise FileProblem(
                f"{what} file {path} is a link to {os.readlink(path)}, which does not exist."
            ) from None
        raise FileProblem(f"{what} file not found: {path}. Check the path.") from None
    except OSError as error:  # a name too long, a loop of links, a folder we may not enter
        raise FileProblem(f"Cannot read {what} file {path}: {error.strerror or error}.") from None
    _require_regular(mode, path, what)
    if not os.access(path, os.R_OK):
        raise FileProblem(f"{what} file {path} is not readable; check its permissions.")


def _require_regular(mode: int, path: Path, what: str) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise FileProblem(f"{what} path {path} is a folder; give a file.")
    kinds = (
        (stat.S_ISFIFO, "a named pipe (FIFO)"),  # would block until someone writes to it
        (stat.S_ISCHR, "a device"),  # /dev/zero, /dev/urandom: never end
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
    )
    kind = next((name for test, name in kinds if test(mode)), "not a regular file")
    link = f" (a link to {os.path.realpath(path)})" if path.is_symlink() else ""
    raise FileProblem(
        f"{what} path {path}{link} is {kind}, not a file attnviz can read whole; "
        "save the data to a file and give that."
    )


def open_regular(path: Path, what: str) -> BinaryIO:
    """Open ``path`` for reading bytes, refusing at once anything but a regular file.

    The check is made before opening (so no device is even opened) and again on the open file,
    without blocking: a file swapped for a FIFO in between is refused too, never waited on.
    """
    require_readable(path, what)
    flags = os.O_RDONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    nonblocking = getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags | nonblocking)
    except OSError as error:
        raise FileProblem(f"Cannot read {what} file {path}: {error.strerror or error}.") from None
    try:
        _require_regular(os.fstat(descriptor).st_mode, path, what)
        if nonblocking:
            os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def human_size(size: int) -> str:
    """A size in bytes as a person reads it: 950 bytes, 3.1 MB, 3.2 GB."""
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} bytes"


class JsonData(NamedTuple):
    """A parsed JSON file and the keys its outermost object repeats (the first of each is kept)."""

    value: Any
    repeated_keys: list[str]


#: float64's largest finite value has 309 digits before the point: a longer whole number cannot
#: be a number attnviz computes with, and is refused before Python converts all its digits.
_MAX_WHOLE_DIGITS = 309


#: The largest JSON file read: parsed, JSON takes about 8 times its size in memory.
MAX_JSON_BYTES = 512 * 1024 * 1024


def load_json(path: Path, what: str) -> JsonData:
    """Parse a JSON file (UTF-8, with or without a byte-order mark).

    Python's json keeps the last of repeated keys; attnviz keeps the first, as for the other
    vocabulary formats, and reports the repeated ones so the caller can say so. A whole number
    beyond float64's range (400 digits, or 5001, past Python's own limit) is refused by name.
    """
    import io
    import json

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

    def too_large(text: str) -> FileProblem:
        digits = sum(char.isdigit() for char in text)
        shown = text if len(text) <= 24 else f"{text[:8]}… ({digits} digits)"
        return FileProblem(
            f"{what} file {path} holds the number {shown}, beyond float64's range (about "
            "±1.8e308); use smaller numbers."
        )

    def whole(text: str) -> int:
        if len(text.lstrip("-")) > _MAX_WHOLE_DIGITS:
            raise too_large(text)  # before int(), which is slow on thousands of digits
        value = int(text)
        try:
            float(value)
        except OverflowError:
            raise too_large(text) from None
        return value

    with open_regular(path, what) as binary:
        size = os.fstat(binary.fileno()).st_size
        if size > MAX_JSON_BYTES:
            raise FileProblem(
                f"{what} file {path} is {human_size(size)} of JSON; attnviz reads JSON up to "
                f"{human_size(MAX_JSON_BYTES)} (parsed, it takes about 8 times its size in "
                "memory): save it as .npz (--export FILE.npz writes one)."
            )
        try:
            with io.TextIOWrapper(binary, encoding="utf-8-sig") as handle:
                # Only whole numbers get a hook: floats keep json's fast C parser (1e400 reads
                # as infinity, which finite_matrix refuses).
                value = json.load(handle, object_pairs_hook=first_wins, parse_int=whole)
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
    # It starts the message: "The array in …", "Weights in …"; a name with a subscript (b_V,
    # W_Q) is an array's own and stays as it is written.
    if "_" not in name:
        name = name[:1].upper() + name[1:]
    only_numbers(value, name, source, ndim)  # not text, true/false or dates made numbers
    not_numbers = f"{name} in {source} is not a {ndim}-d array of numbers of equal length."
    try:
        given = np.asarray(value)  # a ragged list raises here, in numpy 2
    except (TypeError, ValueError, OverflowError):
        raise FileProblem(not_numbers) from None
    if given.dtype.kind == "c":
        raise FileProblem(
            f"{name} in {source} holds complex numbers; attention needs real numbers."
        )
    if given.dtype.kind == "f" and given.dtype.itemsize > 8:  # longdouble: check before casting
        _require_finite(given, name, source)
        beyond = np.abs(given) > np.finfo(np.float64).max
        if beyond.any():
            raise FileProblem(
                f"{name} in {source} holds numbers beyond float64's range (first at index "
                f"{np.argwhere(beyond)[0].tolist()}); attnviz computes in float64 (at most about "
                "±1.8e308): scale them down."
            )
    try:
        with np.errstate(over="raise"):
            array = np.asarray(given, dtype=np.float64)
    except (TypeError, ValueError):
        raise FileProblem(not_numbers) from None
    except (OverflowError, FloatingPointError):  # huge Python ints from the API
        raise FileProblem(
            f"{name} in {source} holds numbers beyond float64's range (at most about ±1.8e308); "
            "scale them down."
        ) from None
    if array.ndim != ndim:
        raise FileProblem(
            f"{name} in {source} has {array.ndim} dimensions {list(array.shape)}; expected {ndim}."
        )
    _require_finite(array, name, source)
    return array


def _require_finite(array: np.ndarray, name: str, source: Path | str) -> None:
    if not np.isfinite(array).all():
        bad = np.argwhere(~np.isfinite(array))[0].tolist()
        raise FileProblem(
            f"{name} in {source} holds NaN or infinity (first at index {bad}); "
            "replace it with finite numbers."
        )
