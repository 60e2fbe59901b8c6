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
from pathlib import Path

import pytest

from attnviz.errors import ExitStatus

from support import installed_attnviz


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
    assert result.returncode == 0 and b"Step 1" in result.stdout
    assert error_lines(result) == [
        "note: --step pauses only at a terminal; going on without pausing."
    ]


def test_an_unknown_mplbackend_does_not_stop_a_picture(tmp_path: Path) -> None:
    picture = tmp_path / "x.png"
    result = attnviz("heatmap", "I am good", "-o", str(picture), MPLBACKEND="bogus")
    assert result.returncode == 0 and error_lines(result) == [f"wrote {picture}"]
    assert picture.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
