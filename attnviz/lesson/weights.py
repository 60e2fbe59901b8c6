"""Step 5, in each head: the softmax of each row, the attention weights, one worked out."""

from __future__ import annotations

from attnviz import worked
from attnviz.lesson.blocks import Matrix, Span
from attnviz.lesson.notes import padding_rows_sentence, special_tokens_sentence
from attnviz.lesson.writer import HeadView, LessonWriter


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    assert head is not None
    trace, selection, h = lesson.trace, lesson.selection, head.h
    softmax = head.examples.softmax
    masked = trace.mask is not None and not trace.mask.all()
    unshifted = lesson.text.softmax_unshifted(softmax)
    lesson.say(
        "Each row of scaled scores s becomes non-negative weights that sum to 1: "
        "w_ij = exp(s_ij) / Σ_k exp(s_ik)"
        + (", and a masked pair's weight is exactly 0. " if masked else ". "),
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
        *(
            [
                Span(
                    f"Row {lesson.all_queries[softmax.query]!r}, column "
                    f"{lesson.all_keys[softmax.key]!r} (its largest weight), from the scaled "
                    "table:",
                    slot="tables",
                )
            ]
            if unshifted is not None
            else []
        ),
    )
    if unshifted is not None:
        lesson.worked_line("softmax_unshifted", unshifted)
    shifted = _shifted_example(lesson, head)
    subtraction, line = lesson.text.shifted_softmax(shifted)
    lesson.say(
        "attnviz first subtracts the row's largest score m_i, which changes no weight "
        "(exp(−m_i) cancels) and keeps exp() from overflowing. Row ",
        Span(repr(lesson.all_queries[shifted.query]), slot="query!r"),
        ", column ",
        Span(repr(lesson.all_keys[shifted.key]), slot="key!r"),
        Span(f", {subtraction}", slot="tables"),
        ":",
    )
    lesson.worked_line("softmax", line)
    lesson.rounding_note()
    if lesson.first_head(head):
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


def _shifted_example(lesson: LessonWriter, head: HeadView) -> worked.SoftmaxExample:
    """The weight worked out as attnviz computes it: the key with the largest weight below the
    row's largest, whose shifted score is not 0 (the row's largest key when every shown key
    has the largest weight)."""
    softmax = head.examples.softmax
    key = worked.runner_up_key(lesson.trace, lesson.selection, head.index, softmax.query)
    if key is None:
        return softmax
    return worked.softmax_example(lesson.trace, head.index, softmax.query, key)
