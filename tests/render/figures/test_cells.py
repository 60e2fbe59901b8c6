"""What is drawn in the cells: numbers as centred outlines in black or white, hatched masked
cells."""

from __future__ import annotations

import matplotlib.image
import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure

from attnviz.render.figures import cells
from attnviz.render.figures.cells import cell_texts
from attnviz.render.figures.fonts import centred_outline
from attnviz.render.figures.heatmap import build_figure
from attnviz.render.figures.heatmap_layout import plan_layout
from render.pictures import (
    trace_of,
)

from support import shown


@pytest.mark.slow
def test_printed_outlines_are_the_strings_and_centred_in_their_cells() -> None:
    trace = trace_of("I am good")
    figure = build_figure(trace, shown(trace, (0,), None))
    (values,) = figure.axes[0].collections[1:]  # after the lines between cells
    layout = plan_layout(["I", "am", "good"], 1, 0)
    for path, text in zip(values.get_paths(), cell_texts(figure.axes[0]), strict=True):
        assert path is centred_outline(text, layout.values.font)
        drawn = path.vertices[path.codes != path.CLOSEPOLY]  # a CLOSEPOLY's vertex is unused
        low, high = drawn.min(axis=0), drawn.max(axis=0)
        assert np.allclose((low + high) / 2, 0, atol=1e-9)  # centred on its cell's centre
    cells = values.get_offsets()
    assert [tuple(cell) for cell in cells] == [(c, r) for r in range(3) for c in range(3)]


@pytest.mark.slow
@pytest.mark.parametrize(("cmap", "light"), [("Greys", "low"), ("gray", "high")])
def test_printed_weights_are_black_on_light_cells_and_white_on_dark(cmap: str, light: str) -> None:
    trace = trace_of("I am", d_model=8, n_heads=2)  # weights from 0.15 to 0.85
    figure = build_figure(trace, shown(trace, (0, 1), None), cmap=cmap)
    colours: dict[str, list[str]] = {"low": [], "high": []}
    for axes, head in zip(figure.axes, (0, 1), strict=False):
        (values,) = [c for c in axes.collections if isinstance(c, PathCollection)]
        printed = [matplotlib.colors.to_hex(rgba) for rgba in values.get_facecolors()]
        for colour, weight in zip(printed, trace.weights[head].ravel(), strict=True):
            if weight < 0.3:
                colours["low"].append(colour)
            elif weight > 0.7:
                colours["high"].append(colour)
    dark = "high" if light == "low" else "low"
    assert colours[light] and set(colours[light]) == {"#000000"}
    assert colours[dark] and set(colours[dark]) == {"#ffffff"}


def test_a_causal_mask_of_512_words_is_one_hatched_artist_per_panel() -> None:
    from matplotlib.axes import Axes as AxesType

    masked = ~np.tril(np.ones((512, 512), dtype=bool))
    figure = Figure()
    axes: AxesType = figure.add_subplot()
    cells.hatch_masked(axes, masked)
    (patch,) = axes.patches
    assert len(cells.masked_runs(masked)) == 511  # one rectangle per row with masked cells
    assert len(patch.get_path().vertices) == 511 * 5
