"""The rotary and cache questions: q and k turn, v does not; the cache counts G heads."""

from __future__ import annotations

import math

import pytest

import attnviz
from attnviz.exercise import rope_cache


@pytest.fixture(scope="module")
def trace() -> attnviz.AttentionTrace:
    return attnviz.explain(
        "The cat sat on the mat", positions="rope", heads=4, d_model=16, kv_heads=2
    ).trace


def test_a_q_coordinate_turns_by_m_theta(trace) -> None:
    asked = rope_cache.rope(trace, head=1, row=3, column=0, matrix="Q")
    (a, b), (m,), (theta,) = (g.values for g in asked.givens)
    assert m == 3
    assert asked.answer == pytest.approx(a * math.cos(m * theta) - b * math.sin(m * theta))
    assert {m.key for m in asked.mistakes} <= {
        "turned_backwards",
        "degrees",
        "counted_from_1",
        "swapped_sin_cos",
    }


def test_v_does_not_turn_and_rotating_it_is_the_mistake(trace) -> None:
    asked = rope_cache.rope(trace, head=0, row=4, column=1, matrix="V")
    (a, b), _, _ = (g.values for g in asked.givens)
    assert asked.answer in (a, b)
    assert [m.key for m in asked.mistakes] == ["rotated_v"]
    assert asked.check(asked.mistakes[0].value).mistakes == ("rotated_v",)


def test_the_cache_counts_key_value_heads_and_is_exact(trace) -> None:
    asked = rope_cache.cache(trace)
    assert asked.answer == 2 * 6 * 2 * 4
    assert asked.tolerance == 0 and asked.text.endswith("Answer exactly.")
    assert asked.check(96.0).right and not asked.check(97.0).right
    assert asked.check(192.0).mistakes == ("no_sharing",)
