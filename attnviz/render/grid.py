"""Every layer and head of a model in one picture: a small heatmap per (layer, head), and a
panel naming the word the focus word looks at most in each head.

Panels are placed in inches rather than by a layout engine: with 72 panels the positions are
then exact, fast and the same on every run. matplotlib is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from attnviz.analysis.heads import focus_rows
from attnviz.provenance import WeightsKind
from attnviz.render.figures import (
    CHAR_WIDTH,
    COLOUR_BAR,
    TITLE_FONT,
    TITLE_LINE,
    AxisLabels,
    axis_labels,
    check_colormap,
    frame_row,
    hatch_masked,
    hidden_taking_weight,
    image_format_of,
    label_words,
    masked_shown,
    new_figure,
    pack_phrases,
    pieces_text,
    row_sums_phrase,
    save_figure,
    short_label,
    shown_row_sums,
    text_colour,
    text_inches,
    truncate,
    weights_phrase,
)
from attnviz.render.labels import plural
from attnviz.selection import Selection
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

MAX_LAYERS_WIDTH = 20.0  # inches: a row of 12 small panels with its labels and colour bar
MIN_SMALL_PANEL = 1.1  # inches, side of one (layer, head) panel
MAX_SMALL_PANEL = 1.6
PANEL_GAP = 0.08  # inches between neighbouring small panels
MAX_LAYERS_LABEL_TOKENS = 20  # beyond this the words along the panels' edges are not labelled
SMALL_TICK_FONT = (6.0, 8.0)  # points, smallest and largest word label on a small panel
ROW_LABEL = 0.3  # inches left of the word labels for "Layer 1"
HEAD_TITLE = 0.25  # inches above the first row for "Head 1"
SECTION_GAP = 0.1  # inches between the grid's word labels and the focus panel's title
SUMMARY_ROW = 0.32  # inches per layer in the "where the focus word looks" panel
SUMMARY_FONT = 8.0  # points, the word printed in each of its cells
SUMMARY_LABEL_FONT = 8.0  # points, "Layer 1" and "Head 1" along its edges
SUMMARY_TITLE_FONT = 12.0  # points, bold: 'Where "it" looks, every layer and head'
SUMMARY_CAPTION_FONT = 9.0  # points, what a cell shows, under the panel


def layers_title_lines(
    layers: Sequence[AttentionTrace], selection: Selection, width: float
) -> list[str]:
    """The title of the layers × heads figure, ``width`` inches wide: the sentence (one line),
    what the panels show as ``selection`` shows them, and the model without the ", layer k of
    L" of each layer's source."""
    max_chars = int(width * 72 / (CHAR_WIDTH * TITLE_FONT))
    first = layers[0]
    sentence = truncate(f"“{pieces_text(first)}”", max_chars)
    origins = {layer.provenance.weights for layer in layers}
    if len(origins) > 1 and all(origin.kind is WeightsKind.RANDOM for origin in origins):
        origin = "random weights, not a trained model"  # a different seed per layer
    else:
        origin = weights_phrase(first.provenance.weights, with_layer=False)
    phrases = [
        f"attention weights of {plural(len(layers), 'layer')} × {plural(first.n_heads, 'head')}",
        "each panel: query words (rows) × key words (columns)",
        row_sums_phrase(
            np.stack([shown_row_sums(layer.weights, selection) for layer in layers]),
            hidden_taking_weight(
                np.stack([layer.weights for layer in layers]), selection, first.tokens
            ),
        ),
        *(["hatched: masked, weight 0"] if masked_shown(first.masked, selection) else []),
        origin,
    ]
    return [sentence, *pack_phrases(phrases, max_chars)]


@dataclass(frozen=True)
class LayersLayout:
    """Sizes of the layers × heads picture, in inches and points."""

    n_layers: int  # rows of small panels
    n_heads: int  # columns of small panels
    n_tokens: int
    panel: float  # inches, side of one small panel
    tick_font: float  # points, word labels along the outer panels
    labelled: bool  # the words are labelled (few enough tokens); else only the focus word
    x: AxisLabels  # key words under the bottom row
    y: AxisLabels  # query words left of the first column
    left: float  # inches left of the first column: "Layer 1" and the word labels

    @property
    def grid_width(self) -> float:
        return self.n_heads * self.panel + (self.n_heads - 1) * PANEL_GAP

    @property
    def grid_height(self) -> float:
        return self.n_layers * self.panel + (self.n_layers - 1) * PANEL_GAP

    @property
    def grid_top(self) -> float:
        """Inches from the top of the picture to the first row, without the title."""
        return 0.15 + HEAD_TITLE

    @property
    def x_depth(self) -> float:
        """Inches the bottom row's word labels take, or a small margin when there are none."""
        return self.x.depth + 0.1 if self.labelled else 0.1

    @property
    def width(self) -> float:
        return round(self.left + self.grid_width + COLOUR_BAR, 2)

    @property
    def summary_room(self) -> float:
        """Inches a centred line above or below the focus panel may take: the panel's width
        and as much of the margins either side as the narrower one allows."""
        return self.grid_width + 2 * min(self.left, COLOUR_BAR) - 0.3

    def height(self, title_lines: int, summary: SummaryText | None) -> float:
        """Inches: title, the grid with its labels, and the focus panel when there is one."""
        height = title_lines * TITLE_LINE + self.grid_top + self.grid_height + self.x_depth
        if summary is not None:
            height += SECTION_GAP + summary.title_height + self.n_layers * SUMMARY_ROW
            height += summary.foot_height
        return round(height + 0.1, 2)


@dataclass(frozen=True)
class SummaryText:
    """The focus panel's title and caption, broken into lines that fit the panel's width."""

    title: list[str]
    caption: list[str]

    @property
    def title_height(self) -> float:
        return len(self.title) * 1.3 * SUMMARY_TITLE_FONT / 72 + 0.12

    @property
    def foot_height(self) -> float:
        """Inches under the panel: "Head 1" labels, then the caption lines."""
        return 0.3 + len(self.caption) * 1.3 * SUMMARY_CAPTION_FONT / 72 + 0.1


def summary_text(label: str, room: float) -> SummaryText:
    """Title and caption of the focus panel for the word ``label``, in lines of at most
    ``room`` inches."""
    word = printable(label)
    bold = 1.1  # bold glyphs are about a tenth wider
    title_chars = int(room / text_inches(1, bold * SUMMARY_TITLE_FONT))
    caption_chars = int(room / text_inches(1, SUMMARY_CAPTION_FONT))
    title = [f'Where "{word}" looks,', "every layer and head"]
    caption = [
        f'each cell: the word "{word}" attends to most in that head;',
        "its colour: that attention weight",
    ]
    return SummaryText(
        title=pack_phrases(title, title_chars, separator=" "),
        caption=pack_phrases(caption, caption_chars, separator=" "),
    )


def plan_layers_layout(tokens: Sequence[str], n_layers: int, n_heads: int) -> LayersLayout:
    """Small square panels, MIN_SMALL_PANEL to MAX_SMALL_PANEL inches, as large as a row of
    ``n_heads`` allows within MAX_LAYERS_WIDTH; word labels follow the cell size down to a
    readable floor, then every k-th word; beyond MAX_LAYERS_LABEL_TOKENS words, none."""
    n_tokens = len(tokens)
    longest = max(len(short_label(token)) for token in tokens)
    layer_labels = text_inches(len(f"Layer {n_layers}"), SUMMARY_LABEL_FONT) + 0.15

    def left_of(y_depth: float) -> float:
        # The focus panel's "Layer 1" labels share this margin with the grid's.
        return 0.1 + max(ROW_LABEL + y_depth, layer_labels)

    widest = left_of(text_inches(longest, SMALL_TICK_FONT[1]) + 0.1)
    room = MAX_LAYERS_WIDTH - widest - COLOUR_BAR - (n_heads - 1) * PANEL_GAP
    panel = min(max(room / n_heads, MIN_SMALL_PANEL), MAX_SMALL_PANEL)
    cell = panel / n_tokens
    font = min(max(0.7 * cell * 72, SMALL_TICK_FONT[0]), SMALL_TICK_FONT[1])
    y = axis_labels(longest, n_tokens, cell, font, x=False)
    return LayersLayout(
        n_layers=n_layers,
        n_heads=n_heads,
        n_tokens=n_tokens,
        panel=panel,
        tick_font=font,
        labelled=n_tokens <= MAX_LAYERS_LABEL_TOKENS,
        x=axis_labels(longest, n_tokens, cell, font, x=True),
        y=y,
        left=left_of(y.depth),
    )


def focus_targets(
    layers: Sequence[AttentionTrace], selection: Selection
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Where the focus word looks hardest in each head of each layer.

    The focus word's shown weights [L, h, columns] -> (argmax, max): [L, h] each, the shown key
    word the focus word gives its largest weight to, and that weight.
    """
    rows = focus_rows(layers, selection)
    return rows.argmax(axis=2), rows.max(axis=2).astype(np.float64)


def _check_layers(layers: Sequence[AttentionTrace]) -> None:
    """Raise ValueError (a bug, not a user error) unless the layers share tokens and heads."""
    if not layers:
        raise ValueError("layers is empty; pass at least one layer's trace")
    first = layers[0]
    for layer in layers[1:]:
        if layer.tokens != first.tokens or layer.n_heads != first.n_heads:
            raise ValueError("every layer must have the same tokens and number of heads")


def build_layers_figure(
    layers: Sequence[AttentionTrace], selection: Selection, *, cmap: str = "viridis"
) -> Figure:
    """A small heatmap per (layer, head): rows of panels are layers, columns heads, each
    panel weights[head] as the selection shows it; a shared 0–1 colour bar; and, when the
    selection follows a word, a [layers × heads] panel of the largest weight the focus word
    gives, naming the word it goes to. Every layer is seen through the same selection.
    """
    _check_layers(layers)
    first, focus = layers[0], selection.focus
    layout = plan_layers_layout(selection.row_words, len(layers), first.n_heads)
    title = layers_title_lines(layers, selection, layout.width)
    summary = summary_text(focus.label, layout.summary_room) if focus is not None else None
    width, height = layout.width, layout.height(len(title), summary)
    figure = new_figure(width, height)

    def place(left: float, top: float, box_width: float, box_height: float) -> Axes:
        """Axes at ``left``, ``top`` inches from the picture's top-left corner."""
        bottom = height - top - box_height
        return figure.add_axes(
            (left / width, bottom / height, box_width / width, box_height / height)
        )

    grid_top = len(title) * TITLE_LINE + layout.grid_top
    labels = [short_label(word) for word in selection.row_words]
    focus_row = selection.focus_row
    masked = selection.masked_pairs(first.masked) if first.mask is not None else None
    images: list[AxesImage] = []
    for layer_index, layer in enumerate(layers):
        for head in range(layout.n_heads):
            axes = place(
                layout.left + head * (layout.panel + PANEL_GAP),
                grid_top + layer_index * (layout.panel + PANEL_GAP),
                layout.panel,
                layout.panel,
            )
            weights = selection.pairs(layer.weights[head], total=True)
            image = _draw_small_panel(
                axes, weights, labels, layout, cmap, focus_row, layer_index, head
            )
            if masked is not None:
                hatch_masked(axes, masked)
            images.append(image)
    colour_axes = place(layout.left + layout.grid_width + 0.2, grid_top, 0.15, layout.grid_height)
    colour_bar = figure.colorbar(images[0], cax=colour_axes)
    colour_bar.set_label("attention weight", fontsize=10)
    if summary is not None:
        summary_top = grid_top + layout.grid_height + layout.x_depth + SECTION_GAP
        summary_top += summary.title_height
        axes = place(layout.left, summary_top, layout.grid_width, len(layers) * SUMMARY_ROW)
        _draw_layers_focus(axes, focus_targets(layers, selection), summary, labels, layout, cmap)
    figure.suptitle(
        "\n".join(title),
        fontsize=TITLE_FONT,
        linespacing=1.5,
        parse_math=False,
        y=1 - 0.1 / height,
        va="top",
    )
    return figure


def _draw_small_panel(
    axes: Axes,
    weights: NDArray[np.float64],
    labels: Sequence[str],
    layout: LayersLayout,
    cmap: str,
    focus_row: int | None,
    layer: int,
    head: int,
) -> AxesImage:
    """One head's weights [n, n] in one layer; only the outer panels carry labels: "Head k" on
    the first row, "Layer k" and the query words left of the first column, key words under the
    last row."""
    image = axes.imshow(weights, cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
    axes.set_xticks([])
    axes.set_yticks([])
    if layer == 0:
        axes.set_title(f"Head {head + 1}", fontsize=8, fontweight="bold", pad=3)
    if head == 0:
        axes.set_ylabel(f"Layer {layer + 1}", fontsize=9, fontweight="bold")
        if layout.labelled:
            label_words(axes, labels, layout.y, layout.tick_font, x=False, keep=focus_row)
        elif focus_row is not None:
            # Too many words to label: only the focus word, so the frame can be read.
            only_focus = AxisLabels(step=layout.n_tokens + 1, rotate=False, depth=layout.y.depth)
            label_words(axes, labels, only_focus, layout.tick_font, x=False, keep=focus_row)
    if layer == layout.n_layers - 1 and layout.labelled:
        label_words(axes, labels, layout.x, layout.tick_font, x=True)
    if focus_row is not None:
        frame_row(axes, focus_row, layout.n_tokens, widths=(1.4, 0.6))
    return image


def _draw_layers_focus(
    axes: Axes,
    targets_and_weights: tuple[NDArray[np.intp], NDArray[np.float64]],
    text: SummaryText,
    labels: Sequence[str],
    layout: LayersLayout,
    cmap: str,
) -> None:
    """[L, h] cells: the largest weight the focus word gives in that head, and the word it
    gives it to, printed in black or white, whichever reads better on the cell."""
    targets, weights = targets_and_weights
    image = axes.imshow(
        weights, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest"
    )
    axes.set_title(
        "\n".join(text.title),
        fontsize=SUMMARY_TITLE_FONT,
        fontweight="bold",
        pad=6,
        parse_math=False,
    )
    axes.set_yticks(
        range(layout.n_layers),
        labels=[f"Layer {k + 1}" for k in range(layout.n_layers)],
        fontsize=SUMMARY_LABEL_FONT,
    )
    axes.set_xticks(
        range(layout.n_heads),
        labels=[f"Head {k + 1}" for k in range(layout.n_heads)],
        fontsize=SUMMARY_LABEL_FONT,
    )
    axes.tick_params(length=2, pad=2)
    axes.set_xlabel("\n".join(text.caption), fontsize=SUMMARY_CAPTION_FONT, parse_math=False)
    axes.set_xticks(np.arange(layout.n_heads + 1) - 0.5, minor=True)
    axes.set_yticks(np.arange(layout.n_layers + 1) - 0.5, minor=True)
    axes.grid(which="minor", color="white", linewidth=0.8)
    axes.tick_params(which="minor", length=0)
    cell_width = layout.grid_width / layout.n_heads
    max_chars = max(3, int((cell_width - 0.1) / text_inches(1, SUMMARY_FONT)))
    colormap = image.get_cmap()
    for (layer, head), weight in np.ndenumerate(weights):
        axes.text(
            head,
            layer,
            truncate(labels[targets[layer, head]], max_chars),
            ha="center",
            va="center",
            fontsize=SUMMARY_FONT,
            color=text_colour(colormap(float(weight))),
            parse_math=False,
        )


def save_layers_heatmap(
    layers: Sequence[AttentionTrace],
    selection: Selection,
    path: Path,
    *,
    cmap: str = "viridis",
) -> None:
    """Write every layer's heads as one layers × heads grid to ``path`` (.png, .svg or .pdf).

    Same rules as save_heatmap: the format the extension names, written atomically, no dates,
    a fixed SVG id salt, so the same layers give the same bytes.
    """
    image_format_of(path)
    check_colormap(cmap)
    save_figure(build_layers_figure(layers, selection, cmap=cmap), path)
