"""Text layout for the terminal: matrix tables laid out by hand, prose wrapped at spaces, blocks
set side by side, weight shading and bars. What the lesson says lives in attnviz/lesson/.

Words are printed as ``rich.text.Text`` (markup is never parsed) after ``printable()`` (control
characters escaped). Colour is added only as styles, so NO_COLOR and a piped stdout give plain
text.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.segment import Segment
from rich.text import Span, Text

from attnviz.labels import ELLIPSIS, MASKED, fit_label, fitting_prefix, format_number
from attnviz.lesson.blocks import Matrix
from attnviz.tokens import printable

# matplotlib's viridis at nine evenly spaced points: perceptually uniform and colour-blind safe,
# the same map the heatmaps use, hard-coded so the terminal path never imports matplotlib.
_VIRIDIS = (
    (0x44, 0x01, 0x54),
    (0x47, 0x2C, 0x7A),
    (0x3B, 0x51, 0x8B),
    (0x2C, 0x71, 0x8E),
    (0x21, 0x90, 0x8D),
    (0x27, 0xAD, 0x81),
    (0x5C, 0xC8, 0x63),
    (0xAA, 0xDC, 0x32),
    (0xFD, 0xE7, 0x25),
)

MAX_TABLE_ROWS = 32  # more rows are elided in the middle; --export has every number
BAR_WIDTH = 24
MAX_UNBROKEN_GROUP = 40  # a bracketed group up to this many cells is kept on one line


def weight_style(weight: float, color_system: str | None = "truecolor") -> str:
    """How a cell holding ``weight`` in [0, 1] is shaded, for the terminal's colour system.

    truecolor: a viridis background (as in the heatmaps) with black or white text, whichever
    reads better. 256 colours: the 24-step grey ramp, which stays monotone where viridis would
    be rounded to unrelated palette colours. 16 colours: no background at all (the 16 colours
    carry no order), but dim for weights under 0.1, bold from 0.3 and reversed from 0.6.
    No colour: no style.
    """
    weight = min(max(weight, 0.0), 1.0)
    if color_system is None:
        return ""
    if color_system == "256":
        grey = round(weight * 23)
        return f"{'black' if grey > 11 else 'white'} on color({232 + grey})"
    if color_system != "truecolor":
        if weight >= 0.6:
            return "bold reverse"
        return "bold" if weight >= 0.3 else ("dim" if weight < 0.1 else "")
    foreground, background = weight_colours(weight)
    return f"{foreground} on {background}"


def weight_colours(weight: float) -> tuple[str, str]:
    """The text colour ("black" or "white") and the viridis background ("#rrggbb") of a cell
    holding ``weight`` in [0, 1]: the terminal's and the notebook's shading."""
    weight = min(max(weight, 0.0), 1.0)
    position = weight * (len(_VIRIDIS) - 1)
    low = int(np.floor(position))
    high = min(low + 1, len(_VIRIDIS) - 1)
    fraction = position - low
    red, green, blue = (
        round(a + (b - a) * fraction) for a, b in zip(_VIRIDIS[low], _VIRIDIS[high], strict=True)
    )
    # Relative luminance decides black or white text (WCAG's coefficients).
    luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
    return ("black" if luminance > 120 else "white"), f"#{red:02x}{green:02x}{blue:02x}"


def pad_left(text: str, width: int) -> str:
    return text.rjust(width) if text.isascii() else " " * (width - cell_len(text)) + text


def pad_right(text: str, width: int) -> str:
    return text.ljust(width) if text.isascii() else text + " " * (width - cell_len(text))


def _kept_indices(count: int, keep: int, must: int | None = None) -> list[int | None]:
    """Indices 0..count-1, or about ``keep`` of them from both ends with None marking each gap.

    ``must`` (the row of the word being followed) stays visible even inside the gap.
    """
    if keep >= count:
        return list(range(count))
    head = (keep + 1) // 2
    tail = keep - head
    if must is None or must < head or must >= count - tail:
        return [*range(head), None, *range(count - tail, count)]
    # The first and the last stay too, however few are kept.
    return [*range(max(head - 1, 1)), None, must, None, *range(count - max(tail - 1, 1), count)]


class Block(NamedTuple):
    """Lines of text of a known width, ready to print or to set beside another block."""

    lines: list[Text]
    width: int

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        # The layout is final: emit each line's segments as they are, skipping Rich's
        # word-wrapping pass, which would only cost time.
        plain = console.color_system is None  # styles would be dropped: skip computing them
        for line in self.lines:
            if plain:
                yield Segment(line.plain)
            else:
                yield from line.render(console)
            yield Segment.line()


COLUMN_GAP = 2  # spaces between the columns of a matrix
NARROW_GAP = 1  # the gap when the table would not fit the page with COLUMN_GAP
MIN_CUT_LABEL = 4  # a cut column label keeps at least this many cells, the "…" included


class _Layout(NamedTuple):
    """How a table's columns are laid out: the gap between them and each column's header."""

    gap: int
    labels: dict[int, str]  # column -> its header, the word or the word cut to fit
    widths: dict[int, int]  # column -> its width in cells: its header's or its widest number's


def matrix_block(
    matrix: Matrix,
    decimals: int,
    max_width: int,
    *,
    with_row_labels: bool = True,
    color_system: str | None = "truecolor",
) -> Block:
    """A titled table of ``matrix`` at most ``max_width`` cells wide.

    ``with_row_labels=False`` leaves out the words at the left, for a table set to the right of
    another with the same rows.

    A table too wide for the page is first set with one space between its columns, then with
    its column words cut to the width of their numbers (a line under the table gives each cut
    word in full): an 11-word sentence's scores fit 80 columns whole. Only then are columns
    (and rows past MAX_TABLE_ROWS) elided in the middle with "…"; the title always carries the
    full shape, so nothing is wrapped into unreadable columns.
    The layout is computed here rather than by rich.table: 17 shaded 11 × 11 tables (the
    lesson of an 11-word sentence) print in 29–33 ms this way and in 153–156 ms as rich.table
    Tables, which would dominate the start-up time of ``attnviz explain``.
    """
    n_rows, n_columns = matrix.values.shape
    rows = _kept_indices(n_rows, MAX_TABLE_ROWS, matrix.keep_row)
    shown_rows = [r for r in rows if r is not None]
    cells = {
        column: [
            MASKED
            if matrix.masked is not None and matrix.masked[r, column]
            else format_number(float(matrix.values[r, column]), decimals)
            for r in shown_rows
        ]
        for column in range(n_columns)
    }
    number_widths = {column: max(map(len, cells[column])) for column in range(n_columns)}
    row_labels = {r: fit_label(matrix.row_labels[r]) if with_row_labels else "" for r in shown_rows}
    label_width = max(cell_len(label) for label in row_labels.values()) if with_row_labels else 0
    sums = [format_number(float(matrix.values[r].sum()), decimals) for r in shown_rows]
    sum_width = max(len(x) for x in sums) if matrix.row_sums else 0

    def laid_out(gap: int, labels: dict[int, str]) -> _Layout:
        widths = {column: max(cell_len(labels[column]), number_widths[column]) for column in labels}
        return _Layout(gap, labels, widths)

    def total_width(columns: list[int | None], layout: _Layout) -> int:
        cells_width = sum(layout.gap + (1 if c is None else layout.widths[c]) for c in columns)
        return label_width + cells_width + (layout.gap + sum_width if matrix.row_sums else 0)

    words = {column: fit_label(matrix.column_labels[column]) for column in range(n_columns)}
    whole = laid_out(COLUMN_GAP, words)
    every: list[int | None] = list(range(n_columns))
    layout, columns = whole, every
    if total_width(every, whole) > max_width:
        # Closer columns, then words cut to ever fewer cells, as little as makes the table fit;
        # a cut that makes two columns' words alike is no use.
        longest = max(cell_len(word) for word in words.values())
        candidates = [
            laid_out(NARROW_GAP, _cut_labels(words, number_widths, cap))
            for cap in [longest, *range(longest - 1, MIN_CUT_LABEL - 1, -1)]
        ]
        fitting = [
            candidate
            for candidate in candidates
            if total_width(every, candidate) <= max_width
            and len(set(candidate.labels.values())) == n_columns
        ]
        if fitting:
            layout = fitting[0]
        else:
            # Drop columns from the middle until the rest fits, set as closely as distinct
            # words allow, so as many columns as possible stay; first and last always stay,
            # and the worked example's column.
            distinct = [c for c in candidates if len(set(c.labels.values())) == n_columns]
            layout = distinct[-1] if distinct else laid_out(NARROW_GAP, words)
            keep, must = n_columns, matrix.keep_column
            while (
                keep > 2 and total_width(_kept_indices(n_columns, keep, must), layout) > max_width
            ):
                keep -= 1
            columns = _kept_indices(n_columns, keep, must)
    elided = None in columns or None in rows
    widths = layout.widths
    width = total_width(columns, layout)

    titles = _title_lines(matrix.title, f"[{n_rows} × {n_columns}]", elided, max_width)
    gap = " " * layout.gap
    header = Text(" " * label_width, style="bold")
    for column in columns:
        header.append(
            gap + (ELLIPSIS if column is None else pad_left(layout.labels[column], widths[column]))
        )
    if matrix.row_sums:
        header.append(gap + pad_left("Σ", sum_width))
    lines = [*titles, header, Text("─" * width)]
    for row in rows:
        if row is None:
            lines.append(Text(ELLIPSIS))
            continue
        # One string per line plus style spans: appending cell by cell to a rich Text costs
        # several times more, and this runs for every cell of every table.
        position = shown_rows.index(row)
        parts = [pad_right(row_labels[row], label_width)]
        spans = [Span(0, len(parts[0]), "bold")]
        offset = len(parts[0])
        for column in columns:
            cell = ELLIPSIS if column is None else pad_left(cells[column][position], widths[column])
            parts.append(gap + cell)
            offset += layout.gap
            if matrix.shade and column is not None:
                value = float(matrix.values[row, column])
                spans.append(Span(offset, offset + len(cell), weight_style(value, color_system)))
            offset += len(cell)
        if matrix.row_sums:
            total = gap + pad_left(sums[position], sum_width)
            parts.append(total)
            spans.append(Span(offset, offset + len(total), "dim"))
        lines.append(Text("".join(parts), spans=spans))
    shown_labels = {column: layout.labels[column] for column in columns if column is not None}
    legend = _legend(shown_labels, words, matrix.column_labels, max_width)
    lines += legend
    return Block(lines=lines, width=max(width, *(line.cell_len for line in titles + legend)))


def _title_lines(title: str, shape: str, elided: bool, max_width: int) -> list[Text]:
    """A table's title and shape, and whether its middle is elided: on one line when it fits,
    else the elision on a line of its own, never broken inside."""
    line = Text(title, style="bold")
    line.append(f"  {shape}", style="dim")
    if not elided:
        return wrap(line, max_width)
    note = Text("middle elided, --export has all", style="dim")
    if line.cell_len + 2 + note.cell_len <= max_width:
        return [Text.assemble(line, "  ", note)]
    return [*wrap(line, max_width), *wrap(note, max_width)]


def _cut_labels(words: dict[int, str], number_widths: dict[int, int], cap: int) -> dict[int, str]:
    """Each column's word cut to ``cap`` cells, or to the width of the column's numbers where
    they are wider (a cut there would save nothing): "because" at 5 is "beca…", and a repeated
    word keeps its number ("because:2" at 5 is "be…:2")."""
    return {
        column: fit_label(word, max(cap, number_widths[column])) for column, word in words.items()
    }


def _legend(
    labels: dict[int, str], headers: dict[int, str], words: Sequence[str], max_width: int
) -> list[Text]:
    """The line under a table whose column words were cut to fit (``labels``, shorter than
    their usual ``headers``): each in full, in column order ("columns: anim… = animal, beca… =
    because"); no line when none was cut."""
    cut = [
        f"{labels[column]} = {printable(words[column])}"
        for column in labels
        if labels[column] != headers[column]
    ]
    if not cut:
        return []
    legend = Text("columns: " + ", ".join(cut))
    legend.stylize("dim")  # a span, not the base style, so every wrapped line keeps it
    return wrap(legend, max_width)


def wrap(text: Text, width: int) -> list[Text]:
    """``text`` in lines of at most ``width`` cells, broken at spaces outside brackets.

    A vector [0.12, -0.34], a shape [n, d_k] or a result "= 0.78" stays whole on its line,
    and an indented line (a worked example) continues two cells further in, so a formula never
    restarts at the left margin. No line ends in spaces: piped output has no trailing blanks.
    """
    text = text.copy()
    text.rstrip()  # trailing spaces alone must not make a line "too long"
    plain = text.plain
    width = max(width, 1)
    if cell_len(plain) <= width:
        return [text]
    indent = len(plain) - len(plain.lstrip(" "))
    if indent and indent + 2 > width:  # no room for the indent and a wide character: drop it
        text = text[indent:]
        plain, indent = text.plain, 0
    # Continuation lines keep two cells for text (a wide character), however narrow the
    # terminal, so every pass of the loop below moves forward.
    hang = min(indent + 2, width - 2) if indent else 0
    # Spaces inside a short bracketed group (a vector, a shape, "(11 tokens)") are not broken
    # at; a long parenthesis of prose is, like the text around it.
    protected = [False] * len(plain)
    opened: list[int] = []
    for position, char in enumerate(plain):
        if char in "([{":
            opened.append(position)
        elif char in ")]}" and opened:
            start = opened.pop()
            if fitting_prefix(plain, MAX_UNBROKEN_GROUP, start) > position:  # measures ≤ 40 cells
                protected[start : position + 1] = [True] * (position + 1 - start)
    anywhere = [p for p, char in enumerate(plain) if char == " " and p > indent]
    # "= 0.78" stays on one line too; so do "L = layer" and "0.08 / 1.15" while the line can
    # break elsewhere.
    outside = [p for p in anywhere if not protected[p] and plain[p - 1] != "="]
    preferred = {
        p for p in outside if plain[p + 1 : p + 2] not in ("=", "/") and plain[p - 1] != "/"
    }
    # The width of plain[:p] at every space and after it, measured a word at a time: no
    # grapheme spans a space, so the widths add up, and a paragraph is measured once (not once
    # per line and candidate break, which grew with the square of its length).
    measured = {0: 0}
    previous = 0
    for position in sorted({*anywhere, *(p + 1 for p in anywhere), len(plain)}):
        measured[position] = measured[previous] + cell_len(plain[previous:position])
        previous = position
    known = sorted(measured)

    def width_of(start: int, end: int) -> int:
        for position in (start, end):
            if position not in measured:  # after a hard cut inside a word: measured from the
                below = known[bisect_right(known, position) - 1]  # nearest point before it
                measured[position] = measured[below] + cell_len(plain[below:position])
                insort(known, position)
        return measured[end] - measured[start]

    def fitting(breaks: list[int], start: int, room: int) -> list[int]:
        # The breaks after start whose line fits room: a slice of the sorted breaks, found by
        # bisection as the width only grows (not a pass over every break for every line).
        first = bisect_right(breaks, start)
        return breaks[first : bisect_right(breaks, room, first, key=lambda b: width_of(start, b))]

    cuts: list[int] = []
    start, room = 0, width
    while width_of(start, len(plain)) > room:
        fits = fitting(outside, start, room) or fitting(anywhere, start, room)
        better = [b for b in fits if b in preferred]
        if better and fits and width_of(start, better[-1]) >= 0.6 * width_of(start, fits[-1]):
            fits = better  # not next to an "=", unless that would leave the line short
        cut = fits[-1] if fits else _hard_cut(plain, start, room)
        cuts.append(cut)
        start = cut
        while start < len(plain) and plain[start] == " ":
            start += 1
        cuts.append(start)
        room = width - hang
    lines = text.divide(cuts)[::2]  # even pieces are the lines, odd ones the spaces between
    wrapped = []
    for number, line in enumerate(lines):
        line.rstrip()
        if line.plain.strip():  # a line of only the indent, on a terminal narrower than it
            wrapped.append(Text(" " * hang) + line if number else line)
    return wrapped or [Text()]


def _hard_cut(plain: str, start: int, room: int) -> int:
    """Where a line with no space to break at must be cut to fit ``room`` cells: the longest
    piece from ``start`` that fits (labels.fitting_prefix: measured on about the piece's
    length, not the paragraph's), but always one character at least."""
    return max(fitting_prefix(plain, room, start), start + 1)


def side_by_side(blocks: Sequence[Block], gap: int, max_width: int) -> list[Block]:
    """Blocks in one row when they fit ``max_width``, else each on its own."""
    if sum(b.width for b in blocks) + gap * (len(blocks) - 1) > max_width:
        return list(blocks)
    height = max(len(b.lines) for b in blocks)
    lines = []
    for index in range(height):
        line = Text()
        for position, block in enumerate(blocks):
            part = block.lines[index] if index < len(block.lines) else Text()
            line.append_text(part)
            if position < len(blocks) - 1:
                line.append(" " * (block.width - part.cell_len + gap))
        lines.append(line)
    return [Block(lines=lines, width=sum(b.width for b in blocks) + gap * (len(blocks) - 1))]


def bar(weight: float, width: int = BAR_WIDTH) -> Text:
    """A horizontal bar of ``weight`` × ``width`` cells, in eighths of a cell."""
    eighths = round(min(max(weight, 0.0), 1.0) * width * 8)
    full, remainder = divmod(eighths, 8)
    partial = " ▏▎▍▌▋▊▉"[remainder].strip()
    text = Text("█" * full + partial, style="cyan")
    text.append(" " * (width - full - len(partial)))
    return text
