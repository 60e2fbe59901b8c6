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

#: Characters Markdown reads as markup anywhere in a line: escaped with a backslash. (The
#: brackets escaped, parentheses cannot make a link; an & only before an entity's name.)
_MARKUP = re.compile(r"([\\`*_\[\]<>|~]|&(?=#?\w+;))")
#: What is markup only at the start of a line: a heading, a list, a quote, a rule.
_LINE_START = re.compile(r"^(\s*)([#>+=-]|\d+[.)])")


def escaped(text: str, *, starts_line: bool = True) -> str:
    """``text`` as Markdown that shows it as typed; ``starts_line``: it begins a line, where a
    "1." or a "-" would make a list."""
    text = _MARKUP.sub(r"\\\1", text.replace("\n", " "))
    if not starts_line:
        return text
    return _LINE_START.sub(lambda found: found[1] + _escape_last(found[2]), text)


def _escape_last(mark: str) -> str:
    """ "1." -> "1\\.", "#" -> "\\#": the character that makes the mark, escaped."""
    return mark[:-1] + "\\" + mark[-1]


def sheets_markdown(sheets: Sequence[Sheet]) -> str:
    """Every sheet of the set, one after another, a rule between them."""
    return "\n---\n\n".join(_sheet(sheet) for sheet in sheets)


def keys_markdown(sheets: Sequence[Sheet]) -> str:
    """Every sheet's key, one after another, a rule between them."""
    return "\n---\n\n".join(_key(sheet) for sheet in sheets)


def _header(sheet: Sheet, *, key: bool) -> list[str]:
    lines = [f"# {escaped(sheet.heading(key=key), starts_line=False)}", ""]
    if sheet.subtitle is not None:
        lines += [f"**{escaped(sheet.subtitle, starts_line=False)}**", ""]
    if not key:
        lines += ["Name: ______________________________ Date: ________________", ""]
    lines += [f"Sentence: “{escaped(sheet.sentence, starts_line=False)}”", ""]
    lines += [f"{escaped(line)}  " for line in sheet.about]
    return [*lines, ""]


def _sheet(sheet: Sheet) -> str:
    lines = _header(sheet, key=False)
    lines += [escaped(INSTRUCTIONS), ""]
    for number, question in enumerate(sheet.questions, start=1):
        lines += [f"## {number}. {escaped(question.text, starts_line=False)}", ""]
        for given in question.givens:
            lines += [*_table(given), ""]
        lines += [f"**{escaped(answer_prompt(question), starts_line=False)}** ____________", ""]
    return "\n".join(lines)


def _key(sheet: Sheet) -> str:
    lines = _header(sheet, key=True)
    for number, question in enumerate(sheet.questions, start=1):
        lines += [f"## {number}. {escaped(key_answer(question), starts_line=False)}", ""]
        lines += [escaped(question.text), ""]
        lines += [f"    {line}" for line in question.solution]  # a code block: kept as written
        lines += [""]
    return "\n".join(lines)


def _table(given: Given) -> list[str]:
    """A given as a caption and a two-row pipe table (labels over values)."""
    labels = [escaped(label, starts_line=False) or " " for label in given.labels]
    values = [value_text(given, value) for value in given.values]
    return [
        f"{escaped(given.name)}:",
        "",
        "| " + " | ".join(labels) + " |",
        "|" + "|".join("---:" for _ in labels) + "|",
        "| " + " | ".join(values) + " |",
    ]
