"""The process's surroundings, made safe before a command runs: output streams that cannot encode
every character the lesson uses, a standard output that is full or closed, an MPLBACKEND that
matplotlib refuses. Each either works or ends in one line on stderr and a named exit code."""

# No `from __future__ import annotations`: this module is imported by the command line, whose
# annotations Typer reads.
import codecs
import errno
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class StandardOutputFailed(Exception):
    """Writing to standard output failed (a full disk, a closed descriptor); not an OSError, so
    that click's own handling of a closed pipe does not take it for one."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.reason = error.strerror or str(error)


class StandardOutputClosed(Exception):
    """Standard output's reader has stopped reading (``attnviz explain … | head -1``): EPIPE.
    Not an OSError, so that neither click's handling of one (exit 1) nor a file's takes it."""


class _GuardedOutput:
    """sys.stdout, whose failures to write are told apart from every other OSError: they become
    StandardOutputFailed, or StandardOutputClosed when the reader of a pipe has gone."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is None:  # started with standard output closed (>&-)
            raise StandardOutputFailed(OSError(errno.EBADF, "it is closed"))
        try:
            return int(self._stream.write(text))
        except OSError as error:
            if error.errno == errno.EPIPE:
                raise StandardOutputClosed from None
            raise StandardOutputFailed(error) from None

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except OSError as error:
            if error.errno == errno.EPIPE:
                raise StandardOutputClosed from None
            raise StandardOutputFailed(error) from None

    def isatty(self) -> bool:
        return self._stream is not None and bool(self._stream.isatty())

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


class _QuietErrors:
    """sys.stderr, whose failures to write (2>/dev/full, a closed pipe) are dropped: the
    messages have nowhere to go, and a run whose outputs were written should not fail, nor a
    refusal change its exit status, because its messages could not be shown. After the first
    failure the descriptor is pointed at /dev/null, so that Python's flush at exit is quiet."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except OSError:
            _silence(self._stream)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError:
            _silence(self._stream)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _point_at_devnull(stream: Any) -> None:
    """Make ``stream``'s file descriptor /dev/null (OSError and the like when it has none)."""
    descriptor = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(descriptor, stream.fileno())
    finally:
        os.close(descriptor)


def _silence(stream: Any) -> None:
    """Point ``stream``'s descriptor at /dev/null and drop what its buffer still holds."""
    try:
        _point_at_devnull(stream)
        stream.flush()  # the buffer's leftovers, now to /dev/null
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass


@contextmanager
def safe_surroundings() -> Iterator[None]:
    """Run a command with its surroundings made safe; sys.stdout is restored afterwards."""
    # attnviz draws on matplotlib's Agg canvas directly and never through pyplot, so the backend
    # MPLBACKEND names is never used; but `import matplotlib` refuses an unknown one.
    os.environ.pop("MPLBACKEND", None)
    matplotlib_folders_writable()
    for stream in (sys.stdout, sys.stderr):
        _escape_what_cannot_be_encoded(stream)
    if sys.stderr is None:  # started with stderr closed (2>&-): messages have nowhere to go
        sys.stderr = io.StringIO()
    original = sys.stdout
    sys.stdout = _GuardedOutput(original)
    try:
        yield
    finally:
        # Kept when standard output is closed, so that a flush before an error line is harmless.
        if isinstance(sys.stdout, _GuardedOutput) and original is not None:
            sys.stdout = original


@contextmanager
def quiet_standard_error() -> Iterator[None]:
    """Within the block, a standard error that cannot be written drops the messages instead of
    failing the run (_QuietErrors); sys.stderr is restored afterwards."""
    errors = sys.stderr
    if errors is not None:
        sys.stderr = _QuietErrors(errors)
    try:
        yield
    finally:
        if isinstance(sys.stderr, _QuietErrors):
            sys.stderr = errors


def hold_standard_descriptors() -> None:
    """Open /dev/null on standard input, output or error if one was closed (<&-, >&-, 2>&-),
    so that no file attnviz writes is given descriptor 0, 1 or 2, where a library's message to
    the closed stream would land inside it."""
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            try:
                opened = os.open(os.devnull, os.O_RDWR)
            except OSError:
                return
            if opened != descriptor:  # the lowest free descriptor: this one, unless taken
                os.dup2(opened, descriptor)
                os.close(opened)


def _escape_what_cannot_be_encoded(stream: Any) -> None:
    """A stream whose encoding is not UTF (PYTHONIOENCODING=ascii, a POSIX locale without UTF-8
    mode) writes a character it cannot encode as an escape (√ as \\u221a) instead of failing
    on the lesson's first "·"; Rich draws its tables in ASCII there by itself."""
    encoding = getattr(stream, "encoding", None)
    if not encoding or not isinstance(stream, io.TextIOWrapper):
        return
    try:
        unicode = codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        unicode = False
    if not unicode:
        stream.reconfigure(errors="backslashreplace")


def silence_standard_output() -> None:
    """Point standard output at /dev/null after it failed, so that what is still in its buffer
    does not fail again, with a traceback, when Python flushes it on exit."""
    stream = sys.__stdout__
    if stream is None or sys.stdout is not stream:  # closed, or a test's capture
        return
    try:
        _point_at_devnull(stream)
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def matplotlib_folders_writable() -> None:
    """Point MPLCONFIGDIR at a temporary folder, removed at exit, when matplotlib's own folders
    (~/.config/matplotlib and ~/.cache/matplotlib, or $XDG_CONFIG_HOME's and $XDG_CACHE_HOME's)
    cannot be written (a read-only HOME, a container's user without one): matplotlib would
    otherwise warn about it in four lines on stderr, or fail to find a home at all. Decided
    from the folders alone, before matplotlib is imported; `attnviz explain` never imports it."""
    if os.environ.get("MPLCONFIGDIR"):
        return
    if all(folder is not None and _can_be_written(folder) for folder in _matplotlib_folders()):
        return
    import atexit
    import shutil
    import tempfile

    temporary = tempfile.mkdtemp(prefix="attnviz-matplotlib-")
    atexit.register(shutil.rmtree, temporary, ignore_errors=True)
    os.environ["MPLCONFIGDIR"] = temporary


def _matplotlib_folders() -> list[Path | None]:
    """The folders matplotlib keeps its settings and font cache in, as it finds them (None: it
    would find no home to put them in)."""
    try:
        home: Path | None = Path.home()
    except (RuntimeError, KeyError, OSError):  # HOME unset and no entry in the passwd file
        home = None
    if not sys.platform.startswith(("linux", "freebsd")):
        return [None if home is None else home / ".matplotlib"]
    folders: list[Path | None] = []
    for variable, default in (("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache")):
        base = os.environ.get(variable) or (None if home is None else home / default)
        folders.append(None if base is None else Path(base, "matplotlib"))
    return folders


def _can_be_written(folder: Path) -> bool:
    """Whether ``folder`` is a folder this process can write in, or can be made in the nearest
    folder above it that exists."""
    try:
        for existing in (folder, *folder.parents):
            if existing.exists():
                return existing.is_dir() and os.access(existing, os.W_OK | os.X_OK)
    except OSError:
        return False
    return False


#: The options of the attnviz command itself, before a command's name.
_ROOT_OPTIONS = ("--install-completion", "--show-completion", "--version", "--help")


@contextmanager
def completion_installed_safely(arguments: list[str]) -> Iterator[None]:
    """``attnviz --install-completion``, Typer's, with a home that cannot take it (HOME unset,
    missing or a file; a ~/.bashrc or ~/.zshrc that is a folder or read-only; a home that may
    not be written): one line and exit 5 (ExitStatus.CANNOT_WRITE), not a traceback. Typer
    would also make a missing HOME, with every folder above it."""
    from attnviz.errors import OutputProblem
    from attnviz.tokens import printable

    leading = []
    for argument in arguments:
        if argument not in _ROOT_OPTIONS:
            break
        leading.append(argument)
    if "--install-completion" not in leading:
        yield
        return
    fix = "fix that, or add the output of attnviz --show-completion to your shell's start-up file"
    try:
        home = Path.home()
    except (RuntimeError, KeyError, OSError):  # HOME unset and no entry in the passwd file
        raise OutputProblem(f"Cannot install completion: there is no home folder; {fix}.") from None
    set_home = os.environ.get("HOME")
    if set_home is not None and not set_home.strip():  # Python reads HOME="" as /
        raise OutputProblem(f"Cannot install completion: HOME is set but empty; {fix}.")
    if not home.is_absolute():
        raise OutputProblem(
            f"Cannot install completion: HOME {printable(str(home))!r} is not an absolute "
            f"path; {fix}."
        )
    # Typer writes the path into the start-up file between single quotes: a quote, $, ` or
    # backslash in it would end them and the shell would run the rest at every start.
    unsafe = sorted({c for c in str(home) if c in "'\"$`\\" or not c.isprintable()})
    if unsafe:
        shown = " ".join(repr(c) for c in unsafe)
        raise OutputProblem(
            f"Cannot install completion: HOME {printable(str(home))!r} holds {shown}, which a "
            f"shell would not read as part of a path in its start-up file; {fix}."
        )
    if not home.is_dir():
        kind = "does not exist" if not home.exists() else "is not a folder"
        raise OutputProblem(f"Cannot install completion: HOME {home} {kind}; {fix}.")
    import subprocess

    try:
        yield
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        problem = error.strerror or str(error)
        raise OutputProblem(f"Cannot install completion: {where}{problem}; {fix}.") from None
    except subprocess.CalledProcessError as error:  # PowerShell could not say its profile
        raise OutputProblem(f"Cannot install completion: {error}; {fix}.") from None
