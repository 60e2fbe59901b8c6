"""Whatever the sentence or a file holds, the terminal shows it and obeys none of it.

Rich markup stays literal, control characters and escape sequences appear as visible escapes,
and wide characters (CJK, full-width Latin), combining marks and emoji keep every table and bar
chart aligned, measured in terminal cells as Rich measures them.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
from rich.cells import cell_len

from attnviz.cli import app
from attnviz.errors import ExitStatus
from attnviz.tokens import tokenize

from support import CliRunner

runner = CliRunner()
SGR = re.compile(r"\x1b\[[0-9;]*m")  # colour codes, the one escape sequence attnviz itself emits

HOSTILE = {
    "ESC": "\x1b",
    "BEL": "\x07",
    "backspace": "\x08",
    "NUL": "\x00",
    "DEL": "\x7f",
    "C1 CSI": "\x9b",
    "right-to-left override": "\u202e",
    "zero-width space": "\u200b",
}
WIDE = "猫が 好き Ｆｕｌｌ e\u0301te\u0301 👍🏽 👨\u200d👩\u200d👧 🇫🇷 cat"


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def raw_controls(text: str) -> set[str]:
    """Characters that would act on a terminal: C0/C1 controls but newline, and format chars."""
    return {
        char
        for char in text
        if char != "\n" and unicodedata.category(char) in ("Cc", "Cf") and char != "\u200d"
    }


@pytest.mark.parametrize("name", HOSTILE)
def test_control_characters_reach_the_terminal_only_as_visible_escapes(name: str) -> None:
    char = HOSTILE[name]
    code, stdout, stderr = invoke("explain", f"say{char}it now", "--focus", "now")
    assert code == 0, stderr
    assert raw_controls(stdout + stderr) == set()
    assert char.encode("unicode_escape").decode() in stdout


def test_an_ansi_sequence_in_the_sentence_does_not_clear_the_screen() -> None:
    code, stdout, _ = invoke("explain", "a\x1b[2J\x1b]0;pwned\x07b", "--heads", "1")
    assert code == 0
    assert "\x1b" not in stdout and "\x07" not in stdout
    assert "\\x1b" in stdout and "\\x07" in stdout


@pytest.mark.slow
def test_rich_markup_in_the_sentence_is_printed_literally_even_in_colour(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    sentence = "[bold red]x[/] [link=http://example.com]y[/link] :smile:"
    code, stdout, _ = invoke("explain", sentence, "--focus", "y")
    assert code == 0
    assert SGR.search(stdout), "colour is on: the test must see styled output"
    plain = SGR.sub("", stdout)
    assert "\x1b]8;" not in stdout  # no hyperlink was made
    # The sentence line shows the tokens, brackets and all: nothing was taken as markup.
    tokens = " ".join(tokenize(sentence))
    assert "[ bold red ] x [ / ] [ link = http : / / example . com ] y" in tokens
    assert f"Sentence: {tokens}" in " ".join(plain.split())
    assert "😄" not in plain  # Rich's emoji codes are not expanded either


def test_file_names_and_words_in_messages_are_escaped(tmp_path: Path) -> None:
    code, stdout, stderr = invoke("explain", "I am good", "-e", str(tmp_path / "[red]\x1b.txt"))
    assert code == ExitStatus.BAD_FILE
    assert "[red]\\x1b.txt" in stderr and "\x1b" not in stderr
    vectors = tmp_path / "v.txt"
    vectors.write_text("i 1 2\nam 3 4\n", encoding="utf-8")
    code, _, stderr = invoke("explain", "I am [b]x[/b] \x07", "-e", str(vectors))
    assert code == ExitStatus.BAD_FILE
    assert "'[', 'b', ']', 'x', '/'" in stderr
    assert "'\\x07'" in stderr and "\x07" not in stderr


def tables(output: str) -> list[list[str]]:
    """Each matrix table's rule line and the rows under it, up to the next blank line."""
    found: list[list[str]] = []
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if line.strip() and set(line.strip()) <= {"─", " "} and line.startswith("─"):
            rows = [line]
            for row in lines[index + 1 :]:
                if not row.strip():
                    break
                rows.append(row)
            if len(rows) > 1:
                found.append(rows)
    return found


def bar_charts(output: str) -> list[list[str]]:
    """The focus section's bar charts: runs of lines 'word  ████▍   0.18'."""
    bar = re.compile(r"^\S.*\s[█▏▎▍▌▋▊▉]*\s+\d\.\d+$")
    charts: list[list[str]] = []
    current: list[str] = []
    for line in output.splitlines():
        if bar.match(line) and "█" in line or (current and bar.match(line)):
            current.append(line)
        elif current:
            charts.append(current)
            current = []
    return charts + ([current] if current else [])


@pytest.mark.parametrize("columns", ["80", "100"])
@pytest.mark.parametrize("heads", ["1", "2"])
def test_wide_characters_combining_marks_and_emoji_keep_columns_aligned(
    monkeypatch: pytest.MonkeyPatch, columns: str, heads: str
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    code, stdout, _ = invoke("explain", WIDE, "--focus", "cat", "--heads", heads, "--full")
    assert code == 0
    for word in ("猫が", "Ｆｕｌｌ", "été", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷"):
        assert word in stdout, word
    found = tables(stdout)
    assert len(found) >= 8
    for rows in found:
        widths = {cell_len(row.rstrip()) for row in rows}
        assert len(widths) == 1, "\n".join(rows)
        assert widths.pop() <= int(columns)
    charts = bar_charts(stdout)
    assert len(charts) == int(heads)
    for chart in charts:
        assert len(chart) == 8  # every token, each on its own line
        assert len({cell_len(line) for line in chart}) == 1, "\n".join(chart)
