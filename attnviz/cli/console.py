"""What the command line prints besides the lesson: one-line errors and notes on stderr, the
files it wrote, the progress of a long read, and the --step prompt."""

# No `from __future__ import annotations`: this module is imported by the command line, whose
# annotations Typer reads.
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from attnviz.errors import AttnvizError
from attnviz.render.live.progress import ReadingProgress
from attnviz.render.options import MAX_WIDTH
from attnviz.tokens import printable

if TYPE_CHECKING:
    from rich.console import Console

    from attnviz.api.surface import Surface
    from attnviz.render.terminal.lesson import Pacer


def new_console(**options: Any) -> "Console":
    """A Rich console, imported on first use: `--help` and `--version` never load Rich.

    Its width (COLUMNS, the terminal's, or JUPYTER_COLUMNS) is clamped to MAX_WIDTH; a width
    below 1 (COLUMNS=0), at which Rich prints nothing at all, errors included, is taken as
    unknown: 80 columns."""
    from rich.console import Console

    console = Console(highlight=False, **options)
    console.width = 80 if console.width < 1 else min(console.width, MAX_WIDTH)
    return console


@cache
def error_console() -> "Console":
    """stderr, for errors, notes and progress; soft wrap keeps each message on one line."""
    return new_console(stderr=True, soft_wrap=True)


def report(message: str, *, label: str = "error", style: str = "bold red") -> None:
    """One line on stderr: ``error: <what is wrong and how to fix it>``."""
    from rich.text import Text

    sys.stdout.flush()  # so the line lands after what was printed before it, when piped too
    error_console().print(Text.assemble((f"{label}: ", style), printable(message)))


def note(message: str) -> None:
    """``note: …`` on stderr: something the person should know about how the numbers were made."""
    report(message, label="note", style="bold yellow")


def wrote(path: Path) -> None:
    """``wrote PATH`` on stderr, the same for every file every command writes: plain text, so
    a command that only draws a picture never loads Rich."""
    sys.stdout.flush()
    sys.stderr.write(f"wrote {printable(str(path))}\n")
    sys.stderr.flush()


def reading_progress(path: Path | None) -> ReadingProgress:
    """A progress bar on stderr for streaming the word-vector file, if one takes over a second."""
    return ReadingProgress(error_console, f"Reading {path.name if path else ''}")


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn an AttnvizError into one line on stderr and its exit code; let bugs raise."""
    try:
        yield
    except AttnvizError as error:
        report(error.message)
        raise typer.Exit(int(error.exit_status)) from None


#: The keys that stop a --step lesson at its pause: q, and Ctrl-D (the end of input).
QUIT_KEYS = ("q", "Q", "\x04")


def pacer(console: "Console") -> "Pacer | None":
    """--step: wait for a key between steps, Enter or any other; q stops, read at once without
    Enter (attnviz.cli.keys). Never waits unless stdin is a terminal."""
    from attnviz.cli.keys import read_key, reads_keys

    if not (sys.stdin is not None and sys.stdin.isatty() and console.is_terminal):  # <&-
        note("--step pauses only at a terminal; going on without pausing.")
        return None
    stdin = sys.stdin

    def pause(coming: str) -> bool:
        from rich.text import Text

        prompt = Text(f"⏎ {coming}  ·  q quits ", style="dim")
        if not reads_keys(stdin):  # no termios: a line, as input() reads it
            try:
                answer = console.input(prompt)
            except EOFError:
                return False
            except KeyboardInterrupt:
                console.print()  # end the prompt's line before the shell's
                raise
            return answer.strip().lower() not in {"q", "quit"}

        def ask() -> None:
            console.print(prompt, end="")
            console.file.flush()

        try:
            key = read_key(stdin, ask)
        finally:
            console.print()  # the key is not echoed: end the prompt's line, Ctrl-C too
        return key != "" and key not in QUIT_KEYS

    return pause


def surface() -> "Surface":
    """The command line's outputs as the api draws through them: stdout for the report,
    stderr for notes, files written and progress; --step's pause at a terminal."""
    from attnviz.api.surface import Surface

    return Surface(new_console, note, wrote, reading_progress, pacer)
