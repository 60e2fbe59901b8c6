"""Terminals of any width, 1 column to 100,000: the live view of `attnviz train` and `attnviz
demo` (drawn only at a terminal with colour) and every command sized to the terminal finish,
each line within the width where a line can be, the loss curve smaller or left out."""

from __future__ import annotations

import io
import shlex

import pytest
from rich.console import Console

from attnviz.api import train as training
from attnviz.cli import run
from attnviz.render.live.training_view import CURVE, TrainingView, loss_curve
from attnviz.render.terminal.text import cell_width

from support import needs_model

WIDTHS = [*range(1, 11), 100_000]
TIRED = "The cat sat because it was tired"
WIDE = "The cat sat because it was wide"


@pytest.mark.parametrize("width", [0, *WIDTHS])
def test_the_loss_curve_takes_at_most_its_width_and_ends_at_the_last_loss(width: int) -> None:
    losses = [3.0, 2.5, 2.0, 1.0, 0.5, 0.25, 0.2, 0.1, 0.05, 0.04, 0.02, 0.01]
    curve = loss_curve(losses, width)
    assert len(curve) == min(width, len(losses))
    assert set(curve) <= set(CURVE)
    if width >= 1:
        assert curve[-1] == CURVE[0]  # the lowest loss, the last one, the lowest block
    if width >= 2:
        assert curve[0] == CURVE[-1]  # the highest, the first


@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
def test_the_live_view_of_training_fits_any_terminal(width: int) -> None:
    """A run trained live at a terminal ``width`` columns wide, as the command draws it."""
    console = Console(
        width=width, height=40, file=io.StringIO(), force_terminal=True, color_system=None
    )
    task = training.make_task("previous")
    with TrainingView(console, task, pace=0, steps=12) as view:
        trained = training.train(task, steps=12, on_snapshot=view.show)
        view.last(trained.snapshots[-1])
    frame = Console(width=width, height=40, file=io.StringIO(), color_system=None)
    frame.print(view.frame(trained.snapshots[-1]))
    lines = frame.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert max(cell_width(line) for line in lines) <= width
    curves = [line for line in lines if line.startswith("loss ") and set(line[5:]) <= set(CURVE)]
    if width > 6:  # "loss " and at least one block, short of the edge
        assert len(curves) == 1 and 1 <= len(curves[0]) - 5 <= width - 6
    else:
        assert curves == []


@pytest.mark.slow
# 4 columns goes the way 1 and 7 go (narrower than any indent): the full run.
@pytest.mark.parametrize("columns", [1, pytest.param(4, marks=pytest.mark.full), 7, 100_000])
@pytest.mark.parametrize(
    "command",
    [
        "train previous --steps 12 --pace 0",
        pytest.param("demo", marks=pytest.mark.slow),  # train's live view, after its lesson
        'explain "The cat sat because it was tired" --full',
        'cross "the cat" "le chat"',
        "scaling",
        pytest.param(f"heads {TIRED!r} --model minilm", marks=needs_model),
        pytest.param(f"compare {TIRED!r} {WIDE!r} --model minilm", marks=needs_model),
    ],
)
def test_a_command_at_a_terminal_of_any_width_finishes(
    command: str,
    columns: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """FORCE_COLOR: the command draws as at a terminal (train's and demo's live views), at
    full speed: the width is the question here, not the pace set for a class."""
    monkeypatch.setattr("attnviz.render.live.demo.TRAINING_PACE", 0.0)
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    assert run(shlex.split(command)) == 0
    captured = capsys.readouterr()
    assert "\x1b[" in captured.out  # drawn as at a terminal
    assert "Traceback" not in captured.err


def test_a_missing_choice_argument_lists_its_choices_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Click lists the choices of a missing argument one per line; stderr keeps one line."""
    from attnviz.cli import run

    assert run(["train"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Choose from: coref, reverse, previous, induction." in err
    assert "\\n" not in err and "\\t" not in err
