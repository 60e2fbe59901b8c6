"""The logit lens as a picture: a row per layer (the embedding at the bottom, the last layer at
the top), the most likely tokens in order, each cell shaded by its probability; and beside it
the probability the last layer's token has at each layer.

matplotlib is imported inside the functions, so importing this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from attnviz.render.figures import image_format_of, new_figure, save_figure
from attnviz.render.figures.settings import draws
from attnviz.tokens import printable


@draws
def save_lens_picture(
    probabilities: np.ndarray,
    names: Sequence[Sequence[str]],
    final: np.ndarray,
    title: str,
    path: Path,
) -> None:
    """``probabilities`` [layers + 1, top] and their tokens' ``names``; ``final`` [layers + 1],
    the last layer's top token's probability at each layer. Written atomically."""
    image_format_of(path)
    rows, top = probabilities.shape
    height = max(3.5, 0.28 * rows + 1.6)
    figure = new_figure(12, height, layout="constrained")
    grid = figure.add_gridspec(1, 2, width_ratios=(4, 1))
    table = figure.add_subplot(grid[0, 0])
    table.imshow(probabilities, cmap="Greys", vmin=0, vmax=1, aspect="auto", origin="lower")
    for row in range(rows):
        for column in range(top):
            p = float(probabilities[row, column])
            table.text(
                column,
                row,
                f"{printable(repr(names[row][column]))[:14]} {p:.2f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if p > 0.5 else "black",
            )
    labels = ["embedding", *(f"layer {i}" for i in range(1, rows))]
    table.set_yticks(range(rows), labels, fontsize=7)
    table.set_xticks(range(top), [f"{i + 1}." for i in range(top)])
    table.set_title("the most likely tokens, read at each layer")
    curve = figure.add_subplot(grid[0, 1], sharey=table)
    curve.plot(final, range(rows), "o-", color="#0072B2", markersize=3)
    curve.set_xlim(0, 1.02)
    curve.set_xlabel("p of the last layer's token")
    curve.grid(alpha=0.3)
    curve.tick_params(labelleft=False)
    figure.suptitle(title)
    save_figure(figure, path)
