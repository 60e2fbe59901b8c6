"""Where a command's output goes: the console its report is drawn on, the notes and the names
of the files written (stderr on the command line), the progress of a long read, the --step
pause. The command line builds one (attnviz.cli.console.surface); the api draws through it."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from rich.console import Console

    from attnviz.render.terminal.lesson import Pacer

#: Called with (bytes read, file size) while a word-vector text file is streamed.
Progress = Callable[[int, int], None]


class Surface(NamedTuple):
    """The command line's outputs, as functions."""

    console: Callable[[], Console]  # a new console for the report (stdout)
    note: Callable[[str], None]  # "note: …", something to know about how numbers were made
    wrote: Callable[[Path], None]  # "wrote PATH", for every file written
    reading: Callable[[Path | None], AbstractContextManager[Progress | None]]  # a progress bar
    pacer: Callable[[Console], Pacer | None]  # --step's pause between steps

    def notes(self, messages: tuple[str, ...] | list[str]) -> None:
        for message in messages:
            self.note(message)

    def wrote_all(self, paths: list[Path]) -> None:
        for path in paths:
            self.wrote(path)
