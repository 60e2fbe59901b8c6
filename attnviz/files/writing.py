"""Writing: output paths checked before the work, then every output written all or nothing.

Writing goes to a temporary file in the same folder and is renamed into place, so a failed or
interrupted run leaves no half-written file; within staged_writes(), a run's outputs are renamed
together at the end, so a failure (or SIGTERM) on one leaves every file as it was. A name a
rename would not write as "wrote" says (a link, a file with other names or another owner) is
refused, before the work and again before the renames (files.replacing). Every problem
becomes an OutputProblem (or, for a name the system cannot hold, an AttnvizError) whose message
names the file and the fix.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path

from attnviz.errors import AttnvizError, ExitStatus, OutputProblem
from attnviz.files.replacing import link_refusal, output_key, refuse_replacing
from attnviz.files.working_folder import refuse_if_gone
from attnviz.signals import signals_held, stopping_signals_raise

#: A temporary output is named .attnviz-XXXXXXXX.tmp beside its file: hidden, and short, so an
#: output name as long as the file system allows still leaves room for it.
TEMPORARY_PREFIX = ".attnviz-"
TEMPORARY_SUFFIX = ".tmp"
_TEMPORARY_NAME_BYTES = len(TEMPORARY_PREFIX) + 8 + len(TEMPORARY_SUFFIX)  # mkstemp adds 8


def kind_of_path(mode: int) -> str:
    """What a path that is not a folder is, in words: "a file", "a FIFO", …"""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a file"


def check_output_path(path: Path, extensions: Iterable[str], what: str) -> str:
    """Check that ``path`` can be written and has a known extension; return the extension.

    Called before any computation, so a bad path fails fast and nothing is written.
    """
    allowed = tuple(extensions)
    if str(path) in ("", "."):
        raise OutputProblem(
            f"{what} names no file (empty, or the current folder); give a file name, e.g. "
            f"out{allowed[0]}."
        )
    refuse_if_gone(path, what)
    extension = path.suffix.lower()
    check_path_length(path, what)
    status = _status(path, what, follow_links=False)
    if status is not None and stat.S_ISLNK(status.st_mode):
        raise OutputProblem(link_refusal(path, what))
    if status is not None and stat.S_ISDIR(status.st_mode):
        example = path / f"out{allowed[0]}"
        raise OutputProblem(f"{what} {path} is a folder; give a file name in it, e.g. {example}.")
    if extension not in allowed:
        raise OutputProblem(
            f"{what} {path}: unknown extension {extension or '(none)'!r}; "
            + (f"use {allowed[0]}." if len(allowed) == 1 else f"use one of {', '.join(allowed)}.")
        )
    # A link, a device, a FIFO, a file with other names or another owner: a rename would not
    # write what "wrote" says (files.replacing).
    status = refuse_replacing(path, what)
    check_writable_folder(path.parent, what, path)
    if status is not None and not os.access(path, os.W_OK):
        raise OutputProblem(f"{what} {path} exists and is read-only; choose another name.")
    return extension


def check_writable_folder(folder: Path, what: str, path: Path) -> None:
    """Refuse ``path`` (an output of option ``what``) unless ``folder`` exists and is writable."""
    refuse_if_gone(folder, what)
    status = _status(folder, what)
    if status is not None and not stat.S_ISDIR(status.st_mode):
        kind = kind_of_path(status.st_mode)
        raise OutputProblem(f"{what} {path}: {folder} is {kind}, not a folder; give a path in one.")
    if status is None:
        missing, in_the_way = _first_missing(folder)
        if in_the_way is not None:  # a file on the way: f.txt/../x.png
            raise OutputProblem(
                f"{what} {path}: {missing} is {in_the_way}, not a folder; give a path in one."
            )
        raise OutputProblem(f"{what} {path}: folder {missing} does not exist; create it first.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputProblem(f"{what} {path}: folder {folder} is not writable; choose another.")


def _first_missing(folder: Path) -> tuple[Path, str | None]:
    """The first part of ``folder``, from its start, that is not there (and None), or that is
    there but is not a folder (and what it is): the system stops at it, whatever follows
    (nodir/.. and f.txt/.. name no folder, though their last part is "..")."""
    parts = folder.parts
    for end in range(1, len(parts) + 1):
        prefix = Path(*parts[:end])
        try:
            mode = os.stat(prefix).st_mode
        except OSError:
            return prefix, None
        if not stat.S_ISDIR(mode):
            return prefix, kind_of_path(mode)
    return folder, None


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


def _status(path: Path, what: str, *, follow_links: bool = True) -> os.stat_result | None:
    """``os.stat(path)``, or None when nothing is there; any other problem (a name too long, a
    folder that may not be entered) as an OutputProblem."""
    try:
        return os.stat(path, follow_symlinks=follow_links)
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
        self._keys: dict[tuple[str, str], Path] = {}  # where each output goes: files.replacing
        self._made: list[Path] = []  # folders this run created: removed if it fails
        self.open = True

    def write(self, path: Path, write: Callable[[Path], object]) -> None:
        """Call ``write(temporary)`` on a new temporary file beside ``path``; it becomes ``path``
        when the outputs are committed. An OSError becomes an OutputProblem naming ``path``."""
        refuse_if_gone(path, "The output")  # checked before the work; again, as it is now
        refuse_replacing(path, "The output")
        earlier = self._keys.get(output_key(path))
        if earlier is not None:
            also = "" if earlier == path else f" (also as {earlier})"
            raise OutputProblem(
                f"{path} would be written twice in one run{also}; give each output its own name."
            )
        mode = _mode_for(path)
        with signals_held():  # so that a temporary made is a temporary recorded
            temporary = _temporary_beside(path)
            self._staged.append((temporary, path))
            self._keys[output_key(path)] = path
        try:
            write(temporary)
            os.chmod(temporary, mode)
        except BaseException as error:
            with signals_held():
                self._staged.remove((temporary, path))
                self._keys.pop(output_key(path), None)
                temporary.unlink(missing_ok=True)
            if isinstance(error, OSError):
                raise OutputProblem(f"Cannot write {path}: {error.strerror or error}.") from None
            raise

    def make_folder(self, folder: Path) -> None:
        """Create ``folder`` if it is missing; removed again if the run fails."""
        refuse_if_gone(folder, "The folder")
        try:
            folder.mkdir()
        except FileExistsError:
            if folder.is_dir():
                return
            raise OutputProblem(
                f"Cannot create {folder}: a file or a broken link is there; give another folder."
            ) from None
        except OSError as error:
            raise OutputProblem(f"Cannot create {folder}: {error.strerror or error}.") from None
        self._made.append(folder)

    def commit(self) -> None:
        """Rename every temporary onto its output, as one step that signals do not cut short."""
        with signals_held():
            self.open = False
            try:  # what each name is now: a link put there during the work is not replaced
                for _, path in self._staged:
                    refuse_replacing(path, "The output")
            except OutputProblem:
                self.abort()
                raise
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
            self._keys = {}
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
            self._keys = {}
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
    renamed into place when the block ends without an error; on an error, Ctrl-C or a stopping
    signal (SIGTERM, SIGHUP, SIGQUIT, …: attnviz.signals, raised here rather than ending the
    process), none is. Nested blocks join the
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

    user = getattr(os, "geteuid", None)  # None on Windows
    try:
        owner = os.lstat(path).st_uid
    except OSError:
        return None
    if user is not None and owner != user():
        # Another user's file (refused before the work; it may have changed since): a link to
        # it might not be removable again, in a sticky folder such as /tmp.
        return None
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
