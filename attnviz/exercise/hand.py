"""Numbers made for pencil and paper: one attention layer whose every intermediate stays short.

d_model 4 and 2 heads (d_k 2), so a q·k is two products and a projection four. The entries are
drawn with a seeded ``np.random.Generator`` from small sets:

    X            −1, 0, 1                 (each word's row different, none all zero)
    W_Q, W_K     −1, −0.5, 0, 0.5, 1      (zeros twice as likely: fewer terms to add)
    W_V, W_O     −1, 0, 1

so that every entry of Q and K is a multiple of 0.5 (one decimal), every score q·k a multiple
of 0.25 (two decimals), and V, and a row of W_O, small integers. A head's W_Q and W_K are drawn
again until every |Q|, |K| ≤ 2 and every |score| ≤ 3: exp(score/√2) then stays below
exp(3/√2) ≈ 8.3, a number a student's calculator and patience both take. √d_k = √2 cannot be
made short; 1/√2 ≈ 0.7071 is said on the sheet instead.

The layer is then run by the textbook path (attnviz.attention.multi_head_attention, whose
``traced`` assembles every trace), so a hand trace is an AttentionTrace like any other: every
surface shows it and every exercise reads it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.attention import multi_head_attention
from attnviz.errors import AttnvizError, option
from attnviz.provenance import (
    EmbeddingsKind,
    EmbeddingsOrigin,
    Provenance,
    WeightsKind,
    WeightsOrigin,
)
from attnviz.tokens import tokenize
from attnviz.trace import AttentionTrace
from attnviz.weights import AttentionWeights

HAND_D_MODEL = 4
HAND_HEADS = 2
HAND_D_K = HAND_D_MODEL // HAND_HEADS
#: Words a hand sheet takes: its tables of scores are n × n, to be copied onto paper.
MAX_HAND_WORDS = 8

#: The sets the entries are drawn from, and their chances.
X_VALUES = (-1.0, 0.0, 1.0)
QUERY_KEY_VALUES = (-1.0, -0.5, 0.0, 0.5, 1.0)
QUERY_KEY_CHANCES = (1 / 6, 1 / 6, 1 / 3, 1 / 6, 1 / 6)
VALUE_VALUES = (-1.0, 0.0, 1.0)

#: Bounds the draws aim for: |q|, |k| ≤ 2 and |q·k| ≤ 3.
MAX_PROJECTED = 2.0
MAX_SCORE = 3.0
#: Draws tried per matrix; the one that comes closest to the bounds is kept after that (the
#: sheet says the bounds the kept one meets, computed from it: hand_note).
MAX_DRAWS = 2000


def hand_traces(sentence: str, seed: int = 0) -> tuple[AttentionTrace, ...]:
    """The hand-sized layer on ``sentence`` (at most MAX_HAND_WORDS words), drawn with
    ``seed``, as a tuple of traces (one layer), the form exercise sets take.

    >>> (trace,) = hand_traces("I am good", seed=0)
    >>> trace.d_model, trace.n_heads, trace.d_k
    (4, 2, 2)
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise AttnvizError(
            f"The seed ({option('seed')}) must be a whole number >= 0, got {seed!r}."
        )
    tokens = tokenize(sentence)
    if len(tokens) > MAX_HAND_WORDS:
        raise AttnvizError(
            f"{option('hand')} takes at most {MAX_HAND_WORDS} words, so that its n × n tables fit "
            f"on paper; this sentence has {len(tokens)}. Shorten it, or drop {option('hand')}."
        )
    rng = np.random.default_rng(seed)
    x = hand_embeddings(len(tokens), rng)
    weights = hand_weights(x, rng)
    provenance = Provenance(
        EmbeddingsOrigin(EmbeddingsKind.GIVEN),
        # Not learned: trained=False makes every view say so (WeightsOrigin.is_random), and
        # GIVEN keeps the notes about attnviz's own random draw (random_weights) away.
        weights.origin,
    )
    return (multi_head_attention(tokens, x, weights, provenance=provenance),)


def hand_embeddings(n_tokens: int, rng: np.random.Generator) -> FloatArray:
    """X from {−1, 0, 1}, each row different and none all zero (a zero row would have q = k =
    v = 0, and at most 3⁴ − 1 = 80 rows exist).  -> [n, 4]"""
    rows: list[tuple[float, ...]] = []
    while len(rows) < n_tokens:
        row = tuple(float(value) for value in rng.choice(X_VALUES, size=HAND_D_MODEL))
        if any(row) and row not in rows:
            rows.append(row)
    return np.array(rows)


def hand_weights(x: FloatArray, rng: np.random.Generator) -> AttentionWeights:
    """W_Q, W_K [2, 4, 2], W_V [2, 4, 2] and W_O [4, 4] for X [n, 4], drawn so that Q, K and
    the scores stay within the bounds above (see the module's docstring)."""
    w_q = np.empty((HAND_HEADS, HAND_D_MODEL, HAND_D_K))
    w_k = np.empty_like(w_q)
    for head in range(HAND_HEADS):
        w_q[head] = _closest(rng, lambda w: _excess(x @ w, MAX_PROJECTED))
        w_k[head] = _closest(rng, _key_excess(x, x @ w_q[head]))
    shape = (HAND_HEADS, HAND_D_MODEL, HAND_D_K)
    w_v = rng.choice(VALUE_VALUES, size=shape)
    w_o = rng.choice(VALUE_VALUES, size=(HAND_HEADS * HAND_D_K, HAND_D_MODEL))
    origin = WeightsOrigin(WeightsKind.GIVEN, trained=False)
    return AttentionWeights(W_Q=w_q, W_K=w_k, W_V=w_v, W_O=w_o, origin=origin)


def _closest(rng: np.random.Generator, excess: Callable[[FloatArray], float]) -> FloatArray:
    """A [4, 2] matrix drawn from QUERY_KEY_VALUES whose ``excess`` is 0 (within the bounds),
    or after MAX_DRAWS draws the first with the least."""
    best: tuple[float, FloatArray] | None = None
    for _ in range(MAX_DRAWS):
        drawn = rng.choice(QUERY_KEY_VALUES, size=(HAND_D_MODEL, HAND_D_K), p=QUERY_KEY_CHANCES)
        over = float(excess(drawn))
        if over == 0.0:
            return drawn
        if best is None or over < best[0]:
            best = (over, drawn)
    assert best is not None
    return best[1]


def _key_excess(x: FloatArray, q: FloatArray) -> Callable[[FloatArray], float]:
    """How far a W_K [4, 2] takes K = X·W_K and the scores Q·Kᵀ beyond their bounds."""

    def excess(w_k: FloatArray) -> float:
        k = x @ w_k
        return _excess(k, MAX_PROJECTED) + _excess(q @ k.T, MAX_SCORE)

    return excess


def _excess(values: FloatArray, bound: float) -> float:
    """How far the largest |value| is above ``bound``; 0 within it."""
    return max(0.0, float(np.abs(values).max(initial=0.0)) - bound)


def hand_note(trace: AttentionTrace) -> tuple[str, ...]:
    """What a hand sheet says about its numbers, each figure read from ``trace``."""
    projected = max(float(np.abs(trace.Q).max()), float(np.abs(trace.K).max()))
    score = float(np.abs(trace.scores).max())
    return (
        f"Numbers for pencil and paper: d_model {trace.d_model}, {trace.n_heads} heads, "
        f"d_k {trace.d_k}.",
        "X holds -1, 0 and 1; W_Q and W_K hold -1, -0.5, 0, 0.5 and 1; W_V and W_O hold -1, 0 "
        "and 1: so each entry of Q and K has at most one decimal, each score at most two.",
        f"They were drawn so that every |entry| of Q and K is at most {_short(projected)} and "
        f"every |score| at most {_short(score)}: exp(scaled score) stays below "
        f"{math.ceil(10 * math.exp(score / math.sqrt(trace.d_k))) / 10:g}.",
        f"√d_k = √{trace.d_k} ≈ {math.sqrt(trace.d_k):.4f}: dividing by it is multiplying by "
        f"1/√{trace.d_k} ≈ {1 / math.sqrt(trace.d_k):.4f}.",
    )


def _short(value: float) -> str:
    """0.5 -> "0.5", 2.0 -> "2", 1.25 -> "1.25"."""
    return f"{value:g}"
