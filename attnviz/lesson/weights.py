"""The weights step, in each head: the softmax of each row, the attention weights, one worked
out."""

from __future__ import annotations

import numpy as np

from attnviz import worked
from attnviz.labels import superscript
from attnviz.lesson.blocks import Matrix, Span
from attnviz.lesson.notes import padding_rows_sentence, special_tokens_sentence
from attnviz.lesson.writer import HeadView, LessonWriter


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    assert head is not None
    trace, selection, h = lesson.trace, lesson.selection, head.h
    table = Matrix(
        selection.pairs(trace.weights[head.index], total=True),
        f"weights{h} = softmax(scaled{h})",
        lesson.tokens,
        lesson.keys,
        shade=True,
        row_sums=True,
    )
    top = head.examples.softmax  # the example row's largest weight
    masked = trace.mask is not None and not trace.mask.all()
    direct = lesson.text.softmax_unshifted(top)
    runner_up = _shifted_example(lesson, head)
    if not lesson.first_head(head):
        _worked_top(lesson, top, direct)
        if not lesson.brief and runner_up.key != top.key:
            lesson.worked_line("softmax", lesson.text.shifted_softmax(runner_up)[1])
        lesson.show(table)
        return
    subtracted = (
        "; attnviz first subtracts the row's largest score m_i, which changes no weight "
        "(exp(−m_i) cancels) and keeps exp() from overflowing"
        if lesson.brief and direct is not None
        else ""
    )
    lesson.say(
        "Each row of scaled scores s becomes non-negative weights that sum to 1: "
        "w_ij = exp(s_ij) / Σ_k exp(s_ik)"
        + subtracted
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
        *([_top_lead(lesson, top)] if direct is not None else []),
    )
    if direct is not None:
        lesson.worked_line("softmax_unshifted", direct)
    else:
        lesson.say(_overflow_lead(lesson, top))
        lesson.worked_line("softmax", lesson.text.shifted_softmax(top)[1])
    if lesson.brief or runner_up.key == top.key:
        if direct is not None and not lesson.brief:
            lesson.say(
                "attnviz first subtracts the row's largest score m_i, s_ij − m_i, which changes "
                "no weight (exp(−m_i) cancels) and keeps exp() from overflowing."
            )
    else:
        subtraction, line = lesson.text.shifted_softmax(runner_up)
        lesson.say(
            "attnviz first subtracts the row's largest score m_i, which changes no weight "
            "(exp(−m_i) cancels) and keeps exp() from overflowing. Row ",
            Span(repr(lesson.all_queries[runner_up.query]), slot="query!r"),
            ", column ",
            Span(repr(lesson.all_keys[runner_up.key]), slot="key!r"),
            Span(f", {subtraction}", slot="tables"),
            ":",
        )
        lesson.worked_line("softmax", line)
    lesson.rounding_note()
    special = special_tokens_sentence(lesson, head.index)
    if special:
        lesson.say(special)
    padding = padding_rows_sentence(lesson, head.index)
    if padding:
        lesson.say(padding)
    lesson.show(table)


def _top_lead(lesson: LessonWriter, top: worked.SoftmaxExample) -> Span:
    return Span(
        f"Row {lesson.all_queries[top.query]!r}, column {lesson.all_keys[top.key]!r} (its "
        "largest weight), from the scaled table:",
        slot="tables",
    )


def _worked_top(lesson: LessonWriter, top: worked.SoftmaxExample, direct: str | None) -> None:
    """The row's largest weight worked out: directly, or shifted when exp() would overflow."""
    if direct is not None:
        lesson.worked_line("softmax_unshifted", direct)
    else:
        lesson.worked_line("softmax", lesson.text.shifted_softmax(top)[1])


def power_of_ten(exponent: float) -> str:
    """exp(exponent) as a person reads a large number: "4.5 × 10⁶"."""
    mantissa, power = f"{float(np.exp(exponent)):.1e}".split("e")
    return f"{mantissa} × 10{superscript(int(power))}"


def _overflow_lead(lesson: LessonWriter, top: worked.SoftmaxExample) -> Span:
    """Why the row's largest weight is worked out shifted: how large exp() of its scores is."""
    assert top.scaled is not None
    largest = float(top.maximum)
    size = "more than a float can hold" if largest > 709 else f"about {power_of_ten(largest)}"
    query, key = lesson.all_queries[top.query], lesson.all_keys[top.key]
    return Span(
        f"Written directly, row {query!r} would need exp({lesson.text.exact(largest)}), "
        f"{size}; attnviz subtracts the row's largest score m_i first, s_ij − m_i, which "
        "changes no weight (exp(−m_i) cancels) and keeps exp() from overflowing. Column "
        f"{key!r} (its largest weight, s − m = 0):",
        slot="tables",
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
