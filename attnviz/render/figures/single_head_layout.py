"""The sizes of one head's picture, chosen before anything is drawn: a 16:9 landscape of 1920 ×
1080 pixels, a projector's screen, so that a room sees it whole. The heatmap sits on the left,
its cells square and as large as the height allows; on the right, the focus word's weights as
bars and the caption. Every text is at least MIN_ROOM_FONT points (21 pixels), the title
TITLE_FONT; a long sentence's labels shrink to MIN_ROOM_FONT, turn, then thin out.
render/figures/single_head.py draws what this plans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from attnviz.render.figures.captions import caption_height
from attnviz.render.figures.fonts import text_width, widest
from attnviz.render.figures.heatmap_layout import (
    CROSS_AXIS_TITLES,
    SELF_AXIS_TITLES,
    Layout,
    Values,
    axis_title,
    head_title_depth,
    title_depth,
    values_for,
)
from attnviz.render.figures.titles import FigureText
from attnviz.render.figures.words import (
    LABEL_SPACING,
    TICK_ROOM,
    AxisLabels,
    axis_labels,
)

WIDTH, HEIGHT = 12.8, 7.2  # inches: 1920 × 1080 pixels at 150 dpi
MARGIN = 0.25  # inches around the picture
TITLE_FONT = 18.0  # points, the title's two lines
TITLE_SPACING = 1.3  # the title's lines are this many font sizes apart
TITLE_LINES = 2  # the most a title has; its room is kept whether it takes one line or two
TITLE_GAP = 0.2  # inches between the title and the head's name
HEAD_FONT = 15.0  # points, bold: "Head 1" above the heatmap, 'Where "it" looks' above the bars
SMALLEST_HEAD_FONT = 12.0  # a long name of the bars ("How much of each word reaches …") shrinks
AXIS_FONT = 13.0  # points: axis titles, the colour bar's label and numbers, the bars' axis
LARGEST_FONT = 16.0  # points, the word labels of a short sentence
MIN_ROOM_FONT = 10.0  # points, the smallest text: 21 pixels, readable at the back of a room
MAX_CELL = 1.1  # inches: three words do not fill the whole height with three cells
MAX_LEFT = 0.56  # at most this share of the width for the heatmap, its labels and colour bar
COLOUR_BAR_GAP = 0.2  # inches between the heatmap and its colour bar
COLOUR_BAR = 0.22  # inches, the colour bar's width
COLOUR_BAR_LABELS = 0.9  # inches right of the colour bar: its numbers and its label
COLUMN_GAP = 0.3  # inches between the colour bar's label and the right column
BAR_ROW = 0.42  # inches, the most a bar's row takes
MIN_BAR_ROW = LABEL_SPACING * MIN_ROOM_FONT / 72  # every word labelled at MIN_ROOM_FONT
#: A label's font is a hair under what its cell's height allows, so that rounding never makes
#: the cell one label too short and every other word go unlabelled.
SNUG = 0.98
SECTION_GAP = 0.25  # inches between the bars' numbers and the caption
CAPTION_FONTS = (15.0, 14.0, 13.0, 12.0, 11.0, MIN_ROOM_FONT)  # points, the largest that fits


def heatmap_top() -> float:
    """Inches from the picture's top to the head's name above the heatmap: the title's room."""
    return MARGIN + TITLE_LINES * TITLE_SPACING * TITLE_FONT / 72 + TITLE_GAP


@dataclass(frozen=True)
class Heatmap:
    """Where the heatmap goes and how it is drawn."""

    panel: Layout  # its sizes and fonts, as head_panel.draw_head reads them
    left: float  # inches from the picture's left edge to the heatmap
    top: float  # inches from the picture's top to the heatmap

    @property
    def colour_bar_left(self) -> float:
        return self.left + self.panel.panel_width + COLOUR_BAR_GAP

    @property
    def right(self) -> float:
        """Inches from the picture's left edge to the right end of the colour bar's label."""
        return self.colour_bar_left + COLOUR_BAR + COLOUR_BAR_LABELS


def plan_heatmap(
    row_labels: Sequence[str], column_labels: Sequence[str], *, cross: bool
) -> Heatmap:
    """The heatmap of ``row_labels`` (query or target words) × ``column_labels`` (key or source
    words): square cells as large as the room left of the right column allows (MAX_LEFT of the
    width) and the height under the title, at most MAX_CELL; word labels as large as a cell,
    between MIN_ROOM_FONT and LARGEST_FONT, turned or thinned where they must be."""
    n_rows, n_columns = len(row_labels), len(column_labels)
    x_text, y_text = CROSS_AXIS_TITLES if cross else SELF_AXIS_TITLES
    top = heatmap_top() + head_title_depth(HEAD_FONT)

    def cell_for(font: float) -> float:
        """The largest cell that leaves room for the labels at ``font`` points."""
        left = MARGIN + title_depth(y_text, AXIS_FONT) + TICK_ROOM
        left += widest(row_labels, font, bold=True)
        room_width = MAX_LEFT * WIDTH - left - COLOUR_BAR_GAP - COLOUR_BAR - COLOUR_BAR_LABELS
        # Measured bold, as the heads' picture measures them: a turned label's box is a few
        # pixels longer than its plain width.
        x_width = widest(column_labels, font, bold=True)
        cell = MAX_CELL
        # Labels under the cells stay level while they fit a cell, else turn: their depth is
        # known once the cell is, so the turned labels' depth is tried when level ones do not
        # fit the cell the level depth leaves.
        for depth in (TICK_ROOM + 1.2 * font / 72, TICK_ROOM + x_width):
            room_height = HEIGHT - MARGIN - top - depth - title_depth(x_text, AXIS_FONT)
            cell = min(room_width / n_columns, room_height / n_rows, MAX_CELL)
            if not axis_labels(x_width, n_columns, cell, font, x=True).rotate:
                break
        return cell

    # The labels' size follows the cells', and the cells' the room the labels leave: a few
    # rounds settle both, and the last cell is the one that fits the last labels.
    font = LARGEST_FONT
    for _ in range(4):
        font = min(max(SNUG * cell_for(font) * 72 / LABEL_SPACING, MIN_ROOM_FONT), LARGEST_FONT)
    cell = cell_for(font)
    y_width = widest(row_labels, font, bold=True)
    x = axis_labels(widest(column_labels, font, bold=True), n_columns, cell, font, x=True)
    y = axis_labels(y_width, n_rows, cell, font, x=False)
    panel_width, panel_height = cell * n_columns, cell * n_rows
    y_title = axis_title(y_text, panel_height + 0.2, AXIS_FONT)
    panel = Layout(
        n_tokens=n_rows,
        n_keys=n_columns,
        columns=1,
        rows=1,
        panel_width=panel_width,
        panel_height=panel_height,
        tick_font=font,
        values=values_for(cell, cell),
        x=x,
        y=y,
        focus_rows=0,
        focus_x=x,
        focus_row=0.0,
        focus_values=Values(0.0, False),
        head_labels=0.0,
        title_font=TITLE_FONT,
        head_font=HEAD_FONT,
        x_title=axis_title(x_text, panel_width + 0.3, AXIS_FONT),
        y_title=y_title,
        focus_title=x_text,
        axis_font=AXIS_FONT,
    )
    return Heatmap(panel, MARGIN + title_depth(y_title, AXIS_FONT) + y.depth, top)


@dataclass(frozen=True)
class Bars:
    """The focus word's weights as a bar per key word, under its name."""

    left: float  # inches from the picture's left edge to the bars' axes (their labels left)
    top: float  # inches from the picture's top to the first bar's row
    width: float  # inches, the longest bar (the colour scale's top)
    row: float  # inches, one bar's row
    n_bars: int
    font: float  # points, the word labels left of the bars
    labels: AxisLabels  # which words are labelled, and the room they take
    name_font: float  # points, bold: the bars' name ('Where "it" looks')
    values: bool  # each weight printed at the end of its bar

    @property
    def height(self) -> float:
        return self.n_bars * self.row


@dataclass(frozen=True)
class Column:
    """The right column: the focus word's bars (when there is one), then the caption."""

    left: float  # inches from the picture's left edge
    width: float  # inches
    bars: Bars | None
    caption: list[str]  # the caption's lines
    caption_font: float  # points
    caption_top: float  # inches from the picture's top


def bars_under() -> float:
    """Inches under the bars: their axis's numbers (what they are, the colour bar says)."""
    return TICK_ROOM + 1.3 * AXIS_FONT / 72


def plan_column(
    heatmap: Heatmap,
    text: FigureText,
    column_labels: Sequence[str],
    *,
    bars_name: str | None,
) -> Column:
    """The right column beside ``heatmap``: when the picture follows a word, ``bars_name`` over
    a bar per word of ``column_labels``, rows as tall as the caption leaves room for (at most
    BAR_ROW); then ``text``'s caption, at the largest of CAPTION_FONTS that lets every bar keep
    its label (or, without bars, fits the height)."""
    left = heatmap.right + COLUMN_GAP
    width = WIDTH - MARGIN - left
    top, bottom = heatmap_top(), HEIGHT - MARGIN
    title = (WIDTH - 2 * MARGIN, TITLE_FONT)
    if bars_name is None:
        for font in CAPTION_FONTS:
            caption = text.caption(title, width, font)
            if top + caption_height(caption, font) <= bottom:
                break
        return Column(left, width, None, caption, font, top)
    n_bars = len(column_labels)
    bars_top = top + head_title_depth(HEAD_FONT)
    # The largest caption whose font is no larger than the bars' word labels it leaves room
    # for; else the smallest.
    for font in CAPTION_FONTS:
        caption = text.caption(title, width, font)
        rows = bottom - bars_top - bars_under() - SECTION_GAP - caption_height(caption, font)
        row = min(BAR_ROW, max(rows, 0.5) / n_bars)
        label_font = min(max(SNUG * row * 72 / LABEL_SPACING, MIN_ROOM_FONT), LARGEST_FONT)
        if label_font >= font:
            break
    labels = axis_labels(widest(column_labels, label_font, bold=True), n_bars, row, label_font,
                         x=False)  # fmt: skip
    value_room = text_width(" 0.00", label_font) + 0.05
    name_font = HEAD_FONT
    while name_font > SMALLEST_HEAD_FONT and text_width(bars_name, name_font, bold=True) > width:
        name_font -= 1
    bars = Bars(
        left=left + labels.depth,
        top=bars_top,
        width=width - labels.depth - value_room,
        row=row,
        n_bars=n_bars,
        font=label_font,
        labels=labels,
        name_font=name_font,
        values=labels.step == 1,
    )
    caption_top = bars_top + bars.height + bars_under() + SECTION_GAP
    return Column(left, width, bars, caption, font, caption_top)
