"""One head's heatmap panel, as the heads' picture (heatmap.py) and the one-head picture
(single_head.py) both draw it: the weights as square cells on a shared colour scale, the
words along its edges, each weight printed where it fits, thin lines between the cells.

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from attnviz.render.figures.cells import draw_values
from attnviz.render.figures.colour import ColourScale
from attnviz.render.figures.heatmap_layout import Layout
from attnviz.render.figures.words import label_words, short_label, word_labels
from attnviz.selection import Selection

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.image import AxesImage

MAX_GRID_LINE_TOKENS = 30  # thin lines between cells up to this many words


@dataclass(frozen=True)
class Panels:
    """What every panel of one picture is drawn with."""

    layout: Layout
    row_labels: list[str]  # the query (target) words, left of each panel
    column_labels: list[str]  # the key (source) words, under each panel
    cmap: str
    colours: ColourScale
    masked: NDArray[np.bool_] | None  # the masked pairs as drawn: [rows, columns], or no mask
    focus_row: int | None  # the focus word's row, or None


def panel_labels(selection: Selection) -> tuple[list[str], list[str]]:
    """The labels of a panel's rows (the query or target words) and of its columns (the key or
    source words), as the terminal's tables name them, cut to fit a tick label."""
    return (
        [short_label(word) for word in word_labels(selection.row_words)],
        [short_label(word) for word in word_labels(selection.column_words)],
    )


def draw_head(axes: Axes, weights: NDArray[np.float64], name: str, panels: Panels) -> AxesImage:
    """One panel titled ``name`` of weights [n_query, n_key]: rows are query words, columns key
    words, coloured as ``panels.colours`` says, each value printed when it fits; the focus
    word's label in bold."""
    layout = panels.layout
    image = show_weights(axes, weights, panels)
    axes.set_title(name, fontsize=layout.head_font, fontweight="bold", pad=4)
    label_words(axes, panels.column_labels, layout.x, layout.tick_font, x=True)
    label_words(axes, panels.row_labels, layout.y, layout.tick_font, x=False, keep=panels.focus_row)
    axes.set_xlabel(layout.x_title, fontsize=layout.axis_font)
    draw_cell_lines(axes, weights.shape, layout)
    if layout.values.shown:
        draw_values(axes, weights, cell_colours(image), layout.values.font, layout.values.compact)
    return image


def show_weights(axes: Axes, weights: NDArray[np.float64], panels: Panels) -> AxesImage:
    """Weights [rows, columns] as coloured cells, on the picture's colour scale."""
    colours = panels.colours
    return axes.imshow(
        colours.colours_of(weights),
        cmap=panels.cmap,
        vmin=0.0,
        vmax=colours.top,
        interpolation="nearest",
        aspect="auto",  # the axes are already the cells' shape
    )


def cell_colours(image: AxesImage) -> NDArray[np.float64]:
    """Each cell's RGBA as the image draws it: [rows, columns, 4]."""
    return np.asarray(image.to_rgba(np.asarray(image.get_array())), dtype=np.float64)


def draw_cell_lines(axes: Axes, shape: tuple[int, ...], layout: Layout) -> None:
    """Thin white lines between the cells of a [rows, columns] panel while they are big enough.

    One LineCollection per panel rather than a grid on minor ticks: a tick is two lines and two
    texts of its own, and 30 words would make 62 of them per panel.
    """
    from matplotlib.collections import LineCollection

    if max(layout.n_tokens, layout.n_keys) > MAX_GRID_LINE_TOKENS:
        return
    n_rows, n_columns = shape
    top, bottom, left, right = -0.5, n_rows - 0.5, -0.5, n_columns - 0.5
    columns = [((x, top), (x, bottom)) for x in np.arange(n_columns + 1) - 0.5]
    rows = [((left, y), (right, y)) for y in np.arange(n_rows + 1) - 0.5]
    # Projecting caps and zorder 1.5 are those of matplotlib's grid lines: the same pixels.
    lines = LineCollection(
        [*columns, *rows], colors="white", linewidths=0.6, capstyle="projecting", zorder=1.5
    )
    axes.add_collection(lines, autolim=False)
