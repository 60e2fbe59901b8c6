"""The lesson as an SVG picture of the terminal (--svg) that lines up in every SVG renderer.

Rich's own export relies on the viewer's font having exactly its cell width and on renderers
keeping runs of non-breaking spaces; outside a browser (rsvg-convert, Inkscape, image viewers)
leading spaces vanish and columns drift. Here every character is placed at its own cell: each
run of one-cell characters carries one x position per character (SVG's x list), and a wide
character, or a character with combining marks, is placed alone, so the font's own advance
never moves anything. The text stays text (searchable, copyable); nothing is loaded from a
network.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from html import escape

from rich.cells import cell_len, split_graphemes
from rich.console import Console
from rich.style import Style
from rich.terminal_theme import TerminalTheme
from rich.text import Text

from attnviz.render.terminal.theme import EXPORT_THEME, style_colours

#: A cell is 12 × 24 pixels and the font 20 px: most monospace fonts advance 0.6 em, 12 px.
CELL_WIDTH, LINE_HEIGHT, FONT_PX = 12, 24, 20
#: The baseline, pixels below a line's top: the font's ascent of about 0.8 em, centred.
BASELINE = 18
PADDING, TITLE_BAR = 10, 40
FONTS = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', 'Courier New', monospace"


def lesson_svg(lines: Sequence[Text], title: str, width: int) -> str:
    """``lines`` (styled, at most ``width`` cells each) as an SVG terminal window titled
    ``title``, every character at its cell."""
    classes: dict[str, str] = {}
    backgrounds: list[str] = []
    texts: list[str] = []
    console = Console(width=width, color_system="truecolor", force_terminal=True)
    for row, line in enumerate(lines):
        top = row * LINE_HEIGHT
        for cell, text, style in _runs(line, console):
            colour, background = style_colours(style)
            if background is not None:
                backgrounds.append(
                    f'<rect fill="{background.hex}" x="{cell * CELL_WIDTH}" y="{top}" '
                    f'width="{cell_len(text) * CELL_WIDTH}" height="{LINE_HEIGHT}"/>'
                )
            if text.strip():
                css = _css(colour.hex, style)
                name = classes.setdefault(css, f"r{len(classes) + 1}")
                texts.append(_text_element(name, cell, top + BASELINE, text))
    return _document(title, width, len(lines), classes, backgrounds, texts)


def _runs(line: Text, console: Console) -> Iterator[tuple[int, str, Style]]:
    """Each run of one style in ``line``, with the cell it starts at."""
    cell = 0
    for segment in line.render(console, end=""):
        yield cell, segment.text, segment.style or Style()
        cell += cell_len(segment.text)


def _css(colour: str, style: Style) -> str:
    rules = [f"fill: {colour}"]
    if style.bold:
        rules.append("font-weight: bold")
    if style.italic:
        rules.append("font-style: italic")
    if style.underline:
        rules.append("text-decoration: underline")
    if style.strike:
        rules.append("text-decoration: line-through")
    return "; ".join(rules)


def _text_element(name: str, cell: int, baseline: int, text: str) -> str:
    """One <text> of a run starting at ``cell``: its one-cell characters positioned one by
    one, each wider or combined character in a <tspan> of its own."""
    chunks = list(_chunks(cell, text))
    if len(chunks) == 1:
        start, chunk, single = chunks[0]
        xs = _xs(start, chunk, single)
        return f'<text class="{name}" x="{xs}" y="{baseline}">{escape(chunk)}</text>'
    spans = "".join(
        f'<tspan x="{_xs(start, chunk, single)}">{escape(chunk)}</tspan>'
        for start, chunk, single in chunks
    )
    return f'<text class="{name}" y="{baseline}">{spans}</text>'


def _xs(cell: int, chunk: str, single: bool) -> str:
    """The x of each character of ``chunk`` when its characters are ``single`` cells from
    ``cell`` on, else of the one character (a grapheme: wide, combined, an emoji sequence)."""
    if single:
        return " ".join(str((cell + index) * CELL_WIDTH) for index in range(len(chunk)))
    return str(cell * CELL_WIDTH)


def _chunks(cell: int, text: str) -> Iterator[tuple[int, str, bool]]:
    """``text`` from ``cell`` on as chunks to place, each with whether its characters are one
    cell each: runs of one-cell characters (spaces at either end dropped), and each grapheme
    of another kind alone (a wide character, one with combining marks, an emoji sequence), as
    Rich measures them when it lays the line out."""
    graphemes, _ = split_graphemes(text)
    pending: list[tuple[int, str]] = []
    for start, end, width in graphemes:
        grapheme = text[start:end]
        if end - start == 1 and width == 1:
            pending.append((cell, grapheme))
        else:
            yield from _plain(pending)
            pending = []
            yield cell, grapheme, False
        cell += width
    yield from _plain(pending)


def _plain(characters: list[tuple[int, str]]) -> Iterator[tuple[int, str, bool]]:
    while characters and characters[0][1] == " ":
        characters = characters[1:]
    while characters and characters[-1][1] == " ":
        characters = characters[:-1]
    if characters:
        yield characters[0][0], "".join(char for _, char in characters), True


def _document(
    title: str,
    width: int,
    rows: int,
    classes: dict[str, str],
    backgrounds: list[str],
    texts: list[str],
    theme: TerminalTheme = EXPORT_THEME,
) -> str:
    window_width = width * CELL_WIDTH + 2 * PADDING
    window_height = TITLE_BAR + rows * LINE_HEIGHT + 2 * PADDING
    styles = "\n".join(f".{name} {{ {css} }}" for css, name in classes.items())
    foreground = theme.foreground_color.hex
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" xml:space="preserve" '
            f'width="{window_width}" height="{window_height}" '
            f'viewBox="0 0 {window_width} {window_height}">',
            "<style>",
            f"text {{ font-family: {FONTS}; font-size: {FONT_PX}px; white-space: pre; "
            "direction: ltr; unicode-bidi: bidi-override; }}",
            f".title {{ fill: {foreground}; font-weight: bold; font-size: 18px }}",
            styles,
            "</style>",
            f'<rect fill="{theme.background_color.hex}" width="{window_width}" '
            f'height="{window_height}" rx="8"/>',
            f'<text class="title" x="{window_width // 2}" y="27" text-anchor="middle">'
            f"{escape(title)}</text>",
            f'<g transform="translate({PADDING} {TITLE_BAR + PADDING})" '
            'shape-rendering="crispEdges">',
            *backgrounds,
            "</g>",
            f'<g transform="translate({PADDING} {TITLE_BAR + PADDING})">',
            *texts,
            "</g>",
            "</svg>",
            "",
        ]
    )
