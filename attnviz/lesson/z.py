"""The z step, in each head: Z = weights·V, each word's output a weighted sum of value vectors."""

from __future__ import annotations

from attnviz.labels import subscript
from attnviz.lesson.blocks import Matrix, Span
from attnviz.lesson.writer import HeadView, LessonWriter


def title(lesson: LessonWriter, head: HeadView | None) -> str:
    assert head is not None
    return f"Z{head.h} = weights{head.h}·V{values_subscript(lesson, head)}, the head's output"


def values_subscript(lesson: LessonWriter, head: HeadView) -> str:
    """The subscript of the V a head weighs: its own, or its key/value head's when shared."""
    trace = lesson.trace
    return subscript(trace.kv_head(head.index) + 1) if trace.is_grouped else head.h


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    assert head is not None
    trace, h = lesson.trace, head.h
    g = values_subscript(lesson, head)
    summed = head.examples.weighted_sum
    n_rows = "n_target" if trace.is_cross else "n"
    z = lesson.selection.rows(trace.Z[head.index])
    table = Matrix(z, f"Z{h} = weights{h}·V{g}", lesson.tokens, lesson.dims(trace.d_k))
    if not lesson.first_head(head):
        lesson.worked_line("weighted_sum", lesson.text.weighted_sum(summed))
        lesson.worked_line("weighted_sum_element", lesson.text.weighted_sum_element(summed))
        lesson.show(table)
        return
    # A masked pair's weight is exactly 0: its value vector is in the sum with nothing.
    masks = trace.mask is not None and not bool(trace.mask.all())
    masked = " (a masked one, with weight 0, adds nothing)" if masks else ""
    lesson.say(
        f"Each word's output is the weighted sum of all value vectors{masked}, with its row of "
        f"weights: z_i = Σ_j w_ij·v_j. Z{h} has shape [{n_rows}, d_v] = "
        f"[{lesson.n}, {trace.d_k}]{lesson.shown_rows()}. For example, z of ",
        Span(repr(lesson.all_queries[summed.query]), slot="query!r"),
        f" is the sum below of rows of V{g}, and its first number, worked out, is the first "
        f"number of its row of Z{h}:",
    )
    lesson.worked_line("weighted_sum", lesson.text.weighted_sum(summed))
    lesson.worked_line("weighted_sum_element", lesson.text.weighted_sum_element(summed))
    lesson.rounding_note()
    n_keys = "n_source" if trace.is_cross else "n"
    if lesson.brief:
        lesson.say(
            f"(Z{h}, [{n_rows}, d_v], is the head's output; the attention matrix, [{n_rows}, "
            f"{n_keys}], is weights{h}, not Z.)"
        )
    else:
        lesson.say(
            f"Z{h} is the head's output, [{n_rows}, d_v], a row for each query; the attention "
            f"matrix is weights{h}, [{n_rows}, {n_keys}], a weight for each (query, key) pair. "
            "Some explanations call Z the attention matrix: here the two names stay apart."
        )
    lesson.show(table)
