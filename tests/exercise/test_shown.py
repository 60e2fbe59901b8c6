"""Rounding as shown, a sum of products worked term by term, and the tolerance said."""

from __future__ import annotations

import math

import pytest

from attnviz.exercise.questions import Mistake
from attnviz.exercise.shown import Worked, finished, rounded, tolerance


def test_rounding_keeps_minus_infinity_and_drops_minus_zero() -> None:
    assert rounded([0.126, -math.inf, -0.001], 2) == (0.13, -math.inf, 0.0)
    assert str(rounded([-0.001], 2)[0]) == "0.0"


def test_a_worked_sum_has_its_running_sums_and_slips() -> None:
    worked = Worked([1.0, 2.0], [3.0, -1.0], 2, added=0.5)
    assert worked.total == 1.5
    assert [value for _, value in worked.checkpoints] == [3.0, 1.0, 1.5]
    slips = {slip.what: slip.value for slip in worked.slips}
    assert slips["left out product 1"] == -1.5
    assert slips["flipped the sign of product 2"] == 5.5
    assert slips["left out the bias"] == 1.0
    assert worked.lines[1] == "  2: 2.00 × (-1.00) = -2.0000"


def test_finished_drops_mistakes_that_give_the_answer_and_says_the_tolerance() -> None:
    asked = finished(
        kind="scaled",
        text="What?",
        givens=(),
        answer=0.5,
        decimals=2,
        solution=("s",),
        checkpoints=(),
        mistakes=(Mistake("same", "did it", 0.509), Mistake("off", "did it", 0.6)),
        where=("scaled", 0, 0, 0, 0),
        unrounded=0.5123,
    )
    assert [m.key for m in asked.mistakes] == ["off"]
    assert asked.text == "What? Answer to 2 decimals (within 0.01)."
    assert asked.tolerance == tolerance(2) == pytest.approx(0.01)
    assert asked.solution[-1].endswith("the lesson's unrounded number is 0.5123.)")
