"""The training loop: steps of Adam on mini-batches, with a snapshot of what the model does
(loss, held-out accuracy, where each probe's focus word looks in every layer) along the way."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.train import network
from attnviz.train.adam import Adam
from attnviz.train.tasks import Examples, Task


@dataclass(frozen=True, eq=False)
class Snapshot:
    """The model after ``step`` steps."""

    step: int
    loss: float  # the mean cross-entropy of this step's batch
    accuracy: float  # on the held-out examples, as measured after step ``measured``
    measured: int  # held-out accuracy is measured every CHECK_EVERY steps and at the end
    # [probes, layers, heads, n]: each probe's focus row in every layer and head
    rows: tuple[FloatArray, ...]
    seconds: float  # time spent training so far (snapshots not counted)


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
        self._rng = np.random.default_rng(self.seed)
        self.shape = network.shape_of(self.task)
        self.parameters = network.initial_parameters(self.shape, self._rng)
        self._adam = Adam(self.task.learning_rate)

    def step(self) -> float:
        """One step of Adam on a random batch; returns the batch's loss before the step."""
        started = time.perf_counter()
        train = self.task.train
        size = min(self.task.batch, len(train.ids))
        pick = self._rng.choice(len(train.ids), size=size, replace=False)
        batch = Examples(train.ids[pick], train.targets[pick], train.query[pick])
        loss, gradients, _ = network.loss_and_gradients(self.parameters, self.shape, batch)
        self.parameters = self._adam.step(self.parameters, gradients)
        self.steps += 1
        self.seconds += time.perf_counter() - started
        return loss

    def accuracy(self) -> float:
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
        if previous is None:
            accuracy, measured = self.accuracy(), self.steps
        else:
            accuracy, measured = previous.accuracy, previous.measured
        return Snapshot(self.steps, loss, accuracy, measured, self.probe_rows(), self.seconds)


#: Steps between measurements of held-out accuracy: each is a forward pass over every held-out
#: example, costlier than a training step, so not after every one.
CHECK_EVERY = 5


def run(
    trainer: Trainer, *, max_steps: int, until: float | None, every_step: bool = True
) -> Iterator[Snapshot]:
    """Train, yielding a snapshot before the first step and after every step. Held-out
    accuracy is measured every CHECK_EVERY steps and after the last; training stops after
    ``max_steps`` steps, or at the first measurement that reaches ``until`` (None: never
    early). ``every_step=False`` (with ``until`` None) yields only the first and the last
    snapshot: the same steps, without the views and checks after each that a script needs not.
    """
    train, size = trainer.task.train, trainer.task.batch
    first_batch = Examples(train.ids[:size], train.targets[:size], train.query[:size])
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
        check = trainer.steps % CHECK_EVERY == 0 or trainer.steps == max_steps
        snapshot = trainer.snapshot(loss, None if check else snapshot)
        yield snapshot
        if check and until is not None and snapshot.accuracy >= until:
            return
