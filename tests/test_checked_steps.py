"""The step functions as the Python API exports them: the textbook's numbers, and each refusal
before any work (attention.py's own functions check nothing)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import attnviz
from attnviz import attention, checked_steps
from attnviz.errors import AttnvizError

#: A view of 8 bytes standing for 2³⁴ numbers, far past limits.MAX_TRACE_BYTES.
HUGE = np.broadcast_to(np.zeros(1), (1 << 10, 1 << 12, 1 << 12))


def test_the_exported_steps_are_the_checked_ones() -> None:
    for name in (
        "project",
        "attention_scores",
        "scale_scores",
        "softmax",
        "weigh_values",
        "concat_heads",
        "project_out",
    ):
        assert getattr(attnviz, name) is getattr(checked_steps, name)


def test_checked_steps_give_the_textbook_numbers() -> None:
    rng = np.random.default_rng(4)
    x, w, b = rng.normal(size=(3, 8)), rng.normal(size=(4, 8, 2)), rng.normal(size=(4, 2))
    q = checked_steps.project(x, w, b)
    np.testing.assert_array_equal(q, attention.project(x, w, b))
    k = checked_steps.project(x, w[:2], b[:2])  # two key/value heads for four query heads
    scores = checked_steps.attention_scores(q, k)
    np.testing.assert_array_equal(scores, attention.attention_scores(q, k))
    weights = checked_steps.softmax(checked_steps.scale_scores(scores, 2))
    np.testing.assert_array_equal(weights, attention.softmax(attention.scale_scores(scores, 2)))
    room = np.empty((4, 3, 2))
    assert checked_steps.weigh_values(weights, k, out=room) is room
    np.testing.assert_array_equal(room, attention.weigh_values(weights, k))
    concat = checked_steps.concat_heads(room)
    np.testing.assert_array_equal(checked_steps.project_out(concat, w[0]), concat @ w[0])


CALLS: list[Callable[[], object]] = [
    lambda: checked_steps.softmax(HUGE),
    lambda: checked_steps.scale_scores(HUGE, 4),
    lambda: checked_steps.concat_heads(HUGE),
    lambda: checked_steps.attention_scores(HUGE, HUGE),
    lambda: checked_steps.weigh_values(HUGE, HUGE),
]


@pytest.mark.parametrize("call", CALLS)
def test_a_result_too_large_is_refused_before_numpy_allocates_it(
    call: Callable[[], object],
) -> None:
    with pytest.raises(AttnvizError, match="would take"):
        call()


def test_a_softmax_of_nan_is_refused_naming_the_row() -> None:
    with pytest.raises(AttnvizError, match=r"NaN.*row \[1\]"):
        checked_steps.softmax(np.array([[0.0, 1.0], [np.nan, 0.0]]))
    assert np.isnan(attention.softmax(np.array([[np.nan, 0.0]]))).all()  # the caller's to refuse
