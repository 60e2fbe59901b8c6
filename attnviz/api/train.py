"""``attnviz train`` as a function: a tiny transformer trained live, in numpy, with what it
learned. (``attnviz.train`` is the package of its steps; the function is this module's.)

>>> from attnviz.api.train import train
>>> trained = train("reverse")
>>> trained.findings.accuracy >= 0.99
True

Every argument is checked as it enters, before any work: a wrong kind (``steps="10"``,
``steps=2.5``, ``seed=True``, ``on_snapshot=1``) is an AttnvizError naming the keyword.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from attnviz.arguments import flags
from attnviz.errors import AttnvizError, option, shown_value
from attnviz.serial import one_at_a_time
from attnviz.train import findings as measured
from attnviz.train import loop, network, report, saving, tasks
from attnviz.train.loop import Snapshot
from attnviz.train.tasks import Readout, Task
from attnviz.train.threads import one_blas_thread
from attnviz.train.trained import Trained as Trained  # what train() returns

if TYPE_CHECKING:
    from attnviz.api.surface import Surface
    from attnviz.outputs import FolderOutput

TASKS = ("coref", "reverse", "previous", "induction")
MAX_STEPS = 20_000  # about 3 minutes at the largest task's pace: a bound set before the work


def make_task(name: str, readout: str | None = None, *, seed: int = 0) -> Task:
    """The task ``name`` ("coref", "reverse", "previous", "induction"); ``readout`` "pointer"
    or "word" for coref (pointer by default); the random tasks' data drawn from ``seed``."""
    if not isinstance(name, str) or name not in TASKS:
        raise AttnvizError(
            f"There is no task {shown_value(name)}; choose one of {', '.join(TASKS)}."
        )
    seed = whole_number("seed", seed)
    if seed < 0:
        raise AttnvizError(f"{option('seed', seed)}: give a seed of 0 or more.")
    if readout is not None and (not isinstance(readout, str) or readout not in ("pointer", "word")):
        raise AttnvizError(f"{option('readout', readout)}: choose pointer or word.")
    if name == "coref":
        return tasks.coref(Readout.WORD if readout == "word" else Readout.POINTER)
    if readout is not None:
        raise AttnvizError(
            f"{option('readout', readout)} is for coref; {name} names a token at every position."
        )
    rng = np.random.default_rng(seed)
    return {"reverse": tasks.reverse, "previous": tasks.previous, "induction": tasks.induction}[
        name
    ](rng)


def whole_number(name: str, value: object) -> int:
    """``value`` as an int: a Python or numpy whole number, not True or False (which Python
    counts as 1 and 0) and not 2.5; AttnvizError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise AttnvizError(f"{option(name, value)}: give a whole number.")
    number = int(value)
    if abs(number) > 10**40:
        raise AttnvizError(f"{option(name, number)} is far too large; give a smaller number.")
    return number


def fraction(name: str, value: object) -> float:
    """``value`` as a float: a Python or numpy real number, not True or False, not text."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise AttnvizError(f"{option(name, value)}: give a number, e.g. {name}=0.99.")
    try:
        return float(value)
    except OverflowError:  # an int of 400 digits
        raise AttnvizError(f"{option(name, value)}: give a number from 0 to 1.") from None


def check_training(steps: int | None, until: float | None, seed: int) -> None:
    """Refuse settings that cannot train, before any work."""
    if steps is not None and not 1 <= whole_number("steps", steps) <= MAX_STEPS:
        raise AttnvizError(f"{option('steps', steps)}: give 1 to {MAX_STEPS:,} steps.")
    if until is not None and not 0 < fraction("until", until) <= 1:  # NaN is refused too
        raise AttnvizError(
            f"{option('until', until)}: give a held-out accuracy above 0 and at most 1, e.g. 0.99."
        )
    if whole_number("seed", seed) < 0:
        raise AttnvizError(f"{option('seed', seed)}: give a seed of 0 or more.")


@one_at_a_time
def train(
    task: str | Task = "coref",
    *,
    readout: str | None = None,
    seed: int = 0,
    steps: int | None = None,
    until: float | None = 0.99,
    on_snapshot: Callable[[Snapshot], None] | None = None,
    history: bool = True,
) -> Trained:
    """Train a tiny transformer on ``task`` (a name, with ``readout`` for coref, or a Task from
    make_task) and return it with what it learned.

    steps: the most steps to train (the task's own limit by default); until: stop after the
    first step whose held-out accuracy reaches this (None: train every step). A snapshot is
    taken after every step and given to ``on_snapshot`` as it is taken; ``history=False`` (with
    ``until=None``) keeps only the first and the last, for a script that trains many steps.
    Same arguments, same numbers, on every machine and whatever shows them.
    """
    check_training(steps, until, seed)
    steps = None if steps is None else whole_number("steps", steps)
    until = None if until is None else fraction("until", until)
    seed = whole_number("seed", seed)
    if on_snapshot is not None and not callable(on_snapshot):
        raise AttnvizError(
            f"on_snapshot={shown_value(on_snapshot)}: give a function of one snapshot, or None."
        )
    flags(history=history)
    if isinstance(task, Task) and readout is not None:
        raise AttnvizError(
            f"{option('readout', readout)} is for a task's name; a Task from make_task has its "
            "readout already."
        )
    chosen = task if isinstance(task, Task) else make_task(task, readout, seed=seed)
    snapshots = []
    trainer = loop.Trainer(chosen, seed)
    limit = chosen.max_steps if steps is None else steps
    with one_blas_thread():
        for snapshot in loop.run(trainer, max_steps=limit, until=until, every_step=history):
            snapshots.append(snapshot)
            if on_snapshot is not None:
                on_snapshot(snapshot)
        found = measured.findings(chosen, trainer.shape, trainer.parameters)
    return Trained(chosen, seed, trainer.shape, dict(trainer.parameters), tuple(snapshots), found)


# -- the command ------------------------------------------------------------------------------


class TrainingFiles(NamedTuple):
    """What ``attnviz train`` writes: --save FOLDER, --animate FILE.gif, --history FILE.npz."""

    save: Path | None = None
    animate: Path | None = None
    history: Path | None = None

    def check(self) -> None:
        """Refuse each file that cannot be written, and two that are one, before any work."""
        from attnviz.files import check_output_path
        from attnviz.outputs import check_apart

        if self.save is not None:
            saving.check_save_folder(self.save, "--save")
        if self.animate is not None:
            check_output_path(self.animate, (".gif",), "--animate")
        if self.history is not None:
            check_output_path(self.history, (".npz",), "--history")
        saved = None if self.save is None else model_folder(self.save)
        check_apart([(self.animate, "--animate"), (self.history, "--history")], [saved])

    def write(self, trained: Trained) -> list[Path]:
        """The files asked for, inside the command's staged writes; the paths written."""
        written = []
        if self.save is not None:
            trained.save(self.save)
            written.append(self.save)
        if self.history is not None:
            trained.save_history(self.history)
            written.append(self.history)
        if self.animate is not None:
            from attnviz.render.live.animation import save_animation

            save_animation(trained.task, trained.snapshots, self.animate)
            written.append(self.animate)
        return written


def model_folder(folder: Path) -> FolderOutput:
    """--save: the folder and the model's files (config.json, weights.npz)."""
    return saving.model_folder(folder, "--save")


def run(
    task: str,
    readout: str | None,
    surface: Surface,
    *,
    seed: int,
    steps: int | None,
    until: float | None,
    pace: float,
    files: TrainingFiles,
) -> None:
    """``attnviz train TASK``: trained live in the console, what it learned printed, then the
    files written, all or none."""
    from attnviz.files import staged_writes
    from attnviz.render.live.training_view import TrainingView, print_lines

    if not 0 <= pace <= 600:
        raise AttnvizError(f"--pace {pace:g}: give 0 to 600 seconds.")
    check_training(steps, until, seed)
    chosen = make_task(task, readout, seed=seed)
    files.check()
    console = surface.console()
    print_lines(console, report.start(chosen, network.shape_of(chosen), seed=seed))
    console.print()
    with staged_writes():  # every file, or none
        with TrainingView(console, chosen, pace=pace, steps=steps) as view:
            trained = train(
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
        written = files.write(trained)
    surface.wrote_all(written)


def explain_step(
    task: str,
    readout: str | None,
    surface: Surface,
    *,
    seed: int,
    steps: int | None,
    files: TrainingFiles,
) -> None:
    """``attnviz train coref --explain-step``: one step of gradient descent, printed; nothing
    is trained or written (``steps`` and ``files``, which would train and write, refused)."""
    from attnviz.render.terminal.training_step import print_gradient_step

    if task != "coref":
        raise AttnvizError(f"--explain-step is for coref; {task} has no such lesson.")
    if steps is not None or files != TrainingFiles():
        raise AttnvizError(
            "--explain-step prints one step and trains nothing: leave out --steps, --save, "
            "--animate and --history."
        )
    if seed < 0:
        raise AttnvizError(f"--seed {seed}: give a seed of 0 or more.")
    readout = "pointer" if readout is None else readout
    print_gradient_step(surface.console(), readout=readout, seed=seed)
