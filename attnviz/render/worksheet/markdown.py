"""A worksheet set and its key as plain Markdown: a heading per sheet, the givens as pipe
tables, a line to write on. Text from the sentence is escaped, so a word like *it* or a|b is
printed as typed."""

from __future__ import annotations

import re
from collections.abc import Sequence

from attnviz.exercise.questions import Given
from attnviz.render.worksheet.sheet import (
    INSTRUCTIONS,
    Sheet,
    answer_prompt,
    key_answer,
    value_text,
)

#: Characters Markdown would read as markup: escaped with a backslash.
_MARKUP = re.compile(r"([\\`*_{}\[\]()<>#+!|~&])")


def escaped(text: str) -> str:
    """``text`` as Markdown that shows it as typed (a line starting "1." or "-" stays text)."""
    text = _MARKUP.sub(r"\\\1", text.replace("\n", " "))
    return re.sub(r"^(\d+)\.", r"\1\\.", re.sub(r"^([-=])", r"\\\1", text))


def sheets_markdown(sheets: Sequence[Sheet]) -> str:
    """Every sheet of the set, one after another, a rule between them."""
    return "\n---\n\n".join(_sheet(sheet) for sheet in sheets)


def keys_markdown(sheets: Sequence[Sheet]) -> str:
    """Every sheet's key, one after another, a rule between them."""
    return "\n---\n\n".join(_key(sheet) for sheet in sheets)


def _header(sheet: Sheet, *, key: bool) -> list[str]:
    lines = [f"# {escaped(sheet.heading(key=key))}", ""]
    if not key:
        lines += ["Name: ______________________________ Date: ________________", ""]
    lines += [f"Sentence: “{escaped(sheet.sentence)}”", ""]
    lines += [f"{escaped(line)}  " for line in sheet.about]
    return [*lines, ""]


def _sheet(sheet: Sheet) -> str:
    lines = _header(sheet, key=False)
    lines += [escaped(INSTRUCTIONS), ""]
    for number, question in enumerate(sheet.questions, start=1):
        lines += [f"## {number}. {escaped(question.text)}", ""]
        for given in question.givens:
            lines += [*_table(given), ""]
        lines += [f"**{escaped(answer_prompt(question))}** ____________", ""]
    return "\n".join(lines)


def _key(sheet: Sheet) -> str:
    lines = _header(sheet, key=True)
    for number, question in enumerate(sheet.questions, start=1):
        lines += [f"## {number}. {escaped(key_answer(question))}", ""]
        lines += [escaped(question.text), ""]
        lines += [f"    {line}" for line in question.solution]  # a code block: kept as written
        lines += [""]
    return "\n".join(lines)


def _table(given: Given) -> list[str]:
    """A given as a caption and a two-row pipe table (labels over values)."""
    labels = [escaped(label) or " " for label in given.labels]
    values = [value_text(given, value) for value in given.values]
    return [
        f"{escaped(given.name)}:",
        "",
        "| " + " | ".join(labels) + " |",
        "|" + "|".join("---:" for _ in labels) + "|",
        "| " + " | ".join(values) + " |",
    ]
