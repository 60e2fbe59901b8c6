"""The training loop: steps of Adam on mini-batches, with a snapshot of what the model does
(loss, held-out accuracy, where each probe's focus word looks in every layer) along the way."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.model.memory import keep_freed_memory
from attnviz.train import network
from attnviz.train.adam import Adam
from attnviz.train.tasks import Task


@dataclass(frozen=True, eq=False)
class Snapshot:
    """The model after ``step`` steps."""

    step: int
    loss: float  # the mean cross-entropy of this step's batch
    # On the held-out examples, as measured after step ``measured``: on those measured while
    # training (Task.check), or with ``on_all`` on every one of them.
    accuracy: float
    measured: int  # held-out accuracy is measured every Task.check_every steps and at the end
    # [probes, layers, heads, n]: each probe's focus row in every layer and head
    rows: tuple[FloatArray, ...]
    seconds: float  # time spent training so far (snapshots not counted)
    on_all: bool = True  # ``accuracy`` is of every held-out example, not of Task.check's


@dataclass
class Trainer:
    """A task's model and its optimiser, stepped one batch at a time, reproducibly from a seed."""

    task: Task
    seed: int
    shape: network.Shape = field(init=False)
    parameters: network.Parameters = field(init=False)
    steps: int = field(init=False, default=0)
    seconds: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        # Each step and each held-out check frees arrays of a few MB that the next one makes
        # again: kept by malloc for reuse, they are not faulted in anew every time (a second
        # of system time in a 3 s run of the word readout, 0.1 s with them kept).
        keep_freed_memory()
        self._rng = np.random.default_rng(self.seed)
        self.shape = network.shape_of(self.task)
        self.parameters = network.initial_parameters(self.shape, self._rng)
        self._adam = Adam(self.task.learning_rate, decay=self.task.decay_steps)

    def step(self) -> float:
        """One step of Adam on a random batch; returns the batch's loss before the step."""
        started = time.perf_counter()
        train = self.task.train
        size = min(self.task.batch, len(train.ids))
        pick = self._rng.choice(len(train.ids), size=size, replace=False)
        batch = train.take(pick)
        loss, gradients, _ = network.loss_and_gradients(self.parameters, self.shape, batch)
        self.parameters = self._adam.step(self.parameters, gradients)
        self.steps += 1
        self.seconds += time.perf_counter() - started
        return loss

    def accuracy(self) -> float:
        """Held-out accuracy on the examples measured while training (Task.check)."""
        return network.accuracy(self.parameters, self.shape, self.task.check)

    def accuracy_on_all(self) -> float:
        """Held-out accuracy on every held-out example."""
        return network.accuracy(self.parameters, self.shape, self.task.held_out)

    def probe_rows(self) -> tuple[FloatArray, ...]:
        """Each probe's focus row in every layer and head.  -> probes × [layers, heads, n]"""
        rows = []
        for probe in self.task.probes:
            ids = np.array([[self.task.vocabulary.index(word) for word in probe.words]])
            run = network.forward(self.parameters, self.shape, ids, np.array([probe.focus]))
            rows.append(np.stack([p.weights[0, :, probe.focus] for p in run.layers]))
        return tuple(rows)

    def snapshot(self, loss: float, previous: Snapshot | None = None) -> Snapshot:
        """The model now; held-out accuracy measured anew unless ``previous`` (this run's
        last snapshot) is given, whose measurement is carried on."""
        on_all = self.task.checked is None
        if previous is None:
            accuracy, measured = self.accuracy(), self.steps
        else:
            accuracy, measured = previous.accuracy, previous.measured
            on_all = previous.on_all
        rows = self.probe_rows()
        return Snapshot(self.steps, loss, accuracy, measured, rows, self.seconds, on_all)


def run(
    trainer: Trainer, *, max_steps: int, until: float | None, every_step: bool = True
) -> Iterator[Snapshot]:
    """Train, yielding a snapshot before the first step and after every step. Held-out
    accuracy is measured every Task.check_every steps and after the last; training stops after
    ``max_steps`` steps, or at the first measurement that reaches ``until`` (None: never
    early). Where only some held-out examples are measured while training (Task.check), a
    measurement that reaches ``until`` is confirmed on all of them before training stops.
    ``every_step=False`` (with ``until`` None) yields only the first and the last snapshot:
    the same steps, without the views and checks after each that a script needs not.
    """
    train, size = trainer.task.train, trainer.task.batch
    first_batch = train.take(np.arange(min(size, len(train.ids))))
    loss = network.loss_and_gradients(trainer.parameters, trainer.shape, first_batch)[0]
    snapshot = trainer.snapshot(loss)
    yield snapshot
    if not every_step and until is None:
        while trainer.steps < max_steps:
            loss = trainer.step()
        yield trainer.snapshot(loss)
        return
    while trainer.steps < max_steps:
        loss = trainer.step()
        check = trainer.steps % trainer.task.check_every == 0 or trainer.steps == max_steps
        snapshot = trainer.snapshot(loss, None if check else snapshot)
        reached = check and until is not None and snapshot.accuracy >= until
        if reached and not snapshot.on_all:
            snapshot = replace(snapshot, accuracy=trainer.accuracy_on_all(), on_all=True)
            reached = until is not None and snapshot.accuracy >= until
        yield snapshot
        if reached:
            return
