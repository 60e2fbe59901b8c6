"""``attnviz.train``: a tiny transformer trained live, in numpy, with what it learned.

>>> import attnviz
>>> trained = attnviz.train("reverse")
>>> trained.findings.accuracy >= 0.99
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attnviz.arguments import output_file, path
from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, option
from attnviz.labels import percent
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
    if name not in TASKS:
        raise AttnvizError(f"There is no task {name!r}; choose one of {', '.join(TASKS)}.")
    if readout not in (None, "pointer", "word"):
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
        ``attnviz.explain(..., model=FOLDER)`` read."""
        config = saving.model_config(
            self.task, self.shape, seed=self.seed, steps=self.steps, accuracy=self.findings.accuracy
        )
        saving.save_model(path("folder", folder, reading=False), config, self.parameters)

    def save_history(self, path: str | Path) -> None:
        """Every snapshot as arrays in one .npz file."""
        save_history(output_file("path", path), self.task, self.snapshots)


def check_training(steps: int | None, until: float | None, seed: int) -> None:
    """Refuse settings that cannot train, before any work."""
    if steps is not None and not 1 <= steps <= MAX_STEPS:
        raise AttnvizError(f"{option('steps', steps)}: give 1 to {MAX_STEPS:,} steps.")
    if until is not None and not 0 < until <= 1:
        raise AttnvizError(
            f"{option('until', until)}: give a held-out accuracy above 0 and at most 1, e.g. 0.99."
        )
    if seed < 0:
        raise AttnvizError(f"{option('seed', seed)}: give a seed of 0 or more.")


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
