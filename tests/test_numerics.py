"""Extreme but finite inputs: no NaN or inf anywhere in the trace, and every row of weights sums
to 1 within 1e-9 (the softmax subtracts each row's maximum, so exp never overflows)."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz.config import MAX_TOKENS
from attnviz.core import trace_with_options
from attnviz.options import Preset, TraceOptions

ARRAY_FIELDS = ("X", "Q", "K", "V", "scores", "scaled", "weights", "Z", "concat", "output")


def assert_sound(trace: attnviz.AttentionTrace) -> None:
    for name in ARRAY_FIELDS:
        array = getattr(trace, name)
        assert np.isfinite(array).all(), name
    assert (trace.weights >= 0).all()
    np.testing.assert_allclose(trace.weights.sum(axis=-1), 1.0, rtol=0, atol=1e-9)


def rows(n_tokens: int, d_model: int, scale: float, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n_tokens, d_model)) * scale


@pytest.mark.parametrize("scale", [1e6, -1e6, 1e-300, 0.0])
def test_huge_tiny_and_zero_embeddings(scale: float) -> None:
    tokens = ["the", "cat", "sat", "on", "the", "mat"]
    trace = attnviz.trace_attention(tokens, embeddings=rows(6, 8, scale))
    assert_sound(trace)
    if scale == 0.0:
        # Every score is 0, so every word attends to all six words equally.
        np.testing.assert_allclose(trace.weights, 1 / 6, rtol=0, atol=1e-15)
    if abs(scale) == 1e6:
        # Scores of order 1e12: the softmax is one-hot, exactly, and still sums to 1.
        assert np.isclose(trace.weights.max(axis=-1), 1.0).all()


def test_one_word_attends_only_to_itself() -> None:
    trace = attnviz.trace_attention("Hello")
    assert_sound(trace)
    assert trace.weights.shape == (2, 1, 1)
    assert (trace.weights == 1.0).all()
    # With one key, z is that key's value vector, unchanged.
    np.testing.assert_array_equal(trace.Z, trace.V)


def test_a_repeated_word_gets_the_same_row_and_the_same_weights() -> None:
    trace = attnviz.trace_attention("the the the the")
    assert_sound(trace)
    np.testing.assert_array_equal(trace.X[0], trace.X[3])
    np.testing.assert_allclose(trace.weights, 0.25, rtol=0, atol=1e-15)


@pytest.mark.slow
@pytest.mark.parametrize("paper", [False, True])
def test_the_longest_sentence_at_the_default_and_paper_sizes(paper: bool) -> None:
    words = [f"w{index % 97}" for index in range(MAX_TOKENS)]
    traced = trace_with_options(words, TraceOptions(preset=Preset.paper if paper else None, seed=3))
    assert traced.trace.n_tokens == MAX_TOKENS
    assert_sound(traced.trace)


@pytest.mark.parametrize("scale", [1e6, 0.0])
def test_masks_with_extreme_embeddings(scale: float) -> None:
    words = ["a", "b", "c", "d"]
    for options in ({"causal": True}, {"pad_to": 7}, {"causal": True, "pad_to": 7}):
        trace = trace_with_options(
            words, TraceOptions(**options), embeddings=rows(4, 8, scale)
        ).trace
        assert_sound(trace)
        assert (trace.weights[:, ~trace.mask] == 0).all()
