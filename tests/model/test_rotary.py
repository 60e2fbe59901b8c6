"""attnviz.model.families.rotary: RMSNorm, SwiGLU, RoPE in both pairings, and attention with grouped
key/value heads, on random inputs."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.model.families.rotary import (
    rms_norm,
    rms_norm_columns,
    rope_angles,
    rotate,
    swiglu_columns,
)
from attnviz.positions import Rope


def test_rms_norm_divides_by_the_root_mean_square_without_centring() -> None:
    rng = np.random.default_rng(0)
    x, gamma = rng.normal(3.0, 2.0, (5, 16)), rng.normal(size=16)
    expected = x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + 1e-5) * gamma
    np.testing.assert_allclose(rms_norm(x, gamma, 1e-5), expected, rtol=1e-14)
    assert rms_norm(x.astype(np.float32), gamma.astype(np.float32), 1e-5).dtype == np.float32
    # The forward pass keeps the vectors as columns: the same numbers, transposed.
    np.testing.assert_allclose(rms_norm_columns(x.T, gamma, 1e-5), expected.T, rtol=1e-14)


def test_swiglu_is_silu_of_the_gate_times_the_up_projection() -> None:
    rng = np.random.default_rng(1)
    x, gate, up = rng.normal(size=(4, 8)), rng.normal(size=(8, 6)), rng.normal(size=(8, 6))
    g = x @ gate
    expected = g / (1 + np.exp(-g)) * (x @ up)
    # From gate_proj's and up_proj's weights as stored, [out, in], one above the other.
    rows = np.concatenate([gate.T, up.T])
    np.testing.assert_allclose(swiglu_columns(x.T, rows), expected.T, rtol=1e-13)
    huge = swiglu_columns(np.array([[-1e4], [1e4]]), np.array([[1.0, 1.0], [0.0, 0.0]]))
    assert np.isfinite(huge).all()  # e^−g overflowing to ∞ gives SiLU 0, not NaN


@pytest.mark.parametrize("pairing", ["half", "adjacent"])
def test_each_pair_turns_by_position_times_theta(pairing: str) -> None:
    rope = Rope(base=100.0, pairing=pairing)
    d_k, n = 6, 4
    cos, sin = rope_angles(rope, n, d_k, np.float64)
    theta = 100.0 ** (-np.arange(0, d_k, 2) / d_k)  # θ_i = base^(−2i/d_k)
    np.testing.assert_allclose(cos, np.cos(np.arange(n)[:, None] * theta), rtol=1e-15)
    x = np.random.default_rng(2).normal(size=(3, n, d_k))
    rotated = rotate(x, rope, cos, sin)
    pairs = [(i, i + d_k // 2) for i in range(d_k // 2)]
    if pairing == "adjacent":
        pairs = [(2 * i, 2 * i + 1) for i in range(d_k // 2)]
    for i, (a, b) in enumerate(pairs):
        angle = np.arange(n)[:, None] * theta[i]
        np.testing.assert_allclose(
            rotated[..., a], x[..., a] * np.cos(angle.T) - x[..., b] * np.sin(angle.T), atol=1e-14
        )
        np.testing.assert_allclose(
            rotated[..., b], x[..., b] * np.cos(angle.T) + x[..., a] * np.sin(angle.T), atol=1e-14
        )


def test_both_pairings_give_the_same_scores_once_the_coordinates_are_arranged_for_them() -> None:
    rng = np.random.default_rng(3)
    d_k, n = 8, 6
    q, k = rng.normal(size=(1, n, d_k)), rng.normal(size=(1, n, d_k))
    # Coordinate i of the "half" layout is 2i of the "adjacent" one, i + d_k/2 is 2i + 1.
    order = np.empty(d_k, int)
    order[0::2], order[1::2] = np.arange(d_k // 2), np.arange(d_k // 2, d_k)
    scores = {}
    for pairing, (qq, kk) in (("half", (q, k)), ("adjacent", (q[..., order], k[..., order]))):
        rope = Rope(pairing=pairing)
        cos, sin = rope_angles(rope, n, d_k, np.float64)
        scores[pairing] = rotate(qq, rope, cos, sin) @ rotate(kk, rope, cos, sin).swapaxes(1, 2)
    np.testing.assert_allclose(scores["half"], scores["adjacent"], rtol=1e-12, atol=1e-12)
    # The wrong pairing still runs, but gives other scores.
    rope = Rope(pairing="adjacent")
    cos, sin = rope_angles(rope, n, d_k, np.float64)
    wrong = rotate(q, rope, cos, sin) @ rotate(k, rope, cos, sin).swapaxes(1, 2)
    assert not np.allclose(wrong, scores["half"])


def test_rotated_scores_depend_on_the_distance_only() -> None:
    rng = np.random.default_rng(4)
    d_k, n = 8, 12
    q, k = rng.normal(size=d_k), rng.normal(size=d_k)
    rope = Rope(base=10000.0)
    cos, sin = rope_angles(rope, n, d_k, np.float64)
    rows = rotate(np.tile(q, (1, n, 1)), rope, cos, sin)[0]
    keys = rotate(np.tile(k, (1, n, 1)), rope, cos, sin)[0]
    # q at 5 and k at 2 score as q at 10 and k at 7: the same two vectors 3 apart.
    assert rows[5] @ keys[2] == pytest.approx(rows[10] @ keys[7], rel=1e-12)
    assert rows[5] @ keys[2] != pytest.approx(rows[5] @ keys[3], rel=1e-6)
