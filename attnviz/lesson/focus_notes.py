"""The end of the focus view, after each head's bars: how many rows of the heads shown look most
at their own word (counted, against what introductions to attention say), the rollout of the
focus word's row through the layers below (Abnar & Zuidema 2020) in a model's run, and for a
trained model the caution about reading attention as explanation."""

from __future__ import annotations

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import option
from attnviz.labels import ELLIPSIS, plural
from attnviz.lesson.blocks import Bars, Span
from attnviz.lesson.caveats import attention_caveat, brief_attention_caveat
from attnviz.lesson.writer import LessonWriter
from attnviz.tokens import printable

#: The most words the rollout's bars show; the rest are counted and summed in one line.
MOST_ROLLOUT_BARS = 12


def write(lesson: LessonWriter, owner: str) -> None:
    """What follows the heads' bars: ``owner`` is the focus row's name (the word, or its first
    piece)."""
    counting = not lesson.trace.provenance.weights.is_random or not lesson.brief
    said = own_word(lesson, owner) if counting and not lesson.trace.is_cross else ""
    if said:
        lesson.blank()
        lesson.say(said)
    if not lesson.trace.is_cross:
        if len(lesson.layers_up_to) >= 1 and lesson.n_layers > 1:
            if lesson.brief:
                lesson.say(
                    Span(
                        f"(The rollout of {owner!r} through the layers below, Abnar & Zuidema "
                        f"2020: {option('full', True)}.)",
                        "dim",
                    )
                )
            else:
                rollout(lesson, owner)
    origin = lesson.trace.provenance.weights
    if origin.model is not None and origin.trained and not lesson.trace.is_cross:
        lesson.blank()
        focus = lesson.selection.focus
        assert focus is not None
        caveat = brief_attention_caveat if lesson.brief else attention_caveat
        lesson.note(caveat(repr(printable(focus.label))))


def own_word(lesson: LessonWriter, owner: str) -> str:
    """How many rows of the heads shown put their largest weight on their own word, and in how
    many heads the focus word does: counted, where introductions to attention say it is so.
    Rows with no choice or a tie at the top do not count (counted_rows); with random weights
    the count says nothing about trained attention, and nothing is concluded from it. ""
    when no row can be counted."""
    trace, selection = lesson.trace, lesson.selection
    focus = selection.focus
    assert focus is not None
    padding = trace.provenance.masking.padding
    heads = list(lesson.lesson_heads)  # those whose bars the focus view has just shown
    found = lesson.analyses().own_rows_of(trace)
    own, counted = found.own[heads], found.counted[heads]  # [heads, n]
    count, total = int(own.sum()), int(counted.sum())
    if total == 0:
        return ""
    focus_count = int(own[:, focus.index].sum())
    focus_total = int(counted[:, focus.index].sum())
    assert selection.focus_row is not None
    if len(selection.row_groups[selection.focus_row]) > 1:  # --words: counted for one piece
        owner = f"{lesson.all_queries[focus.index]!r} (the first piece of {owner!r})"
    else:
        owner = repr(owner)
    unit = "token"
    if lesson.pretrained:
        unit = "word piece" if lesson.family is None else lesson.family.token_unit
    every = len(heads) * (trace.n_tokens - padding)
    left_out = []
    if padding:
        left_out.append("[PAD] rows")
    if total < every - len(heads) * padding:
        left_out.append("rows with one key to choose or a tie for the largest weight")
    rows = f"{plural(len(heads), 'head')} shown × {plural(trace.n_tokens - padding, unit)}" + (
        f"; {' and '.join(left_out)} left out" if left_out else ""
    )
    claim = (
        "Introductions to attention often say that a word gives its own position the highest "
        "weight. "
    )
    if focus_total == 0:
        focus_part = (
            f"{owner} counts in no head (its row has one key to choose from or a tie for its "
            "largest weight in each)"
        )
    else:
        focus_part = f"{owner} does in {focus_count} of {plural(focus_total, 'head')}"
    percent = f"{100 * count / total:.0f}%"
    counted_text = f"Counted here: {count} of {total} rows ({rows}; {percent}) put their "
    if trace.provenance.weights.is_random:
        return (
            f"{claim}{counted_text}largest weight on their own word, and {focus_part}; with "
            "random weights that says nothing about what trained attention does."
        )
    if count == total:
        return (
            f"{claim}Here all {total} rows counted ({rows}) do, "
            + (f"{owner} in every head that counts" if focus_total else focus_part)
            + ": true of these heads, not a rule of attention."
        )
    these = "these heads" if len(heads) > 1 else "this head"
    return (
        f"{claim}{counted_text}largest weight on their own word, and {focus_part}: in {these} "
        "it is not a rule."
    )


def shown_bars(lesson: LessonWriter, ordered: FloatArray, most: int) -> int:
    """How many of a row's bars, largest first (``ordered``), the lesson draws: ``most``; in
    its short form none past the first that would print as 0.00."""
    if not lesson.brief:
        return most
    count = min(most, len(ordered))
    while count > 1 and lesson.number(float(ordered[count - 1])) == lesson.number(0.0):
        count -= 1
    return count


def rollout(lesson: LessonWriter, owner: str) -> None:
    """Row ``owner`` of the rollout to the layer shown, beside that layer's weights averaged
    over its heads, and what the rollout does and does not mean."""
    trace, selection = lesson.trace, lesson.selection
    layers = lesson.layers_up_to
    layer = len(layers)
    rolled = lesson.analyses().rollout_through(layers[-1])  # [n, n] R_layer
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
    if lesson.brief:
        lesson.say(
            "Attention rollout (Abnar & Zuidema 2020): Â_l = ½·mean_h A_l + ½·I (½·I for the "
            f"residual connection), R_l = Â_l·R_(l−1). Row {owner!r} of R_{layer}{pieces}, "
            f"beside layer {layer}'s row {averaged}: where mixing alone could carry each input "
            "word by then; it ignores V, W_O and the rest of each layer, so not what the model "
            "uses."
        )
        _rollout_bars(lesson, rows[0], rows[1], layer)
        return
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
    shown = order[: shown_bars(lesson, rolled[order], MOST_ROLLOUT_BARS)]
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
