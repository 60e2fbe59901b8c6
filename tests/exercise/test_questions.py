"""The data model's judgement: right within the tolerance, a mistake named only when it fits
best, both named when two coincide, never a mistake equal to the answer, and a slip located."""

from __future__ import annotations

import dataclasses

import pytest

from attnviz.exercise.questions import Mistake, Question, Slip, format_number


def question(*mistakes: Mistake, slips: tuple[Slip, ...] = ()) -> Question:
    return Question(
        kind="scaled",
        text="What is the scaled score?",
        givens=(),
        answer=0.5,
        decimals=2,
        tolerance=0.01,
        solution=("1.00 / √4 = 0.50",),
        checkpoints=(("q·k", 1.0), ("√d_k", 2.0)),
        mistakes=mistakes,
        where=("scaled", 0, 0, 0, 1),
        slips=slips,
    )


FORGOT = Mistake("forgot_scale", "forgot to divide by √d_k", 1.0)
BY_D_K = Mistake("divided_by_d_k", "divided by d_k instead of √d_k", 0.25)


def test_the_answer_within_the_tolerance_is_right_and_says_the_tolerance() -> None:
    for value in (0.5, 0.51, 0.49, 0.505):
        verdict = question(FORGOT).check(value)
        assert verdict.right and verdict.mistake is None and verdict.mistakes == ()
        assert "within 0.01" in verdict.explanation
    assert not question(FORGOT).check(0.52).right


def test_a_mistakes_number_is_diagnosed_as_that_mistake_with_the_solution() -> None:
    verdict = question(FORGOT, BY_D_K).check(1.004)
    assert not verdict.right
    assert verdict.mistake == "forgot to divide by √d_k"
    assert verdict.mistakes == ("forgot_scale",)
    assert "1.00 / √4 = 0.50" in verdict.explanation


def test_only_the_best_fitting_reading_is_named_when_two_fit_but_differ() -> None:
    near = Mistake("a", "did a", 1.0)
    far = Mistake("b", "did b", 1.018)  # 0.018 apart: not the same number within 0.01
    verdict = question(near, far).check(1.0095)
    assert verdict.mistakes == ("b",)
    verdict = question(near, far).check(1.002)
    assert verdict.mistakes == ("a",)


def test_both_are_named_when_their_numbers_coincide() -> None:
    other = Mistake("other", "did the other thing", 1.005)
    verdict = question(FORGOT, other).check(1.003)
    assert set(verdict.mistakes) == {"forgot_scale", "other"}
    assert verdict.mistake is not None and " or " in verdict.mistake


def test_a_mistake_equal_to_the_answer_is_never_offered() -> None:
    same = Mistake("same", "did nothing wrong", 0.505)
    verdict = question(same).check(0.514)
    assert verdict.mistakes == ()
    assert verdict.mistake is None


def test_no_fit_names_the_first_slip_that_gives_the_number_or_the_first_step() -> None:
    slips = (Slip(1, "used 4 for √d_k", 0.25), Slip(0, "dropped a term", 0.7))
    verdict = question(slips=slips).check(0.7)
    assert verdict.mistake is None
    assert "could have gone wrong at: q·k = 1.0000" in verdict.explanation
    verdict = question(slips=slips).check(3.0)
    assert "as early as the first step: check q·k" in verdict.explanation


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_non_number_is_wrong_and_diagnosed_as_nothing(value: float) -> None:
    verdict = question(FORGOT).check(value)
    assert not verdict.right and verdict.mistakes == ()


def test_questions_are_frozen_data() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        question().answer = 1.0  # type: ignore[misc]


def test_a_zero_prints_without_a_minus_sign() -> None:
    assert format_number(-0.001, 2) == "0.00"
    assert format_number(-0.01, 2) == "-0.01"
