"""``attnviz train TASK``: a tiny transformer trained live, then what it learned."""

# No `from __future__ import annotations`: Typer reads these annotations on every run.
import enum
from pathlib import Path
from typing import Annotated

import typer

from attnviz.cli.console import surface
from attnviz.cli.options import file_path


class TaskName(str, enum.Enum):
    coref = "coref"
    reverse = "reverse"
    previous = "previous"
    induction = "induction"


class ReadoutName(str, enum.Enum):
    pointer = "pointer"
    word = "word"


TaskArgument = Annotated[
    TaskName,
    typer.Argument(
        help="What to learn: coref, reverse, previous or induction.",
        show_default=False,
        metavar="TASK",
    ),
]
ReadoutOption = Annotated[
    ReadoutName | None,
    typer.Option(
        "--readout",
        help="coref only. pointer (default): the last layer's row of 'it' is the answer; "
        "word: an output layer names the noun.",
        show_default=False,
    ),
]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the weights and batches.")]
StepsOption = Annotated[
    int | None,
    typer.Option(
        "--steps",
        help="Train this many steps (with --until: at most this many). Default: until "
        "held-out accuracy reaches 99%, within the task's own limit.",
        show_default=False,
    ),
]
UntilOption = Annotated[
    float | None,
    typer.Option(
        "--until",
        help="Stop after the first step whose held-out accuracy reaches this, e.g. 1 for "
        "100%. Default: 0.99 without --steps.",
        show_default=False,
    ),
]
PaceOption = Annotated[
    float,
    typer.Option(
        "--pace",
        help="Seconds the live view takes at a terminal, about (0: full speed). Piped or "
        "with NO_COLOR it never waits.",
    ),
]
SaveOption = Annotated[
    Path | None,
    typer.Option(
        "--save",
        help="Save the trained model in this folder, for --model FOLDER.",
        show_default=False,
        readable=False,
    ),
]
AnimateOption = Annotated[
    Path | None,
    typer.Option(
        "--animate",
        help="Also save an animation of the focus rows over training, FILE.gif.",
        show_default=False,
        parser=file_path,
    ),
]
HistoryOption = Annotated[
    Path | None,
    typer.Option(
        "--history",
        help="Also save every snapshot as arrays, FILE.npz.",
        show_default=False,
        parser=file_path,
    ),
]
ExplainStepOption = Annotated[
    bool,
    typer.Option(
        "--explain-step",
        help="coref only: instead of training, print one gradient step on the seeds' sentence "
        "with every number, from the loss at 'it' back to ∂L/∂W_Q and the update.",
    ),
]


def train(
    task: TaskArgument,
    readout: ReadoutOption = None,
    seed: SeedOption = 0,
    steps: StepsOption = None,
    until: UntilOption = None,
    pace: PaceOption = 10.0,
    save: SaveOption = None,
    animate: AnimateOption = None,
    history: HistoryOption = None,
    explain_step: ExplainStepOption = False,
) -> None:
    """Train a tiny transformer in numpy, live, and say what it learned.

    coref: which noun "it" is in "The animal didn't cross the street because it was too tired"
    (and "...too wide"); reverse, previous, induction: attention patterns in letters and digits.

    Example: attnviz train coref
    """
    from attnviz.api import train as training

    files = training.TrainingFiles(save, animate, history)
    chosen = None if readout is None else readout.value
    if explain_step:
        training.explain_step(task.value, chosen, surface(), seed=seed, steps=steps, files=files)
        return
    training.run(
        task.value,
        chosen,
        surface(),
        seed=seed,
        steps=steps,
        until=until,
        pace=pace,
        files=files,
    )
