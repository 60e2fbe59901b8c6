"""The qkv step, in each head: Q = X·W_Q, K = X·W_K, V = X·W_V, and one number of q worked out."""

from __future__ import annotations

from attnviz.labels import subscript
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

    projection = head.examples.projection
    kv = trace.kv_head(head.index)
    g = subscript(kv + 1) if trace.is_grouped else h  # K's and V's subscript: the kv head's
    x_kv = "X_source" if trace.is_cross else "X"
    d_k = lesson.dims(trace.d_k)
    q = selection.rows(trace.Q[head.index])
    k, v = selection.key_rows(trace.K[kv]), selection.key_rows(trace.V[kv])
    queries = Matrix(q, f"Q{h} = X·W_Q{h}{b('Q')}", lesson.tokens, d_k)
    keys = Matrix(k, f"K{g} = {x_kv}·W_K{g}{lesson.bias('K', g)}", lesson.keys, d_k)
    values = Matrix(v, f"V{g} = {x_kv}·W_V{g}{lesson.bias('V', g)}", lesson.keys, d_k)
    if lesson.first_head(head):
        _explain(lesson, head)
    lesson.worked_line("projection", lesson.text.projection(projection))
    lesson.rounding_note()
    if lesson.options.show_weights:
        lesson.side_by_side(
            [
                Matrix(
                    w[head.index if name == "Q" else kv],
                    f"W_{name}{h if name == 'Q' else g}",
                    lesson.dims(trace.d_model),
                    lesson.dims(trace.d_k),
                )
                for name, w in (("Q", trace.W_Q), ("K", trace.W_K), ("V", trace.W_V))
            ]
        )
        lesson.blank()
    if trace.is_cross:  # queries have the target's rows, keys and values the source's
        lesson.show(queries)
        lesson.blank()
        lesson.side_by_side([keys, values])
    else:
        lesson.side_by_side([queries, keys, values])


def _explain(lesson: LessonWriter, head: HeadView) -> None:
    """What Q, K and V are, this head's shapes, and the worked example's lead-in."""
    trace, h = lesson.trace, head.h

    def b(name: str) -> str:
        return lesson.bias(name, h)

    n_keys = len(trace.key_tokens)
    projection = head.examples.projection
    if trace.is_grouped:
        lesson.say(
            grouped_sentence(lesson, head),
            " The first number of q_",
            Span(lesson.all_queries[projection.token], slot="query"),
            ":",
        )
    elif lesson.brief and not trace.is_cross:
        lesson.say(
            f"Head {head.index + 1} projects X with its own W_Q{h}, W_K{h}, W_V{h} "
            f"[{trace.d_model}, {trace.d_k}]: Q{h} = X·W_Q{h}{b('Q')}, K{h} = X·W_K{h}{b('K')}, "
            f"V{h} = X·W_V{h}{b('V')}, each [n, d_k] = [{lesson.n}, {trace.d_k}]"
            f"{lesson.shown_rows()}. A query asks what a word looks for, a key what it offers, "
            "a value what it passes on. The first number of q_",
            Span(lesson.all_queries[projection.token], slot="query"),
            f", a row of X times a column of W_Q{h}:",
        )
    else:
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


def grouped_sentence(lesson: LessonWriter, head: HeadView) -> str:
    """Grouped-query attention: which query heads share this head's keys and values, the
    shapes, and (said at the first head shown) what the sharing saves in a K/V cache."""
    trace, h = lesson.trace, head.h
    n, d_k, n_heads, n_kv = lesson.n, trace.d_k, trace.n_heads, trace.n_kv_heads
    kv = trace.kv_head(head.index)
    g = subscript(kv + 1)
    sharing = [str(i + 1) for i in trace.sharing(head.index)]
    heads = f"heads {', '.join(sharing[:-1])} and {sharing[-1]}"
    x_kv = "X_source" if trace.is_cross else "X"
    kind = "multi-query attention, one" if n_kv == 1 else f"grouped-query attention, {n_kv}"
    said = (
        f"Head {head.index + 1} projects X with its own W_Q{h}, [d_model, d_k] = "
        f"[{trace.d_model}, {d_k}]: Q{h} = X·W_Q{h}{lesson.bias('Q', h)}, [{n}, {d_k}]. Its keys "
        f"and values are not its own: this layer has {kind} key/value head"
        f"{'s' if n_kv > 1 else ''} for {n_heads} query heads, W_K and W_V [G, d_model, d_k] = "
        f"[{n_kv}, {trace.d_model}, {d_k}], and {heads} {'both' if len(sharing) == 2 else 'all'} "
        f"read key/value head {kv + 1}: "
        f"K{g} = {x_kv}·W_K{g}{lesson.bias('K', g)}, V{g} = {x_kv}·W_V{g}{lesson.bias('V', g)}, "
        f"each [{len(trace.key_tokens)}, {d_k}]; they are computed once, not once per head."
    )
    if head.index != lesson.selection.heads[0]:
        return said
    n_keys = len(trace.key_tokens)
    shared, own = 2 * n_keys * n_kv * d_k, 2 * n_keys * n_heads * d_k
    if trace.is_cross:
        # A decoder reading a source keeps the source's K and V for every target word it
        # writes: computed once from X_source, they are what grouping makes smaller here.
        kept = (
            "a model that writes the target word by word keeps the source's K and V, computed "
            "once for all of them; for the source's "
        )
        unit = "token" if n_keys == 1 else "tokens"
    else:
        kept = (
            "a model writing text keeps every token's K and V (its K/V cache); for this sentence's "
        )
        unit = "token" if n_keys == 1 else "tokens"
    return (
        f"{said} What it saves: {kept}n = {n_keys} {unit} that is 2·n·G·d_k = "
        f"2·{n_keys}·{n_kv}·{d_k} = {shared} numbers per layer, instead of 2·n·h·d_k = "
        f"2·{n_keys}·{n_heads}·{d_k} = {own} with a K and V for every head."
    )
