"""Attention weights as heatmap images: one panel per head, and where the focus word looks.

Each panel is one head's ``weights`` matrix, softmax(Q·Kᵀ/√d_k): row i is query word i, column j
is key word j, and every row sums to 1 (less as drawn when --hide-special leaves out [CLS] and
[SEP], and the title then says so). For cross-attention the matrix is rectangular: rows are
the target words, columns the source words, cells still square. All panels share one colour
scale fixed to 0–1, so the same colour means the same weight in every head and in every picture.

Drawn with matplotlib's object API (``Figure`` + the Agg canvas): no pyplot, no window, no
global figure state. matplotlib is imported inside the functions, so importing this module (and
running ``attnviz explain``) never loads it. Every layer and head at once: render/grid.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from attnviz.errors import AttnvizError, option
from attnviz.labels import plural
from attnviz.render.figures.cells import draw_values, frame_row, hatch_masked
from attnviz.render.figures.colour import ColourScale, check_colormap, colour_scale
from attnviz.render.figures.fonts import (
    CHAR_WIDTH,
    MIN_FONT,
    MIN_TITLE_FONT,
    title_line,
    truncate_words,
)
from attnviz.render.figures.saving import image_format_of, new_figure, place_axes, save_figure
from attnviz.render.figures.titles import (
    hidden_taking_weight,
    masked_shown,
    pack_phrases,
    pieces_text,
    row_sums_phrase,
    sentence_text,
    shown_row_sums,
    weights_phrase,
)
from attnviz.render.figures.words import (
    CONTINUED_PHRASE,
    any_continued,
    label_positions,
    label_words,
    short_label,
    word_labels,
)
from attnviz.render.heatmap_layout import (
    AXIS_TITLE_FONT,
    MARGIN,
    PANEL_GAP,
    Layout,
    head_title_depth,
    plan_layout,
)
from attnviz.render.measures import Drawn, drawn_measure
from attnviz.render.options import Measure, Scale
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

#: Most heads drawn in one picture: 16 rows of 4. 64 heads of 512 words take some 13 s; the
#: 2048 heads that d_model 2048 allows would take minutes and gigabytes.
MAX_HEAD_PANELS = 64
MAX_GRID_LINE_TOKENS = 30  # thin lines between cells up to this many words


def sentences_line(source: Sequence[str], target: Sequence[str], max_chars: int) -> str:
    """“source” → “target” in at most ``max_chars`` characters, each sentence cut to its share
    (at a space, as truncate_words cuts).

    >>> sentences_line(["I", "am", "good"], ["Je", "vais", "bien"], 80)
    '“I am good” → “Je vais bien”'
    """
    quoted = [f"“{sentence_text(source)}”", f"“{sentence_text(target)}”"]
    room = max_chars - len(" → ")
    if sum(map(len, quoted)) > room:
        # Each sentence gets half the room, and whatever the other one does not need.
        half = room // 2
        shares = [max(half, room - len(quoted[1])), max(half, room - len(quoted[0]))]
        quoted = [
            truncate_words(text, max(2, share)) for text, share in zip(quoted, shares, strict=True)
        ]
    return " → ".join(quoted)


def title_lines(
    trace: AttentionTrace,
    selection: Selection,
    width: float,
    font: float = MIN_TITLE_FONT,
    *,
    continued: bool = False,
    drawn: Drawn | None = None,
) -> list[str]:
    """The figure's title for a figure ``width`` inches wide at ``font`` points: the sentence
    (cut to one line), or for cross-attention “source” → “target” and which side gives queries,
    keys and values; then what the colours are (``drawn``: the selection's weights when None),
    the sizes and where the weights came from; then ``drawn``'s caption, word by word."""
    if drawn is None:
        drawn = drawn_measure(Measure.weights, trace, (trace,), selection.heads)
    max_chars = int((width - 2 * MARGIN) * 72 / (CHAR_WIDTH * font))
    origin = trace.provenance.weights
    if trace.is_cross:
        cross = ["cross-attention:", "queries from the target,", "keys and values from the source"]
        heading = [
            sentences_line(selection.column_words, selection.row_words, max_chars),
            *pack_phrases(cross, max_chars, separator=" "),
        ]
    else:
        heading = [truncate_words(f"“{pieces_text(trace)}”", max_chars)]
    phrases = [
        *drawn.phrases,
        row_sums_phrase(
            shown_row_sums(drawn.matrices, selection),
            hidden_taking_weight(drawn.matrices, selection, trace.tokens),
        ),
        *(["hatched: masked, weight 0"] if masked_shown(trace.masked, selection) else []),
        *([CONTINUED_PHRASE] if continued else []),
        f"d_model {trace.d_model}, {plural(trace.n_heads, 'head')}, d_k {trace.d_k}"
        + (f", {plural(trace.n_kv_heads, 'key/value head')}" if trace.is_grouped else ""),
        *(["rotary positions (RoPE)"] if trace.rope is not None else []),
        weights_phrase(origin, with_layer=False),
        # its own phrase, so that a narrow figure breaks the title here rather than cutting it
        *(
            [f"layer {origin.layer} of {origin.n_layers}"]
            if origin.layer and origin.n_layers
            else []
        ),
    ]
    caption = [
        line for text in drawn.caption for line in pack_phrases(text.split(" "), max_chars, " ")
    ]
    return [*heading, *pack_phrases(phrases, max_chars), *caption]


# -- drawing ---------------------------------------------------------------------------------


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


def build_figure(
    trace: AttentionTrace,
    selection: Selection,
    *,
    cmap: str = "viridis",
    scale: Scale | None = None,
    measure: Measure = Measure.weights,
    layers: Sequence[AttentionTrace] = (),
) -> Figure:
    """One heatmap per head of the selection, a shared colour bar and, when the selection
    follows a word, a panel of that word's weights in every one of those heads.

    ``measure`` picks what the panels show (render/measures.py): the weights; each head's
    contribution shares; or one panel, the rollout of ``layers`` (every layer of the run; the
    trace's own when empty) up to the trace.

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
    drawn = drawn_measure(measure, trace, layers or (trace,), heads)
    n_panels = len(drawn.titles)
    row_labels = [short_label(word) for word in word_labels(selection.row_words)]
    column_labels = [short_label(word) for word in word_labels(selection.column_words)]
    layout = plan_layout(
        row_labels,
        n_panels,
        n_panels if selection.focus else 0,
        key_tokens=column_labels if trace.is_cross else None,
    )
    continued = any_continued(
        row_labels, label_positions(len(row_labels), layout.y.step, selection.focus_row)
    ) or any_continued(column_labels, label_positions(len(column_labels), layout.x.step))
    title = title_lines(
        trace, selection, layout.width, layout.title_font, continued=continued, drawn=drawn
    )
    figure = new_figure(layout.width, layout.height(len(title)))
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
        y=1 - MARGIN / figure.get_size_inches()[1],
        va="top",
    )
    return figure


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
        images.append(_draw_head(axes, head_weights, name, panels))
        if panels.focus_row is not None:
            frame_row(axes, panels.focus_row, layout.n_keys)
        if panels.masked is not None:  # only self-attention has masks: [n, n]
            hatch_masked(axes, panels.masked)
        if column == 0:
            axes.set_ylabel(layout.y_title, fontsize=AXIS_TITLE_FONT)
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
        panels.colours.label(room, AXIS_TITLE_FONT), fontsize=AXIS_TITLE_FONT, parse_math=False
    )
    colour_bar.ax.tick_params(labelsize=max(MIN_FONT, layout.tick_font))


def _draw_head(axes: Axes, weights: NDArray[np.float64], name: str, panels: Panels) -> AxesImage:
    """One panel titled ``name`` of weights [n_query, n_key]: rows are query words, columns key
    words, coloured as ``panels.colours`` says, each value printed when it fits; the focus
    word's label in bold."""
    layout, colours = panels.layout, panels.colours
    image = axes.imshow(
        colours.colours_of(weights),
        cmap=panels.cmap,
        vmin=0.0,
        vmax=colours.top,
        interpolation="nearest",
        aspect="auto",  # the axes are already the cells' shape
    )
    axes.set_title(name, fontsize=layout.head_font, fontweight="bold", pad=4)
    label_words(axes, panels.column_labels, layout.x, layout.tick_font, x=True)
    label_words(axes, panels.row_labels, layout.y, layout.tick_font, x=False, keep=panels.focus_row)
    axes.set_xlabel(layout.x_title, fontsize=AXIS_TITLE_FONT)
    _draw_cell_lines(axes, weights.shape, layout)
    if layout.values.shown:
        draw_values(axes, weights, _cell_colours(image), layout.values.font, layout.values.compact)
    return image


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
    layout, colours = panels.layout, panels.colours
    image = axes.imshow(
        colours.colours_of(weights),
        cmap=panels.cmap,
        vmin=0.0,
        vmax=colours.top,
        aspect="auto",
        interpolation="nearest",
    )
    axes.set_title(
        title, fontsize=layout.head_font, fontweight="bold", pad=4, parse_math=False
    )  # fmt: skip
    label_words(axes, panels.column_labels, layout.focus_x, layout.tick_font, x=True, keep=keep)
    axes.set_yticks(range(len(names)), labels=list(names), fontsize=layout.tick_font)
    axes.tick_params(length=2, pad=2)
    axes.set_xlabel(layout.focus_title, fontsize=AXIS_TITLE_FONT)
    _draw_cell_lines(axes, weights.shape, layout)
    values = layout.focus_values
    if values.shown:
        draw_values(axes, weights, _cell_colours(image), values.font, values.compact)
    return image


def _cell_colours(image: AxesImage) -> NDArray[np.float64]:
    """Each cell's RGBA as the image draws it: [rows, columns, 4]."""
    return np.asarray(image.to_rgba(np.asarray(image.get_array())), dtype=np.float64)


def _draw_cell_lines(axes: Axes, shape: tuple[int, ...], layout: Layout) -> None:
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


def save_heatmap(
    trace: AttentionTrace,
    selection: Selection,
    path: Path,
    *,
    cmap: str = "viridis",
    scale: Scale | None = None,
    measure: Measure = Measure.weights,
    layers: Sequence[AttentionTrace] = (),
) -> None:
    """Write the heatmaps of the selection's heads to ``path`` (.png, .svg or .pdf); ``measure``
    and ``layers`` as build_figure takes them.

    Written atomically, in the format the extension names. Deterministic: no dates, no
    software version and a fixed SVG id salt, so the same trace gives the same bytes.
    """
    image_format_of(path)
    check_colormap(cmap)
    figure = build_figure(trace, selection, cmap=cmap, scale=scale, measure=measure, layers=layers)
    save_figure(figure, path)
