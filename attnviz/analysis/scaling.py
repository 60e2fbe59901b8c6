"""The experiment behind ÷√d_k: what happens to softmax with and without the scaling.

If q and k have d_k independent components of variance 1, q·k is a sum of d_k products of
variance 1, so Var(q·k) = d_k. Unscaled, the scores spread wider as d_k grows, the softmax
turns one-hot, and its gradient ∂w/∂s = diag(w) - w·wᵀ goes to zero: learning stalls. Dividing
by √d_k brings the variance back to 1 whatever d_k is. It is the same as a softmax temperature
of √d_k: softmax(s/T) with T = √d_k.

The seeds' "more stable gradients", measured as backpropagation meets them: for an upstream
gradient g on each row's weights, the softmax passes back ∂L/∂s_j = w_j·(g_j − Σ_k w_k·g_k)
(train.backward.softmax_backward). A one-hot row passes back almost nothing, so unscaled, as d_k
grows, ever more rows stall; scaled, the gradient keeps its size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnviz.arguments import digits
from attnviz.arrays import FloatArray
from attnviz.attention import softmax
from attnviz.errors import AttnvizError, option, quoted, spelled
from attnviz.limits import check_divisor, check_scaling, shortened
from attnviz.results import (
    STALLED as STALLED,
)
from attnviz.results import (
    DivisorRow as DivisorRow,
)
from attnviz.results import (
    ScalingRow as ScalingRow,
)
from attnviz.results import (
    SoftmaxStats as SoftmaxStats,
)
from attnviz.train.backward import softmax_backward

MAX_D_K = 4096  # larger sizes are capped: 4096 already shows the effect, and memory grows with d_k
MAX_NUMBERS = 32_000_000  # queries × keys × d_k drawn at once: 256 MB of float64


def softmax_stats(scores: FloatArray, upstream: FloatArray | None = None) -> SoftmaxStats:
    """Statistics of softmax over rows of ``scores``, and with ``upstream`` (∂L/∂w, the same
    shape) of the gradient the softmax passes back.  [rows, n] -> SoftmaxStats"""
    weights = softmax(scores)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.sum(np.where(weights > 0, weights * np.log(weights), 0.0), axis=-1)
    # ‖diag(w) - w·wᵀ‖²_F = Σ_i w_i²(1 - w_i)² + Σ_{i≠j} w_i² w_j²
    squares = weights**2
    off_diagonal = squares.sum(-1) ** 2 - (squares**2).sum(-1)
    diagonal = (squares * (1 - weights) ** 2).sum(-1)
    gradient = np.sqrt(diagonal + off_diagonal)
    backward, stalled = float("nan"), float("nan")
    if upstream is not None:
        passed = np.linalg.norm(softmax_backward(weights, upstream), axis=-1)
        backward, stalled = float(passed.mean()), float((passed < STALLED).mean())
    return SoftmaxStats(
        score_variance=float(scores.var()),
        max_weight=float(weights.max(-1).mean()),
        entropy=float(entropy.mean()),
        gradient=float(gradient.mean()),
        backward=backward,
        stalled=stalled,
    )


def scaling_experiment(
    d_ks: Sequence[int], *, n_keys: int = 16, n_queries: int = 400, seed: int = 0
) -> list[ScalingRow]:
    """For each d_k: n_queries queries against n_keys keys, unit-variance components, seeded.

    Returns the softmax statistics of q·k and of q·k/√d_k, the gradients for the same upstream
    gradient g ~ N(0, 1) in both (drawn from a generator of its own, so that q and k are those of
    a run without it).
    """
    for name, value, low, high in (
        ("keys", n_keys, 2, 4096),
        ("queries", n_queries, 1, 100_000),
    ):
        if not low <= value <= high:
            raise AttnvizError(f"{option(name, value)} is out of range; use {low} to {high}.")
    if seed < 0:
        raise AttnvizError(f"{option('seed')} must be 0 or more, got {seed}.")
    check_scaling(d_ks, n_keys=n_keys, n_queries=n_queries)
    largest = n_queries * n_keys * max(d_ks)
    if largest > MAX_NUMBERS:
        raise AttnvizError(
            f"{n_queries} queries × {n_keys} keys × d_k {max(d_ks)} is {largest:,} random "
            f"numbers; keep it under {MAX_NUMBERS:,} with fewer {option('queries')} or "
            f"{option('keys')}."
        )
    rng = np.random.default_rng(seed)
    upstream_rng = np.random.default_rng((seed, 1))
    rows = []
    for d_k in d_ks:
        if not 1 <= d_k <= MAX_D_K:
            raise AttnvizError(f"d_k {d_k} is out of range; use 1 to {MAX_D_K}.")
        q = rng.standard_normal((n_queries, 1, d_k))
        k = rng.standard_normal((n_queries, n_keys, d_k))
        scores = np.matmul(q, np.swapaxes(k, -1, -2))[:, 0, :]  # [queries, keys]
        upstream = upstream_rng.standard_normal(scores.shape)
        unscaled = softmax_stats(scores, upstream)
        rows.append(ScalingRow(d_k, unscaled, softmax_stats(scores / np.sqrt(d_k), upstream)))
    return rows


def parse_d_ks(text: str) -> tuple[list[int], list[str]]:
    """ "4,16,64" -> [4, 16, 64]; sizes above MAX_D_K are capped, with a note saying so."""
    values: list[int] = []
    notes: list[str] = []
    given = option("d_ks", metavar=quoted(shortened(text)))
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        if not digits(part.removeprefix("-")):  # ASCII only: int() reads "١٦" as 16
            raise AttnvizError(
                f"{given}: {shortened(part)!r} is not a whole number; e.g. "
                f"{spelled('--dk 4,16,64', 'd_ks=[4, 16, 64]')}."
            )
        # More digits than any size: never int() of thousands of them, which Python refuses.
        too_long = len(part.removeprefix("-")) > len(str(MAX_D_K))
        value = (-1 if part[0] == "-" else MAX_D_K + 1) if too_long else int(part)
        if value < 1:
            raise AttnvizError(f"{given}: d_k must be 1 or more, got {shortened(part)}.")
        if value > MAX_D_K:
            notes.append(f"d_k {shortened(part)} capped at {MAX_D_K}.")
            value = MAX_D_K
        values.append(value)
    if not values:
        raise AttnvizError(f"{option('d_ks')} is empty; give sizes such as 4,16,64,256,1024.")
    return list(dict.fromkeys(values)), _fewer(notes)


def _fewer(notes: list[str]) -> list[str]:
    """The notes of the sizes capped at MAX_D_K, or one for them all when there are many."""
    if len(notes) > 3:
        return [f"{len(notes):,} sizes above {MAX_D_K} capped at {MAX_D_K}."]
    return notes


#: Sentence lengths of the divisor experiment: the same query and keys, words added.
LENGTHS = (2, 4, 8, 16, 64, 256)


def _flatness(scaled: FloatArray) -> float:
    """Mean over rows of entropy / ln n: 1 for a flat row of n weights, 0 for a one-hot one."""
    weights = softmax(scaled)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.sum(np.where(weights > 0, weights * np.log(weights), 0.0), axis=-1)
    return float(entropy.mean() / np.log(scaled.shape[-1]))


def divisor_experiment(
    lengths: Sequence[int] = LENGTHS, *, d_k: int = 64, n_queries: int = 400, seed: int = 0
) -> list[DivisorRow]:
    """What dividing the scores by √n (the number of keys) instead of √d_k would do: for each
    length n, every query of the run scores its first n keys (the same keys for every n, words
    added to the end of the sentence), components standard normal, seeded.

    Divided by √d_k, the scores of a pair do not depend on n, nor does w₁/w₂ = exp(s₁ − s₂):
    adding words shares the row among more keys and changes no score. Divided by √n, every
    score shrinks as words are added, w₁/w₂ falls towards 1 and long rows flatten.
    """
    if not lengths or min(lengths) < 2:
        raise AttnvizError("the divisor experiment needs sentences of 2 keys or more.")
    check_divisor(lengths, d_k=d_k, n_queries=n_queries)
    rng = np.random.default_rng((seed, 2))
    q = rng.standard_normal((n_queries, 1, d_k))
    k = rng.standard_normal((n_queries, max(lengths), d_k))
    scores = np.matmul(q, np.swapaxes(k, -1, -2))[:, 0, :]  # [queries, keys]
    rows = []
    for n in lengths:
        by_d_k, by_n = scores[:, :n] / np.sqrt(d_k), scores[:, :n] / np.sqrt(n)
        first_d_k, first_n = softmax(by_d_k[0]), softmax(by_n[0])
        rows.append(
            DivisorRow(
                d_k=d_k,
                n_keys=n,
                pair_by_d_k=(float(by_d_k[0, 0]), float(by_d_k[0, 1])),
                pair_by_n=(float(by_n[0, 0]), float(by_n[0, 1])),
                weights_by_d_k=(float(first_d_k[0]), float(first_d_k[1])),
                weights_by_n=(float(first_n[0]), float(first_n[1])),
                ratio_by_d_k=float(np.exp(by_d_k[0, 0] - by_d_k[0, 1])),
                ratio_by_n=float(np.exp(by_n[0, 0] - by_n[0, 1])),
                flatness_by_d_k=_flatness(by_d_k),
                flatness_by_n=_flatness(by_n),
            )
        )
    return rows
