"""The softmax questions on fixed sentences: masked keys, the scale and the running sum."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attnviz
from attnviz.exercise import softmaxes


def test_scaled_divides_the_shown_score_by_root_d_k() -> None:
    trace = attnviz.explain("I am good", seed=1).trace
    asked = softmaxes.scaled(trace, head=0, row=0, column=2)
    (score,), (d_k, n, d_model) = (g.values for g in asked.givens)
    assert (d_k, n, d_model) == (4, 3, 8)
    assert asked.answer == pytest.approx(score / 2)
    assert asked.check(score).mistakes == ("forgot_scale",)


def test_softmax_shows_masked_keys_as_minus_infinity_and_leaves_them_out() -> None:
    trace = attnviz.explain("The cat sat on the mat", causal=True).trace
    asked = softmaxes.softmax(trace, head=1, row=2, column=0)
    row = asked.givens[2].values
    assert row[3:] == (-math.inf,) * 3
    exps = [math.exp(s - max(row[:3])) for s in row[:3]]
    assert asked.answer == pytest.approx(exps[0] / sum(exps))
    assert any("masked, exp(−∞) = 0" in line for line in asked.solution)
    assert "counted_masked" in {m.key for m in asked.mistakes}


def test_blockwise_rescales_the_old_sum_by_the_new_maximum() -> None:
    trace = attnviz.explain("The cat sat on the mat today", seed=2).trace
    asked = softmaxes.blockwise(trace, head=0, row=3, column=1)
    (m_old,), (l_old,) = asked.givens[0].values, asked.givens[1].values
    block = np.array(asked.givens[2].values)
    m_new = max(m_old, block.max())
    expected = math.exp(m_old - m_new) * l_old + float(np.exp(block - m_new).sum())
    assert asked.answer == pytest.approx(expected)
    assert asked.where == ("blockwise", 0, 0, 3, 1)
