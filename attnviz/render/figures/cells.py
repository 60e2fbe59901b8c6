"""What is drawn in a panel's cells besides their colour: the weights printed as numbers (or
any strings, as one collection of glyph outlines), masked cells grey and hatched, and the frame
around the focus word's row.

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from attnviz.arrays import FloatArray
from attnviz.render.figures.colour import text_colour
from attnviz.render.figures.fonts import MIN_FONT, centred_outline, text_inches

if TYPE_CHECKING:
    from matplotlib.axes import Axes


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
