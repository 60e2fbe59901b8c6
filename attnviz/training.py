"""``attnviz train`` as a function: a tiny transformer trained live, in numpy, with what it
learned. (``attnviz.train`` is the package of its steps; the function is this module's.)

>>> from attnviz.training import train
>>> trained = train("reverse")
>>> trained.findings.accuracy >= 0.99
True

Every argument is checked as it enters, before any work: a wrong kind (``steps="10"``,
``steps=2.5``, ``seed=True``, ``on_snapshot=1``) is an AttnvizError naming the keyword.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attnviz.arguments import flags, output_file, path
from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, OutputProblem, option, shown_value, spelled
from attnviz.labels import percent
from attnviz.serial import one_at_a_time
from attnviz.train import findings as measured
from attnviz.train import loop, network, report, saving, tasks
from attnviz.train.history import save_history
from attnviz.train.loop import Snapshot
from attnviz.train.tasks import Readout, Task
from attnviz.train.threads import one_blas_thread

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


@dataclass(frozen=True, eq=False)
class Trained:
    """A trained toy model, its training history and what it learned."""

    task: Task
    seed: int
    shape: network.Shape
    parameters: dict[str, FloatArray]
    snapshots: tuple[Snapshot, ...]
    findings: measured.Findings

    def __repr__(self) -> str:
        return (
            f"<Trained {self.task.name}: seed {self.seed}, {self.steps} steps, held-out "
            f"accuracy {percent(self.findings.accuracy)}>"
        )

    @property
    def steps(self) -> int:
        return self.snapshots[-1].step

    @property
    def seconds(self) -> float:
        """Time spent in training steps (snapshots and findings not counted)."""
        return self.snapshots[-1].seconds

    def summary(self) -> list[str]:
        """What was trained and what it learned, as the command line prints it."""
        return [
            *report.start(self.task, self.shape, seed=self.seed),
            *report.finish(self.task, self.findings, steps=self.steps, seconds=self.seconds),
        ]

    def save(self, folder: str | Path) -> None:
        """A model folder (config.json, weights.npz) that ``--model FOLDER`` and
        ``attnviz.explain(..., model=FOLDER)`` read: made if missing; a folder holding a model
        attnviz saved has it replaced; any other config.json there is refused, not replaced."""
        checked = path("folder", folder, reading=False)
        if not str(folder).strip():  # Path("") is ".": the model would land among your files
            raise OutputProblem(
                f"folder={shown_value(folder)} names no folder; give one, e.g. "
                'save("reverse-model").'
            )
        saving.check_save_folder(checked, spelled("--save", "folder"))
        config = saving.model_config(
            self.task, self.shape, seed=self.seed, steps=self.steps, accuracy=self.findings.accuracy
        )
        saving.save_model(checked, config, self.parameters)

    def save_history(self, path: str | Path) -> None:
        """Every snapshot as arrays in one .npz file (no other extension: it is an .npz)."""
        from attnviz.files import check_output_path

        checked = output_file("path", path)
        check_output_path(checked, (".npz",), spelled("--history", "path"))
        save_history(checked, self.task, self.snapshots)


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
