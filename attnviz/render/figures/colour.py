"""Colour in a figure: the colormap by name, what the colours span (--scale fixed, row or
auto) and what the colour bar says they mean, and black or white text on a coloured cell.

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnviz.arrays import FloatArray
from attnviz.errors import AttnvizError
from attnviz.render.figures.fonts import text_width
from attnviz.render.figures.settings import draws
from attnviz.render.options import Scale
from attnviz.tokens import printable

COLOUR_BAR = 1.3  # inches right of the panels for the colour bar, its numbers and label


@draws
def check_colormap(name: str) -> None:
    """Raise AttnvizError unless ``name`` is a colormap matplotlib knows (e.g. viridis)."""
    from matplotlib import colormaps

    if name not in colormaps:
        raise AttnvizError(
            f"Unknown colormap {printable(name)!r}; use a matplotlib colormap name such as "
            "viridis, magma or cividis."
        )


def text_colour(rgba: Sequence[float]) -> str:
    """ "black" or "white", whichever contrasts more with a cell of colour ``rgba`` (0–1 floats).

    WCAG relative luminance of the linearised sRGB channels, L = 0.2126·R + 0.7152·G +
    0.0722·B; black wins when (L + 0.05) / 0.05 > 1.05 / (L + 0.05), that is when L > 0.179.
    """
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return "black" if luminance > 0.179 else "white"


#: Up to this many key words the default colour scale is 0–1: a row's weights average 1/n, so
#: beyond it most cells of a fixed scale share one dark colour and the largest shown is used.
FIXED_SCALE_WORDS = 16


def default_scale(n_keys: int) -> Scale:
    """The colour scale that reads best for ``n_keys`` columns: 0–1 up to FIXED_SCALE_WORDS."""
    return Scale.fixed if n_keys <= FIXED_SCALE_WORDS else Scale.auto


@dataclass(frozen=True)
class ColourScale:
    """How values become colours: cells show ``colours_of(values)`` on 0..top; ``noun`` names
    what a colour is on the colour bar, ``short`` its short form."""

    scale: Scale
    top: float  # the colour bar's upper end
    noun: str = "attention weight"
    short: str = "weight"

    def colours_of(self, weights: FloatArray) -> FloatArray:
        """[..., columns] -> the values coloured: the weights, or each row ÷ its largest."""
        if self.scale is not Scale.row:
            return weights
        largest = weights.max(axis=-1, keepdims=True)
        # A row of zeros (all masked or hidden) stays 0 rather than 0/0.
        rescaled: FloatArray = np.divide(
            weights, largest, out=np.zeros_like(weights), where=largest > 0
        )
        return rescaled

    @property
    def labels(self) -> tuple[str, ...]:
        """The colour bar's label, what a colour means, longest first: the first that fits."""
        noun, short = self.noun, self.short
        if self.scale is Scale.row:
            return (
                f"{noun} ÷ its row's largest\n(a row's largest is brightest)",
                f"{short} ÷ its row's largest",
                "÷ row's largest",
            )
        if self.scale is Scale.auto:
            return (
                f"{noun}\n(colours 0–{self.top:.2f}: the largest shown)",
                f"{short} (0–{self.top:.2f}: largest)",
                f"0–{self.top:.2f}: largest",
            )
        return (f"{noun}\n(colours 0–1)", f"{noun} (0–1)", f"{short} (0–1)")

    def label(self, room: float, font: float) -> str:
        """The longest of ``labels`` whose lines fit along a colour bar ``room`` inches long."""
        for label in self.labels:
            if max(text_width(line, font) for line in label.splitlines()) <= room:
                return label
        return self.labels[-1]


def colour_scale(
    scale: Scale | None,
    shown: FloatArray,
    names: tuple[str, str] = ("attention weight", "weight"),
) -> ColourScale:
    """The colour scale asked for (``None``: the default for the columns shown) of the values
    ``shown`` [..., columns] (weights, or what ``names`` calls them: the colour bar's noun and
    its short form); the largest shown is rounded up to 2 decimals."""
    chosen = scale or default_scale(shown.shape[-1])
    if chosen is Scale.auto:
        largest = float(shown.max(initial=0.0))
        return ColourScale(chosen, max(math.ceil(largest * 100 - 1e-9) / 100, 0.01), *names)
    return ColourScale(chosen, 1.0, *names)
