"""The layers × heads picture planned in inches."""

from __future__ import annotations

from attnviz.render.figures import grid_layout
from attnviz.render.figures.grid_layout import plan_layers_layout
from render.pictures import (
    IT_SENTENCE,
)


def test_layers_layout_fits_twelve_heads_in_twenty_inches() -> None:
    layout = plan_layers_layout(IT_SENTENCE.split(), 6, 12)
    assert grid_layout.MIN_SMALL_PANEL <= layout.panel <= grid_layout.MAX_SMALL_PANEL
    assert layout.width <= grid_layout.MAX_LAYERS_WIDTH + 0.5
    assert layout.height(2, None) <= 12
    tiny = plan_layers_layout(["I", "am"], 1, 2)
    assert tiny.panel == grid_layout.MAX_SMALL_PANEL and tiny.x.step == tiny.y.step == 1
