"""A generation's page (render/page/generation_page.py): self-contained (nothing loaded, its
script and style allowed by hash), every sentence from Python, the prompt set as text, and the
same page from the command line, the Python function and the notebook; in Chromium the slider
moves through the steps."""

from __future__ import annotations

import html
import json
import re
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import attnviz
from attnviz.api.explanation import Page
from attnviz.cli import app
from attnviz.render.page.generation_page import _runs, generation_page_html
from attnviz.render.page.page import content_hash
from render.page.test_page_script import english_in

from support import CliRunner

PROMPT = "j k l a b c d e a b"
runner = CliRunner()


def data_of(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="attnviz-data">(.*?)</script>', page)
    assert found is not None
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def test_the_page_loads_nothing_and_runs_only_its_own_script_and_style() -> None:
    page = attnviz.generate(PROMPT, tokens=3).to_html()
    assert "http://" not in page and "https://" not in page and " src=" not in page
    script = resources.files("attnviz.render.page").joinpath("generation.js").read_text("utf-8")
    style = resources.files("attnviz.render.page").joinpath("generation.css").read_text("utf-8")
    assert f"script-src '{content_hash(script)}'" in page and "default-src 'none'" in page
    assert f"style-src '{content_hash(style)}'" in page
    assert english_in(script) == []  # every sentence comes in the data


def test_the_data_has_every_step_with_its_cache_and_the_slider_ends_on_the_last() -> None:
    result = attnviz.generate(PROMPT, tokens=3)
    page = result.to_html()
    data = data_of(page)
    assert [step["label"] for step in data["steps"]] == [
        "Step 1 of 4: Prefill",
        "Step 2 of 4: Token 1: ' c'",
        "Step 3 of 4: Token 2: ' d'",
        "Step 4 of 4: Token 3: ' e'",
    ]
    assert 'min="0" max="3" value="3"' in page
    for step, token in zip(data["steps"][1:], result.tokens, strict=True):
        layers, heads, t, d_k = (
            token.cache.layers,
            token.cache.key_value_heads,
            token.cache.tokens,
            token.cache.d_k,
        )
        assert f"[{layers}, {heads}, {t}, {d_k}]" in step["cache"]
        n = len(result.prompt_ids) + token.number
        assert step["count"] == n and step["new"] == n - 1 and step["query"] == n - 2
        assert step["held"] == [[0, n - 1]]  # every token before the new one: no window
        shaded = dict(step["shaded"])
        assert sorted(shaded) == list(range(n - 1))
        weights = [float(data["shades"][shaded[k]][2]) for k in sorted(shaded)]
        assert sum(weights) == pytest.approx(1.0, abs=0.01)  # a softmax row, at 3 decimals
    assert data["steps"][-1]["fill"] == 1.0 and 0 < data["steps"][0]["fill"] < 1
    kinds = {kind for step in data["steps"] for kind, _ in step["blocks"]}
    assert kinds == {"h", "p", "b", "t"}  # headings, paragraphs, bars and the logits' table


def test_every_token_is_sent_once_and_the_cache_as_runs() -> None:
    result = attnviz.generate(PROMPT, tokens=3, window=4, keep_first=1)
    data = data_of(result.to_html())
    assert data["tokens"] == [*PROMPT.split(), *(text.strip() for text in result.texts)]
    assert all("tokens" not in step for step in data["steps"])
    # The window keeps the first token and the 3 newest before the new one.
    assert [step["held"] for step in data["steps"][2:]] == [[[0, 1], [8, 11]], [[0, 1], [9, 12]]]
    assert _runs([0, 1, 2, 7, 8]) == [[0, 3], [7, 9]] and _runs([]) == []


def test_a_prompt_and_tokens_that_look_like_markup_stay_text() -> None:
    """A model's tokens may be any text: the page writes them escaped, and its script sets them
    as text (textContent), so "</script>" can neither end the data nor the page's script."""
    written = attnviz.generate(PROMPT, tokens=1).steps()
    markup = "</script><b>x</b>"
    steps = tuple(replace(step, tokens=(markup, *step.tokens[1:])) for step in written.steps)
    page = generation_page_html(replace(written, prompt=markup, steps=steps))
    assert markup not in page and html.escape(markup) in page
    assert data_of(page)["tokens"][0] == markup


def test_the_command_writes_the_page_the_function_returns(tmp_path: Path) -> None:
    target = tmp_path / "writing.html"
    result = runner.invoke(app, ["generate", PROMPT, "-n", "2", "--page", str(target)])
    assert result.exit_code == 0 and str(target) in result.stderr
    assert target.read_text(encoding="utf-8") == attnviz.generate(PROMPT, tokens=2).to_html()


@pytest.mark.parametrize("name", ["writing.png", "folder/"])
def test_a_page_that_cannot_be_written_is_refused_before_any_work(
    tmp_path: Path, name: str
) -> None:
    target = tmp_path / name
    result = runner.invoke(app, ["generate", PROMPT, "--page", str(target)])
    assert result.exit_code != 0 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "--page" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_notebook_shows_the_page_in_a_frame_and_a_too_large_one_says_how_to_save_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = attnviz.generate(PROMPT, tokens=2)
    shown = result._repr_html_()
    assert shown.startswith('<iframe sandbox="allow-scripts"')
    assert html.escape(result.to_html(), quote=True) in shown
    monkeypatch.setattr("attnviz.api.explanation.MAX_NOTEBOOK_PAGE_BYTES", 1000)
    note = result._repr_html_()
    assert "<iframe" not in note and "attnviz generate … --page writing.html" in note
    assert "tokens=N" in note and "head" not in note  # not the lesson page's advice
    assert isinstance(result.page(), Page)


@pytest.mark.browser
def test_the_slider_and_buttons_move_through_the_steps(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    result = attnviz.generate(PROMPT, tokens=3, window=5, keep_first=1)
    path = tmp_path / "writing.html"
    path.write_text(result.to_html(), encoding="utf-8")
    browser.get_log("browser")  # forget what earlier pages logged
    browser.get(path.as_uri())

    def shown() -> tuple[str, list[str], str]:
        chips = browser.find_elements(By.CSS_SELECTOR, "#text .token")
        return (
            browser.find_element(By.ID, "step-title").text,
            [chip.get_attribute("class") for chip in chips],
            browser.find_element(By.ID, "cache-line").text,
        )

    title, chips, cache = shown()
    assert title == f"Step 4 of 4: Token 3: {result.texts[2]!r}" and len(chips) == 13
    assert chips[-1] == "token new" and "token out" in chips  # the window dropped some
    browser.find_element(By.ID, "previous").click()
    title, chips, _ = shown()
    assert title.startswith("Step 3 of 4") and len(chips) == 12
    browser.execute_script(
        "const s = document.getElementById('step'); s.value = '0';"
        "s.dispatchEvent(new Event('input'));"
    )
    title, chips, cache = shown()
    assert title == "Step 1 of 4: Prefill" and len(chips) == 10 and "token new" not in chips
    assert "[2, 1, 10, 32]" in cache
    paragraphs = browser.find_elements(By.CSS_SELECTOR, "#blocks p")
    assert paragraphs and paragraphs[0].text.startswith("All 10 prompt tokens")
    assert browser.find_element(By.CSS_SELECTOR, "#ending h2").text == "The text"
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
