"""Attention weights as heatmap images: one panel per head, and where the focus word looks;
or every layer and head of an encoder at once, a small panel each.

Each panel is one head's ``weights`` matrix, softmax(Q·Kᵀ/√d_k): row i is query word i, column j
is key word j, and every row sums to 1. For cross-attention the matrix is rectangular: rows are
the target words, columns the source words, cells still square. All panels share one colour
scale fixed to 0–1, so the same colour means the same weight in every head and in every picture.

Drawn with matplotlib's object API (``Figure`` + the Agg canvas): no pyplot, no window, no
global figure state. matplotlib is imported inside the functions, so importing this module (and
running ``attnviz explain``) never loads it.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from attnviz.errors import AttnvizError, OutputProblem
from attnviz.files import atomic_write
from attnviz.tokens import Focus, printable, word_piece_words
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage
    from matplotlib.layout_engine import ConstrainedLayoutEngine

#: Image formats by file extension.
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
DPI = 150  # pixels per inch of a PNG; vector formats ignore it

MAX_PANELS_PER_ROW = 4
MAX_GRID_WIDTH = 20.0  # inches across one row of panels, so 8 heads of 60 words stay printable
CELL = 0.45  # inches per word while a panel is between its smallest and largest size
MIN_PANEL = 2.2  # inches: two words still get big cells
MAX_PANEL = 8.0  # inches: beyond this the cells shrink instead of the picture growing
MAX_ANNOTATED_TOKENS = 12  # print the weight in each cell up to this many words
MAX_GRID_LINE_TOKENS = 30  # thin lines between cells up to this many words
MAX_LABEL_CHARS = 14  # longer words are cut with an ellipsis in tick labels
LABEL_SPACING = 1.35  # a tick label needs this many font sizes of room, or labels are thinned
CHAR_WIDTH = 0.62  # average width of a DejaVu Sans glyph, in font sizes
TITLE_FONT = 10.0  # points, the figure's title lines
TITLE_LINE = 1.8 * TITLE_FONT / 72  # inches per title line, at line spacing 1.5
PANEL_TITLE = 0.4  # inches above a panel for "Head 1"
AXIS_LABEL = 0.35  # inches for "key word (looked at)" and "query word (looking)"
COLOUR_BAR = 1.1  # inches right of the panels for the colour bar and its label
#: matplotlib's warning for a character the bundled font lacks (emoji, CJK), drawn as a box.
MISSING_GLYPH = "Glyph .* missing from font"


def check_colormap(name: str) -> None:
    """Raise AttnvizError unless ``name`` is a colormap matplotlib knows (e.g. viridis)."""
    from matplotlib import colormaps

    if name not in colormaps:
        raise AttnvizError(
            f"Unknown colormap {printable(name)!r}; use a matplotlib colormap name such as "
            "viridis, magma or cividis."
        )


# -- pure helpers: sizes and labels, no matplotlib ------------------------------------------


def tick_step(n_labels: int, max_labels: int) -> int:
    """Show every k-th of ``n_labels`` labels so that at most ``max_labels`` are shown.

    >>> tick_step(12, 40), tick_step(60, 40), tick_step(200, 40)
    (1, 2, 5)
    """
    return max(1, math.ceil(n_labels / max(1, max_labels)))


def label_positions(n_labels: int, step: int, keep: int | None = None) -> list[int]:
    """Positions 0, step, 2·step, … of the labels to show, always including ``keep``.

    Labels nearer than ``step`` to ``keep`` are dropped, so the kept one has room too.

    >>> label_positions(10, 3, keep=5)
    [0, 5, 9]
    """
    positions = range(0, n_labels, step)
    if keep is None:
        return list(positions)
    return sorted({p for p in positions if abs(p - keep) >= step} | {keep})


def text_colour(rgba: Sequence[float]) -> str:
    """ "black" or "white", whichever contrasts more with a cell of colour ``rgba`` (0–1 floats).

    WCAG relative luminance of the linearised sRGB channels, L = 0.2126·R + 0.7152·G +
    0.0722·B; black wins when (L + 0.05) / 0.05 > 1.05 / (L + 0.05), that is when L > 0.179.
    """
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return "black" if luminance > 0.179 else "white"


def truncate(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` characters, the last one an ellipsis when cut."""
    return text if len(text) <= max_chars else text[: max(1, max_chars - 1)] + "…"


def short_label(token: str) -> str:
    """A token as a tick label: control characters escaped, at most MAX_LABEL_CHARS long."""
    return truncate(printable(token), MAX_LABEL_CHARS)


def sentence_text(tokens: Sequence[str]) -> str:
    """The tokens joined back into a sentence: a space between words, none before punctuation.

    >>> sentence_text(["I", "am", "good", "."])
    'I am good.'
    """
    pieces: list[str] = []
    for token in tokens:
        glued = len(token) == 1 and token in ".,;:!?)]}%…’”»"
        pieces.append(token if glued or not pieces else " " + token)
    return printable("".join(pieces))


def text_inches(n_chars: int, font: float) -> float:
    """Rough width of ``n_chars`` characters at ``font`` points, in inches."""
    return n_chars * CHAR_WIDTH * font / 72


@dataclass(frozen=True)
class AxisLabels:
    """How the words along one axis are labelled."""

    step: int  # label every step-th word
    rotate: bool  # vertical text, because horizontal labels would not fit their cells
    depth: float  # inches the labels take away from the panel (their height or width)


def axis_labels(longest: int, n_tokens: int, cell: float, font: float, *, x: bool) -> AxisLabels:
    """Labels for ``n_tokens`` words in cells ``cell`` inches apart, the longest ``longest`` chars.

    x labels turn vertical when a horizontal one is wider than its cell; labels are thinned to
    every k-th word when their line height (LABEL_SPACING · font) exceeds the cell.
    """
    length = text_inches(longest, font) + 0.1
    rotate = x and length > 0.9 * cell
    line = LABEL_SPACING * font / 72
    step = tick_step(n_tokens, int(n_tokens * cell / line))
    depth = length if rotate or not x else line
    return AxisLabels(step=step, rotate=rotate, depth=depth)


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


def pack_phrases(phrases: Sequence[str], max_chars: int, separator: str = " · ") -> list[str]:
    """Lines of at most ``max_chars`` characters, breaking only between phrases (a phrase
    longer than a line is cut), so "d_k 4" is never split across lines.

    >>> pack_phrases(["d_model 8", "2 heads", "d_k 4"], 20)
    ['d_model 8 · 2 heads', 'd_k 4']
    """
    lines: list[str] = []
    for phrase in phrases:
        joined = lines[-1] + separator + phrase if lines else phrase
        if lines and len(joined) <= max_chars:
            lines[-1] = joined
        else:
            lines.append(truncate(phrase, max_chars))
    return lines


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


def title_lines(trace: AttentionTrace, width: float) -> list[str]:
    """The figure's title for a figure ``width`` inches wide: the sentence (cut to one line),
    or for cross-attention “source” → “target” and which side gives queries, keys and values;
    then what the colours are, the sizes and where the weights came from."""
    max_chars = int(width * 72 / (CHAR_WIDTH * TITLE_FONT))
    if trace.source_tokens is not None:
        cross = ["cross-attention:", "queries from the target,", "keys and values from the source"]
        heading = [
            sentences_line(trace.source_tokens, trace.tokens, max_chars),
            *pack_phrases(cross, max_chars, separator=" "),
        ]
    else:
        heading = [truncate(f"“{sentence_text(trace.tokens)}”", max_chars)]
    if trace.weights_source.startswith("random"):
        origin = f"random weights{trace.weights_source[len('random') :]}, not a trained model"
    else:
        origin = f"weights {printable(trace.weights_source)}"
    phrases = [
        "attention weights softmax(Q·Kᵀ/√d_k)",
        "each row sums to 1",
        *(["hatched: masked, weight 0"] if trace.mask is not None else []),
        f"d_model {trace.d_model}, {trace.n_heads} heads, d_k {trace.d_k}",
        origin,
    ]
    return [*heading, *pack_phrases(phrases, max_chars)]


# -- drawing ---------------------------------------------------------------------------------


def build_figure(
    trace: AttentionTrace,
    *,
    heads: tuple[int, ...],
    focus: Focus | None,
    cmap: str = "viridis",
) -> Figure:
    """One heatmap per head in ``heads`` (numbered from 0), a shared 0–1 colour bar and, when
    ``focus`` is given, a panel of the focus word's weights in every one of those heads.

    trace.weights: [h, n, n] -> panels of [n, n]; the focus panel is
    weights[heads, focus.index, :]: [len(heads), n]. For cross-attention the weights are
    [h, n_target, n_source]: rows are the target words (trace.tokens), columns the source
    words (trace.key_tokens), and the focus word (a target word) looks at source words.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    if not heads:
        raise ValueError("heads is empty; pass at least one head index")
    layout = plan_layout(
        trace.tokens, len(heads), len(heads) if focus else 0, key_tokens=trace.source_tokens
    )
    title = title_lines(trace, layout.width)
    # "Compressed" constrained layout packs square panels without gaps; h_pad (inches) keeps a
    # row's "key word" label off the next row's "Head 5". Panels narrower than MIN_PANEL (a
    # cross-attention panel of few source words) keep their columns' width instead, so the
    # titles and the focus panel above and below them still have room.
    compress = layout.panel_width >= MIN_PANEL
    engine = ConstrainedLayoutEngine(compress=compress, h_pad=0.1)
    figure = Figure(figsize=(layout.width, layout.height(len(title))), dpi=DPI, layout=engine)
    FigureCanvasAgg(figure)
    ratios = [layout.panel_height] * layout.rows
    if focus is not None:
        ratios.append(layout.focus_rows * layout.focus_row)
    grid = figure.add_gridspec(len(ratios), layout.columns, height_ratios=ratios)
    row_labels = [short_label(token) for token in trace.tokens]
    column_labels = [short_label(token) for token in trace.key_tokens]
    focus_row = focus.index if focus is not None else None
    panels: list[Axes] = []
    images: list[AxesImage] = []
    cells: list[tuple[Axes, NDArray[np.float64], AxesImage]] = []  # each panel's weights
    for position, head in enumerate(heads):
        row, column = divmod(position, layout.columns)
        axes = figure.add_subplot(grid[row, column])
        image = _draw_head(
            axes, trace.weights[head], head, (row_labels, column_labels), layout, cmap, focus_row
        )
        images.append(image)
        cells.append((axes, trace.weights[head], image))
        if trace.mask is not None:  # only self-attention has masks: [n, n]
            _hatch_masked(axes, trace.masked)
        if column == 0:
            axes.set_ylabel(layout.y_title, fontsize=AXIS_TITLE_FONT)
        panels.append(axes)
    if focus is not None:
        axes = figure.add_subplot(grid[layout.rows, :])
        focus_weights = trace.weights[list(heads), focus.index, :]
        # The focus word is a column too, in bold, unless the columns are another sentence.
        keep = None if trace.is_cross else focus.index
        image = _draw_focus(axes, focus_weights, heads, focus, column_labels, keep, layout, cmap)
        if trace.mask is not None:  # the focus word's masked keys, in every head's row
            _hatch_masked(axes, np.tile(trace.masked[focus.index], (len(heads), 1)))
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
    _label_words(axes, column_labels, layout.x, layout.tick_font, x=True)
    _label_words(axes, row_labels, layout.y, layout.tick_font, x=False, keep=focus_row)
    if focus_row is not None:
        _frame_row(axes, focus_row, layout.n_keys)
    axes.set_xlabel(layout.x_title, fontsize=AXIS_TITLE_FONT)
    _draw_cell_lines(axes, weights.shape, layout)
    return image


def _draw_focus(
    axes: Axes,
    weights: NDArray[np.float64],
    heads: tuple[int, ...],
    focus: Focus,
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
    axes.set_title(f'Where "{printable(focus.label)}" looks', fontsize=12, fontweight="bold")
    _label_words(axes, labels, layout.focus_x, layout.tick_font, x=True, keep=keep)
    head_labels = [f"head {head + 1}" for head in heads]
    axes.set_yticks(range(len(heads)), labels=head_labels, fontsize=layout.tick_font)
    axes.set_xlabel(layout.focus_title, fontsize=AXIS_TITLE_FONT)
    _draw_cell_lines(axes, weights.shape, layout)
    return image


def _label_words(
    axes: Axes,
    labels: Sequence[str],
    plan: AxisLabels,
    font: float,
    *,
    x: bool,
    keep: int | None = None,
) -> None:
    """Word labels on every ``plan.step``-th column (x) or row, never parsed as math; the word
    at ``keep`` is always labelled, in bold."""
    positions = label_positions(len(labels), plan.step, keep)
    shown = [labels[i] for i in positions]
    style: dict[str, Any] = {"fontsize": font, "parse_math": False}
    if x:
        axes.set_xticks(positions, labels=shown, rotation=90 if plan.rotate else 0, **style)
    else:
        axes.set_yticks(positions, labels=shown, **style)
    if keep is not None:
        texts = axes.get_xticklabels() if x else axes.get_yticklabels()
        texts[positions.index(keep)].set_fontweight("bold")
    axes.tick_params(length=2, pad=2)


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


def _hatch_masked(axes: Axes, masked: NDArray[np.bool_]) -> None:
    """Masked pairs [n, n] (−∞ before the softmax) drawn grey and hatched, not as a plain 0."""
    from matplotlib.patches import Rectangle

    for row, column in zip(*np.nonzero(masked), strict=True):
        axes.add_patch(
            Rectangle(
                (column - 0.5, row - 0.5),
                1.0,
                1.0,
                facecolor="#bdbdbd",
                edgecolor="#7f7f7f",
                hatch="///",
                linewidth=0.0,
                zorder=4,  # above the cell's printed value, which would read as a real 0
            )
        )


def _frame_row(
    axes: Axes, row: int, n_columns: int, widths: tuple[float, float] = (2.8, 1.0)
) -> None:
    """Frame the focus word's row of ``n_columns`` cells, white inside black so it shows on any
    colormap; ``widths`` are the black and white line widths in points."""
    from matplotlib.patches import Rectangle

    for colour, width in zip(("black", "white"), widths, strict=True):
        frame = Rectangle(
            (-0.5, row - 0.5),
            n_columns,
            1,
            fill=False,
            edgecolor=colour,
            linewidth=width,
            clip_on=False,
            zorder=5,  # above hatched masked cells
        )
        axes.add_patch(frame)


def save_heatmap(
    trace: AttentionTrace,
    path: Path,
    *,
    heads: tuple[int, ...],
    focus: Focus | None,
    cmap: str = "viridis",
) -> None:
    """Write the heatmaps of ``heads`` (numbered from 0) to ``path`` (.png, .svg or .pdf).

    Written atomically, in the format the extension names. Deterministic: no dates, no
    software version and a fixed SVG id salt, so the same trace gives the same bytes.
    """
    image_format = image_format_of(path)
    check_colormap(cmap)
    figure = build_figure(trace, heads=heads, focus=focus, cmap=cmap)
    atomic_write(path, _writer(figure, image_format))


def image_format_of(path: Path) -> str:
    """The image format ``path``'s extension names (png, svg or pdf); OutputProblem otherwise."""
    image_format = FORMATS.get(path.suffix.lower())
    if image_format is None:
        raise OutputProblem(
            f"{path}: unknown image extension {path.suffix or '(none)'!r}; use .png, .svg or .pdf."
        )
    return image_format


def _writer(figure: Figure, image_format: str) -> Callable[[Path], None]:
    """A function saving ``figure`` to a path in ``image_format``, with no date in the file."""
    from matplotlib import rc_context

    metadata: dict[str, Any] = {
        "png": {"Software": None},
        "svg": {"Date": None},
        "pdf": {"CreationDate": None, "ModDate": None},
    }[image_format]

    def write(temporary: Path) -> None:
        # SVG clip-path ids are hashed with a random salt unless one is set. A word in a script
        # the bundled font lacks (emoji, CJK) is drawn as boxes; one warning per glyph would
        # only bury the "wrote ..." line, so it is silenced.
        with rc_context({"svg.hashsalt": "attnviz"}), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=MISSING_GLYPH)
            figure.savefig(temporary, format=image_format, dpi=DPI, metadata=metadata)

    return write


# -- every layer and head in one picture --------------------------------------------------------

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
LAYER_SUFFIX = re.compile(r",\s*layer \d+ of \d+$")  # "…, layer 6 of 6" in weights_source
SPECIAL_TOKEN = re.compile(r"\[[A-Z]+\]")  # [CLS], [SEP], [PAD], [UNK]
CONTRACTION_ENDINGS = frozenset({"t", "s", "d", "m", "ll", "re", "ve"})


def pieces_text(tokens: Sequence[str]) -> str:
    """The sentence a model's word pieces came from, for a title: "##" pieces glued to the word
    before, "didn", "'", "t" glued into "didn't", [CLS] and [SEP] left out.

    >>> pieces_text(["[CLS]", "token", "##ization", "didn", "'", "t", "work", ".", "[SEP]"])
    "tokenization didn't work."
    """
    kept = [token for token in tokens if not SPECIAL_TOKEN.fullmatch(token)]
    words = [word for _, word in word_piece_words(kept)]
    glued: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        following = words[index + 1] if index + 1 < len(words) else ""
        if word in ("'", "’") and glued and following.lower() in CONTRACTION_ENDINGS:
            glued[-1] += word + following
            index += 2
        else:
            glued.append(word)
            index += 1
    return sentence_text(glued or tokens)


def plural(count: int, noun: str) -> str:
    """``1 layer``, ``6 layers``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def layers_title_lines(layers: Sequence[AttentionTrace], width: float) -> list[str]:
    """The title of the layers × heads figure, ``width`` inches wide: the sentence (one line),
    what the panels show, and the model without the ", layer k of L" of each layer's source."""
    max_chars = int(width * 72 / (CHAR_WIDTH * TITLE_FONT))
    first = layers[0]
    sentence = truncate(f"“{pieces_text(first.tokens)}”", max_chars)
    sources = {LAYER_SUFFIX.sub("", layer.weights_source) for layer in layers}
    source = sources.pop() if len(sources) == 1 else LAYER_SUFFIX.sub("", first.weights_source)
    if all(s.startswith("random") for s in (source, *sources)) and sources:
        source = "random"  # a different seed per layer: no one seed to name
    if source.startswith("random"):
        origin = f"random weights{source[len('random') :]}, not a trained model"
    else:
        origin = f"weights {printable(source)}"
    phrases = [
        f"attention weights of {plural(len(layers), 'layer')} × {plural(first.n_heads, 'head')}",
        "each panel: query words (rows) × key words (columns)",
        "each row sums to 1",
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


def summary_text(focus: Focus, room: float) -> SummaryText:
    """Title and caption of the focus panel, in lines of at most ``room`` inches."""
    word = printable(focus.label)
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
    layers: Sequence[AttentionTrace], focus: Focus
) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Where the focus word looks hardest in each head of each layer.

    weights[layer][head, focus.index, :]: [L, h, n] -> (argmax, max): [L, h] each, the key word
    the focus word gives its largest weight to, and that weight.
    """
    rows = np.stack([np.asarray(layer.weights[:, focus.index, :]) for layer in layers])
    return rows.argmax(axis=2), rows.max(axis=2).astype(np.float64)


def _check_layers(layers: Sequence[AttentionTrace], focus: Focus | None) -> None:
    """Raise ValueError (a bug, not a user error) unless the layers share tokens and heads."""
    if not layers:
        raise ValueError("layers is empty; pass at least one layer's trace")
    first = layers[0]
    for layer in layers[1:]:
        if layer.tokens != first.tokens or layer.n_heads != first.n_heads:
            raise ValueError("every layer must have the same tokens and number of heads")
    if focus is not None and not 0 <= focus.index < first.n_tokens:
        raise ValueError(f"focus index {focus.index} is outside the {first.n_tokens} tokens")


def build_layers_figure(
    layers: Sequence[AttentionTrace], *, focus: Focus | None, cmap: str = "viridis"
) -> Figure:
    """A small heatmap per (layer, head): rows of panels are layers, columns heads, each
    panel weights[head]: [n, n]; a shared 0–1 colour bar; and, when ``focus`` is given, a
    [layers × heads] panel of the largest weight the focus word gives, naming the word it goes to.

    Panels are placed in inches by LayersLayout rather than by a layout engine: with 72 panels
    the positions are then exact, fast and the same on every run.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    _check_layers(layers, focus)
    first = layers[0]
    layout = plan_layers_layout(first.tokens, len(layers), first.n_heads)
    title = layers_title_lines(layers, layout.width)
    summary = summary_text(focus, layout.summary_room) if focus is not None else None
    width, height = layout.width, layout.height(len(title), summary)
    figure = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(figure)

    def place(left: float, top: float, box_width: float, box_height: float) -> Axes:
        """Axes at ``left``, ``top`` inches from the picture's top-left corner."""
        bottom = height - top - box_height
        return figure.add_axes(
            (left / width, bottom / height, box_width / width, box_height / height)
        )

    grid_top = len(title) * TITLE_LINE + layout.grid_top
    labels = [short_label(token) for token in first.tokens]
    focus_row = focus.index if focus is not None else None
    images: list[AxesImage] = []
    for layer_index, layer in enumerate(layers):
        for head in range(layout.n_heads):
            axes = place(
                layout.left + head * (layout.panel + PANEL_GAP),
                grid_top + layer_index * (layout.panel + PANEL_GAP),
                layout.panel,
                layout.panel,
            )
            image = _draw_small_panel(
                axes, layer.weights[head], labels, layout, cmap, focus_row, layer_index, head
            )
            if layer.mask is not None:
                _hatch_masked(axes, layer.masked)
            images.append(image)
    colour_axes = place(layout.left + layout.grid_width + 0.2, grid_top, 0.15, layout.grid_height)
    colour_bar = figure.colorbar(images[0], cax=colour_axes)
    colour_bar.set_label("attention weight", fontsize=10)
    if focus is not None and summary is not None:
        summary_top = grid_top + layout.grid_height + layout.x_depth + SECTION_GAP
        summary_top += summary.title_height
        axes = place(layout.left, summary_top, layout.grid_width, len(layers) * SUMMARY_ROW)
        _draw_layers_focus(axes, layers, focus, summary, labels, layout, cmap)
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
            _label_words(axes, labels, layout.y, layout.tick_font, x=False, keep=focus_row)
        elif focus_row is not None:
            # Too many words to label: only the focus word, so the frame can be read.
            only_focus = AxisLabels(step=layout.n_tokens + 1, rotate=False, depth=layout.y.depth)
            _label_words(axes, labels, only_focus, layout.tick_font, x=False, keep=focus_row)
    if layer == layout.n_layers - 1 and layout.labelled:
        _label_words(axes, labels, layout.x, layout.tick_font, x=True)
    if focus_row is not None:
        _frame_row(axes, focus_row, layout.n_tokens, widths=(1.4, 0.6))
    return image


def _draw_layers_focus(
    axes: Axes,
    layers: Sequence[AttentionTrace],
    focus: Focus,
    text: SummaryText,
    labels: Sequence[str],
    layout: LayersLayout,
    cmap: str,
) -> None:
    """[L, h] cells: the largest weight the focus word gives in that head, and the word it
    gives it to, printed in black or white, whichever reads better on the cell."""
    targets, weights = focus_targets(layers, focus)
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
    path: Path,
    *,
    focus: Focus | None,
    cmap: str = "viridis",
) -> None:
    """Write every layer's heads as one layers × heads grid to ``path`` (.png, .svg or .pdf).

    Same rules as save_heatmap: the format the extension names, written atomically, no dates,
    a fixed SVG id salt, so the same layers give the same bytes.
    """
    image_format = image_format_of(path)
    check_colormap(cmap)
    figure = build_layers_figure(layers, focus=focus, cmap=cmap)
    atomic_write(path, _writer(figure, image_format))
