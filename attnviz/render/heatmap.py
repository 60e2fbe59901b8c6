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
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from attnviz.errors import AttnvizError
from attnviz.render.figures import (
    CHAR_WIDTH,
    COLOUR_BAR,
    JOINED,
    JOINED_PHRASE,
    MIN_FONT,
    MIN_TITLE_FONT,
    AxisLabels,
    ColourScale,
    axis_labels,
    check_colormap,
    colour_scale,
    draw_values,
    frame_row,
    hatch_masked,
    hidden_taking_weight,
    image_format_of,
    label_positions,
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
    text_width,
    title_font_for,
    title_line,
    truncate,
    truncate_words,
    value_font,
    weights_phrase,
    widest,
    word_labels,
)
from attnviz.render.options import Scale
from attnviz.selection import Selection
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

MAX_PANELS_PER_ROW = 4
#: Most heads drawn in one picture: 16 rows of 4. 64 heads of 512 words take some 13 s; the
#: 2048 heads that d_model 2048 allows would take minutes and gigabytes.
MAX_HEAD_PANELS = 64
MAX_GRID_WIDTH = 20.0  # inches across one row of panels, so 8 heads of 60 words stay printable
CELL = 0.5  # inches per word while a panel is between its smallest and largest size
MIN_PANEL = 2.2  # inches: two words still get big cells
MAX_PANEL = 8.0  # inches: beyond this the cells shrink instead of the picture growing
MAX_GRID_LINE_TOKENS = 30  # thin lines between cells up to this many words
MARGIN = 0.15  # inches around the picture
PANEL_GAP = 0.3  # inches between a panel and the next column's word labels
ROW_GAP = 0.2  # inches between a row of panels' axis title and the next row's head titles
TICK_ROOM = 4 / 72  # inches between a panel's edge and its word labels: tick length and pad
AXIS_PAD = 4 / 72  # inches between the word labels and the axis title (matplotlib's labelpad)
FOCUS_ROW = (0.32, 0.55)  # inches, smallest and largest height of a focus-panel row

#: Axis titles of a head panel: (columns, rows) for self-attention and for cross-attention.
SELF_AXIS_TITLES = ("key word (looked at)", "query word (looking)")
CROSS_AXIS_TITLES = ("source word (looked at)", "target word (looking)")
AXIS_TITLE_FONT = 10.0  # points


def axis_title(text: str, room: float) -> str:
    """``text`` on one line when it fits ``room`` inches, else broken before its "(".

    >>> axis_title("source word (looked at)", 1.0)
    'source word\\n(looked at)'
    """
    if text_width(text, AXIS_TITLE_FONT) <= room:
        return text
    return text.replace(" (", "\n(", 1)


def title_depth(title: str) -> float:
    """Inches an axis title of one or more lines takes beside its panel, with its pad."""
    return AXIS_PAD + (title.count("\n") + 1) * 1.25 * AXIS_TITLE_FONT / 72


def head_title_depth(font: float) -> float:
    """Inches above a panel for "Head 1": the bold line and its 4-point pad."""
    return (1.3 * font + 6) / 72


@dataclass(frozen=True)
class Values:
    """How weights are printed in a panel's cells: at ``font`` points, "0.45" or ``compact``
    ".45"; a font of 0 prints none (the cells are too small for MIN_FONT)."""

    font: float
    compact: bool

    @property
    def shown(self) -> bool:
        return self.font > 0


def values_for(cell_width: float, cell_height: float) -> Values:
    """ "0.45" when it fits the cells at MIN_FONT or more, else ".45", else nothing."""
    for compact, chars in ((False, 4), (True, 3)):
        font = value_font(cell_width, cell_height, chars)
        if font:
            return Values(font, compact)
    return Values(0.0, False)


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
    values: Values  # the weights printed in a head panel's cells
    x: AxisLabels  # key words under each heatmap
    y: AxisLabels  # query words left of each heatmap
    focus_rows: int  # rows of the focus panel (one per shown head); 0 without a focus word
    focus_x: AxisLabels  # key words under the focus panel, whose cells are wider
    focus_row: float  # inches, height of one row of the focus panel
    focus_values: Values  # the weights printed in the focus panel's cells
    head_labels: float  # inches, the focus panel's "head 12" labels
    title_font: float  # points, the figure's title
    head_font: float  # points, "Head 1" and the focus panel's title
    x_title: str = SELF_AXIS_TITLES[0]  # under each heatmap, maybe on two lines
    y_title: str = SELF_AXIS_TITLES[1]  # left of the first column, maybe on two lines
    focus_title: str = SELF_AXIS_TITLES[0]  # under the focus panel, one line

    @property
    def annotate(self) -> bool:
        """The head panels print their weights."""
        return self.values.shown

    @property
    def panel(self) -> float:
        """Inches, the longer side of one heatmap (its side when square)."""
        return max(self.panel_width, self.panel_height)

    @property
    def left(self) -> float:
        """Inches left of a panel for its y axis title and word labels."""
        return title_depth(self.y_title) + self.y.depth

    @property
    def column_width(self) -> float:
        """Inches of one column of panels: labels, panel, gap to the next column."""
        return self.left + self.panel_width + PANEL_GAP

    @property
    def grid_width(self) -> float:
        return max(self.columns * self.column_width, self.left + MIN_PANEL + PANEL_GAP)

    @property
    def width(self) -> float:
        """Inches: each column of panels with its word labels, then the colour bar."""
        return round(MARGIN + self.grid_width + COLOUR_BAR + MARGIN, 2)

    @property
    def row_height(self) -> float:
        """Inches of one row of panels: head titles, panels, word labels, axis title."""
        under = self.x.depth + title_depth(self.x_title)
        return head_title_depth(self.head_font) + self.panel_height + under + ROW_GAP

    @property
    def focus_height(self) -> float:
        """Inches of the focus panel with its title, word labels and axis title."""
        if not self.focus_rows:
            return 0.0
        rows = self.focus_rows * self.focus_row
        return head_title_depth(self.head_font) + rows + self.focus_x.depth + title_depth("")

    def height(self, title_lines: int) -> float:
        """Inches: title lines, rows of panels with their labels, the focus panel if any."""
        title = title_lines * title_line(self.title_font)
        return round(2 * MARGIN + title + self.rows * self.row_height + self.focus_height, 2)


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
    a row of panels within MAX_GRID_WIDTH (and a panel within MAX_PANEL). Every text is at
    least MIN_FONT points: word labels follow the cell size down to it, after which only every
    k-th word is labelled, each axis by its own count of words; weights are printed in the
    cells whenever they fit at MIN_FONT or more.
    """
    keys = tokens if key_tokens is None else key_tokens
    n_tokens, n_keys = len(tokens), len(keys)
    columns = min(n_panels, MAX_PANELS_PER_ROW)
    font = min(max(0.6 * CELL * 72 * min(1.0, 12 / max(n_tokens, n_keys)), MIN_FONT), 11.0)
    row_labels = [short_label(token) for token in tokens]
    key_labels = [short_label(token) for token in keys]
    y_width = widest(row_labels, font, bold=True)
    key_width = widest(key_labels, font, bold=True)
    x_text, y_text = SELF_AXIS_TITLES if key_tokens is None else CROSS_AXIS_TITLES
    left = title_depth(y_text) + TICK_ROOM + y_width
    # The panel's width: the rule for a square panel of the longer side, scaled by the width's
    # share of it (1 when square: min(max(CELL·n, MIN_PANEL), limit)), and the height kept
    # within MAX_PANEL too.
    share = n_keys / max(n_tokens, n_keys)
    panel_width = min(
        max(CELL * n_keys, MIN_PANEL * share),
        min(MAX_PANEL, MAX_GRID_WIDTH / columns - left - PANEL_GAP),
        MAX_PANEL * n_keys / n_tokens,
    )
    cell = panel_width / n_keys  # inches per word
    panel_height = panel_width if n_keys == n_tokens else cell * n_tokens
    x = axis_labels(key_width, n_keys, cell, font, x=True)
    y = axis_labels(y_width, n_tokens, cell, font, x=False)
    y_title = axis_title(y_text, panel_height + 0.2)
    # The focus panel spans every column of panels, so its cells are wider than a heatmap's.
    labels = y.depth + title_depth(y_title)
    span = max(columns * (panel_width + labels + PANEL_GAP), labels + MIN_PANEL + PANEL_GAP)
    head_labels = TICK_ROOM + text_width(f"head {n_panels}", font)
    focus_width = span - PANEL_GAP - head_labels
    focus_cell = focus_width / n_keys
    focus_row = min(max(cell, FOCUS_ROW[0]), FOCUS_ROW[1])
    layout = Layout(
        n_tokens=n_tokens,
        n_keys=n_keys,
        columns=columns,
        rows=math.ceil(n_panels / columns),
        panel_width=panel_width,
        panel_height=panel_height,
        tick_font=font,
        values=values_for(cell, cell),
        x=x,
        y=y,
        focus_rows=focus_rows,
        focus_x=axis_labels(key_width, n_keys, focus_cell, font, x=True),
        focus_row=focus_row,
        focus_values=values_for(focus_cell, focus_row),
        head_labels=head_labels,
        title_font=MIN_TITLE_FONT,
        head_font=MIN_TITLE_FONT,
        x_title=axis_title(x_text, panel_width + 0.3),
        y_title=y_title,
        focus_title=x_text,
    )
    return replace(layout, title_font=title_font_for(layout.width))


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


def title_lines(
    trace: AttentionTrace,
    selection: Selection,
    width: float,
    font: float = MIN_TITLE_FONT,
    *,
    joined: bool = False,
) -> list[str]:
    """The figure's title for a figure ``width`` inches wide at ``font`` points: the sentence
    (cut to one line), or for cross-attention “source” → “target” and which side gives queries,
    keys and values; then what the colours are, the sizes and where the weights came from."""
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
        "attention weights softmax(Q·Kᵀ/√d_k)",
        row_sums_phrase(
            shown_row_sums(trace.weights[list(selection.heads)], selection),
            hidden_taking_weight(trace.weights[list(selection.heads)], selection, trace.tokens),
        ),
        *(["hatched: masked, weight 0"] if masked_shown(trace.masked, selection) else []),
        *([JOINED_PHRASE] if joined else []),
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


def build_figure(
    trace: AttentionTrace,
    selection: Selection,
    *,
    cmap: str = "viridis",
    scale: Scale | None = None,
) -> Figure:
    """One heatmap per head of the selection, a shared colour bar and, when the selection
    follows a word, a panel of that word's weights in every one of those heads.

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
    heads, focus = selection.heads, selection.focus
    if not heads:
        raise ValueError("heads is empty; pass at least one head index")
    if len(heads) > MAX_HEAD_PANELS:
        raise AttnvizError(
            f"{len(heads)} heads would make {len(heads)} panels in one picture; it holds at "
            f"most {MAX_HEAD_PANELS}. Draw one head with --head N, or use fewer --heads."
        )
    sentence = trace.provenance.sentence
    row_labels = [short_label(word) for word in word_labels(selection.row_words, sentence)]
    column_labels = [short_label(word) for word in word_labels(selection.column_words, sentence)]
    focus_row = selection.focus_row
    layout = plan_layout(
        row_labels,
        len(heads),
        len(heads) if focus else 0,
        key_tokens=column_labels if trace.is_cross else None,
    )
    shown = [
        *(row_labels[k] for k in label_positions(len(row_labels), layout.y.step, focus_row)),
        *(column_labels[k] for k in label_positions(len(column_labels), layout.x.step)),
    ]
    joined = any(label.startswith(JOINED) for label in shown)  # say what "·" means if drawn
    title = title_lines(trace, selection, layout.width, layout.title_font, joined=joined)
    width, height = layout.width, layout.height(len(title))
    figure = new_figure(width, height)

    def place(left: float, top: float, box_width: float, box_height: float) -> Axes:
        """Axes at ``left``, ``top`` inches from the picture's top-left corner."""
        bottom = height - top - box_height
        return figure.add_axes(
            (left / width, bottom / height, box_width / width, box_height / height)
        )

    weights = [selection.pairs(trace.weights[head], total=True) for head in heads]
    focus_weights = (
        selection.focus_weights(trace.weights)[list(heads)] if focus_row is not None else None
    )
    colours = colour_scale(scale, np.stack(weights))
    masked = selection.masked_pairs(trace.masked) if trace.mask is not None else None
    grid_top = MARGIN + len(title) * title_line(layout.title_font)
    first_panel = grid_top + head_title_depth(layout.head_font)
    images: list[AxesImage] = []
    for position, (head, head_weights) in enumerate(zip(heads, weights, strict=True)):
        row, column = divmod(position, layout.columns)
        axes = place(
            MARGIN + column * layout.column_width + layout.left,
            first_panel + row * layout.row_height,
            layout.panel_width,
            layout.panel_height,
        )
        image = _draw_head(
            axes, head_weights, head, (row_labels, column_labels), layout, cmap, colours, focus_row
        )
        if focus_row is not None:
            frame_row(axes, focus_row, layout.n_keys)
        if masked is not None:  # only self-attention has masks: [n, n]
            hatch_masked(axes, masked)
        if column == 0:
            axes.set_ylabel(layout.y_title, fontsize=AXIS_TITLE_FONT)
        images.append(image)
    last_panel = first_panel + (layout.rows - 1) * layout.row_height + layout.panel_height
    if focus is not None and focus_weights is not None:
        top = grid_top + layout.rows * layout.row_height + head_title_depth(layout.head_font)
        left = MARGIN + layout.head_labels
        axes = place(
            left,
            top,
            MARGIN + layout.grid_width - PANEL_GAP - left,
            layout.focus_rows * layout.focus_row,
        )
        # The focus word is a column too, in bold, unless the columns are another sentence.
        keep = None if trace.is_cross else selection.column_of(focus.index)
        label = row_labels[focus_row] if focus_row is not None else printable(focus.label)
        _draw_focus(axes, focus_weights, heads, label, column_labels, keep, layout, cmap, colours)
        if masked is not None and focus_row is not None:  # its masked keys, in every head
            hatch_masked(axes, np.tile(masked[focus_row], (len(heads), 1)))
    bar = place(MARGIN + layout.grid_width, first_panel, 0.18, last_panel - first_panel)
    colour_bar = figure.colorbar(images[0], cax=bar)
    room = last_panel - first_panel
    colour_bar.set_label(
        colours.label(room, AXIS_TITLE_FONT), fontsize=AXIS_TITLE_FONT, parse_math=False
    )
    colour_bar.ax.tick_params(labelsize=max(MIN_FONT, layout.tick_font))
    figure.suptitle(
        "\n".join(title),
        fontsize=layout.title_font,
        linespacing=1.5,
        parse_math=False,
        y=1 - MARGIN / height,
        va="top",
    )
    return figure


def _draw_head(
    axes: Axes,
    weights: NDArray[np.float64],
    head: int,
    labels: tuple[Sequence[str], Sequence[str]],
    layout: Layout,
    cmap: str,
    colours: ColourScale,
    focus_row: int | None,
) -> AxesImage:
    """One head's weights [n_query, n_key]: rows are query words, columns key words (``labels``
    are (rows, columns)), coloured as ``colours`` says, each weight printed when it fits; the
    focus word's label in bold."""
    row_labels, column_labels = labels
    image = axes.imshow(
        colours.colours_of(weights),
        cmap=cmap,
        vmin=0.0,
        vmax=colours.top,
        interpolation="nearest",
        aspect="auto",  # the axes are already the cells' shape
    )
    axes.set_title(f"Head {head + 1}", fontsize=layout.head_font, fontweight="bold", pad=4)
    label_words(axes, column_labels, layout.x, layout.tick_font, x=True)
    label_words(axes, row_labels, layout.y, layout.tick_font, x=False, keep=focus_row)
    axes.set_xlabel(layout.x_title, fontsize=AXIS_TITLE_FONT)
    _draw_cell_lines(axes, weights.shape, layout)
    if layout.values.shown:
        draw_values(axes, weights, _cell_colours(image), layout.values.font, layout.values.compact)
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
    colours: ColourScale,
) -> AxesImage:
    """The focus word's row of weights in each shown head: [len(heads), n_key]; ``labels`` are
    the key words, the one at ``keep`` in bold."""
    image = axes.imshow(
        colours.colours_of(weights),
        cmap=cmap,
        vmin=0.0,
        vmax=colours.top,
        aspect="auto",
        interpolation="nearest",
    )
    axes.set_title(
        f'Where "{word}" looks', fontsize=layout.head_font, fontweight="bold", pad=4,
        parse_math=False,
    )  # fmt: skip
    label_words(axes, labels, layout.focus_x, layout.tick_font, x=True, keep=keep)
    head_labels = [f"head {head + 1}" for head in heads]
    axes.set_yticks(range(len(heads)), labels=head_labels, fontsize=layout.tick_font)
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
) -> None:
    """Write the heatmaps of the selection's heads to ``path`` (.png, .svg or .pdf).

    Written atomically, in the format the extension names. Deterministic: no dates, no
    software version and a fixed SVG id salt, so the same trace gives the same bytes.
    """
    image_format_of(path)
    check_colormap(cmap)
    save_figure(build_figure(trace, selection, cmap=cmap, scale=scale), path)
