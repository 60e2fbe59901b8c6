"""The words along a panel's edges: named as the terminal names them (the:1, ##ization for a
piece continuing the word before), cut to fit, thinned when crowded, turned when too wide, and
placed as plain texts beside the panel.

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attnviz.labels import occurrence_labels
from attnviz.render.figures.fonts import truncate
from attnviz.tokens import printable

if TYPE_CHECKING:
    from matplotlib.axes import Axes


MAX_LABEL_CHARS = 14  # longer words are cut with an ellipsis in tick labels
LABEL_SPACING = 1.35  # a tick label needs this many font sizes of room, or labels are thinned


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


#: How the terminal's tables, and so every figure, name a WordPiece piece that continues the
#: word before it: "token", "##ization". Byte-level BPE pieces ("bel") and punctuation ("isn",
#: "'", "t") carry no mark there either: the figures name every piece as the tables do.
CONTINUED = "##"
CONTINUED_PHRASE = f"{CONTINUED}…: a word piece continuing the word before it"


def word_labels(words: Sequence[str]) -> list[str]:
    """Labels of the words (or word pieces) along a figure's axis, as the terminal's tables
    name them: made printable, repeats numbered (the:1, the:2), pieces as the tokenizer writes
    them.

    >>> word_labels(["[CLS]", "token", "##ization", "isn", "'", "t", "[SEP]"])
    ['[CLS]', 'token', '##ization', 'isn', "'", 't', '[SEP]']
    """
    return occurrence_labels([printable(word) for word in words])


def any_continued(labels: Sequence[str], positions: Iterable[int]) -> bool:
    """Whether any of the ``labels`` drawn (those at ``positions``) is a piece continuing the
    word before ("##ization"), so that the title says what CONTINUED means only when a picture
    shows it."""
    return any(
        labels[position].startswith(CONTINUED) and len(labels[position]) > len(CONTINUED)
        for position in positions
    )


def short_label(token: str) -> str:
    """A token as a tick label: control characters escaped, at most MAX_LABEL_CHARS long."""
    return truncate(printable(token), MAX_LABEL_CHARS)


#: Inches between a panel's edge and its word labels: matplotlib's tick length and pad (2 + 2
#: points, as label_words sets them).
TICK_ROOM = 4 / 72


@dataclass(frozen=True)
class AxisLabels:
    """How the words along one axis are labelled."""

    step: int  # label every step-th word
    rotate: bool  # vertical text, because horizontal labels would not fit their cells
    depth: float  # inches the labels take away from the panel (their height or width)


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
