"""attnviz.render.live.training_view: the live view of `attnviz train` and its plain lines. The
held-out accuracy says the step it was measured at; each word's bar is as wide as its column and two
lines tall, for a projector; every line fits the console's width, a sentence too long for it
going on under itself."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from rich.console import Console

from attnviz.api import train as training
from attnviz.render.live.training_view import (
    NARROWEST,
    TrainingView,
    bar,
    columns,
    plain_lines,
)
from attnviz.render.terminal.text import cell_width
from attnviz.train.loop import Snapshot
from attnviz.train.tasks import Task

BLOCK = "█"


def snapshot(task: Task, step: int, measured: int, answer_weight: float = 1.0) -> Snapshot:
    """Each probe's focus row in every layer: ``answer_weight`` on its answer, the rest spread
    evenly over the other words."""
    rows = []
    for probe in task.probes:
        n = len(probe.words)
        row = np.full(n, (1 - answer_weight) / (n - 1))
        row[probe.answer] = answer_weight
        rows.append(np.tile(row, (task.n_layers, 1, 1)))
    return Snapshot(step, 0.5, 0.969, measured, tuple(rows), 1.0)


def frame_lines(task: Task, shot: Snapshot, width: int, height: int = 60) -> list[str]:
    console = Console(width=width, height=height, file=io.StringIO(), color_system=None)
    view = TrainingView(console, task, pace=0)
    view.losses.extend([3.0, 2.0, 1.0])
    console.print(view.frame(shot))
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


def test_the_held_out_accuracy_says_the_step_it_was_measured_at() -> None:
    task = training.make_task("coref")
    lines = frame_lines(task, snapshot(task, 53, 50), 100)
    assert re.fullmatch(r"step +53 +loss +0\.500 +held-out 96\.9% \(at step 50\)", lines[0])
    assert "(at step 50)" in plain_lines(snapshot(task, 53, 50), [], 100)[0]
    # A plain line is printed where the accuracy was measured: no step to name apart.
    assert plain_lines(snapshot(task, 50, 50), [], 100) == [
        "step   50  loss  0.500  held-out  96.9%"
    ]


def test_a_bar_is_as_wide_as_its_word_and_two_lines_tall() -> None:
    task = training.make_task("coref")
    probe = task.probes[0]
    lines = frame_lines(task, snapshot(task, 40, 40), 100)
    words = next(i for i, line in enumerate(lines) if line.split() == list(probe.words))
    answer = probe.words[probe.answer]
    start = lines[words].index(f" {answer} ") + 1  # the answer's column
    top, bottom, numbers = lines[words + 1 : words + 4]
    wide = max(len(answer), NARROWEST)
    for line in (top, bottom):  # a weight of 1: the word's column full, both lines
        assert (line + " ")[start - 1 : start + wide + 1] == " " + BLOCK * wide + " "
        assert line.count(BLOCK) == wide  # the others' weights draw nothing
    assert numbers.startswith("L1") and numbers[start:].startswith("1.00")
    # Two lines, sixteen steps: half a weight fills the bottom line alone.
    assert [bar(0.5, line, 2) for line in (0, 1)] == [" ", BLOCK]
    assert [bar(0.75, line, 2) for line in (0, 1)] == ["▄", BLOCK]
    assert [bar(0.02, line, 2) for line in (0, 1)] == [" ", " "]
    assert bar(0.5, 0) == "▄"  # one line tall


@pytest.mark.slow
@pytest.mark.parametrize("width", [60, 80, 100])
@pytest.mark.parametrize("name", ["coref", "induction", "reverse"])
def test_every_line_of_a_frame_fits_and_every_word_is_shown(name: str, width: int) -> None:
    task = training.make_task(name)
    lines = frame_lines(task, snapshot(task, 7, 5, 0.6), width)
    assert max(cell_width(line) for line in lines) <= width
    words = [line.split() for line in lines]
    at = 0
    for probe in task.probes:  # each run of each probe's words, in order
        for run in columns(probe.words, width):
            at = words.index([probe.words[index] for index in run], at) + 1


def test_a_sentence_too_long_for_the_screen_goes_on_under_itself_in_even_runs() -> None:
    letters = list("abcdghefklghefkl")  # induction's 16 letters: 5 cells each, 84 with labels
    assert [len(run) for run in columns(letters, 100)] == [16]
    assert [len(run) for run in columns(letters, 80)] == [8, 8]
    sentence = "the animal didn't cross the street because it was too tired".split()
    assert columns(sentence, 60) == [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]


def test_a_short_screen_gets_bars_one_line_tall() -> None:
    task = training.make_task("coref")
    tall = frame_lines(task, snapshot(task, 40, 40), 100)
    short = frame_lines(task, snapshot(task, 40, 40), 100, height=len(tall) - 1)
    assert len(short) < len(tall) <= 24  # a 24-line terminal still shows two-line bars
    full = len(task.probes) * task.n_layers  # the answer's bars, a weight of 1
    assert sum(BLOCK * NARROWEST in line for line in tall) == 2 * full
    assert sum(BLOCK * NARROWEST in line for line in short) == full


@pytest.mark.slow
@pytest.mark.parametrize("width", [60, 80, 100])
def test_plain_lines_fit_the_width_and_their_answers_go_on_underneath(width: int) -> None:
    answers = ['L2 "it"→animal 0.98', 'L2 "it"→street 0.03']
    lines = plain_lines(snapshot(training.make_task("coref"), 10, 10), answers, width)
    assert all(cell_width(line) <= width for line in lines)
    assert " ".join(" ".join(lines).split()) == (
        'step 10 loss 0.500 held-out 96.9% L2 "it"→animal 0.98 L2 "it"→street 0.03'
    )
    assert len(lines) == (1 if width == 100 else 2)
