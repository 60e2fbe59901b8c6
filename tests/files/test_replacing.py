"""attnviz.files.replacing: an output name that a rename would not write as "wrote" says (a
symbolic link, dangling or to /proc/self/fd/1, a file with a second hard link, another user's
file) is refused before any work, and what it names is left exactly as it was; the same check
again when the file is staged; and no .old hard link is left where it could not be removed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attnviz.cli import run
from attnviz.errors import ExitStatus, OutputProblem
from attnviz.files import check_output_path, staged_writes
from attnviz.files.replacing import output_key, refuse_replacing, same_file

from support import listing, one_error_line

SENTENCE = "I am good"

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")


def links(folder: Path) -> dict[str, str]:
    """Every symbolic link in ``folder`` and where it points."""
    return {path.name: os.readlink(path) for path in folder.iterdir() if path.is_symlink()}


@pytest.mark.parametrize(
    ("target", "missing"), [("t.png", False), ("nowhere.png", True), ("/proc/self/fd/1", False)]
)
def test_an_output_that_is_a_symbolic_link_is_refused_and_its_target_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, missing: bool
) -> None:
    (tmp_path / "t.png").write_bytes(b"the target")
    link = tmp_path / "link.png"
    link.symlink_to(target)
    before, pointing = listing(tmp_path), links(tmp_path)
    assert run(["heatmap", SENTENCE, "-o", str(link)]) == ExitStatus.CANNOT_WRITE
    captured = capsys.readouterr()
    line = one_error_line(captured.err, "link.png is a symbolic link to", target, "another name")
    assert ("which does not exist" in line) is missing
    assert captured.out == ""
    assert listing(tmp_path) == before and links(tmp_path) == pointing


def test_a_file_with_a_second_name_is_refused_and_both_names_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "a.svg"
    first.write_bytes(b"one file, two names")
    os.link(first, tmp_path / "b.svg")
    argv = ["explain", SENTENCE, "--svg", str(first)]
    assert run(argv) == ExitStatus.CANNOT_WRITE
    captured = capsys.readouterr()
    one_error_line(captured.err, "a.svg has 2 names (hard links)")
    assert captured.out == ""  # refused before the lesson
    assert os.path.samefile(first, tmp_path / "b.svg")  # still one file


def test_another_users_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    picture = tmp_path / "theirs.png"
    picture.write_bytes(b"their picture")
    owner = picture.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)  # as if it belonged to someone else
    assert run(["heatmap", SENTENCE, "-o", str(picture)]) == ExitStatus.CANNOT_WRITE
    one_error_line(capsys.readouterr().err, f"belongs to another user (uid {owner})")
    assert picture.read_bytes() == b"their picture"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_as_root_a_users_file_keeps_its_owner(tmp_path: Path) -> None:
    picture = tmp_path / "theirs.png"
    picture.write_bytes(b"their picture")
    os.chown(picture, 65534, 65534)
    with pytest.raises(OutputProblem, match="uid 65534"):
        check_output_path(picture, (".png",), "--output")
    assert picture.stat().st_uid == 65534 and picture.read_bytes() == b"their picture"


def test_a_link_put_in_place_after_the_check_is_refused_when_staged(tmp_path: Path) -> None:
    picture = tmp_path / "it.png"
    check_output_path(picture, (".png",), "--output")  # nothing there yet
    (tmp_path / "elsewhere.png").write_bytes(b"elsewhere")
    picture.symlink_to("elsewhere.png")  # in the time the work takes
    before = listing(tmp_path)
    with pytest.raises(OutputProblem, match="it.png is a symbolic link"):
        with staged_writes() as outputs:
            outputs.write(picture, lambda temporary: temporary.write_bytes(b"new"))
    assert listing(tmp_path) == before and picture.is_symlink()


def test_a_failed_rename_over_another_users_file_leaves_no_old_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sticky folder (/tmp): renaming onto another user's file fails, and a hard link made
    to keep it could not be removed again. The file is refused before the work, and again
    before the renames if it changed owner since; no link to it is ever made."""
    picture = tmp_path / "it.png"
    picture.write_bytes(b"old picture")
    before = listing(tmp_path)
    real_unlink = os.unlink

    def sticky_unlink(path: object, *args: object, **kwargs: object) -> None:
        if str(path).endswith(".old"):
            raise PermissionError(1, "Operation not permitted")
        real_unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    def refused_rename(source: object, destination: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    with pytest.raises(OutputProblem):
        with staged_writes() as outputs:
            outputs.write(picture, lambda temporary: temporary.write_bytes(b"new"))
            owner = picture.stat().st_uid
            monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
            monkeypatch.setattr(os, "unlink", sticky_unlink)
            monkeypatch.setattr(os, "replace", refused_rename)
    monkeypatch.undo()
    assert listing(tmp_path) == before  # no .attnviz-XXXXXXXX.old, no temporary


def test_one_output_by_two_spellings_is_one_key(tmp_path: Path) -> None:
    (tmp_path / "ph").mkdir()
    (tmp_path / "link").symlink_to("ph")
    spellings = [tmp_path / "ph" / "a.png", tmp_path / "ph" / "." / "a.png"]
    spellings.append(tmp_path / "link" / "a.png")
    assert len({output_key(path) for path in spellings}) == 1
    assert all(same_file(spellings[0], path) for path in spellings)
    assert not same_file(tmp_path / "ph" / "a.png", tmp_path / "ph" / "b.png")


def test_nothing_there_and_a_plain_file_of_ours_pass(tmp_path: Path) -> None:
    assert refuse_replacing(tmp_path / "new.png", "--output") is None
    (tmp_path / "mine.png").write_bytes(b"mine")
    status = refuse_replacing(tmp_path / "mine.png", "--output")
    assert status is not None and status.st_size == 4


def test_a_link_put_in_place_while_the_outputs_wait_changes_no_output(tmp_path: Path) -> None:
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    first.write_bytes(b"old a")
    (tmp_path / "elsewhere.svg").write_bytes(b"elsewhere")
    with pytest.raises(OutputProblem, match="b.svg is a symbolic link"):
        with staged_writes() as outputs:
            outputs.write(first, lambda temporary: temporary.write_bytes(b"new a"))
            outputs.write(second, lambda temporary: temporary.write_bytes(b"new b"))
            second.symlink_to("elsewhere.svg")  # after it was staged, before the renames
    assert first.read_bytes() == b"old a" and second.is_symlink()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.svg", "b.svg", "elsewhere.svg"]


def test_no_second_name_is_made_for_another_users_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from attnviz.files.writing import _linked_backup

    picture = tmp_path / "it.png"
    picture.write_bytes(b"old picture")
    mine = _linked_backup(picture)
    assert mine is not None and os.path.samefile(mine, picture)  # ours: kept for a rollback
    mine.unlink()
    owner = picture.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
    assert _linked_backup(picture) is None
    assert [path.name for path in tmp_path.iterdir()] == ["it.png"]


def test_a_second_name_left_by_a_killed_run_is_named_in_the_fix(tmp_path: Path) -> None:
    """SIGKILL cannot be caught: a run killed while renaming leaves the .old second name it
    kept; the refusal says which file to remove."""
    picture = tmp_path / "it.png"
    picture.write_bytes(b"old picture")
    os.link(picture, tmp_path / ".attnviz-0a1b2c3d.old")
    with pytest.raises(OutputProblem, match=r"remove .*\.attnviz-0a1b2c3d\.old, a second name"):
        check_output_path(picture, (".png",), "--output")
