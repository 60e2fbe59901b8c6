"""The sizes of the heads' heatmap picture, in inches and points, chosen before anything is
drawn: square cells, panels that grow with the sentence between a smallest and a largest size,
every text at least MIN_FONT points, word labels thinned when crowded, weights printed in the
cells whenever they fit. render/figures/heatmap.py draws what this plans.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from attnviz.render.figures.cells import value_font
from attnviz.render.figures.colour import COLOUR_BAR
from attnviz.render.figures.fonts import (
    MIN_FONT,
    MIN_TITLE_FONT,
    text_width,
    title_font_for,
    title_line,
    widest,
)
from attnviz.render.figures.words import TICK_ROOM, AxisLabels, axis_labels, short_label

MAX_PANELS_PER_ROW = 4
MAX_GRID_WIDTH = 20.0  # inches across one row of panels, so 8 heads of 60 words stay printable
CELL = 0.5  # inches per word while a panel is between its smallest and largest size
MIN_PANEL = 2.2  # inches: two words still get big cells
MAX_PANEL = 8.0  # inches: beyond this the cells shrink instead of the picture growing
MARGIN = 0.15  # inches around the picture
PANEL_GAP = 0.3  # inches between a panel and the next column's word labels
ROW_GAP = 0.2  # inches between a row of panels' axis title and the next row's head titles
AXIS_PAD = 4 / 72  # inches between the word labels and the axis title (matplotlib's labelpad)
FOCUS_ROW = (0.32, 0.55)  # inches, smallest and largest height of a focus-panel row

#: Axis titles of a head panel: (columns, rows) for self-attention and for cross-attention.
SELF_AXIS_TITLES = ("key word (looked at)", "query word (looking)")
CROSS_AXIS_TITLES = ("source word (looked at)", "target word (looking)")
AXIS_TITLE_FONT = 10.0  # points


def axis_title(text: str, room: float, font: float = AXIS_TITLE_FONT) -> str:
    """``text`` on one line when it fits ``room`` inches at ``font`` points, else broken before
    its "(".

    >>> axis_title("source word (looked at)", 1.0)
    'source word\\n(looked at)'
    """
    if text_width(text, font) <= room:
        return text
    return text.replace(" (", "\n(", 1)


def title_depth(title: str, font: float = AXIS_TITLE_FONT) -> float:
    """Inches an axis title of one or more lines at ``font`` points takes beside its panel,
    with its pad."""
    return AXIS_PAD + (title.count("\n") + 1) * 1.25 * font / 72


def head_title_depth(font: float) -> float:
    """Inches above a panel for "Head 1": the bold line and its 4-point pad."""
    return (1.3 * font + 6) / 72


@dataclass(frozen=True)
class Values:
    """How weights are printed in a panel's cells: at ``font`` points, "0.45" or ``compact``
    ".45"; a font of 0 prints none (the cells are too small for MIN_FONT)."""

    font: float
    compact: bool

    @property
    def shown(self) -> bool:
        return self.font > 0


def values_for(cell_width: float, cell_height: float) -> Values:
    """ "0.45" when it fits the cells at MIN_FONT or more, else ".45", else nothing."""
    for compact, chars in ((False, 4), (True, 3)):
        font = value_font(cell_width, cell_height, chars)
        if font:
            return Values(font, compact)
    return Values(0.0, False)


@dataclass(frozen=True)
class Layout:
    """Sizes of the picture, in inches and points, for a number of head panels of
    n_tokens rows (query words) × n_keys columns (key words), every cell square."""

    n_tokens: int  # rows of a head panel: the query (target) words
    n_keys: int  # columns of a head panel: the key (source) words
    columns: int  # head panels per row
    rows: int  # rows of head panels
    panel_width: float  # inches, width of one heatmap: n_keys cells
    panel_height: float  # inches, height of one heatmap: n_tokens cells
    tick_font: float  # points, word labels
    values: Values  # the weights printed in a head panel's cells
    x: AxisLabels  # key words under each heatmap
    y: AxisLabels  # query words left of each heatmap
    focus_rows: int  # rows of the focus panel (one per shown head); 0 without a focus word
    focus_x: AxisLabels  # key words under the focus panel, whose cells are wider
    focus_row: float  # inches, height of one row of the focus panel
    focus_values: Values  # the weights printed in the focus panel's cells
    head_labels: float  # inches, the focus panel's "head 12" labels
    title_font: float  # points, the figure's title
    head_font: float  # points, "Head 1" and the focus panel's title
    x_title: str = SELF_AXIS_TITLES[0]  # under each heatmap, maybe on two lines
    y_title: str = SELF_AXIS_TITLES[1]  # left of the first column, maybe on two lines
    focus_title: str = SELF_AXIS_TITLES[0]  # under the focus panel, one line
    axis_font: float = AXIS_TITLE_FONT  # points, the axis titles

    @property
    def annotate(self) -> bool:
        """The head panels print their weights."""
        return self.values.shown

    @property
    def panel(self) -> float:
        """Inches, the longer side of one heatmap (its side when square)."""
        return max(self.panel_width, self.panel_height)

    @property
    def left(self) -> float:
        """Inches left of a panel for its y axis title and word labels."""
        return title_depth(self.y_title, self.axis_font) + self.y.depth

    @property
    def column_width(self) -> float:
        """Inches of one column of panels: labels, panel, gap to the next column."""
        return self.left + self.panel_width + PANEL_GAP

    @property
    def grid_width(self) -> float:
        return max(self.columns * self.column_width, self.left + MIN_PANEL + PANEL_GAP)

    @property
    def width(self) -> float:
        """Inches: each column of panels with its word labels, then the colour bar."""
        return round(MARGIN + self.grid_width + COLOUR_BAR + MARGIN, 2)

    @property
    def row_height(self) -> float:
        """Inches of one row of panels: head titles, panels, word labels, axis title."""
        under = self.x.depth + title_depth(self.x_title, self.axis_font)
        return head_title_depth(self.head_font) + self.panel_height + under + ROW_GAP

    @property
    def focus_height(self) -> float:
        """Inches of the focus panel with its title, word labels and axis title."""
        if not self.focus_rows:
            return 0.0
        rows = self.focus_rows * self.focus_row
        return head_title_depth(self.head_font) + rows + self.focus_x.depth + title_depth("")

    def height(self, title_lines: int) -> float:
        """Inches: title lines, rows of panels with their labels, the focus panel if any."""
        title = title_lines * title_line(self.title_font)
        return round(2 * MARGIN + title + self.rows * self.row_height + self.focus_height, 2)


def plan_layout(
    tokens: Sequence[str],
    n_panels: int,
    focus_rows: int,
    key_tokens: Sequence[str] | None = None,
) -> Layout:
    """Choose panel size, fonts and label thinning so that 2 to hundreds of words stay readable.

    ``tokens`` label the rows (query words); ``key_tokens``, when given, the columns (the
    source words of cross-attention), else ``tokens`` again. Cells are square: a panel grows by
    CELL inches per word of its longer side between MIN_PANEL and the largest size that keeps
    a row of panels within MAX_GRID_WIDTH (and a panel within MAX_PANEL). Every text is at
    least MIN_FONT points: word labels follow the cell size down to it, after which only every
    k-th word is labelled, each axis by its own count of words; weights are printed in the
    cells whenever they fit at MIN_FONT or more.
    """
    keys = tokens if key_tokens is None else key_tokens
    n_tokens, n_keys = len(tokens), len(keys)
    columns = min(n_panels, MAX_PANELS_PER_ROW)
    font = min(max(0.6 * CELL * 72 * min(1.0, 12 / max(n_tokens, n_keys)), MIN_FONT), 11.0)
    row_labels = [short_label(token) for token in tokens]
    key_labels = [short_label(token) for token in keys]
    y_width = widest(row_labels, font, bold=True)
    key_width = widest(key_labels, font, bold=True)
    x_text, y_text = SELF_AXIS_TITLES if key_tokens is None else CROSS_AXIS_TITLES
    left = title_depth(y_text) + TICK_ROOM + y_width
    # The panel's width: the rule for a square panel of the longer side, scaled by the width's
    # share of it (1 when square: min(max(CELL·n, MIN_PANEL), limit)), and the height kept
    # within MAX_PANEL too.
    share = n_keys / max(n_tokens, n_keys)
    panel_width = min(
        max(CELL * n_keys, MIN_PANEL * share),
        min(MAX_PANEL, MAX_GRID_WIDTH / columns - left - PANEL_GAP),
        MAX_PANEL * n_keys / n_tokens,
    )
    cell = panel_width / n_keys  # inches per word
    panel_height = panel_width if n_keys == n_tokens else cell * n_tokens
    x = axis_labels(key_width, n_keys, cell, font, x=True)
    y = axis_labels(y_width, n_tokens, cell, font, x=False)
    y_title = axis_title(y_text, panel_height + 0.2)
    # The focus panel spans every column of panels, so its cells are wider than a heatmap's.
    labels = y.depth + title_depth(y_title)
    span = max(columns * (panel_width + labels + PANEL_GAP), labels + MIN_PANEL + PANEL_GAP)
    head_labels = TICK_ROOM + text_width(f"head {n_panels}", font)
    focus_width = span - PANEL_GAP - head_labels
    focus_cell = focus_width / n_keys
    focus_row = min(max(cell, FOCUS_ROW[0]), FOCUS_ROW[1])
    layout = Layout(
        n_tokens=n_tokens,
        n_keys=n_keys,
        columns=columns,
        rows=math.ceil(n_panels / columns),
        panel_width=panel_width,
        panel_height=panel_height,
        tick_font=font,
        values=values_for(cell, cell),
        x=x,
        y=y,
        focus_rows=focus_rows,
        focus_x=axis_labels(key_width, n_keys, focus_cell, font, x=True),
        focus_row=focus_row,
        focus_values=values_for(focus_cell, focus_row),
        head_labels=head_labels,
        title_font=MIN_TITLE_FONT,
        head_font=MIN_TITLE_FONT,
        x_title=axis_title(x_text, panel_width + 0.3),
        y_title=y_title,
        focus_title=x_text,
    )
    return replace(layout, title_font=title_font_for(layout.width))
