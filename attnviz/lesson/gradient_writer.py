"""How the gradient step's lesson is written: paragraphs, worked examples, numbered steps and
tables of every number, as lesson blocks (attnviz/lesson/blocks.py)."""

from __future__ import annotations

import numpy as np

from attnviz.labels import occurrence_labels
from attnviz.lesson.blocks import Blank, Block, Heading, Matrix, Paragraph, Span, Worked
from attnviz.train.one_step import GradientStep
from attnviz.train.tasks import Readout

#: Columns in one table when a row is split (8 numbers of 3 decimals fit 80 columns of text).
COLUMNS_PER_TABLE = 8


class GradientWriter:
    """The blocks of one gradient step's lesson as they are written, and the names every part
    of it uses: the sentence's words, "it", the referent, the readout's choices."""

    def __init__(self, step: GradientStep) -> None:
        self.step = step
        self.blocks: list[Block] = []
        self.words = occurrence_labels(list(step.words))
        self.it = self.words[step.focus]
        self.referent = self.words[step.referent]
        self.choices = self.words if step.readout is Readout.POINTER else list(step.choices)
        self.dims = [str(i) for i in range(1, step.d_model + 1)]
        self.head_dims = [str(i) for i in range(1, step.shape.d_k + 1)]
        self.number = 0
        # Whether the softmax's forward and backward roles have been told apart: said once, at
        # the first softmax the gradient goes back through.
        self.softmax_told = False

    # -- writing ----------------------------------------------------------------------------------

    def say(self, *parts: str) -> None:
        self.blocks.append(Paragraph(tuple(Span(part) for part in parts)))

    def note(self, sentence: str) -> None:
        self.blocks.append(Paragraph((Span(sentence, "note"),)))

    def worked(self, line: str) -> None:
        self.blocks.append(Worked("gradient_step", line))

    def show(self, matrix: Matrix) -> None:
        self.blocks.append(matrix)

    def open_step(self, title: str) -> None:
        self.number += 1
        self.blocks += [Blank(), Heading(f"Step {self.number} · {title}", "step")]

    def row(self, values: np.ndarray, title: str, label: str, columns: list[str]) -> None:
        """One row of numbers, every one shown (see ``table``)."""
        self.table(values[np.newaxis], title, [label], columns)

    def table(self, values: np.ndarray, title: str, labels: list[str], columns: list[str]) -> None:
        """Rows of numbers, every one shown: past 11 columns (d_model's 32, the 16 nouns), in
        tables of 8 columns, which fit 80 columns of text whole."""
        n = values.shape[1]
        if n <= len(self.words):
            self.show(Matrix(values, title, labels, columns))
            return
        for start in range(0, n, COLUMNS_PER_TABLE):
            end = min(start + COLUMNS_PER_TABLE, n)
            part = f"{title}, {columns[start]} to {columns[end - 1]} of {n}"
            self.show(Matrix(values[:, start:end], part, labels, columns[start:end]))
