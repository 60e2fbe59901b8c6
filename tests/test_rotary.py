"""Rotary positions (attnviz.positions.rotate) and grouped-query attention in
attnviz.attention: checked against literal loops, word by word and pair by pair, and by the
properties that define them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.attention import attention_scores, multi_head_attention, weigh_values
from attnviz.config import AttentionConfig
from attnviz.core import trace_with_options
from attnviz.errors import AttnvizError
from attnviz.options import TraceOptions
from attnviz.positions import Rope, rope_frequencies, rope_pairs, rotate
from attnviz.weights import AttentionWeights, random_weights


def rotated_by_loop(x: np.ndarray, rope: Rope) -> np.ndarray:
    """RoPE written as Su et al. write it: every word m, every pair i, a 2 × 2 rotation."""
    n, d_k = x.shape
    result = x.copy()
    for m in range(n):
        for i in range(d_k // 2):
            a, b = (i, i + d_k // 2) if rope.pairing == "half" else (2 * i, 2 * i + 1)
            angle = m * rope.base ** (-2 * i / d_k)
            result[m, a] = x[m, a] * math.cos(angle) - x[m, b] * math.sin(angle)
            result[m, b] = x[m, a] * math.sin(angle) + x[m, b] * math.cos(angle)
    return result


@pytest.mark.parametrize("pairing", ["half", "adjacent"])
def test_rotation_equals_the_per_word_per_pair_loop(pairing: str) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 7, 8))  # [heads, n, d_k]
    rope = Rope(10000.0, pairing)
    turned = rotate(x, np.arange(7), rope)
    for head in range(3):
        np.testing.assert_allclose(turned[head], rotated_by_loop(x[head], rope), atol=1e-14)
    # Turning keeps every pair's length.
    first, second = rope_pairs(8, pairing)
    np.testing.assert_allclose(
        turned[..., first] ** 2 + turned[..., second] ** 2, x[..., first] ** 2 + x[..., second] ** 2
    )


def test_the_frequencies_and_pairs_are_the_papers() -> None:
    np.testing.assert_allclose(rope_frequencies(4, 10000.0), [1.0, 0.01])
    assert [list(p) for p in rope_pairs(6, "half")] == [[0, 1, 2], [3, 4, 5]]
    assert [list(p) for p in rope_pairs(6, "adjacent")] == [[0, 2, 4], [1, 3, 5]]


def score_at(q: np.ndarray, k: np.ndarray, m: int, n: int, rope: Rope) -> float:
    return float(rotate(q[None], np.array([m]), rope)[0] @ rotate(k[None], np.array([n]), rope)[0])


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    half_width=st.integers(1, 16),
    pairing=st.sampled_from(["half", "adjacent"]),
    base=st.sampled_from([10000.0, 100000.0, 500.0]),
)
def test_a_turned_score_depends_on_the_distance_only(
    seed: int, half_width: int, pairing: str, base: float
) -> None:
    """q_m·k_n after turning depends on m − n: the same vectors at (2, 5) and (7, 10) score
    the same, and (in general) differently at another distance."""
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, 2 * half_width))
    rope = Rope(base, pairing)
    near = score_at(q, k, 2, 5, rope)
    assert near == pytest.approx(score_at(q, k, 7, 10, rope), abs=1e-10)
    assert near == pytest.approx(score_at(q, k, 0, 3, rope), abs=1e-10)
    assert score_at(q, k, 40, 40, rope) == pytest.approx(float(q @ k), abs=1e-10)


def test_the_two_pairings_give_the_same_scores_once_the_columns_are_arranged() -> None:
    """llama.cpp's converter permutes W_Q's and W_K's output coordinates so that adjacent
    pairs hold what Hugging Face's i, i + d_k/2 pairs held: the scores are the same."""
    config = AttentionConfig(d_model=16, n_heads=2)
    weights = random_weights(config, np.random.default_rng(3))
    x = np.random.default_rng(4).normal(size=(6, 16))
    d_k = config.d_k
    # Column 2i of the adjacent layout is column i of the half layout, 2i + 1 is i + d_k/2.
    order = np.empty(d_k, dtype=int)
    order[0::2], order[1::2] = rope_pairs(d_k, "half")
    arranged = AttentionWeights(
        W_Q=weights.W_Q[:, :, order], W_K=weights.W_K[:, :, order], W_V=weights.W_V, W_O=weights.W_O
    )
    tokens = list("abcdef")
    half = multi_head_attention(tokens, x, weights, rope=Rope(pairing="half"))
    adjacent = multi_head_attention(tokens, x, arranged, rope=Rope(pairing="adjacent"))
    np.testing.assert_allclose(adjacent.scores, half.scores, atol=1e-12)
    np.testing.assert_allclose(adjacent.output, half.output, atol=1e-12)
    wrong = multi_head_attention(tokens, x, weights, rope=Rope(pairing="adjacent"))
    assert not np.allclose(wrong.scores, half.scores)  # the wrong pairing runs, and differs


def paper_by_loop(x: np.ndarray, weights: AttentionWeights, rope: Rope | None) -> np.ndarray:
    """Grouped-query attention head by head and word by word: query head i reads key/value
    head i // (h/G); q and k turned when there is a rope. -> the weights [h, n, n], Z [h, n, d_k]"""
    h, g = weights.n_heads, weights.n_kv_heads
    d_k = weights.W_Q.shape[2]
    zs, all_weights = [], []
    for head in range(h):
        kv = head // (h // g)
        q, k, v = x @ weights.W_Q[head], x @ weights.W_K[kv], x @ weights.W_V[kv]
        if rope is not None:
            q, k = rotated_by_loop(q, rope), rotated_by_loop(k, rope)
        scores = np.array([[q[i] @ k[j] for j in range(len(x))] for i in range(len(x))])
        e = np.exp(scores / math.sqrt(d_k) - (scores / math.sqrt(d_k)).max(1, keepdims=True))
        w = e / e.sum(1, keepdims=True)
        all_weights.append(w)
        zs.append(np.array([sum(w[i, j] * v[j] for j in range(len(x))) for i in range(len(x))]))
    return np.array(all_weights), np.array(zs)


@pytest.mark.parametrize(("n_heads", "n_kv_heads"), [(4, 1), (4, 2), (6, 3), (4, 4)])
@pytest.mark.parametrize("rope", [None, Rope()])
def test_grouped_query_attention_equals_the_loop(
    n_heads: int, n_kv_heads: int, rope: Rope | None
) -> None:
    config = AttentionConfig(d_model=4 * n_heads, n_heads=n_heads, n_kv_heads=n_kv_heads)
    weights = random_weights(config, np.random.default_rng(7))
    assert weights.W_K.shape == weights.W_V.shape == (n_kv_heads, 4 * n_heads, 4)
    x = np.random.default_rng(8).normal(size=(5, 4 * n_heads))
    trace = multi_head_attention(list("abcde"), x, weights, rope=rope)
    expected_weights, expected_z = paper_by_loop(x, weights, rope)
    np.testing.assert_allclose(trace.weights, expected_weights, atol=1e-12)
    np.testing.assert_allclose(trace.Z, expected_z, atol=1e-12)
    assert trace.K.shape == trace.V.shape == (n_kv_heads, 5, 4)  # never repeated per head
    assert [trace.kv_head(i) for i in range(n_heads)] == [
        i // (n_heads // n_kv_heads) for i in range(n_heads)
    ]
    if rope is None:
        assert trace.Q_rotated is None and trace.K_rotated is None
    else:
        assert trace.K_rotated is not None and trace.K_rotated.shape == (n_kv_heads, 5, 4)
        np.testing.assert_array_equal(
            trace.scores, attention_scores(trace.Q_rotated, trace.K_rotated)
        )
        np.testing.assert_array_equal(trace.Z, weigh_values(trace.weights, trace.V))


def test_kv_heads_h_is_the_papers_attention_exactly() -> None:
    paper, _ = trace_with_options("The cat sat on the mat", TraceOptions(heads=4, d_model=16))
    same, _ = trace_with_options(
        "The cat sat on the mat", TraceOptions(heads=4, d_model=16, kv_heads=4)
    )
    for key, array in paper.arrays().items():
        np.testing.assert_array_equal(same.arrays()[key], array, err_msg=key)
    assert same.config == paper.config and not same.is_grouped


def test_random_weights_draw_the_queries_of_the_paper_with_fewer_keys() -> None:
    """W_Q is drawn first, so sharing keys and values leaves the queries as they were."""
    paper = random_weights(AttentionConfig(d_model=8, n_heads=2), np.random.default_rng(0))
    shared = random_weights(
        AttentionConfig(d_model=8, n_heads=2, n_kv_heads=1), np.random.default_rng(0)
    )
    np.testing.assert_array_equal(shared.W_Q, paper.W_Q)
    assert shared.W_K.shape == (1, 8, 4) and shared.n_kv_heads == 1


@pytest.mark.parametrize(
    ("kv_heads", "fragment"),
    [
        (3, "kv_heads=3 does not divide 2 heads"),
        (0, "kv_heads must be a positive whole number"),
        (4, "pick a divisor of 2 (1, 2)"),
    ],
)
def test_kv_heads_that_do_not_divide_the_heads_are_refused(kv_heads: int, fragment: str) -> None:
    with pytest.raises(AttnvizError, match=re_escape(fragment)):
        AttentionConfig(d_model=8, n_heads=2, n_kv_heads=kv_heads)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_weights_whose_key_heads_do_not_divide_the_query_heads_are_refused() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(AttnvizError, match="W_K has 3 key/value heads, which does not divide"):
        AttentionWeights(
            W_Q=rng.normal(size=(4, 8, 2)),
            W_K=rng.normal(size=(3, 8, 2)),
            W_V=rng.normal(size=(3, 8, 2)),
            W_O=rng.normal(size=(8, 8)),
        )
    with pytest.raises(AttnvizError, match="W_V has shape"):
        AttentionWeights(
            W_Q=rng.normal(size=(4, 8, 2)),
            W_K=rng.normal(size=(2, 8, 2)),
            W_V=rng.normal(size=(4, 8, 2)),
            W_O=rng.normal(size=(8, 8)),
        )


def test_rope_needs_an_even_head_width_and_one_sentence() -> None:
    with pytest.raises(AttnvizError, match="d_k = 3 is odd"):
        trace_with_options("I am good", TraceOptions(d_model=6, heads=2, positions="rope"))
    with pytest.raises(AttnvizError, match="RoPE pairing 'spiral' is not known"):
        Rope(pairing="spiral")
    from attnviz.core import trace_cross

    with pytest.raises(AttnvizError, match="cross-attention has two"):
        trace_cross("I am good", "Je vais bien", TraceOptions(positions="rope"))


def test_rope_leaves_x_and_v_alone_and_records_itself() -> None:
    plain, _ = trace_with_options("I am good")
    turned, _ = trace_with_options("I am good", TraceOptions(positions="rope"))
    np.testing.assert_array_equal(turned.X, plain.X)
    np.testing.assert_array_equal(turned.V, plain.V)
    np.testing.assert_array_equal(turned.Q, plain.Q)  # Q as projected; Q_rotated is turned
    assert turned.rope == Rope(10000.0, "half") and turned.E is None and turned.PE is None
    assert turned.Q_rotated is not None
    np.testing.assert_array_equal(turned.Q_rotated[:, 0], plain.Q[:, 0])  # position 0: angle 0
    assert not np.allclose(turned.weights, plain.weights)
