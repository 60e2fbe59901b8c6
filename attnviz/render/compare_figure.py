"""The picture of ``attnviz compare -o``: for each head, the focus word's row in sentence A above
its row in sentence B, over the two sentences' words aligned in order.

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from attnviz.analysis.caveats import short_attention_caveat
from attnviz.analysis.compare import Alignment, Comparison, HeadChange
from attnviz.labels import fit_label, format_number, occurrence_labels
from attnviz.provenance import WeightsOrigin
from attnviz.render.figures import image_format_of, new_figure, save_figure
from attnviz.render.figures.colour import text_colour
from attnviz.tokens import printable

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

CELL = 0.62  # inches per word column
PANEL = 1.25  # inches per head: two rows of cells and the panel's title
LABELS = 0.45  # inches left of the cells for "A" and "B"


class Slot(NamedTuple):
    """One column of the picture: a word both sentences have, or one only A or only B has."""

    label: str
    a: int | None  # A's column, None when the word is only in B
    b: int | None


def aligned_slots(
    alignment: Alignment, labels_a: Sequence[str], labels_b: Sequence[str]
) -> list[Slot]:
    """The columns in A's reading order: each run of words only A has sits where it stands in
    A, and each word only B has comes before the first shared word that follows it in B."""
    slots: list[Slot] = []
    placed_b: set[int] = set()
    i = 0
    for pair_a, pair_b in (*alignment.pairs, (len(labels_a), len(labels_b))):
        slots += [Slot(f"{labels_a[k]} (A)", k, None) for k in range(i, pair_a)]
        for k in alignment.only_b:
            if k < pair_b and k not in placed_b:
                slots.append(Slot(f"{labels_b[k]} (B)", None, k))
                placed_b.add(k)
        if pair_a < len(labels_a):
            slots.append(Slot(labels_a[pair_a], pair_a, pair_b))
        i = pair_a + 1
    return slots


def save_comparison_figure(
    comparison: Comparison,
    path: Path,
    *,
    top: int,
    sentences: tuple[str, str] | None = None,
    weights: WeightsOrigin | None = None,
) -> None:
    """build_comparison_figure, written atomically in the format the extension names."""
    image_format_of(path)
    figure = build_comparison_figure(comparison, top=top, sentences=sentences, weights=weights)
    save_figure(figure, path)


def build_comparison_figure(
    comparison: Comparison,
    *,
    top: int,
    sentences: tuple[str, str] | None = None,
    weights: WeightsOrigin | None = None,
) -> Figure:
    """A panel per head, the ``top`` heads with the largest TV first: row A above row B, one
    column per aligned word, each cell's weight printed in it; a word only one sentence has is
    blank in the other's row. The title names the sentences and where the weights come from,
    with the caution about attention for a trained model, when they are given."""
    labels_a = occurrence_labels([printable(word) for word in comparison.words_a])
    labels_b = occurrence_labels([printable(word) for word in comparison.words_b])
    slots = aligned_slots(comparison.alignment, labels_a, labels_b)
    heads = comparison.heads[:top]
    width = max(LABELS + CELL * len(slots) + 0.3, 5.0)
    name = printable(comparison.focus)
    characters = int(width * 10.5)  # about 10.5 characters of 10-point text an inch
    lines = [
        *textwrap.wrap(
            f"Where {name!r} looks in sentence A and in sentence B, the heads that changed most",
            characters,
        ),
        *textwrap.wrap(
            "TV = ½·(Σ over shared words |w_A − w_B| + |w_A(only A) − w_B(only B)|); grey: a "
            "word that sentence lacks",
            characters,
        ),
        *_about(sentences, weights, characters),
    ]
    top_margin = 0.45 + 0.17 * len(lines)
    height = PANEL * len(heads) + top_margin
    figure = new_figure(width, height)
    figure.suptitle("\n".join(lines), fontsize=10, y=1 - 0.15 / height, va="top")
    for index, change in enumerate(heads):
        bottom = 1 - (top_margin - 0.35 + PANEL * (index + 1)) / height
        axes = figure.add_axes(
            (
                LABELS / figure.get_figwidth(),
                bottom,
                CELL * len(slots) / figure.get_figwidth(),
                0.62 / height,
            )  # fmt: skip
        )
        _panel(axes, change, slots, labels_a, labels_b)
    return figure


def _about(
    sentences: tuple[str, str] | None, weights: WeightsOrigin | None, characters: int
) -> list[str]:
    """The title's lines on what was compared: both sentences, the weights, and for a trained
    model the caution (attnviz.analysis.caveats), wrapped to the picture's width."""
    about = (
        []
        if sentences is None
        else [f"A: {printable(sentences[0])}", f"B: {printable(sentences[1])}"]
    )
    if weights is not None:
        about.append(f"weights: {printable(weights.describe(with_layer=False))}")
        if weights.model is not None and not weights.is_random:
            about.append(short_attention_caveat())
    return [line for text in about for line in (textwrap.wrap(text, characters) or [""])]


def _panel(
    axes: Axes,
    change: HeadChange,
    slots: Sequence[Slot],
    labels_a: Sequence[str],
    labels_b: Sequence[str],
) -> None:
    """One head: its two rows as cells on a 0–1 colour scale, the weights printed."""
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    cells = np.full((2, len(slots)), np.nan)
    for column, slot in enumerate(slots):
        if slot.a is not None:
            cells[0, column] = change.row_a[slot.a]
        if slot.b is not None:
            cells[1, column] = change.row_b[slot.b]
    axes.imshow(np.ma.masked_invalid(cells), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    axes.set_facecolor("#eeeeee")
    for (row, column), value in np.ndenumerate(cells):
        if not np.isnan(value):
            axes.text(column, row, format_number(float(value), 2), ha="center", va="center",
                      fontsize=7, color=text_colour(cmap(float(value))))  # fmt: skip
    axes.set_yticks([0, 1], ["A", "B"])
    axes.set_xticks(range(len(slots)), [fit_label(slot.label, 11) for slot in slots])
    axes.tick_params(axis="x", length=0, labelsize=7)
    move = (
        f" · moves from {labels_a[change.top_a]!r} to {labels_b[change.top_b]!r}"
        if change.moves
        else ""
    )
    axes.set_title(
        f"Layer {change.layer}, head {change.head} · TV {format_number(change.tv, 2)}{move}",
        fontsize=9,
        loc="left",
    )
