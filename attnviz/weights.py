"""The matrices of one attention layer: drawn at random from a seed, or loaded from a file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.config import AttentionConfig
from attnviz.errors import AttnvizError, FileProblem
from attnviz.files import finite_matrix, load_json, load_npz

WEIGHT_KEYS = ("W_Q", "W_K", "W_V", "W_O")


@dataclass(frozen=True)
class AttentionWeights:
    """The learned (here: random or loaded) matrices of one multi-head attention layer."""

    W_Q: FloatArray  # [h, d_model, d_k]
    W_K: FloatArray  # [h, d_model, d_k]
    W_V: FloatArray  # [h, d_model, d_k]
    W_O: FloatArray  # [h·d_k, d_model]
    source: str = "given"  # where the matrices came from, for the header of the views
    path: Path | None = None  # the file they were read from, if any

    def __post_init__(self) -> None:
        shape = self.W_Q.shape
        if len(shape) != 3:
            raise AttnvizError(f"W_Q must have shape [heads, d_model, d_k], got {list(shape)}.")
        for name in ("W_K", "W_V"):
            if getattr(self, name).shape != shape:
                got = list(getattr(self, name).shape)
                raise AttnvizError(
                    f"{name} has shape {got} but W_Q has {list(shape)}; they must match."
                )
        n_heads, d_model, d_k = shape
        if min(shape) <= 0:
            raise AttnvizError(f"W_Q has an empty dimension, shape {list(shape)}.")
        if self.W_O.shape != (n_heads * d_k, d_model):
            raise AttnvizError(
                f"W_O has shape {list(self.W_O.shape)}; with W_Q of shape {list(shape)} it must be "
                f"[heads·d_k, d_model] = [{n_heads * d_k}, {d_model}]."
            )
        if n_heads * d_k != d_model:
            raise AttnvizError(
                f"W_Q has shape {list(shape)}: heads·d_k = {n_heads * d_k} must equal "
                f"d_model = {d_model}."
            )

    @property
    def n_heads(self) -> int:
        return int(self.W_Q.shape[0])

    @property
    def d_model(self) -> int:
        return int(self.W_Q.shape[1])


def random_weights(config: AttentionConfig, rng: np.random.Generator) -> AttentionWeights:
    """Draw W_Q, W_K, W_V [h, d_model, d_k] and W_O [h·d_k, d_model] from scaled normals.

    W_V and W_O use N(0, 1/fan_in) (LeCun), which keeps unit-variance embeddings at unit
    variance. W_Q and W_K use N(0, 2/d_model): queries and keys then have components of variance
    2, q·k/√d_k has variance about 4 (standard deviation 2), and the softmax rows come out
    neither flat (all 1/n) nor one-hot: the largest weight of an 11-word row is typically about
    0.4 rather than 1/11. That is a choice for teaching, not a property of trained models.
    """
    h, d_model, d_k = config.n_heads, config.d_model, config.d_k
    std_query_key = np.sqrt(2.0 / d_model)
    w_q = rng.normal(0.0, std_query_key, size=(h, d_model, d_k))
    w_k = rng.normal(0.0, std_query_key, size=(h, d_model, d_k))
    w_v = rng.normal(0.0, 1.0 / np.sqrt(d_model), size=(h, d_model, d_k))
    w_o = rng.normal(0.0, 1.0 / np.sqrt(h * d_k), size=(h * d_k, d_model))
    return AttentionWeights(
        W_Q=w_q, W_K=w_k, W_V=w_v, W_O=w_o, source=f"random (seed {config.seed})"
    )


def load_weights(path: Path) -> AttentionWeights:
    """Read W_Q, W_K, W_V [h, d_model, d_k] and W_O [h·d_k, d_model] from ``.npz`` or ``.json``.

    An exported trace is such a file: its other keys are ignored.
    """
    extension = path.suffix.lower()
    if extension == ".npz":
        arrays: dict[str, object] = dict(load_npz(path, "Weights"))
    elif extension == ".json":
        data, repeated_keys = load_json(path, "Weights")
        if not isinstance(data, dict):
            raise FileProblem(
                f"Weights file {path} must hold a JSON object with keys W_Q, W_K, W_V, W_O."
            )
        twice = [key for key in repeated_keys if key in WEIGHT_KEYS]
        if twice:  # two different matrices under one name: neither is safe to pick
            raise FileProblem(
                f"Weights file {path} gives {', '.join(twice)} more than once; keep one of each."
            )
        arrays = data
    else:
        raise FileProblem(
            f"Weights file {path} has extension {extension or '(none)'!r}; use an .npz (or .json) "
            "with keys W_Q, W_K, W_V, W_O, such as a trace saved with --export."
        )
    missing = [key for key in WEIGHT_KEYS if key not in arrays]
    if missing:
        raise FileProblem(
            f"Weights file {path} lacks {', '.join(missing)}; it needs W_Q, W_K, W_V "
            "[heads, d_model, d_k] and W_O [heads·d_k, d_model]."
        )
    matrices = {
        key: finite_matrix(arrays[key], name=key, source=path, ndim=2 if key == "W_O" else 3)
        for key in WEIGHT_KEYS
    }
    try:
        return AttentionWeights(**matrices, source=f"loaded from {path}", path=path)
    except AttnvizError as error:
        raise FileProblem(f"Weights file {path}: {error.message}") from None
