"""The scores step, in each head: the raw scores Q·Kᵀ, and one of them worked out as q·k."""

from __future__ import annotations

from attnviz.lesson.blocks import Matrix
from attnviz.lesson.writer import HeadView, LessonWriter
from attnviz.lesson.z import values_subscript


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    assert head is not None
    trace, h = lesson.trace, head.h
    g = values_subscript(lesson, head)  # K's subscript: the key/value head's
    turned = " turned" if trace.rope is not None else ""
    scores = lesson.selection.pairs(trace.scores[head.index])
    formula = f"(Q{h}{turned})·(K{g}{turned})ᵀ" if turned else f"Q{h}·K{g}ᵀ"
    table = Matrix(scores, f"scores{h} = {formula}", lesson.tokens, lesson.keys)
    if lesson.first_head(head):
        lesson.say(
            "score[i, j] = q_i · k_j: how well word i's query (row) matches word j's key "
            "(column)"
            + (", q and k as turned in the step before" if trace.rope is not None else "")
            + ". For example:"
        )
    lesson.worked_line("dot_product", lesson.text.dot_product(head.examples.dot_product))
    lesson.rounding_note()
    lesson.show(table)
