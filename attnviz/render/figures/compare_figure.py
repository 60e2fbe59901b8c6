"""The picture of ``attnviz compare -o``: for each head, the focus word's row in sentence A above
its row in sentence B, over the two sentences' words aligned in order.

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from attnviz.labels import fit_label, format_number, occurrence_labels
from attnviz.lesson.caveats import short_attention_caveat
from attnviz.provenance import WeightsOrigin
from attnviz.render.figures import image_format_of, new_figure, save_figure
from attnviz.render.figures.captions import caption_height, draw_caption
from attnviz.render.figures.colour import text_colour
from attnviz.render.figures.fonts import text_width, title_line, truncate_words
from attnviz.render.figures.saving import place_axes
from attnviz.render.figures.settings import draws
from attnviz.render.figures.titles import FigureText, readout_sentences
from attnviz.results import Alignment, Comparison, HeadChange
from attnviz.tokens import printable

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

CELL = 0.8  # inches per word column
PANEL = 1.45  # inches per head: its title, two rows of cells, the words under them
PANEL_TITLE = 0.35  # inches above the cells for the panel's title
CELLS_HEIGHT = 0.7  # inches, the two rows of cells
LABELS = 0.5  # inches left of the cells for "A" and "B"
COLOUR_BAR_ROOM = 1.2  # inches right of the cells: the colour bar, its numbers and label
MIN_WIDTH = 8.0  # inches: the title's first line whole for a short sentence
MARGIN = 0.15  # inches around the title and the caption
CAPTION_GAP = 0.1  # inches between the last panel's words and the caption
TITLE_FONT = 13.0  # points
CAPTION_FONT = 11.0  # points
LABEL_FONT = 10.0  # points: the words, "A" and "B", the weights in the cells, the colour bar
PANEL_FONT = 11.0  # points, each panel's title


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


@draws
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


@draws
def build_comparison_figure(
    comparison: Comparison,
    *,
    top: int,
    sentences: tuple[str, str] | None = None,
    weights: WeightsOrigin | None = None,
) -> Figure:
    """A panel per head, the ``top`` heads with the largest TV first: row A above row B, one
    column per aligned word, each cell's weight printed in it; a word only one sentence has is
    blank in the other's row; a colour bar beside the panels. The title says what is compared
    and whose weights they are; the caption names the sentences, TV, what a toy model's answer
    is and, for a trained model, the caution about attention, when they are given."""
    labels_a = occurrence_labels([printable(word) for word in comparison.words_a])
    labels_b = occurrence_labels([printable(word) for word in comparison.words_b])
    slots = aligned_slots(comparison.alignment, labels_a, labels_b)
    heads = comparison.heads[:top]
    panels_width = CELL * len(slots)
    titles = [_panel_title(change, labels_a, labels_b) for change in heads]
    # The colour bar goes right of the cells and of the panels' titles, which can be wider.
    bar_left = LABELS + max([panels_width, *(text_width(t, PANEL_FONT) for t in titles)]) + 0.25
    width = max(bar_left + COLOUR_BAR_ROOM, MIN_WIDTH)
    room = width - 2 * MARGIN
    text = _words(comparison, sentences, weights)
    title = text.title(room, TITLE_FONT)
    caption = text.caption((room, TITLE_FONT), room, CAPTION_FONT)
    top_margin = MARGIN + len(title) * title_line(TITLE_FONT)
    panels_height = PANEL * len(heads)
    below = CAPTION_GAP + caption_height(caption, CAPTION_FONT) + MARGIN
    height = round(top_margin + panels_height + below, 2)
    figure = new_figure(width, height)
    figure.suptitle(
        "\n".join(title), fontsize=TITLE_FONT, linespacing=1.5, parse_math=False,
        y=1 - MARGIN / height, va="top",
    )  # fmt: skip
    images = []
    for index, change in enumerate(heads):
        cells_top = top_margin + PANEL * index + PANEL_TITLE
        axes = place_axes(figure, LABELS, cells_top, panels_width, CELLS_HEIGHT)
        images.append(_panel(axes, change, slots, titles[index]))
    if images:
        # As tall as the panels' cells, from the first panel's top to the last one's bottom.
        span = PANEL * (len(heads) - 1) + CELLS_HEIGHT
        bar = place_axes(figure, bar_left, top_margin + PANEL_TITLE, 0.18, span)
        colour_bar = figure.colorbar(images[0], cax=bar)
        label = "attention weight (0–1)" if span >= 2.2 else "weight (0–1)"
        colour_bar.set_label(label, fontsize=LABEL_FONT)
        colour_bar.ax.tick_params(labelsize=LABEL_FONT)
    draw_caption(figure, caption, MARGIN, top_margin + panels_height + CAPTION_GAP, CAPTION_FONT)
    return figure


def _words(
    comparison: Comparison, sentences: tuple[str, str] | None, weights: WeightsOrigin | None
) -> FigureText:
    """The title and caption: what is compared and whose weights they are; both sentences,
    what TV is, what a toy model's answer is and, for a trained model, the caution
    (attnviz.lesson.caveats)."""
    name = printable(comparison.focus)
    about = f"Where {name!r} looks in sentences A and B: the heads that changed most"
    notes = (
        [] if sentences is None else [f"A: {printable(sentences[0])}\nB: {printable(sentences[1])}"]
    )
    notes.append(
        "TV = ½·(Σ over shared words |w_A − w_B| + |w_A(only A) − w_B(only B)|); grey: a word "
        "that sentence lacks."
    )
    origin: tuple[str, ...] = ()
    if weights is not None:
        origin = (f"weights: {printable(weights.describe(with_layer=False))}",)
        notes += readout_sentences(weights, comparison.n_heads)
        if weights.model is not None and not weights.is_random:
            notes.append(short_attention_caveat())
    return FigureText(partial(truncate_words, about), about=origin, notes=tuple(notes))


def _panel(
    axes: Axes,
    change: HeadChange,
    slots: Sequence[Slot],
    title: str,
) -> AxesImage:
    """One head titled ``title``: its two rows as cells on a 0–1 colour scale, the weights
    printed."""
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    cells = np.full((2, len(slots)), np.nan)
    for column, slot in enumerate(slots):
        if slot.a is not None:
            cells[0, column] = change.row_a[slot.a]
        if slot.b is not None:
            cells[1, column] = change.row_b[slot.b]
    image = axes.imshow(np.ma.masked_invalid(cells), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    axes.set_facecolor("#eeeeee")
    for (row, column), value in np.ndenumerate(cells):
        if not np.isnan(value):
            axes.text(column, row, format_number(float(value), 2), ha="center", va="center",
                      fontsize=LABEL_FONT, color=text_colour(cmap(float(value))))  # fmt: skip
    axes.set_yticks([0, 1], ["A", "B"], fontsize=LABEL_FONT)
    axes.set_xticks(range(len(slots)), [fit_label(slot.label, 11) for slot in slots])
    axes.tick_params(axis="x", length=0, labelsize=LABEL_FONT)
    axes.set_title(title, fontsize=PANEL_FONT, loc="left", parse_math=False)
    return image


def _panel_title(change: HeadChange, labels_a: Sequence[str], labels_b: Sequence[str]) -> str:
    """ "Layer 2, head 1 · TV 1.00 · moves from 'animal' to 'street'": the head, its TV and,
    when the focus word's top word changes, from which word to which."""
    move = (
        f" · moves from {labels_a[change.top_a]!r} to {labels_b[change.top_b]!r}"
        if change.moves
        else ""
    )
    return f"Layer {change.layer}, head {change.head} · TV {format_number(change.tv, 2)}{move}"
