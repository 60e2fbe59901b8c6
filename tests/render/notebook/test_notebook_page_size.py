"""A lesson page in a notebook (Page._repr_html_) is embedded only up to
limits.MAX_NOTEBOOK_PAGE_BYTES; a larger one gives way to an offline note saying how to save it
whole, so that a notebook never holds a 40 MB output."""

from __future__ import annotations

import re
from html import escape

import pytest

import attnviz
from attnviz.api.explanation import Page
from attnviz.limits import MAX_NOTEBOOK_PAGE_BYTES

from support import needs_model

IT = "The animal didn't cross the street because it was too tired"


def no_remote_address(fragment: str) -> None:
    assert not re.search(r"(?i)(https?:|//[a-z0-9.-]+\.[a-z]{2,}|src=)", fragment), fragment


@pytest.mark.slow
def test_a_small_page_is_embedded_whole() -> None:
    page = attnviz.page(attnviz.explain(IT))
    framed = page._repr_html_()
    assert framed.startswith("<iframe") and len(framed.encode()) <= MAX_NOTEBOOK_PAGE_BYTES
    assert "not shown here" not in framed


@pytest.mark.slow
def test_a_page_too_large_for_a_notebook_gives_a_note_to_save_it() -> None:
    page = attnviz.page(attnviz.explain(IT))
    # The same page padded past the bound, as a long model run's page would be.
    padding = "<!--" + "x" * MAX_NOTEBOOK_PAGE_BYTES + "-->"
    large = Page(page.html.replace("</body>", padding + "</body>"))
    note = large._repr_html_()
    assert len(note.encode()) < 2_000  # not the page: a paragraph
    assert "<iframe" not in note and "<script" not in note
    assert 'save("lesson.html")' in note and "attnviz page" in note and "head=N" in note
    assert f"{MAX_NOTEBOOK_PAGE_BYTES / 1e6:.0f} MB" in note
    no_remote_address(note)
    # The page itself stays whole for .save and .html.
    assert large.html.startswith(page.html[:100]) and len(large.html) > MAX_NOTEBOOK_PAGE_BYTES


@pytest.mark.parametrize("extra", [0, 1])
def test_the_bound_is_on_the_bytes_the_cell_holds(extra: int) -> None:
    html = "<!doctype html><title>t</title>"
    room = MAX_NOTEBOOK_PAGE_BYTES - len(escape(html, quote=True))  # the frame holds it escaped
    shown = Page(html + "a" * (room + extra))._repr_html_()
    if extra:
        assert "not shown here" in shown
    else:
        assert shown.startswith("<iframe")


@pytest.mark.slow
@needs_model
def test_a_long_model_page_is_not_embedded_but_its_seeds_page_is() -> None:
    assert attnviz.page(attnviz.explain(IT, model="minilm"))._repr_html_().startswith("<iframe")
    long = " ".join([IT] * 20)
    note = attnviz.page(attnviz.explain(long, model="minilm"))._repr_html_()
    assert "not shown here" in note and len(note.encode()) < 2_000
    no_remote_address(note)
