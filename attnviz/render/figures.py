"""What every figure shares: image formats and the deterministic, atomic save; word labels
cut to fit, thinned when crowded, in black or white on a cell; titles packed into lines.

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import functools
import math
import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError, OutputProblem
from attnviz.files import atomic_write
from attnviz.labels import fit_label, occurrence_labels
from attnviz.provenance import WeightsKind, WeightsOrigin
from attnviz.render.options import Scale
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
COLOUR_BAR = 1.3  # inches right of the panels for the colour bar, its numbers and label
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


def truncate_words(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` characters at a space when one is near the end (a word is
    not cut in the middle), the last one an ellipsis when cut.

    >>> truncate_words("the cat wanted to catch it", 20)
    'the cat wanted to …'
    """
    if len(text) <= max_chars:
        return text
    cut = text[: max(1, max_chars - 1)]
    space = cut.rfind(" ")
    return (cut[: space + 1] if space >= len(cut) - 15 and space > 0 else cut) + "…"


def truncate_to(text: str, inches: float, font: float) -> str:
    """``text`` cut with an ellipsis to fit ``inches`` at ``font`` points (at least one
    character and the ellipsis), found by bisection: a few measurements for any length."""
    if text_width(text, font) <= inches:
        return text
    low, high = 1, len(text) - 1  # text[:low] + "…" is the shortest kept; high the longest tried
    while low < high:
        middle = (low + high + 1) // 2
        if text_width(text[:middle] + "…", font) <= inches:
            low = middle
        else:
            high = middle - 1
    return text[:low] + "…"


#: Marks a word piece written joined to the piece before it ("didn", "·'", "·t"), so that a
#: figure's labels read as the words they spell.
JOINED = "·"
JOINED_PHRASE = f"{JOINED}t: a piece written joined to the one before"


def word_labels(words: Sequence[str], sentence: str = "") -> list[str]:
    """Labels of the words (or word pieces) along a figure's axis, as the terminal names them:
    repeats numbered (the:1, the:2), and where ``sentence`` is the text a tokenizer cut into
    these pieces, a piece written joined to the one before marked with JOINED. Pieces are found
    in the sentence in order, ignoring case; one the sentence does not spell as it is ([CLS], a
    WordPiece continuation, an accent the tokenizer stripped) is left unmarked.

    >>> word_labels(["[CLS]", "didn", "'", "t", "go", "[SEP]"], "Didn't go")
    ['[CLS]', 'didn', "·'", '·t', 'go', '[SEP]']
    """
    labels = occurrence_labels([printable(word) for word in words])
    if not sentence:
        return labels
    text, end = sentence.casefold(), None
    for position, word in enumerate(words):
        piece = word.strip().casefold()
        found = text.find(piece, end or 0) if piece else -1
        if found < 0:
            continue
        if found == end:
            labels[position] = JOINED + labels[position]
        end = found + len(piece)
    return labels


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


#: Inches between a panel's edge and its word labels: matplotlib's tick length and pad (2 + 2
#: points, as label_words sets them).
TICK_ROOM = 4 / 72


def axis_labels(widest: float, n_tokens: int, cell: float, font: float, *, x: bool) -> AxisLabels:
    """Labels for ``n_tokens`` words in cells ``cell`` inches apart, the widest ``widest`` inches
    at ``font`` points.

    x labels stay horizontal while the widest fits its cell, else turn vertical; labels are
    thinned to every k-th word when their line height (LABEL_SPACING · font) exceeds the cell.
    """
    rotate = x and widest > 0.92 * cell
    line = LABEL_SPACING * font / 72
    step = tick_step(n_tokens, int(n_tokens * cell / line)) if rotate or not x else 1
    depth = TICK_ROOM + (widest if rotate or not x else 1.2 * font / 72)
    return AxisLabels(step=step, rotate=rotate, depth=depth)


def pack_phrases(phrases: Sequence[str], max_chars: int, separator: str = "; ") -> list[str]:
    """Lines of at most ``max_chars`` characters, breaking only between phrases (a phrase
    longer than a line is cut), so "d_k 4" is never split across lines.

    >>> pack_phrases(["d_model 8", "2 heads", "d_k 4"], 20)
    ['d_model 8; 2 heads', 'd_k 4']
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


# -- text sizes and colour scales ---------------------------------------------------------------

#: The smallest text of a figure (cell values, word labels): 8 points, 16.7 px tall at 150 dpi.
MIN_FONT = 8.0
#: The smallest title: 12 points, 25 px tall at 150 dpi.
MIN_TITLE_FONT = 12.0


def title_font_for(width: float) -> float:
    """Points for a figure's title lines: larger in a larger picture, so that a picture shrunk to
    fit a projector's screen keeps a readable title (0.75 point per inch of width, 12 to 20)."""
    return min(max(0.75 * width, MIN_TITLE_FONT), 20.0)


def title_line(font: float) -> float:
    """Inches per title line at line spacing 1.5."""
    return 1.8 * font / 72


def widest(texts: Sequence[str], points: float, *, bold: bool = False) -> float:
    """Inches the widest of ``texts`` takes: each measured, up to 64 different ones; of more,
    the 16 longest by characters (a picture of 512 words does not measure 512 labels)."""
    different = set(texts)
    measured = different if len(different) <= 64 else sorted(different, key=len)[-16:]
    return max((text_width(text, points, bold=bold) for text in measured), default=0.0)


@functools.lru_cache(maxsize=4096)
def text_width(text: str, points: float, *, bold: bool = False) -> float:
    """Inches ``text`` takes at ``points`` in matplotlib's default font, as FreeType lays it out
    (the same font files and metrics the picture is drawn with)."""
    font = _measuring_font(bold)
    font.set_size(points, 72)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=MISSING_GLYPH)
        font.set_text(text, 0.0)
    width, _ = font.get_width_height()  # 1/64 of a point at 72 dpi
    return float(width) / 64 / 72


def unsupported_words(words: Sequence[str], *, family: str = "sans-serif") -> list[str]:
    """The words with a character matplotlib's bundled DejaVu font lacks (Chinese, Japanese,
    emoji): a picture draws those characters as boxes, so the person should be told."""
    from matplotlib.font_manager import FontProperties, findfont, get_font

    font = get_font(findfont(FontProperties(family=[family])))
    lacking = [
        word
        for word in dict.fromkeys(words)
        if any(font.get_char_index(ord(char)) == 0 for char in word if char.isprintable())
    ]
    return lacking


def missing_glyphs_note(
    words: Sequence[str], *, family: str = "sans-serif", what: str = "the picture's font"
) -> tuple[str, ...]:
    """A note naming the words a picture (or ``what`` else) draws as boxes, or none."""
    lacking = unsupported_words(words, family=family)
    if not lacking:
        return ()
    shown = ", ".join(repr(fit_label(word)) for word in lacking[:5])
    more = f" and {len(lacking) - 5} more" if len(lacking) > 5 else ""
    return (
        f"{what} (DejaVu, bundled with matplotlib) has no glyphs for some "
        f"characters of {shown}{more}; they are drawn as boxes (the terminal shows them).",
    )


@functools.cache
def _measuring_font(bold: bool) -> Any:
    from matplotlib.font_manager import FontProperties, findfont, get_font

    return get_font(findfont(FontProperties(weight="bold" if bold else "normal")))


#: Up to this many key words the default colour scale is 0–1: a row's weights average 1/n, so
#: beyond it most cells of a fixed scale share one dark colour and the largest shown is used.
FIXED_SCALE_WORDS = 16


def default_scale(n_keys: int) -> Scale:
    """The colour scale that reads best for ``n_keys`` columns: 0–1 up to FIXED_SCALE_WORDS."""
    return Scale.fixed if n_keys <= FIXED_SCALE_WORDS else Scale.auto


@dataclass(frozen=True)
class ColourScale:
    """How weights become colours: cells show ``colours_of(weights)`` on 0..top."""

    scale: Scale
    top: float  # the colour bar's upper end

    def colours_of(self, weights: FloatArray) -> FloatArray:
        """[..., columns] -> the values coloured: the weights, or each row ÷ its largest."""
        if self.scale is not Scale.row:
            return weights
        largest = weights.max(axis=-1, keepdims=True)
        # A row of zeros (all masked or hidden) stays 0 rather than 0/0.
        rescaled: FloatArray = np.divide(
            weights, largest, out=np.zeros_like(weights), where=largest > 0
        )
        return rescaled

    @property
    def labels(self) -> tuple[str, ...]:
        """The colour bar's label, what a colour means, longest first: the first that fits."""
        if self.scale is Scale.row:
            return (
                "attention weight ÷ its row's largest\n(a row's largest is brightest)",
                "weight ÷ its row's largest",
                "÷ row's largest",
            )
        if self.scale is Scale.auto:
            return (
                f"attention weight\n(colours 0–{self.top:.2f}: the largest shown)",
                f"weight (0–{self.top:.2f}: largest)",
                f"0–{self.top:.2f}: largest",
            )
        return ("attention weight\n(colours 0–1)", "attention weight (0–1)", "weight (0–1)")

    def label(self, room: float, font: float) -> str:
        """The longest of ``labels`` whose lines fit along a colour bar ``room`` inches long."""
        for label in self.labels:
            if max(text_width(line, font) for line in label.splitlines()) <= room:
                return label
        return self.labels[-1]


def colour_scale(scale: Scale | None, shown: FloatArray) -> ColourScale:
    """The colour scale asked for (``None``: the default for the columns shown) of the weights
    ``shown`` [..., columns]; the largest shown is rounded up to 2 decimals."""
    chosen = scale or default_scale(shown.shape[-1])
    if chosen is Scale.auto:
        largest = float(shown.max(initial=0.0))
        return ColourScale(chosen, max(math.ceil(largest * 100 - 1e-9) / 100, 0.01))
    return ColourScale(chosen, 1.0)


# -- cell values --------------------------------------------------------------------------------


def value_strings(weights: FloatArray, compact: bool) -> list[str]:
    """Each weight [...] at 2 decimals, "0.45", or ``compact`` without the leading zero, ".45"
    (and "1" for 1.00), where cells are too narrow for four characters.

    >>> value_strings(np.array([0.453, 1.0, 0.004]), compact=True)
    ['.45', '1', '.00']
    """
    strings = [f"{float(value):.2f}" for value in np.ravel(weights)]
    if not compact:
        return strings
    return ["1" if text == "1.00" else text.removeprefix("0") for text in strings]


def value_font(cell_width: float, cell_height: float, chars: int) -> float:
    """The largest font, up to 14 points, at which ``chars`` digits fit a cell of the given
    inches with a margin; 0 when even MIN_FONT does not fit."""
    by_width = 0.85 * cell_width / text_inches(chars, 1.0)
    by_height = 0.55 * cell_height * 72
    font = min(by_width, by_height, 14.0)
    return font if font >= MIN_FONT else 0.0


#: What each collection drawn by draw_cell_texts reads, cell by cell, for cell_texts().
_CELL_TEXTS: weakref.WeakKeyDictionary[Any, tuple[str, ...]] = weakref.WeakKeyDictionary()


def cell_texts(axes: Axes) -> list[str]:
    """The strings printed in the cells of ``axes`` by draw_cell_texts, in drawing order (row
    by row): what a reader of the picture sees, as text."""
    return [text for drawn in axes.collections for text in _CELL_TEXTS.get(drawn, ())]


def draw_values(
    axes: Axes, weights: FloatArray, colours: FloatArray, font: float, compact: bool
) -> Any:
    """Print each weight [rows, columns] in its cell, black or white by the cell's colour
    ``colours`` [rows, columns, 4] (see draw_cell_texts)."""
    rows, columns = np.indices(weights.shape)
    cells = np.column_stack([columns.ravel(), rows.ravel()])
    return draw_cell_texts(
        axes, value_strings(weights, compact), cells, colours.reshape(-1, 4), font
    )


def draw_cell_texts(
    axes: Axes,
    strings: Sequence[str],
    cells: NDArray[np.float64],
    colours: FloatArray,
    font: float,
) -> Any:
    """Print ``strings`` centred on ``cells`` [k, 2] (x, y in data coordinates), each black or
    white by the colour under it ``colours`` [k, 4], as one collection of glyph outlines: one
    outline per distinct string, placed at every cell that shows it. A Text artist per cell
    lays out and draws each string on its own: 968 of them took 0.7 s for 8 heads of 11 words.
    """
    from matplotlib.collections import PathCollection
    from matplotlib.transforms import Affine2D

    outlines = {text: centred_outline(text, font) for text in set(strings)}
    texts = PathCollection(
        [outlines[text] for text in strings],
        offsets=cells,
        offset_transform=axes.transData,
        # outlines are in points; this follows the figure's dpi when it is saved at another
        transform=Affine2D().scale(1 / 72) + axes.figure.dpi_scale_trans,
        facecolors=[text_colour(list(rgba)) for rgba in colours],
        edgecolors="none",
        linewidths=0.0,
        zorder=3,
    )
    axes.add_collection(texts, autolim=False)
    _CELL_TEXTS[texts] = tuple(strings)
    return texts


@functools.lru_cache(maxsize=4096)
def centred_outline(text: str, font: float) -> Any:
    """The outline of ``text`` at ``font`` points, its box centred on (0, 0); made once per
    string and size (a figure's panels share most of their strings)."""
    from matplotlib.path import Path as Outline
    from matplotlib.textpath import TextPath
    from matplotlib.transforms import Affine2D

    outline = TextPath((0, 0), text, size=font)
    drawn = outline.vertices[outline.codes != Outline.CLOSEPOLY]
    low, high = drawn.min(axis=0), drawn.max(axis=0)
    return outline.transformed(Affine2D().translate(*(-(low + high) / 2)))


# -- drawing and saving ------------------------------------------------------------------------


#: The word labels label_words drew along each Axes: (x labels, y labels).
_WORD_LABELS: weakref.WeakKeyDictionary[Any, tuple[list[Any], list[Any]]] = (
    weakref.WeakKeyDictionary()
)


def word_label_texts(axes: Axes, *, x: bool) -> list[Any]:
    """The Text artists of the words label_words wrote under (x) or left of a panel."""
    return _WORD_LABELS.get(axes, ([], []))[0 if x else 1]


def label_words(
    axes: Axes,
    labels: Sequence[str],
    plan: AxisLabels,
    font: float,
    *,
    x: bool,
    keep: int | None = None,
) -> None:
    """Word labels under every ``plan.step``-th column (x) or left of every such row of an
    image panel, TICK_ROOM from its edge, never parsed as math; the word at ``keep`` is always
    labelled, in bold. The panel's axis title goes past them (its labelpad is their depth).

    Plain texts rather than tick labels: a tick is two lines and two texts, configured one by
    one, which took a quarter of the time of a 2-head picture.
    """
    from matplotlib.transforms import ScaledTranslation

    positions = label_positions(len(labels), plan.step, keep)
    inches = axes.get_figure(root=True).dpi_scale_trans  # type: ignore[union-attr]
    if x:
        axes.set_xticks([])
        bottom = max(axes.get_ylim())  # an image's y axis points down: its last row's edge
        place = axes.transData + ScaledTranslation(0, -TICK_ROOM, inches)
        anchor: dict[str, Any] = {"ha": "center", "va": "top", "rotation": 90 * plan.rotate}
        spots: list[tuple[float, float]] = [(position, bottom) for position in positions]
        axes.xaxis.labelpad = plan.depth * 72
    else:
        axes.set_yticks([])
        left = min(axes.get_xlim())
        place = axes.transData + ScaledTranslation(-TICK_ROOM, 0, inches)
        anchor = {"ha": "right", "va": "center"}
        spots = [(left, position) for position in positions]
        axes.yaxis.labelpad = plan.depth * 72
    texts = [
        axes.text(
            *spot,
            labels[position],
            transform=place,
            fontsize=font,
            fontweight="bold" if position == keep else "normal",
            parse_math=False,
            **anchor,
        )
        for spot, position in zip(spots, positions, strict=True)
    ]
    drawn = _WORD_LABELS.setdefault(axes, ([], []))
    drawn[0 if x else 1][:] = texts


def masked_runs(masked: NDArray[np.bool_]) -> list[tuple[int, int, int]]:
    """The masked cells of [rows, columns] as runs along each row: (row, first column, length).

    >>> masked_runs(np.array([[False, True, True], [False, False, True]]))
    [(0, 1, 2), (1, 2, 1)]
    """
    runs = []
    for row, cells in enumerate(np.asarray(masked, dtype=bool)):
        # A run starts where a cell is masked and the one before it is not: diff of 0/1 padded.
        edges = np.diff(np.concatenate(([0], cells.astype(np.int8), [0])))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        runs += [(row, int(a), int(b - a)) for a, b in zip(starts, ends, strict=True)]
    return runs


def hatch_masked(
    axes: Axes,
    masked: NDArray[np.bool_],
    origins: Sequence[tuple[float, float]] = ((0.0, 0.0),),
) -> None:
    """Masked pairs [rows, columns] (−∞ before the softmax) drawn grey and hatched, not as a
    plain 0: one patch whose path holds a rectangle per run of masked cells along a row, so a
    causal mask of 512 words is 511 rectangles in one artist, not 130,816 patches. Cell
    (row, column) is centred on (column, row), shifted by each of ``origins`` (x, y): one
    panel, or every panel of a tiled grid."""
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path as Outline

    runs = masked_runs(masked)
    if not runs:
        return
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]], dtype=float)
    codes = [Outline.MOVETO, *[Outline.LINETO] * 3, Outline.CLOSEPOLY]
    vertices = np.concatenate(
        [
            square * (length, 1) + (x + column - 0.5, y + row - 0.5)
            for x, y in origins
            for row, column, length in runs
        ]
    )
    outline = Outline(vertices, codes * (len(runs) * len(origins)))
    axes.add_patch(
        PathPatch(
            outline,
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
    # zlib level 1 rather than Pillow's 6: a third of the time to write a picture of printed
    # weights, for a file about 8 % larger.
    extra: dict[str, Any] = {"pil_kwargs": {"compress_level": 1}} if image_format == "png" else {}

    def write(temporary: Path) -> None:
        # SVG clip-path ids are hashed with a random salt unless one is set. A word in a script
        # the bundled font lacks (emoji, CJK) is drawn as boxes; one warning per glyph would
        # only bury the "wrote ..." line, so it is silenced.
        with rc_context({"svg.hashsalt": "attnviz"}), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=MISSING_GLYPH)
            figure.savefig(temporary, format=image_format, dpi=DPI, metadata=metadata, **extra)

    atomic_write(path, write)


def new_figure(width: float, height: float, **options: Any) -> Figure:
    """A matplotlib Figure on the Agg canvas: no pyplot, no window, no global state."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI, **options)
    FigureCanvasAgg(figure)
    return figure
