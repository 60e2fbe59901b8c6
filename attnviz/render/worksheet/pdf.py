"""A worksheet set and its key as PDF, drawn with matplotlib: black on white, A4 or Letter,
one PDF for the set with each sheet starting a new page.

Layout is computed here in inches, not by matplotlib: each sheet is a list of blocks (the
header, then one per question) of rows of known height; prose is wrapped at words by its width
as FreeType measures it (attnviz.render.figures.fonts), tables are set in DejaVu Sans Mono, so
that their columns align, and wrapped by characters. A block that does not fit on what is left
of a page starts the next, so a question and its answer box stay together; a block taller than
a page is split between rows. The file's dates are left out, so the same set gives the same
bytes. matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from attnviz.files import atomic_write
from attnviz.render.figures.fonts import MISSING_GLYPH, text_advance, text_width
from attnviz.render.figures.saving import new_figure
from attnviz.render.figures.settings import draws
from attnviz.render.worksheet.sheet import (
    INSTRUCTIONS,
    PAPERS,
    Sheet,
    answer_prompt,
    key_answer,
    table_lines,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MARGIN = 0.75  # inches, every side
BODY = 10.5  # points: prose
SMALL = 9.0  # points: the notes on how the numbers were made, a key's solution lines
TITLE = 14.0
HEADING = 11.0
MONO = 9.5  # points: tables of givens
MONO_ADVANCE = 0.6021  # DejaVu Sans Mono's advance, in font sizes (1233/2048)
LEADING = 1.3  # line height in font sizes
INDENT = 0.3  # inches: what belongs to a question


class Row(NamedTuple):
    """One line of a page: what to draw and the height it takes (inches)."""

    kind: str  # text, bold, mono, name, answer, space
    text: str
    size: float
    indent: float
    height: float
    right: str = ""  # set flush right on the same line (a title's sheet number)


def _row(kind: str, text: str, size: float, indent: float = 0.0) -> Row:
    return Row(kind, text, size, indent, size * LEADING / 72)


def _space(inches: float) -> Row:
    return Row("space", "", 0.0, 0.0, inches)


#: A candidate line whose guessed width (text_advance) is this share of the width inside the
#: line is taken on the guess, and one this share outside it left on the guess; one between is
#: measured (text_width). The guess adds up advances, so it is never much below the measured
#: width (only a glyph's ink past its advance) but kerned capitals ("AVAWAY") make it up to
#: about a tenth above: the share outside is wider.
GUESS_INSIDE = 0.03
GUESS_OUTSIDE = 0.2


def wrapped(text: str, size: float, width: float, *, bold: bool = False) -> list[str]:
    """``text`` broken at spaces into lines at most ``width`` inches wide at ``size`` points (a
    word wider than a line alone is cut into pieces that fit): each line as long as fits, as
    measuring every candidate would make it, most candidates judged by their guessed width;
    every line measured at the end, and the text measured word by word if one is too wide."""
    lines = _wrapped_by_guess(text, size, width, bold=bold)
    if all(text_width(line, size, bold=bold) <= width for line in lines):
        return lines
    return wrapped_by_measuring(text, size, width, bold=bold)


def _wrapped_by_guess(text: str, size: float, width: float, *, bold: bool) -> list[str]:
    space = text_advance(" ", size, bold=bold)
    lines: list[str] = []
    line, guess = "", 0.0
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        candidate_guess = (guess + space if line else 0.0) + text_advance(word, size, bold=bold)
        if _fits(candidate, candidate_guess, size, width, bold=bold):
            line, guess = candidate, candidate_guess
            continue
        if line:
            lines.append(line)
        word = _cut_to_fit(word, lines, size, width, bold=bold)
        line, guess = word, text_advance(word, size, bold=bold)
    return [*lines, line] if line else lines


def _fits(text: str, guess: float, size: float, width: float, *, bold: bool) -> bool:
    if guess <= width * (1 - GUESS_INSIDE):
        return True
    if guess > width * (1 + GUESS_OUTSIDE):
        return False
    return text_width(text, size, bold=bold) <= width


def wrapped_by_measuring(text: str, size: float, width: float, *, bold: bool = False) -> list[str]:
    """wrapped() measuring every candidate line as FreeType lays it out: what wrapped() gives
    whenever its guesses hold, and what it falls back on otherwise."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if text_width(candidate, size, bold=bold) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        line = _cut_to_fit(word, lines, size, width, bold=bold)
    return [*lines, line] if line else lines


def _cut_to_fit(word: str, lines: list[str], size: float, width: float, *, bold: bool) -> str:
    """What is left of ``word`` once its pieces wider than a line go into ``lines``."""
    while text_width(word, size, bold=bold) > width and len(word) > 1:
        cut = _longest_fitting(word, size, width, bold=bold)
        lines.append(word[:cut])
        word = word[cut:]
    return word


def _longest_fitting(word: str, size: float, width: float, *, bold: bool) -> int:
    """How many of ``word``'s first characters fit in ``width`` (at least one), by bisection."""
    low, high = 1, len(word)
    while low < high:
        middle = (low + high + 1) // 2
        if text_width(word[:middle], size, bold=bold) <= width:
            low = middle
        else:
            high = middle - 1
    return low


def _prose(kind: str, text: str, size: float, width: float, indent: float = 0.0) -> list[Row]:
    lines = wrapped(text, size, width - indent, bold=kind == "bold")
    return [_row(kind, line, size, indent) for line in lines]


def mono_chars(width: float, size: float = MONO) -> int:
    """Characters of DejaVu Sans Mono at ``size`` points that fit in ``width`` inches."""
    return int(width / (MONO_ADVANCE * size / 72))


def _header(sheet: Sheet, width: float, *, key: bool) -> list[Row]:
    label = sheet.label
    room = width - text_width(label, TITLE, bold=True) - 0.3
    rows = _prose("bold", sheet.title(key=key), TITLE, room)
    rows[0] = rows[0]._replace(right=label)
    if sheet.subtitle is not None:
        rows += _prose("bold", sheet.subtitle, HEADING, width)
    rows.append(_space(0.08))
    if not key:
        rows += [_row("name", "", BODY), _space(0.12)]
    rows += _prose("text", f"Sentence: “{sheet.sentence}”", BODY, width)
    for line in sheet.about:
        rows += _prose("text", line, SMALL, width)
    if not key:
        rows += [_space(0.06), *_prose("text", INSTRUCTIONS, BODY, width)]
    return rows


def sheet_blocks(sheet: Sheet, width: float, *, key: bool) -> list[list[Row]]:
    """The header and each question (or its key) as a block of rows, for a text ``width``."""
    blocks = [_header(sheet, width, key=key)]
    table_width = mono_chars(width - INDENT)
    for number, question in enumerate(sheet.questions, start=1):
        rows = [_space(0.16)]
        if key:
            rows += _prose("bold", f"{number}. {key_answer(question)}", HEADING, width)
            rows += _prose("text", question.text, BODY, width, INDENT)
            for line in question.solution:
                rows += _prose("text", line, SMALL, width, INDENT)
        else:
            rows += _prose("bold", f"{number}. {question.text}", HEADING, width)
            for given in question.givens:
                rows += _prose("text", f"{given.name}:", BODY, width, INDENT)
                rows += [
                    _row("mono", line, MONO, INDENT) for line in table_lines(given, table_width)
                ]
            rows += [_space(0.05), _row("answer", answer_prompt(question), BODY, INDENT)]
            rows.append(_space(0.14))  # the answer box stands taller than its line
        blocks.append(rows)
    return blocks


def paginate(blocks: Sequence[list[Row]], height: float) -> list[list[Row]]:
    """The blocks on pages of ``height`` inches: a block that does not fit where it would begin
    starts the next page; one taller than a page is split between rows."""
    pages: list[list[Row]] = [[]]
    used = 0.0
    for block in blocks:
        total = sum(row.height for row in block)
        if pages[-1] and used + total > height and total <= height:
            pages.append([])
            used = 0.0
        for row in block:
            if pages[-1] and used + row.height > height:
                pages.append([])
                used = 0.0
            if not pages[-1] and row.kind == "space":
                continue  # a page starts with what it holds, not with a gap
            pages[-1].append(row)
            used += row.height
    return pages


def page_figures(sheets: Sequence[Sheet], paper: str, *, key: bool) -> Iterator[Figure]:
    """Each page of the sheets (or of their keys) as a matplotlib Figure of the paper's size,
    each sheet from a new page, with its footer: the PDF's pages, or a picture of one. Call
    it inside ``drawing()`` (write_pdf does)."""
    page_width, page_height = PAPERS[paper]
    width = page_width - 2 * MARGIN
    body_height = page_height - 2 * MARGIN - 0.3  # room for the footer
    for sheet in sheets:
        pages = paginate(sheet_blocks(sheet, width, key=key), body_height)
        for index, rows in enumerate(pages, start=1):
            figure = new_figure(page_width, page_height)
            figure.patch.set_facecolor("white")
            _draw_page(figure, rows, width)
            footer = f"{'Key to ' if key else ''}{sheet.label}, page {index} of {len(pages)}"
            _text(figure, footer, MARGIN, page_height - MARGIN + 0.1, SMALL, "normal")
            yield figure


@draws
def write_pdf(sheets: Sequence[Sheet], path: Path, paper: str, *, key: bool) -> None:
    """The sheets (or their keys) as one PDF at ``path``, each sheet from a new page, written
    atomically with no dates in it."""
    from matplotlib.backends.backend_pdf import PdfPages

    def write(temporary: Path) -> None:
        metadata = {"CreationDate": None, "ModDate": None, "Creator": "attnviz", "Title": ""}
        with PdfPages(temporary, metadata=metadata) as pdf, warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=MISSING_GLYPH)
            for figure in page_figures(sheets, paper, key=key):
                pdf.savefig(figure)

    atomic_write(path, write)


def _draw_page(figure: Figure, rows: Sequence[Row], width: float) -> None:
    """Every row at its place, from the top margin down."""
    top = MARGIN
    for row in rows:
        left = MARGIN + row.indent
        if row.kind in ("text", "bold"):
            _text(figure, row.text, left, top, row.size, "bold" if row.kind == "bold" else "normal")
            if row.right:
                right = MARGIN + width - text_width(row.right, row.size, bold=True)
                _text(figure, row.right, right, top, row.size, "bold")
        elif row.kind == "mono":
            _text(figure, row.text, left, top, row.size, "normal", family="DejaVu Sans Mono")
        elif row.kind == "name":
            _name_line(figure, left, top, width, row.size)
        elif row.kind == "answer":
            _text(figure, row.text, left, top, row.size, "bold")
            start = left + text_width(row.text, row.size, bold=True) + 0.15
            _box(figure, start, top - 0.07, 1.8, row.height + 0.14)
        top += row.height


def _text(
    figure: Figure,
    text: str,
    left: float,
    top: float,
    size: float,
    weight: str,
    *,
    family: str = "DejaVu Sans",
) -> None:
    """``text`` with its top ``top`` inches below the page's top edge, ``left`` from its left."""
    _, page_height = figure.get_size_inches()
    figure.text(
        left,
        page_height - top,
        text,
        transform=figure.dpi_scale_trans,
        fontsize=size,
        fontweight=weight,
        family=family,
        color="black",
        va="top",
        ha="left",
    )


def _box(figure: Figure, left: float, top: float, width: float, height: float) -> None:
    """An empty box to write the answer in."""
    from matplotlib.patches import Rectangle

    _, page_height = figure.get_size_inches()
    box = Rectangle(
        (left, page_height - top - height),
        width,
        height,
        transform=figure.dpi_scale_trans,
        fill=False,
        edgecolor="black",
        linewidth=1.2,
    )
    figure.add_artist(box)


def _name_line(figure: Figure, left: float, top: float, width: float, size: float) -> None:
    """ "Name: ________  Date: ______", the lines drawn, two thirds and a third of the width."""
    from matplotlib.lines import Line2D

    _, page_height = figure.get_size_inches()
    baseline = page_height - top - size / 72
    for label, start, end in (("Name:", 0.0, 0.62), ("Date:", 0.68, 1.0)):
        _text(figure, label, left + start * width, top, size, "normal")
        line_start = left + start * width + text_width(label, size) + 0.08
        line = Line2D(
            [line_start, left + end * width],
            [baseline, baseline],
            transform=figure.dpi_scale_trans,
            color="black",
            linewidth=0.8,
        )
        figure.add_artist(line)
