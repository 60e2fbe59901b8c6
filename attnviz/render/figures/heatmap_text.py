"""What a heatmap of heads says in words, whatever its shape: a title of at most two lines (the
sentence, then what the colours are and whose weights they are) and a caption with the rest:
whether the drawn rows sum to 1, hatching, sizes, what a toy model's answer is, and the
measure's own sentences (a formula, the caution about reading attention)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from attnviz.labels import plural
from attnviz.render.figures.fonts import truncate_words
from attnviz.render.figures.measures import Drawn, drawn_measure
from attnviz.render.figures.titles import (
    FigureText,
    hidden_taking_weight,
    masked_shown,
    pieces_text,
    quoted_sentence,
    readout_sentences,
    row_sums_phrase,
    sentence_text,
    shown_row_sums,
    weights_phrase,
)
from attnviz.render.figures.words import CONTINUED_PHRASE
from attnviz.render.options import Measure
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

#: Which side of cross-attention gives what, for the caption.
CROSS_SIDES = "queries from the target, keys and values from the source"


def sentences_line(source: Sequence[str], target: Sequence[str], max_chars: int) -> str:
    """“source” → “target” in at most ``max_chars`` characters, each sentence cut to its share
    (at a space, as truncate_words cuts).

    >>> sentences_line(["I", "am", "good"], ["Je", "vais", "bien"], 80)
    '“I am good” → “Je vais bien”'
    """
    quoted = [f"“{sentence_text(source)}”", f"“{sentence_text(target)}”"]
    room = max_chars - len(" → ")
    if sum(map(len, quoted)) > room:
        # Each sentence gets half the room, and whatever the other one does not need.
        half = room // 2
        shares = [max(half, room - len(quoted[1])), max(half, room - len(quoted[0]))]
        quoted = [
            truncate_words(text, max(2, share)) for text, share in zip(quoted, shares, strict=True)
        ]
    return " → ".join(quoted)


def heatmap_text(
    trace: AttentionTrace,
    selection: Selection,
    *,
    continued: bool = False,
    drawn: Drawn | None = None,
) -> FigureText:
    """The words of the heads' picture of ``trace`` as ``selection`` shows it: the sentence (for
    cross-attention “source” → “target”); what the colours are (``drawn``: the selection's
    weights when None) and where the weights came from; then, for the caption, the rows' sums,
    hatching, the word-piece mark when a label shows one (``continued``), the sizes, a toy
    model's readout and ``drawn``'s caption."""
    if drawn is None:
        drawn = drawn_measure(Measure.weights, trace, selection.heads)
    origin = trace.provenance.weights
    if trace.is_cross:
        sentence: Callable[[int], str] = partial(
            sentences_line, selection.column_words, selection.row_words
        )
    else:
        sentence = quoted_sentence(pieces_text(trace))
    facts = [
        *([CROSS_SIDES] if trace.is_cross else []),
        row_sums_phrase(
            shown_row_sums(drawn.matrices, selection),
            hidden_taking_weight(drawn.matrices, selection, trace.tokens),
        ),
        *(["hatched: masked, weight 0"] if masked_shown(trace.masked, selection) else []),
        *([CONTINUED_PHRASE] if continued else []),
        f"d_model {trace.d_model}, {plural(trace.n_heads, 'head')}, d_k {trace.d_k}"
        + (f", {plural(trace.n_kv_heads, 'key/value head')}" if trace.is_grouped else ""),
        *(["rotary positions (RoPE)"] if trace.rope is not None else []),
        *([f"K and V from a latent of d_c {trace.d_c}"] if trace.d_c is not None else []),
        *([f"a decoupled RoPE key of d_rope {trace.d_rope}"] if trace.d_rope else []),
    ]
    cross = ["cross-attention"] if trace.is_cross else []
    return FigureText(
        sentence,
        about=(*cross, *drawn.phrases, weights_phrase(origin)),
        facts=tuple(facts),
        notes=(*readout_sentences(origin, trace.n_heads, trace.tokens), *drawn.caption),
    )
