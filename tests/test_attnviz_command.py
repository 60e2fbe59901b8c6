"""_attnviz_command, the console script's entry point: the command runs with the garbage
collector on (its youngest generation collected less often), after imports made with it off,
and ends with every object set apart (gc.freeze), so that Python's exit does not walk them all
once more. Ctrl-C there: tests/e2e."""

from __future__ import annotations

import gc
import signal
import sys
from collections.abc import Iterator

import pytest

import _attnviz_command
from attnviz import cli


@pytest.fixture
def collector_restored() -> Iterator[None]:
    """The collector, and Ctrl-C's handler (the command ignores Ctrl-C once it has run), as
    they were."""
    enabled, handler = gc.isenabled(), signal.getsignal(signal.SIGINT)
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()
    if enabled:
        gc.enable()
    signal.signal(signal.SIGINT, handler)


@pytest.mark.slow
def test_the_command_runs_with_the_collector_on_and_its_objects_are_set_apart_after(
    monkeypatch: pytest.MonkeyPatch, collector_restored: None
) -> None:
    seen: list[tuple[bool, int]] = []

    def run() -> int:
        seen.append((gc.isenabled(), gc.get_freeze_count(), gc.get_threshold()[0]))
        gc.unfreeze()  # so that the count after shows the freeze at the end
        return 0

    ended: list[int] = []
    monkeypatch.setattr(cli, "run", run)
    monkeypatch.setattr(_attnviz_command, "end_process", ended.append)  # not this pytest's
    monkeypatch.setattr(sys, "argv", ["attnviz", "--version"])
    assert _attnviz_command.main() == 0
    assert ended == [0]
    enabled, frozen_before, young = seen[0]
    assert enabled and frozen_before > 0  # imported, then set apart
    assert young == _attnviz_command.YOUNG_COLLECTION
    assert gc.get_freeze_count() > 0  # and what the run made, at its end


def test_ctrl_c_during_start_up_is_one_line_and_the_process_ends_with_130_there(
    monkeypatch: pytest.MonkeyPatch,
    collector_restored: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The stop ends the process itself (end_process), not through Python's exit, which would
    end it by SIGINT when the Ctrl-C had met an import's C code."""

    def interrupted_import() -> int:
        raise KeyboardInterrupt

    ended: list[int] = []
    monkeypatch.setattr(cli, "run", interrupted_import)
    monkeypatch.setattr(_attnviz_command, "end_process", ended.append)
    assert _attnviz_command.main() == 130
    assert ended == [130]
    assert capsys.readouterr().err == (
        "error: stopped by Ctrl-C; any output not yet complete was left as it was.\n"
    )
