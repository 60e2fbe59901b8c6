"""What a trace's export must hold: every array's shape (a latent's too), the layers
export_layers stacks are of one sentence and one model, and every row of weights load_trace
reads is a softmax row."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from attnviz.errors import AttnvizError, FileProblem, clipped, listed
from attnviz.tokens import printable
from attnviz.trace import LATENT_KEYS, LATENT_ROPE_KEYS, AttentionTrace


def check_same_layer(first: AttentionTrace, trace: AttentionTrace, index: int) -> None:
    """Layers of one run: the same tokens (and source tokens), mask, and array shapes, which
    export_layers stacks and writes once."""
    if (trace.tokens, trace.source_tokens) != (first.tokens, first.source_tokens):
        sentence = listed((printable(token) for token in trace.tokens), " ")
        raise AttnvizError(
            f"traces[{index}] is of other tokens ({sentence!r}) than "
            "traces[0]; export_layers writes the layers of one sentence: export each sentence "
            "to a file of its own."
        )
    mask, first_mask = trace.mask, first.mask
    if mask is None or first_mask is None:
        same_mask = mask is None and first_mask is None
    else:  # the same but for each layer's own sliding window (a Qwen2's sliding layers)
        narrowest = [w for w in (trace.window, first.window) if w is not None]
        inside = within_window(np.ones_like(mask), min(narrowest) if narrowest else None)
        same_mask = np.array_equal(mask & inside, first_mask & inside)
    if not same_mask:
        raise AttnvizError(
            f"traces[{index}] has another mask than traces[0]; the layers of one run share it."
        )
    shapes, first_shapes = (
        {key: array.shape for key, array in t.arrays().items()} for t in (trace, first)
    )
    if shapes != first_shapes:
        differ = next(
            key for key in {**shapes, **first_shapes} if shapes.get(key) != first_shapes.get(key)
        )
        raise AttnvizError(
            f"traces[{index}]'s {differ} has shape {list(shapes.get(differ, ()))}, traces[0]'s "
            f"{list(first_shapes.get(differ, ()))}; export_layers stacks layers of one model."
        )


def check_layers(traces: Sequence[AttentionTrace]) -> np.ndarray | None:
    """Layers of one run (check_same_layer), and the mask export_layers writes once for them:
    the widest of theirs, from which each layer's own is within_window of its window."""
    first = traces[0]
    for index, trace in enumerate(traces[1:], start=1):
        check_same_layer(first, trace, index)
    if first.mask is None:
        return None
    widest: np.ndarray = np.logical_or.reduce([t.mask for t in traces if t.mask is not None])
    return widest


def within_window(mask: np.ndarray | None, window: int | None) -> np.ndarray | None:
    """``mask`` [n, n] with only the keys i − W < j ≤ i kept in row i (as
    attention.sliding_window_mask): a layer's own mask, from the widest mask of its export."""
    if mask is None or window is None:
        return mask
    behind = np.arange(len(mask))[:, np.newaxis] - np.arange(mask.shape[1])[np.newaxis, :]
    return mask & (behind >= 0) & (behind < window)


#: How far a row of an export's weights may sum from 1: a softmax row does, but for rounding
#: (about 1e-7 in float32 over 2048 keys); a row edited by hand is off by far more.
ROW_SUM_TOLERANCE = 1e-4


def check_weights(where: str, trace: AttentionTrace) -> None:
    """FileProblem unless every row of the weights is a softmax row: its mask lets it attend to
    something, its weights are 0 or more, sum to 1, and are 0 where the mask forbids the pair.
    The views divide by these rows: a row of nothing is NaN in the lesson and the page."""
    weights, mask = trace.weights, trace.mask
    keys = trace.tokens if trace.source_tokens is None else trace.source_tokens

    def row(query: int) -> str:
        return f"row {query + 1} ({_quoted(trace.tokens[query])})"

    def pair(head: int, query: int, key: int) -> str:
        return f"head {head + 1}, {row(query)}, column {key + 1} ({_quoted(keys[key])})"

    again = "export it anew with --export"
    if mask is not None:
        empty = np.flatnonzero(~mask.any(axis=-1))
        if empty.size:
            raise FileProblem(
                f"{where}: the mask's {row(int(empty[0]))} lets it attend to nothing; every "
                f"query needs a key it may attend to: {again}."
            )
    negative = np.argwhere(weights < 0)
    if negative.size:
        head, query, key = (int(i) for i in negative[0])
        raise FileProblem(
            f"{where}: weights at {pair(head, query, key)} is {weights[head, query, key]:.6g}; "
            f"a softmax weight is 0 or more: {again}."
        )
    if mask is not None:
        leaked = np.argwhere(~mask & (weights > ROW_SUM_TOLERANCE))
        if leaked.size:
            head, query, key = (int(i) for i in leaked[0])
            raise FileProblem(
                f"{where}: weights at {pair(head, query, key)} is "
                f"{weights[head, query, key]:.6g} but the mask forbids that pair, whose weight "
                f"is 0: {again}."
            )
    sums = weights.sum(axis=-1)
    off = np.argwhere(np.abs(sums - 1) > ROW_SUM_TOLERANCE)
    if off.size:
        head, query = (int(i) for i in off[0])
        raise FileProblem(
            f"{where}: head {head + 1}'s weights {row(query)} sums to {sums[head, query]:.6g}, "
            f"not 1, as every softmax row does: {again}."
        )


def _quoted(token: str) -> str:
    """A token of a file, for a message: escaped, clipped."""
    return repr(clipped(printable(token)))


def read_mask(value: Any, path: Path) -> np.ndarray:
    """An export's mask: true/false values only ("False" or 0.5 would be True to numpy)."""
    try:
        mask = np.asarray(value)
    except (TypeError, ValueError):
        mask = np.asarray(None)
    if mask.dtype != bool:
        raise FileProblem(f"Trace file {path}: mask is not an array of true/false.")
    return mask


def expected_shapes(
    n_heads: int, g: int, d_model: int, d_k: int, n_queries: int, n_keys: int
) -> dict[str, tuple[int, ...]]:
    """Every array's shape in a trace of these sizes (g: the key/value heads)."""
    return {
        "X": (n_queries, d_model),
        "W_Q": (n_heads, d_model, d_k),
        "W_K": (g, d_model, d_k),
        "W_V": (g, d_model, d_k),
        "W_O": (n_heads * d_k, d_model),
        "Q": (n_heads, n_queries, d_k),
        "K": (g, n_keys, d_k),
        "V": (g, n_keys, d_k),
        "Q_rotated": (n_heads, n_queries, d_k),
        "K_rotated": (g, n_keys, d_k),
        "scores": (n_heads, n_queries, n_keys),
        "scaled": (n_heads, n_queries, n_keys),
        "weights": (n_heads, n_queries, n_keys),
        "Z": (n_heads, n_queries, d_k),
        "concat": (n_queries, n_heads * d_k),
        "output": (n_queries, d_model),
        "b_Q": (n_heads, d_k),
        "b_K": (g, d_k),
        "b_V": (g, d_k),
        "b_O": (d_model,),
        "X_source": (n_keys, d_model),
        "E": (n_queries, d_model),
        "PE": (n_queries, d_model),
        "E_source": (n_keys, d_model),
        "PE_source": (n_keys, d_model),
    }


def latent_shapes(
    path: Path, arrays: dict[str, Any], rope: object, n_kv_heads: int
) -> dict[str, tuple[int, ...]]:
    """The shapes of a latent layer's arrays (attnviz.latent), when the file holds them: all of
    them or none, one key/value head per query head, no rotary positions but its own decoupled
    ones (W_QR, W_KR, Q_R, K_R, all or none); {} without."""
    held = [key for key in LATENT_KEYS if key in arrays]
    turned = [key for key in LATENT_ROPE_KEYS if key in arrays]
    if turned and (len(turned) != len(LATENT_ROPE_KEYS) or not held):
        raise FileProblem(
            f"Trace file {path}: decoupled rotary positions need {', '.join(LATENT_ROPE_KEYS)} "
            "together, in a latent layer; export it anew with --export."
        )
    if not held:
        return {}
    n_heads, d_model, d_k = arrays["W_Q"].shape
    if len(held) != len(LATENT_KEYS) or rope is not None or n_kv_heads != n_heads:
        raise FileProblem(
            f"Trace file {path}: latent attention needs {', '.join(LATENT_KEYS)} together, "
            "one key/value head per query head and no rotary positions; export it anew with "
            "--export."
        )
    d_c = arrays["W_DKV"].shape[-1]
    n_queries, n_keys = arrays["scores"].shape[-2:]
    turned_shapes: dict[str, tuple[int, ...]] = {}
    if turned:
        d_rope = arrays["W_KR"].shape[-1]
        if d_rope % 2:
            raise FileProblem(
                f"Trace file {path}: W_KR is {d_rope} wide; RoPE turns pairs, so d_rope must be "
                "even; export it anew with --export."
            )
        turned_shapes = {
            "W_QR": (n_heads, d_model, d_rope),
            "W_KR": (d_model, d_rope),
            "Q_R": (n_heads, n_queries, d_rope),
            "K_R": (n_keys, d_rope),
        }
    return turned_shapes | {
        "W_DKV": (d_model, d_c),
        "W_UK": (n_heads, d_c, d_k),
        "W_UV": (n_heads, d_c, d_k),
        "c": (n_keys, d_c),
        "scores_absorbed": (n_heads, n_queries, n_keys),
        "output_absorbed": (n_queries, d_model),
    }
