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
    if trace.d_rope:
        formula += f" + Q_R{h}·K_Rᵀ"
    table = Matrix(scores, f"scores{h} = {formula}", lesson.tokens, lesson.keys)
    if lesson.first_head(head) and trace.d_rope:
        lesson.say(
            "score[i, j] = q_i · k_j + q_R,i · k_R,j: how well word i's query (row) matches "
            "word j's key (column), the content part and the turned part of step "
            f"{lesson.step_label('latent')} together; one dot product of the concatenations "
            f"[q | q_R] and [k | k_R], d_k + d_rope = {trace.score_width} numbers each, "
            "written q and k below. For example:"
        )
    elif lesson.first_head(head):
        lesson.say(
            "score[i, j] = q_i · k_j: how well word i's query (row) matches word j's key "
            "(column)"
            + (", q and k as turned in the step before" if trace.rope is not None else "")
            + ". For example:"
        )
    lesson.worked_line("dot_product", lesson.text.dot_product(head.examples.dot_product))
    lesson.rounding_note()
    lesson.show(table)
