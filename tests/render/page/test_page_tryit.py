"""The page's "Try it" mode: one hidden cell per step and head, asked as attnviz.exercise asks
it, and, marked ``browser``, typed answers judged by the page exactly as Question.check judges
them: the same verdict, the same mistakes, the same explanation, line for line."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnviz.core import trace_layers
from attnviz.exercise.questions import Given, Mistake, Question, Slip
from attnviz.exercise.sets import question
from attnviz.labels import format_number
from attnviz.options import TraceOptions
from attnviz.render.page.page import page_html
from attnviz.render.page.page_data import PAGE_TEXT, page_data
from attnviz.render.page.page_tryit import (
    ASKED,
    HIDDEN_DECIMALS,
    MAX_NUMBERS,
    MAX_WORDS,
    TRYIT_TEXT,
    cells,
    numbers_in,
    question_data,
)
from attnviz.selection import ViewOptions, select
from attnviz.trace import AttentionTrace
from render.analysed import analysed
from render.page.test_page import choose, open_page
from render.page.test_page_script import english_in


def traced(sentence: str, **options: Any) -> tuple[tuple[AttentionTrace, ...], AttentionTrace]:
    layers, _ = trace_layers(sentence, TraceOptions(**options))
    return layers, layers[-1]


def tryit_of(layers: tuple[AttentionTrace, ...], trace: AttentionTrace) -> dict[str, Any]:
    data: dict[str, Any] = page_data(analysed(layers), trace, select(trace, ViewOptions()))
    return data["tryit"]


def asked(trace: AttentionTrace, layer: int = 0) -> list[tuple[str, int | None, Question]]:
    """The questions the page asks, built here as attnviz exercise builds them: (step, the
    head's place in the page's heads or None, question)."""
    found = []
    for index in range(trace.n_heads):
        for step, kind, cell in cells(trace, index, 0):
            if step == "output" and index > 0:
                continue
            head = None if step == "output" else index
            found.append((step, head, question(trace, kind, layer=layer, **cell)))
    return found


# -- the data ------------------------------------------------------------------------------------


def test_each_step_asks_one_cell_of_each_head_and_the_output_once() -> None:
    layers, trace = traced("The cat sat on the mat", causal=True, heads=3, d_model=9)
    data = tryit_of(layers, trace)
    assert data["available"] and data["layer"] == 0
    steps = [(q["step"], q["head"]) for q in data["questions"]]
    per_head = [key for key, _ in ASKED if key != "output"]
    assert steps == [
        *((key, 0) for key in per_head),
        ("output", None),
        *((key, 1) for key in per_head),
        *((key, 2) for key in per_head),
    ]
    built = asked(trace)
    for shown, (_, _, made) in zip(data["questions"], built, strict=True):
        assert shown["text"] == made.text and shown["answer"] == made.answer
        assert shown["solution"] == list(made.solution)
    # A row that reads one key alone is never asked: its weight is 1 whatever the scores.
    assert all(q["where"][3] > 0 for q in data["questions"])
    assert tryit_of(layers, trace) == data  # seeded: the same cells each time


def test_the_sentences_are_the_questions_own_verdicts_with_slots() -> None:
    made = Question(
        kind="scaled",
        text="What is 0.40 / √4?",
        givens=(Given("q·k", ("q·k",), (0.4,), 2),),
        answer=0.2,
        decimals=2,
        tolerance=0.01,
        solution=("0.40 / 2 = 0.20",),
        checkpoints=(("√d_k", 2.0),),
        mistakes=(Mistake("forgot_scale", "forgot to divide by √d_k", 0.4),),
        where=("scaled", 0, 0, 1, 0),
        slips=(Slip(0, "used 4 for √4", 0.1),),
    )
    data = question_data(made)
    assert data["right"] == made.check(0.2).explanation.split("\n")[0]
    wrong = made.check(0.7).explanation.split("\n")
    assert data["wrong"].replace("{given}", "0.7") == wrong[0]
    mistaken = made.check(0.4).explanation.split("\n")
    filled = {"given": "0.4", "name": "forgot to divide by √d_k", "numbers": "0.4000"}
    assert data["mistake"].format(**filled) == mistaken[1]
    checkpoint = data["checkpoints"][0]
    slip = {"label": checkpoint["label"], "right": checkpoint["right"], "what": "used 4 for √4"}
    assert data["slip"].format(**slip) == made.check(0.1).explanation.split("\n")[-1]
    assert data["noSlip"] == wrong[-1]


def test_a_long_sentence_is_not_asked_about() -> None:
    layers, trace = traced(" ".join(["word"] * (MAX_WORDS + 1)))
    data = tryit_of(layers, trace)
    assert not data["available"] and f"up to {MAX_WORDS} word pieces" in data["reason"]


def test_a_question_too_big_for_the_page_is_left_to_the_terminal() -> None:
    layers, trace = traced("The cat sat", d_model=64, heads=1)  # x and W_Q's 64 columns
    data = tryit_of(layers, trace)
    count = numbers_in(asked(trace)[0][2])
    assert count > 64 * 64 > MAX_NUMBERS
    assert data["leftOut"] == [
        {"step": "qkv", "head": 0, "count": f"{count:,}", "kind": "projection"}
    ]
    assert [q["step"] for q in data["questions"]] == ["scores", "scaled", "weights", "z", "output"]
    assert all(numbers_in(made) <= MAX_NUMBERS for _, _, made in asked(trace)[1:])


def test_the_mode_script_holds_no_english_and_uses_every_text() -> None:
    script = resources.files("attnviz.render.page").joinpath("tryit.js").read_text("utf-8")
    assert english_in(script) == []
    assert set(re.findall(r"TRYTEXT\.(\w+)", script)) == set(TRYIT_TEXT)


# -- in a real browser ---------------------------------------------------------------------------


#: Question ``arguments[0]``'s field emptied, and returned for typing into.
FIELD = """
const field = document.querySelector(`.tryit-input[data-question="${arguments[0]}"]`);
field.value = "";
return field;
"""
#: Question ``arguments[0]``'s verdict as shown: right, the mistakes' keys, the explanation.
SAID = """
const said = document.querySelector(`.verdict[data-question="${arguments[0]}"]`);
return {right: said.dataset.right, mistakes: said.dataset.mistakes,
        explanation: said.dataset.explanation};
"""
#: Each of the answers ``arguments[1]`` given to question ``arguments[0]`` in turn, as a person
#: gives it (the field's text, then Enter: the keydown the page listens to), and the verdict
#: shown for each; in one call, since the page draws itself again after every answer.
JUDGED = """
const [number, answers] = arguments;
const shown = [];
for (const text of answers) {
  const field = document.querySelector(`.tryit-input[data-question="${number}"]`);
  field.value = text;
  field.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", bubbles: true}));
  const said = document.querySelector(`.verdict[data-question="${number}"]`);
  shown.push({right: said.dataset.right, mistakes: said.dataset.mistakes,
              explanation: said.dataset.explanation});
}
return shown;
"""


def answer(driver: Any, number: int, text: str) -> dict[str, str]:
    """Type ``text`` into question ``number``'s field and press Enter; its verdict as shown."""
    from selenium.webdriver.common.keys import Keys

    driver.execute_script(FIELD, number).send_keys(text, Keys.ENTER)
    said: dict[str, str] = driver.execute_script(SAID, number)
    return said


def tried_values(made: Question, rng: np.random.Generator) -> list[float]:
    """Right answers (at the edge of the tolerance too), each mistake's and slip's number, and a
    random wrong number."""
    values = [made.answer, made.answer + 0.9 * made.tolerance, made.answer - 0.9 * made.tolerance]
    values += [m.value for m in made.mistakes if np.isfinite(m.value)]
    values += [float(s.value) for s in made.slips[:4]]
    values.append(made.answer + float(rng.normal(scale=3.0)))
    return values


@pytest.mark.browser
@pytest.mark.parametrize(
    "options",
    [
        {"seed": 0, "causal": True},
        {"seed": 5, "heads": 2, "d_model": 6},
        {"seed": 7, "heads": 4, "kv_heads": 2, "d_model": 8, "causal": True},
    ],
)
def test_the_page_judges_as_question_check_does(
    browser: Any, tmp_path: Path, options: dict[str, Any]
) -> None:
    from selenium.webdriver.common.by import By

    layers, trace = traced("The cat sat on the mat because it was tired", **options)
    path = tmp_path / "page.html"
    path.write_text(page_html(analysed(layers), trace, select(trace, ViewOptions())), "utf-8")
    open_page(browser, path)
    browser.find_element(By.ID, "tryit-mode").click()
    rng = np.random.default_rng(options["seed"])
    shown_head = 0
    for number, (_, head, made) in enumerate(asked(trace)):
        if head is not None and head != shown_head:
            choose(browser, "head", f"Head {head + 1}")
            shown_head = head
        values = tried_values(made, rng)
        # The first answer typed key by key; the rest given as the field's text and Enter.
        typed = answer(browser, number, repr(float(values[0])))
        given = browser.execute_script(JUDGED, number, [repr(float(v)) for v in values[1:]])
        for value, shown in zip(values, [typed, *given], strict=True):
            verdict = made.check(float(value))
            assert shown["right"] == str(verdict.right).lower(), (made.text, value)
            assert shown["mistakes"] == " ".join(verdict.mistakes), (made.text, value)
            assert shown["explanation"] == verdict.explanation, (made.text, value)


@pytest.mark.browser
def test_a_question_hides_its_worked_example_until_answered(browser: Any, random_page: Any) -> None:
    from selenium.webdriver.common.by import By

    path, _ = random_page
    open_page(browser, path)
    browser.find_element(By.ID, "tryit-mode").click()
    article = browser.find_element(By.ID, f"step-{_number('scaled')}")
    worked = article.find_elements(By.CSS_SELECTOR, ":scope > p.worked")
    assert worked and not any(node.is_displayed() for node in worked)
    field = article.find_element(By.CSS_SELECTOR, ".tryit-input")
    field.send_keys("abc\n")
    assert field.get_attribute("aria-invalid") == "true"
    assert article.find_element(By.CSS_SELECTOR, ".verdict").text == TRYIT_TEXT["notANumber"]
    field.clear()
    field.send_keys("0\n")
    # Answered, the page is drawn again with the numbers it hid.
    article = browser.find_element(By.ID, f"step-{_number('scaled')}")
    worked = article.find_elements(By.CSS_SELECTOR, ":scope > p.worked")
    assert worked and all(node.is_displayed() for node in worked)
    # Try it and What if take turns: one mode at a time.
    browser.find_element(By.ID, "whatif-mode").click()
    assert browser.find_element(By.ID, "tryit-mode").get_attribute("aria-pressed") == "false"
    assert browser.find_elements(By.CSS_SELECTOR, ".tryit") == []


#: A number as the page prints it (tryit.js: NUMBER), with either minus sign.
NUMBER = re.compile(r"[-\u2212]?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


#: The page's visible text; with question ``arguments[0]``'s own sentence and givens left out.
VISIBLE = """
const own = [...document.querySelectorAll(`[data-asks="${arguments[0]}"]`)];
own.forEach((node) => (node.hidden = true));
const text = document.body.innerText;
own.forEach((node) => (node.hidden = false));
return text;
"""


def shown_numbers(driver: Any, asked: int = -1) -> list[str]:
    """Every number of the page's visible text, its minus written "-"; but those of question
    ``asked``'s sentence and givens (the numbers it is worked from)."""
    text: str = driver.execute_script(VISIBLE, asked)
    return [number.replace("\u2212", "-") for number in NUMBER.findall(text)]


def answer_texts(made: Question) -> set[str]:
    """The question's answer as the page may print it: at each of its decimals."""
    return {format_number(made.answer, decimals) for decimals in HIDDEN_DECIMALS}


@pytest.mark.browser
@pytest.mark.parametrize(
    "options",
    [
        {"seed": 0, "causal": True},
        {"seed": 3, "heads": 2, "d_model": 6},
        {"seed": 7, "heads": 4, "kv_heads": 2, "d_model": 8, "causal": True},
    ],
)
def test_an_asked_number_is_shown_nowhere_until_answered(
    browser: Any, tmp_path: Path, options: dict[str, Any]
) -> None:
    """In the picture's labels, the row table, the step tables, the worked examples and the
    other questions: a number asked is not on the page until answered, and every number comes
    back once it is, and when the mode is left the page is as it was."""
    from selenium.webdriver.common.by import By

    layers, trace = traced("The cat sat on the mat because it was tired", **options)
    path = tmp_path / "page.html"
    path.write_text(page_html(analysed(layers), trace, select(trace, ViewOptions())), "utf-8")
    open_page(browser, path)
    built = asked(trace)
    heads = sorted({head for _, head, _ in built if head is not None})
    plain = {}
    for head in heads:
        choose(browser, "head", f"Head {head + 1}")
        plain[head] = shown_numbers(browser)
    pictured = browser.execute_script("return document.body.innerText")
    browser.find_element(By.ID, "tryit-mode").click()
    hidden_somewhere = 0
    for head in heads:
        choose(browser, "head", f"Head {head + 1}")
        # The head's questions, and the output's (of every head) with the first head's.
        mine = [
            (n, m)
            for n, (_, h, m) in enumerate(built)
            if h == head or (h is None and head == heads[0])
        ]
        for index, (number, made) in enumerate(mine):
            shown = set(shown_numbers(browser, number))
            assert not answer_texts(made) & shown, (made.text, answer_texts(made) & shown)
            hidden_somewhere += bool(answer_texts(made) & set(plain[head]))
            answer(browser, number, repr(made.answer))
            # Back again where the plain page shows it (bar a later question's number).
            still = set().union(*(answer_texts(later) for _, later in mine[index + 1 :]))
            if answer_texts(made) & set(plain[head]) - still:
                assert answer_texts(made) & set(shown_numbers(browser)), made.text
        # All answered: every number of the plain page is back.
        assert set(plain[head]) <= set(shown_numbers(browser))
        # Every bar of the chosen row is drawn again once its weight is answered.
        bars = browser.find_elements(By.CSS_SELECTOR, "#keys .bar")
        assert bars and any(bar.is_displayed() for bar in bars)
    assert hidden_somewhere >= len(heads)  # the plain page does show asked numbers
    browser.find_element(By.ID, "tryit-mode").click()
    assert browser.execute_script("return document.body.innerText") == pictured


@pytest.mark.browser
def test_the_bars_of_an_asked_weight_are_hidden(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    layers, trace = traced("The cat sat on the mat because it was tired", seed=0, causal=True)
    path = tmp_path / "page.html"
    path.write_text(page_html(analysed(layers), trace, select(trace, ViewOptions())), "utf-8")
    open_page(browser, path)
    number, row = next(
        (n, made.where[3]) for n, (step, h, made) in enumerate(asked(trace)) if step == "weights"
    )
    browser.find_elements(By.CSS_SELECTOR, "#queries button")[row].click()
    bars = browser.find_elements(By.CSS_SELECTOR, "#keys .bar")
    lines = "return document.querySelectorAll('#lines line').length"
    assert any(bar.is_displayed() for bar in bars) and browser.execute_script(lines) > 0
    browser.find_element(By.ID, "tryit-mode").click()
    assert not any(bar.is_displayed() for bar in bars) and browser.execute_script(lines) == 0
    # Nor its other weights, in the picture and the row table: a row's weights sum to 1.
    weights = [node.text for node in browser.find_elements(By.CSS_SELECTOR, "#keys .weight")]
    table = [row.find_elements(By.TAG_NAME, "td")[0].text for row in rows_of(browser)]
    assert {*weights, *table} == {"?", PAGE_TEXT["masked"]}, (weights, table)
    answer(browser, number, "0.5")
    bars = browser.find_elements(By.CSS_SELECTOR, "#keys .bar")
    assert any(bar.is_displayed() for bar in bars) and browser.execute_script(lines) > 0


def rows_of(driver: Any) -> list[Any]:
    """The row table's rows of numbers."""
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, "#row-table tr")[1:]


def _number(key: str) -> str:
    from support import step

    return str(step(key))
