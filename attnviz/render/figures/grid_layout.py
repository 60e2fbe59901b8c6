"""The sizes of the layers × heads picture, in inches and points, chosen before anything is
drawn: small square panels as large as a row of heads allows, word labels at MIN_FONT (only the
focus word's beyond MAX_LAYERS_LABEL_TOKENS words), and the focus panel's title and caption
broken into lines that fit. render/figures/grid.py draws what this plans.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from attnviz.render.figures.colour import COLOUR_BAR
from attnviz.render.figures.fonts import (
    MIN_FONT,
    MIN_TITLE_FONT,
    text_inches,
    text_width,
    title_font_for,
    title_line,
    widest,
)
from attnviz.render.figures.titles import pack_phrases
from attnviz.render.figures.words import TICK_ROOM, AxisLabels, axis_labels, short_label
from attnviz.tokens import printable

MAX_LAYERS_WIDTH = 20.0  # inches: a row of 12 small panels with its labels and colour bar
MIN_SMALL_PANEL = 1.1  # inches, side of one (layer, head) panel
MAX_SMALL_PANEL = 1.6
PANEL_GAP = 0.08  # inches between neighbouring small panels, at least
MAX_LAYERS_LABEL_TOKENS = 20  # beyond this the words along the panels' edges are not labelled
ROW_LABEL = 0.3  # inches left of the word labels for "Layer 1"
HEAD_TITLE = 0.3  # inches above the first row for "Head 1"
SECTION_GAP = 0.15  # inches between the grid's word labels and the focus panel's title
SUMMARY_ROW = 0.32  # inches per layer in the "where the focus word looks" panel
SUMMARY_FONT = MIN_FONT  # points, the word printed in each of its cells
SUMMARY_LABEL_FONT = 9.0  # points, "Layer 1" and "Head 1" along its edges
SUMMARY_TITLE_FONT = MIN_TITLE_FONT  # points, bold: 'Where "it" looks, every layer and head'
SUMMARY_CAPTION_FONT = 9.0  # points, what a cell shows, under the panel
GRID_LABEL_FONT = 9.0  # points, bold: "Head 1" above the first row, "Layer 1" left of each row
TYPE_FONT = MIN_FONT  # points: each panel's head type ("previous-token"), above the panel
TYPE_BAND = (1.25 * TYPE_FONT + 2) / 72  # inches above each panel for its type, at least


@dataclass(frozen=True)
class LayersLayout:
    """Sizes of the layers × heads picture, in inches and points."""

    n_layers: int  # rows of small panels
    n_heads: int  # columns of small panels
    n_tokens: int
    panel: float  # inches, side of one small panel
    tick_font: float  # points, word labels along the outer panels
    labelled: bool  # the words are labelled (few enough tokens); else only the focus word
    x: AxisLabels  # key words under the bottom row
    y: AxisLabels  # query words left of the first column
    left: float  # inches left of the first column: "Layer 1" and the word labels
    split: int  # image pixels per cell: the gap between panels is one pixel of the image
    band: int = 0  # image pixels above each panel for its head type (0: no types shown)

    @property
    def cell(self) -> float:
        """Inches per word in a small panel."""
        return self.panel / self.n_tokens

    @property
    def gap(self) -> float:
        """Inches between neighbouring panels: one image pixel, 1/split of a cell."""
        return self.cell / self.split

    @property
    def step_x(self) -> float:
        """Cells from one panel's left edge to the next one's (the tiled image's data units)."""
        return self.n_tokens + 1 / self.split

    @property
    def step_y(self) -> float:
        """Cells from one row of panels' top to the next one's, the type band included."""
        return self.n_tokens + (1 + self.band) / self.split

    def panel_top(self, layer: int) -> float:
        """Cells from the image's top to the top of layer ``layer``'s panels (from 0)."""
        return layer * self.step_y + self.band / self.split

    @property
    def grid_width(self) -> float:
        return self.n_heads * self.panel + (self.n_heads - 1) * self.gap

    @property
    def grid_height(self) -> float:
        band = self.n_layers * self.band * self.gap
        return self.n_layers * self.panel + band + (self.n_layers - 1) * self.gap

    @property
    def grid_top(self) -> float:
        """Inches from the top of the picture to the first row, without the title."""
        return 0.15 + HEAD_TITLE

    @property
    def x_depth(self) -> float:
        """Inches the bottom row's word labels take, or a small margin when there are none."""
        return self.x.depth + 0.1 if self.labelled else 0.1

    @property
    def width(self) -> float:
        return round(self.left + self.grid_width + COLOUR_BAR + 0.15, 2)

    @property
    def summary_room(self) -> float:
        """Inches a centred line above or below the focus panel may take: the panel's width
        and as much of the margins either side as the narrower one allows."""
        return self.grid_width + 2 * min(self.left, COLOUR_BAR) - 0.3

    def height(self, title_lines: int, summary: SummaryText | None) -> float:
        """Inches: title, the grid with its labels, and the focus panel when there is one."""
        title = title_lines * title_line(title_font_for(self.width))
        height = title + self.grid_top + self.grid_height + self.x_depth
        if summary is not None:
            height += SECTION_GAP + summary.title_height + self.n_layers * SUMMARY_ROW
            height += summary.foot_height
        return round(height + 0.15, 2)


@dataclass(frozen=True)
class SummaryText:
    """The focus panel's title and caption, broken into lines that fit the panel's width."""

    title: list[str]
    caption: list[str]

    @property
    def title_height(self) -> float:
        return len(self.title) * 1.3 * SUMMARY_TITLE_FONT / 72 + 0.12

    @property
    def foot_height(self) -> float:
        """Inches under the panel: "Head 1" labels, then the caption lines."""
        return 0.3 + len(self.caption) * 1.3 * SUMMARY_CAPTION_FONT / 72 + 0.1


def summary_text(label: str, room: float, noun: str = "attention weight") -> SummaryText:
    """Title and caption of the focus panel for the word ``label``, in lines of at most
    ``room`` inches; ``noun`` names what a cell's colour is."""
    word = printable(label)
    bold = 1.1  # bold glyphs are about a tenth wider
    title_chars = int(room / text_inches(1, bold * SUMMARY_TITLE_FONT))
    caption_chars = int(room / text_inches(1, SUMMARY_CAPTION_FONT))
    title = [f'Where "{word}" looks,', "every layer and head"]
    looked_at = (
        f'the word "{word}" attends to most in that head;'
        if noun == "attention weight"
        else f'the word with the largest {noun} in the row of "{word}";'
    )
    caption = [f"each cell: {looked_at}", f"its colour: that {noun}"]
    return SummaryText(
        title=pack_phrases(title, title_chars, separator=" "),
        caption=pack_phrases(" ".join(caption).split(" "), caption_chars, separator=" "),
    )


def plan_layers_layout(
    tokens: Sequence[str], n_layers: int, n_heads: int, *, typed: bool = False
) -> LayersLayout:
    """Small square panels, MIN_SMALL_PANEL to MAX_SMALL_PANEL inches, as large as a row of
    ``n_heads`` allows within MAX_LAYERS_WIDTH; word labels at MIN_FONT, every k-th word when
    the cells are smaller than a line; beyond MAX_LAYERS_LABEL_TOKENS words, none but the focus
    word; with ``typed``, a band of TYPE_BAND inches above every panel for its head type."""
    n_tokens = len(tokens)
    labels = [short_label(token) for token in tokens]
    longest = widest(labels, MIN_FONT, bold=True)
    layer_labels = ROW_LABEL + 0.1

    def left_of(y_depth: float) -> float:
        # The focus panel's "Layer 1" labels share this margin with the grid's.
        summary = text_width(f"Layer {n_layers}", SUMMARY_LABEL_FONT) + TICK_ROOM + 0.1
        return 0.15 + max(layer_labels + y_depth, summary)

    room = MAX_LAYERS_WIDTH - left_of(longest + TICK_ROOM) - COLOUR_BAR - 0.15
    panel = min(max((room - (n_heads - 1) * PANEL_GAP) / n_heads, MIN_SMALL_PANEL), MAX_SMALL_PANEL)
    cell = panel / n_tokens
    y = axis_labels(longest, n_tokens, cell, MIN_FONT, x=False)
    split = max(1, math.ceil(cell / PANEL_GAP))
    return LayersLayout(
        n_layers=n_layers,
        n_heads=n_heads,
        n_tokens=n_tokens,
        panel=panel,
        tick_font=MIN_FONT,
        labelled=n_tokens <= MAX_LAYERS_LABEL_TOKENS,
        x=axis_labels(longest, n_tokens, cell, MIN_FONT, x=True),
        y=y,
        left=left_of(y.depth),
        split=split,
        band=math.ceil(TYPE_BAND / (cell / split)) if typed else 0,
    )
