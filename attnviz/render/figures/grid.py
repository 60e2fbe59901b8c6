"""Every layer and head of a model in one picture: a small heatmap per (layer, head), and a
panel naming the word the focus word looks at most in each head.

All the small heatmaps are one image in one Axes, tiled with blank gaps, placed in inches: an
Axes per panel (72, each with its ticks) cost two thirds of a 6 × 12 picture's time."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, option
from attnviz.labels import plural
from attnviz.lesson.caveats import short_attention_caveat
from attnviz.limits import check_grid_memory
from attnviz.provenance import WeightsKind
from attnviz.render.figures.captions import caption_height, draw_caption
from attnviz.render.figures.cells import draw_cell_texts, hatch_masked
from attnviz.render.figures.colour import ColourScale, check_colormap, colour_scale
from attnviz.render.figures.fonts import title_font_for, title_line, truncate_to
from attnviz.render.figures.grid_layout import (
    GRID_LABEL_FONT,
    SECTION_GAP,
    SUMMARY_CAPTION_FONT,
    SUMMARY_FONT,
    SUMMARY_LABEL_FONT,
    SUMMARY_ROW,
    SUMMARY_TITLE_FONT,
    TYPE_FONT,
    LayersLayout,
    SummaryText,
    plan_layers_layout,
    summary_text,
)
from attnviz.render.figures.measures import GRID_NAMES, every_layer, head_title, is_trained
from attnviz.render.figures.saving import image_format_of, new_figure, place_axes, save_figure
from attnviz.render.figures.settings import draws
from attnviz.render.figures.titles import (
    FigureText,
    hidden_taking_weight,
    masked_shown,
    pieces_text,
    quoted_sentence,
    readout_sentences,
    row_sums_phrase,
    shown_row_sums,
    weights_phrase,
)
from attnviz.render.figures.words import (
    CONTINUED_PHRASE,
    any_continued,
    label_positions,
    short_label,
    word_labels,
)
from attnviz.render.options import Measure, Scale
from attnviz.results import Analyses, TypedHead
from attnviz.selection import Selection
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

#: Most (layer, head) panels in one picture: 24 layers × 16 heads, as in BERT-large and GPT-2
#: medium. Time and memory grow with the panels (and the words squared): 384 panels of 512
#: words take about 8 s and 1.3 GB; 60 layers × 64 heads took a minute and 3 GB.
MAX_GRID_PANELS = 384
#: Most words (or pieces) along a panel of the grid: a 1.5-inch panel of more shows no word
#: apart, and the tiled image of 72 panels of 495 pieces took 2.3 GB to draw.
MAX_GRID_TOKENS = 128
MARGIN = 0.15  # inches left and right of the title and the caption
CAPTION_FONT = 10.0  # points, the caption under the picture
CAPTION_GAP = 0.15  # inches between the focus panel's caption (or the grid) and the caption


#: What the word above each panel is, for the title (analysis/head_types.py has the formulas).
TYPES_PHRASE = (
    "Above each panel: the head's type, scored over all its rows (mean weight on the previous "
    "or next word, itself, the first or last token; broad: rows near uniform)."
)


def layers_text(
    run: Analyses,
    selection: Selection,
    *,
    continued: bool = False,
    typed: bool = False,
    measure: Measure = Measure.weights,
) -> FigureText:
    """The words of the layers × heads figure: the sentence; what the panels show (``measure``)
    and the model, without the ", layer k of L" of each layer's source; then, for the caption,
    what a panel is, the rows' sums as ``selection`` shows them, hatching, the word-piece mark
    (``continued``), what the word above each panel is when ``typed``, a toy model's readout
    and, for a trained model, the caution about reading attention."""
    layers = run.layers
    matrices = every_layer(measure, run)
    first = layers[0]
    origins = {layer.provenance.weights for layer in layers}
    if len(origins) > 1 and all(origin.kind is WeightsKind.RANDOM for origin in origins):
        origin = "random weights, not a trained model"  # a different seed per layer
    else:
        origin = weights_phrase(first.provenance.weights, with_layer=False)
    size = f"{plural(len(layers), 'layer')} × {plural(first.n_heads, 'head')}"
    name = GRID_NAMES[measure][0]
    facts = [
        "each panel: query words (rows) × key words (columns)",
        row_sums_phrase(
            np.stack([shown_row_sums(layer, selection) for layer in matrices]),
            hidden_taking_weight(matrices, selection, first.tokens),
        ),
        *(["hatched: masked, weight 0"] if masked_shown(first.masked, selection) else []),
        *([CONTINUED_PHRASE] if continued else []),
    ]
    notes = [
        *GRID_NAMES[measure][2],
        *([TYPES_PHRASE] if typed else []),
        *readout_sentences(first.provenance.weights, first.n_heads, first.tokens),
        *([short_attention_caveat()] if is_trained(first) else []),
    ]
    return FigureText(
        quoted_sentence(pieces_text(first)),
        about=(f"{name} of {size}", origin),
        facts=tuple(facts),
        notes=tuple(notes),
    )


def focus_targets(
    layers: Sequence[AttentionTrace], selection: Selection, matrices: FloatArray | None = None
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Where the focus word looks hardest in each head of each layer.

    The focus word's shown weights [L, h, columns] (or its rows of ``matrices`` [L, h, n, n],
    contributions say) -> (argmax, max): [L, h] each, the shown key word the focus word gives
    its largest weight to, and that weight.
    """
    if matrices is None:
        matrices = np.stack([np.asarray(layer.weights) for layer in layers])
    rows = np.stack([selection.focus_weights(layer) for layer in matrices])
    return rows.argmax(axis=2), rows.max(axis=2).astype(np.float64)


def check_grid_size(n_layers: int, n_heads: int, n_tokens: int = 0) -> None:
    """Refuse a layers × heads grid of more than MAX_GRID_PANELS panels, of panels of more than
    MAX_GRID_TOKENS words, or past limits.MAX_GRID_BYTES to draw, before drawing it."""
    panels = n_layers * n_heads
    if n_tokens > MAX_GRID_TOKENS:
        raise AttnvizError(
            f"{option('all_layers')} would draw {panels:,} panels of {n_tokens} words each, too "
            f"small to tell apart (at most {MAX_GRID_TOKENS}); draw one layer's heads with "
            f"{option('layer', metavar='N')} instead, or give a shorter sentence."
        )
    if panels > MAX_GRID_PANELS:
        raise AttnvizError(
            f"{option('all_layers')} would draw {n_layers} layers × {n_heads} heads = "
            f"{panels:,} panels; one picture holds at most {MAX_GRID_PANELS}. Draw one layer's "
            f"heads with {option('layer', metavar='N')} instead of {option('all_layers')} (add "
            f"{option('head', metavar='N')} for one head)."
        )
    check_grid_memory(n_layers, n_heads, n_tokens)


def _check_layers(layers: Sequence[AttentionTrace]) -> None:
    """Raise ValueError (a bug, not a user error) unless the layers share tokens and heads."""
    if not layers:
        raise ValueError("layers is empty; pass at least one layer's trace")
    first = layers[0]
    for layer in layers[1:]:
        if layer.tokens != first.tokens or layer.n_heads != first.n_heads:
            raise ValueError("every layer must have the same tokens and number of heads")


def tiled(panels: FloatArray, split: int, band: int = 0) -> NDArray[np.float64]:
    """Panels [L, h, n, n] as one image: each cell ``split`` × ``split`` pixels, panels one
    pixel apart and ``band`` blank rows above each (room for its type), the gaps NaN (drawn
    blank). -> [L·(n·split + 1 + band) − 1, h·(n·split + 1) − 1]

    >>> tiled(np.ones((1, 2, 1, 1)), 1)
    array([[ 1., nan,  1.]])
    """
    n_layers, n_heads, n_rows, n_columns = panels.shape
    side_y, side_x = n_rows * split + 1 + band, n_columns * split + 1
    image = np.full((n_layers * side_y - 1, n_heads * side_x - 1), np.nan)
    cells = np.repeat(np.repeat(panels, split, axis=2), split, axis=3)
    for layer in range(n_layers):
        for head in range(n_heads):
            top, left = layer * side_y + band, head * side_x
            image[top : top + n_rows * split, left : left + n_columns * split] = cells[layer, head]
    return image


@draws
def build_layers_figure(
    run: Analyses,
    selection: Selection,
    *,
    cmap: str = "viridis",
    scale: Scale | None = None,
    measure: Measure = Measure.weights,
) -> Figure:
    """A small heatmap per (layer, head) of ``run``'s layers, typed as the analyses found: rows
    of panels are layers, columns heads, each panel weights[head] (or its contribution shares,
    as ``run`` holds them: ``measure``) as the selection shows it; a shared colour bar; and,
    when the selection follows a word, a [layers × heads] panel of the largest weight the
    focus word gives, naming the word it goes to. Every layer is seen through one selection.

    The panels are one image in one Axes whose data coordinates are cells: panel (layer, head)
    covers x from head·(n + g) to head·(n + g) + n and y likewise, g = 1/split the gap.
    """
    layers = run.layers
    _check_layers(layers)
    check_grid_size(len(layers), layers[0].n_heads, len(selection.row_words))
    first, focus_row = layers[0], selection.focus_row
    labels = [short_label(word) for word in word_labels(selection.row_words)]
    types = None if first.is_cross else run.every_head_type()
    layout = plan_layers_layout(labels, len(layers), first.n_heads, typed=types is not None)
    drawn = (
        [
            *label_positions(len(labels), layout.y.step, focus_row),
            *label_positions(len(labels), layout.x.step),
        ]
        if layout.labelled
        else []
    )
    continued = any_continued(labels, [*drawn, *([] if focus_row is None else [focus_row])])
    text = layers_text(
        run, selection, continued=continued, typed=types is not None, measure=measure
    )
    title_font = title_font_for(layout.width)
    room = layout.width - 2 * MARGIN
    title = text.title(room, title_font)
    caption = text.caption((room, title_font), room, CAPTION_FONT)
    noun, short = GRID_NAMES[measure][1]
    summary = summary_text(labels[focus_row], layout.summary_room, noun) if (
        selection.focus is not None and focus_row is not None
    ) else None  # fmt: skip
    panels_height = layout.height(len(title), summary)
    height = round(panels_height + CAPTION_GAP + caption_height(caption, CAPTION_FONT), 2)
    figure = new_figure(layout.width, height)
    grid_top = len(title) * title_line(title_font) + layout.grid_top
    matrices = every_layer(measure, run)
    panels = np.stack([[selection.pairs(head, total=True) for head in layer] for layer in matrices])
    colours = colour_scale(scale, panels, (noun, short))
    axes = place_axes(figure, layout.left, grid_top, layout.grid_width, layout.grid_height)
    heads = [head_title(first, head) for head in range(first.n_heads)]  # "Head 3 (K/V 2)"
    image = _draw_panels(axes, panels, (labels, heads), layout, cmap, colours, focus_row)
    if first.mask is not None:
        _hatch_every_panel(axes, selection.masked_pairs(first.masked), layout)
    if types is not None:
        _name_head_types(axes, types, layout)
    _draw_layers_colour_bar(figure, image, colours, layout, grid_top)
    if summary is not None:
        summary_top = grid_top + layout.grid_height + layout.x_depth + SECTION_GAP
        summary_top += summary.title_height
        axes = place_axes(
            figure, layout.left, summary_top, layout.grid_width, len(layers) * SUMMARY_ROW
        )
        targets = focus_targets(layers, selection, matrices)
        _draw_layers_focus(axes, targets, summary, (labels, heads), layout, cmap)
    figure.suptitle(
        "\n".join(title),
        fontsize=title_font,
        linespacing=1.5,
        parse_math=False,
        y=1 - 0.1 / height,
        va="top",
    )
    draw_caption(figure, caption, MARGIN, panels_height - MARGIN + CAPTION_GAP, CAPTION_FONT)
    return figure


def _name_head_types(axes: Axes, types: Sequence[TypedHead], layout: LayersLayout) -> None:
    """Each panel's head type ("previous-token", "[CLS] sink", "broad") in the band above it,
    cut to the panel's width."""
    for typed in types:
        centre = (typed.head - 1) * layout.step_x + layout.n_tokens / 2
        axes.annotate(
            truncate_to(typed.type.value, layout.panel - 0.04, TYPE_FONT),
            (centre, layout.panel_top(typed.layer - 1)),
            xytext=(0, 1),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=TYPE_FONT,
            parse_math=False,
        )


def _hatch_every_panel(axes: Axes, masked: NDArray[np.bool_], layout: LayersLayout) -> None:
    """The masked pairs [n, n] hatched in every panel of the tiled image."""
    # In the tiled image a cell spans [column, column + 1); hatch_masked centres cells on
    # whole numbers, hence the half cell.
    tiles = [
        (head * layout.step_x + 0.5, layout.panel_top(layer) + 0.5)
        for layer in range(layout.n_layers)
        for head in range(layout.n_heads)
    ]
    hatch_masked(axes, masked, origins=tiles)


def _draw_layers_colour_bar(
    figure: Figure, image: AxesImage, colours: ColourScale, layout: LayersLayout, grid_top: float
) -> None:
    """The colour bar right of the grid, as tall as it, saying what a colour means."""
    colour_axes = place_axes(
        figure, layout.left + layout.grid_width + 0.2, grid_top, 0.15, layout.grid_height
    )
    colour_bar = figure.colorbar(image, cax=colour_axes)
    colour_bar.set_label(
        colours.label(layout.grid_height, SUMMARY_CAPTION_FONT),
        fontsize=SUMMARY_CAPTION_FONT,
        parse_math=False,
    )


def _draw_panels(
    axes: Axes,
    panels: FloatArray,
    word_and_head_labels: tuple[Sequence[str], Sequence[str]],
    layout: LayersLayout,
    cmap: str,
    colours: ColourScale,
    focus_row: int | None,
) -> AxesImage:
    """Every (layer, head) panel [L, h, n, n] as one tiled image; "Head k" above the first row,
    "Layer k" and the query words left of the first column, key words under the last row;
    the focus word's row framed in every panel."""
    labels, heads = word_and_head_labels
    from matplotlib import colormaps

    n, step = layout.n_tokens, layout.step_x
    extent_x = layout.n_heads * step - 1 / layout.split
    extent_y = layout.n_layers * layout.step_y - 1 / layout.split
    shown = np.stack([[colours.colours_of(panel) for panel in layer] for layer in panels])
    palette = colormaps[cmap].with_extremes(bad=(1.0, 1.0, 1.0, 0.0))  # the gaps: blank
    image = axes.imshow(
        tiled(shown, layout.split, layout.band),
        cmap=palette,
        vmin=0.0,
        vmax=colours.top,
        interpolation="nearest",
        extent=(0.0, extent_x, extent_y, 0.0),
        aspect="auto",
    )
    axes.set_axis_off()
    label_font: dict[str, Any] = {"fontsize": GRID_LABEL_FONT, "fontweight": "bold"}
    for head in range(layout.n_heads):
        axes.annotate(
            heads[head], (head * step + n / 2, 0.0), xytext=(0, 3),
            textcoords="offset points", ha="center", va="bottom", **label_font,
        )  # fmt: skip
    # "Layer k" left of the word labels: its right edge the labels' depth and a pad away.
    layer_offset = -(layout.y.depth if layout.labelled or focus_row is not None else 0) * 72 - 4
    for layer in range(layout.n_layers):
        axes.annotate(
            f"Layer {layer + 1}", (0.0, layout.panel_top(layer) + n / 2), xytext=(layer_offset, 0),
            textcoords="offset points", ha="right", va="center", rotation=90, **label_font,
        )  # fmt: skip
    _label_edges(axes, labels, layout, focus_row, step)
    if focus_row is not None:
        _frame_focus_rows(axes, focus_row, layout, step)
    return image


def _label_edges(
    axes: Axes, labels: Sequence[str], layout: LayersLayout, focus_row: int | None, step: float
) -> None:
    """Word labels left of each row of panels (only the focus word's when there are too many
    words) and under each panel of the last row, every layout.y.step-th / x.step-th word."""
    n = layout.n_tokens
    every = label_positions(n, layout.y.step, focus_row) if layout.labelled else (
        [focus_row] if focus_row is not None else []
    )  # fmt: skip
    y_ticks = [
        layout.panel_top(layer) + row + 0.5 for layer in range(layout.n_layers) for row in every
    ]
    y_labels = [labels[row] for _ in range(layout.n_layers) for row in every]
    axes.set_axis_on()
    for spine in axes.spines.values():
        spine.set_visible(False)
    style: dict[str, Any] = {"fontsize": layout.tick_font, "parse_math": False}
    axes.set_yticks(y_ticks, labels=y_labels, **style)
    if layout.labelled:
        columns = label_positions(n, layout.x.step)
        x_ticks = [
            head * step + column + 0.5 for head in range(layout.n_heads) for column in columns
        ]
        x_labels = [labels[column] for _ in range(layout.n_heads) for column in columns]
        axes.set_xticks(x_ticks, labels=x_labels, rotation=90 if layout.x.rotate else 0, **style)
    else:
        axes.set_xticks([])
    axes.tick_params(length=2, pad=2, top=False, labeltop=False, bottom=True, labelbottom=True)
    if focus_row is not None:
        for text, row in zip(
            axes.get_yticklabels(), [r for _ in range(layout.n_layers) for r in every], strict=True
        ):
            if row == focus_row:
                text.set_fontweight("bold")


def _frame_focus_rows(axes: Axes, focus_row: int, layout: LayersLayout, step: float) -> None:
    """The focus word's row framed in every panel, white inside black, as two collections."""
    from matplotlib.collections import LineCollection

    n = layout.n_tokens
    frames = [
        [(x, y), (x + n, y), (x + n, y + 1), (x, y + 1), (x, y)]
        for layer in range(layout.n_layers)
        for head in range(layout.n_heads)
        for x, y in [(head * step, layout.panel_top(layer) + focus_row)]
    ]
    for colour, width in (("black", 1.4), ("white", 0.6)):
        axes.add_collection(
            LineCollection(frames, colors=colour, linewidths=width, zorder=5), autolim=False
        )


def _draw_layers_focus(
    axes: Axes,
    targets_and_weights: tuple[NDArray[np.intp], NDArray[np.float64]],
    text: SummaryText,
    word_and_head_labels: tuple[Sequence[str], Sequence[str]],
    layout: LayersLayout,
    cmap: str,
) -> None:
    """[L, h] cells: the largest weight the focus word gives in that head, and the word it
    gives it to, printed in black or white, whichever reads better on the cell."""
    labels, heads = word_and_head_labels
    from matplotlib.collections import LineCollection

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
        labels=heads,
        fontsize=SUMMARY_LABEL_FONT,
    )
    axes.tick_params(length=2, pad=2)
    axes.set_xlabel("\n".join(text.caption), fontsize=SUMMARY_CAPTION_FONT, parse_math=False)
    n_layers, n_heads = weights.shape
    lines = [[(x - 0.5, -0.5), (x - 0.5, n_layers - 0.5)] for x in range(1, n_heads)]
    lines += [[(-0.5, y - 0.5), (n_heads - 0.5, y - 0.5)] for y in range(1, n_layers)]
    axes.add_collection(LineCollection(lines, colors="white", linewidths=0.8), autolim=False)
    cell_width = layout.grid_width / layout.n_heads
    words = [
        truncate_to(labels[int(target)], cell_width - 0.1, SUMMARY_FONT)
        for target in targets.ravel()
    ]
    rows, columns = np.indices(weights.shape)
    draw_cell_texts(
        axes,
        words,
        np.column_stack([columns.ravel(), rows.ravel()]).astype(float),
        image.to_rgba(weights).reshape(-1, 4),
        SUMMARY_FONT,
    )


def save_layers_heatmap(
    run: Analyses,
    selection: Selection,
    path: Path,
    *,
    cmap: str = "viridis",
    scale: Scale | None = None,
    measure: Measure = Measure.weights,
) -> None:
    """Write every layer's heads as one layers × heads grid to ``path`` (.png, .svg or .pdf),
    of ``measure`` (weights or contribution shares).

    Same rules as save_heatmap: the format the extension names, written atomically, no dates,
    a fixed SVG id salt, so the same layers give the same bytes.
    """
    image_format_of(path)
    check_colormap(cmap)
    figure = build_layers_figure(run, selection, cmap=cmap, scale=scale, measure=measure)
    save_figure(figure, path)
