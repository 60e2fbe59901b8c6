"""The focus view, after the steps when a word is followed: its row of each head's weights as
bars, largest first, each beside what the word adds to the head's output (its contribution,
Kobayashi et al. 2020), and its z and one contribution worked out; then, across the heads shown,
how often a row looks most at its own word, the rollout through the layers below, and for a
trained model the caution about reading weights as explanations (attnviz/lesson/focus_notes.py).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnviz import worked
from attnviz.arrays import FloatArray
from attnviz.labels import ELLIPSIS, plural
from attnviz.lesson import focus_notes
from attnviz.lesson.blocks import Bars
from attnviz.lesson.writer import HeadView, LessonWriter
from attnviz.results import OVERWEIGHT_FACTOR
from attnviz.tokens import printable, word_key

#: The most words a head's bars show; the rest are counted and summed in one line.
MOST_BARS = 12
#: … by default (not --full) for the head shown in full,
MOST_BARS_SHOWN = 6
#: … and for a head not shown in full, whose rows the lesson gives and no more.
MOST_BARS_BRIEF = 5
#: A key whose share of the row's contribution is below this adds so little that the weight on
#: it is close to a no-op (as with [CLS] in MiniLM's layer 6, head 12: weight 0.15, share 0.01).
NO_OP_SHARE = 0.05
#: The bars' column names: the weight, the contribution's size, its share of the row.
HEADINGS = ("weight", "‖w·f‖", "share")


class FocusRow(NamedTuple):
    """One head's row of the focus word as the selection shows it, weight beside contribution.

    A column of several pieces (--words) sums its pieces' weights and sizes; a focus word of
    several pieces averages their rows, as the weights' tables do.
    """

    weights: FloatArray  # [columns] w_ij
    norms: FloatArray  # [columns] ‖w_ij·f(x_j)‖
    shares: FloatArray  # [columns] norms / total
    total: float  # Σ_j ‖w_ij·f(x_j)‖ over every key as computed, hidden ones too
    lengths: FloatArray  # [columns] ‖f(x_j)‖ (several pieces: their mean, weighted by w)


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    trace, selection = lesson.trace, lesson.selection
    focus = selection.focus
    assert focus is not None
    lesson.blank()
    name = printable(focus.label)
    lesson.heading(f"Focus: where does {name!r} look?", "section")
    row, owner = repr(name), name
    piece = lesson.all_queries[focus.index]
    if not selection.merged and word_key(trace.tokens[focus.index]) != word_key(focus.word):
        row, owner = f"{piece!r} (the first piece of {name!r})", piece
    if lesson.brief:
        lesson.say(
            f"Row {row} of each head's weights, largest first, and beside each weight what word "
            f"j adds to the head's output for {owner!r}: w_ij·f(x_j), f(x_j) = v_j·W_O^(h) "
            "(Kobayashi et al. 2020), its size ‖w·f‖ and its share of the row's total. A large "
            "weight on a short f(x_j) adds little."
        )
    else:
        lesson.say(
            f"Row {row} of each head's weights, largest first. A weight w_ij only mixes: "
            f"z_{piece} = Σ_j w_ij·v_j, which the head passes on through its rows of W_O, "
            f"W_O^(h). What word j adds to the head's output for {owner!r} is w_ij·f(x_j), with "
            "f(x_j) = v_j·W_O^(h) (Kobayashi et al. 2020); beside each weight, its size ‖w·f‖ = "
            "w_ij·‖f(x_j)‖ and its share of the row's total Σ_j w_ij·‖f(x_j)‖. A large weight on "
            "a short f(x_j) adds little."
        )
    if selection.merged and any(len(group) > 1 for group in selection.column_groups):
        lesson.say("A word of several pieces sums its pieces' sizes, as it sums their weights.")
    types = _head_types(lesson)
    if not types or (lesson.brief and len(types) < 2):
        pass  # short, and one head: its type is in its heading, and no other to weigh it by
    elif lesson.brief:
        lesson.say(
            "Each head is named by its type, scored over all its rows (attnviz heads --help)."
        )
    else:
        lesson.say(
            "Each head is named by its type, scored over all its rows (attnviz heads --help): a "
            "previous-token head, or a sink whose rows park their weight on one token, does much "
            f"the same in every row, so its bars say little about {owner!r} itself."
        )
    rows = focus_rows(lesson)
    for index in lesson.lesson_heads:
        in_full = index in lesson.full_heads
        _head(lesson, index, rows[index], name, types.get(index), in_full=in_full)
    focus_notes.write(lesson, owner)


def focus_rows(lesson: LessonWriter) -> list[FocusRow]:
    """Every head's focus row, weight beside contribution, over the shown columns."""
    trace, selection = lesson.trace, lesson.selection
    focus = selection.focus
    assert focus is not None and selection.focus_row is not None
    group = list(selection.row_groups[selection.focus_row])
    every = lesson.analyses().contributions_of(trace)
    weights = selection.focus_weights(every.weights)  # [h, columns]
    norms = selection.focus_weights(every.norms)
    totals = every.norms[:, group].sum(axis=-1).mean(axis=-1)  # [h]
    rows = []
    for head in range(trace.n_heads):
        with np.errstate(invalid="ignore", divide="ignore"):
            shares = norms[head] / totals[head]
            lengths = norms[head] / weights[head]
        single = [len(g) == 1 for g in selection.column_groups]
        exact = every.transformed_norms[head, [g[0] for g in selection.column_groups]]
        rows.append(
            FocusRow(
                weights=weights[head],
                norms=norms[head],
                shares=shares,
                total=float(totals[head]),
                lengths=np.where(single, exact, lengths),
            )
        )
    return rows


def _head_types(lesson: LessonWriter) -> dict[int, str]:
    """Each head's type (analysis.head_types) by head index from 0; none in cross-attention,
    whose weights are not square."""
    if lesson.trace.is_cross:
        return {}
    typed_heads = lesson.analyses().head_types_of(lesson.trace)
    return {typed.head - 1: typed.type.value for typed in typed_heads}


def _head(
    lesson: LessonWriter,
    head: int,
    row: FocusRow,
    name: str,
    kind: str | None = None,
    *,
    in_full: bool = True,
) -> None:
    """One head's bars for the focus word, what they leave out, why weight and contribution
    differ where they do, its z and one contribution worked out; a head not shown in full
    gives its MOST_BARS_BRIEF largest bars and no more."""
    trace, selection = lesson.trace, lesson.selection
    focus = selection.focus
    assert focus is not None
    order = np.argsort(-row.weights, kind="stable")
    lesson.blank()
    lesson.heading(f"Head {head + 1}" + (f" · {kind}" if kind else ""), "head")
    most = MOST_BARS if not lesson.brief else MOST_BARS_BRIEF if not in_full else MOST_BARS_SHOWN
    shown = order[: focus_notes.shown_bars(lesson, row.weights[order], most)]
    number = lesson.number
    lesson.blocks.append(
        Bars(
            labels=tuple(lesson.keys[index] for index in shown),
            weights=tuple(float(row.weights[index]) for index in shown),
            texts=tuple(number(row.weights[index]) for index in shown),
            second=tuple(_share(row.shares[index]) for index in shown),
            second_texts=tuple(number(row.shares[index]) for index in shown),
            between=tuple(number(row.norms[index]) for index in shown),
            headings=HEADINGS,
        )
    )
    if len(order) > len(shown):
        rest = order[len(shown) :]
        lesson.say(
            f"{ELLIPSIS} {plural(len(rest), 'more word')}, together weight "
            f"{number(row.weights[rest].sum())}, ‖w·f‖ {number(row.norms[rest].sum())}, share "
            f"{number(row.shares[rest].sum())}"
        )
    if selection.hidden:
        hidden_weight = 1.0 - float(row.weights.sum())
        hidden_norm = row.total - float(row.norms.sum())
        lesson.say(
            f"(hidden {lesson.hidden_names()}, together weight {number(hidden_weight)}, ‖w·f‖ "
            f"{number(hidden_norm)}, share {number(_share(hidden_norm / row.total))})"
            if row.total > 0
            else f"(hidden {lesson.hidden_names()}, together weight {number(hidden_weight)})"
        )
    if not in_full:
        return
    why = differs(lesson, row, focus.index)
    if why:
        lesson.say(why)
    example = worked.weighted_sum(trace, head, focus.index)
    if lesson.brief and lesson.shows_step("z") and focus.index == lesson.example:
        # The z step of this head worked out this very z: the contribution is what is new here.
        _contribution(lesson, head, focus.index)
        return
    if selection.merged and len(selection.row_groups[selection.focus_row or 0]) > 1:
        lesson.say(
            f"The bars above average the rows of the pieces of {name!r}; each piece has "
            "its own z, as computed; the first piece's is:"
        )
    lesson.worked_line("weighted_sum", lesson.text.weighted_sum(example, limit=MOST_BARS))
    lesson.worked_line("weighted_sum_element", lesson.text.weighted_sum_element(example))
    _contribution(lesson, head, focus.index)
    lesson.rounding_note()


def _share(value: float) -> float:
    """A share as a bar's length: 0 for a row with nothing to share (NaN)."""
    return 0.0 if np.isnan(value) else float(value)


def differs(lesson: LessonWriter, row: FocusRow, query: int) -> str:
    """One sentence on why weight and contribution disagree, with the numbers, when the largest
    weight is not the largest contribution or a word's weight is at least OVERWEIGHT_FACTOR
    times its share; "" when they agree.

    share_j / w_j = ‖f(x_j)‖ / total, and the total Σ_k w_k·‖f(x_k)‖ is the row's mean ‖f‖
    weighted by the weights: a word's share falls below its weight exactly when its ‖f‖ is
    shorter than that mean.
    """
    if row.total <= 0:
        return ""
    number, keys = lesson.text.exact, lesson.keys  # at least 2 decimals, whatever the tables
    top_weight = int(np.argmax(row.weights))
    top_share = int(np.argmax(row.shares))
    n_keys = len(lesson.trace.key_tokens)
    parked = [
        int(j)
        for j in np.argsort(-row.weights, kind="stable")
        if row.weights[j] > 1 / n_keys and row.weights[j] >= OVERWEIGHT_FACTOR * row.shares[j]
    ]
    groups = lesson.selection.column_groups

    def length(j: int) -> str:
        # A word of several pieces has no one f: its pieces' ‖f‖, averaged by their weights.
        mean = " (its pieces', averaged by weight)" if len(groups[j]) > 1 else ""
        return f"‖f(x_{keys[j]})‖ = {number(row.lengths[j])}{mean}"

    if top_share != top_weight and number(row.shares[top_share]) != number(row.shares[top_weight]):
        a, b = top_weight, top_share
        sentence = (
            f"The largest weight, {number(row.weights[a])} on {keys[a]!r}, is not the largest "
            f"contribution: {keys[b]!r} adds more (share {number(row.shares[b])} against "
            f"{number(row.shares[a])}) because f(x_{keys[b]}) is longer: {length(b)} against "
            f"{length(a)}"
        )
        return sentence + (_no_op(lesson, row, a) if a in parked else "") + "."
    if not parked:
        return ""
    a = parked[0]
    return (
        f"{keys[a]!r} has weight {number(row.weights[a])} but a share of "
        f"{number(row.shares[a])} because f(x_{keys[a]}) is short: {length(a)} against "
        f"{number(row.total)}, the row's mean ‖f‖ weighted by w (its total)"
        + _no_op(lesson, row, a)
        + "."
    )


def _no_op(lesson: LessonWriter, row: FocusRow, key: int) -> str:
    """The end of the sentence for a word whose share is tiny: the weight there does little."""
    if row.shares[key] >= NO_OP_SHARE:
        return f", so the weight on {lesson.keys[key]!r} adds less than it seems"
    return (
        f", so the weight parked on {lesson.keys[key]!r} is close to a no-op: it adds little "
        "to the head's output"
    )


def _contribution(lesson: LessonWriter, head: int, query: int) -> None:
    """One contribution worked out, for the key the head's row weighs most (of those shown)."""
    trace, selection = lesson.trace, lesson.selection
    key = worked.example_key(trace, selection, head, query)
    example = worked.contribution(trace, head, query, key)
    if not example.total > 0:
        return
    name = lesson.all_keys[key]
    word = lesson.all_queries[query]
    lesson.say(
        f"What {name!r} adds to {word!r} in head {head + 1}, ‖w·f(x_{name})‖ = w × "
        f"‖f(x_{name})‖, and its share of the row's total:"
    )
    product, share = lesson.text.contribution(example)
    lesson.worked_line("contribution", lesson.text.contribution_length(example, trace.d_model))
    lesson.worked_line("contribution", product)
    lesson.worked_line("contribution", share)
