"""Step 3, in each head: the raw scores Q·Kᵀ, and one of them worked out as q·k."""

from __future__ import annotations

from attnviz.lesson.blocks import Matrix
from attnviz.lesson.writer import HeadView, LessonWriter


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    assert head is not None
    h = head.h
    lesson.say(
        "score[i, j] = q_i · k_j: how well the query of word i (row) matches the key of "
        "word j (column). For example:"
    )
    lesson.worked_line("dot_product", lesson.text.dot_product(head.examples.dot_product))
    lesson.rounding_note()
    scores = lesson.selection.pairs(lesson.trace.scores[head.index])
    lesson.show(Matrix(scores, f"scores{h} = Q{h}·K{h}ᵀ", lesson.tokens, lesson.keys))
