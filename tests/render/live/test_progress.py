"""The reading progress bar: only on a terminal, only after a second, with the file name literal."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from attnviz.render.live.progress import ReadingProgress


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def console(*, terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    screen = Console(
        file=out, force_terminal=terminal, force_interactive=terminal, width=80, color_system=None
    )
    return screen, out


def test_no_bar_during_the_first_second() -> None:
    screen, out = console(terminal=True)
    clock = FakeClock()
    with ReadingProgress(lambda: screen, "Reading big.txt", clock=clock) as progress:
        clock.now += 0.9
        progress(10, 100)
        assert progress.bar is None
    assert out.getvalue() == ""


def test_bar_after_a_second_on_a_terminal_and_gone_at_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")  # Rich draws no live bar on a "dumb" terminal
    screen, out = console(terminal=True)
    clock = FakeClock()
    with ReadingProgress(lambda: screen, "Reading [red]big[/].txt", clock=clock) as progress:
        clock.now += 1.5
        progress(500_000, 1_000_000)
        assert progress.bar is not None
        task = progress.bar.tasks[0]
        assert (task.completed, task.total) == (500_000, 1_000_000)
        progress(1_000_000, 1_000_000)
        assert progress.bar.tasks[0].finished
        progress.bar.refresh()
        drawn = out.getvalue()
    assert progress.bar is None  # stopped on leaving the block
    assert "Reading [red]big[/].txt" in drawn  # the name as it is, not parsed as markup


def test_never_a_bar_when_stderr_is_not_a_terminal() -> None:
    screen, out = console(terminal=False)
    clock = FakeClock()
    with ReadingProgress(lambda: screen, "Reading big.txt", clock=clock) as progress:
        clock.now += 10
        progress(5, 10)
        assert progress.bar is None
    assert out.getvalue() == ""
