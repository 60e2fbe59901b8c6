"""The heads' picture planned in inches: panels grow with the sentence, cells stay square."""

from __future__ import annotations

from dataclasses import replace

import pytest

from attnviz.render.figures import heatmap_layout
from attnviz.render.figures.cells import cell_texts
from attnviz.render.figures.heatmap import build_figure
from attnviz.render.figures.heatmap_layout import plan_layout
from render.pictures import (
    IT_SENTENCE,
    SIXTY,
    WORDS,
    all_heads,
    trace_of,
)

from support import shown


@pytest.mark.slow
def test_layout_grows_with_the_sentence_then_thins_labels() -> None:
    tiny = plan_layout(["I", "am"], 2, 0)
    eleven = plan_layout(IT_SENTENCE.split(), 2, 2)
    sixty = plan_layout(SIXTY.split(), 2, 2)
    assert tiny.panel == heatmap_layout.MIN_PANEL and tiny.annotate
    assert tiny.panel < eleven.panel < sixty.panel <= heatmap_layout.MAX_PANEL
    assert eleven.annotate and not sixty.annotate
    assert not tiny.x.rotate and eleven.x.rotate  # "because" is wider than its cell
    assert not eleven.focus_x.rotate  # the focus panel spans both columns: wider cells
    assert tiny.x.step == eleven.x.step == 1


def test_layout_of_many_heads_is_a_grid_of_at_most_four_per_row() -> None:
    layout = plan_layout(SIXTY.split(), 8, 8)
    assert (layout.columns, layout.rows) == (4, 2)
    assert layout.x.step > 1 and layout.y.step > 1  # 60 labels do not fit a 5-inch panel
    assert layout.width <= heatmap_layout.MAX_GRID_WIDTH + 10


def test_rectangular_layout_has_square_cells_and_thins_each_axis_by_its_own_count() -> None:
    layout = plan_layout(SIXTY.split() * 2, 2, 2, key_tokens=["I", "am", "good"])
    assert layout.n_tokens == 120 and layout.n_keys == 3
    assert layout.panel_height == pytest.approx(layout.panel_width * 120 / 3)
    assert layout.panel_height == heatmap_layout.MAX_PANEL
    assert layout.y.step > 1  # 120 rows in 8 inches: thinned
    short_rows = plan_layout(["a", "b"], 2, 0, key_tokens=["tranquillement", "b"])
    long_rows = plan_layout(["tranquillement", "b"], 2, 0, key_tokens=["a", "b"])
    assert short_rows.x.rotate and not long_rows.x.rotate  # each axis by its own words
    assert short_rows.y.depth < long_rows.y.depth
    assert not layout.annotate  # 120 rows: no values in the cells
    assert plan_layout(["a", "b", "c"], 2, 0, key_tokens=["d"] * 12).annotate
    assert not plan_layout(["a", "b", "c"], 2, 0, key_tokens=["d"] * 40).annotate
    wide = plan_layout(["Je", "vais"], 2, 0, key_tokens=WORDS[:7])
    assert wide.panel_width == pytest.approx(heatmap_layout.CELL * 7)
    assert wide.panel_height == pytest.approx(heatmap_layout.CELL * 2)
    assert (wide.x_title, wide.y_title) == ("source word (looked at)", "target word\n(looking)")


def test_square_layout_is_the_same_with_or_without_key_tokens_but_for_axis_titles() -> None:
    words = IT_SENTENCE.split()
    square, cross = plan_layout(words, 2, 2), plan_layout(words, 2, 2, key_tokens=words)
    assert replace(cross, x_title="", y_title="", focus_title="") == replace(
        square, x_title="", y_title="", focus_title=""
    )
    assert square.panel_width == square.panel_height == square.panel
    assert square.x_title == "key word (looked at)" and cross.x_title == "source word (looked at)"


@pytest.mark.slow
def test_a_cell_too_narrow_for_0_45_prints_45() -> None:
    layout = plan_layout(WORDS[:14], 4, 0)  # 14 words in a quarter of 20 inches
    assert layout.values.shown and layout.values.compact
    trace = trace_of(" ".join(WORDS[:14]), 16, 4)
    printed = cell_texts(build_figure(trace, shown(trace, all_heads(trace), None)).axes[0])
    expected = [f"{w:.2f}" for w in trace.weights[0].ravel()]
    assert printed == ["1" if e == "1.00" else e.removeprefix("0") for e in expected]
