"""Attention rollout (Abnar & Zuidema 2020): Â_l = ½·mean_h A_l + ½·I, R_l = Â_l·R_{l−1}."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.analysis.rollout import residual_attention, rollout, trace_rollout
from attnviz.attention import causal_mask

from support import needs_model

SENTENCE = "The animal didn't cross the street because it was too tired"


def random_layers(rng: np.random.Generator, n_layers: int, n_heads: int, n: int) -> np.ndarray:
    """[L, h, n, n] rows of positive weights summing to 1."""
    raw = rng.random((n_layers, n_heads, n, n)) + 1e-3
    return raw / raw.sum(axis=-1, keepdims=True)


def looped_rollout(layers: np.ndarray) -> np.ndarray:
    """The paper's recursion written out entry by entry."""
    n_layers, n_heads, n, _ = layers.shape
    result = []
    previous = None
    for layer in range(n_layers):
        mixed = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                mean = sum(layers[layer, h, i, j] for h in range(n_heads)) / n_heads
                mixed[i, j] = 0.5 * mean + 0.5 * (i == j)
            mixed[i] /= mixed[i].sum()
        if previous is None:
            current = mixed
        else:
            current = np.zeros((n, n))
            for i in range(n):
                for j in range(n):
                    current[i, j] = sum(mixed[i, k] * previous[k, j] for k in range(n))
        result.append(current)
        previous = current
    return np.stack(result)


def test_rows_sum_to_one_and_equal_a_literal_loop() -> None:
    layers = random_layers(np.random.default_rng(3), 4, 3, 6)
    rolled = rollout(layers)
    assert rolled.shape == (4, 6, 6)
    np.testing.assert_allclose(rolled.sum(axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(rolled, looped_rollout(layers), atol=1e-12)


def test_a_hand_checked_two_by_two() -> None:
    """A = [[1, 0], [1, 0]] (everyone looks at word 1): Â = [[1, 0], [½, ½]];
    R_2 = Â·Â = [[1, 0], [¾, ¼]]: word 2 keeps a quarter of itself after two layers."""
    layer = np.array([[[1.0, 0.0], [1.0, 0.0]]])
    np.testing.assert_allclose(residual_attention(layer), [[1.0, 0.0], [0.5, 0.5]])
    np.testing.assert_allclose(rollout([layer, layer])[1], [[1.0, 0.0], [0.75, 0.25]])


def test_one_uniform_layer_leans_on_the_word_itself() -> None:
    """One layer of uniform weights over n words: Â = ½/n everywhere + ½ on the diagonal."""
    n = 4
    rolled = rollout([np.full((2, n, n), 1 / n)])
    assert rolled.shape == (1, n, n)
    np.testing.assert_allclose(rolled[0], 0.5 / n + 0.5 * np.eye(n))


def test_heads_are_averaged() -> None:
    """Two heads that each look only at one word average to ½ and ½ before the identity."""
    heads = np.array([[[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [0.0, 1.0]]])
    np.testing.assert_allclose(residual_attention(heads), [[0.75, 0.25], [0.25, 0.75]])


def test_a_causal_rollout_stays_lower_triangular() -> None:
    n = 5
    mask = causal_mask(n)
    layers = random_layers(np.random.default_rng(1), 3, 2, n) * mask
    layers /= layers.sum(axis=-1, keepdims=True)
    rolled = rollout(layers, mask)
    assert (rolled[:, ~mask] == 0).all()
    np.testing.assert_allclose(rolled.sum(axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(rolled[:, 0, 0], 1.0)  # the first word can only keep itself


def test_padding_keeps_weight_off_the_masked_keys(tmp_path: Path) -> None:
    """--pad-to: a [PAD] query may not attend to itself, so its row gets no identity term and
    no row, real or padding, sends anything to a [PAD] key."""
    shown = attnviz.explain("I am good", pad_to=5)
    trace = shown.trace
    assert trace.mask is not None and not trace.mask[4, 4]
    rolled = trace_rollout(shown.layers)
    np.testing.assert_allclose(rolled[0, :, 3:], 0.0)
    np.testing.assert_allclose(rolled.sum(axis=-1), 1.0, atol=1e-12)
    path = tmp_path / "padded.npz"
    attnviz.export_trace(trace, path)
    with np.load(path) as data:  # the [PAD] rows: the mean weight, renormalised without I
        np.testing.assert_allclose(rolled[0, 4], data["weights"].mean(axis=0)[4], atol=1e-12)


def test_trace_rollout_of_a_causal_run() -> None:
    shown = attnviz.explain(SENTENCE, causal=True)
    rolled = trace_rollout(shown.layers)
    n = shown.trace.n_tokens
    assert rolled.shape == (1, n, n)
    np.testing.assert_allclose(np.triu(rolled[0], 1), 0.0)
    np.testing.assert_allclose(rolled[0], residual_attention(shown.trace.weights))


def test_refusals() -> None:
    with pytest.raises(ValueError, match="at least one layer"):
        rollout([])
    with pytest.raises(ValueError, match="at least one layer"):
        trace_rollout([])
    with pytest.raises(ValueError, match="square"):
        rollout([np.full((1, 2, 3), 1 / 3)])
    crossed = attnviz.cross("I am very good", "Je vais bien").trace
    with pytest.raises(ValueError, match="cross-attention"):
        trace_rollout([crossed])
    first = attnviz.explain("I am good").trace
    other = attnviz.explain("you are good").trace
    with pytest.raises(ValueError, match="tokens differ"):
        trace_rollout([first, other])


@pytest.mark.slow
@needs_model
def test_minilm_rollout_equals_the_loop_over_its_export(tmp_path: Path) -> None:
    layers = attnviz.explain(SENTENCE, model="minilm").layers
    path = tmp_path / "layers.npz"
    attnviz.export_layers(layers, path)
    with np.load(path) as data:
        weights = np.asarray(data["weights"], dtype=np.float64)  # [L, h, n, n]
    rolled = trace_rollout(layers)
    assert rolled.shape == (6, 15, 15)
    np.testing.assert_allclose(rolled, looped_rollout(weights), atol=1e-6)
