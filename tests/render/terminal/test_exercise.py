"""The terminal's drawing of a question and a verdict: inputs as tables, numbers whole."""

from __future__ import annotations

import io

from rich.console import Console

import attnviz
from attnviz.render.terminal.exercise import (
    given_tables,
    question_renderables,
    score_text,
    shared_name,
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
    # "…" only where the rows' own words go in the words they share: no number is cut
    assert all("…" not in line for line in text.splitlines() if "scaled scores of …" not in line)
    for given in asked.givens:
        assert f"{given.values[0]:.2f}".replace("-inf", "−∞") in text


def test_a_verdict_draws_its_explanation_and_the_score_counts() -> None:
    asked = attnviz.exercise("I am good", kind="z")
    text = drawn(verdict_renderables(asked.check(asked.answer), Console(width=80)))
    assert text.startswith("Right: the answer is")
    assert str(score_text(2, 3, 4)) == "Score: 2 of 4 right (3 answered)."
    assert str(score_text(4, 4, 4)) == "Score: 4 of 4 right."


def test_rows_of_one_matrix_are_named_by_their_own_words_under_the_shared_ones() -> None:
    names = ["scaled scores of 'it' (head 2)", "scaled scores of 'was' (head 2)"]
    assert shared_name(names) == ("scaled scores of … (head 2)", ["'it'", "'was'"])
    assert shared_name(["V₁ column 4", "K₁ column 4"]) == ("… column 4", ["V₁", "K₁"])
    unlike = ["weights of 'cat' (head 1)", "V₁ column 4"]
    assert shared_name(unlike) == ("", unlike)  # nothing shared
    assert shared_name(["x of 'a'", "x of 'a'"]) == ("", ["x of 'a'", "x of 'a'"])  # same rows
    assert shared_name(["weights of 'it'"]) == ("", ["weights of 'it'"])  # one row: whole
    assert shared_name(["q of 'a'", "q of 'a' (head 1)"]) == ("q of …", ["'a'", "'a' (head 1)"])


def test_a_softmax_question_at_80_columns_names_each_row_on_one_line() -> None:
    asked = attnviz.exercise("The cat sat on the mat", kind="softmax", seed=3)
    text = drawn(question_renderables(asked, 1, 1, Console(width=80)))
    lines = text.splitlines()
    assert any(line.startswith("scaled scores of … (head") for line in lines)
    words = ["'The:1'", "'cat'", "'sat'", "'on'", "'the:2'", "'mat'"]
    assert [
        line.split()[0] for line in lines if line.split()[:1] and line.split()[0] in words
    ] == words
    assert all(line == line.rstrip() for line in lines)
