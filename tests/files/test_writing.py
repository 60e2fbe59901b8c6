"""Atomic writes: a failed or interrupted write leaves the old file as it was and no debris."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from attnviz.cli import run
from attnviz.errors import ExitStatus, OutputProblem
from attnviz.files import atomic_write


def half_written(path: Path, error: BaseException) -> None:
    path.write_bytes(b"half of a fi")
    raise error


def test_a_complete_write_replaces_the_file_with_ordinary_permissions(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    atomic_write(target, lambda path: path.write_bytes(b"new and complete"))
    assert target.read_bytes() == b"new and complete"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's private 0600
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


@pytest.mark.parametrize("error", [RuntimeError("disk on fire"), KeyboardInterrupt()])
def test_a_failed_or_interrupted_write_keeps_the_old_file_and_leaves_nothing(
    tmp_path: Path, error: BaseException
) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(type(error)):
        atomic_write(target, lambda path: half_written(path, error))
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_an_os_error_becomes_one_message(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    with pytest.raises(OutputProblem, match=r"Cannot write .*out.bin: No space left"):
        atomic_write(
            target, lambda path: half_written(path, OSError(28, "No space left on device"))
        )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("extension", [".npz", ".json"])
def test_ctrl_c_during_an_export_keeps_the_previous_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extension: str
) -> None:
    target = tmp_path / f"trace{extension}"
    assert run(["explain", "I am good", "--export", str(target)]) == 0
    before = target.read_bytes()

    def interrupted(temporary: Path, *args: object, **kwargs: object) -> None:
        half_written(temporary, KeyboardInterrupt())

    monkeypatch.setattr(Path, "write_text", interrupted)
    monkeypatch.setattr(
        np, "savez", lambda handle, **arrays: half_written(Path(handle.name), KeyboardInterrupt())
    )
    status = run(["explain", "I am good", "--seed", "7", "--export", str(target)])
    assert status == ExitStatus.INTERRUPTED
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("f.txt/../x.png", "f.txt is a file, not a folder; give a path in one."),
        ("nodir/../x.png", "folder nodir does not exist; create it first."),
        ("a/b/c.png", "folder a does not exist; create it first."),
    ],
)
def test_the_part_of_a_path_that_stops_the_system_is_the_one_named(
    given: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The system resolves a path part by part, ".." included: f.txt/.. names no folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.txt").write_text("a file")
    assert run(["heatmap", "I am good", "-o", given]) == ExitStatus.CANNOT_WRITE
    assert capsys.readouterr().err == f"error: --output {given}: {message}\n"
    assert sorted(os.listdir(tmp_path)) == ["f.txt"]
