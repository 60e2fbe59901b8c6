"""``attnviz train TASK``: a tiny transformer trained live, then what it learned."""

# No `from __future__ import annotations`: Typer reads these annotations on every run.
import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from attnviz.cli.console import new_console, wrote
from attnviz.cli.options import file_path
from attnviz.errors import AttnvizError

if TYPE_CHECKING:
    from attnviz.outputs import FolderOutput
    from attnviz.training import Trained


class TaskName(str, enum.Enum):
    coref = "coref"
    reverse = "reverse"
    previous = "previous"
    induction = "induction"


class ReadoutName(str, enum.Enum):
    pointer = "pointer"
    word = "word"


def check_save_folder(folder: Path) -> None:
    """A folder to write a model into: new, empty, or holding a model attnviz saved (replaced);
    never a folder whose config.json is something else's."""
    from attnviz.train.saving import check_save_folder as check

    check(folder, "--save")


def model_folder(folder: Path) -> "FolderOutput":
    """--save: the folder and the model's files (config.json, weights.npz)."""
    from attnviz.train.saving import model_folder as output

    return output(folder, "--save")


def check_saved_apart(save: Path | None, animate: Path | None, history: Path | None) -> None:
    """Refuse --history or --animate naming a file that --save writes (outputs.check_apart)."""
    from attnviz.outputs import check_apart

    saved = None if save is None else model_folder(save)
    check_apart([(animate, "--animate"), (history, "--history")], [saved])


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
    if explain_step:
        explain_one_step(task, readout, seed, steps, save, animate, history)
        return
    from attnviz import training
    from attnviz.files import check_output_path, staged_writes
    from attnviz.render.live.training_view import TrainingView, print_lines
    from attnviz.train import report
    from attnviz.train.network import shape_of

    if not 0 <= pace <= 600:
        raise AttnvizError(f"--pace {pace:g}: give 0 to 600 seconds.")
    training.check_training(steps, until, seed)
    chosen = training.make_task(task.value, None if readout is None else readout.value, seed=seed)
    if save is not None:
        check_save_folder(save)
    if animate is not None:
        check_output_path(animate, (".gif",), "--animate")
    if history is not None:
        check_output_path(history, (".npz",), "--history")
    check_saved_apart(save, animate, history)

    console = new_console()
    shape = shape_of(chosen)
    print_lines(console, report.start(chosen, shape, seed=seed))
    console.print()
    with staged_writes():  # every file, or none
        with TrainingView(console, chosen, pace=pace, steps=steps) as view:
            trained = training.train(
                chosen,
                seed=seed,
                steps=steps,
                until=until if until is not None or steps is not None else 0.99,
                on_snapshot=view.show,
            )
            view.last(trained.snapshots[-1])
        console.print()
        print_lines(
            console,
            report.finish(
                trained.task, trained.findings, steps=trained.steps, seconds=trained.seconds
            ),
        )
        written = write_outputs(trained, save=save, history=history, animate=animate)
    for path in written:
        wrote(path)


def explain_one_step(
    task: TaskName,
    readout: ReadoutName | None,
    seed: int,
    *others: object,
) -> None:
    """--explain-step: one step of gradient descent, printed; nothing is trained or written."""
    from attnviz.render.terminal.training_step import print_gradient_step

    if task is not TaskName.coref:
        raise AttnvizError(f"--explain-step is for coref; {task.value} has no such lesson.")
    if any(other is not None for other in others):
        raise AttnvizError(
            "--explain-step prints one step and trains nothing: leave out --steps, --save, "
            "--animate and --history."
        )
    if seed < 0:
        raise AttnvizError(f"--seed {seed}: give a seed of 0 or more.")
    print_gradient_step(
        new_console(), readout="pointer" if readout is None else readout.value, seed=seed
    )


def write_outputs(
    trained: "Trained", *, save: Path | None, history: Path | None, animate: Path | None
) -> list[Path]:
    """The files asked for, inside the command's staged writes; the paths written."""
    written = []
    if save is not None:
        trained.save(save)
        written.append(save)
    if history is not None:
        trained.save_history(history)
        written.append(history)
    if animate is not None:
        from attnviz.render.live.animation import save_animation

        save_animation(trained.task, trained.snapshots, animate)
        written.append(animate)
    return written
