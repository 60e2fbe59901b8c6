"""Pages of long sentences: small, and still the terminal's numbers. Every weight, contribution,
share and rollout the page can print is the terminal's text; every worked example it carries is
the terminal's line; a key or head it leaves out says which command carries it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnviz import worked
from attnviz.analysis.contribution import contributions
from attnviz.core import trace_layers
from attnviz.labels import format_number, occurrence_labels
from attnviz.lesson.examples import ExampleText
from attnviz.options import TraceOptions
from attnviz.render.page.page import page_data, page_html
from attnviz.render.page.page_worked import EVERY_KEY, THINNEST, WORKED_KEYS, WORKED_PAIRS
from attnviz.selection import ViewOptions, select
from attnviz.tokens import printable
from render.analysed import analysed
from render.pages import assembled, shown_table

from support import step

PARAGRAPH = (
    "The old man walked slowly along the river because the morning was cold and the market in "
    "the town would open soon. His daughter had asked him to buy bread, fresh fish and a small "
    "bag of apples for the children, who were waiting at home with their mother. "
)


def sentence(words: int) -> str:
    return " ".join((PARAGRAPH * (words // 40 + 1)).split()[:words])


def example_text(trace: Any) -> ExampleText:
    labels = occurrence_labels([printable(token) for token in trace.tokens])
    return ExampleText(2, labels, labels)


@pytest.mark.slow
def test_a_long_page_prints_every_number_as_the_terminal_and_works_its_keys() -> None:
    layers, _ = trace_layers(sentence(200), TraceOptions(heads=4, d_model=32))
    trace = layers[-1]
    selection = select(trace, ViewOptions())
    data = page_data(analysed(layers), trace, selection)
    every = contributions(trace)
    text = example_text(trace)
    for head in range(trace.n_heads):
        assert shown_table(data, 0, "weights", head) == [
            [format_number(w, 2) for w in row] for row in trace.weights[head]
        ]
        assert shown_table(data, 0, "norms", head) == [
            [format_number(v, 2) for v in row] for row in every.norms[head]
        ]
        assert shown_table(data, 0, "shares", head) == [
            [format_number(v, 2) for v in row] for row in every.shares[head]
        ]
    # 200 rows × 9 keys a head: 4 heads fit in WORKED_PAIRS, each row's keys with a line.
    assert WORKED_PAIRS >= 4 * 200 * (WORKED_KEYS + 1) and data["workedHeads"] == 4
    for head in range(trace.n_heads):
        queries = data["layers"][0]["heads"][head]["queries"]
        for row in (0, 57, 199):
            weights = trace.weights[head, row]
            heavy = [int(k) for k in np.argsort(-weights, kind="stable")[:WORKED_KEYS]]
            example = worked.example_key(trace, selection, head, row)
            carried = sorted(int(key) for key in queries[row]["keys"])
            assert carried == sorted({k for k in heavy if weights[k] >= THINNEST} | {example})
            for key in carried:
                dot, scaling, softmax = assembled(data, 0, head, row, key)
                assert dot == text.dot_product(worked.dot_product(trace, head, row, key))
                assert scaling == text.scaling(worked.scaling(trace, head, row, key))
                assert softmax == text.softmax(worked.softmax_example(trace, head, row, key))


@pytest.mark.slow
def test_a_long_page_is_a_fraction_of_its_numbers_as_text() -> None:
    """300 words, 8 heads: 720,000 weights and as many contributions and shares, once 7 bytes
    each as JSON strings ("0.25",), now under an eighth of that, worked examples included."""
    layers, _ = trace_layers(sentence(300), TraceOptions(heads=8, d_model=64))
    trace = layers[-1]
    page = page_html(analysed(layers), trace, select(trace, ViewOptions()))
    assert len(page.encode()) < 3 * 8 * 300**2 * 7 / 8


def open_drawn(driver: Any, path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get_log("performance")  # the shared browser logs: forget what earlier pages logged
    driver.get(path.as_uri())
    WebDriverWait(driver, 20, poll_frequency=0.02).until(
        lambda d: d.execute_script("return document.body.dataset.ready") == "true"
    )


def texts(driver: Any, selector: str) -> list[str]:
    """The textContent of every node ``selector`` matches, in one call to the browser: a node
    at a time, a page of 240 words takes hundreds of round trips."""
    script = "return [...document.querySelectorAll(arguments[0])].map((n) => n.textContent)"
    found: list[str] = driver.execute_script(script, selector)
    return found


@pytest.mark.browser
def test_a_long_page_in_the_browser_shows_the_terminals_numbers(
    browser: Any, tmp_path: Path
) -> None:
    layers, _ = trace_layers(sentence(240), TraceOptions(heads=4, d_model=32))
    trace = layers[-1]
    selection = select(trace, ViewOptions())
    path = tmp_path / "long.html"
    path.write_text(page_html(analysed(layers), trace, selection), encoding="utf-8")
    open_drawn(browser, path)
    row = 150
    browser.find_elements("css selector", "#queries button")[row].click()
    assert texts(browser, "#keys .weight") == [format_number(w, 2) for w in trace.weights[0, row]]
    text = example_text(trace)
    weights = trace.weights[0, row]
    lightest = int(np.argmin(weights))
    heaviest = int(np.argmax(weights))
    assert trace.n_tokens > EVERY_KEY and weights[lightest] < THINNEST
    for key in (heaviest, lightest):
        browser.find_elements("css selector", "#keys button")[key].click()
        step_3 = texts(browser, f"#step-{step('scores')} .worked")
        if key == heaviest:
            assert step_3 == [text.dot_product(worked.dot_product(trace, 0, row, key))]
            assert texts(browser, f"#step-{step('weights')} .worked") == [
                text.softmax(worked.softmax_example(trace, 0, row, key))
            ]
        else:  # no line, so not worked out here: the page says where its numbers are
            assert step_3 == []
            (note,) = texts(browser, f"#step-{step('scores')} .note")
            worked_steps = f"Steps {step('scores')} to {step('weights')} are worked out"
            assert note.startswith(f"{worked_steps} on this page for the keys")
            assert "attnviz explain --export" in note
    # What each word adds, beside its weight, as the terminal prints it.
    cells = browser.execute_script(
        "return [...document.querySelectorAll('#row-table tr')].slice(1)"
        ".map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent))"
    )
    norms = contributions(trace).norms[0, row]
    assert [cell[1] for cell in cells] == [format_number(v, 2) for v in norms]
