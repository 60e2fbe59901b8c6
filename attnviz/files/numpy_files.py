"""The ``.npy`` and ``.npz`` reader, which never unpickles.

Arrays are read with numpy's ``.npy`` format reader and ``allow_pickle=False``, which refuses
object arrays, which is how a malicious ``.npy``/``.npz`` would run code. An array's size is read
from the zip and ``.npy`` headers and checked before a byte of it is decompressed, so a small
archive that would expand to gigabytes is refused at once, with its size named.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

import numpy as np

from attnviz.errors import FileProblem
from attnviz.files.reading import human_size, open_regular

if TYPE_CHECKING:
    from zipfile import ZipInfo

#: An array in an ``.npz`` may expand to NPZ_MAX_RATIO times its compressed size, or to
#: NPZ_FLOOR_BYTES, whichever is larger. Numbers compress about 1.1×, a vocabulary's padded
#: words some 40×; a zip bomb expands about 1000× (deflate's limit).
NPZ_MAX_RATIO = 64
NPZ_FLOOR_BYTES = 64_000_000


class ArrayHeader(NamedTuple):
    """What an ``.npy`` header declares, read before the array itself."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize  # Python ints: never overflows


#: Called with an array's name and header before it is read; raises FileProblem for an array
#: the command cannot use, so that it is never read.
HeaderCheck = Callable[[str, ArrayHeader], None]


def _read_header(stream: IO[bytes]) -> ArrayHeader:
    """The header of the ``.npy`` data ``stream`` is at the start of; ValueError if damaged."""
    from numpy.lib import format as npy

    version = npy.read_magic(stream)
    if version == (1, 0):
        shape, _, dtype = npy.read_array_header_1_0(stream)
    elif version == (2, 0):
        shape, _, dtype = npy.read_array_header_2_0(stream)
    else:  # 3.0 only adds UTF-8 field names, which no array of numbers has
        raise ValueError(f".npy format version {version[0]}.{version[1]}, not 1.0 or 2.0")
    return ArrayHeader(tuple(shape), dtype)


def _refuse_objects(header: ArrayHeader, path: Path, what: str) -> None:
    if header.dtype.hasobject:
        raise FileProblem(
            f"{what} file {path} holds Python objects, which would need pickle to load; "
            "attnviz refuses pickle. Save plain numbers with np.save or np.savez."
        )


def _unreadable(path: Path, what: str, kind: str, error: Exception) -> FileProblem:
    """The message for an array file numpy or zipfile could not read."""
    reason = "it claims an array too large for memory" if isinstance(error, MemoryError) else error
    return FileProblem(f"{what} file {path} is not a valid {kind} file ({reason}).")


def load_npy(path: Path, what: str, *, check: HeaderCheck | None = None) -> np.ndarray:
    """Load one array from a ``.npy`` file without pickle.

    Its header is read first: the array must fit in the file, and ``check(name, header)`` may
    refuse it before it is read.
    """
    from numpy.lib import format as npy

    with open_regular(path, what) as handle:
        try:
            if handle.read(6) != b"\x93NUMPY":
                raise FileProblem(
                    f"{what} file {path} is not a valid .npy file (wrong header); "
                    "save it with numpy's np.save."
                )
            handle.seek(0)
            header = _read_header(handle)
            _refuse_objects(header, path, what)
            present = os.fstat(handle.fileno()).st_size - handle.tell()
            if header.nbytes > present:
                raise FileProblem(
                    f"{what} file {path} is not a valid .npy file (cut short: its header declares "
                    f"an array {list(header.shape)} of {human_size(header.nbytes)}, the file "
                    f"holds {human_size(present)})."
                )
            if check is not None:
                check("the array", header)
            handle.seek(0)
            array = npy.read_array(handle, allow_pickle=False)
        except FileProblem:
            raise
        except Exception as error:  # numpy's reader on bytes from outside: see load_npz
            raise _unreadable(path, what, ".npy", error) from None
    if not isinstance(array, np.ndarray):
        raise FileProblem(f"{what} file {path} is not a .npy array file.")
    return array


def npz_names(path: Path, what: str) -> tuple[str, ...]:
    """The names of the arrays in a ``.npz`` (as ``np.load`` names them), from its zip directory
    only: nothing is decompressed."""
    import zipfile

    with open_regular(path, what) as handle:
        try:
            with zipfile.ZipFile(handle) as archive:
                return tuple(dict.fromkeys(_array_name(name) for name in archive.namelist()))
        except Exception as error:  # zipfile on bytes from outside: see load_npz
            raise _unreadable(path, what, ".npz", error) from None


def _array_name(member: str) -> str:
    return member.removesuffix(".npy")


def load_npz(
    path: Path,
    what: str,
    keys: Iterable[str] | None = None,
    *,
    check: HeaderCheck | None = None,
) -> dict[str, np.ndarray]:
    """Load the arrays of a ``.npz`` file, without pickle, into a plain dict; with ``keys``,
    only those of them that it has: the others are never decompressed.

    Before an array is decompressed, the sizes its zip entry and ``.npy`` header declare are
    checked: they must agree, fit in the file, and stay within NPZ_MAX_RATIO times the
    compressed size (or NPZ_FLOOR_BYTES); ``check(name, header)`` may refuse the array too. So
    a small archive that expands to gigabytes is refused at once, with its size named.
    """
    import zipfile

    from numpy.lib import format as npy

    with open_regular(path, what) as handle:
        try:
            if handle.read(2) != b"PK":
                raise FileProblem(
                    f"{what} file {path} is not a valid .npz file (wrong header); "
                    "save it with numpy's np.savez."
                )
            handle.seek(0)
            archive_size = os.fstat(handle.fileno()).st_size
            arrays: dict[str, np.ndarray] = {}
            with zipfile.ZipFile(handle) as archive:
                members: dict[str, zipfile.ZipInfo] = {}
                for info in archive.infolist():
                    members.setdefault(_array_name(info.filename), info)
                wanted = list(members) if keys is None else [k for k in keys if k in members]
                for name in wanted:
                    info = members[name]
                    _check_expansion(info, archive_size, name, path, what)
                    with archive.open(info) as member:
                        try:
                            header = _read_header(member)
                        except ValueError:
                            raise FileProblem(
                                f"{what} file {path}: its member {info.filename!r} is not a "
                                ".npy array; save the arrays with np.savez."
                            ) from None
                        _refuse_objects(header, path, what)
                        if member.tell() + header.nbytes > info.file_size:
                            raise FileProblem(
                                f"{what} file {path} is not a valid .npz file ({name!r} declares "
                                f"an array {list(header.shape)} of {human_size(header.nbytes)}, "
                                f"its zip entry holds {human_size(info.file_size)})."
                            )
                    if check is not None:
                        check(name, header)
                    with archive.open(info) as member:
                        arrays[name] = npy.read_array(member, allow_pickle=False)
            return arrays
        except FileProblem:
            raise
        except Exception as error:
            # Only zipfile and numpy's format reader run in this block, on bytes from outside; a
            # damaged archive makes them raise BadZipFile, zlib.error, NotImplementedError (an
            # unknown zip version or method), RuntimeError (an "encrypted" entry), MemoryError,
            # ValueError, EOFError… All mean one thing: a broken file.
            raise _unreadable(path, what, ".npz", error) from None


def _check_expansion(info: ZipInfo, archive_size: int, name: str, path: Path, what: str) -> None:
    """Refuse a zip entry that claims more than the archive holds or expands like a bomb."""
    if info.compress_size > archive_size:
        raise FileProblem(
            f"{what} file {path} is not a valid .npz file (cut short: {name!r} claims "
            f"{human_size(info.compress_size)} in a file of {human_size(archive_size)})."
        )
    limit = max(NPZ_FLOOR_BYTES, NPZ_MAX_RATIO * info.compress_size)
    if info.file_size > limit:
        raise FileProblem(
            f"{what} file {path}: {name!r} would expand from {human_size(info.compress_size)} to "
            f"{human_size(info.file_size)}, more than attnviz expands one array "
            f"({NPZ_MAX_RATIO}× its compressed size, or {human_size(NPZ_FLOOR_BYTES)}); "
            "save real arrays with np.savez."
        )
