"""The sum-of-products questions on a fixed sentence: what they show, ask and work out."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz.exercise import sums


@pytest.fixture(scope="module")
def trace() -> attnviz.AttentionTrace:
    return attnviz.explain("The cat sat on the mat", seed=3).trace


def test_projection_shows_x_and_every_column_and_works_the_asked_one(trace) -> None:
    asked = sums.projection(trace, head=1, row=2, column=3, matrix="K")
    assert asked.text.startswith("What is K₂['sat', 4], entry 4 of k for 'sat' in head 2")
    assert [g.name for g in asked.givens[1:]] == [f"W_K₂ column {c}" for c in range(1, 5)]
    x, w = np.array(asked.givens[0].values), np.array(asked.givens[4].values)
    assert asked.answer == pytest.approx(float(x @ w), abs=1e-12)
    assert asked.where == ("qkv", 0, 1, 2, 3)
    assert any(line.startswith("  sum = ") for line in asked.solution)
    assert f"Answer: {asked.answer:.2f}" in asked.solution


def test_score_shows_both_words_q_and_k_for_the_transposed_reading(trace) -> None:
    asked = sums.score(trace, head=0, row=1, column=5)
    assert [g.name for g in asked.givens] == [
        "q for 'cat'",
        "k for 'mat'",
        "q for 'mat'",
        "k for 'cat'",
    ]
    transposed = next(m for m in asked.mistakes if m.key == "transposed")
    q_j, k_i = (np.array(g.values) for g in asked.givens[2:])
    assert transposed.value == pytest.approx(float(k_i @ q_j))


def test_z_weights_values_not_keys_and_output_concatenates(trace) -> None:
    asked = sums.z(trace, head=0, row=0, column=2)
    w, v, k = (np.array(g.values) for g in asked.givens)
    assert asked.answer == pytest.approx(float(w @ v))
    assert {m.key: m.value for m in asked.mistakes}.get("weighted_keys", float(w @ k)) == (
        pytest.approx(float(w @ k))
    )
    asked = sums.output(trace, head=0, row=4, column=6)
    z1, z2, column = (np.array(g.values) for g in asked.givens[:3])
    assert asked.answer == pytest.approx(float(np.concatenate([z1, z2]) @ column))
    assert asked.givens[3].name == "W_O row 7"  # square W_O: the row to be mistaken for it
