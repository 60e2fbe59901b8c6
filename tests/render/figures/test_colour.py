"""Colour: black or white text on a cell, colormap names, and the colour scales (--scale)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnviz.errors import AttnvizError
from attnviz.render.figures.cells import cell_texts
from attnviz.render.figures.colour import check_colormap, text_colour
from attnviz.render.figures.heatmap import build_figure
from attnviz.render.options import Scale
from render.pictures import (
    IT_SENTENCE,
    WORDS,
    trace_of,
)

from support import shown


def test_text_colour_contrasts_with_the_cell() -> None:
    from matplotlib import colormaps

    viridis = colormaps["viridis"]
    assert text_colour(viridis(0.0)) == "white"  # dark purple
    assert text_colour(viridis(1.0)) == "black"  # yellow
    assert text_colour((0.0, 0.0, 0.0, 1.0)) == "white"
    assert text_colour((1.0, 1.0, 1.0, 1.0)) == "black"
    assert text_colour((0.5, 0.5, 0.5)) == "black"  # mid grey: L = 0.21 > 0.179


def test_known_colormaps_pass_and_unknown_ones_raise() -> None:
    for name in ("viridis", "magma", "cividis", "Greys_r"):
        check_colormap(name)
    with pytest.raises(AttnvizError) as raised:
        check_colormap("nosuch")
    assert raised.value.message == (
        "Unknown colormap 'nosuch'; use a matplotlib colormap name such as viridis, magma or "
        "cividis."
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scale", "top", "label"),
    [
        ("fixed", 1.0, "attention weight\n(colours 0–1)"),
        ("auto", None, "attention weight\n(colours 0–{top:.2f}: the largest shown)"),
        ("row", 1.0, "attention weight ÷ its row's largest\n(a row's largest is brightest)"),
    ],
)
def test_colour_scales_span_what_the_colour_bar_says(
    scale: str, top: float | None, label: str
) -> None:
    trace = trace_of(IT_SENTENCE)
    figure = build_figure(trace, shown(trace, (0, 1), None), scale=Scale(scale))
    image = figure.axes[0].get_images()[0]
    largest = math.ceil(float(trace.weights.max()) * 100) / 100
    expected_top = largest if top is None else top
    assert image.get_clim() == pytest.approx((0.0, expected_top))
    colour_bar = figure.axes[-1]
    assert colour_bar.get_ylabel() == label.format(top=expected_top)
    drawn = np.asarray(image.get_array())
    if scale == "row":  # each row ÷ its largest: every row's largest is 1
        np.testing.assert_allclose(drawn.max(axis=1), 1.0)
        np.testing.assert_allclose(drawn, trace.weights[0] / trace.weights[0].max(axis=1)[:, None])
    else:
        np.testing.assert_array_equal(drawn, trace.weights[0])
    # The numbers printed are the weights themselves, whatever the colours span.
    assert cell_texts(figure.axes[0]) == [f"{w:.2f}" for w in trace.weights[0].ravel()]


@pytest.mark.slow
def test_the_default_scale_is_fixed_up_to_16_words_then_the_largest_shown() -> None:
    sixteen, seventeen = trace_of(" ".join(WORDS[:16])), trace_of(" ".join(WORDS[:17]))
    for trace, fixed in ((sixteen, True), (seventeen, False)):
        image = build_figure(trace, shown(trace, (0,), None)).axes[0].get_images()[0]
        top = 1.0 if fixed else math.ceil(float(trace.weights[0].max()) * 100) / 100
        assert image.get_clim() == pytest.approx((0.0, top))
