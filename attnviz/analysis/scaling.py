"""The experiment behind ÷√d_k: what happens to softmax with and without the scaling.

If q and k have d_k independent components of variance 1, q·k is a sum of d_k products of
variance 1, so Var(q·k) = d_k. Unscaled, the scores spread wider as d_k grows, the softmax
turns one-hot, and its gradient ∂w/∂s = diag(w) - w·wᵀ goes to zero: learning stalls. Dividing
by √d_k brings the variance back to 1 whatever d_k is. It is the same as a softmax temperature
of √d_k: softmax(s/T) with T = √d_k.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.attention import softmax
from attnviz.errors import AttnvizError, option, quoted, spelled

MAX_D_K = 4096  # larger sizes are capped: 4096 already shows the effect, and memory grows with d_k
MAX_NUMBERS = 32_000_000  # queries × keys × d_k drawn at once: 256 MB of float64


class SoftmaxStats(NamedTuple):
    """Statistics of softmax over a batch of score rows."""

    score_variance: float  # Var(s) over every score
    max_weight: float  # mean over rows of the largest weight (1/n flat, 1 one-hot)
    entropy: float  # mean entropy of a row, in nats (log n flat, 0 one-hot)
    gradient: float  # mean Frobenius norm of ∂w/∂s = diag(w) - w·wᵀ (0 when one-hot)


class ScalingRow(NamedTuple):
    d_k: int
    unscaled: SoftmaxStats
    scaled: SoftmaxStats  # scores ÷ √d_k


def softmax_stats(scores: FloatArray) -> SoftmaxStats:
    """Statistics of softmax over rows of ``scores``.  [rows, n] -> SoftmaxStats"""
    weights = softmax(scores)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.sum(np.where(weights > 0, weights * np.log(weights), 0.0), axis=-1)
    # ‖diag(w) - w·wᵀ‖²_F = Σ_i w_i²(1 - w_i)² + Σ_{i≠j} w_i² w_j²
    squares = weights**2
    off_diagonal = squares.sum(-1) ** 2 - (squares**2).sum(-1)
    diagonal = (squares * (1 - weights) ** 2).sum(-1)
    gradient = np.sqrt(diagonal + off_diagonal)
    return SoftmaxStats(
        score_variance=float(scores.var()),
        max_weight=float(weights.max(-1).mean()),
        entropy=float(entropy.mean()),
        gradient=float(gradient.mean()),
    )


def scaling_experiment(
    d_ks: Sequence[int], *, n_keys: int = 16, n_queries: int = 400, seed: int = 0
) -> list[ScalingRow]:
    """For each d_k: n_queries queries against n_keys keys, unit-variance components, seeded.

    Returns the softmax statistics of q·k and of q·k/√d_k.
    """
    for name, value, low, high in (
        ("keys", n_keys, 2, 4096),
        ("queries", n_queries, 1, 100_000),
    ):
        if not low <= value <= high:
            raise AttnvizError(f"{option(name, value)} is out of range; use {low} to {high}.")
    if seed < 0:
        raise AttnvizError(f"{option('seed')} must be 0 or more, got {seed}.")
    largest = n_queries * n_keys * max(d_ks)
    if largest > MAX_NUMBERS:
        raise AttnvizError(
            f"{n_queries} queries × {n_keys} keys × d_k {max(d_ks)} is {largest:,} random "
            f"numbers; keep it under {MAX_NUMBERS:,} with fewer {option('queries')} or "
            f"{option('keys')}."
        )
    rng = np.random.default_rng(seed)
    rows = []
    for d_k in d_ks:
        if not 1 <= d_k <= MAX_D_K:
            raise AttnvizError(f"d_k {d_k} is out of range; use 1 to {MAX_D_K}.")
        q = rng.standard_normal((n_queries, 1, d_k))
        k = rng.standard_normal((n_queries, n_keys, d_k))
        scores = np.matmul(q, np.swapaxes(k, -1, -2))[:, 0, :]  # [queries, keys]
        rows.append(ScalingRow(d_k, softmax_stats(scores), softmax_stats(scores / np.sqrt(d_k))))
    return rows


def parse_d_ks(text: str) -> tuple[list[int], list[str]]:
    """ "4,16,64" -> [4, 16, 64]; sizes above MAX_D_K are capped, with a note saying so."""
    values: list[int] = []
    notes: list[str] = []
    given = option("d_ks", metavar=quoted(text))
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        try:
            value = int(part)
        except ValueError:
            raise AttnvizError(
                f"{given}: {part!r} is not a whole number; e.g. "
                f"{spelled('--dk 4,16,64', 'd_ks=[4, 16, 64]')}."
            ) from None
        if value < 1:
            raise AttnvizError(f"{given}: d_k must be 1 or more, got {value}.")
        if value > MAX_D_K:
            notes.append(f"d_k {value} capped at {MAX_D_K}.")
            value = MAX_D_K
        values.append(value)
    if not values:
        raise AttnvizError(f"{option('d_ks')} is empty; give sizes such as 4,16,64,256,1024.")
    return list(dict.fromkeys(values)), notes
