"""How a view is asked to render a trace: the lesson's options and the pictures' options.

Light on purpose: the command line declares its options with these types, and ``attnviz
--help`` imports them without the renderers.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import NamedTuple

from attnviz.errors import AttnvizError

MAX_DECIMALS = 8


@dataclass(frozen=True)
class LessonOptions:
    """How the lesson is told."""

    decimals: int = 2  # digits after the point in tables; worked examples use at least 2
    show_weights: bool = False  # also print W_Q, W_K, W_V and W_O

    def __post_init__(self) -> None:
        if not 0 <= self.decimals <= MAX_DECIMALS:
            raise AttnvizError(
                f"--decimals {self.decimals} is out of range; use 0 to {MAX_DECIMALS}."
            )


class Style(str, Enum):
    """How heatmap draws the weights."""

    grid = "grid"  # a heatmap per head
    lines = "lines"  # the classic illustration: lines from the focus word, one colour per head


class ImageOptions(NamedTuple):
    """The pictures asked for, besides what the view shows."""

    style: Style = Style.grid
    cmap: str = "viridis"  # a matplotlib colormap name
    all_layers: bool = False  # every layer and head in one grid
    per_head: Path | None = None  # also one image per head in this folder
