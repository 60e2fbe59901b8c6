"""The latent step on the lesson page, in Chromium: after the projections, with the absorption
worked for the lesson's example word in each head, whichever word is picked, and no script
error; with and without the decoupled RoPE key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from attnviz.lesson.steps import step_number
from attnviz.render.page.page import page_html
from render.analysed import analysed
from render.page.test_page import IT_SENTENCE, choose, data_block, open_page, traced


@pytest.fixture(scope="module", params=["none", "rope"])
def latent_page(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> tuple[Path, Any, int]:
    # rope: with DeepSeek's decoupled RoPE key, whose terms the absorbed score adds
    layers, trace, selection = traced(IT_SENTENCE, latent=6, positions=request.param)
    path = tmp_path_factory.mktemp("pages") / "latent.html"
    path.write_text(page_html(analysed(layers), trace, selection), encoding="utf-8")
    return path, data_block(path.read_text(encoding="utf-8")), step_number("latent", trace)


@pytest.mark.browser
def test_the_latent_step_shows_its_worked_absorption_in_each_head(
    browser: Any, latent_page: Any
) -> None:
    from selenium.webdriver.common.by import By

    path, data, number = latent_page
    open_page(browser, path)
    keys = [step["key"] for step in data["steps"]]
    index = keys.index("latent")
    assert keys[index - 1] == "qkv"
    for head in (1, 2):
        choose(browser, "head", f"Head {head}")
        step = browser.find_element(By.ID, f"step-{number}")  # drawn anew for the head
        heading = step.find_element(By.TAG_NAME, "h2").text
        assert heading == f"Step {number} · Latent attention: K and V of head {head} made from " + (
            "one shared latent"
        )
        blocks = data["layers"][0]["steps"][index]["heads"][head - 1]
        worked = [node.text for node in step.find_elements(By.CLASS_NAME, "worked")]
        assert worked == [block[2] for block in blocks if block[0] == "w"]
        assert worked[0].startswith("q̃_it = q_it·W_UK") and "(q_it · k_" in worked[1]
    browser.find_element(By.XPATH, "//ol[@id='queries']//button[text()='animal']").click()
    assert "Latent attention" in browser.find_element(By.ID, f"step-{number}").text
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
