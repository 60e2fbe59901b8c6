"""How a picture is asked to render a trace, and how wide the terminal may be.

Light on purpose: the command line declares its options with these types, and ``attnviz
--help`` imports them without the renderers. The lesson's own options are
attnviz.lesson.options.LessonOptions.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import NamedTuple

#: The widest terminal the lesson is laid out for, in columns: COLUMNS=100000000 would otherwise
#: pad every line to a hundred million spaces, while no table needs more than a few hundred.
MAX_WIDTH = 1000


class Style(str, Enum):
    """How heatmap draws the weights."""

    grid = "grid"  # a heatmap per head
    lines = "lines"  # the classic illustration: lines from the focus word, one colour per head


class Scale(str, Enum):
    """What the colours of a heatmap span."""

    fixed = "fixed"  # 0 to 1: the same colour is the same weight in every picture
    row = "row"  # each row from 0 to its own largest weight: where each word looks most
    auto = "auto"  # 0 to the largest weight shown


class Measure(str, Enum):
    """What heatmap's colours show (attnviz.render.figures.measures computes each)."""

    weights = "weights"  # softmax(Q·Kᵀ/√d_k), every head
    contribution = "contribution"  # each word's share of what it adds, ‖w_ij·f_h(x_j)‖
    rollout = "rollout"  # R_l over the layers up to the one shown (Abnar & Zuidema 2020)


class ImageOptions(NamedTuple):
    """The pictures asked for, besides what the view shows."""

    style: Style = Style.grid
    cmap: str = "viridis"  # a matplotlib colormap name
    all_layers: bool = False  # every layer and head in one grid
    per_head: Path | None = None  # also one image per head in this folder
    scale: Scale | None = None  # None: fixed up to 16 words, else auto (render/figures.py)
    measure: Measure = Measure.weights  # what the colours show
