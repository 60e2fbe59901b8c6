"""attnviz.cli.environment: a standard output that fails is told apart from other OSErrors, a
closed pipe from both (it ends in silence and 141), MPLBACKEND is dropped, and sys.stdout is
restored afterwards; and what a POSIX locale leaves of a UTF-8 argument is read back as typed
(cli.options.typed_text). The same surroundings, in fresh processes:
tests/e2e/test_surroundings.py."""

from __future__ import annotations

import errno
import io
import os
import sys
from pathlib import Path

import pytest

from attnviz.cli import run
from attnviz.cli.environment import (
    StandardOutputClosed,
    StandardOutputFailed,
    _GuardedOutput,
    safe_surroundings,
)
from attnviz.cli.options import typed_text
from attnviz.errors import ExitStatus


class Failing(io.StringIO):
    """A stream whose writes fail with ``code``."""

    def __init__(self, code: int) -> None:
        super().__init__()
        self.code = code

    def write(self, text: str) -> int:
        raise OSError(self.code, "No space left on device" if self.code == errno.ENOSPC else "x")


def test_a_full_or_closed_standard_output_becomes_one_named_failure() -> None:
    with pytest.raises(StandardOutputFailed) as failed:
        _GuardedOutput(Failing(errno.ENOSPC)).write("lesson")
    assert failed.value.reason == "No space left on device"
    assert not isinstance(failed.value, OSError)  # so click does not take it for a closed pipe
    with pytest.raises(StandardOutputFailed, match="it is closed"):
        _GuardedOutput(None).write("lesson")
    closed = _GuardedOutput(None)
    closed.flush()  # nothing to flush: no second failure on the way out
    assert not closed.isatty()


class FailingFlush(io.StringIO):
    """A stream that takes every write and fails to flush with EPIPE."""

    def flush(self) -> None:
        raise OSError(errno.EPIPE, "Broken pipe")


def test_a_closed_pipe_is_neither_an_os_error_nor_a_failure_to_write() -> None:
    """Not an OSError: click would end it with 1 (and a file's handling could take it)."""
    for failing in (
        lambda: _GuardedOutput(Failing(errno.EPIPE)).write("lesson"),
        lambda: _GuardedOutput(FailingFlush()).flush(),
    ):
        with pytest.raises(StandardOutputClosed) as broken:
            failing()
        assert not isinstance(broken.value, (OSError, StandardOutputFailed))


@pytest.mark.parametrize("stream", [Failing(errno.EPIPE), FailingFlush()])
def test_a_command_whose_reader_stopped_reading_ends_silently_with_141(
    stream: io.StringIO, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", stream)
    assert run(["explain", "I am good"]) == ExitStatus.PIPE_CLOSED == 141
    assert capsys.readouterr().err == ""


def test_the_surroundings_are_made_safe_and_stdout_is_put_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MPLBACKEND", "bogus")
    before = sys.stdout
    with safe_surroundings():
        assert isinstance(sys.stdout, _GuardedOutput)
        assert "MPLBACKEND" not in os.environ  # matplotlib would refuse an unknown backend
    assert sys.stdout is before


def test_typed_text_decodes_utf8_bytes_and_keeps_the_others() -> None:
    assert typed_text("na\udcc3\udcafve") == "naïve"  # the bytes of "ï", as LC_ALL=C leaves them
    assert typed_text("caf\udce9") == "caf\udce9"  # Latin-1 "é": not UTF-8, kept as it is
    assert typed_text("naïve") == "naïve" and typed_text(None) is None


def test_matplotlib_gets_a_temporary_folder_when_its_own_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only HOME (here: XDG folders that are files, which root cannot write in either)
    would make matplotlib warn in four lines; HOME unknown would make it fail."""
    from attnviz.cli.environment import matplotlib_folders_writable

    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    matplotlib_folders_writable()
    assert "MPLCONFIGDIR" not in os.environ  # folders that can be made: matplotlib's own
    assert not (tmp_path / "config").exists()  # and nothing made before matplotlib needs it

    (tmp_path / "blocked").write_text("a file, not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "blocked"))
    matplotlib_folders_writable()
    temporary = Path(os.environ["MPLCONFIGDIR"])
    assert temporary.is_dir() and temporary.name.startswith("attnviz-matplotlib-")

    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "chosen"))  # the person's choice stays
    matplotlib_folders_writable()
    assert os.environ["MPLCONFIGDIR"] == str(tmp_path / "chosen")


def test_matplotlib_gets_a_temporary_folder_without_a_home(monkeypatch: pytest.MonkeyPatch) -> None:
    from attnviz.cli.environment import matplotlib_folders_writable

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", no_home)
    matplotlib_folders_writable()
    assert Path(os.environ["MPLCONFIGDIR"]).is_dir()
