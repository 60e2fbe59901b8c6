"""``attnviz generate`` at a terminal (a pseudo-terminal, the installed command in a fresh
process): the tokens come as they are chosen, ``--pace`` seconds apart; Ctrl-C stops it at once
with one line and writes nothing; piped, it prints plain lines."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from e2e.test_step_keys import Terminal

from support import installed_attnviz

PROMPT = "j k l a b c d e a b"


def test_tokens_arrive_as_they_are_chosen_paced_for_a_class() -> None:
    terminal = Terminal("generate", PROMPT, "--tokens", "3", "--pace", "0.6")
    try:
        terminal.read_until("Token 1:")
        first = time.monotonic()
        assert "Token 2:" not in terminal.output  # not yet: 0.6 s apart
        said = terminal.read_until("Token 3:")
        assert "Token 2:" in said and "Token 3:" in said
        # Two pauses of 0.6 s between token 1 and token 3: the lesson is printed as it goes,
        # not all at the end.
        assert time.monotonic() - first >= 1.1
        assert terminal.end() == 0
        assert "The cache changes no number" in terminal.output
    finally:
        terminal.close()


def test_ctrl_c_between_tokens_stops_at_once_and_writes_nothing(tmp_path: Path) -> None:
    export = tmp_path / "run.npz"
    terminal = Terminal(
        "generate", PROMPT, "--tokens", "6", "--pace", "30", "--export", str(export)
    )
    try:
        terminal.read_until("Token 1:")
        # Token 1's choice may have come in the same read as its heading.
        if "Chosen:" not in terminal.output:
            terminal.read_until("Chosen:")
        assert "Token 2:" not in terminal.output  # the 30 s pause holds it back
        started = time.monotonic()
        terminal.press(b"\x03")  # Ctrl-C, as the terminal sends it
        assert terminal.end(20) == 130
        assert time.monotonic() - started < 10  # not after the 30 s pause
        assert "Token 2:" not in terminal.output
        assert "Traceback" not in terminal.output
        assert list(tmp_path.iterdir()) == []  # no export, no temporary
    finally:
        terminal.close()


def test_piped_it_prints_plain_lines_without_waiting() -> None:
    start = time.monotonic()
    out = subprocess.run(
        [installed_attnviz(), "generate", PROMPT, "--tokens", "3", "--pace", "5"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "80", "TERM": "xterm"},
    )
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout and "Token 3: ' e'" in out.stdout
    assert time.monotonic() - start < 5  # --pace is for a terminal; a pipe is not paced
