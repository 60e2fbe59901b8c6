"""A training run's snapshots as arrays in one .npz file (plain numbers and text, no pickle):
step, loss and held-out accuracy per snapshot, and each probe's focus rows."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from attnviz.files import atomic_write
from attnviz.train.loop import Snapshot
from attnviz.train.tasks import Task


def history_arrays(task: Task, snapshots: Sequence[Snapshot]) -> dict[str, np.ndarray]:
    """step [S], loss [S], accuracy [S] (held-out, as measured after step measured [S]),
    seconds [S]; for probe p: probe{p}_words [n] (text),
    probe{p}_focus, probe{p}_answer (positions) and probe{p}_rows [S, layers, heads, n]."""
    arrays: dict[str, np.ndarray] = {
        "step": np.array([s.step for s in snapshots]),
        "loss": np.array([s.loss for s in snapshots]),
        "accuracy": np.array([s.accuracy for s in snapshots]),
        "measured": np.array([s.measured for s in snapshots]),
        "seconds": np.array([s.seconds for s in snapshots]),
        "task": np.array(task.name),
    }
    for index, probe in enumerate(task.probes, start=1):
        arrays[f"probe{index}_words"] = np.array(probe.words)
        arrays[f"probe{index}_focus"] = np.array(probe.focus)
        arrays[f"probe{index}_answer"] = np.array(probe.answer)
        arrays[f"probe{index}_rows"] = np.stack([s.rows[index - 1] for s in snapshots])
    return arrays


def save_history(path: Path, task: Task, snapshots: Sequence[Snapshot]) -> None:
    arrays = history_arrays(task, snapshots)

    def write(temporary: Path) -> None:
        with open(temporary, "wb") as stream:
            np.savez(stream, **cast(dict[str, Any], arrays))

    atomic_write(path, write)
