"""The lesson's building blocks: headings, paragraphs of styled spans, worked examples, tables
of numbers, focus bars and pauses. The modules of attnviz/lesson/ say what the lesson is in these
terms; every surface (the terminal, the slides, the page, the notebook display) draws them, so
every surface says the same lesson.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np


class Span(NamedTuple):
    """A run of text with a style: "" (plain), "bold", "italic", "note" (a caveat to notice),
    "example" (a worked example), "dim".

    A span with a ``slot`` names the lesson's example word: ``text`` is that word as the
    terminal prints it, and a surface where the reader picks the word (the page) puts the
    picked word's name there instead. Slots: "query", "key" (the name as in a formula, q_I),
    "query!r", "key!r" (quoted, 'I'); and "tables", words about the tables, which a surface
    that draws none leaves out.
    """

    text: str
    style: str = ""
    slot: str = ""


class Paragraph(NamedTuple):
    """Text to be wrapped to the page width; an indented one is a worked example."""

    spans: tuple[Span, ...]


class Heading(NamedTuple):
    """A title: "title" (the lesson's first line), "section" (a rule: a head, the focus),
    "step" (Step n · …) or "head" (a head's name above its focus bars)."""

    text: str
    level: str


class Matrix(NamedTuple):
    """A table of numbers: values, a title and labels."""

    values: np.ndarray  # [rows, columns]
    title: str
    row_labels: Sequence[str]
    column_labels: Sequence[str]
    shade: bool = False  # colour each cell by its value in [0, 1] (attention weights)
    row_sums: bool = False  # add a Σ column (softmax rows sum to 1)
    keep_row: int | None = None  # a row that must stay visible when rows are elided
    keep_column: int | None = None  # a column that must stay visible when columns are elided
    masked: np.ndarray | None = None  # [rows, columns] bool: cells shown as −∞ (masked scores)


class Worked(NamedTuple):
    """A worked example, set indented: ``text`` is it written out for the lesson's example word,
    ``example`` names which one (a step's ``examples`` in attnviz/lesson/steps.py; the page
    shows the same example for the word a reader picks)."""

    example: str
    text: str

    def paragraph(self) -> Paragraph:
        """As the terminal sets it: an indented paragraph in the examples' style."""
        return Paragraph((Span("  "), Span(self.text, "example")))


class Tables(NamedTuple):
    """Tables with the same rows, set side by side when the page is wide enough; with
    ``squeeze``, when each alone would lose columns anyway, side by side all the same, each with
    columns elided to fit its share of the page (the lesson's short form: the tables whole are
    one option or export away)."""

    matrices: tuple[Matrix, ...]
    squeeze: bool = False


class Bars(NamedTuple):
    """Weights drawn as horizontal bars, one per labelled word; optionally a second bar beside
    each (a contribution's share of its row, a rollout), with numbers between the two.

    A surface sets, per word: label, the first bar and its text, the ``between`` numbers, the
    second bar and its text; ``headings`` name those three columns when there is a second bar.
    """

    labels: tuple[str, ...]
    weights: tuple[float, ...]
    texts: tuple[str, ...]  # each weight as printed
    second: tuple[float, ...] = ()  # a second bar per word, in [0, 1]; () for none
    second_texts: tuple[str, ...] = ()  # each second value as printed
    between: tuple[str, ...] = ()  # a number printed between the bars (a contribution's size)
    headings: tuple[str, ...] = ()  # (first bar, between, second bar): the columns' names


class Blank(NamedTuple):
    """An empty line."""


class Pause(NamedTuple):
    """Where a step begins: --step waits here before going on to ``coming``, and --steps keeps
    or leaves out everything from here to the next Pause."""

    coming: str
    step: int  # the step's number in attnviz/lesson/steps.py, from 1
    key: str = ""  # the step's key there ("scores")
    head: int | None = None  # the head it is written for (from 0), for a step in each head


class SectionEnd(NamedTuple):
    """The end of a part of the lesson: a renderer may print what it has so far."""


Block = Paragraph | Heading | Worked | Matrix | Tables | Bars | Blank | Pause | SectionEnd
