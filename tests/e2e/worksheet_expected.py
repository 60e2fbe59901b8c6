"""What the files of docs/worksheet.md's commands must hold, as that page says (read by
readme_expected.py's table of documented commands)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path

#: An A4 page in points, as a PDF's MediaBox gives it.
A4 = (595.276, 841.89)


def pdf_sheets(name: str, sheets: int) -> Callable[[Path], None]:
    """``name`` and its key are A4 PDFs with at least a page per sheet."""

    def check(folder: Path) -> None:
        for path in (folder / name, folder / name.replace(".pdf", "-key.pdf")):
            boxes = re.findall(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", path.read_bytes())
            assert len(boxes) >= sheets, path
            assert all(
                abs(float(w) - A4[0]) < 0.01 and abs(float(h) - A4[1]) < 0.01 for w, h in boxes
            )

    return check


def letter_html(folder: Path) -> None:
    """sheet.html prints on Letter, six questions with a box each; its key has the answers."""
    page = (folder / "sheet.html").read_text(encoding="utf-8")
    assert "@page { size: letter;" in page and "<script" not in page
    assert page.count('<span class="box">') == 6
    assert "Numbers made for pencil and paper" in page
    key = (folder / "sheet-key.html").read_text(encoding="utf-8")
    assert key.count('<div class="question">') == 6 and "Answer key" in key


def homework(folder: Path) -> None:
    """homework.md asks about softmax and z in turn on the sentence given."""
    sheet = (folder / "homework.md").read_text(encoding="utf-8")
    assert "Sentence: “The cat sat because it was tired”" in sheet
    assert len(re.findall(r"^## \d+\. ", sheet, flags=re.MULTILINE)) == 8
    key = (folder / "homework-key.md").read_text(encoding="utf-8")
    assert len(re.findall(r"^## \d+\. -?\d", key, flags=re.MULTILINE)) == 8


def gift_quiz(folder: Path) -> None:
    """quiz.gift holds eight numerical questions, each with its tolerance and solution."""
    text = (folder / "quiz.gift").read_text(encoding="utf-8")
    assert len(re.findall(r"^::Sheet 1, question \d+::", text, flags=re.MULTILINE)) == 8
    assert len(re.findall(r"\{#-?[\d.]+:[\d.]+####", text)) == 8
    assert "$CATEGORY: attnviz worksheet/Sheet 1" in text


def xml_quiz(folder: Path) -> None:
    """quiz.xml holds eight numerical questions, each with its answer, tolerance, feedback."""
    quiz = ElementTree.parse(folder / "quiz.xml").getroot()
    questions = quiz.findall("question[@type='numerical']")
    assert len(questions) == 8
    for question in questions:
        float(question.findtext("answer/text") or "")
        float(question.findtext("answer/tolerance") or "")
        assert (question.findtext("answer/feedback/text") or "").startswith("<pre>")
