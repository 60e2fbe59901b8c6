"""`attnviz --install-completion` with a home that cannot take it: one line naming the problem,
exit 5, no traceback, and nothing made or changed; with a home that can, Typer's install.

The shell is named (bash), not detected, so that the tests do not depend on what runs them. As
root every file may be written, so the cases that hold for root are ones of kind (a folder
where a file goes, a home that is a file or missing, a link to nowhere), and a ~/.bashrc the
system refuses to write (its open faked to fail as it fails for a user without write
permission); a really read-only ~/.bashrc is tried too where permissions stop this user."""

from __future__ import annotations

import errno
import io
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from attnviz.cli import run
from attnviz.errors import ExitStatus

from support import listing


def bashrc_folder(home: Path) -> Path:
    (home / ".bashrc").mkdir(parents=True)
    return home


def home_is_a_file(home: Path) -> Path:
    home.parent.mkdir(parents=True, exist_ok=True)
    home.write_text("not a folder\n")
    return home


def home_missing(home: Path) -> Path:
    return home


def bashrc_link_to_nowhere(home: Path) -> Path:
    home.mkdir(parents=True)
    (home / ".bashrc").symlink_to(home / "missing" / "bashrc")
    return home


def bashrc_read_only(home: Path) -> Path:
    home.mkdir(parents=True)
    (home / ".bashrc").write_text("# mine\n")
    (home / ".bashrc").chmod(0o444)
    return home


HOMES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "a ~/.bashrc that is a folder": (bashrc_folder, ".bashrc: Is a directory"),
    "HOME a file": (home_is_a_file, "is not a folder"),
    "HOME missing": (home_missing, "does not exist"),
    "a ~/.bashrc linking to nowhere": (bashrc_link_to_nowhere, "No such file or directory"),
}
if os.geteuid() != 0:  # root writes a read-only file: see the test after this one
    HOMES["a read-only ~/.bashrc"] = (bashrc_read_only, ".bashrc: Permission denied")


@pytest.mark.parametrize("case", sorted(HOMES))
def test_a_home_that_cannot_take_completion_is_one_line_and_exit_5(
    case: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    make, problem = HOMES[case]
    home = make(tmp_path / "home")
    before = listing(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    assert run(["--install-completion", "bash"]) == ExitStatus.CANNOT_WRITE
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error: Cannot install completion: ") and problem in lines[0]
    assert "attnviz --show-completion" in lines[0] and not captured.out
    assert listing(tmp_path) == before  # nothing made, nothing changed
    assert home.exists() == (case != "HOME missing")


def test_a_bashrc_the_system_will_not_write_is_one_line_and_exit_5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A read-only ~/.bashrc as anyone but root meets it, whoever runs the tests: opening it
    for writing fails with EACCES, as chmod 444 makes it fail (root writes it regardless)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# mine\n")
    real_open = io.open

    def refusing(file: object, mode: str = "r", *args: object, **kwargs: object) -> object:
        if os.fspath(file) == str(home / ".bashrc") and "r" not in mode:  # type: ignore[call-overload]
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(file))  # type: ignore[call-overload]
        return real_open(file, mode, *args, **kwargs)  # type: ignore[call-overload]

    before = listing(tmp_path)
    monkeypatch.setattr(io, "open", refusing)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    assert run(["--install-completion", "bash"]) == ExitStatus.CANNOT_WRITE
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error: Cannot install completion: "), lines[0]
    assert f"{home / '.bashrc'}: Permission denied" in lines[0] and not captured.out
    assert listing(tmp_path) == before  # the script is written only after the .bashrc
    assert (home / ".bashrc").read_text() == "# mine\n"


def test_a_home_that_can_take_it_gets_typers_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    with pytest.raises(SystemExit) as exited:  # Typer's own exit, which the command ends with
        run(["--install-completion", "bash"])
    assert exited.value.code == 0
    assert "completion installed in" in capsys.readouterr().out
    assert "source" in (tmp_path / ".bashrc").read_text()
    assert len(list((tmp_path / ".bash_completions").glob("*.sh"))) == 1


@pytest.mark.parametrize(
    ("home", "problem"),
    [
        ("", "HOME is set but empty"),  # Python reads it as /: Typer would write /.bashrc
        (" ", "HOME is set but empty"),
        ("relative/home", "is not an absolute path"),
        ("{tmp}/it's", 'holds "\'"'),  # would end the single quotes of `source '…'`
        ("{tmp}/x '$(touch {tmp}/ran)'", "holds '$' \"'\""),
        ("{tmp}/a`b", "holds '`'"),
        ("{tmp}/a\\b", "holds '\\\\'"),
        ("{tmp}/a\nb", "holds '\\n'"),
    ],
)
def test_a_home_a_shell_would_misread_is_refused_before_anything_is_written(
    home: str,
    problem: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = home.format(tmp=tmp_path)
    if path.startswith(str(tmp_path)):
        Path(path).mkdir(parents=True)
    monkeypatch.chdir(tmp_path)  # a relative home would be made here
    before = listing(tmp_path)
    monkeypatch.setenv("HOME", path)
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    assert run(["--install-completion", "bash"]) == ExitStatus.CANNOT_WRITE
    captured = capsys.readouterr()
    assert len(captured.err.splitlines()) == 1, captured.err
    assert problem in captured.err and not captured.out
    assert listing(tmp_path) == before  # no .bashrc, no .bash_completions, nothing ran
    assert not (tmp_path / "ran").exists()
