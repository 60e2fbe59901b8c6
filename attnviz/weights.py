"""The matrices of one attention layer: drawn at random from a seed, or loaded from a file."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from attnviz.arguments import instance, numbers, whole
from attnviz.arguments import path as checked_path
from attnviz.arrays import FloatArray
from attnviz.config import MAX_D_MODEL, AttentionConfig
from attnviz.errors import AttnvizError, FileProblem, option
from attnviz.limits import BYTES_PER_NUMBER, check_result
from attnviz.provenance import WeightsKind, WeightsOrigin

if TYPE_CHECKING:
    from attnviz.files import ArrayHeader, HeaderCheck

WEIGHT_KEYS = ("W_Q", "W_K", "W_V", "W_O")
BIAS_KEYS = ("b_Q", "b_K", "b_V", "b_O")


@dataclass(frozen=True)
class AttentionWeights:
    """The learned (here: random or loaded) matrices of one multi-head attention layer.

    Pretrained layers add biases: Q_i = X·W_Q[i] + b_Q[i], …, output = Concat·W_O + b_O.
    """

    W_Q: FloatArray  # [h, d_model, d_k]
    W_K: FloatArray  # [G, d_model, d_k]: G = h, or fewer with grouped-query attention
    W_V: FloatArray  # [G, d_model, d_k]
    W_O: FloatArray  # [h·d_k, d_model]
    origin: WeightsOrigin = WeightsOrigin(WeightsKind.GIVEN)  # how they were made
    path: Path | None = None  # the file they were read from, if any
    b_Q: FloatArray | None = None  # [h, d_k]
    b_K: FloatArray | None = None  # [G, d_k]
    b_V: FloatArray | None = None  # [G, d_k]
    b_O: FloatArray | None = None  # [d_model]

    def __post_init__(self) -> None:
        # Read-only (copied when the caller could still change them): stacked_rows is made once
        # from them, and a trace records them as they were used.
        from attnviz.trace import frozen_array

        for key in (*WEIGHT_KEYS, *BIAS_KEYS):
            if getattr(self, key) is not None or key in WEIGHT_KEYS:
                given = numbers(key, getattr(self, key))
                check_result(key, given.shape, BYTES_PER_NUMBER)  # a broadcast view, copied
                object.__setattr__(self, key, frozen_array(given))
        shape = self.W_Q.shape
        if len(shape) != 3:
            raise AttnvizError(f"W_Q must have shape [heads, d_model, d_k], got {list(shape)}.")
        n_heads, d_model, d_k = shape
        if min(shape) <= 0:
            raise AttnvizError(f"W_Q has an empty dimension, shape {list(shape)}.")
        self._check_key_value_shapes()
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
        biases = [getattr(self, key) for key in BIAS_KEYS]
        if any(b is not None for b in biases):
            if any(b is None for b in biases):
                raise AttnvizError("Give all four biases b_Q, b_K, b_V, b_O, or none.")
            g = self.n_kv_heads
            expected_shapes = [(n_heads, d_k), (g, d_k), (g, d_k), (d_model,)]
            for key, expected in zip(BIAS_KEYS, expected_shapes, strict=True):
                got = getattr(self, key).shape
                if got != expected:
                    raise AttnvizError(
                        f"{key} has shape {list(got)}; with W_Q of shape {list(shape)} and "
                        f"{g} key/value heads it must be {list(expected)}."
                    )

    def _check_key_value_shapes(self) -> None:
        """W_K and W_V: [G, d_model, d_k] alike, G dividing h (G = h in the paper's attention,
        fewer in grouped-query attention, where h/G query heads share each)."""
        n_heads, d_model, d_k = self.W_Q.shape
        for name in ("W_K", "W_V"):
            got = getattr(self, name).shape
            if len(got) != 3 or got[1:] != (d_model, d_k) or got != self.W_K.shape:
                raise AttnvizError(
                    f"{name} has shape {list(got)} but W_Q has {list(self.W_Q.shape)}; they "
                    "must match (or, with grouped-query attention, W_K and W_V [G, d_model, d_k] "
                    "for G key/value heads)."
                )
        if got[0] <= 0 or n_heads % got[0] != 0:
            raise AttnvizError(
                f"W_K has {got[0]} key/value heads, which does not divide W_Q's {n_heads} "
                "heads; each key/value head must serve the same number of query heads."
            )

    @property
    def has_biases(self) -> bool:
        return self.b_Q is not None

    @cached_property
    def stacked_rows(self) -> FloatArray:
        """W_Qᵀ over W_Kᵀ over W_Vᵀ, each head's d_k rows together, [(h + 2G)·d_k, d_model] in C
        order (a torch checkpoint's q, k and v weights as it stores them, one above the other):
        Q, K and V of every head in one product, W·Xᵀ (kernels.project_together). With biases
        of the weights' own type (a checkpoint's) each row ends in its bias,
        [(h + 2G)·d_k, d_model + 1], so that the product adds them too: [W | b]·[Xᵀ; 1] =
        W·Xᵀ + b. Made once per layer's weights."""
        blocks = [
            w.transpose(0, 2, 1).reshape(-1, self.d_model) for w in (self.W_Q, self.W_K, self.W_V)
        ]
        if (
            self.stacked_bias is not None
            or self.b_Q is None
            or self.b_K is None
            or self.b_V is None
        ):
            return np.concatenate(blocks)
        # One array written once: the rows, then each row's bias in the last column.
        stacked = np.empty((sum(map(len, blocks)), self.d_model + 1), blocks[0].dtype)
        start = 0
        for block, bias in zip(blocks, (self.b_Q, self.b_K, self.b_V), strict=True):
            stacked[start : start + len(block), : self.d_model] = block
            stacked[start : start + len(block), self.d_model] = bias.reshape(-1)
            start += len(block)
        return stacked

    @cached_property
    def stacked_bias(self) -> FloatArray | None:
        """b_Q, b_K and b_V one after the other, [(h + 2G)·d_k], when they are added apart: when
        the weights and biases are not all of one type, a bias column in stacked_rows would be
        rounded to the weights' type (or promote them); None when stacked_rows holds them, or
        without biases."""
        arrays = (self.W_Q, self.W_K, self.W_V, self.b_Q, self.b_K, self.b_V)
        if self.b_Q is None or self.b_K is None or self.b_V is None:
            return None
        if len({np.asarray(array).dtype for array in arrays}) == 1:
            return None
        return np.concatenate([self.b_Q.reshape(-1), self.b_K.reshape(-1), self.b_V.reshape(-1)])

    @property
    def n_heads(self) -> int:
        return int(self.W_Q.shape[0])

    @property
    def d_model(self) -> int:
        return int(self.W_Q.shape[1])

    @property
    def n_kv_heads(self) -> int:
        """G, the key/value heads (h but in grouped-query attention)."""
        return int(self.W_K.shape[0])


def random_weights(config: AttentionConfig, rng: np.random.Generator) -> AttentionWeights:
    """Draw W_Q [h, d_model, d_k], W_K, W_V [G, d_model, d_k] (G = config.kv_heads) and W_O
    [h·d_k, d_model] from scaled normals, in that order (with G = h the paper's layer).

    W_V and W_O use N(0, 1/fan_in) (LeCun), which keeps unit-variance embeddings at unit
    variance. W_Q and W_K use N(0, 2/d_model): queries and keys then have components of variance
    2, q·k/√d_k has variance about 4 (standard deviation 2), and the softmax rows come out
    neither flat (all 1/n) nor one-hot: the largest weight of an 11-word row is typically about
    0.4 rather than 1/11. That is a choice for teaching, not a property of trained models.
    """
    instance("config", config, AttentionConfig, "an AttentionConfig, e.g. AttentionConfig(8, 2)")
    instance("rng", rng, np.random.Generator, "a numpy Generator, e.g. np.random.default_rng(0)")
    h, g, d_model, d_k = config.n_heads, config.kv_heads, config.d_model, config.d_k
    std_query_key = np.sqrt(2.0 / d_model)
    w_q = rng.normal(0.0, std_query_key, size=(h, d_model, d_k))
    w_k = rng.normal(0.0, std_query_key, size=(g, d_model, d_k))
    w_v = rng.normal(0.0, 1.0 / np.sqrt(d_model), size=(g, d_model, d_k))
    w_o = rng.normal(0.0, 1.0 / np.sqrt(h * d_k), size=(h * d_k, d_model))
    origin = WeightsOrigin(WeightsKind.RANDOM, seed=config.seed)
    return AttentionWeights(W_Q=w_q, W_K=w_k, W_V=w_v, W_O=w_o, origin=origin)


def load_weights(path: Path, *, layer: int | None = None) -> AttentionWeights:
    """Read W_Q [h, d_model, d_k], W_K, W_V [G, d_model, d_k] (G = h, or fewer key/value heads
    in grouped-query attention) and W_O [h·d_k, d_model] from ``.npz`` or ``.json``, and the
    biases b_Q [h, d_k], b_K, b_V [G, d_k] and b_O [d_model] when the file has all four.

    An exported trace is such a file (a pretrained layer's export has the biases): its other
    keys are ignored. A model's export holds every layer, each array with a leading layer axis
    (W_Q [L, h, d_model, d_k]): ``layer``, from 1, says which layer's matrices to read, and is
    required there and refused for a file of one layer.
    """
    from attnviz.files import finite_matrix, load_json, load_npz
    from attnviz.trace_files import export_layer, layers_in

    path = checked_path("path", path)
    whole(layer=layer)
    extension = path.suffix.lower()
    config: object = None
    if extension == ".npz":
        wanted = (*WEIGHT_KEYS, *BIAS_KEYS, "config")  # an export's other arrays are not read
        arrays: dict[str, object] = dict(load_npz(path, "Weights", wanted, check=_size_check(path)))
        config = arrays.get("config")
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
        config = data.get("config")
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
    keys = [*WEIGHT_KEYS, *(BIAS_KEYS if all(key in arrays for key in BIAS_KEYS) else ())]
    n_layers = layers_in(arrays["W_Q"], _NDIM["W_Q"])
    index = None
    if n_layers is not None:
        model = _file_origin(path, config).model
        index = export_layer(n_layers, layer, f"weights file {path}", model)
    elif layer is not None:
        made = _file_origin(path, config)
        which = f", layer {made.layer} of {made.model}" if made.model and made.layer else ""
        raise AttnvizError(
            f"{option('layer', layer)}: weights file {path} holds one layer's weights{which}; "
            f"drop {option('layer')}, which picks a layer of a model's export "
            f"({option('model', metavar='…')} {option('export', metavar='FILE')})."
        )
    matrices = {
        key: finite_matrix(
            arrays[key], name=key, source=path, ndim=_NDIM[key] + (index is not None)
        )
        for key in keys
    }
    if index is not None:
        for key, matrix in matrices.items():
            if len(matrix) != n_layers:
                raise FileProblem(
                    f"Weights file {path}: {key} holds {len(matrix)} layers but W_Q {n_layers}."
                )
        matrices = {key: matrix[index] for key, matrix in matrices.items()}
    try:
        origin = _file_origin(path, config, 0 if index is None else index)
        return AttentionWeights(**matrices, origin=origin, path=path)
    except AttnvizError as error:
        raise FileProblem(f"Weights file {path}: {error.message}") from None


#: Dimensions of one layer's arrays: [h, d_model, d_k] for W_Q, [d_model] for b_O, …
_NDIM = {"W_Q": 3, "W_K": 3, "W_V": 3, "W_O": 2, "b_Q": 2, "b_K": 2, "b_V": 2, "b_O": 1}


def _size_check(path: Path) -> HeaderCheck:
    """Refuse, before reading it, a matrix larger than one layer of any d_model attnviz runs:
    W_Q, W_K, W_V [h, d_model, d_k] and W_O [h·d_k, d_model] hold d_model² numbers per layer,
    the biases d_model."""

    def check(name: str, header: ArrayHeader) -> None:
        if name not in _NDIM:
            return
        numbers = math.prod(header.shape[-_NDIM[name] :])  # a leading axis is the layers
        largest = MAX_D_MODEL**2 if name in WEIGHT_KEYS else MAX_D_MODEL
        if numbers > largest:
            raise FileProblem(
                f"Weights file {path}: {name} has shape {list(header.shape)}, larger than one "
                f"layer of attnviz's largest d_model, {MAX_D_MODEL} ({largest:,} numbers)."
            )

    return check


def _file_origin(path: Path, config: object, index: int = 0) -> WeightsOrigin:
    """Weights read from ``path`` (its layer ``index``, from 0, for a model's export); an
    attnviz export also says what they were made from (a seed, a model and its layer), so a
    random trace fed back is still called random and a model's layer is still named."""
    from attnviz.trace_files import read_provenance

    try:
        made = read_provenance(config, path)
    except FileProblem:
        made = ()  # a config it cannot read: the weights themselves are all it needs
    before = made[index].weights if index < len(made) else None
    if before is None:
        return WeightsOrigin(WeightsKind.FILE, path=str(path))
    return WeightsOrigin(
        WeightsKind.FILE,
        path=str(path),
        seed=before.seed,
        model=before.model,
        architecture=before.architecture,
        layer=before.layer,
        n_layers=before.n_layers,
        trained=before.trained,
    )
