"""The output step, once for all heads: Concat = [Z₁ | … | Z_h], then output = Concat·W_O, one
output number worked out head by head, and what the layer does next."""

from __future__ import annotations

from attnviz import worked
from attnviz.errors import option
from attnviz.labels import subscript
from attnviz.lesson.blocks import Matrix, Span
from attnviz.lesson.notes import after_attention
from attnviz.lesson.writer import HeadView, LessonWriter

#: How many heads' columns the sentence on Concat names before "…".
NAMED_HEADS = 4


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    trace = lesson.trace
    _concatenate(lesson)
    if lesson.options.show_weights:
        lesson.blank()
        lesson.show(
            Matrix(trace.W_O, "W_O", lesson.dims(trace.W_O.shape[0]), lesson.dims(trace.d_model))
        )
    example = worked.output_element(trace, lesson.example)
    if lesson.brief and trace.n_heads == 1:
        # One head: output = Z₁·W_O, no sum over heads to work out.
        _show_output(lesson)
        return
    lesson.blank()
    lesson.say(
        f"W_O's rows for head h, W_O^(h), carry Z_h into the output: Concat·W_O{lesson.bias('O')}"
        f" = Σ_h Z_h·W_O^(h){lesson.bias('O')}. For example, the first number of the output of ",
        Span(repr(lesson.all_queries[example.token]), slot="query!r"),
        ", head by head:",
    )
    lesson.worked_line("output_sum", lesson.text.output_sum(example))
    lesson.rounding_note()
    _show_output(lesson)


def _show_output(lesson: LessonWriter) -> None:
    trace = lesson.trace
    lesson.show(
        Matrix(
            lesson.selection.rows(trace.output),
            f"output = Concat·W_O{lesson.bias('O')}",
            lesson.tokens,
            lesson.dims(trace.d_model),
        )
    )


def _concatenate(lesson: LessonWriter) -> None:
    """Concat, its shape and columns, W_O's shape, and why several heads."""
    trace, n = lesson.trace, lesson.n
    blocks = ", ".join(
        f"{head * trace.d_k + 1}–{(head + 1) * trace.d_k} are Z{subscript(head + 1)}"
        for head in range(min(trace.n_heads, NAMED_HEADS))
    )
    if trace.n_heads > NAMED_HEADS:
        blocks += ", …"
    side_by_side = (
        "The one head's output is Concat = [Z₁] (with h heads, side by side: [Z₁ | … | Z_h]), "
        if trace.n_heads == 1
        else f"The {trace.n_heads} heads' outputs are put side by side: Concat = [Z₁ | … | Z_h], "
    )
    shape = (
        side_by_side + f"shape [n, h·d_k] = [{n}, {trace.n_heads * trace.d_k}] "
        f"(columns {blocks}{lesson.shown_rows().replace(' (', '; ').rstrip(')')}). "
        f"W_O [h·d_k, d_model] = [{trace.n_heads * trace.d_k}, {trace.d_model}] mixes them "
        f"back into d_model = {trace.d_model} columns: output = Concat·W_O{lesson.bias('O')}, "
        "the attention sublayer's output for each word. "
    )
    if lesson.brief and trace.n_heads == 1:
        lesson.say(
            f"With one head, Concat is Z₁ itself (the table of the step before): output = "
            f"Z₁·W_O{lesson.bias('O')}, W_O [{trace.d_k}, {trace.d_model}], the attention "
            f"sublayer's output for each word. {after_attention(lesson)}"
        )
        return
    if lesson.brief:
        several = (
            " Several heads: each has its own W_Q"
            + ("" if trace.is_grouped else ", W_K and W_V")
            + f", so each can look for something different, and together the {trace.n_heads} "
            "cost about as much as one head of full width."
            if trace.n_heads > 1
            else ""
        )
        lesson.say(shape + after_attention(lesson) + several)
    else:
        _concatenate_at_length(lesson, shape)
    if set(lesson.lesson_heads) != set(range(trace.n_heads)):
        lesson.say(Span("(Concat always uses every head, including those not shown above.)", "dim"))
    if lesson.brief:
        # Concat is the Z tables side by side, each row of them already shown in each head.
        lesson.say(
            Span(
                "With one head, Concat is Z₁ itself, the table of the step before."
                if trace.n_heads == 1
                else f"Its table, every Z side by side, is left out here: {option('full', True)} "
                "or an export shows it.",
                "dim",
            )
        )
        return
    lesson.show(
        Matrix(
            lesson.selection.rows(trace.concat),
            "Concat = [Z₁ | … | Z_h]",
            lesson.tokens,
            lesson.dims(trace.concat.shape[1]),
        )
    )


def _concatenate_at_length(lesson: LessonWriter, shape: str) -> None:
    """The output step's explanation in full (--full)."""
    trace = lesson.trace
    lesson.say(
        shape
        + f"{after_attention(lesson)}"
        + (
            " Why several heads: each has its own "
            + (
                "W_Q (and shares W_K and W_V with the heads of its group)"
                if trace.is_grouped
                else "W_Q, W_K and W_V"
            )
            + ", so each can look for "
            'something different ("different representation subspaces", in the paper\'s '
            f"words), and with d_k = d_model / h the {trace.n_heads} heads together cost "
            "about as much as one head of full width."
            if trace.n_heads > 1
            else ""
        )
    )
