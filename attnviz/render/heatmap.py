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

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from attnviz.render.figures import (
    CHAR_WIDTH,
    COLOUR_BAR,
    MISSING_GLYPH,
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
    sentence_text,
    short_label,
    shown_row_sums,
    text_colour,
    text_inches,
    truncate,
    weights_phrase,
)
from attnviz.selection import Selection
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage
    from matplotlib.layout_engine import ConstrainedLayoutEngine

MAX_PANELS_PER_ROW = 4
MAX_GRID_WIDTH = 20.0  # inches across one row of panels, so 8 heads of 60 words stay printable
CELL = 0.45  # inches per word while a panel is between its smallest and largest size
MIN_PANEL = 2.2  # inches: two words still get big cells
MAX_PANEL = 8.0  # inches: beyond this the cells shrink instead of the picture growing
MAX_ANNOTATED_TOKENS = 12  # print the weight in each cell up to this many words
MAX_GRID_LINE_TOKENS = 30  # thin lines between cells up to this many words
PANEL_TITLE = 0.4  # inches above a panel for "Head 1"
AXIS_LABEL = 0.35  # inches for "key word (looked at)" and "query word (looking)"

#: Axis titles of a head panel: (columns, rows) for self-attention and for cross-attention.
SELF_AXIS_TITLES = ("key word (looked at)", "query word (looking)")
CROSS_AXIS_TITLES = ("source word (looked at)", "target word (looking)")
AXIS_TITLE_FONT = 9.0  # points
AXIS_TITLE_LINE = 1.2 * AXIS_TITLE_FONT / 72  # inches per extra line of an axis title


def axis_title(text: str, room: float) -> str:
    """``text`` on one line when it fits ``room`` inches, else broken before its "(".

    >>> axis_title("source word (looked at)", 1.0)
    'source word\\n(looked at)'
    """
    if text_inches(len(text), AXIS_TITLE_FONT) <= room:
        return text
    return text.replace(" (", "\n(", 1)


def title_depth(title: str) -> float:
    """Inches an axis title of one or more lines takes beside its panel."""
    return AXIS_LABEL + title.count("\n") * AXIS_TITLE_LINE


@dataclass(frozen=True)
class Layout:
    """Sizes of the picture, in inches and points, for a number of head panels of
    n_tokens rows (query words) × n_keys columns (key words), every cell square."""

    n_tokens: int  # rows of a head panel: the query (target) words
    n_keys: int  # columns of a head panel: the key (source) words
    columns: int  # head panels per row
    rows: int  # rows of head panels
    panel_width: float  # inches, width of one heatmap: n_keys cells
    panel_height: float  # inches, height of one heatmap: n_tokens cells
    tick_font: float  # points, word labels
    value_font: float  # points, the weights printed in cells
    annotate: bool  # print each weight in its cell
    x: AxisLabels  # key words under each heatmap
    y: AxisLabels  # query words left of each heatmap
    focus_rows: int  # rows of the focus panel (one per shown head); 0 without a focus word
    focus_x: AxisLabels  # key words under the focus panel, whose cells are wider
    focus_row: float  # inches, height of one row of the focus panel
    x_title: str = SELF_AXIS_TITLES[0]  # under each heatmap, maybe on two lines
    y_title: str = SELF_AXIS_TITLES[1]  # left of the first column, maybe on two lines
    focus_title: str = SELF_AXIS_TITLES[0]  # under the focus panel, one line

    @property
    def panel(self) -> float:
        """Inches, the longer side of one heatmap (its side when square)."""
        return max(self.panel_width, self.panel_height)

    @property
    def width(self) -> float:
        """Inches: each column of panels with its word labels, then the colour bar."""
        return round(
            grid_width(self.columns, self.panel_width, self.y, self.y_title) + COLOUR_BAR, 2
        )

    def height(self, title_lines: int) -> float:
        """Inches: title lines, rows of panels with their labels, the focus panel if any."""
        height = title_lines * TITLE_LINE + 0.3
        height += self.rows * (
            PANEL_TITLE + self.panel_height + self.x.depth + title_depth(self.x_title)
        )
        if self.focus_rows:
            height += (
                PANEL_TITLE + self.focus_rows * self.focus_row + self.focus_x.depth + AXIS_LABEL
            )
        return round(height, 2)


def grid_width(columns: int, panel_width: float, y: AxisLabels, y_title: str) -> float:
    """Inches across the columns of panels with their word labels; at least as wide as one
    MIN_PANEL panel, so that titles still fit above a few narrow (cross-attention) panels."""
    labels = title_depth(y_title) + y.depth
    return max(columns * (labels + panel_width + 0.2), labels + MIN_PANEL + 0.2)


def plan_layout(
    tokens: Sequence[str],
    n_panels: int,
    focus_rows: int,
    key_tokens: Sequence[str] | None = None,
) -> Layout:
    """Choose panel size, fonts and label thinning so that 2 to hundreds of words stay readable.

    ``tokens`` label the rows (query words); ``key_tokens``, when given, the columns (the
    source words of cross-attention), else ``tokens`` again. Cells are square: a panel grows by
    CELL inches per word of its longer side between MIN_PANEL and the largest size that keeps
    a row of panels within MAX_GRID_WIDTH (and a panel within MAX_PANEL); fonts follow the cell
    size, down to a readable floor, after which only every k-th word is labelled, each axis by
    its own count of words.
    """
    keys = tokens if key_tokens is None else key_tokens
    n_tokens, n_keys = len(tokens), len(keys)
    columns = min(n_panels, MAX_PANELS_PER_ROW)
    # The panel's width: the rule for a square panel of the longer side, scaled by the width's
    # share of it (1 when square: min(max(CELL·n, MIN_PANEL), limit)), and the height kept
    # within MAX_PANEL too.
    share = n_keys / max(n_tokens, n_keys)
    panel_width = min(
        max(CELL * n_keys, MIN_PANEL * share),
        min(MAX_PANEL, MAX_GRID_WIDTH / columns),
        MAX_PANEL * n_keys / n_tokens,
    )
    cell = panel_width / n_keys  # inches per word
    panel_height = panel_width if n_keys == n_tokens else cell * n_tokens
    font = min(max(0.6 * cell * 72, 6.5), 10.0)
    longest_row = max(len(short_label(token)) for token in tokens)
    longest_key = max(len(short_label(token)) for token in keys)
    x = axis_labels(longest_key, n_keys, cell, font, x=True)
    y = axis_labels(longest_row, n_tokens, cell, font, x=False)
    x_text, y_text = SELF_AXIS_TITLES if key_tokens is None else CROSS_AXIS_TITLES
    y_title = axis_title(y_text, panel_height + 0.2)
    # The focus panel spans every column of panels, so its cells are wider than a heatmap's.
    labels = y.depth + title_depth(y_title)
    focus_cell = max(columns * (panel_width + labels), labels + MIN_PANEL) / n_keys
    return Layout(
        n_tokens=n_tokens,
        n_keys=n_keys,
        columns=columns,
        rows=math.ceil(n_panels / columns),
        panel_width=panel_width,
        panel_height=panel_height,
        tick_font=font,
        value_font=min(max(0.28 * cell * 72, 6.0), 12.0),
        annotate=max(n_tokens, n_keys) <= MAX_ANNOTATED_TOKENS,
        x=x,
        y=y,
        focus_rows=focus_rows,
        focus_x=axis_labels(longest_key, n_keys, focus_cell, font, x=True),
        focus_row=min(max(cell, 0.3), 0.5),
        x_title=axis_title(x_text, panel_width + 0.3),
        y_title=y_title,
        focus_title=x_text,
    )


def sentences_line(source: Sequence[str], target: Sequence[str], max_chars: int) -> str:
    """“source” → “target” in at most ``max_chars`` characters, each sentence cut to its share.

    >>> sentences_line(["I", "am", "good"], ["Je", "vais", "bien"], 80)
    '“I am good” → “Je vais bien”'
    """
    quoted = [f"“{sentence_text(source)}”", f"“{sentence_text(target)}”"]
    room = max_chars - len(" → ")
    if sum(map(len, quoted)) > room:
        # Each sentence gets half the room, and whatever the other one does not need.
        half = room // 2
        shares = [max(half, room - len(quoted[1])), max(half, room - len(quoted[0]))]
        quoted = [truncate(text, max(2, share)) for text, share in zip(quoted, shares, strict=True)]
    return " → ".join(quoted)


def title_lines(trace: AttentionTrace, selection: Selection, width: float) -> list[str]:
    """The figure's title for a figure ``width`` inches wide: the sentence (cut to one line),
    or for cross-attention “source” → “target” and which side gives queries, keys and values;
    then what the colours are, the sizes and where the weights came from."""
    max_chars = int(width * 72 / (CHAR_WIDTH * TITLE_FONT))
    origin = trace.provenance.weights
    if trace.is_cross:
        cross = ["cross-attention:", "queries from the target,", "keys and values from the source"]
        heading = [
            sentences_line(selection.column_words, selection.row_words, max_chars),
            *pack_phrases(cross, max_chars, separator=" "),
        ]
    else:
        heading = [truncate(f"“{pieces_text(trace)}”", max_chars)]
    phrases = [
        "attention weights softmax(Q·Kᵀ/√d_k)",
        row_sums_phrase(
            shown_row_sums(trace.weights[list(selection.heads)], selection),
            hidden_taking_weight(trace.weights[list(selection.heads)], selection, trace.tokens),
        ),
        *(["hatched: masked, weight 0"] if masked_shown(trace.masked, selection) else []),
        f"d_model {trace.d_model}, {trace.n_heads} heads, d_k {trace.d_k}",
        weights_phrase(origin, with_layer=False),
        # its own phrase, so that a narrow figure breaks the title here rather than cutting it
        *(
            [f"layer {origin.layer} of {origin.n_layers}"]
            if origin.layer and origin.n_layers
            else []
        ),
    ]
    return [*heading, *pack_phrases(phrases, max_chars)]


# -- drawing ---------------------------------------------------------------------------------


def build_figure(trace: AttentionTrace, selection: Selection, *, cmap: str = "viridis") -> Figure:
    """One heatmap per head of the selection, a shared 0–1 colour bar and, when the selection
    follows a word, a panel of that word's weights in every one of those heads.

    trace.weights: [h, n, n] -> panels of [rows, columns] as the selection shows them; the
    focus panel is the focus word's shown row in each head: [len(heads), columns]. For
    cross-attention the weights are [h, n_target, n_source]: rows are the target words,
    columns the source words, and the focus word (a target word) looks at source words.
    """
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    heads, focus = selection.heads, selection.focus
    if not heads:
        raise ValueError("heads is empty; pass at least one head index")
    key_words = selection.column_words if trace.is_cross else None
    layout = plan_layout(
        selection.row_words, len(heads), len(heads) if focus else 0, key_tokens=key_words
    )
    title = title_lines(trace, selection, layout.width)
    # "Compressed" constrained layout packs square panels without gaps; h_pad (inches) keeps a
    # row's "key word" label off the next row's "Head 5". Panels narrower than MIN_PANEL (a
    # cross-attention panel of few source words) keep their columns' width instead, so the
    # titles and the focus panel above and below them still have room.
    compress = layout.panel_width >= MIN_PANEL
    engine = ConstrainedLayoutEngine(compress=compress, h_pad=0.1)
    figure = new_figure(layout.width, layout.height(len(title)), layout=engine)
    ratios = [layout.panel_height] * layout.rows
    if focus is not None:
        ratios.append(layout.focus_rows * layout.focus_row)
    grid = figure.add_gridspec(len(ratios), layout.columns, height_ratios=ratios)
    row_labels = [short_label(word) for word in selection.row_words]
    column_labels = [short_label(word) for word in selection.column_words]
    focus_row = selection.focus_row
    masked = selection.masked_pairs(trace.masked) if trace.mask is not None else None
    panels: list[Axes] = []
    images: list[AxesImage] = []
    cells: list[tuple[Axes, NDArray[np.float64], AxesImage]] = []  # each panel's weights
    for position, head in enumerate(heads):
        row, column = divmod(position, layout.columns)
        axes = figure.add_subplot(grid[row, column])
        weights = selection.pairs(trace.weights[head], total=True)
        image = _draw_head(
            axes, weights, head, (row_labels, column_labels), layout, cmap, focus_row
        )
        images.append(image)
        cells.append((axes, weights, image))
        if masked is not None:  # only self-attention has masks: [n, n]
            hatch_masked(axes, masked)
        if column == 0:
            axes.set_ylabel(layout.y_title, fontsize=AXIS_TITLE_FONT)
        panels.append(axes)
    if focus is not None and focus_row is not None:
        axes = figure.add_subplot(grid[layout.rows, :])
        focus_weights = selection.focus_weights(trace.weights)[list(heads)]
        # The focus word is a column too, in bold, unless the columns are another sentence.
        keep = None if trace.is_cross else selection.column_of(focus.index)
        label = printable(focus.label)
        image = _draw_focus(axes, focus_weights, heads, label, column_labels, keep, layout, cmap)
        if masked is not None:  # the focus word's masked keys, in every head's row
            hatch_masked(axes, np.tile(masked[focus_row], (len(heads), 1)))
        cells.append((axes, focus_weights, image))
        panels.append(axes)
    # The colour bar pushes its panels to the right (anchor "E"); narrow panels in uncompressed
    # columns stay centred in them instead (panchor=False), with room for their labels.
    centred: dict[str, Any] = {} if compress else {"panchor": False}
    colour_bar = figure.colorbar(images[0], ax=panels, shrink=0.9, aspect=30, pad=0.02, **centred)
    colour_bar.set_label("attention weight", fontsize=10)
    figure.suptitle("\n".join(title), fontsize=TITLE_FONT, linespacing=1.5, parse_math=False)
    _fix_layout(figure, engine)
    if layout.annotate:
        # Printed once the layout is fixed: a value inside its cell takes no room of its own,
        # and the layout engine would otherwise measure every one of them.
        for axes, weights, image in cells:
            _print_weights(axes, weights, image, layout)
    return figure


def _fix_layout(figure: Figure, engine: ConstrainedLayoutEngine) -> None:
    """Run the layout engine once, now, and detach it: the panels stay where it put them.

    While an engine is attached, savefig first draws the whole figure without rendering it, to
    lay it out, and only then draws it for real; for 8 heads of 11 words that first pass took
    nearly as long as the second.
    """
    from matplotlib import rc_context

    with warnings.catch_warnings():  # measuring a word is where a missing glyph is first seen
        warnings.filterwarnings("ignore", message=MISSING_GLYPH)
        engine.execute(figure)
    # None means "the default layout", taken from matplotlibrc; no layout at all is wanted.
    with rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        figure.set_layout_engine(None)


def _draw_head(
    axes: Axes,
    weights: NDArray[np.float64],
    head: int,
    labels: tuple[Sequence[str], Sequence[str]],
    layout: Layout,
    cmap: str,
    focus_row: int | None,
) -> AxesImage:
    """One head's weights [n_query, n_key]: rows are query words, columns key words (``labels``
    are (rows, columns)); the focus word's row framed. Cells are square (aspect "equal")."""
    row_labels, column_labels = labels
    image = axes.imshow(weights, cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
    axes.set_title(f"Head {head + 1}", fontsize=12, fontweight="bold")
    label_words(axes, column_labels, layout.x, layout.tick_font, x=True)
    label_words(axes, row_labels, layout.y, layout.tick_font, x=False, keep=focus_row)
    if focus_row is not None:
        frame_row(axes, focus_row, layout.n_keys)
    axes.set_xlabel(layout.x_title, fontsize=AXIS_TITLE_FONT)
    _draw_cell_lines(axes, weights.shape, layout)
    return image


def _draw_focus(
    axes: Axes,
    weights: NDArray[np.float64],
    heads: tuple[int, ...],
    word: str,
    labels: Sequence[str],
    keep: int | None,
    layout: Layout,
    cmap: str,
) -> AxesImage:
    """The focus word's row of weights in each shown head: [len(heads), n_key]; ``labels`` are
    the key words, the one at ``keep`` in bold."""
    image = axes.imshow(
        weights, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest"
    )
    axes.set_title(f'Where "{word}" looks', fontsize=12, fontweight="bold")
    label_words(axes, labels, layout.focus_x, layout.tick_font, x=True, keep=keep)
    head_labels = [f"head {head + 1}" for head in heads]
    axes.set_yticks(range(len(heads)), labels=head_labels, fontsize=layout.tick_font)
    axes.set_xlabel(layout.focus_title, fontsize=AXIS_TITLE_FONT)
    _draw_cell_lines(axes, weights.shape, layout)
    return image


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


def _print_weights(
    axes: Axes, weights: NDArray[np.float64], image: AxesImage, layout: Layout
) -> None:
    """Each weight [rows, columns] printed in its cell in black or white, whichever reads
    better on the cell's colour."""
    colours = image.get_cmap()(weights)  # [rows, columns, 4]: each cell's RGBA
    for (row, column), value in np.ndenumerate(weights):
        colour = text_colour(colours[row, column])
        axes.text(
            column,
            row,
            f"{value:.2f}",
            ha="center",
            va="center",
            fontsize=layout.value_font,
            color=colour,
        )


def save_heatmap(
    trace: AttentionTrace, selection: Selection, path: Path, *, cmap: str = "viridis"
) -> None:
    """Write the heatmaps of the selection's heads to ``path`` (.png, .svg or .pdf).

    Written atomically, in the format the extension names. Deterministic: no dates, no
    software version and a fixed SVG id salt, so the same trace gives the same bytes.
    """
    image_format_of(path)
    check_colormap(cmap)
    save_figure(build_figure(trace, selection, cmap=cmap), path)
