"""Sheets of hand-built questions for the worksheet's renderers, their texts full of the
characters each format reads as markup."""

from __future__ import annotations

from attnviz.exercise.questions import Given, Mistake, Question
from attnviz.render.worksheet.sheet import Sheet

#: Words a format could read as markup: GIFT's ~ = # { } :, Markdown's * _ | and HTML's < &.
HOSTILE = ("a~b", "c=d", "#1", "{x}", "e:f", "*it*", "a|b", "<b>", "&amp;", "back\\slash")


def question(number: int, *, answer: float = 0.1234, tolerance: float = 0.01) -> Question:
    """A softmax question whose words and texts hold HOSTILE."""
    return Question(
        kind="softmax",
        text=f"What weight does '<it>' give '{HOSTILE[number % len(HOSTILE)]}' {{#{number}}}?",
        givens=(
            Given(
                "scaled scores of '<it>' (head 1)",
                HOSTILE[:6],
                (0.35, -1.06, 0.71, 0.0, 1.41, -0.35),
                2,
            ),
            Given("W_Q column 2 ~= #:{}", ("1", "2", "3", "4"), (1.0, -0.5, 0.0, 0.5), 1),
        ),
        answer=answer,
        decimals=2,
        tolerance=tolerance,
        solution=(
            "max = 1.41; exp(0.35 - 1.41) = 0.3465 ~ {about} #1",
            "Σ exp = 4.20: w = 0.3465 / 4.20 = 0.0825 <done> & a|b *it*",
        ),
        checkpoints=(("the row's largest scaled score", 1.41),),
        mistakes=(Mistake("forgot_scale", "forgot to divide by √d_k", 0.2),),
        where=("weights", 0, 0, 5, 1),
    )


def sheets(copies: int = 2, count: int = 3, *, hand: bool = True) -> list[Sheet]:
    """A set of ``copies`` sheets of ``count`` questions each, answers differing."""
    return [
        Sheet(
            number,
            copies,
            "The *animal* <crossed> because it ~ was = tired #1 {a}: b|c",
            ("Numbers for pencil and paper: d_model 4, 2 heads, d_k 2.", "Seed 3."),
            tuple(
                question(i, answer=round(-0.5 + 0.1 * i + number, 4), tolerance=0.005 * (i + 1))
                for i in range(count)
            ),
            hand=hand,
        )
        for number in range(1, copies + 1)
    ]
