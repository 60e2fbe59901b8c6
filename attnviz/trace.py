"""AttentionTrace: every intermediate of one multi-head attention run, and its export.

Every view (terminal tables, heatmaps, files) is a function of a trace; none recomputes math.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.config import AttentionConfig
from attnviz.files import atomic_write

#: The arrays of a trace, in the order of the computation; also the keys of an exported file.
ARRAY_KEYS = (
    "X",
    "W_Q",
    "W_K",
    "W_V",
    "W_O",
    "Q",
    "K",
    "V",
    "scores",
    "scaled",
    "weights",
    "Z",
    "concat",
    "output",
)

BIAS_KEYS = ("b_Q", "b_K", "b_V", "b_O")

EXPORT_EXTENSIONS = (".npz", ".json")


def frozen_mask(mask: np.ndarray) -> np.ndarray:
    """A read-only boolean copy of a mask."""
    result = np.array(mask, dtype=bool)
    result.setflags(write=False)
    return result


def frozen_array(array: FloatArray, *, copy: bool = True) -> FloatArray:
    """A read-only array, so a trace cannot be changed after the fact.

    copy=True gives a float64 copy, for arrays a caller may still hold and change. copy=False
    gives a read-only view in the array's own dtype (float32 in the model's default mode), for
    arrays made for the trace that nobody else holds: no time or memory spent copying.
    """
    result = np.array(array, dtype=np.float64) if copy else np.asarray(array).view()
    result.setflags(write=False)
    return result


@dataclass(frozen=True, eq=False)
class AttentionTrace:
    """Every step of softmax(Q·Kᵀ/√d_k)·V for each head, then Concat·W_O.

    Shapes: n tokens, h heads, d_k = d_model / h.
    """

    tokens: tuple[str, ...]  # [n] the words as they appear in the sentence
    X: FloatArray  # [n, d_model] embeddings, one row per token
    W_Q: FloatArray  # [h, d_model, d_k] query projection of each head
    W_K: FloatArray  # [h, d_model, d_k] key projection of each head
    W_V: FloatArray  # [h, d_model, d_k] value projection of each head
    W_O: FloatArray  # [h·d_k, d_model] output projection, mixing the heads
    Q: FloatArray  # [h, n, d_k] Q_i = X·W_Q[i]
    K: FloatArray  # [h, n, d_k] K_i = X·W_K[i]
    V: FloatArray  # [h, n, d_k] V_i = X·W_V[i]
    scores: FloatArray  # [h, n, n] Q_i·K_iᵀ, before scaling
    scaled: FloatArray  # [h, n, n] scores / √d_k
    weights: FloatArray  # [h, n, n] softmax of each row of scaled; rows sum to 1
    Z: FloatArray  # [h, n, d_k] weights·V_i
    concat: FloatArray  # [n, h·d_k] [Z_1 | … | Z_h]
    output: FloatArray  # [n, d_model] concat·W_O
    config: AttentionConfig
    embeddings_source: str = ""  # where X came from, in words, for the header of the views
    weights_source: str = ""  # where the W matrices came from, in words
    # Biases, which pretrained encoders have and the random layer has not: Q = X·W_Q + b_Q, …
    b_Q: FloatArray | None = None  # [h, d_k]
    b_K: FloatArray | None = None  # [h, d_k]
    b_V: FloatArray | None = None  # [h, d_k]
    b_O: FloatArray | None = None  # [d_model]
    # [n, n] bool, True where query i may attend to key j; None when every pair may (no mask).
    mask: np.ndarray | None = None
    # Cross-attention (encoder–decoder): the source words give the keys and values, ``tokens``
    # (the target words) the queries; X_source [n_source, d_model] are their embeddings. Then
    # K, V are [h, n_source, d_k] and scores, scaled, weights [h, n_target, n_source].
    source_tokens: tuple[str, ...] | None = None
    X_source: FloatArray | None = None

    @property
    def key_tokens(self) -> tuple[str, ...]:
        """The words along the columns of scores and weights: the source words, or tokens."""
        return self.source_tokens if self.source_tokens is not None else self.tokens

    @property
    def is_cross(self) -> bool:
        return self.source_tokens is not None

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def n_heads(self) -> int:
        return self.config.n_heads

    @property
    def d_model(self) -> int:
        return self.config.d_model

    @property
    def d_k(self) -> int:
        return self.config.d_k

    def arrays(self) -> dict[str, FloatArray]:
        """The trace's arrays by export key, in the order of the computation; biases if any."""
        arrays = {key: getattr(self, key) for key in ARRAY_KEYS}
        if self.has_biases:
            arrays.update({key: getattr(self, key) for key in BIAS_KEYS})
        if self.mask is not None:
            arrays["mask"] = self.mask
        if self.X_source is not None:
            arrays["X_source"] = self.X_source
        return arrays

    @property
    def masked(self) -> np.ndarray:
        """[n, n] bool, True where a pair was masked out (−∞ before the softmax)."""
        if self.mask is None:
            return np.zeros((self.n_tokens, self.n_tokens), dtype=bool)
        return ~self.mask

    @property
    def has_biases(self) -> bool:
        return self.b_Q is not None

    def config_dict(self) -> dict[str, Any]:
        """The sizes and provenance of the trace, as stored in a JSON export."""
        return {
            "d_model": self.d_model,
            "n_heads": self.n_heads,
            "d_k": self.d_k,
            "seed": self.config.seed,
            "embeddings": self.embeddings_source,
            "weights": self.weights_source,
        }


def select_tokens(trace: AttentionTrace, keep: Sequence[int]) -> AttentionTrace:
    """The trace seen through a subset of its tokens (rows and columns), for display only.

    Nothing is recomputed: the weights stay as computed over every token, so a row's shown
    weights can sum to less than 1.
    """
    rows = np.asarray(keep, dtype=np.intp)
    return replace(
        trace,
        tokens=tuple(trace.tokens[i] for i in rows),
        X=trace.X[rows],
        Q=trace.Q[:, rows],
        K=trace.K[:, rows],
        V=trace.V[:, rows],
        scores=trace.scores[:, rows][:, :, rows],
        scaled=trace.scaled[:, rows][:, :, rows],
        weights=trace.weights[:, rows][:, :, rows],
        Z=trace.Z[:, rows],
        concat=trace.concat[rows],
        output=trace.output[rows],
        mask=None if trace.mask is None else trace.mask[rows][:, rows],
    )


def merge_tokens(
    trace: AttentionTrace, groups: Sequence[Sequence[int]], labels: Sequence[str]
) -> AttentionTrace:
    """The trace seen word by word instead of piece by piece, for display only.

    A word's weights row is the mean of its pieces' rows (each sums to 1, so the mean does too),
    and its column the sum of its pieces' columns (the attention that reaches any of its
    pieces). Every other row (X, Q, K, V, Z, concat, output) is the mean of the pieces' rows,
    and scores/scaled take the mean both ways.
    """
    n_tokens = trace.n_tokens
    mean = np.zeros((len(groups), n_tokens))  # [words, pieces], rows sum to 1
    for word, pieces in enumerate(groups):
        mean[word, list(pieces)] = 1.0 / len(pieces)
    total = (mean > 0).astype(float).T  # [pieces, words], 1 where a piece belongs to a word
    return replace(
        trace,
        tokens=tuple(labels),
        X=mean @ trace.X,
        Q=mean @ trace.Q,
        K=mean @ trace.K,
        V=mean @ trace.V,
        scores=mean @ trace.scores @ mean.T,
        scaled=mean @ trace.scaled @ mean.T,
        weights=mean @ trace.weights @ total,
        Z=mean @ trace.Z,
        concat=mean @ trace.concat,
        output=mean @ trace.output,
    )


def export_layers(traces: Sequence[AttentionTrace], path: Path) -> None:
    """Write several layers' traces with a leading layer axis: ``weights`` [L, h, n, n], ``X``
    [L, n, d_model] (each layer's input), …, plus b_Q, b_K, b_V, b_O when the layers have them.

    ``.npz`` or ``.json`` (with a ``config`` object), written atomically.
    """
    first = traces[0]
    stacked = {
        key: np.stack([t.arrays()[key] for t in traces])
        for key in first.arrays()
        if key != "mask"  # the same for every layer: stored once, [n, n]
    }
    if first.mask is not None:
        stacked["mask"] = first.mask
    config = {**first.config_dict(), "n_layers": len(traces), "weights": first.weights_source}
    _write(path, first.tokens, stacked, config)


def export_trace(trace: AttentionTrace, path: Path) -> None:
    """Write the trace to ``.npz`` (arrays, float64; tokens as unicode) or ``.json``.

    The file holds exactly: tokens, X, W_Q, W_K, W_V, W_O, Q, K, V, scores, scaled, weights, Z,
    concat, output (and, in JSON, a ``config`` object); ``mask`` when one was used; and for
    cross-attention ``X_source``, ``source_tokens`` and ``target_tokens``. Written atomically.
    """
    words: dict[str, Sequence[str]] = {}
    if trace.source_tokens is not None:
        words = {"source_tokens": trace.source_tokens, "target_tokens": trace.tokens}
    _write(path, trace.tokens, trace.arrays(), trace.config_dict(), words)


def _export_dtype(array: np.ndarray) -> np.ndarray:
    """float64 for numbers, as documented; a mask stays boolean."""
    return array if array.dtype == bool else np.asarray(array, dtype=np.float64)


def _write(
    path: Path,
    tokens: Sequence[str],
    arrays: dict[str, FloatArray],
    config: dict[str, Any],
    words: dict[str, Sequence[str]] | None = None,
) -> None:
    words = words or {}
    extension = path.suffix.lower()
    if extension == ".npz":

        def write(temporary: Path) -> None:
            with temporary.open("wb") as handle:
                everything: dict[str, np.ndarray] = {"tokens": np.array(tokens, dtype=np.str_)}
                everything.update({k: _export_dtype(a) for k, a in arrays.items()})
                everything.update({k: np.array(v, dtype=np.str_) for k, v in words.items()})
                np.savez(handle, allow_pickle=False, **everything)

    elif extension == ".json":
        import json

        # json writes a float with repr(), the shortest text that reads back to the same
        # float64, so a JSON export round-trips bit for bit.
        document: dict[str, Any] = {"tokens": list(tokens)}
        document.update({key: list(value) for key, value in words.items()})
        document.update({key: _export_dtype(array).tolist() for key, array in arrays.items()})
        document["config"] = config

        text = json.dumps(document, ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate (argv bytes that were not UTF-8) has no UTF-8 form; JSON's
            # \udcxx escapes keep it, and the file stays valid UTF-8 JSON.
            text = json.dumps(document, ensure_ascii=True)

        def write(temporary: Path) -> None:
            temporary.write_text(text, encoding="utf-8")

    else:
        raise ValueError(f"unsupported export extension {extension!r}")
    atomic_write(path, write)
