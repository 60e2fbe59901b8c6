"""Step 2, in each head: Q = X·W_Q, K = X·W_K, V = X·W_V, and one number of q worked out."""

from __future__ import annotations

from attnviz.lesson.blocks import Matrix, Span
from attnviz.lesson.writer import HeadView, LessonWriter


def title(lesson: LessonWriter, head: HeadView | None) -> str:
    assert head is not None
    return f"Queries, keys and values of head {head.index + 1}"


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    assert head is not None
    trace, selection, h = lesson.trace, lesson.selection, head.h

    def b(name: str) -> str:
        return lesson.bias(name, h)

    n_keys = len(trace.key_tokens)
    projection = head.examples.projection
    lesson.say(
        f"Head {head.index + 1} projects X with its own matrices W_Q{h}, W_K{h}, W_V{h}, each "
        f"[d_model, d_k] = [{trace.d_model}, {trace.d_k}]: Q{h} = X·W_Q{h}{b('Q')}, "
        + (
            f"[n_target, d_k] = [{lesson.n}, {trace.d_k}]; K{h} = X_source·W_K{h}, "
            f"V{h} = X_source·W_V{h}, [n_source, d_k] = [{n_keys}, {trace.d_k}]. "
            if trace.is_cross
            else f"K{h} = X·W_K{h}{b('K')}, V{h} = X·W_V{h}{b('V')}, each [n, d_k] = "
            f"[{lesson.n}, {trace.d_k}]{lesson.shown_rows()}. "
        )
        + f"(V's width d_v equals d_k = {trace.d_k} here, as in the paper.) "
        + "A query asks what a word is looking for, a key says what it offers, a value is "
        f"what it passes on. Each number of Q{h} is a row of X times a column of W_Q{h}; the "
        "first of q_",
        Span(lesson.all_queries[projection.token], slot="query"),
        ":",
    )
    lesson.worked_line("projection", lesson.text.projection(projection))
    lesson.rounding_note()
    if lesson.options.show_weights:
        lesson.side_by_side(
            [
                Matrix(
                    w[head.index],
                    f"W_{name}{h}",
                    lesson.dims(trace.d_model),
                    lesson.dims(trace.d_k),
                )
                for name, w in (("Q", trace.W_Q), ("K", trace.W_K), ("V", trace.W_V))
            ]
        )
        lesson.blank()
    x_kv = "X_source" if trace.is_cross else "X"
    d_k = lesson.dims(trace.d_k)
    q = selection.rows(trace.Q[head.index])
    k, v = selection.key_rows(trace.K[head.index]), selection.key_rows(trace.V[head.index])
    queries = Matrix(q, f"Q{h} = X·W_Q{h}{b('Q')}", lesson.tokens, d_k)
    keys = Matrix(k, f"K{h} = {x_kv}·W_K{h}{b('K')}", lesson.keys, d_k)
    values = Matrix(v, f"V{h} = {x_kv}·W_V{h}{b('V')}", lesson.keys, d_k)
    if trace.is_cross:  # queries have the target's rows, keys and values the source's
        lesson.show(queries)
        lesson.blank()
        lesson.side_by_side([keys, values])
    else:
        lesson.side_by_side([queries, keys, values])
