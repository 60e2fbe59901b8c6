"""Attention weights as heatmap images: one panel per head, and where the focus word looks.

Each panel is one head's ``weights`` matrix, softmax(Q·Kᵀ/√d_k): row i is query word i, column j
is key word j, and every row sums to 1. All panels share one colour scale fixed to 0–1, so the
same colour means the same weight in every head and in every picture.

Drawn with matplotlib's object API (``Figure`` + the Agg canvas): no pyplot, no window, no
global figure state. matplotlib is imported inside the functions, so importing this module (and
running ``attnviz explain``) never loads it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from attnviz.errors import AttnvizError, OutputProblem
from attnviz.files import atomic_write
from attnviz.tokens import Focus, printable
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.image import AxesImage

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


@dataclass(frozen=True)
class Layout:
    """Sizes of the picture, in inches and points, for n words and a number of head panels."""

    n_tokens: int
    columns: int  # head panels per row
    rows: int  # rows of head panels
    panel: float  # inches, side of one square heatmap
    tick_font: float  # points, word labels
    value_font: float  # points, the weights printed in cells
    annotate: bool  # print each weight in its cell
    x: AxisLabels  # key words under each heatmap
    y: AxisLabels  # query words left of each heatmap
    focus_rows: int  # rows of the focus panel (one per shown head); 0 without a focus word
    focus_x: AxisLabels  # key words under the focus panel, whose cells are wider
    focus_row: float  # inches, height of one row of the focus panel

    @property
    def width(self) -> float:
        """Inches: each column of panels with its word labels, then the colour bar."""
        return round(self.columns * (AXIS_LABEL + self.y.depth + self.panel + 0.2) + COLOUR_BAR, 2)

    def height(self, title_lines: int) -> float:
        """Inches: title lines, rows of panels with their labels, the focus panel if any."""
        height = title_lines * TITLE_LINE + 0.3
        height += self.rows * (PANEL_TITLE + self.panel + self.x.depth + AXIS_LABEL)
        if self.focus_rows:
            height += (
                PANEL_TITLE + self.focus_rows * self.focus_row + self.focus_x.depth + AXIS_LABEL
            )
        return round(height, 2)


def plan_layout(tokens: Sequence[str], n_panels: int, focus_rows: int) -> Layout:
    """Choose panel size, fonts and label thinning so that 2 to hundreds of words stay readable.

    A panel grows by CELL inches per word between MIN_PANEL and the largest size that keeps a
    row of panels within MAX_GRID_WIDTH; fonts follow the cell size, down to a readable floor,
    after which only every k-th word is labelled.
    """
    n_tokens = len(tokens)
    columns = min(n_panels, MAX_PANELS_PER_ROW)
    panel = min(max(CELL * n_tokens, MIN_PANEL), min(MAX_PANEL, MAX_GRID_WIDTH / columns))
    cell = panel / n_tokens  # inches per word
    font = min(max(0.6 * cell * 72, 6.5), 10.0)
    longest = max(len(short_label(token)) for token in tokens)
    y = axis_labels(longest, n_tokens, cell, font, x=False)
    # The focus panel spans every column of panels, so its cells are wider than a heatmap's.
    focus_cell = columns * (panel + y.depth + AXIS_LABEL) / n_tokens
    return Layout(
        n_tokens=n_tokens,
        columns=columns,
        rows=math.ceil(n_panels / columns),
        panel=panel,
        tick_font=font,
        value_font=min(max(0.28 * cell * 72, 6.0), 12.0),
        annotate=n_tokens <= MAX_ANNOTATED_TOKENS,
        x=axis_labels(longest, n_tokens, cell, font, x=True),
        y=y,
        focus_rows=focus_rows,
        focus_x=axis_labels(longest, n_tokens, focus_cell, font, x=True),
        focus_row=min(max(cell, 0.3), 0.5),
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


def title_lines(trace: AttentionTrace, width: float) -> list[str]:
    """The figure's title for a figure ``width`` inches wide: the sentence (cut to one line),
    then what the colours are, the sizes and where the weights came from."""
    max_chars = int(width * 72 / (CHAR_WIDTH * TITLE_FONT))
    sentence = truncate(f"“{sentence_text(trace.tokens)}”", max_chars)
    if trace.weights_source.startswith("random"):
        origin = f"random weights{trace.weights_source[len('random') :]}, not a trained model"
    else:
        origin = f"weights {printable(trace.weights_source)}"
    phrases = [
        "attention weights softmax(Q·Kᵀ/√d_k)",
        "each row sums to 1",
        f"d_model {trace.d_model}, {trace.n_heads} heads, d_k {trace.d_k}",
        origin,
    ]
    return [sentence, *pack_phrases(phrases, max_chars)]


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
    weights[heads, focus.index, :]: [len(heads), n].
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    if not heads:
        raise ValueError("heads is empty; pass at least one head index")
    layout = plan_layout(trace.tokens, len(heads), len(heads) if focus else 0)
    title = title_lines(trace, layout.width)
    # "Compressed" constrained layout packs square panels without gaps; h_pad (inches) keeps a
    # row's "key word" label off the next row's "Head 5".
    engine = ConstrainedLayoutEngine(compress=True, h_pad=0.1)
    figure = Figure(figsize=(layout.width, layout.height(len(title))), dpi=DPI, layout=engine)
    FigureCanvasAgg(figure)
    ratios = [layout.panel] * layout.rows
    if focus is not None:
        ratios.append(layout.focus_rows * layout.focus_row)
    grid = figure.add_gridspec(len(ratios), layout.columns, height_ratios=ratios)
    labels = [short_label(token) for token in trace.tokens]
    focus_row = focus.index if focus is not None else None
    panels: list[Axes] = []
    images: list[AxesImage] = []
    for position, head in enumerate(heads):
        row, column = divmod(position, layout.columns)
        axes = figure.add_subplot(grid[row, column])
        images.append(_draw_head(axes, trace.weights[head], head, labels, layout, cmap, focus_row))
        if column == 0:
            axes.set_ylabel("query word (looking)", fontsize=9)
        panels.append(axes)
    if focus is not None:
        axes = figure.add_subplot(grid[layout.rows, :])
        focus_weights = trace.weights[list(heads), focus.index, :]
        _draw_focus(axes, focus_weights, heads, focus, labels, layout, cmap)
        panels.append(axes)
    colour_bar = figure.colorbar(images[0], ax=panels, shrink=0.9, aspect=30, pad=0.02)
    colour_bar.set_label("attention weight", fontsize=10)
    figure.suptitle("\n".join(title), fontsize=TITLE_FONT, linespacing=1.5, parse_math=False)
    return figure


def _draw_head(
    axes: Axes,
    weights: NDArray[np.float64],
    head: int,
    labels: Sequence[str],
    layout: Layout,
    cmap: str,
    focus_row: int | None,
) -> AxesImage:
    """One head's weights [n, n]: rows are query words, columns key words; the focus word's
    row framed."""
    image = axes.imshow(weights, cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
    axes.set_title(f"Head {head + 1}", fontsize=12, fontweight="bold")
    _label_words(axes, labels, layout.x, layout.tick_font, x=True)
    _label_words(axes, labels, layout.y, layout.tick_font, x=False, keep=focus_row)
    if focus_row is not None:
        _frame_row(axes, focus_row, layout.n_tokens)
    axes.set_xlabel("key word (looked at)", fontsize=9)
    _finish_cells(axes, weights, image, layout)
    return image


def _draw_focus(
    axes: Axes,
    weights: NDArray[np.float64],
    heads: tuple[int, ...],
    focus: Focus,
    labels: Sequence[str],
    layout: Layout,
    cmap: str,
) -> None:
    """The focus word's row of weights in each shown head: [len(heads), n]."""
    image = axes.imshow(
        weights, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest"
    )
    axes.set_title(f'Where "{printable(focus.label)}" looks', fontsize=12, fontweight="bold")
    _label_words(axes, labels, layout.focus_x, layout.tick_font, x=True, keep=focus.index)
    head_labels = [f"head {head + 1}" for head in heads]
    axes.set_yticks(range(len(heads)), labels=head_labels, fontsize=layout.tick_font)
    axes.set_xlabel("key word (looked at)", fontsize=9)
    _finish_cells(axes, weights, image, layout)


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


def _finish_cells(
    axes: Axes, weights: NDArray[np.float64], image: AxesImage, layout: Layout
) -> None:
    """Lines between cells while they are big enough, and each weight [rows, columns] printed
    in its cell in black or white, whichever reads better on the cell's colour."""
    n_rows, n_columns = weights.shape
    if layout.n_tokens <= MAX_GRID_LINE_TOKENS:
        axes.set_xticks(np.arange(n_columns + 1) - 0.5, minor=True)
        axes.set_yticks(np.arange(n_rows + 1) - 0.5, minor=True)
        axes.grid(which="minor", color="white", linewidth=0.6)
        axes.tick_params(which="minor", length=0)
    if not layout.annotate:
        return
    colormap = image.get_cmap()
    for (row, column), value in np.ndenumerate(weights):
        colour = text_colour(colormap(float(value)))
        axes.text(
            column,
            row,
            f"{value:.2f}",
            ha="center",
            va="center",
            fontsize=layout.value_font,
            color=colour,
        )


def _frame_row(axes: Axes, row: int, n_tokens: int) -> None:
    """Frame the focus word's row, white inside black so it shows on any colormap."""
    from matplotlib.patches import Rectangle

    for colour, width in (("black", 2.8), ("white", 1.0)):
        frame = Rectangle(
            (-0.5, row - 0.5),
            n_tokens,
            1,
            fill=False,
            edgecolor=colour,
            linewidth=width,
            clip_on=False,
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
    image_format = FORMATS.get(path.suffix.lower())
    if image_format is None:
        raise OutputProblem(
            f"{path}: unknown image extension {path.suffix or '(none)'!r}; use .png, .svg or .pdf."
        )
    check_colormap(cmap)
    figure = build_figure(trace, heads=heads, focus=focus, cmap=cmap)
    atomic_write(path, _writer(figure, image_format))


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
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            figure.savefig(temporary, format=image_format, dpi=DPI, metadata=metadata)

    return write
