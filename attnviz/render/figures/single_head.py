"""One head as a picture of its own: a 16:9 landscape of 1920 × 1080 pixels, for a projector.
On the left the head's heatmap with its colour bar; on the right the focus word's weights as a
bar per word (as long as the weight, coloured as the heatmap colours it) and the caption: what
the rows sum to, the sizes, where the weights came from, what a toy model's answer is and the
caution about reading attention. The title keeps two lines: the sentence, and what is drawn.

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from attnviz.render.figures.captions import draw_caption
from attnviz.render.figures.cells import frame_row, hatch_masked
from attnviz.render.figures.colour import colour_scale
from attnviz.render.figures.head_panel import Panels, draw_head, panel_labels
from attnviz.render.figures.heatmap_text import heatmap_text
from attnviz.render.figures.measures import Drawn
from attnviz.render.figures.saving import new_figure, place_axes
from attnviz.render.figures.settings import draws
from attnviz.render.figures.single_head_layout import (
    AXIS_FONT,
    COLOUR_BAR,
    HEIGHT,
    MARGIN,
    TITLE_FONT,
    TITLE_SPACING,
    WIDTH,
    Bars,
    Heatmap,
    plan_column,
    plan_heatmap,
)
from attnviz.render.figures.words import any_continued, label_positions, label_words
from attnviz.render.options import Scale
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

MASKED_GREY = "#bdbdbd"  # a masked key's bar, hatched as the heatmap hatches its cell


@draws
def build_single_figure(
    trace: AttentionTrace,
    selection: Selection,
    drawn: Drawn,
    *,
    cmap: str = "viridis",
    scale: Scale | None = None,
) -> Figure:
    """The one panel of ``drawn`` ([1, n_q, n_k], as the selection shows it) beside the focus
    word's row of it as bars, with the title and caption of render/figures/heatmap_text.py."""
    row_labels, column_labels = panel_labels(selection)
    heatmap = plan_heatmap(row_labels, column_labels, cross=trace.is_cross)
    layout, focus_row = heatmap.panel, selection.focus_row
    continued = any_continued(
        row_labels, label_positions(len(row_labels), layout.y.step, focus_row)
    ) or any_continued(column_labels, label_positions(len(column_labels), layout.x.step))
    text = heatmap_text(trace, selection, continued=continued, drawn=drawn)
    focus = selection.focus
    bars_name = None if focus_row is None else drawn.focus_title.format(word=row_labels[focus_row])
    column = plan_column(heatmap, text, column_labels, bars_name=bars_name)
    figure = new_figure(WIDTH, HEIGHT)
    weights = selection.pairs(drawn.matrices[0], total=True)
    masked = selection.masked_pairs(trace.masked) if trace.mask is not None else None
    panels = Panels(
        layout,
        row_labels,
        column_labels,
        cmap,
        colour_scale(scale, weights[np.newaxis], (drawn.noun, drawn.short)),
        masked,
        focus_row,
    )
    axes = place_axes(figure, heatmap.left, heatmap.top, layout.panel_width, layout.panel_height)
    image = draw_head(axes, weights, drawn.titles[0], panels)
    axes.set_ylabel(layout.y_title, fontsize=AXIS_FONT)
    if focus_row is not None:
        frame_row(axes, focus_row, layout.n_keys, widths=(3.5, 1.4))
    if masked is not None:  # only self-attention has masks: [n, n]
        hatch_masked(axes, masked)
    if column.bars is not None and bars_name is not None and focus is not None:
        # The focus word is a column too, in bold, unless the columns are another sentence.
        keep = None if trace.is_cross else selection.column_of(focus.index)
        row = selection.focus_weights(drawn.matrices)[0]
        _draw_bars(figure, row, column.bars, bars_name, keep, panels)
    _draw_colour_bar(figure, image, panels, heatmap)  # the last axes, as in every heatmap
    draw_caption(figure, column.caption, column.left, column.caption_top, column.caption_font)
    figure.suptitle(
        "\n".join(text.title(WIDTH - 2 * MARGIN, TITLE_FONT)),
        fontsize=TITLE_FONT,
        linespacing=TITLE_SPACING,
        parse_math=False,
        y=1 - MARGIN / HEIGHT,
        va="top",
    )
    return figure


def _draw_colour_bar(figure: Figure, image: AxesImage, panels: Panels, heatmap: Heatmap) -> None:
    """The colour bar right of the heatmap, as tall as it, saying what a colour means."""
    height = heatmap.panel.panel_height
    bar = place_axes(figure, heatmap.colour_bar_left, heatmap.top, COLOUR_BAR, height)
    colour_bar = figure.colorbar(image, cax=bar)
    colour_bar.set_label(
        panels.colours.label(height, AXIS_FONT), fontsize=AXIS_FONT, parse_math=False
    )
    colour_bar.ax.tick_params(labelsize=AXIS_FONT)


def _draw_bars(
    figure: Figure,
    weights: NDArray[np.float64],
    bars: Bars,
    name: str,
    keep: int | None,
    panels: Panels,
) -> Axes:
    """The focus word's row ``weights`` [columns] as a bar per key word, top to bottom in the
    sentence's order, each as long as its weight on the colour bar's scale and coloured as the
    heatmap colours it, the weight printed at its end when every word is labelled; a masked
    key grey and hatched. Titled ``name``; the word at ``keep`` labelled in bold."""
    from matplotlib import colormaps

    colours = panels.colours
    axes = place_axes(figure, bars.left, bars.top, bars.width, bars.height)
    palette = colormaps[panels.cmap]
    shown = colours.colours_of(weights[np.newaxis])[0] / colours.top
    positions = np.arange(len(weights))
    axes.barh(positions, weights, height=0.72, color=palette(np.clip(shown, 0.0, 1.0)))
    focus_row = panels.focus_row
    masked: set[int] = set()
    if panels.masked is not None and focus_row is not None:
        masked = {int(key) for key in np.flatnonzero(panels.masked[focus_row])}
        axes.barh(sorted(masked), colours.top, height=0.72, color=MASKED_GREY, hatch="///",
                  edgecolor="#7f7f7f", linewidth=0.0)  # fmt: skip
    axes.set_xlim(0.0, colours.top)
    # Only the ticks within the scale: matplotlib lists one beyond it as a label too.
    axes.set_xticks([tick for tick in axes.get_xticks() if 0.0 <= tick <= colours.top])
    axes.set_ylim(len(weights) - 0.5, -0.5)  # the first word at the top, as in the heatmap
    label_words(axes, panels.column_labels, bars.labels, bars.font, x=False, keep=keep)
    if bars.values:
        # A masked key's weight is 0 by the mask, not by the scores: its bar is hatched, not
        # numbered, as its cell is.
        for position, weight in enumerate(weights):
            if position in masked:
                continue
            axes.text(
                float(weight), position, f" {weight:.2f}", ha="left", va="center",
                fontsize=bars.font, parse_math=False,
            )  # fmt: skip
    # The name starts where the column does, left of the word labels.
    axes.set_title(
        name, fontsize=bars.name_font, fontweight="bold", pad=6, parse_math=False,
        x=-bars.labels.depth / bars.width, ha="left",
    )  # fmt: skip
    axes.tick_params(axis="x", labelsize=AXIS_FONT, length=3, pad=2)
    for spine in ("top", "right"):
        axes.spines[spine].set_visible(False)
    return axes
