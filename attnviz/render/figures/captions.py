"""A figure's caption: the facts and sentences that say what a picture does and does not show,
under its panels or beside them, so that its title can stay at two lines. Lines are broken
between words where FreeType's measure says they fit, and the caption is one text the tests
(and any reader of a figure) find by its id.

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attnviz.render.figures.fonts import text_width, truncate_to

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.text import Text

CAPTION_ID = "caption"  # the caption's gid, as an SVG names it too
LINE_SPACING = 1.3  # a caption line is this many font sizes high
PARAGRAPH_GAP = 0.5  # lines between two paragraphs


def wrap_to(text: str, inches: float, font: float) -> list[str]:
    """``text`` in lines at most ``inches`` wide at ``font`` points, broken between words; only
    a word wider than a line is cut (…)."""
    lines: list[str] = []
    for word in text.split():
        joined = f"{lines[-1]} {word}" if lines else word
        if lines and text_width(joined, font) <= inches:
            lines[-1] = joined
        else:
            lines.append(truncate_to(word, inches, font))
    return lines


def caption_lines(paragraphs: Sequence[str], inches: float, font: float) -> list[str]:
    """The ``paragraphs`` wrapped to ``inches`` at ``font`` points, an empty line between two;
    a paragraph's own line breaks ("\\n") are kept."""
    lines: list[str] = []
    for paragraph in paragraphs:
        wrapped = [line for part in paragraph.split("\n") for line in wrap_to(part, inches, font)]
        if wrapped:
            lines += [*([""] if lines else []), *wrapped]
    return lines


def paragraphs_of(lines: Sequence[str]) -> list[list[str]]:
    """The caption's ``lines`` as paragraphs, split at its empty lines."""
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line:
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    return [paragraph for paragraph in paragraphs if paragraph]


def caption_height(lines: Sequence[str], font: float) -> float:
    """Inches the caption's ``lines`` take at ``font`` points: PARAGRAPH_GAP of a line between
    two paragraphs."""
    paragraphs = paragraphs_of(lines)
    rows = sum(map(len, paragraphs)) + PARAGRAPH_GAP * max(len(paragraphs) - 1, 0)
    return rows * LINE_SPACING * font / 72


def draw_caption(
    figure: Figure, lines: Sequence[str], left: float, top: float, font: float
) -> list[Text]:
    """The caption's ``lines`` at ``font`` points, a text per paragraph, the first one's
    top-left corner ``left``, ``top`` inches from the picture's top-left corner."""
    width, height = figure.get_size_inches()
    texts = []
    for paragraph in paragraphs_of(lines):
        texts.append(
            figure.text(
                left / width,
                1 - top / height,
                "\n".join(paragraph),
                fontsize=font,
                linespacing=LINE_SPACING,
                ha="left",
                va="top",
                parse_math=False,
                gid=CAPTION_ID,
            )
        )
        top += (len(paragraph) + PARAGRAPH_GAP) * LINE_SPACING * font / 72
    return texts


def caption_of(figure: Figure) -> str:
    """The figure's caption as one line of words (the lines joined by spaces), or ""."""
    return " ".join(
        " ".join(text.get_text().split()) for text in figure.texts if text.get_gid() == CAPTION_ID
    )
