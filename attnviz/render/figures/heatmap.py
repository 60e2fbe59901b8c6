"""Attention weights as heatmap images: one panel per head, and where the focus word looks.

Each panel is one head's ``weights`` matrix, softmax(Q·Kᵀ/√d_k): row i is query word i, column j
is key word j, and every row sums to 1 (less as drawn when --hide-special leaves out [CLS] and
[SEP], and the caption then says so). For cross-attention the matrix is rectangular: rows are
the target words, columns the source words, cells still square. All panels share one colour
scale fixed to 0–1, so the same colour means the same weight in every head and in every picture.
The title keeps two lines; what else the picture must say is in a caption under it all
(render/figures/heatmap_text.py). One head is a picture of its own: render/figures/single_head.py.

Drawn with matplotlib's object API (``Figure`` + the Agg canvas): no pyplot, no window, no
global figure state. matplotlib is imported inside the functions, so importing this module (and
running ``attnviz explain``) never loads it. Every layer and head at once: render/figures/grid.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from attnviz.errors import AttnvizError, option
from attnviz.render.figures.captions import caption_height, draw_caption
from attnviz.render.figures.cells import draw_values, frame_row, hatch_masked
from attnviz.render.figures.colour import check_colormap, colour_scale
from attnviz.render.figures.fonts import MIN_FONT, title_line
from attnviz.render.figures.head_panel import (
    Panels,
    cell_colours,
    draw_cell_lines,
    draw_head,
    panel_labels,
    show_weights,
)
from attnviz.render.figures.heatmap_layout import (
    MARGIN,
    PANEL_GAP,
    Layout,
    head_title_depth,
    plan_layout,
)
from attnviz.render.figures.heatmap_text import heatmap_text
from attnviz.render.figures.measures import Drawn, drawn_measure
from attnviz.render.figures.saving import image_format_of, new_figure, place_axes, save_figure
from attnviz.render.figures.settings import draws
from attnviz.render.figures.single_head import build_single_figure
from attnviz.render.figures.titles import FigureText
from attnviz.render.figures.words import any_continued, label_positions, label_words
from attnviz.render.options import Measure, Scale
from attnviz.results import Analyses
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

#: Most heads drawn in one picture: 16 rows of 4. 64 heads of 512 words take some 13 s; the
#: 2048 heads that d_model 2048 allows would take minutes and gigabytes.
MAX_HEAD_PANELS = 64
CAPTION_FONT = 11.0  # points, the caption under the panels
CAPTION_GAP = 0.2  # inches between the last panel's axis title and the caption


@draws
def build_figure(
    trace: AttentionTrace,
    selection: Selection,
    *,
    cmap: str = "viridis",
    scale: Scale | None = None,
    measure: Measure = Measure.weights,
    run: Analyses | None = None,
) -> Figure:
    """One heatmap per head of the selection, a shared colour bar and, when the selection
    follows a word, a panel of that word's weights in every one of those heads; a title of at
    most two lines and a caption under it all. One panel is a picture of its own, a 16:9
    landscape (render/figures/single_head.py).

    ``measure`` picks what the panels show (render/figures/measures.py): the weights; each head's
    contribution shares; or one panel, the rollout through ``run``'s layers up to the trace
    (``run``: the run's layers and what the analyses found of them, attnviz.analysis.analyses).

    trace.weights: [h, n, n] -> panels of [rows, columns] as the selection shows them; the
    focus panel is the focus word's shown row in each head: [len(heads), columns]. For
    cross-attention the weights are [h, n_target, n_source]: rows are the target words,
    columns the source words, and the focus word (a target word) looks at source words.
    ``scale`` picks what the colours span (None: 0–1 for up to 16 words, else the largest
    weight shown).

    Every panel is placed in inches computed from the sizes of its words (plan_layout), not by
    a layout engine: matplotlib's constrained layout measured every label of the figure by
    drawing it, about half the time of an 8-head picture.
    """
    heads = selection.heads
    _check_heads(heads)
    drawn = drawn_measure(measure, trace, heads, run)
    if len(drawn.titles) == 1:
        return build_single_figure(trace, selection, drawn, cmap=cmap, scale=scale)
    n_panels = len(drawn.titles)
    row_labels, column_labels = panel_labels(selection)
    layout = plan_layout(
        row_labels,
        n_panels,
        n_panels if selection.focus else 0,
        key_tokens=column_labels if trace.is_cross else None,
    )
    continued = any_continued(
        row_labels, label_positions(len(row_labels), layout.y.step, selection.focus_row)
    ) or any_continued(column_labels, label_positions(len(column_labels), layout.x.step))
    title, caption = _fitted(
        heatmap_text(trace, selection, continued=continued, drawn=drawn), layout
    )
    panels_height = layout.height(len(title))
    height = round(panels_height + CAPTION_GAP + caption_height(caption, CAPTION_FONT), 2)
    figure = new_figure(layout.width, height)
    weights = [selection.pairs(matrix, total=True) for matrix in drawn.matrices]
    panels = Panels(
        layout,
        row_labels,
        column_labels,
        cmap,
        colour_scale(scale, np.stack(weights), (drawn.noun, drawn.short)),
        selection.masked_pairs(trace.masked) if trace.mask is not None else None,
        selection.focus_row,
    )
    grid_top = MARGIN + len(title) * title_line(layout.title_font)
    images = _draw_head_panels(figure, weights, drawn.titles, panels, grid_top)
    focus, focus_row = selection.focus, selection.focus_row
    if focus is not None and focus_row is not None:
        # The focus word is a column too, in bold, unless the columns are another sentence.
        keep = None if trace.is_cross else selection.column_of(focus.index)
        focus_weights = selection.focus_weights(drawn.matrices)
        _draw_focus_panel(figure, focus_weights, drawn, (focus_row, keep), panels, grid_top)
    _draw_colour_bar(figure, images[0], panels, grid_top)
    figure.suptitle(
        "\n".join(title),
        fontsize=layout.title_font,
        linespacing=1.5,
        parse_math=False,
        y=1 - MARGIN / height,
        va="top",
    )
    draw_caption(figure, caption, MARGIN, panels_height - MARGIN + CAPTION_GAP, CAPTION_FONT)
    return figure


def _fitted(text: FigureText, layout: Layout) -> tuple[list[str], list[str]]:
    """``text``'s title and caption lines, fitted to the picture's width between margins."""
    room = layout.width - 2 * MARGIN
    title = text.title(room, layout.title_font)
    return title, text.caption((room, layout.title_font), room, CAPTION_FONT)


def _check_heads(heads: Sequence[int]) -> None:
    """Raise unless there are heads to draw, and few enough for one picture."""
    if not heads:
        raise ValueError("heads is empty; pass at least one head index")
    if len(heads) > MAX_HEAD_PANELS:
        raise AttnvizError(
            f"{len(heads)} heads would make {len(heads)} panels in one picture; it holds at "
            f"most {MAX_HEAD_PANELS}. Draw one head with {option('head', metavar='N')}, or use "
            f"fewer {option('heads')}."
        )


def _draw_head_panels(
    figure: Figure,
    weights: Sequence[NDArray[np.float64]],
    titles: Sequence[str],
    panels: Panels,
    grid_top: float,
) -> list[AxesImage]:
    """A panel per matrix of ``weights`` [rows, columns] titled by ``titles`` ("Head 1"), up to
    four in a row, under the title's ``grid_top`` inches; the focus word's row framed, masked
    cells hatched."""
    layout = panels.layout
    first_panel = grid_top + head_title_depth(layout.head_font)
    images = []
    for position, (name, head_weights) in enumerate(zip(titles, weights, strict=True)):
        row, column = divmod(position, layout.columns)
        axes = place_axes(
            figure,
            MARGIN + column * layout.column_width + layout.left,
            first_panel + row * layout.row_height,
            layout.panel_width,
            layout.panel_height,
        )
        images.append(draw_head(axes, head_weights, name, panels))
        if panels.focus_row is not None:
            frame_row(axes, panels.focus_row, layout.n_keys)
        if panels.masked is not None:  # only self-attention has masks: [n, n]
            hatch_masked(axes, panels.masked)
        if column == 0:
            axes.set_ylabel(layout.y_title, fontsize=layout.axis_font)
    return images


def _draw_focus_panel(
    figure: Figure,
    weights: NDArray[np.float64],
    drawn: Drawn,
    focus: tuple[int, int | None],
    panels: Panels,
    grid_top: float,
) -> None:
    """Under the head panels, the focus word's shown row in every panel: ``weights``
    [len(drawn.names), columns], each row labelled by ``drawn.names`` ("head 1") and titled by
    ``drawn.focus_title``; ``focus`` is its (row, column), the column None when the columns are
    another sentence's words."""
    layout, (focus_row, keep) = panels.layout, focus
    top = grid_top + layout.rows * layout.row_height + head_title_depth(layout.head_font)
    left = MARGIN + layout.head_labels
    axes = place_axes(
        figure,
        left,
        top,
        MARGIN + layout.grid_width - PANEL_GAP - left,
        layout.focus_rows * layout.focus_row,
    )
    title = drawn.focus_title.format(word=panels.row_labels[focus_row])
    _draw_focus(axes, weights, drawn.names, title, keep, panels)
    if panels.masked is not None:  # its masked keys, in every head
        hatch_masked(axes, np.tile(panels.masked[focus_row], (len(drawn.names), 1)))


def _draw_colour_bar(figure: Figure, image: AxesImage, panels: Panels, grid_top: float) -> None:
    """The colour bar right of the head panels, as tall as their rows, saying what a colour
    means."""
    layout = panels.layout
    first_panel = grid_top + head_title_depth(layout.head_font)
    last_panel = first_panel + (layout.rows - 1) * layout.row_height + layout.panel_height
    room = last_panel - first_panel
    bar = place_axes(figure, MARGIN + layout.grid_width, first_panel, 0.18, room)
    colour_bar = figure.colorbar(image, cax=bar)
    colour_bar.set_label(
        panels.colours.label(room, layout.axis_font), fontsize=layout.axis_font, parse_math=False
    )
    colour_bar.ax.tick_params(labelsize=max(MIN_FONT, layout.tick_font))


def _draw_focus(
    axes: Axes,
    weights: NDArray[np.float64],
    names: Sequence[str],
    title: str,
    keep: int | None,
    panels: Panels,
) -> AxesImage:
    """The focus word's row of weights in each panel: [len(names), n_key], each row labelled
    by ``names`` ("head 1"), the panel titled ``title``; under it the key words, the one at
    ``keep`` in bold."""
    layout = panels.layout
    image = show_weights(axes, weights, panels)
    axes.set_title(
        title, fontsize=layout.head_font, fontweight="bold", pad=4, parse_math=False
    )  # fmt: skip
    label_words(axes, panels.column_labels, layout.focus_x, layout.tick_font, x=True, keep=keep)
    axes.set_yticks(range(len(names)), labels=list(names), fontsize=layout.tick_font)
    axes.tick_params(length=2, pad=2)
    axes.set_xlabel(layout.focus_title, fontsize=layout.axis_font)
    draw_cell_lines(axes, weights.shape, layout)
    values = layout.focus_values
    if values.shown:
        draw_values(axes, weights, cell_colours(image), values.font, values.compact)
    return image


@draws
def save_heatmap(
    trace: AttentionTrace,
    selection: Selection,
    path: Path,
    *,
    cmap: str = "viridis",
    scale: Scale | None = None,
    measure: Measure = Measure.weights,
    run: Analyses | None = None,
) -> None:
    """Write the heatmaps of the selection's heads to ``path`` (.png, .svg or .pdf); ``measure``
    and ``run`` as build_figure takes them.

    Written atomically, in the format the extension names. Deterministic: no dates, no
    software version and a fixed SVG id salt, so the same trace gives the same bytes.
    """
    image_format_of(path)
    check_colormap(cmap)
    figure = build_figure(trace, selection, cmap=cmap, scale=scale, measure=measure, run=run)
    save_figure(figure, path)
