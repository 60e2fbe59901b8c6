"""The end of the focus view, after each head's bars: how many rows of the heads shown look most
at their own word (counted, against what introductions to attention say), the rollout of the
focus word's row through the layers below (Abnar & Zuidema 2020) in a model's run, and for a
trained model the caution about reading attention as explanation."""

from __future__ import annotations

import numpy as np

from attnviz.analysis.caveats import attention_caveat
from attnviz.analysis.head_types import self_argmax_rows
from attnviz.analysis.rollout import trace_rollout
from attnviz.arrays import FloatArray
from attnviz.labels import ELLIPSIS, plural
from attnviz.lesson.blocks import Bars
from attnviz.lesson.writer import LessonWriter
from attnviz.tokens import printable

#: The most words the rollout's bars show; the rest are counted and summed in one line.
MOST_ROLLOUT_BARS = 12


def write(lesson: LessonWriter, owner: str) -> None:
    """What follows the heads' bars: ``owner`` is the focus row's name (the word, or its first
    piece)."""
    if not lesson.trace.is_cross:
        lesson.blank()
        lesson.say(own_word(lesson, owner))
        if len(lesson.layers_up_to) >= 1 and lesson.n_layers > 1:
            rollout(lesson, owner)
    origin = lesson.trace.provenance.weights
    if origin.model is not None and origin.trained and not lesson.trace.is_cross:
        lesson.blank()
        focus = lesson.selection.focus
        assert focus is not None
        lesson.note(attention_caveat(repr(printable(focus.label))))


def own_word(lesson: LessonWriter, owner: str) -> str:
    """How many rows of the heads shown put their largest weight on their own word, and in how
    many heads the focus word does: counted, where introductions to attention say it is so."""
    trace, selection = lesson.trace, lesson.selection
    focus = selection.focus
    assert focus is not None
    padding = trace.provenance.masking.padding
    heads = list(selection.heads)
    own = self_argmax_rows(trace.weights, trace.mask, padding=padding)[heads]  # [heads, n]
    count, total = int(own.sum()), len(heads) * (trace.n_tokens - padding)
    focus_count = int(own[:, focus.index].sum())
    assert selection.focus_row is not None
    if len(selection.row_groups[selection.focus_row]) > 1:  # --words: counted for one piece
        owner = f"{lesson.all_queries[focus.index]!r} (the first piece of {owner!r})"
    else:
        owner = repr(owner)
    unit = "token"
    if lesson.pretrained:
        unit = "word piece" if lesson.family is None else lesson.family.token_unit
    counted = f"{plural(len(heads), 'head')} shown × {plural(trace.n_tokens - padding, unit)}" + (
        ", [PAD] rows left out" if padding else ""
    )
    claim = (
        "Introductions to attention often say that a word gives its own position the highest "
        "weight. "
    )
    if count == total:
        return (
            f"{claim}Here all {total} rows ({counted}) do, {owner} in every head shown: true "
            "of these heads, not a rule of attention."
        )
    percent = f"{100 * count / total:.0f}%"
    return (
        f"{claim}Counted here: {count} of {total} rows ({counted}; {percent}) put their largest "
        f"weight on their own word, and {owner} does in {focus_count} of "
        f"{plural(len(heads), 'head')}; so it is not a rule."
    )


def rollout(lesson: LessonWriter, owner: str) -> None:
    """Row ``owner`` of the rollout to the layer shown, beside that layer's weights averaged
    over its heads, and what the rollout does and does not mean."""
    trace, selection = lesson.trace, lesson.selection
    layers = lesson.layers_up_to
    layer = len(layers)
    rolled = trace_rollout(layers)[-1]  # [n, n]
    mean = np.asarray(trace.weights, dtype=np.float64).mean(axis=0)  # [n, n]
    rows = selection.focus_weights(np.stack([mean, rolled]))  # [2, columns]
    averaged = (
        f"averaged over its {trace.n_heads} heads" if trace.n_heads > 1 else "(its only head)"
    )
    assert selection.focus_row is not None
    merged = len(selection.row_groups[selection.focus_row]) > 1
    pieces = " (the mean of its pieces' rows)" if merged else ""
    lesson.blank()
    lesson.heading(f"Rollout to layer {layer}", "head")
    lesson.say(
        "Attention rollout (Abnar & Zuidema 2020) follows the mixing down to the sentence's "
        "words: Â_l = ½·mean_h A_l + ½·I, where ½·I stands for the residual connection, rows "
        "renormalised; R_1 = Â_1, R_l = Â_l·R_(l−1). "
        f"Row {owner!r} of R_{layer}{pieces}, beside layer {layer}'s row {averaged}: how much "
        f"of each input word would reach {owner!r} if mixing were all the layers did. It follows "
        "the "
        "weights only and ignores the value vectors, W_O and whatever else a layer does, such "
        "as a feed-forward block or LayerNorm: it says where mixing could carry a word, not "
        "what the model uses."
    )
    if layer == 1:
        lesson.say(
            "At layer 1 there is nothing below to follow: R_1 is Â_1, this layer's mean row "
            f"halved, plus ½ on {owner!r} itself."
        )
    _rollout_bars(lesson, rows[0], rows[1], layer)


def _rollout_bars(lesson: LessonWriter, mean: FloatArray, rolled: FloatArray, layer: int) -> None:
    """The rollout's bars, largest first, beside the layer's mean weights; what they leave out."""
    number = lesson.number
    order = np.argsort(-rolled, kind="stable")
    shown = order[:MOST_ROLLOUT_BARS]
    lesson.blocks.append(
        Bars(
            labels=tuple(lesson.keys[index] for index in shown),
            weights=tuple(float(mean[index]) for index in shown),
            texts=tuple(number(mean[index]) for index in shown),
            second=tuple(float(rolled[index]) for index in shown),
            second_texts=tuple(number(rolled[index]) for index in shown),
            headings=(
                f"layer {layer}, mean of heads" if lesson.trace.n_heads > 1 else f"layer {layer}",
                "",
                f"rollout R_{layer}",
            ),
        )
    )
    if len(order) > len(shown):
        rest = order[len(shown) :]
        lesson.say(
            f"{ELLIPSIS} {plural(len(rest), 'more word')}, together {number(mean[rest].sum())} "
            f"in layer {layer}, {number(rolled[rest].sum())} in the rollout"
        )
    if lesson.selection.hidden:
        lesson.say(
            f"(hidden {lesson.hidden_names()}, together {number(1.0 - float(mean.sum()))} in "
            f"layer {layer}, {number(1.0 - float(rolled.sum()))} in the rollout)"
        )
