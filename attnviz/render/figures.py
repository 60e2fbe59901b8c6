"""What every figure shares: image formats and the deterministic, atomic save; word labels
cut to fit, thinned when crowded, in black or white on a cell; titles packed into lines.

matplotlib is imported inside the functions, so importing this module costs nothing.
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

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, OutputProblem
from attnviz.files import atomic_write
from attnviz.provenance import WeightsKind, WeightsOrigin
from attnviz.selection import Selection
from attnviz.tokens import printable
from attnviz.trace import AttentionTrace

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Image formats by file extension.
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
IMAGE_EXTENSIONS = tuple(FORMATS)
DPI = 150  # pixels per inch of a PNG; vector formats ignore it

MAX_LABEL_CHARS = 14  # longer words are cut with an ellipsis in tick labels
LABEL_SPACING = 1.35  # a tick label needs this many font sizes of room, or labels are thinned
CHAR_WIDTH = 0.62  # average width of a DejaVu Sans glyph, in font sizes
TITLE_FONT = 10.0  # points, the figure's title lines
TITLE_LINE = 1.8 * TITLE_FONT / 72  # inches per title line, at line spacing 1.5
COLOUR_BAR = 1.1  # inches right of the panels for the colour bar and its label
#: A row of float32 weights sums to 1 within about 1e-6; a total further off than this has
#: lost weight to hidden columns.
ROW_SUM_TOLERANCE = 1e-4
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


def pack_phrases(phrases: Sequence[str], max_chars: int, separator: str = "; ") -> list[str]:
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


def weights_phrase(origin: WeightsOrigin, *, with_layer: bool = True) -> str:
    """Where the weights came from, for a title: random ones are said to be random."""
    if origin.kind is WeightsKind.RANDOM:
        return f"random weights (seed {origin.seed}), not a trained model"
    described = printable(origin.describe(with_layer=with_layer))
    if origin.is_drawn:
        return f"weights {described} (random, seed {origin.seed}), not a trained model"
    if origin.is_random:
        return f"weights {described}, not a trained model"
    return f"weights {described}"


def shown_row_sums(weights: FloatArray, selection: Selection) -> FloatArray:
    """Each row's total as drawn: [h, n_q, n_k] -> [h, rows]. A word's row is the mean of its
    pieces' rows and its column the sum of its pieces' columns, so merging keeps a total of 1;
    a hidden column ([CLS], [SEP]) takes its weight out of every row's total."""
    return np.stack([selection.pairs(head, total=True).sum(axis=1) for head in weights])


def hidden_taking_weight(
    weights: FloatArray, selection: Selection, tokens: Sequence[str]
) -> list[str]:
    """The hidden tokens that receive weight in the shown heads' rows ([CLS], [SEP]), not the
    masked padding, which receives none.  weights: [..., n_q, n_k]"""
    return [
        tokens[position]
        for position in selection.hidden
        if float(weights[..., position].max(initial=0.0)) > 0
    ]


def masked_shown(masked: np.ndarray, selection: Selection) -> bool:
    """Whether any cell drawn is masked (hidden padding columns are not drawn)."""
    return bool(masked.any() and selection.masked_pairs(masked).any())


def row_sums_phrase(row_sums: FloatArray, hidden: Sequence[str]) -> str:
    """What the drawn rows of weights add up to, for a title: "each row sums to 1" when every
    total in ``row_sums`` [...] does (within ROW_SUM_TOLERANCE); otherwise which ``hidden``
    tokens took part of it, e.g. "[CLS]/[SEP] hidden: rows sum to less than 1"."""
    if np.all(np.abs(row_sums - 1.0) <= ROW_SUM_TOLERANCE):
        return "each row sums to 1"
    names = "/".join(dict.fromkeys(printable(token) for token in hidden))
    return f"{names} hidden: rows sum to less than 1" if names else "rows sum to less than 1"


def pieces_text(trace: AttentionTrace) -> str:
    """The sentence a trace's tokens came from, for a title: a model's words as the tokenizer
    grouped its pieces, special tokens left out; attnviz's own tokens joined as a sentence."""
    provenance = trace.provenance
    if provenance.sentence:
        return printable(provenance.sentence)
    if not provenance.word_groups:
        kept = [t for i, t in enumerate(trace.tokens) if i not in provenance.special]
        return sentence_text(kept or trace.tokens)
    special = set(provenance.special)
    words = [
        word
        for word, group in zip(provenance.words, provenance.word_groups, strict=True)
        if not special.issuperset(group)
    ]
    return printable(" ".join(words)) if words else sentence_text(trace.tokens)


# -- drawing and saving ------------------------------------------------------------------------


def label_words(
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


def hatch_masked(axes: Axes, masked: NDArray[np.bool_]) -> None:
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


def frame_row(
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


def image_format_of(path: Path) -> str:
    """The image format ``path``'s extension names (png, svg or pdf); OutputProblem otherwise."""
    image_format = FORMATS.get(path.suffix.lower())
    if image_format is None:
        raise OutputProblem(
            f"{path}: unknown image extension {path.suffix or '(none)'!r}; use .png, .svg or .pdf."
        )
    return image_format


def save_figure(figure: Figure, path: Path) -> None:
    """Write ``figure`` to ``path`` in the format its extension names (.png, .svg or .pdf),
    atomically and deterministically: no dates, no software version, a fixed SVG id salt, so
    the same figure gives the same bytes."""
    from matplotlib import rc_context

    image_format = image_format_of(path)
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

    atomic_write(path, write)


def new_figure(width: float, height: float, **options: Any) -> Figure:
    """A matplotlib Figure on the Agg canvas: no pyplot, no window, no global state."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI, **options)
    FigureCanvasAgg(figure)
    return figure
