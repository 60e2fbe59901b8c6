"""A trained toy model as ``attnviz.api.train.train`` returns it: its task, weights, training
history and what it learned; saved as a model folder that ``--model FOLDER`` reads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from attnviz.arguments import output_file, path
from attnviz.arrays import FloatArray
from attnviz.errors import OutputProblem, shown_value, spelled
from attnviz.labels import percent
from attnviz.train import findings as measured
from attnviz.train import network, report, saving
from attnviz.train.history import save_history
from attnviz.train.loop import Snapshot
from attnviz.train.tasks import Task


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
