"""The command in unusual surroundings: each works, or ends in one line and a named exit code.

A full or closed standard output, output encodings that cannot encode the lesson's characters
(PYTHONIOENCODING=ascii, a POSIX locale without UTF-8 mode), --step with stdin closed, an
MPLBACKEND matplotlib refuses. Each runs the installed command in a fresh process, where these are
set, and checks that no traceback or warning reaches stderr.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from attnviz.errors import ExitStatus

from support import installed_attnviz, step


def attnviz(
    *args: str, shell_suffix: str = "", stdout: object = subprocess.PIPE, **env: str
) -> subprocess.CompletedProcess[bytes]:
    """The installed ``attnviz ARGS`` with ``env`` added; ``shell_suffix`` (such as ``<&-``) is
    given to a shell that starts it, to close a standard stream."""
    command = [installed_attnviz(), *args]
    environment = {**os.environ, "COLUMNS": "100", **env}
    environment.pop("PYTHONWARNINGS", None)
    if shell_suffix:
        line = f"exec {shlex.join(command)} {shell_suffix}"
        return subprocess.run(
            ["sh", "-c", line], stdout=stdout, stderr=subprocess.PIPE, env=environment, timeout=60
        )
    return subprocess.run(
        command, stdout=stdout, stderr=subprocess.PIPE, env=environment, timeout=60
    )


def error_lines(result: subprocess.CompletedProcess[bytes]) -> list[str]:
    stderr = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr and "Warning" not in stderr, stderr
    return stderr.strip().splitlines()


@pytest.mark.parametrize(
    "args", [["explain", "I am good"], ["scaling"], ["explain", "--help"], ["--version"]]
)
def test_a_full_standard_output_is_one_line_and_exit_5(args: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        result = attnviz(*args, stdout=full)
    lines = error_lines(result)
    assert result.returncode == ExitStatus.CANNOT_WRITE
    assert lines == [
        "error: Cannot write to standard output: No space left on device; send the output to a "
        "file or a pipe that can take it."
    ]


def test_a_closed_standard_output_is_one_line_and_exit_5(tmp_path: Path) -> None:
    result = attnviz("explain", "I am good", shell_suffix=">&-")
    lines = error_lines(result)
    assert result.returncode == ExitStatus.CANNOT_WRITE
    assert len(lines) == 1 and "standard output: it is closed" in lines[0]
    # A command that writes only a file does not need it.
    picture = tmp_path / "h.png"
    result = attnviz("heatmap", "I am good", "-o", str(picture), shell_suffix=">&-")
    assert result.returncode == 0 and error_lines(result) == [f"wrote {picture}"]


def test_an_ascii_output_encoding_shows_escapes() -> None:
    result = attnviz("explain", "naïve café", PYTHONIOENCODING="ascii")
    assert result.returncode == 0 and error_lines(result) == []
    text = result.stdout.decode("ascii")  # nothing but ASCII
    assert "attnviz \\xb7 multi-head self-attention" in text
    assert "Sentence: na\\xefve caf\\xe9  (2 tokens)" in text


def test_a_posix_locale_without_utf8_mode_reads_the_sentence_as_typed() -> None:
    """LC_ALL=C without UTF-8 mode: Python decodes argv as ASCII, keeping the bytes of "ï" as
    surrogates; they are UTF-8, so the sentence is read as typed: two words, not seven."""
    locale = {"LC_ALL": "C", "PYTHONUTF8": "0"}
    result = attnviz("explain", "naïve café", "--focus", "café", **locale)
    assert result.returncode == 0 and error_lines(result) == []
    text = result.stdout.decode("ascii")
    assert "Sentence: na\\xefve caf\\xe9  (2 tokens)" in text
    assert "Focus: where does 'caf\\xe9' look?" in text
    # An error line, with characters ASCII lacks, is one line too.
    result = attnviz("explain", "naïve café", "--heads", "3", **locale)
    lines = error_lines(result)
    assert result.returncode == ExitStatus.BAD_INPUT and len(lines) == 1
    assert lines[0].startswith("error: ")


def test_step_with_stdin_closed_goes_on_without_pausing() -> None:
    result = attnviz("explain", "I am good", "--step", shell_suffix="<&-")
    assert result.returncode == 0 and f"Step {step('tokens')}".encode() in result.stdout
    assert error_lines(result) == [
        "note: --step pauses only at a terminal; going on without pausing."
    ]


def test_an_unknown_mplbackend_does_not_stop_a_picture(tmp_path: Path) -> None:
    picture = tmp_path / "x.png"
    result = attnviz("heatmap", "I am good", "-o", str(picture), MPLBACKEND="bogus")
    assert result.returncode == 0 and error_lines(result) == [f"wrote {picture}"]
    assert picture.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


# -- a reader that stops reading (| head) --------------------------------------------------------


def closed_pipe() -> int:
    """The writing end of a pipe whose reader has already gone: every write is EPIPE."""
    reading, writing = os.pipe()
    os.close(reading)
    return writing


@pytest.mark.parametrize(
    "command",
    [
        [installed_attnviz(), "explain", "I am good"],
        [sys.executable, "-m", "attnviz", "explain", "I am good"],
        [installed_attnviz(), "cross", "I am good", "je suis bien"],
        [installed_attnviz(), "explain", "--help"],
    ],
    ids=["explain", "python -m attnviz", "cross", "help"],
)
def test_a_reader_that_stopped_reading_ends_the_command_silently_with_141(
    command: list[str],
) -> None:
    """As a Unix tool that SIGPIPE ends: no traceback, no message, 128 + 13."""
    writing = closed_pipe()
    try:
        result = subprocess.run(command, stdout=writing, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(writing)
    assert (result.returncode, result.stderr) == (ExitStatus.PIPE_CLOSED, b"")


def test_head_takes_its_line_and_the_pipeline_ends_quietly() -> None:
    """A real `| head -1`, while the lesson is still being written (140 KB: twice what a pipe
    holds, so attnviz is still writing when head has gone): the first line arrives, and
    attnviz ends as the shell's other writers do."""
    sentence = "The animal didn't cross the street because it was too tired"
    command = [installed_attnviz(), "explain", sentence, "--heads", "12", "--d-model", "48"]
    line = f"{shlex.join(command)} | head -1"
    script = f'{line}; echo "status ${{PIPESTATUS[0]}}"'
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert result.stdout.splitlines() == [
        "attnviz · multi-head self-attention, step by step",
        "status 141",
    ]
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("args", "name", "ending"),
    [
        (["heatmap", "I am good", "-o"], "heatmap.png", b"IEND\xaeB`\x82"),
        (["page", "I am good", "-o"], "page.html", b"</html>\n"),
    ],
)
def test_a_picture_or_page_is_complete_when_wrote_meets_a_closed_pipe(
    args: list[str], name: str, ending: bytes, tmp_path: Path
) -> None:
    """`wrote …` goes to a standard error whose reader has gone (`2>&1 | head -0`): the file
    was finished and renamed into place before, and the run is still a success."""
    path = tmp_path / name
    writing = closed_pipe()
    try:
        result = subprocess.run(
            [installed_attnviz(), *args, str(path)], stdout=writing, stderr=writing, timeout=120
        )
    finally:
        os.close(writing)
    assert result.returncode == ExitStatus.SUCCESS
    assert path.read_bytes().endswith(ending)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary left behind
