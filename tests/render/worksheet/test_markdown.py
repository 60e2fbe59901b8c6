"""The Markdown set, read by a Markdown parser: every text shows as typed, the givens are
tables of the values as shown, the key holds every answer and line of solution."""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

from attnviz.render.worksheet.markdown import escaped, keys_markdown, sheets_markdown
from render.worksheet.made import HOSTILE, sheets


def _rendered(text: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(text)


def _plain(rendered: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", rendered))


def test_text_with_markup_characters_shows_as_typed() -> None:
    for word in (*HOSTILE, "1. not a list", "- nor this", "# nor a heading"):
        rendered = _rendered(escaped(word)).strip()
        assert rendered.startswith("<p>"), rendered
        assert html.unescape(re.sub(r"<[^>]+>", "", rendered)) == word


def test_the_sheets_have_their_tables_boxes_and_no_answers() -> None:
    made = sheets(copies=2, count=3)
    rendered = _rendered(sheets_markdown(made))
    assert rendered.count("<table>") == sum(len(q.givens) for s in made for q in s.questions)
    assert "<em>" not in rendered  # *animal* and *it* stayed words
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", rendered)
    shown = [v for s in made for q in s.questions for g in q.givens for v in g.values]
    assert [float(cell) for cell in cells] == shown
    plain = _plain(rendered)
    assert plain.count("Name:") == 2 and "Sheet 2 of 2" in plain
    assert made[0].sentence in plain
    for question in made[0].questions:
        assert question.text in plain
        assert question.solution[0] not in plain


def test_the_key_has_every_answer_and_solution_line() -> None:
    made = sheets(copies=2, count=3)
    plain = _plain(_rendered(keys_markdown(made)))
    for sheet in made:
        for number, question in enumerate(sheet.questions, start=1):
            assert f"{number}. {question.answer:.2f} (within" in plain
            for line in question.solution:
                assert line in plain
    assert "Name:" not in plain
