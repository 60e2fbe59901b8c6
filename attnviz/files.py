"""Safe reading and atomic writing of the files attnviz touches.

Reading never unpickles: arrays are read with numpy's ``.npy`` format reader and
``allow_pickle=False``, which refuses object arrays, which is how a malicious ``.npy``/``.npz``
would run code. Reading is bounded before anything is spent: only regular files are opened (a
FIFO would block and ``/dev/zero`` never ends), and an array's size is read from the zip and
``.npy`` headers and checked before a byte of it is decompressed. Every problem becomes a
FileProblem or OutputProblem whose message names the file and the fix. Writing goes to a
temporary file in the same folder and is renamed into place, so a failed or interrupted run
leaves no half-written file; within staged_writes(), a run's outputs are renamed together at
the end, so a failure (or SIGTERM) on one leaves every file as it was.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, NamedTuple

import numpy as np

from attnviz.errors import AttnvizError, ExitStatus, FileProblem, OutputProblem
from attnviz.signals import signals_held, stopping_signals_raise

if TYPE_CHECKING:
    from zipfile import ZipInfo

#: An array in an ``.npz`` may expand to NPZ_MAX_RATIO times its compressed size, or to
#: NPZ_FLOOR_BYTES, whichever is larger. Numbers compress about 1.1×, a vocabulary's padded
#: words some 40×; a zip bomb expands about 1000× (deflate's limit).
NPZ_MAX_RATIO = 64
NPZ_FLOOR_BYTES = 64_000_000


def require_readable(path: Path, what: str) -> None:
    """Raise FileProblem unless ``path`` is an existing, readable regular file.

    Looks without opening: a FIFO, a device (``/dev/zero``), a socket or a folder, or a link to
    one, is refused at once rather than read forever.
    """
    try:
        mode = path.stat().st_mode  # follows a symbolic link, to what would be read
    except FileNotFoundError:
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
    name = name[:1].upper() + name[1:]  # it starts the message: "The array in …"
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


# -- writing: outputs checked before the work, then written all or nothing ----------------------

#: A temporary output is named .attnviz-XXXXXXXX.tmp beside its file: hidden, and short, so an
#: output name as long as the file system allows still leaves room for it.
TEMPORARY_PREFIX = ".attnviz-"
TEMPORARY_SUFFIX = ".tmp"
_TEMPORARY_NAME_BYTES = len(TEMPORARY_PREFIX) + 8 + len(TEMPORARY_SUFFIX)  # mkstemp adds 8


def check_output_path(path: Path, extensions: Iterable[str], what: str) -> str:
    """Check that ``path`` can be written and has a known extension; return the extension.

    Called before any computation, so a bad path fails fast and nothing is written.
    """
    allowed = tuple(extensions)
    extension = path.suffix.lower()
    check_path_length(path, what)
    status = _status(path, what)
    if status is not None and stat.S_ISDIR(status.st_mode):
        example = path / f"out{allowed[0]}"
        raise OutputProblem(f"{what} {path} is a folder; give a file name in it, e.g. {example}.")
    if extension not in allowed:
        raise OutputProblem(
            f"{what} {path}: unknown extension {extension or '(none)'!r}; "
            + (f"use {allowed[0]}." if len(allowed) == 1 else f"use one of {', '.join(allowed)}.")
        )
    if status is not None and not stat.S_ISREG(status.st_mode):
        # Renaming onto a device or a FIFO would replace it, not write into it.
        raise OutputProblem(f"{what} {path} is not a regular file; give a file name.")
    check_writable_folder(path.parent, what, path)
    if status is not None and not os.access(path, os.W_OK):
        raise OutputProblem(f"{what} {path} exists and is read-only; choose another name.")
    return extension


def check_writable_folder(folder: Path, what: str, path: Path) -> None:
    """Refuse ``path`` (an output of option ``what``) unless ``folder`` exists and is writable."""
    status = _status(folder, what)
    if status is None or not stat.S_ISDIR(status.st_mode):
        raise OutputProblem(f"{what} {path}: folder {folder} does not exist; create it first.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputProblem(f"{what} {path}: folder {folder} is not writable; choose another.")


def check_path_length(path: Path, what: str) -> None:
    """Refuse a name longer than the file system takes (NAME_MAX, 255 bytes on most) or a path
    longer than PATH_MAX, in one sentence, before any work: writing would fail at the end."""
    name_max, path_max = _limits(path.parent)
    for part in path.parts:
        length = len(os.fsencode(part))
        if length > name_max:
            kind = "file name" if part == path.name else "folder name"
            # The name given is not one this system can hold: a bad value (exit 3), not a
            # place that cannot be written (5).
            raise AttnvizError(
                f"{what}: the {kind} {_abridged(part)} is {length} bytes long; this file "
                f"system takes at most {name_max}. Choose a shorter name.",
                ExitStatus.BAD_INPUT,
            )
    longest = max(
        len(os.fsencode(str(path))), len(os.fsencode(str(path.parent))) + 1 + _TEMPORARY_NAME_BYTES
    )
    if longest >= path_max:
        raise AttnvizError(
            f"{what}: the path {_abridged(str(path))} is {longest} bytes long with its temporary "
            f"name; this system takes under {path_max}. Choose a shorter path.",
            ExitStatus.BAD_INPUT,
        )


def _limits(folder: Path) -> tuple[int, int]:
    """NAME_MAX and PATH_MAX for files in ``folder``; the usual 255 and 4096 where the system
    cannot say (no pathconf, or a folder that does not exist: refused later, by name)."""
    limits = []
    for name, usual in (("PC_NAME_MAX", 255), ("PC_PATH_MAX", 4096)):
        try:
            limit = os.pathconf(folder, name)
        except (AttributeError, OSError, ValueError):
            limit = -1
        limits.append(limit if limit > 0 else usual)
    return limits[0], limits[1]


def _abridged(text: str, keep: int = 24) -> str:
    """A long name shown by its two ends, so the message stays one readable line."""
    return repr(text) if len(text) <= 2 * keep else repr(f"{text[:keep]}…{text[-keep:]}")


def _status(path: Path, what: str) -> os.stat_result | None:
    """``os.stat(path)``, or None when nothing is there; any other problem (a name too long, a
    folder that may not be entered) as an OutputProblem."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise OutputProblem(f"{what} {path}: {error.strerror or error}.") from None


class Outputs:
    """The files of one run, written all or nothing.

    Each output is written to a temporary file beside it; ``commit`` renames them all into
    place at the end. If anything fails or stops the run first (a full disk on the second file,
    Ctrl-C, SIGTERM), the temporaries are removed and none of the person's files changes; if a
    rename itself fails, the files already renamed are put back (each old file was kept under a
    second name, a hard link, until the commit is done). A replaced file keeps its mode.
    """

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []  # (temporary, output)
        self._made: list[Path] = []  # folders this run created: removed if it fails
        self.open = True

    def write(self, path: Path, write: Callable[[Path], object]) -> None:
        """Call ``write(temporary)`` on a new temporary file beside ``path``; it becomes ``path``
        when the outputs are committed. An OSError becomes an OutputProblem naming ``path``."""
        mode = _mode_for(path)
        with signals_held():  # so that a temporary made is a temporary recorded
            temporary = _temporary_beside(path)
            self._staged.append((temporary, path))
        try:
            write(temporary)
            os.chmod(temporary, mode)
        except BaseException as error:
            with signals_held():
                self._staged.remove((temporary, path))
                temporary.unlink(missing_ok=True)
            if isinstance(error, OSError):
                raise OutputProblem(f"Cannot write {path}: {error.strerror or error}.") from None
            raise

    def make_folder(self, folder: Path) -> None:
        """Create ``folder`` if it is missing; removed again if the run fails."""
        try:
            folder.mkdir()
        except FileExistsError:
            return
        except OSError as error:
            raise OutputProblem(f"Cannot create {folder}: {error.strerror or error}.") from None
        self._made.append(folder)

    def commit(self) -> None:
        """Rename every temporary onto its output, as one step that signals do not cut short."""
        with signals_held():
            self.open = False
            kept = [(_linked_backup(path), os.path.lexists(path)) for _, path in self._staged]
            # An old file that could not be kept (no hard links here) is replaced last: a
            # failure before it leaves it as it was.
            order = sorted(range(len(kept)), key=lambda i: kept[i][0] is None and kept[i][1])
            renamed: list[int] = []
            try:
                for index in order:
                    os.replace(*self._staged[index])
                    renamed.append(index)
            except OSError as error:
                for index in reversed(renamed):  # put back what was there
                    backup, existed = kept[index]
                    path = self._staged[index][1]
                    with suppress(OSError):  # cleanup goes on past a file it cannot remove
                        if backup is not None:
                            os.replace(backup, path)
                        elif not existed:
                            path.unlink()
                failed = self._staged[order[len(renamed)]][1]
                lost = sum(kept[index] == (None, True) for index in renamed)
                self._discard(backup for backup, _ in kept)
                self.abort()  # the temporaries not renamed, the folders made
                outcome = (
                    f"{lost} replaced file(s) could not be put back (no hard links here)"
                    if lost
                    else "no output was changed"
                )
                raise OutputProblem(
                    f"Cannot write {failed}: {error.strerror or error}; {outcome}."
                ) from None
            self._staged = []
            self._made = []
            self._discard(backup for backup, _ in kept)

    def abort(self) -> None:
        """Remove the temporaries, and the folders this run created if they are empty."""
        with signals_held():
            self.open = False
            self._discard(temporary for temporary, _ in self._staged)
            for folder in reversed(self._made):
                with suppress(OSError):
                    folder.rmdir()
            self._staged = []
            self._made = []

    def _discard(self, paths: Iterable[Path | None]) -> None:
        for path in paths:
            if path is not None:
                with suppress(OSError):
                    path.unlink(missing_ok=True)


_OPEN_OUTPUTS: ContextVar[Outputs | None] = ContextVar("attnviz_outputs", default=None)


@contextmanager
def staged_writes() -> Iterator[Outputs]:
    """The outputs of one run, all or nothing: every atomic_write inside the block is staged and
    renamed into place when the block ends without an error; on an error, Ctrl-C, SIGTERM or
    SIGHUP (which raise here rather than end the process), none is. Nested blocks join the
    outermost, so a command wraps its work once and every writer below takes part.
    """
    outer = _OPEN_OUTPUTS.get()
    if outer is not None and outer.open:
        yield outer
        return
    outputs = Outputs()
    token = _OPEN_OUTPUTS.set(outputs)
    try:
        with stopping_signals_raise():
            try:
                yield outputs
            except BaseException:
                outputs.abort()
                raise
            outputs.commit()
    finally:
        _OPEN_OUTPUTS.reset(token)


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Call ``write(temporary_path)`` and rename the result onto ``path``: ``path`` is either
    untouched or complete, never half written. Inside staged_writes() the rename waits for the
    run's other outputs (all or nothing); outside, it is done at once."""
    with staged_writes() as outputs:
        outputs.write(path, write)


def _temporary_beside(path: Path) -> Path:
    """A new, empty, private (0600) file in ``path``'s folder, so the rename is atomic."""
    import tempfile

    try:
        handle, name = tempfile.mkstemp(
            dir=path.parent, prefix=TEMPORARY_PREFIX, suffix=TEMPORARY_SUFFIX
        )
    except OSError as error:
        raise OutputProblem(f"Cannot write {path}: {error.strerror or error}.") from None
    os.close(handle)
    return Path(name)


def _mode_for(path: Path) -> int:
    """The mode an output gets: the replaced file's (0600 stays 0600), or 0666 less the umask
    for a new one, as open() would give it (mkstemp's temporary is 0600)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode) & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _linked_backup(path: Path) -> Path | None:
    """A second name (a hard link beside it) for the file at ``path``, so that a failed commit
    can put it back; None when there is no file, or the file system has no hard links."""
    import secrets

    for _ in range(16):
        backup = path.parent / f"{TEMPORARY_PREFIX}{secrets.token_hex(4)}.old"
        try:
            os.link(path, backup, follow_symlinks=False)
        except FileExistsError:
            continue
        except OSError:
            return None
        return backup
    return None
