"""What every slide shares: its size in pixels, the text's sizes and font, the colours of the
terminal's styles on a slide, the console a slide's text is laid out in, and a slide itself."""

from __future__ import annotations

import io
import re
from typing import NamedTuple

from rich.console import Console
from rich.text import Text

from attnviz.render.terminal.theme import EXPORT_THEME

#: A full-HD projector's pixels, 16:9; the SVG has the same proportions.
SLIDE_WIDTH_PX, SLIDE_HEIGHT_PX = 1920, 1080
TEXT_PX = 32  # the body's font size: readable at the back of a classroom
TITLE_PX = 44  # a slide's title, shrunk to no less than TEXT_PX when it is long
MARGIN_PX = 56  # left and right
TOP_PX = 40  # above the title
BOTTOM_PX = 40  # below the last line
LINE_SPACING = 1.2  # a line's height in font sizes; a shaded table row fills all of it
#: DejaVu Sans Mono: every glyph advances 1233/2048 of the font size; its ascent and descent.
ADVANCE = 1233 / 2048
ASCENT, DESCENT = 1901 / 2048, 483 / 2048
FONT = "DejaVu Sans Mono"

LINE_PX = TEXT_PX * LINE_SPACING
BODY_TOP_PX = TOP_PX + TITLE_PX * 1.6
#: The terminal width the lesson is laid out at, and the lines a slide holds.
COLUMNS = int((SLIDE_WIDTH_PX - 2 * MARGIN_PX) / (TEXT_PX * ADVANCE))
MAX_LINES = int((SLIDE_HEIGHT_PX - BODY_TOP_PX - BOTTOM_PX) / LINE_PX)


#: The colours of the terminal's styles: those of --svg and --html (terminal/theme.py), dark, with
#: black and white pure and every number at least 4.5:1 on its cell, which a projector needs.
THEME = EXPORT_THEME

#: A file name save_slides could have written: 01-title.svg, 12-head2-weights-2.png, …
SLIDE_FILE = re.compile(r"[0-9]{2,}-[a-z0-9-]+\.(?:svg|png)")


class Slide(NamedTuple):
    """One slide: its file name (without extension), its title, its lines of text."""

    name: str  # "05-head1-scores": the place in the lesson, then what it shows
    title: Text  # the step's heading, styled as in the terminal
    lines: tuple[Text, ...]  # at most MAX_LINES lines of at most COLUMNS cells, styled


def recorder() -> Console:
    """A console that records the terminal's output, colours as a truecolor terminal has them,
    at the width a slide holds, whatever the environment says (NO_COLOR, TERM=dumb, COLUMNS):
    the slides are the same wherever they are made."""
    return Console(
        file=io.StringIO(),
        width=COLUMNS,
        height=MAX_LINES,  # with both sizes given, Rich uses them even on a dumb terminal
        force_terminal=True,
        color_system="truecolor",
        no_color=False,
        highlight=False,
        force_jupyter=False,
        legacy_windows=False,
    )
