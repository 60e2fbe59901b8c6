"""Step 5, in each head: the softmax of each row, the attention weights, one worked out."""

from __future__ import annotations

from attnviz.lesson.blocks import Matrix, Span
from attnviz.lesson.notes import padding_rows_sentence, special_tokens_sentence
from attnviz.lesson.writer import HeadView, LessonWriter


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    assert head is not None
    trace, selection, h = lesson.trace, lesson.selection, head.h
    softmax = head.examples.softmax
    masked = trace.mask is not None and not trace.mask.all()
    lesson.say(
        "Each row becomes non-negative weights that sum to 1: "
        "w_ij = exp(s_ij) / Σ_j' exp(s_ij')"
        + (", and a masked pair's weight is exactly 0. " if masked else ". ")
        + "(attnviz subtracts the row's maximum first, which changes nothing but keeps exp() "
        "from overflowing.) ",
        # About the table below: a surface that draws no table leaves it out.
        Span(
            "The Σ column adds the unrounded weights"
            + (
                f"; every sum runs over all keys as computed, {lesson.hidden_names()} included, "
                "though the tables leave them out"
                if selection.hidden
                else ""
            )
            + ". ",
            slot="tables",
        ),
        "Row ",
        Span(repr(lesson.all_queries[softmax.query]), slot="query!r"),
        ", column ",
        Span(repr(lesson.all_keys[softmax.key]), slot="key!r"),
        ":",
    )
    lesson.worked_line("softmax", lesson.text.softmax(softmax))
    lesson.rounding_note()
    if head.index == selection.heads[0]:
        special = special_tokens_sentence(lesson, head.index)
        if special:
            lesson.say(special)
        padding = padding_rows_sentence(lesson, head.index)
        if padding:
            lesson.say(padding)
    lesson.show(
        Matrix(
            selection.pairs(trace.weights[head.index], total=True),
            f"weights{h} = softmax(scaled{h})",
            lesson.tokens,
            lesson.keys,
            shade=True,
            row_sums=True,
        )
    )
