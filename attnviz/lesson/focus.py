"""The focus view, after the steps when a word is followed: its row of each head's weights as
bars, largest first, and its z in that head worked out."""

from __future__ import annotations

import numpy as np

from attnviz import worked
from attnviz.labels import ELLIPSIS, plural
from attnviz.lesson.blocks import Bars
from attnviz.lesson.writer import HeadView, LessonWriter
from attnviz.tokens import printable

#: The most words a head's bars show; the rest are counted and summed in one line.
MOST_BARS = 12


def write(lesson: LessonWriter, head: HeadView | None) -> None:
    trace, selection = lesson.trace, lesson.selection
    focus = selection.focus
    assert focus is not None
    lesson.blank()
    name = printable(focus.label)
    lesson.heading(f"Focus: where does {name!r} look?", "section")
    row, owner = repr(name), name
    piece = lesson.all_queries[focus.index]
    if not selection.merged and trace.tokens[focus.index].casefold() != focus.word.casefold():
        row, owner = f"{piece!r} (the first piece of {name!r})", piece
    lesson.say(
        f"Row {row} of each head's weights, largest first: the share of each word's value "
        f"vector in the output z of {owner!r}."
    )
    rows = selection.focus_weights(trace.weights)
    for index in selection.heads:
        _head(lesson, index, rows[index], name)


def _head(lesson: LessonWriter, head: int, weights: np.ndarray, name: str) -> None:
    """One head's bars for the focus word, what they leave out, and its z."""
    trace, selection = lesson.trace, lesson.selection
    focus = selection.focus
    assert focus is not None
    order = np.argsort(-weights, kind="stable")
    lesson.blank()
    lesson.heading(f"Head {head + 1}", "head")
    shown = order[:MOST_BARS]
    lesson.blocks.append(
        Bars(
            labels=tuple(lesson.keys[index] for index in shown),
            weights=tuple(float(weights[index]) for index in shown),
            texts=tuple(lesson.number(weights[index]) for index in shown),
        )
    )
    if len(order) > len(shown):
        rest = float(weights[order[len(shown) :]].sum())
        more = len(order) - len(shown)
        lesson.say(f"{ELLIPSIS} {plural(more, 'more word')}, together {lesson.number(rest)}")
    if selection.hidden:
        hidden = 1.0 - float(weights.sum())
        lesson.say(f"(hidden {lesson.hidden_names()}, together {lesson.number(hidden)})")
    example = worked.weighted_sum(trace, head, focus.index)
    if selection.merged and len(selection.row_groups[selection.focus_row or 0]) > 1:
        lesson.say(
            f"The bars above average the rows of the pieces of {name!r}; each piece has "
            "its own z, as computed; the first piece's is:"
        )
    lesson.worked_line("weighted_sum", lesson.text.weighted_sum(example, limit=MOST_BARS))
    lesson.worked_line("weighted_sum_element", lesson.text.weighted_sum_element(example))
    lesson.rounding_note()
