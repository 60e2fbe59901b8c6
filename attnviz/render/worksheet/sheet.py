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

    def title(self, *, key: bool) -> str:
        """The sheet's title, or its key's, without its number."""
        return "Answer key" if key else TITLE

    def heading(self, *, key: bool) -> str:
        """The title line of the sheet, or of its key, with its number."""
        return f"{self.title(key=key)}: {self.label}"

    @property
    def subtitle(self) -> str | None:
        """What kind of numbers the sheet has, when they were made for paper."""
        return "Numbers made for pencil and paper" if self.hand else None


def shown_decimals(given: Given) -> int:
    """The fewest decimals that write every value of ``given`` as it is shown (at most its
    ``decimals``): a hand sheet's X row is 1, 0, -1 and its W_Q column 0.5, 1.0, not 1.00."""
    for decimals in range(given.decimals):
        if all(
            float(format_number(value, decimals)) == float(format_number(value, given.decimals))
            for value in given.values
        ):
            return decimals
    return given.decimals


def value_text(given: Given, value: float) -> str:
    """A given number as the student sees it: every value of a given to the same decimals,
    no more than it needs (the same number as the Given holds)."""
    return format_number(value, shown_decimals(given))


def answer_prompt(question: Question) -> str:
    """What the line a student writes on says: the decimals and the tolerance, unless the
    question's own sentence says them."""
    tolerance = question.tolerance_text()
    if tolerance in question.text or "exactly" in question.text:
        return "Answer:"
    places = "decimal" if question.decimals == 1 else "decimals"
    return f"Answer ({question.decimals} {places}, {tolerance}):"


def key_answer(question: Question) -> str:
    """The key's line for a question: the answer and its tolerance."""
    return f"{format_number(question.answer, question.decimals)} ({question.tolerance_text()})"


def clipped_label(label: str) -> str:
    """A table's header word, cut to LABEL_CHARS characters."""
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def table_lines(given: Given, max_chars: int) -> list[str]:
    """A given's labels over its values in right-aligned columns, as lines of at most
    ``max_chars`` characters: a long vector wraps into several pairs of lines, its columns
    shared out evenly between them (never a lone last column)."""
    labels = [clipped_label(label) for label in given.labels]
    values = [value_text(given, value) for value in given.values]
    widths = [2 + max(len(label), len(value)) for label, value in zip(labels, values, strict=True)]
    chunks = _chunks(widths, max_chars)
    lines: list[str] = []
    for start, end in zip(chunks, chunks[1:], strict=False):
        lines.append("".join(f"{labels[i]:>{widths[i]}}" for i in range(start, end)))
        lines.append("".join(f"{values[i]:>{widths[i]}}" for i in range(start, end)))
    return lines


def _chunks(widths: list[int], max_chars: int) -> list[int]:
    """Where each line of columns starts, and the end: as few lines as the greedy fill needs,
    the columns then shared out evenly when that still fits."""
    greedy = [0]
    used = 0
    for index, width in enumerate(widths):
        if index > greedy[-1] and used + width > max_chars:
            greedy.append(index)
            used = 0
        used += width
    lines = len(greedy)
    per_line = -(-len(widths) // lines)  # ceil
    even = list(range(0, len(widths), per_line))
    fits = all(sum(widths[start : start + per_line]) <= max_chars for start in even)
    return [*(even if fits and len(even) == lines else greedy), len(widths)]


def given_text(given: Given) -> str:
    """A given on one line, for formats without tables: "q for 'it': 1 = 0.5, 2 = -1.0"."""
    pairs = ", ".join(
        f"{label} = {value_text(given, value)}"
        for label, value in zip(given.labels, given.values, strict=True)
    )
    return f"{given.name}: {pairs}"
