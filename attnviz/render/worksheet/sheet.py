"""A worksheet as data, and the words every format of it shares: its heading, the line a
student writes on, a table of givens laid out in columns, the key's answer line.

A sheet holds Questions (attnviz.exercise.questions) and nothing computed here: every number
printed is a Given's value as shown, a Question's answer or a line of its worked solution, so
the sheet, its key, the terminal and the page say the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnviz.exercise.questions import Given, Question, format_number

#: Paper sizes, width × height in inches: ISO A4 (210 × 297 mm) and US Letter.
PAPERS: dict[str, tuple[float, float]] = {"a4": (210 / 25.4, 297 / 25.4), "letter": (8.5, 11.0)}

#: A word in a table's header is cut to this many characters (the tables stay narrow).
LABEL_CHARS = 12

TITLE = "Attention worksheet"
INSTRUCTIONS = (
    "Work each answer out from the numbers given, by hand or with a calculator, and write it "
    "in the box to the decimals asked: an answer within the tolerance shown counts as right."
)


@dataclass(frozen=True)
class Sheet:
    """One sheet of a set and its key: the questions, and what to say of their numbers."""

    number: int  # from 1
    copies: int  # how many sheets the set has
    sentence: str
    about: tuple[str, ...]  # how the numbers were made, one sentence a line
    questions: tuple[Question, ...]
    hand: bool = False  # numbers made for pencil and paper (attnviz.exercise.hand)

    @property
    def label(self) -> str:
        """ "Sheet 2 of 5", or "Sheet 1" alone."""
        return f"Sheet {self.number}" + (f" of {self.copies}" if self.copies > 1 else "")

    def heading(self, *, key: bool) -> str:
        """The title line of the sheet, or of its key."""
        kind = "Answer key" if key else TITLE
        hand = " (numbers for pencil and paper)" if self.hand else ""
        return f"{kind}{hand}: {self.label}"


def value_text(given: Given, value: float) -> str:
    """A given number as the student sees it."""
    return format_number(value, given.decimals)


def answer_prompt(question: Question) -> str:
    """What the line a student writes on says."""
    places = "decimal" if question.decimals == 1 else "decimals"
    return f"Answer ({question.decimals} {places}, {question.tolerance_text()}):"


def key_answer(question: Question) -> str:
    """The key's line for a question: the answer and its tolerance."""
    return f"{format_number(question.answer, question.decimals)} ({question.tolerance_text()})"


def clipped_label(label: str) -> str:
    """A table's header word, cut to LABEL_CHARS characters."""
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def table_lines(given: Given, max_chars: int) -> list[str]:
    """A given's labels over its values in right-aligned columns, as lines of at most
    ``max_chars`` characters (a long vector wraps into several pairs of lines)."""
    labels = [clipped_label(label) for label in given.labels]
    values = [value_text(given, value) for value in given.values]
    widths = [max(len(label), len(value)) for label, value in zip(labels, values, strict=True)]
    lines: list[str] = []
    start = 0
    while start < len(widths):
        end, used = start, 0
        while end < len(widths) and (end == start or used + 2 + widths[end] <= max_chars):
            used += 2 + widths[end]
            end += 1
        lines.append("".join(f"{labels[i]:>{widths[i] + 2}}" for i in range(start, end)))
        lines.append("".join(f"{values[i]:>{widths[i] + 2}}" for i in range(start, end)))
        start = end
    return lines


def given_text(given: Given) -> str:
    """A given on one line, for formats without tables: "q for 'it': 1 = 0.5, 2 = -1.0"."""
    pairs = ", ".join(
        f"{label} = {value_text(given, value)}"
        for label, value in zip(given.labels, given.values, strict=True)
    )
    return f"{given.name}: {pairs}"
