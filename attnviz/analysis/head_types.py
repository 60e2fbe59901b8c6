"""What kind of head it is, from its whole matrix, and what is specific to one word's row.

In the spirit of TransformerLens's head detectors: a head is typed by scores over every row of
its weights A [n, n], never by one row. Over the rows that have a choice (at least two keys they
may attend to; [PAD] rows left out), and for each score only the rows where its key exists and
may be attended:

    previous    = mean_i A[i, i−1]          (rows i ≥ 1)
    next        = mean_i A[i, i+1]          (rows i ≤ n−2; none under a causal mask)
    self        = mean_i A[i, i]
    first       = mean_{i≠0} A[i, 0]        ([CLS] when position 0 is a special token)
    last        = mean_{i≠s} A[i, s]        (s: the last special token after position 0, [SEP];
                                             else the last word)
    entropy     = mean_i H(A[i]) / log(k_i) (k_i: the keys row i may attend; 1 = uniform)

The sinks leave out their own row, whose weight there is its weight on itself.

The type is the positional or sink score at or above POSITION_THRESHOLD (the largest, if
several); else "broad" when the entropy is at or above BROAD_THRESHOLD; else "mixed" (no type).

A head's type predicts part of every row. What is specific to the focus word i's weight on key
j is what neither of two baselines predicts, each the mean over the head's other rows r (rows
with a choice, r ≠ i):

    by key      = mean_r A[r, j]            (everyone looks at j: a sink, a popular word)
    by offset   = mean_r A[r, r + (j − i)]  (everyone looks as far back or ahead: positional)
    specificity = A[i, j] − max(by key, by offset)

Only rows that may attend to the key (to r + (j − i)) count. For a previous-token head the row
of "it" puts 1.00 on "because", but so does every row on its previous word: specificity ≈ 0. The
key baseline alone is the selectivity of attnviz.analysis.heads (over the trace's rows).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.results import (
    BROAD_THRESHOLD as BROAD_THRESHOLD,
)
from attnviz.results import (
    POSITION_THRESHOLD as POSITION_THRESHOLD,
)
from attnviz.results import (
    HeadScores as HeadScores,
)
from attnviz.results import (
    HeadType as HeadType,
)
from attnviz.results import (
    TypedHead as TypedHead,
)
from attnviz.trace import AttentionTrace


def allowed_pairs(n: int, mask: np.ndarray | None) -> np.ndarray:
    """[n, n] bool, True where query i may attend to key j."""
    return np.ones((n, n), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)


def choice_rows(allowed: np.ndarray, excluded: tuple[int, ...] = ()) -> np.ndarray:
    """[n] bool: rows with at least two allowed keys (a single key is no choice), minus
    ``excluded`` (the [PAD] rows)."""
    rows: np.ndarray = allowed.sum(axis=-1) >= 2
    rows[list(excluded)] = False
    return rows


def diagonal_score(
    weights: FloatArray, allowed: np.ndarray, rows: np.ndarray, offset: int
) -> float:
    """mean_i A[i, i + offset] over ``rows`` whose key i + offset exists and is allowed; NaN if
    none.  [n, n], [n, n] bool, [n] bool -> float"""
    n = weights.shape[0]
    queries = np.arange(n)
    keys = queries + offset
    valid = rows & (keys >= 0) & (keys < n)
    valid[valid] &= allowed[queries[valid], keys[valid]]
    if not valid.any():
        return float("nan")
    return float(weights[queries[valid], keys[valid]].mean())


def column_score(weights: FloatArray, allowed: np.ndarray, rows: np.ndarray, key: int) -> float:
    """mean over ``rows`` other than ``key`` that may attend to it of A[i, key]; NaN if none."""
    valid = rows & allowed[:, key]
    valid[key] = False
    if not valid.any():
        return float("nan")
    return float(weights[valid, key].mean())


def normalised_entropy(weights: FloatArray, allowed: np.ndarray, rows: np.ndarray) -> float:
    """mean_i H(A[i]) / log(k_i), H = −Σ_j w log w over the allowed keys; NaN if no rows."""
    if not rows.any():
        return float("nan")
    chosen = np.where(allowed[rows], weights[rows], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(chosen > 0, -chosen * np.log(chosen), 0.0)
    counts = allowed[rows].sum(axis=-1)
    return float((terms.sum(axis=-1) / np.log(counts)).mean())


def last_key(n_keys: int, special: tuple[int, ...], padding: int) -> tuple[int, bool]:
    """The key the "last" sink score looks at: the last special token after position 0 (the
    [SEP]) outside the padding, else the last key before the padding; and whether it is special."""
    real = n_keys - padding
    closing = [position for position in special if 0 < position < real]
    if closing:
        return max(closing), True
    return real - 1, False


def head_scores(
    weights: FloatArray,
    mask: np.ndarray | None = None,
    *,
    special: tuple[int, ...] = (),
    padding: int = 0,
) -> HeadScores:
    """One head's scores.  weights [n, n], mask [n, n] bool or None -> HeadScores

    special: positions of special tokens; padding: how many [PAD] tokens end the sentence
    (their rows are left out, as their keys are masked).
    """
    weights = np.asarray(weights, dtype=np.float64)
    n = weights.shape[0]
    allowed = allowed_pairs(n, mask)
    rows = choice_rows(allowed, tuple(range(n - padding, n)))
    last, last_is_sep = last_key(n, special, padding)
    return HeadScores(
        previous=diagonal_score(weights, allowed, rows, -1),
        next=diagonal_score(weights, allowed, rows, 1),
        self=diagonal_score(weights, allowed, rows, 0),
        first=column_score(weights, allowed, rows, 0),
        last=column_score(weights, allowed, rows, last),
        entropy=normalised_entropy(weights, allowed, rows),
        first_is_cls=0 in special,
        last_is_sep=last_is_sep,
    )


def classify(scores: HeadScores) -> HeadType:
    """The head's type by the thresholds above (NaN scores never count)."""
    candidates = {
        HeadType.previous: scores.previous,
        HeadType.next: scores.next,
        HeadType.self: scores.self,
        HeadType.cls if scores.first_is_cls else HeadType.first: scores.first,
        HeadType.sep if scores.last_is_sep else HeadType.last: scores.last,
    }
    typed = {kind: value for kind, value in candidates.items() if value >= POSITION_THRESHOLD}
    if typed:
        return max(typed, key=lambda kind: typed[kind])
    if scores.entropy >= BROAD_THRESHOLD:
        return HeadType.broad
    return HeadType.mixed


def trace_head_types(trace: AttentionTrace, layer: int = 1) -> list[TypedHead]:
    """Every head of one self-attention trace, typed; ``layer`` (from 1) labels them."""
    if trace.is_cross:
        raise ValueError("head types are scored on self-attention (square weights)")
    padding = trace.provenance.masking.padding
    special = trace.provenance.special
    typed = []
    for head, weights in enumerate(trace.weights):
        scores = head_scores(weights, trace.mask, special=special, padding=padding)
        typed.append(TypedHead(layer, head + 1, scores, classify(scores)))
    return typed


def run_head_types(layers: Sequence[AttentionTrace]) -> list[TypedHead]:
    """Every head of every layer (``Explanation.layers``), typed, layer 1 head 1 first."""
    return [
        typed for number, trace in enumerate(layers, 1) for typed in trace_head_types(trace, number)
    ]


def baselines(
    weights: FloatArray, focus: int, allowed: np.ndarray, rows: np.ndarray
) -> tuple[FloatArray, FloatArray]:
    """The key and offset baselines of the focus row, [n] each (NaN where no other row counts).

    weights [n, n]; rows: [n] bool, the rows with a choice (the focus row is left out here).
    """
    n = weights.shape[0]
    others = rows.copy()
    others[focus] = False
    by_key = np.full(n, np.nan)
    by_offset = np.full(n, np.nan)
    queries = np.arange(n)
    for key in range(n):
        seeing = others & allowed[:, key]
        if seeing.any():
            by_key[key] = weights[seeing, key].mean()
        targets = queries + (key - focus)
        valid = others & (targets >= 0) & (targets < n)
        valid[valid] &= allowed[queries[valid], targets[valid]]
        if valid.any():
            by_offset[key] = weights[queries[valid], targets[valid]].mean()
    return by_key, by_offset


def specificity(
    weights: FloatArray, focus: int, mask: np.ndarray | None = None, *, padding: int = 0
) -> FloatArray:
    """A[focus, j] − max(by key, by offset) for every key j.  [n, n] -> [n]

    A baseline with no rows is left out of the max; NaN where both have none or the focus
    word may not attend to j (its 0 is no choice).
    """
    weights = np.asarray(weights, dtype=np.float64)
    n = weights.shape[0]
    allowed = allowed_pairs(n, mask)
    rows = choice_rows(allowed, tuple(range(n - padding, n)))
    by_key, by_offset = baselines(weights, focus, allowed, rows)
    with np.errstate(invalid="ignore"):
        baseline = np.fmax(by_key, by_offset)  # fmax: a NaN baseline gives way to the other
    result: FloatArray = np.where(allowed[focus], weights[focus] - baseline, np.nan)
    return result


def trace_specificity(trace: AttentionTrace, focus: int) -> FloatArray:
    """Specificity of the focus position's row in every head of a trace.  -> [h, n]"""
    padding = trace.provenance.masking.padding
    return np.stack(
        [specificity(weights, focus, trace.mask, padding=padding) for weights in trace.weights]
    )


def counted_rows(
    weights: FloatArray, mask: np.ndarray | None = None, *, padding: int = 0
) -> np.ndarray:
    """Which rows can say whether a word looks most at itself: rows with a choice (two allowed
    keys or more: the first row under a causal mask, or a one-token sentence, has none) whose
    largest weight is one key's alone (an exact tie, as in "it it it it" with every weight
    0.25, names no largest). [PAD] rows never count.  weights [h, n, n] -> [h, n] bool"""
    weights = np.asarray(weights, dtype=np.float64)
    n = weights.shape[-1]
    allowed = allowed_pairs(n, mask)
    shown = np.where(allowed, weights, -np.inf)
    largest = shown.max(axis=-1, keepdims=True)
    alone = (shown == largest).sum(axis=-1) == 1  # [h, n]
    result: np.ndarray = alone & choice_rows(allowed, tuple(range(n - padding, n)))
    return result


def self_argmax_rows(
    weights: FloatArray, mask: np.ndarray | None = None, *, padding: int = 0
) -> np.ndarray:
    """Which rows put their largest weight on the word itself, of the rows counted_rows counts
    (a row with no choice or a tie at its top is False).

    weights [h, n, n] -> [h, n] bool. "The word at this position has the highest score",
    counted rather than assumed.
    """
    weights = np.asarray(weights, dtype=np.float64)
    n = weights.shape[-1]
    shown = np.where(allowed_pairs(n, mask), weights, -np.inf)
    diagonal = np.diagonal(shown, axis1=-2, axis2=-1)  # [h, n]
    result: np.ndarray = (diagonal >= shown.max(axis=-1)) & counted_rows(
        weights, mask, padding=padding
    )
    return result


def self_argmax_count(layers: Sequence[AttentionTrace]) -> tuple[int, int]:
    """(rows whose largest weight is on the word itself, rows counted) over every layer and
    head of a run, as counted_rows counts rows."""
    count = total = 0
    for trace in layers:
        padding = trace.provenance.masking.padding
        rows = self_argmax_rows(trace.weights, trace.mask, padding=padding)
        count += int(rows.sum())
        total += int(counted_rows(trace.weights, trace.mask, padding=padding).sum())
    return count, total


def focus_self_argmax_count(layers: Sequence[AttentionTrace], position: int) -> tuple[int, int]:
    """(heads in which the row at ``position`` gives its largest weight to its own word, heads
    in which that row counts), over every layer and head of a run, as counted_rows counts."""
    heads = total = 0
    for trace in layers:
        padding = trace.provenance.masking.padding
        heads += int(
            self_argmax_rows(trace.weights, trace.mask, padding=padding)[:, position].sum()
        )
        total += int(counted_rows(trace.weights, trace.mask, padding=padding)[:, position].sum())
    return heads, total
