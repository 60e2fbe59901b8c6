"""A worksheet set for a learning platform: Moodle's GIFT text format and Moodle XML, each
question a numerical one with its answer and tolerance (so the platform grades it) and the
worked solution as its feedback. Each sheet of a set is a category of its own ("attnviz
worksheet/Sheet 2 of 5"), from which a quiz can draw.

GIFT: ``::Title:: text {#answer:tolerance####general feedback}``, a blank line between
questions; the characters GIFT reads as markup, ~ = # { } : and the backslash, are escaped
with a backslash, and a line break within a text is written ``\\n``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from html import escape

from attnviz.exercise.questions import Question
from attnviz.render.worksheet.sheet import Sheet, given_text, value_text

#: The category the sheets go in, each its own below it.
CATEGORY = "attnviz worksheet"

_GIFT_SPECIAL = "\\~=#{}:"


def gift_escaped(text: str) -> str:
    """``text`` as GIFT shows it: each special character after a backslash, line breaks as
    ``\\n``."""
    for character in _GIFT_SPECIAL:  # the backslash first, so that no escape is escaped again
        text = text.replace(character, "\\" + character)
    return text.replace("\r", "").replace("\n", "\\n")


def number_text(value: float) -> str:
    """A number as a platform reads it: digits, a point and a minus sign, no exponent."""
    text = f"{value:.10f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def question_lines(question: Question) -> list[str]:
    """A question's text and its givens, one a line, as plain text."""
    return [question.text, *(given_text(given) for given in question.givens)]


def title(sheet: Sheet, number: int) -> str:
    """A question's name on the platform: "Sheet 2 of 5, question 3"."""
    return f"{sheet.label}, question {number}"


def sheets_gift(sheets: Sequence[Sheet]) -> str:
    """The whole set as one GIFT file."""
    blocks = [f"// {CATEGORY}: the sentence and how its numbers were made are in each question."]
    for sheet in sheets:
        blocks.append(f"$CATEGORY: {CATEGORY}/{sheet.label}")
        for number, question in enumerate(sheet.questions, start=1):
            text = gift_escaped("\n".join([*_context(sheet), *question_lines(question)]))
            answer = f"#{number_text(question.answer)}:{number_text(question.tolerance)}"
            feedback = gift_escaped("\n".join(question.solution))
            blocks.append(
                f"::{gift_escaped(title(sheet, number))}:: {text} {{{answer}####{feedback}}}"
            )
    return "\n\n".join(blocks) + "\n"


def _context(sheet: Sheet) -> list[str]:
    return [f"Sentence: “{sheet.sentence}”"]


def sheets_xml(sheets: Sequence[Sheet]) -> bytes:
    """The whole set as one Moodle XML file (UTF-8)."""
    quiz = ElementTree.Element("quiz")
    for sheet in sheets:
        category = ElementTree.SubElement(quiz, "question", type="category")
        _text(ElementTree.SubElement(category, "category"), f"$course$/{CATEGORY}/{sheet.label}")
        for number, question in enumerate(sheet.questions, start=1):
            _numerical(quiz, sheet, number, question)
    ElementTree.indent(quiz)
    written: bytes = ElementTree.tostring(quiz, encoding="utf-8", xml_declaration=True)
    return written + b"\n"


def _numerical(quiz: ElementTree.Element, sheet: Sheet, number: int, question: Question) -> None:
    element = ElementTree.SubElement(quiz, "question", type="numerical")
    _text(ElementTree.SubElement(element, "name"), title(sheet, number))
    text = ElementTree.SubElement(element, "questiontext", format="html")
    _text(text, _html(sheet, question))
    feedback = ElementTree.SubElement(element, "generalfeedback", format="html")
    _text(feedback, _solution_html(question))
    ElementTree.SubElement(element, "defaultgrade").text = "1"
    ElementTree.SubElement(element, "penalty").text = "0"
    ElementTree.SubElement(element, "hidden").text = "0"
    answer = ElementTree.SubElement(element, "answer", fraction="100", format="moodle_auto_format")
    _text(answer, number_text(question.answer))
    ElementTree.SubElement(answer, "tolerance").text = number_text(question.tolerance)
    _text(ElementTree.SubElement(answer, "feedback", format="html"), _solution_html(question))


def _text(parent: ElementTree.Element, text: str) -> None:
    ElementTree.SubElement(parent, "text").text = text


def _html(sheet: Sheet, question: Question) -> str:
    """The question as the platform shows it: the sentence, the question, a table per given."""
    parts = [f"<p>{escape(line)}</p>" for line in (*_context(sheet), question.text)]
    for given in question.givens:
        labels = "".join(f"<th>{escape(label)}</th>" for label in given.labels)
        values = "".join(f"<td>{escape(value_text(given, v))}</td>" for v in given.values)
        parts.append(
            f"<p><i>{escape(given.name)}:</i></p>"
            f'<table border="1"><tr>{labels}</tr><tr>{values}</tr></table>'
        )
    return "".join(parts)


def _solution_html(question: Question) -> str:
    return "<pre>" + escape("\n".join(question.solution)) + "</pre>"
