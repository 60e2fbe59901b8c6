"""Matrix tables for the terminal, laid out by hand: numbers right-aligned under their words,
columns set closer, words cut (and given in full below) or the middle elided when a table is too
wide for the page, rows past MAX_TABLE_ROWS elided; the title always carries the full shape.
Text itself (wrapping, shading, blocks side by side) is render/terminal/text.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from rich.cells import cell_len
from rich.text import Span, Text

from attnviz.labels import ELLIPSIS, MASKED, fit_label, format_number
from attnviz.lesson.blocks import Matrix
from attnviz.render.terminal.text import Block, pad_left, pad_right, weight_style, wrap
from attnviz.tokens import printable

MAX_TABLE_ROWS = 32  # more rows are elided in the middle; --export has every number

COLUMN_GAP = 2  # spaces between the columns of a matrix
NARROW_GAP = 1  # the gap when the table would not fit the page with COLUMN_GAP
MIN_CUT_LABEL = 4  # a cut column label keeps at least this many cells, the "…" included


def kept_indices(count: int, keep: int, must: int | None = None) -> list[int | None]:
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
    table = _table_of(matrix, decimals, with_row_labels)
    words = {column: fit_label(matrix.column_labels[column]) for column in range(n_columns)}
    layout, columns = _fit_columns(table, words, matrix.keep_column, max_width)
    elided = None in columns or None in table.rows
    width = table.total_width(columns, layout)
    titles = _title_lines(matrix.title, f"[{n_rows} × {n_columns}]", elided, max_width)
    lines = [*titles, _header_line(table, layout, columns), Text("─" * width)]
    for row in table.rows:
        if row is None:
            lines.append(Text(ELLIPSIS))
            continue
        lines.append(_row_line(matrix, table, layout, columns, row, color_system))
    shown_labels = {column: layout.labels[column] for column in columns if column is not None}
    legend = _legend(shown_labels, words, matrix.column_labels, max_width)
    lines += legend
    return Block(lines=lines, width=max(width, *(line.cell_len for line in titles + legend)))


def elides_columns(matrix: Matrix, decimals: int, max_width: int) -> bool:
    """Whether ``matrix`` alone, set ``max_width`` cells wide, has columns elided."""
    table = _table_of(matrix, decimals, True)
    n_columns = matrix.values.shape[1]
    words = {column: fit_label(matrix.column_labels[column]) for column in range(n_columns)}
    _, columns = _fit_columns(table, words, matrix.keep_column, max_width)
    return None in columns


class _Table(NamedTuple):
    """A matrix's numbers and row words as printed, before its columns are laid out."""

    rows: list[int | None]  # the rows shown, None where the middle is elided
    shown_rows: list[int]  # the same without the gap
    cells: dict[int, list[str]]  # column -> its shown rows' numbers (or MASKED)
    number_widths: dict[int, int]  # column -> its widest number, in cells
    row_labels: dict[int, str]  # row -> its word, cut to fit (empty without row labels)
    label_width: int  # cells of the widest row word
    sums: list[str]  # each shown row's total
    sum_width: int  # cells of the widest total, 0 without the Σ column
    row_sums: bool  # the table ends in a Σ column

    def laid_out(self, gap: int, labels: dict[int, str]) -> _Layout:
        """The columns ``labels`` set ``gap`` apart, each as wide as its header or its numbers."""
        widths = {
            column: max(cell_len(labels[column]), self.number_widths[column]) for column in labels
        }
        return _Layout(gap, labels, widths)

    def total_width(self, columns: list[int | None], layout: _Layout) -> int:
        """Cells of a line showing ``columns`` (None: an elision mark) as ``layout`` sets them."""
        cells_width = sum(layout.gap + (1 if c is None else layout.widths[c]) for c in columns)
        return (
            self.label_width + cells_width + (layout.gap + self.sum_width if self.row_sums else 0)
        )


def _table_of(matrix: Matrix, decimals: int, with_row_labels: bool) -> _Table:
    """The printed numbers of ``matrix`` at ``decimals``, its row words and totals, the rows past
    MAX_TABLE_ROWS elided (keeping matrix.keep_row)."""
    n_rows, n_columns = matrix.values.shape
    rows = kept_indices(n_rows, MAX_TABLE_ROWS, matrix.keep_row)
    shown_rows = [r for r in rows if r is not None]
    # The shown rows as Python floats at once: numpy's one-element reads cost more than the
    # formatting (an embedding's 15 × 384 numbers).
    values = matrix.values[shown_rows].astype(float).tolist()
    masked = [[False] * n_columns] * len(shown_rows)
    if matrix.masked is not None:
        masked = matrix.masked[shown_rows].tolist()
    cells = {
        column: [
            MASKED if masked[row][column] else format_number(values[row][column], decimals)
            for row in range(len(shown_rows))
        ]
        for column in range(n_columns)
    }
    row_labels = {r: fit_label(matrix.row_labels[r]) if with_row_labels else "" for r in shown_rows}
    label_width = max(cell_len(label) for label in row_labels.values()) if with_row_labels else 0
    sums = [format_number(float(matrix.values[r].sum()), decimals) for r in shown_rows]
    return _Table(
        rows=rows,
        shown_rows=shown_rows,
        cells=cells,
        number_widths={column: max(map(len, cells[column])) for column in range(n_columns)},
        row_labels=row_labels,
        label_width=label_width,
        sums=sums,
        sum_width=max(len(x) for x in sums) if matrix.row_sums else 0,
        row_sums=matrix.row_sums,
    )


def _fit_columns(
    table: _Table, words: dict[int, str], keep_column: int | None, max_width: int
) -> tuple[_Layout, list[int | None]]:
    """How the columns headed by ``words`` are set to fit ``max_width``, and which are shown
    (None marks an elided gap): whole with COLUMN_GAP; else closer, with words cut to ever fewer
    cells, as little as makes the table fit; else columns dropped from the middle."""
    n_columns = len(words)
    whole = table.laid_out(COLUMN_GAP, words)
    every: list[int | None] = list(range(n_columns))
    if table.total_width(every, whole) <= max_width:
        return whole, every
    # A cut that makes two columns' words alike is no use.
    longest = max(cell_len(word) for word in words.values())
    candidates = [
        table.laid_out(NARROW_GAP, _cut_labels(words, table.number_widths, cap))
        for cap in [longest, *range(longest - 1, MIN_CUT_LABEL - 1, -1)]
    ]
    fitting = [
        candidate
        for candidate in candidates
        if table.total_width(every, candidate) <= max_width
        and len(set(candidate.labels.values())) == n_columns
    ]
    if fitting:
        return fitting[0], every
    # Drop columns from the middle until the rest fits, set as closely as distinct words allow,
    # so as many columns as possible stay; first and last always stay, and the worked example's
    # column.
    distinct = [c for c in candidates if len(set(c.labels.values())) == n_columns]
    layout = distinct[-1] if distinct else table.laid_out(NARROW_GAP, words)
    # Every column shown takes at least gap + the narrowest width, so more than ``fits`` columns
    # never fit, and kept_indices shows keep - 1 of them at least: the search starts at
    # fits + 1, not at all 384 of an embedding (which took 36 ms), and ends where it did.
    narrowest = layout.gap + min(layout.widths.values())
    fits = (max_width - table.label_width) // narrowest
    keep = max(2, min(n_columns, fits + 1))
    while (
        keep > 2
        and table.total_width(kept_indices(n_columns, keep, keep_column), layout) > max_width
    ):
        keep -= 1
    return layout, kept_indices(n_columns, keep, keep_column)


def _header_line(table: _Table, layout: _Layout, columns: list[int | None]) -> Text:
    """The column words over their numbers, bold, and Σ over the totals."""
    gap = " " * layout.gap
    header = Text(" " * table.label_width, style="bold")
    for column in columns:
        header.append(
            gap
            + (
                ELLIPSIS
                if column is None
                else pad_left(layout.labels[column], layout.widths[column])
            )
        )
    if table.row_sums:
        header.append(gap + pad_left("Σ", table.sum_width))
    return header


def _row_line(
    matrix: Matrix,
    table: _Table,
    layout: _Layout,
    columns: list[int | None],
    row: int,
    color_system: str | None,
) -> Text:
    """One row: its word in bold, its numbers (shaded when the matrix is), its total dim.

    One string per line plus style spans: appending cell by cell to a rich Text costs several
    times more, and this runs for every cell of every table.
    """
    gap = " " * layout.gap
    position = table.shown_rows.index(row)
    parts = [pad_right(table.row_labels[row], table.label_width)]
    spans = [Span(0, len(parts[0]), "bold")]
    offset = len(parts[0])
    for column in columns:
        cell = (
            ELLIPSIS
            if column is None
            else pad_left(table.cells[column][position], layout.widths[column])
        )
        parts.append(gap + cell)
        offset += layout.gap
        if matrix.shade and column is not None:
            value = float(matrix.values[row, column])
            spans.append(Span(offset, offset + len(cell), weight_style(value, color_system)))
        offset += len(cell)
    if table.row_sums:
        total = gap + pad_left(table.sums[position], table.sum_width)
        parts.append(total)
        spans.append(Span(offset, offset + len(total), "dim"))
    return Text("".join(parts), spans=spans)


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
