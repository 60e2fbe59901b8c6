"""A trained toy model as a folder: config.json (what it is: task, readout, vocabulary, sizes,
how it was trained) and weights.npz (E, P, W_Q.1, W_K.1, W_V.1, W_O.1, …, and W_U when the
readout has an output layer), read back by families.toy. numpy's .npz holds plain arrays
and is read without pickle."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import OutputProblem
from attnviz.files import atomic_write, staged_writes
from attnviz.outputs import FolderOutput, check_folder, make_folder
from attnviz.train.network import Shape
from attnviz.train.tasks import Task

MODEL_TYPE = "attnviz-toy"  # config.json's model_type for a model attnviz trained
CONFIG = "config.json"
WEIGHTS = "weights.npz"


def model_config(
    task: Task, shape: Shape, *, seed: int, steps: int, accuracy: float
) -> dict[str, Any]:
    """config.json's content for a model of ``task`` trained ``steps`` steps from ``seed``."""
    return {
        "model_type": MODEL_TYPE,
        "task": task.name,
        "summary": task.summary,
        "readout": task.readout.value,
        "vocabulary": list(task.vocabulary),
        "classes": list(task.classes),
        "probes": [
            {"words": list(p.words), "focus": p.focus, "answer": p.answer} for p in task.probes
        ],
        "d_model": shape.d_model,
        "n_heads": shape.n_heads,
        "n_layers": shape.n_layers,
        "max_positions": shape.max_positions,
        "trained_lengths": list(task.lengths),
        "causal": shape.causal,
        "training": {
            "seed": seed,
            "steps": steps,
            "batch": task.batch,
            "learning_rate": task.learning_rate,
            "learning_rate_decay_steps": task.decay_steps,
            "optimiser": "Adam",
            "train_examples": len(task.train.ids),
            "held_out_examples": len(task.held_out.ids),
            "held_out": task.held_out_rule,
            "held_out_accuracy": accuracy,
        },
    }


def save_model(
    folder: Path, config: Mapping[str, Any], parameters: Mapping[str, FloatArray]
) -> None:
    """Write the folder, both files or neither (the folder is made if it is missing)."""
    arrays = {key: np.asarray(value, np.float32) for key, value in parameters.items()}

    def write_weights(path: Path) -> None:
        with open(path, "wb") as stream:
            np.savez(stream, **cast(dict[str, Any], arrays))  # plain float32: no pickle

    def write_config(path: Path) -> None:
        path.write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    with staged_writes():
        make_folder(folder)
        atomic_write(folder / WEIGHTS, write_weights)
        atomic_write(folder / CONFIG, write_config)


def model_folder(folder: Path, what: str) -> FolderOutput:
    """A model folder as an output (``what``: --save, or folder in Python) and the model's
    files it writes (config.json, weights.npz)."""
    import re

    names = re.compile("|".join(re.escape(name) for name in (CONFIG, WEIGHTS)))
    return FolderOutput(folder, what, names)


def check_save_folder(folder: Path, what: str) -> None:
    """A folder to write a model into: new, empty, or holding a model attnviz saved (replaced);
    never a folder whose config.json is something else's."""
    check_folder(*model_folder(folder, what))
    config = folder / CONFIG
    if config.is_file():
        try:
            ours = json.loads(config.read_text(encoding="utf-8")).get("model_type") == MODEL_TYPE
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours:
            raise OutputProblem(
                f"{what} {folder} holds a config.json attnviz did not write; choose another "
                "folder (attnviz replaces only a model it saved)."
            )
