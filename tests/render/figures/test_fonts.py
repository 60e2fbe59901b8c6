"""Text in the saved figures is large enough for a projector: measured on the rendered figure.

At the default size and 150 dpi every word label, number and caption is at least 12 px tall and
every title at least 18 px; titles also grow with the picture, so that one shrunk to a 1920-px
wide screen keeps its title at 16 px or more. Heights are those matplotlib lays the text out
with (one line of a Text's window extent), and for the numbers printed in cells, the size of
the glyph outlines drawn.
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.textpath import TextPath

import attnviz
from attnviz.render.figures.cells import cell_texts
from attnviz.render.figures.grid import build_layers_figure
from attnviz.render.figures.heatmap import build_figure
from attnviz.render.figures.saving import DPI
from attnviz.tokens import find_focus
from attnviz.trace import AttentionTrace
from render.analysed import for_grid

from support import shown

IT_SENTENCE = "The animal didn't cross the street because it was too tired"
FIFTEEN = "[CLS] the animal didn ' t cross the street because it was too tired [SEP]"
SMALLEST_PX = 12.0
SMALLEST_TITLE_PX = 18.0
PROJECTOR_WIDTH = 1920  # px: a picture shown this wide keeps titles of at least 16 px


def random_trace(sentence: str | list[str], n_heads: int, d_model: int) -> AttentionTrace:
    config = attnviz.AttentionConfig(d_model=d_model, n_heads=n_heads)
    return attnviz.trace_attention(sentence, config=config)


def heads_figure(sentence: str | list[str], n_heads: int, d_model: int) -> Figure:
    trace = random_trace(sentence, n_heads, d_model)
    focus = find_focus(trace.tokens, "it")
    return build_figure(trace, shown(trace, tuple(range(n_heads)), focus))


def grid_figure() -> Figure:
    layers = [
        attnviz.trace_attention(
            FIFTEEN.split(), config=attnviz.AttentionConfig(d_model=48, n_heads=12, seed=seed)
        )
        for seed in range(6)
    ]
    focus = find_focus(layers[0].tokens, "it")
    return build_layers_figure(for_grid(layers), shown(layers[0], None, focus))


FIGURES = {
    "2 heads, 11 words": lambda: heads_figure(IT_SENTENCE, 2, 8),
    "8 heads, 11 words": lambda: heads_figure(IT_SENTENCE, 8, 64),
    "12 heads, 15 pieces": lambda: heads_figure(FIFTEEN.split(), 12, 48),
    "2 heads, 37 words": lambda: heads_figure(
        " ".join([IT_SENTENCE] * 3 + ["and", "so", "it", "ends"]), 2, 8
    ),
    "6 layers × 12 heads": grid_figure,
    "1 head, 11 words": lambda: heads_figure(IT_SENTENCE, 1, 8),
    "1 head, 37 words": lambda: heads_figure(
        " ".join([IT_SENTENCE] * 3 + ["and", "so", "it", "ends"]), 1, 8
    ),
}


def texts_of(figure: Figure) -> list[tuple[Text, bool]]:
    """Every visible, non-empty text of the figure, and whether it is a title."""
    found: list[tuple[Text, bool]] = [(figure._suptitle, True)]  # type: ignore[attr-defined]
    found += [(text, False) for text in figure.texts if text is not figure._suptitle]  # type: ignore[attr-defined]
    for axes in figure.axes:
        found.append((axes.title, True))
        found += [(axes.xaxis.label, False), (axes.yaxis.label, False)]
        found += [(text, False) for text in axes.texts]
        for axis in (axes.xaxis, axes.yaxis):
            found += [(label, False) for label in axis.get_ticklabels()]
    return [(text, title) for text, title in found if text.get_visible() and text.get_text()]


def line_height(text: Text, renderer: object) -> float:
    """Pixels of one line of ``text`` as laid out (its extent's height over its lines)."""
    box = text.get_window_extent(renderer)  # type: ignore[arg-type]
    lines = text.get_text().count("\n") + 1
    vertical = text.get_rotation() % 180 == 90
    return (box.width if vertical else box.height) / lines


@pytest.mark.slow
@pytest.mark.parametrize("name", FIGURES)
def test_every_text_is_at_least_12_px_and_every_title_18_px(name: str) -> None:
    figure = FIGURES[name]()
    figure.draw_without_rendering()
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    measured = [(text, title, line_height(text, renderer)) for text, title in texts_of(figure)]
    assert len(measured) > 20
    small = [(t.get_text(), round(px, 1)) for t, title, px in measured if px < SMALLEST_PX]
    assert small == [], small
    titles = [(t.get_text(), px) for t, title, px in measured if title]
    assert titles and all(px >= SMALLEST_TITLE_PX for _, px in titles), titles
    width_px = figure.get_size_inches()[0] * DPI
    suptitle_px = titles[0][1]
    assert suptitle_px * PROJECTOR_WIDTH / max(width_px, PROJECTOR_WIDTH) >= 16, suptitle_px


@pytest.mark.slow
@pytest.mark.parametrize("name", FIGURES)
def test_numbers_printed_in_cells_are_at_least_12_px(name: str) -> None:
    figure = FIGURES[name]()
    printed = 0
    for axes in figure.axes:
        strings = cell_texts(axes)
        if not strings:
            continue
        (texts,) = [c for c in axes.collections if isinstance(c, PathCollection)]
        for path, string in zip(texts.get_paths(), strings, strict=True):
            # The outline's height against the same string's at 1 point: its size in points.
            unit = TextPath((0, 0), string, size=1.0)
            drawn = path.vertices[path.codes != path.CLOSEPOLY]
            one = unit.vertices[unit.codes != unit.CLOSEPOLY]
            points = np.ptp(drawn[:, 1]) / np.ptp(one[:, 1])
            assert points * DPI / 72 >= SMALLEST_PX, (string, points)
            printed += 1
    if name.startswith(("2 heads, 11", "8 heads", "6 layers")):
        assert printed > 0  # these figures print numbers (the grid: its summary's words)
