"""The lesson page's browser tests share one headless Chromium and one page of each kind for the
whole run: starting Chromium and tracing MiniLM are the slow parts of a test that then only
clicks. Each test opens its page anew (``driver.get``), which resets the document, and a test
that resizes the screen puts 1280 × 720 back (test_page_text_size.py's ``screen``)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from attnviz.render.page.page import page_html
from attnviz.trace import AttentionTrace
from render.analysed import analysed
from render.page.test_page import IT_SENTENCE, traced


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium from Debian's packages, driven by its chromedriver: nothing is
    downloaded (a driver path given to Service skips Selenium Manager)."""
    from browser import CHROMEDRIVER, CHROMIUM, new_driver

    for path in (CHROMIUM, CHROMEDRIVER):
        assert Path(path).exists(), f"{path} is missing: run scripts/install-browser"
    with tempfile.TemporaryDirectory() as profile:
        driver = new_driver(profile, "--window-size=1280,720", logs=True)
        try:
            yield driver
        finally:
            driver.quit()


@pytest.fixture(scope="session")
def random_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, AttentionTrace]:
    layers, trace, selection = traced(IT_SENTENCE)
    path = tmp_path_factory.mktemp("pages") / "it.html"
    path.write_text(page_html(analysed(layers), trace, selection), encoding="utf-8")
    return path, trace


@pytest.fixture(scope="session")
def model_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[AttentionTrace, ...]]:
    layers, trace, selection = traced(IT_SENTENCE, model="minilm")
    path = tmp_path_factory.mktemp("pages") / "minilm.html"
    path.write_text(page_html(analysed(layers), trace, selection), encoding="utf-8")
    return path, layers
