"""The quiz formats, read back: a small GIFT parser and xml.etree turn what was written into
questions and answers again, which must be the Question objects' (text, givens as shown,
answer, tolerance, worked solution), whatever characters their words hold."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ElementTree

import pytest

from attnviz.render.worksheet.moodle import (
    gift_escaped,
    number_text,
    question_lines,
    sheets_gift,
    sheets_xml,
)
from attnviz.render.worksheet.sheet import Sheet
from render.worksheet.made import sheets


def _unescaped_split(text: str, separator: str) -> list[str]:
    """``text`` split at each ``separator`` that is not escaped, each part unescaped."""
    parts, part, index = [], "", 0
    while index < len(text):
        if text[index] == "\\" and index + 1 < len(text):
            following = text[index + 1]
            part += "\n" if following == "n" else following
            index += 2
        elif text.startswith(separator, index):
            parts.append(part)
            part, index = "", index + len(separator)
        else:
            part += text[index]
            index += 1
    return [*parts, part]


def _unescaped_index(text: str, character: str, start: int = 0) -> int:
    index = start
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == character:
            return index
        index += 1
    raise AssertionError(f"no unescaped {character!r} in {text!r}")


def parse_gift(text: str) -> list[dict[str, object]]:
    """GIFT numerical questions: category, title, text, answer, tolerance, general feedback."""
    found: list[dict[str, object]] = []
    category = None
    for block in text.split("\n\n"):
        block = block.strip()
        if not block or block.startswith("//"):
            continue
        if block.startswith("$CATEGORY:"):
            category = block.removeprefix("$CATEGORY:").strip()
            continue
        assert block.startswith("::") and "\n" not in block, block
        end_title = block.index("::", 2)
        while block[end_title - 1] == "\\":  # an escaped colon inside the title
            end_title = block.index("::", end_title + 1)
        title = _unescaped_split(block[2:end_title], "\0")[0]
        opening = _unescaped_index(block, "{", end_title + 2)
        closing = _unescaped_index(block, "}", opening)
        assert block[closing + 1 :].strip() == ""
        question_text = _unescaped_split(block[end_title + 2 : opening].strip(), "\0")[0]
        answer_part = block[opening + 1 : closing]
        assert answer_part.startswith("#")
        numeric, feedback = answer_part[1:].split("####", 1)
        answer, tolerance = numeric.split(":")
        found.append(
            {
                "category": category,
                "title": title,
                "text": question_text,
                "answer": float(answer),
                "tolerance": float(tolerance),
                "feedback": _unescaped_split(feedback, "\0")[0],
            }
        )
    return found


def _expected(made: list[Sheet]) -> list[dict[str, object]]:
    return [
        {
            "category": f"attnviz worksheet/{sheet.label}",
            "title": f"{sheet.label}, question {number}",
            "text": "\n".join([f"Sentence: “{sheet.sentence}”", *question_lines(question)]),
            "answer": question.answer,
            "tolerance": question.tolerance,
            "feedback": "\n".join(question.solution),
        }
        for sheet in made
        for number, question in enumerate(sheet.questions, start=1)
    ]


def test_gift_reads_back_as_the_questions_and_answers() -> None:
    made = sheets(copies=3, count=4)
    assert parse_gift(sheets_gift(made)) == _expected(made)


def test_gift_escapes_each_special_character_so_none_is_read_as_markup() -> None:
    escaped = gift_escaped("a~b=c#d{e}f:g\\h\nnext")
    assert escaped == "a\\~b\\=c\\#d\\{e\\}f\\:g\\\\h\\nnext"
    assert _unescaped_split(escaped, "\0") == ["a~b=c#d{e}f:g\\h\nnext"]
    gift = sheets_gift(sheets(copies=1, count=2))
    # Every { and } left unescaped is an answer's: one pair per question.
    assert len(re.findall(r"(?<!\\)\{", gift)) == len(re.findall(r"(?<!\\)\}", gift)) == 2


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.1234, "0.1234"), (-2.5, "-2.5"), (3.0, "3"), (-0.0, "0"), (1e-7, "0.0000001")],
)
def test_numbers_are_written_as_a_platform_reads_them(value: float, text: str) -> None:
    assert number_text(value) == text


def test_moodle_xml_reads_back_as_the_questions_answers_and_solutions() -> None:
    made = sheets(copies=2, count=3)
    quiz = ElementTree.fromstring(sheets_xml(made))
    assert quiz.tag == "quiz"
    questions = [q for q in quiz if q.get("type") == "numerical"]
    categories = [q.findtext("category/text") for q in quiz if q.get("type") == "category"]
    assert categories == [f"$course$/attnviz worksheet/{sheet.label}" for sheet in made]
    expected = [(sheet, q) for sheet in made for q in sheet.questions]
    assert len(questions) == len(expected)
    for element, (sheet, question) in zip(questions, expected, strict=True):
        answer = element.find("answer")
        assert answer is not None and answer.get("fraction") == "100"
        assert float(answer.findtext("text") or "nan") == question.answer
        assert float(answer.findtext("tolerance") or "nan") == question.tolerance
        shown = element.findtext("questiontext/text") or ""
        plain = html.unescape(re.sub(r"<[^>]+>", "\n", shown))
        assert question.text in plain and sheet.sentence in plain
        for given in question.givens:
            assert given.name in plain and all(label in plain for label in given.labels)
        solution = html.unescape(re.sub(r"</?pre>", "", answer.findtext("feedback/text") or ""))
        assert solution == "\n".join(question.solution)
        assert element.findtext("generalfeedback/text") == answer.findtext("feedback/text")


def test_the_same_set_gives_the_same_bytes() -> None:
    assert sheets_xml(sheets()) == sheets_xml(sheets())
    assert sheets_gift(sheets()) == sheets_gift(sheets())
