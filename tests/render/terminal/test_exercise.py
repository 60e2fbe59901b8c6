"""The terminal's drawing of a question and a verdict: inputs as tables, numbers whole."""

from __future__ import annotations

import io

from rich.console import Console

import attnviz
from attnviz.render.terminal.exercise import (
    given_tables,
    question_renderables,
    score_text,
    verdict_renderables,
)


def drawn(renderables: list, width: int = 80) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None)
    for renderable in renderables:
        console.print(renderable)
    return out.getvalue()


def test_a_matrix_of_inputs_is_one_table_whose_numbers_are_never_cut() -> None:
    asked = attnviz.exercise(
        "The animal didn't cross the street because it was tired", kind="softmax"
    )
    assert len(given_tables(asked.givens, width=200)) == 1
    assert len(given_tables(asked.givens, width=80)) == 2  # 11 words: split to fit
    text = drawn(question_renderables(asked, 1, 2, Console(width=80)))
    assert "…" not in text
    for given in asked.givens:
        assert f"{given.values[0]:.2f}".replace("-inf", "−∞") in text


def test_a_verdict_draws_its_explanation_and_the_score_counts() -> None:
    asked = attnviz.exercise("I am good", kind="z")
    text = drawn(verdict_renderables(asked.check(asked.answer), Console(width=80)))
    assert text.startswith("Right: the answer is")
    assert str(score_text(2, 3, 4)) == "Score: 2 of 4 right (3 answered)."
    assert str(score_text(4, 4, 4)) == "Score: 4 of 4 right."
