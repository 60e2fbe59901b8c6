"""``attnviz worksheet`` on the command line: the set and its key written and named on stderr,
the help saying where the key goes, and every bad input one line with its exit code."""

from __future__ import annotations

import html
import os
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from attnviz.cli import app
from attnviz.errors import ExitStatus

from support import CliRunner

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["worksheet", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_a_hand_set_and_its_key_are_written_and_named(tmp_path: Path) -> None:
    sheet = tmp_path / "sheet.html"
    code, stdout, stderr = run("--hand", "--copies", "2", "--count", "3", "-o", str(sheet))
    assert code == 0, stderr
    key = tmp_path / "sheet-key.html"
    assert stderr.splitlines() == [f"wrote {sheet}", f"wrote {key}"] and stdout == ""
    page = sheet.read_text(encoding="utf-8")
    assert "The animal crossed because it was tired" in page  # --hand's own sentence
    assert "Sheet 2 of 2" in page and "Numbers made for pencil and paper" in page
    assert "Answer key" in key.read_text(encoding="utf-8")


def test_the_default_sentence_and_a_quiz(tmp_path: Path) -> None:
    quiz = tmp_path / "quiz.xml"
    code, _, stderr = run("--kind", "softmax", "--count", "2", "-o", str(quiz))
    assert code == 0 and stderr.splitlines() == [f"wrote {quiz}"]
    questions = ElementTree.parse(quiz).getroot().findall("question[@type='numerical']")
    assert len(questions) == 2
    shown = html.unescape(questions[0].findtext("questiontext/text") or "")
    assert "The animal didn't cross the street because it was too tired" in shown


@pytest.mark.slow  # the plain run has render/worksheet/test_pdf.py's same-bytes test
def test_the_same_seed_gives_the_same_pdf(tmp_path: Path) -> None:
    for name in ("a.pdf", "b.pdf"):
        code, _, stderr = run("--hand", "--seed", "9", "--count", "2", "-o", str(tmp_path / name))
        assert code == 0, stderr
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()
    assert (tmp_path / "a-key.pdf").read_bytes() == (tmp_path / "b-key.pdf").read_bytes()


def test_the_help_says_where_the_key_goes_and_how_copies_are_seeded() -> None:
    code, stdout, _ = run("--help")
    text = " ".join(stdout.split())
    assert code == 0
    assert "NAME-key.EXT (sheet.pdf and sheet-key.pdf)" in text
    assert "sheet k of --copies uses seed + k - 1" in text
    assert "Existing files are replaced" in text


@pytest.mark.parametrize(
    ("arguments", "status", "fragment"),
    [
        (["-o", "s.txt"], ExitStatus.CANNOT_WRITE, "unknown extension '.txt'; use one of .pdf"),
        (["--copies", "0", "-o", "s.pdf"], ExitStatus.BAD_INPUT, "--copies 0: a set has 1 to 100"),
        (["--copies", "99999999999", "-o", "s.pdf"], ExitStatus.BAD_INPUT, "a set has 1 to 100"),
        (["--count", "41", "-o", "s.pdf"], ExitStatus.BAD_INPUT, "--count 41: a sheet holds 1"),
        (["--paper", "a5", "-o", "s.pdf"], ExitStatus.BAD_INPUT, "--paper a5: give a4 or letter"),
        (["--kind", "soft", "-o", "s.md"], ExitStatus.BAD_INPUT, "'soft' is not a kind"),
        (["--hand", "--d-model", "8", "-o", "s.md"], ExitStatus.BAD_INPUT, "drop --d-model"),
        (
            ["--hand", "one two three four five six seven eight nine", "-o", "s.md"],
            ExitStatus.BAD_INPUT,
            "--hand takes at most 8 words",
        ),
        (["-o", "missing/s.pdf"], ExitStatus.CANNOT_WRITE, "does not exist"),
    ],
)
def test_bad_input_is_one_line_with_its_exit_code_and_writes_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    arguments: list[str],
    status: ExitStatus,
    fragment: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = run(*arguments)
    assert code == status, (code, stderr)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], stderr
    assert "Traceback" not in stderr + stdout
    assert os.listdir(tmp_path) == []


def test_an_unwritable_folder_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    # Root writes to a read-only folder anyway: the refusal is faked where it is checked.
    real_access = os.access
    monkeypatch.setattr(
        "attnviz.files.writing.os.access",
        lambda path, mode: False if Path(path) == folder else real_access(path, mode),
    )
    code, _, stderr = run("-o", str(folder / "s.pdf"))
    lines = stderr.strip().splitlines()
    assert code == ExitStatus.CANNOT_WRITE and len(lines) == 1 and "locked" in lines[0], stderr
    assert os.listdir(folder) == []
