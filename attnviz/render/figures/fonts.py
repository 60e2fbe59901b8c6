"""Text in a figure: its sizes (the smallest a projector shows, titles that grow with the
picture), its width measured as FreeType lays it out, cut to fit, the glyphs the bundled font
lacks, and a string's outline for drawing many copies at once.

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from typing import Any

from attnviz.labels import fit_label
from attnviz.render.figures.settings import draws

CHAR_WIDTH = 0.62  # average width of a DejaVu Sans glyph, in font sizes
#: matplotlib's warning for a character the bundled font lacks (emoji, CJK), drawn as a box.
MISSING_GLYPH = "Glyph .* missing from font"

#: The smallest text of a figure (cell values, word labels): 8 points, 16.7 px tall at 150 dpi.
MIN_FONT = 8.0
#: The smallest title: 12 points, 25 px tall at 150 dpi.
MIN_TITLE_FONT = 12.0


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


def text_inches(n_chars: int, font: float) -> float:
    """Rough width of ``n_chars`` characters at ``font`` points, in inches."""
    return n_chars * CHAR_WIDTH * font / 72


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
@draws
def text_width(text: str, points: float, *, bold: bool = False) -> float:
    """Inches ``text`` takes at ``points`` in matplotlib's default font, as FreeType lays it out
    (the same font files and metrics the picture is drawn with)."""
    from matplotlib.font_manager import get_font

    # matplotlib keeps one FreeType font per file and thread: one shared by two threads
    # corrupts the heap when both lay out text at once.
    font = get_font(_font_file(bold))
    font.set_size(points, 72)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=MISSING_GLYPH)
        font.set_text(text, 0.0)
    width, _ = font.get_width_height()  # 1/64 of a point at 72 dpi
    return float(width) / 64 / 72


def text_advance(text: str, points: float, *, bold: bool = False) -> float:
    """Inches the pen moves drawing ``text`` at ``points``: each character's advance added up,
    each measured once. A guess at text_width: within a few tenths of a percent of it for prose,
    a little above it (text_width leaves out the first and last glyph's side bearings and kerns
    pairs), found in a fraction of its time, which lays out the whole string each call."""
    return sum(_character_advance(character, points, bold) for character in text)


@functools.lru_cache(maxsize=4096)
@draws
def _character_advance(character: str, points: float, bold: bool) -> float:
    from matplotlib.font_manager import get_font

    font = get_font(_font_file(bold))
    font.set_size(points, 72)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=MISSING_GLYPH)
        # by its index: a character the font lacks is its box (index 0), as text_width draws
        # it; hinted as text_width's layout hints it
        glyph = font.load_glyph(font.get_char_index(ord(character)))
    return float(glyph.horiAdvance) / 64 / 72


@functools.cache
@draws
def _font_file(bold: bool) -> str:
    """The file of matplotlib's default font (DejaVu Sans), bold or not, as text_width finds
    it: with matplotlib's default settings (not a matplotlibrc's font.family)."""
    from matplotlib.font_manager import FontProperties, findfont

    return str(findfont(FontProperties(weight="bold" if bold else "normal")))


@draws
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


@functools.lru_cache(maxsize=4096)
@draws
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
