"""attnviz.exercise in Python: a question from a sentence, its check, its notebook display,
its refusals, and the terminal's loop of questions read from a fake keyboard."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

import attnviz
from attnviz.api.exercise import one_at_a_time_asked, read_number
from attnviz.errors import AttnvizError


def test_a_question_from_a_sentence_checks_and_shows_itself() -> None:
    asked = attnviz.exercise("The cat sat on the mat", kind="scaled", seed=4)
    assert asked.kind == "scaled" and "within 0.01" in asked.text
    verdict = asked.check(asked.answer)
    assert verdict.right and verdict.mistake is None and "Answer:" in verdict.explanation
    (score,) = asked.givens[0].values
    assert asked.check(score).mistake == "forgot to divide by √d_k"
    assert attnviz.exercise("The cat sat on the mat", kind="scaled", seed=4) == asked
    html = asked._repr_html_()
    assert "<script" not in html and "&#x27;" in html and "within 0.01" in html


def test_the_question_is_the_trace_explain_makes_for_the_same_options() -> None:
    asked = attnviz.exercise("I am good", kind="score", seed=5, heads=1, d_model=4)
    trace = attnviz.explain("I am good", seed=5, heads=1, d_model=4).trace
    _, _, head, row, column = asked.where
    assert asked.givens[0].values == tuple(round(float(v), 2) + 0.0 for v in trace.Q[head, row])
    assert asked.givens[1].values == tuple(round(float(v), 2) + 0.0 for v in trace.K[head, column])


def test_the_docs_pages_python_example_runs_and_says_what_it_shows() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "exercise.md").read_text("utf-8")
    (example,) = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(example, namespace)  # noqa: S102 - the page's own example
    assert out.getvalue().startswith("Head ")  # the question's text
    assert namespace["verdict"].right is False
    assert "Answer: " in out.getvalue()


def test_where_names_the_layer_shown_among_a_models_layers() -> None:
    asked = attnviz.exercise(
        "The animal didn't cross the street because it was too tired",
        model="coref",
        kind="scaled",
        layer=1,
    )
    assert asked.where[1] == 0
    asked = attnviz.exercise(
        "The animal didn't cross the street because it was too tired", model="coref", kind="weight"
    )
    assert asked.where[1] == 1 and "layer 2" in asked.text


def test_the_notebook_display_escapes_the_words() -> None:
    asked = attnviz.exercise("<b>bold</b> & co", kind="softmax")
    html = asked._repr_html_()
    assert "<:1" not in html and "<th>&lt;:1</th>" in html and "<th>&amp;</th>" in html


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"kind": "sum"}, 'kind="sum" is no kind of question; give one of projection'),
        ({"kind": "rope"}, 'kind="rope" needs rotary positions: add positions="rope".'),
        ({"kind": "weight"}, 'kind="weight" needs a trained model: add model="coref".'),
        ({"kind": 3}, "kind=3: give a string"),
        ({"seed": "a"}, "seed='a': give a whole number."),
    ],
)
def test_bad_arguments_say_the_fix_in_one_sentence(arguments: dict, message: str) -> None:
    with pytest.raises(AttnvizError) as raised:
        attnviz.exercise("I am good", **arguments)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("typed", "value"),
    [("0.5", 0.5), ("-1.2e-1", -0.12), ("0,5", 0.5), (" .25 ", 0.25), ("−3", -3.0), ("7", 7.0)],
)
def test_numbers_are_read_as_students_type_them(typed: str, value: float) -> None:
    assert read_number(typed) == value


@pytest.mark.parametrize("typed", ["", "abc", "1.2.3", "nan", "inf", "1e999", "0x10", "1,000.5"])
def test_non_numbers_are_not_read(typed: str) -> None:
    assert read_number(typed) is None


def keyboard(*typed: str | type[BaseException]) -> Iterator[str]:
    for item in typed:
        if isinstance(item, str):
            yield item
        else:
            raise item()


def test_the_loop_asks_again_diagnoses_and_stops_at_ctrl_c_with_the_score() -> None:
    asked = [attnviz.exercise("The cat sat on the mat", kind="scaled", seed=s) for s in (1, 2, 3)]
    mistake = asked[1].mistakes[0]
    keys = keyboard("abc", f"{asked[0].answer}", f"{mistake.value}", KeyboardInterrupt)
    out = io.StringIO()
    status = one_at_a_time_asked(asked, Console(file=out, width=100), lambda _: next(keys))
    text = out.getvalue()
    assert status == 130
    assert text.count("Not a number: type one like 0.5") == 1
    assert "Right: the answer is" in text
    assert f"is what you get if you {mistake.name}" in text
    assert text.rstrip().endswith("Score: 1 of 3 right (2 answered).")


def test_the_end_of_input_ends_the_loop_with_the_score_and_status_0() -> None:
    asked = [attnviz.exercise("I am good", kind="cache")]
    out = io.StringIO()
    keys = keyboard(EOFError)
    assert one_at_a_time_asked(asked, Console(file=out, width=100), lambda _: next(keys)) == 0
    assert out.getvalue().rstrip().endswith("Score: 0 of 1 right (0 answered).")
