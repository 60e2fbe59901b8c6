"""The sliding window (only when the trace has one): the mask added to the scores, the keys each
token reads with this sentence's words, how many, a row's hidden scores at −∞ and its weights
there exactly 0, the KV cache it bounds with this trace's sizes, and what Mistral and Gemma
use it for.

Query i reads key j when i − W < j ≤ i (attnviz.attention.sliding_window_mask, the convention
of Hugging Face's sliding-window masks): itself and the W − 1 tokens before it.
"""

from __future__ import annotations

import numpy as np

from attnviz.errors import option
from attnviz.labels import plural
from attnviz.lesson.blocks import Matrix
from attnviz.lesson.writer import HeadView, LessonWriter, listed
from attnviz.trace import AttentionTrace

#: Rows listed one by one, at most: a longer sentence lists its first rows and its last.
LISTED_ROWS = 12


def title(lesson: LessonWriter, head: HeadView | None) -> str:
    window = lesson.trace.window
    assert window is not None
    return f"Sliding window W = {window}: each token reads at most {plural(window, 'key')}"


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    trace = lesson.trace
    window = trace.window
    assert window is not None and trace.mask is not None
    n_real = n_real_tokens(trace)
    lesson.say(
        f"A sliding window of W = {window} on the causal mask: query i reads key j only when "
        f"i − W < j ≤ i, {reach(window)}, as Hugging "
        "Face's masks for Mistral, Qwen2 and Gemma count W. Every other key is hidden: its "
        "score is set to −∞ before the softmax, in every head alike."
    )
    if window >= n_real:
        lesson.note(
            f"This sentence has {plural(n_real, 'token')} and W = {window}, so the window "
            "hides nothing here: the mask is what it would be without the window. A token "
            f"further than {window - 1} back would be hidden; try "
            f"{option('window', max(1, n_real // 3))}."
        )
    lesson.show(
        Matrix(
            lesson.selection.pairs(np.zeros(trace.mask.shape), masked=trace.masked),
            "mask added to the scores: 0 read, −∞ hidden",
            lesson.tokens,
            lesson.keys,
            masked=lesson.selection.masked_pairs(trace.masked),
        )
    )
    for line in reading_lines(lesson):
        lesson.say(line)
    lesson.say(counts_sentence(trace, n_real))
    hidden_row(lesson)
    lesson.say(cache_sentence(trace, n_real))
    lesson.say(models_sentence(lesson))


def reach(window: int) -> str:
    """ "itself and the 3 tokens before it", "itself alone": what a row reads at most."""
    return (
        "itself alone" if window == 1 else f"itself and the {plural(window - 1, 'token')} before it"
    )


def n_real_tokens(trace: AttentionTrace) -> int:
    """The sentence's tokens, the padding after them left out."""
    return trace.n_tokens - trace.provenance.masking.padding


def reading_lines(lesson: LessonWriter) -> list[str]:
    """ "'tired' reads: because, it, was, too": each row's keys, from the mask."""
    trace = lesson.trace
    assert trace.mask is not None
    rows = list(range(trace.n_tokens))
    if len(rows) > LISTED_ROWS:
        rows = [*rows[: LISTED_ROWS - 2], rows[-1]]
    names = lesson.all_queries
    lines = []
    for row in rows:
        keys = [names[j] for j in np.flatnonzero(trace.mask[row])]
        lines.append(f"  '{names[row]}' reads: {', '.join(keys) if keys else 'nothing'}")
        if row == LISTED_ROWS - 3 and len(rows) < trace.n_tokens:
            lines.append("  …")
    return lines


def counts_sentence(trace: AttentionTrace, n_real: int) -> str:
    """How many keys each of the sentence's rows reads: min(i, W), i counted from 1."""
    assert trace.mask is not None and trace.window is not None
    counts = [int(c) for c in trace.mask[:n_real].sum(axis=1)]
    shown = ", ".join(str(c) for c in counts[:LISTED_ROWS]) + (
        ", …" if n_real > LISTED_ROWS else ""
    )
    growing = ", and a row's work stops growing once i reaches W" if trace.window < n_real else ""
    return (
        f"Row i (from 1) reads min(i, W) = min(i, {trace.window}) keys: {shown}. Without the "
        f"window row i would read all i; the whole matrix keeps {sum(counts)} of the "
        f"{n_real * (n_real + 1) // 2} pairs the causal mask keeps{growing}."
    )


def hidden_row(lesson: LessonWriter) -> None:
    """One row of the first head shown: its hidden keys at −∞, their weights exactly 0."""
    trace = lesson.trace
    assert trace.mask is not None and trace.window is not None
    # The rows with an earlier key outside the window: keys 0 … i − W, from row W on.
    rows = [i for i in range(trace.window, n_real_tokens(trace)) if not trace.mask[i, :i].all()]
    if not rows:
        return
    row = lesson.example if lesson.example in rows else rows[-1]
    head = lesson.full_heads[0] if lesson.full_heads else 0
    names, hidden = lesson.all_queries, np.flatnonzero(~trace.mask[row, : row + 1])
    read = np.flatnonzero(trace.mask[row])
    zero = all(float(trace.weights[head, row, j]) == 0.0 for j in hidden)
    total = float(trace.weights[head, row, read].sum())
    shown = listed([names[j] for j in hidden])
    lesson.say(
        f"In head {head + 1}, row '{names[row]}': "
        + (
            f"the score of {shown} (earlier, but outside the window) becomes −∞, exp(−∞) = 0, "
            f"and its weight is {'exactly 0' if zero else 'not 0'}"
            if len(hidden) == 1
            else f"the scores of {shown} (earlier, but outside the window) become −∞, "
            f"exp(−∞) = 0, and their weights are {'exactly 0' if zero else 'not 0'}"
        )
        + f"; the {plural(len(read), 'key')} it reads share "
        f"the whole row: their weights sum to {lesson.number(total)}."
    )


def cache_sentence(trace: AttentionTrace, n_real: int) -> str:
    """The KV cache with and without the window, in bytes, for this trace's sizes."""
    assert trace.window is not None
    layers = trace.provenance.weights.n_layers or 1
    g, d_k, number = trace.n_kv_heads, trace.d_k, trace.K.dtype.itemsize
    kept = min(n_real, trace.window)
    full_bytes = 2 * layers * g * n_real * d_k * number
    window_bytes = 2 * layers * g * kept * d_k * number
    where = f"{plural(layers, 'layer')}" if layers > 1 else "this one layer"
    change = (
        "the same, as the window hides nothing here"
        if kept == n_real
        else f"{window_bytes / full_bytes:.0%} of it, and it stays {window_bytes:,} bytes "
        "however long the text grows"
    )
    return (
        "At generation a decoder keeps each layer's K and V of the tokens read so far (the KV "
        "cache, [layers, key/value heads, t, d_k] each, t tokens). A layer with a window needs "
        f"only the last W rows: [layers, key/value heads, min(t, W), d_k]. Here ({where}, "
        f"G = {g}, d_k = {d_k}, {number}-byte numbers, t = {n_real}): K and V take 2 × "
        f"{layers} × {g} × {n_real} × {d_k} × {number} = {full_bytes:,} bytes without the "
        f"window and 2 × {layers} × {g} × {kept} × {d_k} × {number} = {window_bytes:,} with "
        f"it, {change}."
    )


def models_sentence(lesson: LessonWriter) -> str:
    """What Mistral and Gemma use the window for, and how far stacked layers reach: with every
    layer up to this one windowed, this layer's output reaches Σ (W_ℓ − 1) tokens back."""
    trace = lesson.trace
    assert trace.window is not None
    windows = [layer.window for layer in lesson.layers_up_to]
    reach = ""
    if len(windows) > 1 and None not in windows:
        steps = [w - 1 for w in windows if w is not None]
        same = len(set(steps)) == 1
        total = " + ".join(str(s) for s in steps) if not same else f"{len(steps)} × {steps[0]}"
        reach = (
            f" Here every layer up to this one, layer {len(steps)}, has a window: its output at "
            f"a token depends on tokens up to {total} = {sum(steps)} before it."
        )
    return (
        "Why models use it: attention costs about n·W products instead of n², and the cache "
        "stays bounded by W. Mistral 7B slides a window of W = 4096 over every one of its 32 "
        "layers (its paper counts an attention span of about 131K tokens, 32 × 4096); Gemma 2 "
        "alternates local layers (a window of 4096) with global ones, and Gemma 3 has five "
        "local layers (a window of 1024) to each global one. Information still travels "
        "further than W: each layer reads W − 1 tokens back from outputs that already read "
        f"W − 1 back, so L stacked layers reach L·(W − 1) tokens back.{reach}"
    )
