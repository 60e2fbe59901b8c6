"""Each mistake's number, checked by hand on small numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnviz.exercise import mistakes


def by_key(found: list[mistakes.Mistake]) -> dict[str, float]:
    return {mistake.key: mistake.value for mistake in found}


def test_scaled_mistakes() -> None:
    found = by_key(mistakes.scaled(2.0, d_k=4, n=9, d_model=16))
    assert found == {
        "forgot_scale": 2.0,
        "divided_by_d_k": 0.5,
        "divided_by_sqrt_n": pytest.approx(2 / 3),
        "multiplied": 4.0,
        "divided_by_sqrt_d_model": 0.5,
    }


def test_score_mistakes_swap_the_words_vectors() -> None:
    q_i, k_j = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    q_j, k_i = np.array([5.0, 6.0]), np.array([7.0, 8.0])
    found = by_key(mistakes.score(q_i, k_j, q_j, k_i))
    assert found["transposed"] == 7 * 5 + 8 * 6
    assert found["queries_only"] == 1 * 5 + 2 * 6
    assert found["keys_only"] == 7 * 3 + 8 * 4
    assert found["scaled_early"] == pytest.approx(11 / math.sqrt(2))


def test_softmax_mistakes_read_the_column_and_drop_the_exponentials() -> None:
    scaled = np.array([[0.0, 1.0], [2.0, -np.inf]])
    found = by_key(mistakes.softmax(scaled, 0, 1))
    # column 1 holds 1.0 and −∞ (masked): the whole weight on row 0
    assert found["softmax_by_column"] == 1.0
    assert found["no_exponential"] == 1.0
    assert found["sum_without_exponentials"] == pytest.approx(math.e)
    found = by_key(mistakes.softmax(scaled, 1, 0))
    assert found["counted_masked"] == pytest.approx(math.exp(2) / (math.exp(2) + 1))


def test_weight_mistakes_soften_differently() -> None:
    found = by_key(mistakes.weight(np.array([4.0, 0.0]), 0, d_k=4))
    assert found["softmax_unscaled"] == pytest.approx(1 / (1 + math.exp(-4)))
    assert found["divided_by_d_k"] == pytest.approx(1 / (1 + math.exp(-1)))
    assert found["divided_by_sqrt_n"] == pytest.approx(1 / (1 + math.exp(-4 / math.sqrt(2))))


def test_z_output_and_projection_mistakes() -> None:
    found = by_key(mistakes.z(np.array([0.25, 0.75]), np.array([1.0, 3.0]), np.array([4.0, 8.0])))
    assert found == {"weighted_keys": 7.0, "unweighted_sum": 4.0, "mean_of_values": 2.0}
    z_heads = np.array([[1.0, 2.0], [3.0, 4.0]])
    w_o = np.arange(16.0).reshape(4, 4)
    found = by_key(mistakes.output(z_heads, w_o, 1, bias=None))
    assert found["added_heads"] == 4 * 1 + 6 * 5
    assert found["first_head_only"] == 1 * 1 + 2 * 5
    assert found["row_for_column"] == 1 * 4 + 2 * 5 + 3 * 6 + 4 * 7
    found = by_key(mistakes.projection(np.array([1.0, 2.0]), np.eye(2), 0, "Q", bias=0.5))
    assert found == {"column_2": 2.5, "row_for_column": 1.5, "forgot_bias": 1.0}


def test_rope_cache_and_blockwise_mistakes() -> None:
    found = by_key(mistakes.rope(1.0, 0.0, 1, math.pi / 2, second=False, matrix="Q"))
    assert found["turned_backwards"] == pytest.approx(0.0, abs=1e-12)
    assert found["counted_from_1"] == pytest.approx(-1.0)
    assert by_key(mistakes.rope(1.0, 0.0, 1, 0.5, second=True, matrix="V")) == {
        "rotated_v": pytest.approx(math.sin(0.5))
    }
    assert by_key(mistakes.cache(n=5, h=4, groups=2, d_k=8, d_model=32)) == {
        "no_sharing": 320,
        "keys_only": 80,
        "d_model_for_d_k": 640,
        "one_token": 32,
    }
    found = by_key(mistakes.blockwise(0.0, 2.0, np.array([1.0, -np.inf])))
    assert found["forgot_rescale"] == pytest.approx(3.0)
    assert found["rescaled_backwards"] == pytest.approx(2 * math.e + 1)
    assert found["left_out_old"] == pytest.approx(1.0)
