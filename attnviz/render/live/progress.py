"""A progress bar for reading a large file: on stderr, on a terminal, once it has taken a second.

Short reads (every sample file, most sentences) show nothing; a 1 GB GloVe file, which takes
several seconds to stream, shows how far it has got. The bar is transient: it disappears when
the file has been read, so the lesson printed next starts on a clean line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from attnviz.tokens import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

#: Reads shorter than this show no bar: a bar that flashes for a moment only distracts.
DELAY_SECONDS = 1.0


class ReadingProgress:
    """Call it with (bytes_read, file_size); it draws a bar once DELAY_SECONDS have passed, on
    the console ``console()`` gives: asked for only then, so a run that reads no file (or reads
    one fast) never loads Rich."""

    def __init__(
        self,
        console: Callable[[], Console],
        label: str,
        *,
        delay: float = DELAY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.label = label
        self.delay = delay
        self.clock = clock
        self.started = clock()
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if self.clock() - self.started < self.delay or not self.console().is_terminal:
                return
            from rich.markup import escape  # only when a bar is really drawn
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                DownloadColumn(),
                TimeRemainingColumn(),
                console=self.console(),
                transient=True,
            )
            self.bar.start()
            # Descriptions are Rich markup: a file named "[red]x.txt" must stay literal.
            self.task = self.bar.add_task(
                escape(printable(self.label)), total=total, completed=done
            )
        assert self.task is not None
        self.bar.update(self.task, completed=done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def __enter__(self) -> ReadingProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
