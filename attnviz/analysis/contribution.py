"""What each word adds to a head's output: weight times transformed value, not weight alone.

A weight w_ij is a mixing coefficient. Head h adds to word i's output (Kobayashi et al. 2020,
"Attention is not only a weight", eq. 5)

    Σ_j w_ij · f_h(x_j),   f_h(x_j) = (x_j·W_V^h + b_V^h) · W_O^h = v_j^h · W_O^h

where W_O^h [d_k, d_model] are head h's rows of W_O (rows h·d_k … (h+1)·d_k − 1), the rows that
multiply head h's columns of Concat. So word j's contribution is the vector w_ij·f_h(x_j), and
its size is

    ‖w_ij · f_h(x_j)‖ = w_ij · ‖f_h(x_j)‖       (weights are ≥ 0)

A large weight on a word whose transformed value is short (‖f‖ small, as for [CLS] and [SEP] in
trained BERT-like models) adds little: attention parked there is close to a no-op. b_O is added
once to the whole output, belongs to no word, and is left out (as in the paper).

Each row's share divides the norms by the row's sum of norms: share_ij = ‖w_ij f_h(x_j)‖ /
Σ_k ‖w_ik f_h(x_k)‖. Shares sum to 1 like weights, so the two can be read side by side; they are
sizes, not a decomposition of the output's length (the vectors point different ways).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.results import (
    OVERWEIGHT_FACTOR as OVERWEIGHT_FACTOR,
)
from attnviz.results import (
    Contributions as Contributions,
)
from attnviz.trace import AttentionTrace


def head_output_rows(W_O: FloatArray, n_heads: int) -> FloatArray:
    """Each head's rows of W_O, W_O^h.  [h·d_k, d_model] -> [h, d_k, d_model]"""
    return np.asarray(W_O, dtype=np.float64).reshape(n_heads, -1, W_O.shape[-1])


def transformed_values(V: FloatArray, W_O: FloatArray) -> FloatArray:
    """f_h(x_j) = v_j^h · W_O^h, each key's value as it reaches the output.

    V: [h, n_keys, d_k] (b_V already inside: v = x·W_V + b_V); W_O: [h·d_k, d_model]
    -> [h, n_keys, d_model]
    """
    rows = head_output_rows(W_O, V.shape[0])
    transformed: FloatArray = np.einsum("hjk,hkd->hjd", np.asarray(V, dtype=np.float64), rows)
    return transformed


def vector_norms(vectors: FloatArray) -> FloatArray:
    """Euclidean length of each vector along the last axis.  [..., d] -> [...]"""
    norms: FloatArray = np.linalg.norm(vectors, axis=-1)
    return norms


def contribution_vectors(weights: FloatArray, transformed: FloatArray) -> FloatArray:
    """w_ij · f_h(x_j) for every head, query and key: what key j adds to query i's output.

    weights: [h, n_q, n_k]; transformed: [h, n_k, d_model] -> [h, n_q, n_k, d_model].
    Summed over keys it is Z_h·W_O^h, head h's part of the output. Memory grows as n²·d_model:
    for norms alone use contribution_norms.
    """
    column = np.asarray(weights, dtype=np.float64)[..., np.newaxis]  # [h, n_q, n_k, 1]
    vectors: FloatArray = column * transformed[:, np.newaxis]
    return vectors


def contribution_norms(weights: FloatArray, transformed_norms: FloatArray) -> FloatArray:
    """‖w_ij · f_h(x_j)‖ = w_ij · ‖f_h(x_j)‖ (weights are ≥ 0).

    weights: [h, n_q, n_k]; transformed_norms: [h, n_k] -> [h, n_q, n_k]
    """
    norms: FloatArray = np.asarray(weights, dtype=np.float64) * transformed_norms[:, np.newaxis]
    return norms


def shares(norms: FloatArray) -> FloatArray:
    """Each contribution's share of its row: ‖w_ij f(x_j)‖ / Σ_k ‖w_ik f(x_k)‖.

    [..., n_k] -> [..., n_k]; a row whose norms are all 0 gives NaN (nothing to share).
    """
    totals = norms.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        result: FloatArray = norms / totals
    return result


def _per_head(W_O: FloatArray, n_heads: int) -> list[FloatArray]:
    """W_O's rows of each head, [d_k, d_model] as a one-head W_O each."""
    d_k = W_O.shape[0] // n_heads
    return [W_O[head * d_k : (head + 1) * d_k] for head in range(n_heads)]


def contributions(trace: AttentionTrace) -> Contributions:
    """Every head's contribution norms and shares for ``trace`` (self- or cross-attention)."""
    # Each query head's values: its key/value head's (shared in grouped-query attention).
    values = trace.V[[trace.kv_head(head) for head in range(trace.n_heads)]]  # [h, n_k, d_k]
    # ‖f_h(x_j)‖ a head at a time: all heads' f_h(x_j) at once, [h, n_k, d_model] in float64,
    # would be the largest array of a long sentence's lesson (930 MB at 120 heads × 505 words).
    transformed_norms = np.concatenate(
        [
            vector_norms(transformed_values(values[head : head + 1], head_rows))
            for head, head_rows in enumerate(_per_head(trace.W_O, trace.n_heads))
        ]
    )
    norms = contribution_norms(trace.weights, transformed_norms)
    return Contributions(
        weights=np.asarray(trace.weights, dtype=np.float64),
        value_norms=vector_norms(np.asarray(values, dtype=np.float64)),
        transformed_norms=transformed_norms,
        norms=norms,
        shares=shares(norms),
    )


class KeyContribution(NamedTuple):
    """One key of one row: its weight beside what it adds."""

    key: int  # the key's position in the trace
    word: str  # the key's token
    weight: float  # w_ij
    value_norm: float  # ‖v_j‖
    transformed_norm: float  # ‖f_h(x_j)‖
    norm: float  # ‖w_ij · f_h(x_j)‖ = weight · transformed_norm
    share: float  # norm / the row's sum of norms


class RowContribution(NamedTuple):
    """One query's row in one head, weight against contribution, for a view.

    ``head`` and ``query`` count from 0, like the trace's axes.
    """

    head: int
    query: int
    word: str  # the query's token
    keys: tuple[KeyContribution, ...]  # every key, in the trace's order
    total: float  # Σ_j ‖w_ij · f_h(x_j)‖, the denominator of every share

    def by_weight(self) -> tuple[KeyContribution, ...]:
        """The keys, largest weight first (ties: the earlier key)."""
        return tuple(sorted(self.keys, key=lambda entry: -entry.weight))

    def by_share(self) -> tuple[KeyContribution, ...]:
        """The keys, largest contribution share first (ties: the earlier key)."""
        return tuple(sorted(self.keys, key=lambda entry: -entry.share))

    def overweighted(self, factor: float = OVERWEIGHT_FACTOR) -> tuple[KeyContribution, ...]:
        """Keys whose weight is at least ``factor`` times their share and above the row's
        uniform weight 1/n: weight parked on a short value (a "no-op"), largest weight first."""
        uniform = 1.0 / len(self.keys)
        return tuple(
            entry
            for entry in self.by_weight()
            if entry.weight > uniform and entry.weight >= factor * entry.share
        )


def row_contribution(trace: AttentionTrace, head: int, query: int) -> RowContribution:
    """Weight against contribution for query ``query`` (a position) in head ``head`` (from 0).

    ValueError naming the range for a head or query out of range.
    """
    if not 0 <= head < trace.n_heads:
        raise ValueError(f"head {head} is not in 0 … {trace.n_heads - 1}")
    if not 0 <= query < trace.n_tokens:
        raise ValueError(f"query {query} is not in 0 … {trace.n_tokens - 1}")
    kv = trace.kv_head(head)
    V = np.asarray(trace.V[kv : kv + 1], dtype=np.float64)  # [1, n_k, d_k]
    d_k = trace.d_k
    rows = np.asarray(trace.W_O[head * d_k : (head + 1) * d_k], dtype=np.float64)
    transformed_norms = vector_norms(transformed_values(V, rows))[0]  # [n_k]
    weights = np.asarray(trace.weights[head, query], dtype=np.float64)  # [n_k]
    norms = weights * transformed_norms
    row_shares = shares(norms)
    value_norms = vector_norms(V[0])
    keys = tuple(
        KeyContribution(
            key=j,
            word=word,
            weight=float(weights[j]),
            value_norm=float(value_norms[j]),
            transformed_norm=float(transformed_norms[j]),
            norm=float(norms[j]),
            share=float(row_shares[j]),
        )
        for j, word in enumerate(trace.key_tokens)
    )
    return RowContribution(head, query, trace.tokens[query], keys, float(norms.sum()))
