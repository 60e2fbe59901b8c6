"""The HTML set: one offline file with print CSS, no script, every text escaped."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from attnviz.render.worksheet.html import keys_html, sheets_html
from render.worksheet.made import sheets


class _Reader(HTMLParser):
    """The tags and the text of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.cells: list[str] = []
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._in_cell = tag == "td"

    def handle_endtag(self, tag: str) -> None:
        self._in_cell = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_cell:
            self.cells.append(data)


def _read(page: str) -> _Reader:
    reader = _Reader()
    reader.feed(page)
    return reader


@pytest.mark.parametrize(("paper", "size"), [("a4", "A4"), ("letter", "letter")])
def test_the_page_prints_on_the_paper_asked_each_sheet_from_a_new_page(
    paper: str, size: str
) -> None:
    page = sheets_html(sheets(copies=3), paper)
    assert f"@page {{ size: {size};" in page
    assert "break-before: page" in page and "break-inside: avoid" in page
    assert page.count('<section class="sheet">') == 3


def test_no_script_no_link_and_every_text_escaped() -> None:
    made = sheets(copies=2, count=3)
    for page in (sheets_html(made, "a4"), keys_html(made, "a4")):
        reader = _read(page)
        assert not {"script", "link", "img", "iframe", "b", "it", "crossed", "done"} & set(
            reader.tags
        )
        assert not re.search(r"(src|href)=", page)
        text = "".join(reader.text)
        assert made[1].sentence in text
    sheet_reader = _read(sheets_html(made, "a4"))
    shown = [v for s in made for q in s.questions for g in q.givens for v in g.values]
    assert [float(cell) for cell in sheet_reader.cells] == shown
    text = "".join(sheet_reader.text)
    assert all(q.text in text for s in made for q in s.questions)
    assert made[0].questions[0].solution[0] not in text  # the sheet holds no answers


def test_the_key_holds_every_answer_and_solution() -> None:
    made = sheets(copies=2, count=2)
    text = "".join(_read(keys_html(made, "letter")).text)
    for sheet in made:
        for question in sheet.questions:
            assert f"{question.answer:.2f} (within" in text
            assert all(line in text for line in question.solution)
